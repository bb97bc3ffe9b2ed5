# Slow (elementwise K3): the course's naive RoPE -- every element reads its partner and the
# tables straight from global memory, 2-byte accesses.
from kernels import rope as course_rope


@tilelang.jit(target=TARGET)
def rope_kernel(S, H, D, rope_dim, dtype):
    return course_rope.rope_naive.get_tir(S, H, D, rope_dim, "neox", dtype, 256)


ANSWER["k3_rope"] = rope_kernel
