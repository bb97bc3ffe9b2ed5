# Partly wrong (elementwise K2): divides the sum of squares by the padded row length, so
# only rows whose length is a multiple of 256 come out right.
@tilelang.jit(target=TARGET)
def rmsnorm_kernel(M, N, dtype, blk_m=2, threads=256):
    NP = (N + 255) // 256 * 256

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            x = T.alloc_fragment((blk_m, NP), dtype)
            w = T.alloc_fragment((NP,), dtype)
            sq = T.alloc_fragment((blk_m, NP), "float32")
            ss = T.alloc_fragment((blk_m,), "float32")
            T.copy(X[bx * blk_m, 0], x)
            T.copy(W[0], w)
            for i, j in T.Parallel(blk_m, NP):
                sq[i, j] = T.cast(x[i, j], "float32") * T.cast(x[i, j], "float32")
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(blk_m):
                ss[i] = T.rsqrt(ss[i] / NP + 1e-6)
            for i, j in T.Parallel(blk_m, NP):
                x[i, j] = T.cast(T.cast(x[i, j], "float32") * ss[i] * T.cast(w[j], "float32"), dtype)
            T.copy(x, Y[bx * blk_m, 0])

    return main


ANSWER["k2_rmsnorm"] = rmsnorm_kernel
