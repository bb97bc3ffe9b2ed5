"""fuse (kernels.gemm.w4a16): each fp16 pair picked from its word by one PTX lop3 instead of the AND and OR
nvcc emits for the same C expression (four lop3 fewer per 8 weights, the same bits).  The five W4A16 kernels of
suite gemm.flush, each with and without ``fuse``, against cuBLAS on the fp16 weights.  Every kernel checked first
against the fp32 reference with a poisoned output, at a ragged M and at the shape, and again after 30 more
launches; then two searches on fresh inputs per shape, 7 alternating rounds, under both flushes."""
import json, os, sys
import torch
from kernels.gemm.w4a16 import build, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS

SHAPES = {s: [c, dict(c, fuse=True)] for s, c in W4A16_WINNERS.items()}
RAGGED = {1: 5, 16: 13, 64: 50, 128: 100, 4096: 4000}
REPS = 2


def thunks():
    from measure.search import par_build
    th = {}
    for (M, N, K), cs in SHAPES.items():
        for c in cs:
            for m in (M, RAGGED[M]):
                th[f"{label(c)}@{m}x{N}"] = (lambda m=m, N=N, K=K, c=c: build(m, N, K, 128, c))
    return par_build(th, workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    from measure.harness import Harness
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}, "skipped": {k: v["error"] for k, v in built.items() if v["error"]}}
    for (M, N, K), cs in SHAPES.items():
        cs = [c for c in cs if built[f"{label(c)}@{M}x{N}"]["kernel"] is not None]
        r = RAGGED[M]
        a, packed, scales, w16 = make_inputs(h, r, N, K, 128)
        for c in cs:  # ragged rows, poisoned output
            o = h.poisoned((r, N), torch.float16)
            built[f"{label(c)}@{r}x{N}"]["kernel"](a, kernel_weights(packed, c), scales, o)
            res["errors"][f"{label(c)} ragged {r}"] = e = rel_fro_err(o, torch.matmul(a.float(), w16.float().t()))
            print("ragged", label(c), r, e, flush=True)
        cs = [c for c in cs if res["errors"][f"{label(c)} ragged {r}"] < 1e-2]
        for rep in range(REPS):
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            ref = torch.matmul(a.float(), w16.float().t())
            cc, outs = {}, {}
            for c in cs:
                lab, k, w = label(c), built[f"{label(c)}@{M}x{N}"]["kernel"], kernel_weights(packed, c)
                o = h.poisoned((M, N), torch.float16)
                k(a, w, scales, o)
                e1 = rel_fro_err(o, ref)
                for _ in range(30):
                    k(a, w, scales, o)
                torch.cuda.synchronize()
                res["errors"][f"{lab} @{M} #{rep}"] = e = max(e1, rel_fro_err(o, ref))
                outs[lab] = o
                if e < 1e-2:
                    cc[lab] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
            if len(outs) == 2:  # the same bits with and without fuse
                x, y = outs.values()
                res["errors"][f"fused equals unfused @{M} #{rep}"] = bool(torch.equal(x, y))
            cc["cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
            for mode in ("write", "clean"):
                h.protocol["flush_mode"] = mode
                best, ms = h.search(f"{mode} flush: fuse at {M}x{N}x{K} #{rep}", cc, rounds=7)
                key = f"{M}x{N}x{K} {mode} #{rep}"
                res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
                print(key, json.dumps(res["searches"][key]), flush=True)
                json.dump(res, open(out, "w"), indent=1)
            h.protocol["flush_mode"] = "write"
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)
