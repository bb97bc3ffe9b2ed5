"""Launches for ncu (kernels named main_kernel, in this order): the W4A16 winners of gemm.flush at M = 64 and
M = 128 (8192 x 8192 weights), fresh inputs, each checked against the fp16-weight product."""
import sys
import torch
from measure.suites.gemm.flush import W4A16_WINNERS
from kernels.gemm.w4a16 import build, kernel_weights

if len(sys.argv) > 1 and sys.argv[1] == "--prebuild":
    for M in (64, 128):
        build(M, 8192, 8192, 128, W4A16_WINNERS[(M, 8192, 8192)])
    sys.exit(0)
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs

h = Harness(log=print)
for M in (64, 128):
    cfg = W4A16_WINNERS[(M, 8192, 8192)]
    a, packed, scales, w16 = make_inputs(h, M, 8192, 8192, 128)
    k = build(M, 8192, 8192, 128, cfg)
    o = torch.empty((M, 8192), dtype=torch.float16, device="cuda")
    k(a, kernel_weights(packed, cfg), scales, o)
    torch.cuda.synchronize()
    print(M, "max err", (o.float() - a.float() @ w16.float().t()).abs().max().item(), flush=True)
print("done", flush=True)
