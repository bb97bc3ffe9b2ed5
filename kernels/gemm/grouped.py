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


# ------------------------------------------------------------------ GPU suite

#: MoE-like routing of 6144 tokens (top-k dispatch) over 8 experts: very uneven, one tiny expert.
MOE_SIZES = (1536, 64, 960, 2048, 300, 1100, 17, 119)


def gpu_suite(h: Any) -> None:
    """Grouped GEMM (both forms) on uneven expert sizes vs a loop of ``torch.matmul`` per expert."""
    import torch

    from kernels.gemm.common import gemm_cost, gemm_tolerance, par_build, rel_fro_err, record_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = (100, 7, 260, 33) if h.quick else MOE_SIZES
    N, K = (256, 512) if h.quick else (4096, 2048)
    G = len(sizes)
    bm = DEFAULT["block_M"]
    max_M = math.ceil(max(sizes) / bm) * bm
    _, _, _, ntiles = tables(sizes, bm)
    total = sum(sizes)
    built = par_build({
        "concat": lambda: grouped_concat(total, N, K, G, ntiles, **DEFAULT),
        "ptr": lambda: grouped_ptr(max_M, N, K, G, ntiles, block_M=bm, block_N=DEFAULT["block_N"],
                                   block_K=DEFAULT["block_K"], threads=DEFAULT["threads"]),
    })
    a_cat = h.rand((total, K), torch.float16)
    b = h.rand((G, N, K), torch.float16)
    starts = [0]
    for s in sizes[:-1]:
        starts.append(starts[-1] + s)
    a_list = [a_cat[s0:s0 + s] for s0, s in zip(starts, sizes)]
    refs = grouped_ref(a_list, b)
    ref_cat = torch.cat(refs, dim=0)
    flops = sum(gemm_cost(m, N, K, "fp16")[0] for m in sizes if m > 0)
    nbytes = sum(gemm_cost(m, N, K, "fp16")[1] for m in sizes if m > 0)
    src = "sum over experts of ledger.gemm.gemm_cost"

    def torch_loop():
        return [torch.matmul(x, b[g].t()) for g, x in enumerate(a_list)]

    meta = dict(sizes=list(sizes), N=N, K=K, tiles=ntiles)
    if built["concat"]["kernel"] is None:
        h.error("grouped concat", RuntimeError(built["concat"]["error"]))
    else:
        fn = make_concat_runner(a_cat, b, sizes, **DEFAULT)
        c = h.poisoned((total, N), torch.float16)
        fn(c)
        err = rel_fro_err(c, ref_cat)
        h.check(f"grouped concat G={G}", c, ref_cat, rel_fro_err=err, **gemm_tolerance(K), **meta)
        record_bench(h, f"grouped concat G={G} N={N} K={K}", lambda: fn(c), flops=flops, bytes=nbytes, ledger_source=src,
                     baselines={"torch.matmul loop": torch_loop}, rel_fro_err=err, **meta)
    if built["ptr"]["kernel"] is None:
        h.error("grouped ptr", RuntimeError(built["ptr"]["error"]))
        return
    a_pad = [torch.zeros((max_M, K), dtype=torch.float16, device=a_cat.device) for _ in sizes]
    for g, x in enumerate(a_list):
        a_pad[g][: x.shape[0]].copy_(x)
    b_list = [b[g].contiguous() for g in range(G)]
    c_list = [h.poisoned((max_M, N), torch.float16) for _ in sizes]
    fn = make_ptr_runner(a_pad, b_list, c_list, sizes, **DEFAULT)
    fn()
    got = torch.cat([c_list[g][:s] for g, s in enumerate(sizes)], dim=0)
    err = rel_fro_err(got, ref_cat)
    try:
        h.check(f"grouped ptr G={G}", got, ref_cat, rel_fro_err=err, **gemm_tolerance(K), **meta)
    except Exception as exc:  # e.g. an all-poison output
        h.error(f"grouped ptr G={G} check (rel_fro_err={err:.3g})", exc)
    record_bench(h, f"grouped ptr G={G} N={N} K={K}", fn, flops=flops, bytes=nbytes, ledger_source=src,
                 baselines={"torch.matmul loop": torch_loop}, rel_fro_err=err, **meta)
