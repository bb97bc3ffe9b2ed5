"""Grouped GEMM for mixture-of-experts: G GEMMs of different M sharing N and K.

``C_g[M_g, N] = A_g[M_g, K] @ B_g[N, K]^T`` for experts g = 0..G-1 in one launch.
Two forms:

* :func:`grouped_concat` -- the token rows of all experts are concatenated into one
  ``A[sum M_g, K]`` (the layout a MoE dispatcher produces); three int32 tables
  (row offset, row count, first tile of each expert) let every block find its
  expert with a short scan; the last tile of an expert is masked on store.
* :func:`grouped_ptr`    -- every expert keeps its own tensors; the kernel gets
  tables of raw device pointers and builds views with ``T.make_tensor``. Storage
  is padded to a common ``max_M`` and the K loop is not pipelined: 0.1.x does not
  pipeline pointer-backed tensors correctly (upstream's own caveat).

Only the grid size (total number of M tiles) is baked into a compiled kernel;
offsets and sizes are runtime tables.
"""

import math
from typing import Any, Sequence

import tilelang
import tilelang.language as T

from kernels.common import SMS
from kernels.gemm.common import TARGET, check_cuda, check_matrix, check_wgmma_n, require


def grouped_ref(a_list: Sequence[Any], b: Any) -> list[Any]:
    """fp32 references ``a_g @ b[g].T``."""
    import torch

    return [torch.matmul(a.to(torch.float32), b[g].to(torch.float32).t()) for g, a in enumerate(a_list)]


def tables(sizes: Sequence[int], block_M: int) -> tuple[list[int], list[int], list[int], int]:
    """(row offsets, sizes, first-tile offsets, total tiles) of a routing."""
    rows, tiles, r, t = [], [], 0, 0
    for s in sizes:
        rows.append(r)
        tiles.append(t)
        r += s
        t += math.ceil(s / block_M)
    return rows, list(sizes), tiles, t


