# Known-bad (elementwise K1): a low-precision shortcut -- adds in bfloat16 whatever the dtype.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            for i, j in T.Parallel(256, 8):
                idx = bx * 2048 + i * 8 + j
                C[idx] = T.cast(T.cast(A[idx], "bfloat16") + T.cast(B[idx], "bfloat16"), dtype)

    return main


ANSWER["k1_add"] = add_kernel
