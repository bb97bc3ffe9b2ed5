# Known-bad (primer K3): the primer's row sum with every partial sum kept in the input dtype
# (fp16 / bf16) -- a low-precision shortcut the fp64 reference and the fp32 tolerance catch.
@tilelang.jit(target=TARGET)
def row_sum_kernel(M, N, dtype, blk_m=64, blk_n=128, threads=128):
    tiles = (N + blk_n - 1) // blk_n

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            xs = T.alloc_shared((blk_m, blk_n), dtype)
            xf = T.alloc_fragment((blk_m, blk_n), dtype)
            part = T.alloc_fragment((blk_m,), dtype)
            acc = T.alloc_fragment((blk_m,), dtype)
            T.clear(acc)
            for k in T.Pipelined(tiles, num_stages=2):
                T.copy(X[bx * blk_m, k * blk_n], xs)
                T.copy(xs, xf)
                T.reduce_sum(xf, part, dim=1)
                for i in T.Parallel(blk_m):
                    acc[i] += part[i]
            for i in T.Parallel(blk_m):
                Y[bx * blk_m + i] = T.cast(acc[i], "float32")

    return main


ANSWER["k3_row_sum"] = row_sum_kernel
