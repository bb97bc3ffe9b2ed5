"""The chapters' Ascend kernels, written in mainline tilelang 0.1.15's Ascend dialect.

Every factory returns a ``T.prim_func``.  Nothing here runs on an NPU: the course
lowers these programs on the CPU through tilelang's Ascend pass pipeline and stops
at the ``bisheng`` call (see :mod:`measure.ascend`).  The PyTorch references
state what each kernel computes; they are checked on the CPU against small inputs,
never against the kernels' output.

Kernels
-------
``gemm_relu``      C = relu(A @ B.T), bf16 in, fp32 out; the README's 256x224x128 tile,
                   Cube for the GEMM, two Vector cores (``T.SimtVF``) for the ReLU.
``gemm_splitk``    C = A @ B.T with K split over ``split_k`` cores: split 0 stores,
                   an explicit inter-core rendezvous, then the others add atomically.
``rmsnorm``        y = x * rsqrt(mean(x^2) + eps) * w, rows per tile sized from the UB
                   budget (248 KiB UB minus the 32 KiB a ``T.SimtVF`` context reserves).
``vector_add``     C = A + B with ``T.SimtVF`` threads, double-buffered in UB.
"""

# No `from __future__ import annotations`: T.prim_func evaluates the closure-bound
# shapes in its parameter annotations.

from dataclasses import dataclass

import tilelang.ascend.language as T

# Capacities the 0.1.15 Ascend scheduler assumes (src/ascend/transform/auto_schedule.cc,
# GetSharedMemoryLimit / GetL1MemoryLimit / GetL0CMemoryLimit).
UB_BYTES = 248 * 1024
SIMT_CONTEXT_BYTES = 32 * 1024
L1_BYTES = 512 * 1024
L0C_BYTES = 256 * 1024


# ---------------------------------------------------------------- references
def ref_gemm_relu(a, b):
    """fp32 reference of ``gemm_relu``: relu(a @ b.T)."""
    return (a.float() @ b.float().T).clamp_min(0.0)


def ref_gemm(a, b):
    """fp32 reference of ``gemm_splitk``: a @ b.T."""
    return a.float() @ b.float().T


def ref_rmsnorm(x, w, eps: float = 1e-6):
    """fp32 reference of ``rmsnorm`` (returned in fp32)."""
    xf = x.float()
    return xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.float()


# ---------------------------------------------------------------- GEMM + ReLU
def check_gemm_relu(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, num_blocks: int) -> None:
    """Raise ValueError naming the constraint a GEMM+ReLU configuration breaks."""
    for name, dim, blk in (("M", M, block_M), ("N", N, block_N), ("K", K, block_K)):
        if dim <= 0 or blk <= 0 or dim % blk:
            raise ValueError(f"{name}={dim} must be a positive multiple of block_{name}={blk} (no partial tiles)")
    if block_M % 2:
        raise ValueError(f"block_M={block_M} must be even: each of the two Vector cores takes block_M/2 rows")
    l1 = 2 * (block_M + block_N) * block_K * 2  # two stages, bf16
    if l1 > L1_BYTES:
        raise ValueError(f"two bf16 stages of A and B tiles need {l1} B of L1 > {L1_BYTES} B")
    if block_M * block_N * 4 > L0C_BYTES:
        raise ValueError(f"fp32 accumulator {block_M}x{block_N} needs {block_M * block_N * 4} B of L0C > {L0C_BYTES} B")
    if num_blocks <= 0:
        raise ValueError("num_blocks must be positive")


