"""Launches for ncu (kernels named main_kernel, in this order): at M = 64 on 8192 x 8192 weights, the lag form without
and with fuse (the gemm.flush kernel before and after), the run59 search winner (256-k stages, 4 + 8 slots, no lag,
with fuse) and kpair without lag (the best kpair form of run56); fresh inputs, each checked against the fp16-weight
product.  Questions: what fuse changes in the issue and stall profile, and where the K-split pair loses what halving
the activation traffic from L2 gains."""
import sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights

W = dict(wide=True, perm=True)
CFGS = [config(64, 128, 8, stages_w=8, lag=True, **W), config(64, 128, 8, stages_w=8, lag=True, fuse=True, **W),
        config(64, 256, 4, stages_w=8, fuse=True, **W), config(64, 256, 2, "n", stages_w=4, kpair=True, **W)]
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
