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

The tuned rung 4 is rung 4 (automatic or hand-written pipeline, :mod:`kernels.gemm.ws`) at
one configuration of a search: :func:`build_tuned` compiles one, :func:`label` names it,
:func:`smem_budget` is its shared memory by the ledger.  The search list and the timing are
the suite's (:mod:`measure.suites.gemm.ladder`).
"""

from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.common import SMS
from kernels.gemm.common import TARGET, check_inputs as check_operands, check_wgmma_n, require

# ----------------------------------------------------------------- reference


def gemm_ref(a: Any, b: Any) -> Any:
    """fp32 reference: ``a @ b.T`` with both operands upcast to fp32."""
    import torch

    return torch.matmul(a.to(torch.float32), b.to(torch.float32).t())


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
    epilogue: str = "shared",
):
    """Rung 4: rung 3 plus swizzled shared layouts, block rasterization and a staged epilogue.

    ``threads`` counts the consumer threads; on sm_90a tilelang adds one producer
    warpgroup (TMA) on top. ``panel=0`` turns rasterization off; ``annotate=False``
    leaves the shared layouts to tilelang's inference (on sm_90a it infers the same
    swizzle as the annotation -- as wide as one row of the tile: 128 bytes for 64 fp16
    elements, 64 or 32 bytes for narrower rows, all taken by TMA and wgmma -- so the
    annotation changes nothing there; it matters on the cp.async + ldmatrix path of rung 5).
    ``policy`` is the warp partition of ``T.gemm``: ``"square"`` (tilelang's default) splits a
    128x256 tile between the two consumer warpgroups along N (each issues m64n128 wgmma on
    both 64-row halves); ``"row"`` gives each warpgroup whole rows (one m64n256 wgmma per
    k16 step), which reads about 17% fewer operand bytes from shared memory per step.
    ``epilogue="direct"`` stores the accumulator straight to C instead of staging it in
    shared memory (the form carver's hints are timed in, :mod:`measure.carver`).
    """
    warp_policy = WARP_POLICY[policy]

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            if epilogue == "shared":
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
            if epilogue == "shared":
                T.copy(acc, C_s)
                T.copy(C_s, C[by * block_M, bx * block_N])
            else:
                T.copy(acc, C[by * block_M, bx * block_N])

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
    workers: int = SMS,
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

#: Default configuration of every rung: (factory, kwargs).
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
    bm, bn, bk = tile_of(name, cfg)
    if name in ("rung1_naive", "rung2_shared", "rung5_mma"):
        return check_operands(a, b, torch.float16, tiles={"M": bm, "N": bn, "K": bk})
    return check_operands(a, b, torch.float16, tma_rows=True, block_N=bn)


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
# --------------------------------------------------------------- tuned rung 4


def build_tuned(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = SMS, dtype: str = "float16") -> Any:
    """Compile one tuned rung-4 candidate: the hand-written :func:`kernels.gemm.ws.rung4_ws`
    when ``cfg["ws"]`` (on ``workers`` blocks when also persistent), :func:`rung4_persistent`
    on ``workers`` blocks when ``cfg["persistent"]``, else :func:`rung4_annotated`.
    ``dtype="bfloat16"`` (bf16 in and out) exists for the hand-written pipeline only."""
    kw = {k: v for k, v in cfg.items() if k != "persistent"}
    check_wgmma_n(kw["block_N"])
    require(dtype == "float16" or cfg.get("ws"), f"dtype={dtype!r} needs the hand-written pipeline (ws=True)")
    if cfg.get("ws"):
        from kernels.gemm.ws import WS_BLOCK_M, WS_THREADS, rung4_ws

        require(cfg["block_M"] == WS_BLOCK_M and cfg["threads"] + 128 == WS_THREADS,
                f"the hand-written pipeline is {WS_BLOCK_M} rows on {WS_THREADS - 128} consumer threads")
        wk = {k: cfg[k] for k in ("block_N", "block_K", "stages", "panel", "cluster", "inflight", "epi_cols") if k in cfg}
        if dtype != "float16":  # the fp16 call stays byte-for-byte the recorded one
            wk["dtype"] = dtype
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