def gemm_relu(M: int = 256, N: int = 7168, K: int = 2048, block_M: int = 256, block_N: int = 224,
              block_K: int = 128, num_blocks: int = 32):
    """Persistent GEMM with a fused ReLU epilogue on the Vector cores."""
    check_gemm_relu(M, N, K, block_M, block_N, block_K, num_blocks)
    n_tiles = N // block_N
    total_tiles = (M // block_M) * n_tiles
    half = block_M // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((N, K), T.bfloat16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(num_blocks) as bx:
            a_l1 = T.alloc_l1((block_M, block_K), T.bfloat16)
            b_l1 = T.alloc_l1((block_N, block_K), T.bfloat16)
            acc = T.alloc_l0c((block_M, block_N), T.float32)
            out_ub = T.alloc_shared((half, block_N), T.float32)
            for tile in T.Persistent([total_tiles], num_blocks, bx):
                row0 = tile // n_tiles * block_M
                col0 = tile % n_tiles * block_N
                for kk in T.Pipelined(K // block_K, num_stages=2):
                    T.copy(A[row0, kk * block_K], a_l1)
                    T.copy(B[col0, kk * block_K], b_l1)
                    T.gemm(a_l1, b_l1, acc, transpose_B=True, clear_accum=(kk == 0))
                T.dual_copy(acc, out_ub)
                with T.SimtVF(threads=128):
                    for i, j in T.Parallel(half, block_N):
                        out_ub[i, j] = T.max(out_ub[i, j], 0)
                T.dual_copy(out_ub, C[row0 : row0 + block_M, col0 : col0 + block_N])

    return main


# ---------------------------------------------------------------- split-K GEMM
def check_gemm_splitk(M: int, N: int, K: int, split_k: int, tile: int) -> None:
    """Raise ValueError naming the constraint a split-K configuration breaks."""
    if split_k < 2:
        raise ValueError(f"split_k={split_k} must be at least 2 (otherwise it is a plain GEMM)")
    for name, dim in (("M", M), ("N", N)):
        if dim <= 0 or dim % tile:
            raise ValueError(f"{name}={dim} must be a positive multiple of the {tile} output tile")
    if K <= 0 or K % (tile * split_k):
        raise ValueError(f"K={K} must be a positive multiple of tile*split_k={tile * split_k}")


def gemm_splitk(M: int = 256, N: int = 512, K: int = 8192, split_k: int = 8, tile: int = 256):
    """Split-K GEMM: one core per (output tile, K slice); fp32 partials meet in GM.

    Split 0 writes its partial with a plain FixPipe store; every core then passes one
    inter-core rendezvous; the other splits add theirs with ``T.set_atomic("add")``.
    The rendezvous is written by hand: InsertSync only orders pipes inside a core.
    """
    check_gemm_splitk(M, N, K, split_k, tile)
    n_tiles = N // tile
    out_tiles = (M // tile) * n_tiles
    k_steps = K // tile // split_k
    num_blocks = out_tiles * split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((N, K), T.bfloat16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(num_blocks) as bx:
            part = bx % split_k
            out_tile = bx // split_k
            row0 = out_tile // n_tiles * tile
            col0 = out_tile % n_tiles * tile
            a_l1 = T.alloc_l1((tile, tile), T.bfloat16)
            b_l1 = T.alloc_l1((tile, tile), T.bfloat16)
            acc = T.alloc_l0c((tile, tile), T.float32)
            if part != 0:
                T.set_atomic("add", "float32")
            for ks in T.Pipelined(k_steps, num_stages=2):
                k0 = (part * k_steps + ks) * tile
                T.copy(A[row0 : row0 + tile, k0 : k0 + tile], a_l1)
                T.copy(B[col0 : col0 + tile, k0 : k0 + tile], b_l1)
                T.gemm(a_l1, b_l1, acc, transpose_B=True, clear_accum=(ks == 0))
            with T.PerCoreTask():
                if part == 0:
                    T.copy(acc, C[row0, col0])
                T.ascend_sync_inter_arrive("PIPE_FIX", 0)
                T.ascend_sync_inter_wait("PIPE_FIX", 0)
                if part != 0:
                    T.copy(acc, C[row0, col0])
            if part != 0:
                T.set_atomic_none()

    return main


# ---------------------------------------------------------------- RMSNorm
@dataclass(frozen=True)
class RmsnormPlan:
    """How many rows one UB tile holds, derived from the UB budget."""

    d: int
    rows: int
    stages: int
    budget_bytes: int
    used_bytes: int


def plan_rmsnorm(d: int, stages: int = 2, elem_bytes: int = 2) -> RmsnormPlan:
    """Largest power-of-two row count whose UB buffers fit the SimtVF budget.

    UB holds the weight row once, and ``stages`` copies of an input and an output
    tile of ``rows x d`` elements (bf16).  The budget is the physical UB minus the
    context a ``T.SimtVF`` region reserves.
    """
    if d <= 0 or d % 128:
        raise ValueError(f"d={d} must be a positive multiple of 128 (one SIMT thread block row)")
    budget = UB_BYTES - SIMT_CONTEXT_BYTES
    weight = d * elem_bytes
    per_row = stages * 2 * d * elem_bytes
    rows = 1
    if weight + per_row > budget:
        raise ValueError(f"d={d}: one row needs {weight + per_row} B of UB > budget {budget} B")
    while weight + per_row * rows * 2 <= budget:
        rows *= 2
    return RmsnormPlan(d=d, rows=rows, stages=stages, budget_bytes=budget, used_bytes=weight + per_row * rows)


def rmsnorm(tokens: int = 4096, d: int = 4096, eps: float = 1e-6, num_blocks: int = 64, threads: int = 1024):
    """Persistent RMSNorm: each core walks row tiles sized by :func:`plan_rmsnorm`."""
    plan = plan_rmsnorm(d)
    rows = plan.rows
    if tokens <= 0 or tokens % (rows * num_blocks):
        raise ValueError(f"tokens={tokens} must be a positive multiple of rows*num_blocks={rows * num_blocks}")
    steps = tokens // (rows * num_blocks)

    @T.prim_func
    def main(X: T.Tensor((tokens, d), T.bfloat16), W: T.Tensor((d,), T.bfloat16), Y: T.Tensor((tokens, d), T.bfloat16)):
        with T.Kernel(num_blocks) as bx:
            w_ub = T.alloc_shared((d,), T.bfloat16)
            x_ub = T.alloc_shared((rows, d), T.bfloat16)
            y_ub = T.alloc_shared((rows, d), T.bfloat16)
            T.copy(W[0:d], w_ub)
            for step in T.Pipelined(steps, num_stages=plan.stages):
                r0 = (step * num_blocks + bx) * rows
                T.copy(X[r0 : r0 + rows, 0:d], x_ub)
                with T.SimtVF(threads=threads):
                    xf = T.alloc_fragment((rows, d), T.float32)
                    sq = T.alloc_fragment((rows, d), T.float32)
                    ss = T.alloc_fragment((rows,), T.float32)
                    for r, i in T.Parallel(rows, d):
                        xf[r, i] = T.cast(x_ub[r, i], T.float32)
                        sq[r, i] = xf[r, i] * xf[r, i]
                    T.reduce_sum(sq, ss, dim=1)
                    for r, i in T.Parallel(rows, d):
                        y_ub[r, i] = T.cast(xf[r, i] * T.rsqrt(ss[r] / d + eps) * T.cast(w_ub[i], T.float32), T.bfloat16)
                T.copy(y_ub, Y[r0 : r0 + rows, 0:d])

    return main


# ---------------------------------------------------------------- vector add
def vector_add(n: int = 1 << 22, tile: int = 8192, num_blocks: int = 64, threads: int = 1024, stages: int = 2):
    """C = A + B in fp32: double-buffered UB tiles, SIMT threads on the Vector core."""
    if n <= 0 or n % (tile * num_blocks):
        raise ValueError(f"n={n} must be a positive multiple of tile*num_blocks={tile * num_blocks}")
    if 3 * stages * tile * 4 > UB_BYTES - SIMT_CONTEXT_BYTES:
        raise ValueError(f"3 buffers x {stages} stages x {tile} fp32 exceed the UB budget")
    steps = n // (tile * num_blocks)

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32), C: T.Tensor((n,), T.float32)):
        with T.Kernel(num_blocks) as bx:
            a = T.alloc_shared((tile,), T.float32)
            b = T.alloc_shared((tile,), T.float32)
            c = T.alloc_shared((tile,), T.float32)
            for step in T.Pipelined(steps, num_stages=stages):
                base = (step * num_blocks + bx) * tile
                T.copy(A[base : base + tile], a)
                T.copy(B[base : base + tile], b)
                with T.SimtVF(threads=threads):
                    for i in T.Parallel(tile):
                        c[i] = a[i] + b[i]
                T.copy(c, C[base : base + tile])

    return main
