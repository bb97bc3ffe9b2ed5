# Known-bad (primer K2): the factor as a one-element tensor instead of the T.float32 scalar the
# interface asks for -- the grader refuses the interface before anything runs.
@tilelang.jit(target=TARGET)
def scale_kernel(N, dtype):
    threads, npt = 256, 8
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), S: T.Tensor((1,), "float32")):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                Y[idx] = T.cast(T.cast(X[idx], "float32") * S[0], dtype)

    return main


ANSWER["k2_scale"] = scale_kernel
