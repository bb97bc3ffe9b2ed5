"""Split-K GEMM: the K loop is cut into ``split_k`` slices, each slice a separate block (and, in
:func:`build_ws`, a work item of the persistent hand-written pipeline).

For skinny problems (few output tiles, long K) one output tile per block leaves
most of the SMs idle; cutting K multiplies the number of blocks by
``split_k``. Each block adds its fp32 partial tile into a zero-initialised fp32
C with atomics, in one of two forms:

* ``form="element"`` -- one ``T.atomic_add`` per accumulator element (scalar
  ``atomicAdd`` on fp32, straight from registers);
* ``form="tile"``    -- the fragment is staged through shared memory and added as
  one tile region (``T.atomic_add(C[...], C_shared)``), which tilelang vectorises.

Same convention as :mod:`kernels.gemm.ladder`: ``C[M, N] += A[M, K] @ B[N, K]^T``.
"""



from typing import Any

import tilelang
import tilelang.language as T

from kernels.common import SMS
from kernels.gemm.common import TARGET, check_inputs as check_operands, require


def splitk_ref(a: Any, b: Any) -> Any:
    """fp32 reference of ``a @ b.T``."""
    import torch

    return torch.matmul(a.to(torch.float32), b.to(torch.float32).t())


@tilelang.jit(target=TARGET)
def splitk_gemm(
    M: int,
    N: int,
    K: int,
    split_k: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
    form: str = "tile",
):
    """Split-K kernel; C (fp32, zeroed by the caller) receives ``split_k`` atomic partial sums."""
    k_slice = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(k_slice // block_K, num_stages=stages):
                T.copy(A[by * block_M, bz * k_slice + ko * block_K], A_s)
                T.copy(B[bx * block_N, bz * k_slice + ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            if form == "element":
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[by * block_M + i, bx * block_N + j], acc[i, j])
            else:
                C_s = T.alloc_shared((block_M, block_N), T.float32)
                T.copy(acc, C_s)
                T.atomic_add(C[by * block_M, bx * block_N], C_s)

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)
#: The tuned rung-4 tile (two consumer warpgroups): 32 output tiles at 1024x1024, so the
#: splits 1/2/4 fill 24 / 48 / 97 % of one wave.  Element form only: staging a 128x256
#: fp32 tile for the tile-wise atomics would need 128 KiB of shared memory on top of the
#: operand stages.
WIDE = dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256)


