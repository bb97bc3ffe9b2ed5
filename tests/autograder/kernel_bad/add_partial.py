# Known-bad (elementwise K1): writes only the first half of the output.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):
    half = N // 2

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(half, 2048), threads=256) as bx:
            for i, j in T.Parallel(256, 8):
                idx = bx * 2048 + i * 8 + j
                if idx < half:
                    C[idx] = A[idx] + B[idx]

    return main


ANSWER["k1_add"] = add_kernel
