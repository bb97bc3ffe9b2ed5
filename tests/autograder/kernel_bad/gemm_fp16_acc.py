# Known-bad (GEMM K1): a low-precision shortcut -- accumulates in float16.
@tilelang.jit(target=TARGET)
def gemm_kernel(M, N, K, block_M=128, block_N=128, block_K=32, threads=128):

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_N, block_K), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float16")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


ANSWER["k1_gemm"] = gemm_kernel
