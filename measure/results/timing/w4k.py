"""The fixed cost of a W4A16 block at M = 64 and M = 16: the suite's winners (gemm.flush) built for 8192 weight rows and
K = 1024, 2048, 4096, 8192 (at 16384 the scales no longer fit in shared memory), each checked against the fp16-weight product, then timed in alternating rounds
(Harness.search, 7 rounds, write flush) beside cuBLAS on the fp16 weights at the same K.  A line through time
against K: its intercept is what a block pays whatever its K (launch, first stage, final sum, store)."""
import json, os, sys
import torch
from measure.suites.gemm.flush import W4A16_WINNERS
from kernels.gemm.w4a16 import build, kernel_weights

KS = (1024, 2048, 4096, 8192)
MS = (64, 16)
if len(sys.argv) > 1 and sys.argv[1] == "--prebuild":
    for M in MS:
        for K in KS:
            build(M, 8192, K, 128, W4A16_WINNERS[(M, 8192, 8192)])
    sys.exit(0)
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs

out = sys.argv[1]
h = Harness(log=print)
res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
       "rounds": 7, "errors": {}, "us": {}}
for M in MS:
    cfg = W4A16_WINNERS[(M, 8192, 8192)]
    cands = {}
    for K in KS:
        a, packed, scales, w16 = make_inputs(h, M, 8192, K, 128)
        k = build(M, 8192, K, 128, cfg)
        wk = kernel_weights(packed, cfg)
        o = h.poisoned((M, 8192), torch.float16)
        k(a, wk, scales, o)
        ref = a.float() @ w16.float().t()
        e = ((o.float() - ref).norm() / ref.norm()).item()
        res["errors"][f"M{M} K{K}"] = e
        assert e < 1e-2, (M, K, e)
        cands[f"w4a16 K={K}"] = (lambda k=k, a=a, wk=wk, s=scales, o=o: k(a, wk, s, o))
        cands[f"cuBLAS K={K}"] = (lambda a=a, w=w16: torch.matmul(a, w.t()))
    best, ms = h.search(f"M={M} fixed cost", cands, rounds=7)
    res["us"][f"M{M}"] = {k: round(v * 1e3, 2) for k, v in ms.items()}
    print(M, json.dumps(res["us"][f"M{M}"]), flush=True)
    json.dump(res, open(out, "w"), indent=1)
