# Known-bad (elementwise K1): elaborates, but nvcc refuses it (calls a device function that
# does not exist).
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:
            for i in T.Parallel(256):
                C[bx * 256 + i] = T.call_extern(dtype, "no_such_device_function", A[bx * 256 + i], B[bx * 256 + i])

    return main


ANSWER["k1_add"] = add_kernel
