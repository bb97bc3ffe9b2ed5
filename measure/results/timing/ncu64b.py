"""Launch for ncu (one kernel named main_kernel): the W4A16 kernel of gemm.flush at M = 64 (8192 x 8192 weights; since
run57 the lag form with one lop3 per fp16 pair), fresh inputs, checked against the fp16-weight product.  Its profile
at the level of SASS instructions was not taken before: ncu64 profiled the form without lag, ncufu only the raw
metrics of this one."""
import sys
import torch
from measure.suites.gemm.flush import W4A16_WINNERS
from kernels.gemm.w4a16 import build, kernel_weights

SHAPE = (64, 8192, 8192)
if len(sys.argv) > 1 and sys.argv[1] == "--prebuild":
    build(*SHAPE, 128, W4A16_WINNERS[SHAPE])
    sys.exit(0)
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs

h = Harness(log=print)
cfg = W4A16_WINNERS[SHAPE]
a, packed, scales, w16 = make_inputs(h, *SHAPE, 128)
k = build(*SHAPE, 128, cfg)
o = torch.empty((SHAPE[0], SHAPE[1]), dtype=torch.float16, device="cuda")
k(a, kernel_weights(packed, cfg), scales, o)
torch.cuda.synchronize()
print(SHAPE, "max err", (o.float() - a.float() @ w16.float().t()).abs().max().item(), flush=True)
print("done", flush=True)
