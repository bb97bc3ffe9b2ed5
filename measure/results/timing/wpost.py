"""post on wgmma (the scale after the tensor-core work, two fp32 partials a consumer) against the gemm.flush winners
(post on mma.sync at M = 1 and 16, the weight-ring kernel at M = 64) and cuBLAS; at M = 16 also the winner with its
activation tile multicast to 2 blocks of a cluster. Both flushes, alternating rounds, searches on fresh inputs; every
kernel checked first against the fp32 reference (poisoned output), at the shape and at a ragged M."""
import json, os, sys
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from measure.suites.gemm.common import rel_fro_err
from measure.suites.gemm.flush import W4A16_WINNERS
from kernels.gemm.w4a16 import build, config, kernel_weights, label

N = K = 8192
PW = dict(chunk=128, wide=True, perm=True, post=True)
W16 = W4A16_WINNERS[(16, N, K)]
CANDS = {
    16: [W16, config(16, 256, 8, **PW), config(16, 256, 12, **PW), config(16, 256, 12, tiled=True, **PW),
         config(16, 512, 6, **PW), {**W16, "cluster": 2}],
    1: [W4A16_WINNERS[(1, N, K)], config(16, 256, 12, **PW), config(16, 256, 12, tiled=True, **PW),
        config(16, 256, 8, **PW)],
    64: [W4A16_WINNERS[(64, N, K)], config(64, 256, 4, **PW), config(64, 512, 2, **PW)],
}
REPS = {16: 2, 1: 1, 64: 1}
RAGGED = {16: 13, 1: 1, 64: 50}


def thunks():
    from measure.search import par_build
    th = {}
    for M, cs in CANDS.items():
        for c in cs:
            th[f"{label(c)}@{M}"] = (lambda M=M, c=c: build(M, N, K, 128, c))
            th[f"{label(c)}@r{RAGGED[M]}"] = (lambda M=M, c=c: build(RAGGED[M], N, K, 128, c))
    return par_build(th, workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}, "skipped": {k: v["error"] for k, v in built.items() if v["error"]}}
    for M, cs in CANDS.items():
        cs = [c for c in cs if built[f"{label(c)}@{M}"]["kernel"] is not None]
        for c in cs:  # ragged rows, poisoned output
            r = RAGGED[M]
            a, packed, scales, w16 = make_inputs(h, r, N, K, 128)
            o = h.poisoned((r, N), torch.float16)
            built[f"{label(c)}@r{r}"]["kernel"](a, kernel_weights(packed, c), scales, o)
            res["errors"][f"{label(c)} ragged {r}"] = e = rel_fro_err(o, torch.matmul(a.float(), w16.float().t()))
            print("ragged", label(c), r, e, flush=True)
        cs = [c for c in cs if res["errors"][f"{label(c)} ragged {RAGGED[M]}"] < 1e-2]
        for rep in range(REPS[M]):
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            ref = torch.matmul(a.float(), w16.float().t())
            cc = {}
            for c in cs:
                lab, k, w = label(c), built[f"{label(c)}@{M}"]["kernel"], kernel_weights(packed, c)
                o = h.poisoned((M, N), torch.float16)
                k(a, w, scales, o)
                res["errors"][f"{lab} @{M} #{rep}"] = e = rel_fro_err(o, ref)
                if e < 1e-2:
                    cc[lab] = (lambda k=k, o=o, w=w: k(a, w, scales, o))
            cc["cuBLAS fp16 weights"] = lambda: torch.matmul(a, w16.t())
            for mode in ("write", "clean"):
                h.protocol["flush_mode"] = mode
                best, ms = h.search(f"{mode} flush: wgmma post at M={M} #{rep}", cc, rounds=7)
                key = f"M={M} {mode} #{rep}"
                res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
                print(key, json.dumps(res["searches"][key]), flush=True)
                json.dump(res, open(out, "w"), indent=1)
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)