@tilelang.jit(target=TARGET)
def grouped_concat(
    total_M: int,
    N: int,
    K: int,
    G: int,
    total_tiles: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
):
    """Concatenated-rows grouped GEMM; ``B`` is ``[G, N, K]`` (one weight per expert)."""

    @T.prim_func
    def main(
        A: T.Tensor((total_M, K), T.float16),
        B: T.Tensor((G, N, K), T.float16),
        row_off: T.Tensor((G,), T.int32),
        rows: T.Tensor((G,), T.int32),
        tile_off: T.Tensor((G,), T.int32),
        C: T.Tensor((total_M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), total_tiles, threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            g = T.alloc_var(T.int32)
            g = 0
            for i in T.serial(G):
                if by >= tile_off[i]:
                    g = i
            local_row = (by - tile_off[g]) * block_M
            m0 = row_off[g] + local_row
            left = rows[g] - local_row
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[m0, ko * block_K], A_s)
                T.copy(B[g, bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                if i < left:
                    C[m0 + i, bx * block_N + j] = T.cast(acc[i, j], T.float16)

    return main


@tilelang.jit(target=TARGET, pass_configs={"tl.disable_warp_specialized": True})
def grouped_ptr(
    max_M: int,
    N: int,
    K: int,
    G: int,
    total_tiles: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    threads: int = 128,
):
    """Pointer-table grouped GEMM: expert g's A, B, C at ``A_ptrs[g]``, ``B_ptrs[g]``, ``C_ptrs[g]``."""

    @T.prim_func
    def main(
        A_ptrs: T.Tensor((G,), T.ptr),
        B_ptrs: T.Tensor((G,), T.ptr),
        C_ptrs: T.Tensor((G,), T.ptr),
        tile_off: T.Tensor((G,), T.int32),
    ):
        with T.Kernel(T.ceildiv(N, block_N), total_tiles, threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            g = T.alloc_var(T.int32)
            g = 0
            for i in T.serial(G):
                if by >= tile_off[i]:
                    g = i
            m0 = (by - tile_off[g]) * block_M
            A = T.make_tensor(A_ptrs[g], (max_M, K), T.float16)
            B = T.make_tensor(B_ptrs[g], (N, K), T.float16)
            C = T.make_tensor(C_ptrs[g], (max_M, N), T.float16)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                T.copy(A[m0, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[m0, bx * block_N])

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)


def check_inputs(a_cat: Any, b: Any, sizes: Sequence[int], block_N: int = 128) -> tuple[int, int, int, int]:
    """Validate the concatenated form; returns (total_M, N, K, G). Raises ValueError naming the constraint."""
    import torch

    require(len(sizes) >= 1, "at least one group")
    require(all(int(s) >= 0 for s in sizes), "group sizes must be >= 0")
    require(hasattr(b, "shape") and len(b.shape) == 3, "b must be [G, N, K]")
    G, N, K = b.shape
    require(len(sizes) == G, f"{len(sizes)} group sizes for {G} weight matrices")
    total = int(sum(sizes))
    require(total >= 1, "the groups hold no rows")
    check_matrix(a_cat, "a_cat", (total, K), torch.float16)
    check_matrix(b, "b", (G, N, K), torch.float16)
    require(K % 8 == 0, f"K={K} must be a multiple of 8 (16-byte rows for TMA)")
    require(N % block_N == 0, f"N={N} must be a multiple of block_N={block_N}")
    check_wgmma_n(block_N)
    check_cuda(a_cat=a_cat, b=b)
    return total, N, K, G


def make_concat_runner(a_cat: Any, b: Any, sizes: Sequence[int], **cfg: Any):
    """Compile for this routing; returns ``fn() -> C[sum M_g, N]``."""
    import torch

    cfg = {**DEFAULT, **cfg}
    total, N, K, G = check_inputs(a_cat, b, sizes, cfg["block_N"])
    roff, rows, toff, ntiles = tables(sizes, cfg["block_M"])
    kern = grouped_concat(total, N, K, G, ntiles, **cfg)
    dev = a_cat.device
    t_roff = torch.tensor(roff, dtype=torch.int32, device=dev)
    t_rows = torch.tensor(rows, dtype=torch.int32, device=dev)
    t_toff = torch.tensor(toff, dtype=torch.int32, device=dev)
    c = torch.empty((total, N), dtype=torch.float16, device=dev)

    def fn(out: Any = None) -> Any:
        dst = c if out is None else out
        kern(a_cat, b, t_roff, t_rows, t_toff, dst)
        return dst

    return fn


def make_ptr_runner(a_list: Sequence[Any], b_list: Sequence[Any], c_list: Sequence[Any], sizes: Sequence[int], **cfg: Any):
    """Pointer-table form; every a_g is ``[max_M, K]`` (rows past M_g ignored), c_g ``[max_M, N]``."""
    import torch

    cfg = {k: v for k, v in {**DEFAULT, **cfg}.items() if k != "stages"}
    G = len(a_list)
    require(G == len(b_list) == len(c_list) == len(sizes), "a_list, b_list, c_list and sizes must have one entry per group")
    max_M, K = a_list[0].shape
    N = b_list[0].shape[0]
    for g in range(G):
        check_matrix(a_list[g], f"a_list[{g}]", (max_M, K), torch.float16)
        check_matrix(b_list[g], f"b_list[{g}]", (N, K), torch.float16)
        check_matrix(c_list[g], f"c_list[{g}]", (max_M, N), torch.float16)
        require(0 <= sizes[g] <= max_M, f"sizes[{g}]={sizes[g]} must be within [0, max_M={max_M}]")
    require(max_M % cfg["block_M"] == 0, f"max_M={max_M} must be a multiple of block_M={cfg['block_M']} (padded storage)")
    require(N % cfg["block_N"] == 0, f"N={N} must be a multiple of block_N={cfg['block_N']}")
    require(K % cfg["block_K"] == 0, f"K={K} must be a multiple of block_K={cfg['block_K']}")
    check_cuda(**{f"a_list[{g}]": t for g, t in enumerate(a_list)}, **{f"b_list[{g}]": t for g, t in enumerate(b_list)})
    _, _, toff, ntiles = tables(sizes, cfg["block_M"])
    kern = grouped_ptr(max_M, N, K, G, ntiles, **cfg)
    dev = a_list[0].device
    ptr = lambda ts: torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=dev)  # noqa: E731
    pa, pb, pc = ptr(a_list), ptr(b_list), ptr(c_list)
    t_toff = torch.tensor(toff, dtype=torch.int32, device=dev)

    def fn() -> Any:
        kern(pa, pb, pc, t_toff)
        return c_list

    return fn


# ---------------------------------------------------------------- padded form on the hand-written pipeline
def padded_tables(sizes: Sequence[int], tile: int = 128) -> tuple[list[int], int, list[int]]:
    """(first row of every group, total rows, group of every ``tile``-row tile) when each group's
    rows start on a tile boundary (its last tile padded): the layout :func:`build_ws` reads."""
    starts, groups_of_tiles, r = [], [], 0
    for g, s in enumerate(sizes):
        require(int(s) >= 0, f"sizes[{g}]={s} must be >= 0")
        starts.append(r)
        n = -(-int(s) // tile)
        groups_of_tiles += [g] * n
        r += n * tile
    require(r > 0, "the groups hold no rows")
    return starts, r, groups_of_tiles


def ws_config(block_N: int = 256, stages: int = 4, cluster: int = 1, epi_cols: int = 128, panel: int = 8,
              inflight: int = 0) -> dict[str, Any]:
    """One configuration of :func:`build_ws` (128-row tiles, K blocks of 64, persistent)."""
    return dict(block_N=block_N, block_K=64, stages=stages, cluster=cluster, epi_cols=epi_cols, panel=panel,
                inflight=inflight)


def ws_label(cfg: dict[str, Any]) -> str:
    return (f"ws 128x{cfg['block_N']} st{cfg['stages']} e{cfg['epi_cols']} p{cfg['panel']}"
            + (f" c{cfg['cluster']}" if cfg["cluster"] > 1 else ""))


def build_ws(sizes: Sequence[int], N: int, K: int, cfg: dict[str, Any], workers: int = SMS) -> Any:
    """Compile the grouped form of :func:`kernels.gemm.ws.grouped_ws` for this routing: only the
    padded row count (whole tiles, ``128 * cluster`` per group) is baked in."""
    from kernels.gemm.ws import grouped_ws

    _, rows, _ = padded_tables(sizes, 128 * cfg["cluster"])
    kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "cluster", "epi_cols", "panel", "inflight")}
    return grouped_ws(rows, N, K, len(sizes), workers=workers - workers % cfg["cluster"], **kw)


def pad_rows(a_cat: Any, sizes: Sequence[int], tile: int = 128) -> Any:
    """The concatenated rows in the padded layout (zeros in the padding): what a dispatcher that
    aligns every expert to a tile writes."""
    import torch

    starts, rows, _ = padded_tables(sizes, tile)
    out = torch.zeros((rows, a_cat.shape[1]), dtype=a_cat.dtype, device=a_cat.device)
    r = 0
    for s0, s in zip(starts, sizes):
        out[s0:s0 + s].copy_(a_cat[r:r + s])
        r += s
    return out


def check_ws_inputs(a_pad: Any, b: Any, sizes: Sequence[int], cluster: int = 1) -> tuple[int, int, int, int]:
    """The padded form: ``a_pad [rows, K]`` with each group starting on a ``128 * cluster`` boundary,
    ``b [G, N, K]`` fp16; K and N multiples of 8 (16-byte TMA rows); one CUDA device.  Returns
    (rows, N, K, G)."""
    import torch

    require(hasattr(b, "shape") and len(b.shape) == 3, "b must be [G, N, K]")
    G, N, K = b.shape
    require(len(sizes) == G, f"{len(sizes)} group sizes for {G} weight matrices")
    _, rows, _ = padded_tables(sizes, 128 * cluster)
    check_matrix(a_pad, "a_pad", (rows, K), torch.float16)
    check_matrix(b, "b", (G, N, K), torch.float16)
    require(K % 8 == 0 and N % 8 == 0, f"K={K} and N={N} must be multiples of 8 (16-byte TMA rows)")
    check_cuda(a_pad=a_pad, b=b)
    return rows, N, K, G


def make_ws_runner(a_pad: Any, b: Any, sizes: Sequence[int], cfg: dict[str, Any], workers: int = SMS):
    """``fn(c_pad)``: the grouped kernel on the padded rows (``c_pad [rows, N]``, group ``g``'s
    output at the rows :func:`padded_tables` gives)."""
    import torch

    rows, N, K, G = check_ws_inputs(a_pad, b, sizes, cfg["cluster"])
    kern = build_ws(sizes, N, K, cfg, workers)
    _, _, tg = padded_tables(sizes, 128 * cfg["cluster"])
    e = torch.tensor([g for g in tg for _ in range(cfg["cluster"])], dtype=torch.int32, device=a_pad.device)

    def fn(c_pad: Any) -> Any:
        kern(a_pad, b.view(G * N, K), e, c_pad)
        return c_pad

    return fn
