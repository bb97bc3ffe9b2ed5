# Known-bad (elementwise K1): "reads the expected output" -- returns what is already in C,
# as if the grader had left the reference there.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            for i, j in T.Parallel(256, 8):
                idx = bx * 2048 + i * 8 + j
                C[idx] = C[idx]

    return main


ANSWER["k1_add"] = add_kernel
