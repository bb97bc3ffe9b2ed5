"""Does the harness's L2 flush (a 256 MB zero_) charge the timed kernel with writing back the
flush's dirty lines?  Times the W4A16 bench winners of run44, cuBLAS on the fp16 weights, plain
reads of the same byte counts and a one-element add under four flush variants, alternating."""
import json, os, statistics, sys, time
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config as _c, kernel_weights, label
from measure.suites.gemm.common import rel_fro_err

WIN = {1: _c(16, 256, 12, wide=True, consumers=4, tiled=True, perm=True),
       16: _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
       64: _c(64, 256, 4, stages_w=8, wide=True, perm=True),
       128: _c(128, 128, 4, stages_w=8, wide=True, perm=True)}
N = K = 8192
out = sys.argv[1]
h = Harness(log=print)
MB = 1024 * 1024
buf = torch.empty(256 * MB // 4, dtype=torch.int32, device="cuda")
buf2 = torch.empty(256 * MB // 4, dtype=torch.int32, device="cuda").fill_(1)
sink = torch.empty(1, dtype=torch.int64, device="cuda")

def f_write(): buf.zero_()
def f_write_read(): buf.zero_(); buf2.sum()
def f_read(): buf2.sum()
def f_write_idle(): buf.zero_(); torch.cuda._sleep(400000)
FLUSH = {"write": f_write, "write+read": f_write_read, "read": f_read, "write+idle": f_write_idle}

subjects = {}
x1 = torch.zeros(1, device="cuda")
subjects["add 1 element"] = lambda: x1.add_(1.0)
keep = {}
for M, cfg in WIN.items():
    t0 = time.time()
    kern = build(M, N, K, 128, cfg)
    a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
    wq = kernel_weights(packed, cfg)
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    kern(a, wq, scales, c)
    ref = torch.matmul(a.float(), w16.float().t())
    print(f"M={M} {label(cfg)} built {time.time()-t0:.1f}s err {rel_fro_err(c, ref):.4g}", flush=True)
    keep[M] = (a, wq, scales, w16, c)
    subjects[f"w4a16 M={M}"] = (lambda k=kern, a=a, w=wq, s=scales, c=c: k(a, w, s, c))
    subjects[f"cuBLAS M={M}"] = (lambda a=a, w=w16: torch.matmul(a, w.t()))
a, wq, scales, w16, c = keep[16]
r34 = wq.view(torch.int32)
subjects["read int4 weights (sum)"] = lambda: r34.sum()
r134 = w16.view(torch.int32)
subjects["read fp16 weights (sum)"] = lambda: r134.sum()

res = {p: {s: [] for s in subjects} for p in FLUSH}
names = list(subjects)
ROUNDS = int(os.environ.get("ROUNDS", "5"))
for rnd in range(ROUNDS):
    for pi, (p, f) in enumerate(FLUSH.items()):
        h._flush = f
        order = names if (rnd + pi) % 2 == 0 else names[::-1]
        for s in order:
            torch.cuda.synchronize()
            # raw samples, same loop as Timing.time
            fn = subjects[s]
            fn(); torch.cuda.synchronize()
            for _ in range(20): fn()
            st = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
            en = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
            for i in range(200):
                f(); st[i].record(); fn(); en[i].record()
            torch.cuda.synchronize()
            xs = sorted(a.elapsed_time(b) * 1e3 for a, b in zip(st, en))
            res[p][s].append({"median": statistics.median(xs), "mean": statistics.fmean(xs), "p10": xs[20], "p90": xs[180]})
    print(f"round {rnd} done", flush=True)

summary = {}
for p in FLUSH:
    for s in names:
        meds = [r["median"] for r in res[p][s]]
        summary.setdefault(s, {})[p] = round(statistics.median(meds), 2)
for s in names:
    print(f"{s:28s}", "  ".join(f"{p}={summary[s][p]:7.2f}" for p in FLUSH))
for M in WIN:
    print(f"M={M}: ratio cuBLAS/w4a16 " + "  ".join(
        f"{p}={summary[f'cuBLAS M={M}'][p] / summary[f'w4a16 M={M}'][p]:.3f}" for p in FLUSH))
json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "samples": 200,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "labels": {M: label(c) for M, c in WIN.items()},
           "summary_median_us": summary, "rounds_us": res}, open(out, "w"), indent=1)
