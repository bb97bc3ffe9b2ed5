"""Launches for ncu (kernels named main_kernel, in this order): the M = 16 winner of gemm.flush, the M = 1 winner
(8-row tile), then post on wgmma at M = 16 (256-k stages, 8 slots). Fresh inputs; the suites checked these kernels."""
import torch
from measure.harness import Harness
from measure.suites.gemm.flush import W4A16_WINNERS
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config, kernel_weights

h = Harness(log=print)
PW16 = config(16, 256, 8, chunk=128, wide=True, perm=True, post=True)
for M, cfg in ((16, W4A16_WINNERS[(16, 8192, 8192)]), (1, W4A16_WINNERS[(1, 8192, 8192)]), (16, PW16)):
    a, packed, scales, w16 = make_inputs(h, M, 8192, 8192, 128)
    k = build(M, 8192, 8192, 128, cfg)
    o = torch.empty((M, 8192), dtype=torch.float16, device="cuda")
    k(a, kernel_weights(packed, cfg), scales, o)
    torch.cuda.synchronize()
    print(M, cfg["block_M"], "max err", (o.float() - a.float() @ w16.float().t()).abs().max().item(), flush=True)
print("done", flush=True)
