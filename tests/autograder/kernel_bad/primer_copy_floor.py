# Partly wrong (primer K1): the grid rounds down -- N // threads blocks -- so the ragged
# tail of a length that is not a multiple of 256 is never copied.
@tilelang.jit(target=TARGET)
def copy_kernel(N, dtype):
    threads = 256

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(N // threads, threads=threads) as bx:
            for i in T.Parallel(threads):
                Y[bx * threads + i] = X[bx * threads + i]

    return main


ANSWER["k1_copy"] = copy_kernel
