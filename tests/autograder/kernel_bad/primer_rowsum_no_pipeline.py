# Partly (primer K3): correct, but each column tile goes global -> registers in a plain
# T.serial loop: no T.Pipelined, so nothing overlaps the loads with the sums.  The structure
# check names the missing pipeline; correctness holds.
@tilelang.jit(target=TARGET)
def row_sum_kernel(M, N, dtype, blk_m=64, blk_n=128, threads=128):
    tiles = (N + blk_n - 1) // blk_n

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            xf = T.alloc_fragment((blk_m, blk_n), "float32")
            part = T.alloc_fragment((blk_m,), "float32")
            acc = T.alloc_fragment((blk_m,), "float32")
            T.clear(acc)
            for k in T.serial(tiles):
                T.copy(X[bx * blk_m, k * blk_n], xf)
                T.reduce_sum(xf, part, dim=1)
                for i in T.Parallel(blk_m):
                    acc[i] += part[i]
            T.copy(acc, Y[bx * blk_m])

    return main


ANSWER["k3_row_sum"] = row_sum_kernel
