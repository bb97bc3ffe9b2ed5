"""Three launches for ncu (kernels named main_kernel, in this order): post s8 at M = 16, den s8 without its sums
(noasum), den s8 whole; fresh inputs, each launch checked against nothing (ncu replays them)."""
import os, sys
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config, kernel_weights

POST = config(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True)
DEN = {**POST, "den": True}
h = Harness(log=print)
a, packed, scales, w16 = make_inputs(h, 16, 8192, 8192, 128)
for cfg, probe in ((POST, ""), (DEN, "noasum"), (DEN, "")):
    k = build(16, 8192, 8192, 128, cfg, probe=probe)
    o = torch.empty((16, 8192), dtype=torch.float16, device="cuda")
    k(a, kernel_weights(packed, cfg), scales, o)
    torch.cuda.synchronize()
print("done", flush=True)