def check_inputs(a: Any, b: Any, split_k: int, block_M: int = 128, block_N: int = 128, block_K: int = 64, form: str = "tile") -> tuple[int, int, int]:
    """Validate operands and the split; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    require(form in ("tile", "element"), f"form must be 'tile' or 'element', got {form!r}")
    require(isinstance(split_k, int) and split_k >= 1, f"split_k must be a positive int, got {split_k!r}")
    M, N, K = check_operands(a, b, torch.float16, tiles={"M": block_M, "N": block_N}, cuda=False)
    require(K % (split_k * block_K) == 0, f"K={K} must be a multiple of split_k*block_K = {split_k}*{block_K}")
    return check_operands(a, b, torch.float16, block_N=block_N)


def run(a: Any, b: Any, split_k: int, form: str = "tile", out: Any = None, **cfg: Any) -> Any:
    """``a @ b.T`` in fp32 by split-K; zeroes ``out`` (or a new tensor) first."""
    import torch

    cfg = {**DEFAULT, **cfg}
    M, N, K = check_inputs(a, b, split_k, cfg["block_M"], cfg["block_N"], cfg["block_K"], form)
    kern = splitk_gemm(M, N, K, split_k, form=form, **cfg)
    c = torch.zeros((M, N), dtype=torch.float32, device=a.device) if out is None else out.zero_()
    kern(a, b, c)
    return c


# ---------------------------------------------------------------- split-K on the hand-written pipeline
@tilelang.jit(target=TARGET)
def splitk_reduce(splits: int, M: int, N: int, block_M: int = 16, block_N: int = 256, threads: int = 256,
                  pdl: bool = False):
    """``C[m, n] = sum_s P[s * M + m, n]`` in fp32, cast to fp16 once: the second step of
    :func:`kernels.gemm.ws.splitk_ws` (each block reads its ``block_M x block_N`` piece of every
    slice, 16-byte loads, and writes it once).  ``pdl``: launched as a programmatic dependent of the
    split-K kernel (which signals early, ``splitk_ws(pdl=True)``), each block first waits until that
    kernel has completed and its writes are visible (``T.pdl_sync``, ``cudaGridDependencySynchronize``):
    the launch and the block scheduling overlap the split-K kernel instead of following it."""
    require(M % block_M == 0 and N % block_N == 0, f"{M}x{N} must be whole {block_M}x{block_N} pieces")

    @T.prim_func
    def main(P: T.Tensor((splits * M, N), T.float32), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(N // block_N, M // block_M, threads=threads) as (bx, by):
            if pdl:
                T.pdl_sync()
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for s in T.serial(splits):
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += P[s * M + by * block_M + i, bx * block_N + j]
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = T.cast(acc[i, j], T.float16)

    return main


#: Rows of a tile per block of :func:`splitk_reduce` unless a configuration names others.
REDUCE_ROWS = 16


def ws_splitk_config(splits: int, block_N: int = 256, stages: int = 4, cluster: int = 1, epi_cols: int = 64,
                     panel: int = 8, inflight: int = 0, reduce_rows: int = REDUCE_ROWS,
                     cluster_reduce: bool = False, fixup: bool = False, pdl: bool = False) -> dict[str, Any]:
    """One configuration of :func:`build_ws` (K blocks of 64); ``reduce_rows`` -- the reduction's
    rows per block -- is kept only when it is not the default (earlier configurations unchanged);
    ``cluster_reduce`` -- the slices summed inside the kernel, in a thread-block cluster (no
    workspace, no reduction kernel: :func:`kernels.gemm.ws.splitk_ws`) -- only when set; ``fixup``
    -- the last block of each chunk adds the slices from the workspace and writes C (no reduction
    kernel) -- likewise; ``pdl`` -- the reduction launched as a programmatic dependent of the split-K
    kernel (:func:`splitk_reduce`) -- likewise."""
    cfg = dict(splits=splits, block_N=block_N, block_K=64, stages=stages, cluster=cluster, epi_cols=epi_cols,
               panel=panel, inflight=inflight)
    if reduce_rows != REDUCE_ROWS:
        cfg["reduce_rows"] = reduce_rows
    if cluster_reduce:
        require(reduce_rows == REDUCE_ROWS, "cluster_reduce has no reduction kernel: leave reduce_rows alone")
        cfg["cluster_reduce"] = True
    if fixup:
        require(reduce_rows == REDUCE_ROWS and not cluster_reduce,
                "fixup has no reduction kernel and no cluster sum: leave reduce_rows and cluster_reduce alone")
        cfg["fixup"] = True
    if pdl:
        require(not cluster_reduce and not fixup, "pdl overlaps the launch of the reduction kernel: "
                                                  "cluster_reduce and fixup have none")
        cfg["pdl"] = True
    return cfg


def ws_splitk_label(cfg: dict[str, Any]) -> str:
    return (f"ws s={cfg['splits']} 128x{cfg['block_N']} st{cfg['stages']} e{cfg['epi_cols']}"
            + (f" c{cfg['cluster']}" if cfg["cluster"] > 1 else "") + (f" if{cfg['inflight']}" if cfg["inflight"] else "")
            + (f" r{cfg['reduce_rows']}" if cfg.get("reduce_rows", REDUCE_ROWS) != REDUCE_ROWS else "")
            + (" dsmem" if cfg.get("cluster_reduce") else "") + (" last" if cfg.get("fixup") else "")
            + (" pdl" if cfg.get("pdl") else ""))


def build_ws(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = SMS) -> tuple[Any, Any]:
    """(split-K kernel, reduction kernel) of one configuration; ``workers`` persistent blocks.  With
    ``cluster_reduce`` the reduction kernel is None (the slices are summed in the cluster) and the
    workers are a multiple of the split (whole clusters); with ``fixup`` it is None too (the last
    block of every chunk sums it)."""
    from kernels.gemm.ws import splitk_ws, splitk_ws_fixup

    kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "cluster", "epi_cols", "panel", "inflight")}
    if cfg.get("cluster_reduce"):
        return splitk_ws(M, N, K, cfg["splits"], workers=workers - workers % cfg["splits"], cluster_reduce=True,
                         **kw), None
    if cfg.get("fixup"):
        return splitk_ws_fixup(M, N, K, cfg["splits"], workers=workers - workers % cfg["cluster"], **kw), None
    rows = cfg.get("reduce_rows", REDUCE_ROWS)
    pdl = dict(pdl=True) if cfg.get("pdl") else {}  # earlier configurations keep their exact builds
    red = dict(block_M=rows) if rows != REDUCE_ROWS else {}
    return (splitk_ws(M, N, K, cfg["splits"], workers=workers - workers % cfg["cluster"], **kw, **pdl),
            splitk_reduce(cfg["splits"], M, N, **red, **pdl))


def check_ws_inputs(a: Any, b: Any, cfg: dict[str, Any]) -> tuple[int, int, int]:
    """Operands of the hand-written split-K: fp16 ``[M, K]`` and ``[N, K]``; M a multiple of the
    reduction's rows (16 unless the configuration names others), N of 256 (its columns), K of
    ``splits * 64``; one CUDA device.  With ``cluster_reduce``: M a multiple of 128 and N of
    ``block_N`` (whole tiles: C is stored without clipping); with ``fixup`` M a multiple of
    ``128 * cluster`` and N of ``block_N`` (the partials and C are stored from registers)."""
    import torch

    if cfg.get("fixup"):
        tiles = {"M": 128 * cfg["cluster"], "N": cfg["block_N"]}
    elif cfg.get("cluster_reduce"):
        tiles = {"M": 128, "N": cfg["block_N"]}
    else:
        tiles = {"M": cfg.get("reduce_rows", REDUCE_ROWS), "N": 256}
    M, N, K = check_operands(a, b, torch.float16, tiles=tiles, cuda=False)
    require(K % (cfg["splits"] * cfg["block_K"]) == 0,
            f"K={K} must be a multiple of splits*block_K = {cfg['splits']}*{cfg['block_K']}")
    return check_operands(a, b, torch.float16, block_N=cfg["block_N"])


def make_ws_runner(a: Any, b: Any, cfg: dict[str, Any], workers: int = SMS):
    """``fn(c)``: the split-K kernel into an fp32 workspace, then the reduction into ``c`` (fp16).

    With ``fixup`` one kernel does both; the runner owns its workspace (filled with NaN, so a chunk
    summed before every slice has landed shows in the result) and its counters (allocated zeroed
    here, once; every complete launch leaves them zero), exposed as ``fn.counters`` for
    :func:`check_counters`."""
    import torch

    M, N, K = check_ws_inputs(a, b, cfg)
    gemm, reduce = build_ws(M, N, K, cfg, workers)
    if cfg.get("fixup"):
        from kernels.gemm.ws import fixup_counters

        ws = torch.full((cfg["splits"] * M, N), float("nan"), dtype=torch.float32, device=a.device)
        counters = torch.zeros(fixup_counters(M, N, cfg["block_N"], cfg["epi_cols"]), dtype=torch.int32,
                               device=a.device)

        def last(c: Any) -> Any:
            gemm(a, b, ws, c, counters)
            return c

        last.counters = counters
        return last
    if reduce is None:  # cluster_reduce: one kernel writes C
        def fused(c: Any) -> Any:
            gemm(a, b, c)
            return c

        return fused
    ws = torch.empty((cfg["splits"] * M, N), dtype=torch.float32, device=a.device)

    def fn(c: Any) -> Any:
        gemm(a, b, ws)
        reduce(ws, c)
        return c

    return fn


def check_counters(fn: Any) -> int:
    """Counters a ``fixup`` runner's launches left non-zero (0 for every other runner): a launch
    that did not complete leaves some, and the next launch would sum those chunks too early, from
    an earlier launch's partials -- a correctness check of the runner must fail on them."""
    counters = getattr(fn, "counters", None)
    return 0 if counters is None else int((counters != 0).sum().item())
