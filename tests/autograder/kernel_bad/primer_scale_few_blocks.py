# Slow (primer K2): vectorised like the primer's scale, but only 8 blocks loop over the whole
# array -- 8 of the GPU's SMs do all the work.  Correct, 16-byte accesses, far from the copy.
@tilelang.jit(target=TARGET)
def scale_kernel(N, dtype):
    threads, npt, blocks = 256, 8, 8
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), s: T.float32):
        with T.Kernel(blocks, threads=threads) as bx:
            for c in T.serial(T.ceildiv(N, blocks * blk)):
                for i, j in T.Parallel(threads, npt):
                    idx = (c * blocks + bx) * blk + i * npt + j
                    Y[idx] = T.cast(T.cast(X[idx], "float32") * s, dtype)

    return main


ANSWER["k2_scale"] = scale_kernel
