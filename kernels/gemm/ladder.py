"""Chapter 14's GEMM ladder: five rungs from a naive tiled loop to explicit MMA.

Convention for the whole family: ``C[M, N] = A[M, K] @ B[N, K]^T`` with A and B in
fp16, accumulation in fp32 and C in fp16 -- B is stored like an ``nn.Linear``
weight (one row per output column), the layout every tilelang GEMM path supports
best. The cuBLAS baseline is ``torch.matmul(a, b.t())`` on the same tensors.

Rungs (each factory is a ``tilelang.jit`` kernel compiled for sm_90a):

1. :func:`rung1_naive`      -- output tile in registers, every thread walks K in
   global memory; no shared memory at all.
2. :func:`rung2_shared`     -- ``T.copy`` into shared memory + ``T.gemm``, serial K loop.
3. :func:`rung3_pipelined`  -- the same body under ``T.Pipelined(num_stages)``;
   on sm_90a tilelang turns it into TMA loads + wgmma + warp specialization.
4. :func:`rung4_annotated`  -- adds ``T.annotate_layout`` (swizzled shared layouts),
   ``T.use_swizzle`` (block rasterization) and a shared-memory staged epilogue.
5. :func:`rung5_mma`        -- explicit ``ldmatrix`` / ``mma.sync`` / ``stmatrix``
   through ``TensorCoreIntrinEmitter`` (the pre-Hopper instruction path).

The tuned rung 4 is a fixed, explicit list of candidates (:data:`TUNE_CANDIDATES`,
block shapes x stages x raster panel x warp partition, all with two consumer warpgroups) compiled in
parallel and timed one by one on the GPU inside :func:`gpu_suite`; every candidate's
time, the winner and the compile times are recorded.
"""



import time
from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, TARGET, check_cuda, check_matrix, check_tiles, check_wgmma_n, rel_fro_err, require

# ----------------------------------------------------------------- reference


def gemm_ref(a: Any, b: Any) -> Any:
    """fp32 reference: ``a @ b.T`` with both operands upcast to fp32."""
    import torch

    return torch.matmul(a.to(torch.float32), b.to(torch.float32).t())


def torch_gemm(a: Any, b: Any) -> Any:
    """The cuBLAS baseline on the same fp16 tensors (fp32 accumulate, fp16 out)."""
    import torch

    return torch.matmul(a, b.t())


# ------------------------------------------------------------------- rung 1


@tilelang.jit(target=TARGET)
def rung1_naive(M: int, N: int, K: int, block_M: int = 16, block_N: int = 16):
    """Rung 1: one thread per output element, K walked straight from global memory."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=block_M * block_N) as (bx, by):
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for k in T.serial(K):
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += T.cast(A[by * block_M + i, k], T.float32) * T.cast(B[bx * block_N + j, k], T.float32)
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = T.cast(acc[i, j], T.float16)

    return main


# ------------------------------------------------------------------- rung 2


@tilelang.jit(target=TARGET)
def rung2_shared(M: int, N: int, K: int, block_M: int = 128, block_N: int = 128, block_K: int = 32, threads: int = 128):
    """Rung 2: tiles staged in shared memory, ``T.gemm`` on them, no overlap of copy and math."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


# ------------------------------------------------------------------- rung 3


