"""The decode winners of gemm.flush with their weight tiles loaded at L2 priority evict_first (``evict``) against
themselves at the normal priority and cuBLAS: both flushes, alternating rounds, two searches on fresh inputs at
each shape; every kernel checked first against the fp32 reference (poisoned output), plus a ragged M."""
import json, os, sys
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from measure.suites.gemm.common import rel_fro_err
from measure.suites.gemm.flush import W4A16_WINNERS
from kernels.gemm.w4a16 import build, kernel_weights, label

SHAPES = [s for s in W4A16_WINNERS if s[0] <= 128]
RAGGED = {16: 13, 64: 50, 128: 100, 1: 1}


def cands(shape):
    c = W4A16_WINNERS[shape]
    return [c, {**c, "evict": True}]


def thunks():
    from measure.search import par_build
    th = {}
    for s in SHAPES:
        for c in cands(s):
            th[f"{label(c)}@{s[0]}"] = (lambda s=s, c=c: build(*s, 128, c))
            th[f"{label(c)}@r{RAGGED[s[0]]}"] = (lambda s=s, c=c: build(RAGGED[s[0]], *s[1:], 128, c))
    return par_build(th, workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}}
    for s in SHAPES:
        M, N, K = s
        for c in cands(s):  # ragged rows, poisoned output
            r = RAGGED[M]
            a, packed, scales, w16 = make_inputs(h, r, N, K, 128)
            o = h.poisoned((r, N), torch.float16)
            built[f"{label(c)}@r{r}"]["kernel"](a, kernel_weights(packed, c), scales, o)
            res["errors"][f"{label(c)} ragged {r}"] = e = rel_fro_err(o, torch.matmul(a.float(), w16.float().t()))
            assert e < 1e-2, (label(c), r, e)
        for rep in range(2):
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            ref = torch.matmul(a.float(), w16.float().t())
            w = kernel_weights(packed, W4A16_WINNERS[s])
            cc = {}
            for c in cands(s):
                lab, k = label(c), built[f"{label(c)}@{M}"]["kernel"]
                o = h.poisoned((M, N), torch.float16)
                k(a, w, scales, o)
                res["errors"][f"{lab} @{M} #{rep}"] = e = rel_fro_err(o, ref)
                assert e < 1e-2, (lab, e)
                cc[lab] = (lambda k=k, o=o: k(a, w, scales, o))
            cc["cuBLAS fp16 weights"] = lambda: torch.matmul(a, w16.t())
            for mode in ("write", "clean"):
                h.protocol["flush_mode"] = mode
                best, ms = h.search(f"{mode} flush: evict at M={M} #{rep}", cc, rounds=7)
                key = f"M={M} {mode} #{rep}"
                res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
                print(key, json.dumps(res["searches"][key]), flush=True)
                json.dump(res, open(out, "w"), indent=1)
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)
