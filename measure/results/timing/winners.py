from kernels.gemm.w4a16 import config as _c
from kernels.gemm.splitk import ws_splitk_config
from kernels.gemm.streamk import ws_config
WIN = {(1, 8192, 8192): _c(16, 256, 12, wide=True, consumers=4, tiled=True, perm=True),
       (16, 8192, 8192): _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
       (64, 8192, 8192): _c(64, 256, 4, stages_w=8, wide=True, perm=True),
       (128, 8192, 8192): _c(128, 128, 4, stages_w=8, wide=True, perm=True),
       (4096, 4096, 4096): _c(256, 128, 2, "n", wide=True, perm=True)}
SPLITK = ws_splitk_config(4, reduce_rows=32, pdl=True)
STREAMK = ws_config(128, 5, 64, -1)
