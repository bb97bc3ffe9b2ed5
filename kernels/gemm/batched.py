"""Batched GEMM: many same-shape GEMMs in one launch (attention-style ``Q @ K^T``, ``P @ V``).

``C[b] = A[b] @ B[b]^T`` with A ``[batch, M, K]``, B ``[batch, N, K]``, C ``[batch, M, N]``.
Baseline: ``torch.bmm(a, b.transpose(1, 2))``.  Two forms:

* :func:`batched_gemm` -- the batch is the third grid dimension, one block per tile: every
  block waits for its own loads, computes, then writes its tile;
* :func:`build_ws` -- the batch folded into M on the persistent hand-written pipeline
  (:func:`kernels.gemm.ws.rung4_ws` with ``batch``): A and C viewed as ``[batch * M, ...]``
  without a copy, B as ``[batch * N, K]``, each 128-row tile taking its B rows from its own
  batch.  For ``Q @ K^T`` (K = 128: two 64-deep K steps per tile) the one-block-per-tile form
  mostly waits; here 132 blocks walk the tiles and the producer loads the next tile while
  the consumers store the last one (TMA stores; a consumer waits only until its staging tile
  has been read).
"""

from typing import Any

import tilelang
import tilelang.language as T

from kernels.common import SMS
from kernels.gemm.common import TARGET, check_inputs as check_operands


def batched_ref(a: Any, b: Any) -> Any:
    """fp32 reference ``a @ b^T`` per batch."""
    import torch

    return torch.bmm(a.to(torch.float32), b.to(torch.float32).transpose(1, 2))


@tilelang.jit(target=TARGET)
def batched_gemm(
    batch: int,
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
):
    """One block per (N tile, M tile, batch); pipelined TMA + wgmma inside."""

    @T.prim_func
    def main(
        A: T.Tensor((batch, M, K), T.float16),
        B: T.Tensor((batch, N, K), T.float16),
        C: T.Tensor((batch, M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[bz, by * block_M, ko * block_K], A_s)
                T.copy(B[bz, bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C_s)
            T.copy(C_s, C[bz, by * block_M, bx * block_N])

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)


def check_inputs(a: Any, b: Any, block_N: int = 128) -> tuple[int, int, int, int]:
    """Validate operands; returns (batch, M, N, K). Raises ValueError naming the constraint."""
    import torch

    return check_operands(a, b, torch.float16, batched=True, tma_rows=True, block_N=block_N)


def run(a: Any, b: Any, **cfg: Any) -> Any:
    cfg = {**DEFAULT, **cfg}
    bt, M, N, K = check_inputs(a, b, cfg["block_N"])
    return batched_gemm(bt, M, N, K, **cfg)(a, b)


# ---------------------------------------------------------------- the batch folded into M (ws.py)
def ws_config(block_N: int, block_K: int, stages: int, epi_cols: int = 0, inflight: int = 0, persistent: bool = True,
              cluster: int = 1, panel: int = 8, store_bufs: int = 1, evict_first: bool = False) -> dict[str, Any]:
    """One configuration of :func:`build_ws`; ``store_bufs`` / ``evict_first`` (the epilogue's
    staging buffers and L2 hint, :func:`kernels.gemm.ws.rung4_ws`) are kept only when not the
    default (earlier configurations unchanged)."""
    cfg = dict(block_N=block_N, block_K=block_K, stages=stages, epi_cols=epi_cols, inflight=inflight,
               persistent=persistent, cluster=cluster, panel=panel)
    if store_bufs != 1:
        cfg["store_bufs"] = store_bufs
    if evict_first:
        cfg["evict_first"] = True
    return cfg


def ws_label(cfg: dict[str, Any]) -> str:
    """Short printable name of a :func:`build_ws` configuration."""
    return (f"n{cfg['block_N']}_k{cfg['block_K']}_s{cfg['stages']}" + (f"_e{cfg['epi_cols']}" if cfg["epi_cols"] else "")
            + f"_if{cfg['inflight']}" + ("_pers" if cfg["persistent"] else "")
            + (f"_c{cfg['cluster']}" if cfg["cluster"] > 1 else "") + (f"_p{cfg['panel']}" if cfg["panel"] != 8 else "")
            + (f"_b{cfg['store_bufs']}" if cfg.get("store_bufs", 1) != 1 else "") + ("_ef" if cfg.get("evict_first") else ""))


def build_ws(batch: int, M: int, N: int, K: int, cfg: dict[str, Any], workers: int = SMS) -> Any:
    """Compile the folded form for ``batch`` products of ``M x N x K`` (persistent on ``workers``
    blocks when ``cfg["persistent"]``)."""
    from kernels.gemm.ws import rung4_ws

    kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "epi_cols", "inflight", "cluster", "panel")}
    kw.update({k: cfg[k] for k in ("store_bufs", "evict_first") if k in cfg})
    return rung4_ws(batch * M, N, K, workers=workers if cfg["persistent"] else 0, batch=batch, **kw)


def check_ws_inputs(a: Any, b: Any) -> tuple[int, int, int, int]:
    """Operands of the folded form: ``a [batch, M, K]``, ``b [batch, N, K]`` fp16, contiguous, one
    CUDA device; M a multiple of the 128-row tile (a tile never crosses a batch); K and N
    multiples of 8 (16-byte TMA rows).  Returns (batch, M, N, K)."""
    import torch

    return check_operands(a, b, torch.float16, batched=True, tiles={"M": 128}, tma_rows=True)


def run_ws(kernel: Any, a: Any, b: Any, c: Any) -> Any:
    """Launch a :func:`build_ws` kernel on the flattened views (no copies)."""
    batch, M, K = a.shape
    N = b.shape[1]
    kernel(a.view(batch * M, K), b.view(batch * N, K), c.view(batch * M, N))
    return c
