# Known-bad (elementwise K1): an empty kernel -- launches, writes nothing.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            T.evaluate(0)

    return main


ANSWER["k1_add"] = add_kernel
