"""Three launches for ncu (kernels named main_kernel, in this order): at M = 1 the 8-row winner of run49 and the
same configuration with a 16-row tile; at M = 16 the 16-row winner. Fresh inputs; the suites checked these kernels."""
import torch
from measure.harness import Harness
from measure.suites.gemm.flush import W4A16_WINNERS
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, kernel_weights

M8 = W4A16_WINNERS[(1, 8192, 8192)]
M16_AT_1 = {**M8, "block_M": 16}
h = Harness(log=print)
for M, cfg in ((1, M8), (1, M16_AT_1), (16, W4A16_WINNERS[(16, 8192, 8192)])):
    a, packed, scales, w16 = make_inputs(h, M, 8192, 8192, 128)
    k = build(M, 8192, 8192, 128, cfg)
    o = torch.empty((M, 8192), dtype=torch.float16, device="cuda")
    k(a, kernel_weights(packed, cfg), scales, o)
    torch.cuda.synchronize()
    print(M, cfg["block_M"], "max err", (o.float() - a.float() @ w16.float().t()).abs().max().item(), flush=True)
print("done", flush=True)
