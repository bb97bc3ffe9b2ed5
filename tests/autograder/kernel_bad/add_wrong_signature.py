# Known-bad (elementwise K1): the output is float32 whatever the input dtype.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:
            for i in T.Parallel(256):
                C[bx * 256 + i] = T.cast(A[bx * 256 + i], "float32") + T.cast(B[bx * 256 + i], "float32")

    return main


ANSWER["k1_add"] = add_kernel
