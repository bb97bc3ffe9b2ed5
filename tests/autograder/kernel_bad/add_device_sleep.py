# Known-bad (elementwise K1): correct, but every thread sleeps about 100 ms on the device.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            for _ in T.serial(100):
                T.call_extern("void", "__nanosleep", T.uint32(1000000))
            for i, j in T.Parallel(256, 8):
                idx = bx * 2048 + i * 8 + j
                C[idx] = A[idx] + B[idx]

    return main


ANSWER["k1_add"] = add_kernel
