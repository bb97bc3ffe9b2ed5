"""Launches for ncu (kernels named main_kernel, in this order): at M = 64 on 8192 x 8192 weights, the gemm.flush winner
of the time (written out since the flush suite took the lag form) and the same decoupled rings with lag (128-k stages, 8 activation slots, 8 weight slots), fresh inputs, each checked
against the fp16-weight product."""
import sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights

CFGS = [config(64, 256, 4, stages_w=8, wide=True, perm=True), config(64, 128, 8, stages_w=8, wide=True, perm=True, lag=True)]
if len(sys.argv) > 1 and sys.argv[1] == "--prebuild":
    for c in CFGS:
        build(64, 8192, 8192, 128, c)
    sys.exit(0)
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs

h = Harness(log=print)
for cfg in CFGS:
    a, packed, scales, w16 = make_inputs(h, 64, 8192, 8192, 128)
    k = build(64, 8192, 8192, 128, cfg)
    o = torch.empty((64, 8192), dtype=torch.float16, device="cuda")
    k(a, kernel_weights(packed, cfg), scales, o)
    torch.cuda.synchronize()
    print(cfg, "max err", (o.float() - a.float() @ w16.float().t()).abs().max().item(), flush=True)
print("done", flush=True)
