# Known-bad (elementwise K1): a cached result on the device -- computes only while C[0] is
# still NaN, so every launch after the first does nothing (correct output, impossible time).
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            if T.isnan(T.cast(C[0], "float32")):
                for i, j in T.Parallel(256, 8):
                    idx = bx * 2048 + i * 8 + j
                    C[idx] = A[idx] + B[idx]

    return main


ANSWER["k1_add"] = add_kernel
