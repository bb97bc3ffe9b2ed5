# Partly wrong (GEMM K2): pipelined, but the K loop rounds down, so the last partial K tile
# is dropped -- right when K is a multiple of 64, wrong otherwise.
@tilelang.jit(target=TARGET)
def gemm_pipelined_kernel(M, N, K, block_M=128, block_N=128, block_K=64, stages=3, threads=128):

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_N, block_K), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(K // block_K, num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


ANSWER["k2_gemm_pipe"] = gemm_pipelined_kernel