@tilelang.jit(target=TARGET)
def rung3_pipelined(
    M: int, N: int, K: int, block_M: int = 128, block_N: int = 128, block_K: int = 64, stages: int = 3, threads: int = 128
):
    """Rung 3: rung 2 under ``T.Pipelined`` -- copies of step k+1.. overlap the math of step k."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


# ------------------------------------------------------------------- rung 4

#: ``policy`` names of ``T.gemm``'s warp partition (see :func:`rung4_annotated`).
WARP_POLICY = {"square": T.GemmWarpPolicy.Square, "row": T.GemmWarpPolicy.FullRow, "col": T.GemmWarpPolicy.FullCol}



@tilelang.jit(target=TARGET)
def rung4_annotated(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
    panel: int = 10,
    order: str = "row",
    annotate: bool = True,
    policy: str = "square",
):
    """Rung 4: rung 3 plus swizzled shared layouts, block rasterization and a staged epilogue.

    ``threads`` counts the consumer threads; on sm_90a tilelang adds one producer
    warpgroup (TMA) on top. ``panel=0`` turns rasterization off; ``annotate=False``
    leaves the shared layouts to tilelang's inference (on sm_90a it infers the same
    128-byte swizzle that TMA and wgmma need, so the annotation changes nothing there;
    it matters on the cp.async + ldmatrix path of rung 5).
    ``policy`` is the warp partition of ``T.gemm``: ``"square"`` (tilelang's default) splits a
    128x256 tile between the two consumer warpgroups along N (each issues m64n128 wgmma on
    both 64-row halves); ``"row"`` gives each warpgroup whole rows (one m64n256 wgmma per
    k16 step), which reads about 17% fewer operand bytes from shared memory per step.
    """
    warp_policy = WARP_POLICY[policy]

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            if annotate:
                T.annotate_layout({A_s: make_swizzled_layout(A_s), B_s: make_swizzled_layout(B_s)})
            T.use_swizzle(panel_size=max(panel, 1), order=order, enable=panel > 0)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True, policy=warp_policy)
            T.copy(acc, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(target=TARGET)
def rung4_persistent(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 256,
    panel: int = 8,
    policy: str = "square",
    workers: int = 132,
    m_fastest: bool = True,
):
    """Rung 4 as a persistent kernel: ``workers`` blocks (one per SM) walk the output tiles
    ``w, w + workers, ...`` in a loop, decoded by ``T.PersistentTileScheduler`` with a
    raster panel of ``panel`` tiles (``m_fastest``: the panel sweeps M, else N).  The warp-specialized pipeline spans the tile loop:
    the producer warpgroup keeps issuing TMA loads for the next tile while the consumers
    write the finished one back (``stmatrix`` into a separate C tile, then a TMA store),
    so a tile's prologue and epilogue no longer leave the tensor cores idle.  The price
    is a C tile that cannot reuse the operand ring (``smem_budget`` adds it)."""
    warp_policy = WARP_POLICY[policy]
    m_blocks, n_blocks = T.ceildiv(M, block_M), T.ceildiv(N, block_N)
    waves = T.ceildiv(m_blocks * n_blocks, workers)

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(workers, threads=threads) as (wid,):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.annotate_layout({A_s: make_swizzled_layout(A_s), B_s: make_swizzled_layout(B_s)})
            sched = T.PersistentTileScheduler(m_blocks, n_blocks, num_workers=workers, swizzle_size=panel,
                                              column_major=m_fastest, stateful=False)
            for w in T.serial(waves):
                bm, bn = sched.coord(workers * w + wid)
                if bm < m_blocks and bn < n_blocks:
                    T.clear(acc)
                    for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                        T.copy(A[bm * block_M, ko * block_K], A_s)
                        T.copy(B[bn * block_N, ko * block_K], B_s)
                        T.gemm(A_s, B_s, acc, transpose_B=True, policy=warp_policy)
                    T.copy(acc, C_s)
                    T.copy(C_s, C[bm * block_M, bn * block_N])

    return main


# ------------------------------------------------------------------- rung 5


def _emitter(block_row_warps: int, block_col_warps: int, warp_row_tiles: int, warp_col_tiles: int, chunk: int):
    from tilelang.cuda.intrinsics import TensorCoreIntrinEmitter

    return TensorCoreIntrinEmitter(
        a_dtype=T.float16,
        b_dtype=T.float16,
        accum_dtype=T.float32,
        a_transposed=False,
        b_transposed=True,
        block_row_warps=block_row_warps,
        block_col_warps=block_col_warps,
        warp_row_tiles=warp_row_tiles,
        warp_col_tiles=warp_col_tiles,
        chunk=chunk,
    )


@tilelang.jit(target=TARGET)
def rung5_mma(
    M: int,
    N: int,
    K: int,
    block_row_warps: int = 2,
    block_col_warps: int = 2,
    warp_row_tiles: int = 64,
    warp_col_tiles: int = 64,
    block_K: int = 32,
    stages: int = 3,
):
    """Rung 5: the warp-level program written out -- ldmatrix, mma.sync (m16n8k16), stmatrix."""
    micro = 16
    block_M = block_row_warps * warp_row_tiles
    block_N = block_col_warps * warp_col_tiles
    threads = 32 * block_row_warps * block_col_warps
    warp_rows = warp_row_tiles // micro
    warp_cols = warp_col_tiles // micro
    local_a = micro * micro // 32
    local_b = micro * micro // 32
    local_c = micro * micro // 32
    mma = _emitter(block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles, block_K)

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16, scope="shared.dyn")
            B_s = T.alloc_shared((block_N, block_K), T.float16, scope="shared.dyn")
            C_s = T.alloc_shared((block_M // micro, block_N // micro, micro, micro), T.float16, scope="shared.dyn")
            A_l = T.alloc_local((warp_rows * local_a), T.float16)
            B_l = T.alloc_local((warp_cols * local_b), T.float16)
            C_l = T.alloc_local((warp_rows * warp_cols * local_c), T.float32)
            T.annotate_layout({A_s: make_swizzled_layout(A_s), B_s: make_swizzled_layout(B_s)})
            T.use_swizzle(panel_size=10)
            T.clear(C_l)
            for ko in T.Pipelined(K // block_K, num_stages=stages):
                for i, k in T.Parallel(block_M, block_K):
                    A_s[i, k] = A[by * block_M + i, ko * block_K + k]
                for j, k in T.Parallel(block_N, block_K):
                    B_s[j, k] = B[bx * block_N + j, ko * block_K + k]
                for ki in T.serial(block_K // micro):
                    mma.ldmatrix_a(A_l, A_s, ki)
                    mma.ldmatrix_b(B_l, B_s, ki)
                    mma.mma(A_l, B_l, C_l)
            mma.stmatrix(C_l, C_s)
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = C_s[i // micro, j // micro, i % micro, j % micro]

    return main


# ------------------------------------------------------------------ registry

#: Default configuration of every rung: (factory, kwargs, constraint on shapes).
RUNGS: dict[str, tuple[Any, dict[str, Any]]] = {
    "rung1_naive": (rung1_naive, dict(block_M=16, block_N=16)),
    "rung2_shared": (rung2_shared, dict(block_M=128, block_N=128, block_K=32, threads=128)),
    "rung3_pipelined": (rung3_pipelined, dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)),
    "rung4_annotated": (rung4_annotated, dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128, panel=10)),
    "rung5_mma": (
        rung5_mma,
        dict(block_row_warps=2, block_col_warps=2, warp_row_tiles=64, warp_col_tiles=64, block_K=32, stages=3),
    ),
}


def tile_of(name: str, cfg: dict[str, Any]) -> tuple[int, int, int]:
    """(block_M, block_N, block_K) of a rung configuration."""
    if name == "rung5_mma":
        return (cfg["block_row_warps"] * cfg["warp_row_tiles"], cfg["block_col_warps"] * cfg["warp_col_tiles"], cfg["block_K"])
    return (cfg["block_M"], cfg["block_N"], cfg.get("block_K", 1))


def check_inputs(a: Any, b: Any, name: str = "rung4_annotated", cfg: dict[str, Any] | None = None) -> tuple[int, int, int]:
    """Validate fp16 operands for a rung; returns (M, N, K). Raises ValueError naming the constraint.

    Rungs 1, 2 and 5 need M, N, K to be multiples of their tiles; rungs 3 and 4
    accept ragged M, N and K (TMA zero-fills out-of-range loads, stores are guarded)
    but need K to be a multiple of 8 (16-byte TMA row pitch).
    """
    import torch

    require(name in RUNGS, f"unknown rung {name!r}; one of {sorted(RUNGS)}")
    cfg = dict(RUNGS[name][1] if cfg is None else cfg)
    require(hasattr(a, "shape") and len(a.shape) == 2, "a must be a 2-D tensor [M, K]")
    require(hasattr(b, "shape") and len(b.shape) == 2, "b must be a 2-D tensor [N, K]")
    M, K = a.shape
    N, Kb = b.shape
    require(K == Kb, f"a is [M, K] and b is [N, K]: K must agree ({K} != {Kb})")
    check_matrix(a, "a", (M, K), torch.float16)
    check_matrix(b, "b", (N, K), torch.float16)
    bm, bn, bk = tile_of(name, cfg)
    if name in ("rung1_naive", "rung2_shared", "rung5_mma"):
        check_tiles(M=(M, bm), N=(N, bn), K=(K, bk))
    else:
        require(K % 8 == 0, f"K={K} must be a multiple of 8 (16-byte rows for TMA)")
        require(N % 8 == 0, f"N={N} must be a multiple of 8 (16-byte rows for the epilogue)")
        check_wgmma_n(bn)
    check_cuda(a=a, b=b)
    return M, N, K


def build(name: str, M: int, N: int, K: int, **overrides: Any) -> Any:
    """Compile rung ``name`` for a shape (factories cache per argument tuple)."""
    fn, cfg = RUNGS[name]
    cfg = {**cfg, **overrides}
    if name not in ("rung1_naive", "rung5_mma"):
        check_wgmma_n(cfg["block_N"])
    return fn(M, N, K, **cfg)


def run(name: str, a: Any, b: Any, out: Any = None, **overrides: Any) -> Any:
    """Check inputs, compile (cached) and launch rung ``name``: returns ``a @ b.T`` in fp16."""
    import torch

    cfg = {**RUNGS[name][1], **overrides}
    M, N, K = check_inputs(a, b, name, cfg)
    c = torch.empty((M, N), dtype=torch.float16, device=a.device) if out is None else out
    build(name, M, N, K, **overrides)(a, b, c)
    return c


# --------------------------------------------------------------- tuned rung 4

#: The explicit search space of the tuned rung 4 (Hopper, fp16, large square shapes).
#: ``threads`` counts consumer threads (2 warpgroups = 256); tilelang adds a
#: producer warpgroup. Axes: block shape (128x256, 256x128), stages (3-4, bounded by
#: 227 KB of shared memory), raster panel (8/10), annotated vs inferred swizzle, the
#: warp partition of ``T.gemm`` (``policy``), the launch (``persistent``) and who writes the
#: pipeline (``ws``: by hand, :mod:`kernels.gemm.ws`; otherwise tilelang's automatic one).
#: ``policy="row"`` gives each consumer warpgroup whole rows, so 128x256 issues m64n256k16
#: (the shape of CUTLASS's cooperative 128x256 kernel) instead of two m64n128k16, and
#: 256x128 issues m64n128 instead of m64n64 -- fewer shared-memory operand reads per
#: step, same registers (128 fp32 per thread, no spill under the 240-register budget).
#: ``persistent=True`` is :func:`rung4_persistent`: one block per SM walks the tiles, so
#: the next tile's loads overlap the current tile's epilogue (3 stages + the C tile fit).
#: The ``ws`` candidates are the hand-written pipeline (always the row partition, 128x256x64):
#: ``inflight`` (0/1 wgmma batches left running when a stage is released), ``epi_cols`` (C
#: stored in 128-column halves frees room for a fourth stage), ``persistent`` (one block per
#: SM, the producer's ring running across tiles) and ``cluster`` (2: B multicast to a pair of
#: blocks, released by the consumers of both).
#: Ruled out by compiling for sm_90a: three consumer warpgroups (192x256, 512 threads)
#: cap registers at 128 and ptxas refuses the m64n256 wgmma; block_K=128 with 2 stages
#: compiles but leaves the producer only one stage ahead.  Dropped after the recorded
#: searches (runs 2-6): 128x128 and 128x192 blocks and panel 16, never within 5 % of the best.
#: Cost: len(TUNE_CANDIDATES) = 19 compiles per shape (about 5 s each, in parallel in
#: the suite's thread pool) plus one timed run each (~0.2 s at 4096^3, ~0.3 s at 8192^3).
_WS = dict(block_M=128, block_N=256, block_K=64, threads=256, panel=8, ws=True)
TUNE_CANDIDATES: list[dict[str, Any]] = [
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=10),
    dict(block_M=128, block_N=256, block_K=64, stages=4, threads=256, panel=8),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8),
    dict(block_M=256, block_N=128, block_K=64, stages=4, threads=256, panel=10),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, annotate=False),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8, annotate=False),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, policy="row"),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8, policy="row"),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, persistent=True),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, policy="row", persistent=True),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, persistent=True, m_fastest=False),
    dict(_WS, stages=3, inflight=1),
    dict(_WS, stages=3, inflight=0),
    dict(_WS, stages=4, inflight=0, epi_cols=128),
    dict(_WS, stages=4, inflight=0, epi_cols=128, persistent=True),
    dict(_WS, stages=4, inflight=1, epi_cols=128, persistent=True),
    dict(_WS, stages=4, inflight=0, epi_cols=128, persistent=True, cluster=2),
    dict(_WS, stages=4, inflight=1, epi_cols=128, persistent=True, cluster=2),
]


def build_tuned(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = 132) -> Any:
    """Compile one tuned rung-4 candidate: the hand-written :func:`kernels.gemm.ws.rung4_ws`
    when ``cfg["ws"]`` (on ``workers`` blocks when also persistent), :func:`rung4_persistent`
    on ``workers`` blocks when ``cfg["persistent"]``, else :func:`rung4_annotated`."""
    kw = {k: v for k, v in cfg.items() if k != "persistent"}
    check_wgmma_n(kw["block_N"])
    if cfg.get("ws"):
        from kernels.gemm.ws import WS_BLOCK_M, WS_THREADS, rung4_ws

        require(cfg["block_M"] == WS_BLOCK_M and cfg["threads"] + 128 == WS_THREADS,
                f"the hand-written pipeline is {WS_BLOCK_M} rows on {WS_THREADS - 128} consumer threads")
        wk = {k: cfg[k] for k in ("block_N", "block_K", "stages", "panel", "cluster", "inflight", "epi_cols") if k in cfg}
        return rung4_ws(M, N, K, workers=workers if cfg.get("persistent") else 0, **wk)
    if cfg.get("persistent"):
        return rung4_persistent(M, N, K, workers=workers, **kw)
    return rung4_annotated(M, N, K, **kw)


def label(cfg: dict[str, Any]) -> str:
    """Short printable name of a rung-4 configuration."""
    tag = "" if cfg.get("annotate", True) else "_inferred"
    if cfg.get("policy", "square") != "square":
        tag += f"_{cfg['policy']}"
    if cfg.get("ws"):
        tag += "_ws" + (f"_e{cfg['epi_cols']}" if cfg.get("epi_cols") else "") + f"_if{cfg.get('inflight', 1)}"
    if cfg.get("persistent"):
        tag += "_pers" if cfg.get("m_fastest", True) else "_pers_nfast"
    if cfg.get("cluster", 1) > 1:
        tag += f"_c{cfg['cluster']}"
    return f"{cfg['block_M']}x{cfg['block_N']}x{cfg['block_K']}_s{cfg['stages']}_t{cfg['threads']}_p{cfg['panel']}{tag}"


def smem_budget(cfg: dict[str, Any], in_dtype: str = "fp16") -> int:
    """Shared memory the ledger predicts for a pipelined rung: the stage ring of A and B tiles.

    The fp16 C staging tile of rung 4 is not added: tilelang reuses the A/B ring for it
    once the K loop is over (the tests check this against the lowered kernel).  The
    persistent kernel cannot reuse it -- the producer is already filling the ring for the
    next tile while the consumers write C -- so there the C tile is added.  The hand-written
    pipeline (``ws``) always has its own C staging, ``block_M x epi_cols`` (all of
    ``block_N`` unless ``epi_cols`` is given).
    """
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    nbytes = dtype_bytes(in_dtype)
    ring = smem_total(cfg["block_M"], cfg["block_N"], cfg["block_K"], cfg.get("stages", 1), nbytes)
    if cfg.get("ws"):
        c_tile = cfg["block_M"] * (cfg.get("epi_cols") or cfg["block_N"]) * nbytes
    else:
        c_tile = cfg["block_M"] * cfg["block_N"] * nbytes if cfg.get("persistent") else 0
    return int(ring + c_tile)


# ------------------------------------------------------------------ GPU suite

#: Ragged shape of the hand-written candidates' check: 1100 rows are 9 blocks of 128 (an odd
#: count, so a cluster of two is padded), 1016 columns end inside a 256-wide tile, K = 1000
#: ends inside a 64-deep step.
WS_RAGGED = (1100, 1016, 1000)


def gpu_suite(h: Any) -> None:
    """Rungs 1-5 and the tuned rung 4 at 4096^3 and 8192^3 against cuBLAS (``torch.matmul``)."""
    import torch

    from kernels.gemm.common import gemm_cost, gemm_tolerance, launch_info, library_kernels, par_build, record_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    h.note("cuBLAS settings", "torch.matmul on fp16 with the library defaults",
           allow_tf32=torch.backends.cuda.matmul.allow_tf32,
           allow_fp16_reduced_precision_reduction=torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    shapes = [(1024, 1024, 1024)] if h.quick else [(4096, 4096, 4096), (8192, 8192, 8192)]
    sms = torch.cuda.get_device_properties(h.device).multi_processor_count if h.is_cuda else 132
    pers = next(c for c in TUNE_CANDIDATES if c.get("persistent"))
    # the hand-written pipeline on a ragged shape: plain, and persistent on clusters of two
    # (1100 rows = 9 blocks of 128, so the last cluster is padded with a block past the edge)
    ws_ragged = [c for c in TUNE_CANDIDATES if c.get("ws") and (not c.get("persistent") or c.get("cluster", 1) > 1)][::2]
    # every kernel of the suite compiled up front, in parallel
    thunks: dict[str, Any] = {}
    for (M, N, K) in shapes:
        for name in RUNGS:
            if name == "rung1_naive" and M > 4096:
                continue
            thunks[f"{name}@{M}"] = (lambda n=name, m=M, nn=N, k=K: build(n, m, nn, k))
        for cfg in TUNE_CANDIDATES:
            thunks[f"tuned:{label(cfg)}@{M}"] = (lambda c=cfg, m=M, nn=N, k=K: build_tuned(m, nn, k, c, sms))
    for name in ("rung3_pipelined", "rung4_annotated"):
        thunks[f"{name}@ragged"] = (lambda n=name: build(n, 1000, 1016, 1000))
    thunks["persistent@ragged"] = lambda: build_tuned(1000, 1016, 1000, pers, sms)
    for cfg in ws_ragged:
        thunks[f"ws:{label(cfg)}@ragged"] = (lambda c=cfg: build_tuned(*WS_RAGGED, c, sms))
    t0 = time.perf_counter()
    built = par_build(thunks)
    wall = time.perf_counter() - t0
    h.note("gemm ladder compile", f"{len(thunks)} kernels compiled in {wall:.1f} s wall (thread pool)",
           compile_wall_s=wall, compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})

    # ragged shapes (not multiples of the tile) for the rungs that claim them (compiled above)
    Mr, Nr, Kr = (1000, 1016, 1000)
    a = h.rand((Mr, Kr), torch.float16)
    b = h.rand((Nr, Kr), torch.float16)
    ref = gemm_ref(a, b)
    for name in ("rung3_pipelined", "rung4_annotated"):
        try:
            c = run(name, a, b, out=h.poisoned((Mr, Nr), torch.float16))
            h.check(f"{name} ragged {Mr}x{Nr}x{Kr}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kr))
        except Exception as exc:
            h.error(f"{name} ragged {Mr}x{Nr}x{Kr}", exc)
    if built["persistent@ragged"]["kernel"] is None:  # the persistent candidates must also serve ragged tiles
        h.error(f"{label(pers)} ragged {Mr}x{Nr}x{Kr}", RuntimeError(built["persistent@ragged"]["error"]))
    else:
        c = h.poisoned((Mr, Nr), torch.float16)
        built["persistent@ragged"]["kernel"](a, b, c)
        h.check(f"{label(pers)} ragged {Mr}x{Nr}x{Kr}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kr))
    Mw, Nw, Kw = WS_RAGGED
    a = h.rand((Mw, Kw), torch.float16)
    b = h.rand((Nw, Kw), torch.float16)
    ref = gemm_ref(a, b)
    for cfg in ws_ragged:
        rec = built[f"ws:{label(cfg)}@ragged"]
        if rec["kernel"] is None:
            h.error(f"{label(cfg)} ragged {Mw}x{Nw}x{Kw}", RuntimeError(rec["error"]))
            continue
        c = h.poisoned((Mw, Nw), torch.float16)
        rec["kernel"](a, b, c)
        h.check(f"{label(cfg)} ragged {Mw}x{Nw}x{Kw}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kw))

    for (M, N, K) in shapes:
        a = h.rand((M, K), torch.float16)
        b = h.rand((N, K), torch.float16)
        ref = gemm_ref(a, b)
        flops, nbytes, src = gemm_cost(M, N, K, "fp16")
        cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
        c_cublas = cublas()
        tol = gemm_tolerance(K)
        h.check(f"cuBLAS {M}^3", c_cublas, ref, rel_fro_err=rel_fro_err(c_cublas, ref), **tol)
        if h.is_cuda:
            try:
                names = library_kernels(cublas)
                h.note(f"cuBLAS kernel {M}^3", ", ".join(names) or "none seen", kernels=names)
            except Exception as exc:  # the profiler is a nicety; the bench goes on without it
                h.error(f"cuBLAS kernel {M}^3", exc)
        for name, (_, cfg) in RUNGS.items():
            key = f"{name}@{M}"
            if key not in built:
                h.skip(f"{name} {M}^3", "the naive rung is timed at 4096^3 only (8x the work at 8192^3)")
                continue
            rec = built[key]
            if rec["kernel"] is None:
                h.error(f"{name} {M}^3", RuntimeError(rec["error"]))
                continue
            kern = rec["kernel"]
            c = h.poisoned((M, N), torch.float16)
            kern(a, b, c)
            err = rel_fro_err(c, ref)
            h.check(f"{name} {M}^3", c, ref, rel_fro_err=err, **tol)
            try:
                info = launch_info(kern)
                launch = dict(threads=info.threads, smem_bytes=info.smem_bytes)
            except RuntimeError:  # loaded from tilelang's disk cache: no device module to read
                launch = {}
            record_bench(
                h, f"{name} {M}^3", lambda k=kern, c=c: k(a, b, c), repeat=3 if name == "rung1_naive" else None,
                flops=flops, bytes=nbytes, ledger_source=src, baselines={"cuBLAS": cublas},
                rung=name, config=cfg, shape=[M, N, K], rel_fro_err=err, compile_s=rec["compile_s"],
                **launch,
            )
        # tuned rung 4: every candidate verified and timed, the fastest benched against cuBLAS
        cands: dict[str, Any] = {}
        errs: dict[str, Any] = {}
        for cfg in TUNE_CANDIDATES:
            rec = built[f"tuned:{label(cfg)}@{M}"]
            if rec["kernel"] is None:
                errs[label(cfg)] = rec["error"]
                continue
            kern = rec["kernel"]
            c = h.poisoned((M, N), torch.float16)
            kern(a, b, c)
            e = rel_fro_err(c, ref)
            if not (e < 1e-2):
                errs[label(cfg)] = f"wrong result: rel_fro_err={e:.3g}"
                continue
            cands[label(cfg)] = (lambda k=kern, c=c: k(a, b, c))
        h.note(f"tuned rung4 {M}^3 search space", f"{len(TUNE_CANDIDATES)} candidates, {len(cands)} valid",
               candidates=[label(c) for c in TUNE_CANDIDATES], rejected=errs,
               compile_s={label(c): round(built[f"tuned:{label(c)}@{M}"]["compile_s"], 2) for c in TUNE_CANDIDATES})
        if not cands:
            h.error(f"tuned rung4 {M}^3", RuntimeError(f"no valid candidate: {errs}"))
            continue
        best, _times = h.search(f"tuned rung4 {M}^3", cands, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in TUNE_CANDIDATES if label(c) == best)
        kern = built[f"tuned:{best}@{M}"]["kernel"]
        c = h.poisoned((M, N), torch.float16)
        kern(a, b, c)
        err = rel_fro_err(c, ref)
        h.check(f"tuned rung4 {M}^3", c, ref, rel_fro_err=err, config=cfg, **tol)
        target = 1.0 if M >= 8192 else 0.95
        record_bench(
            h, f"tuned rung4 {M}^3", lambda: kern(a, b, c), flops=flops, bytes=nbytes, ledger_source=src,
            baselines={"cuBLAS": cublas}, targets={"speedup:cuBLAS": target}, rounds=BENCH_ROUNDS,
            rung="rung4_tuned", config=cfg, shape=[M, N, K], rel_fro_err=err,
        )
        del a, b, ref, c_cublas
        torch.cuda.empty_cache()
