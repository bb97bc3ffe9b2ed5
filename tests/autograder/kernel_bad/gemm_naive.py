# Slow (GEMM K1): the course's rung 1 -- no shared memory, K walked in global memory.
from kernels.gemm.ladder import rung1_naive


@tilelang.jit(target=TARGET)
def gemm_kernel(M, N, K):
    return rung1_naive.get_tir(M, N, K)


ANSWER["k1_gemm"] = gemm_kernel
