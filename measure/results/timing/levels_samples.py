"""Where the two timing levels come from: raw CUDA-event samples of one timing call, with and without the
L2 flush, and with the queue drained before every sample."""
import json, os, statistics, torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config as _c, kernel_weights
h = Harness("cuda", log=lambda s: None)
M, N, K = 16, 8192, 8192
a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
cfg = _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True)
k = build(M, N, K, 128, cfg); w = kernel_weights(packed, cfg); c = torch.empty((M, N), dtype=torch.float16, device="cuda")
tiny = torch.zeros(1, device="cuda")
fns = {"post": lambda: k(a, w, scales, c), "cuBLAS": lambda: torch.matmul(a, w16.t()), "tiny": lambda: tiny.add_(1)}
flushbuf = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")

def raw(fn, rep=300, flush=True, drain=False):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    for i in range(rep):
        if flush:
            flushbuf.zero_()
        if drain:
            torch.cuda.synchronize()
        st[i].record(); fn(); en[i].record()
    torch.cuda.synchronize()
    return [round(x.elapsed_time(y) * 1e3, 3) for x, y in zip(st, en)]

out = {}
for name, fn in fns.items():
    for mode, kw in (("default", {}), ("noflush", {"flush": False}), ("drain", {"drain": True})):
        calls = []
        for _ in range(6):
            s = raw(fn, **kw)
            q = statistics.quantiles(s, n=20)
            calls.append({"median": statistics.median(s), "p5": q[0], "p25": q[4], "p75": q[14], "p95": q[18],
                          "first20": s[:20]})
        out[f"{name}/{mode}"] = calls
        print(name, mode, [(round(x["median"], 2), round(x["p5"], 2), round(x["p95"], 2)) for x in calls], flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "modes2.json"), "w"), indent=1)
