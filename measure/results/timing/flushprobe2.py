"""Same question as flushprobe.py, with the harness's own timing call (Timing.time, 300 samples) and
more subjects: every #21 bench winner of the pages' records against its library baseline, the M = 16
winner's load path alone, and same-run readers of the int4 weights' byte count (cuBLAS on fp16 weights
of the same bytes, a torch sum, a torch copy).  Flush variants: the harness's 256 MB zero_ ("write"),
that zero_ followed by a read of another 256 MB buffer ("write+read": L2 left clean), the read alone."""
import json, os, statistics, sys, time
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config as _c, kernel_weights, label
from kernels.gemm.ladder import build_tuned
from kernels.gemm import splitk, streamk
from measure.suites.gemm.splitk_ws import NO_SPLIT
from measure.suites.gemm.common import rel_fro_err
from winners import WIN, SPLITK, STREAMK

out = sys.argv[1]
h = Harness(log=print)
sms = torch.cuda.get_device_properties(0).multi_processor_count
MB = 1024 * 1024
buf = torch.empty(256 * MB // 4, dtype=torch.int32, device="cuda")
buf2 = torch.empty(256 * MB // 4, dtype=torch.int32, device="cuda").fill_(1)
def f_write(): buf.zero_()
def f_write_read(): buf.zero_(); buf2.sum()
def f_read(): buf2.sum()
FLUSH = {"write": f_write, "write+read": f_write_read, "read": f_read}

subjects, pairs, errs = {}, {}, {}
x1 = torch.zeros(1, device="cuda")
subjects["add 1 element"] = lambda: x1.add_(1.0)
for (M, N, K), cfg in WIN.items():
    kern = build(M, N, K, 128, cfg)
    a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
    wq = kernel_weights(packed, cfg)
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    kern(a, wq, scales, c)
    errs[f"w4a16 {M}x{N}x{K}"] = rel_fro_err(c, torch.matmul(a.float(), w16.float().t()))
    subjects[f"w4a16 {M}x{N}x{K}"] = (lambda k=kern, a=a, w=wq, s=scales, c=c: k(a, w, s, c))
    subjects[f"cuBLAS {M}x{N}x{K}"] = (lambda a=a, w=w16: torch.matmul(a, w.t()))
    pairs[f"w4a16 {M}x{N}x{K}"] = f"cuBLAS {M}x{N}x{K}"
    if M == 16:
        probe = build(M, N, K, 128, cfg, probe="loadonly")
        cp = torch.empty_like(c)
        subjects["w4a16 16x8192x8192 load path alone"] = (lambda k=probe, a=a, w=wq, s=scales, c=cp: k(a, w, s, c))
        nbytes = wq.numel() * wq.element_size() + scales.numel() * 2
        n_same = nbytes // (2 * K)  # fp16 weight rows with the int4 weights' and scales' bytes
        for m in (1, 16):
            aa, ww = a[:m].contiguous(), h.rand((n_same, K), torch.float16)
            subjects[f"cuBLAS {m}x{n_same}x{K} (same bytes)"] = (lambda aa=aa, ww=ww: torch.matmul(aa, ww.t()))
        rd = h.rand((nbytes // 4,), torch.float32)
        subjects["torch sum, same bytes"] = lambda rd=rd: rd.sum()
        src = h.rand((nbytes // 4,), torch.float16)
        dst = torch.empty_like(src)
        subjects["torch copy, same bytes moved"] = lambda s=src, d=dst: d.copy_(s)
    print(f"built {M}x{N}x{K} {label(cfg)} err {errs[f'w4a16 {M}x{N}x{K}']:.3g}", flush=True)
M, N, K = 1024, 1024, 16384
a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
sp = splitk.make_ws_runner(a, b, SPLITK, sms); csp = torch.empty((M, N), dtype=torch.float16, device="cuda"); sp(csp)
errs["split-K"] = rel_fro_err(csp, torch.matmul(a.float(), b.float().t()))
subjects["split-K 1024x1024x16384"] = lambda: sp(csp)
subjects["cuBLAS 1024x1024x16384"] = lambda a=a, b=b: torch.matmul(a, b.t())
pairs["split-K 1024x1024x16384"] = "cuBLAS 1024x1024x16384"
M, N, K = 1536, 1536, 8192
a2, b2 = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
sk = streamk.make_ws_runner(a2, b2, STREAMK, sms); csk = torch.empty((M, N), dtype=torch.float16, device="cuda"); sk(csk)
errs["stream-K"] = rel_fro_err(csk, torch.matmul(a2.float(), b2.float().t()))
dp = build_tuned(M, N, K, NO_SPLIT, sms); cdp = torch.empty_like(csk); dp(a2, b2, cdp)
errs["data-parallel"] = rel_fro_err(cdp, torch.matmul(a2.float(), b2.float().t()))
subjects["stream-K 1536x1536x8192"] = lambda: sk(csk)
subjects["data-parallel 1536x1536x8192"] = lambda: dp(a2, b2, cdp)
subjects["cuBLAS 1536x1536x8192"] = lambda: torch.matmul(a2, b2.t())
pairs["stream-K 1536x1536x8192"] = "cuBLAS 1536x1536x8192"
print("errors", {k: round(v, 5) for k, v in errs.items()}, flush=True)
assert all(v < 1e-2 for v in errs.values()), errs

names = list(subjects)
ROUNDS = int(os.environ.get("ROUNDS", "7"))
res = {p: {s: [] for s in names} for p in FLUSH}
t0 = time.time()
for rnd in range(ROUNDS):
    for pi, (p, f) in enumerate(FLUSH.items()):
        h._flush = f
        for s in (names if (rnd + pi) % 2 == 0 else names[::-1]):
            res[p][s].append(round(h.time(subjects[s], repeat=300) * 1e3, 3))
    print(f"round {rnd} done {time.time() - t0:.0f}s", flush=True)
med = {s: {p: round(statistics.median(res[p][s]), 2) for p in FLUSH} for s in names}
for s in names:
    print(f"{s:40s}", "  ".join(f"{p}={med[s][p]:7.2f}" for p in FLUSH))
for k, base in pairs.items():
    print(f"{k:32s} speed-up over {base}: " + "  ".join(f"{p}={med[base][p] / med[k][p]:.3f}" for p in FLUSH))
json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms, "rounds": ROUNDS,
           "samples_per_round": 300, "timing": "measure.timing.Timing.time (repeat=300), flush replaced per variant",
           "flush": {"write": "256 MB int32 zero_ (the harness's protocol)",
                     "write+read": "the same zero_, then a sum over another 256 MB buffer",
                     "read": "the sum over the other 256 MB buffer alone"},
           "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "labels": {f"{M}x{N}x{K}": label(c) for (M, N, K), c in WIN.items()},
           "splitk": SPLITK, "streamk": STREAMK, "rel_fro_err": errs, "pairs": pairs,
           "median_us": med, "rounds_us": res}, open(out, "w"), indent=1)
