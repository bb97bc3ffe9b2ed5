# Known-bad (elementwise K1): a cached result on the device -- each block computes only while
# the first element of its own chunk is still NaN (read before a barrier, so no block races
# with its own writes), so every launch after the first does nothing: correct output,
# impossible time.
@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 2048), threads=256) as bx:
            first = T.alloc_shared((1,), "float32")
            tx = T.get_thread_binding()
            if tx == 0:
                first[0] = T.cast(C[bx * 2048], "float32")
            T.sync_threads()
            if T.isnan(first[0]):
                for i, j in T.Parallel(256, 8):
                    idx = bx * 2048 + i * 8 + j
                    C[idx] = A[idx] + B[idx]

    return main


ANSWER["k1_add"] = add_kernel
