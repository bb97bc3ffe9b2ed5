"""Batched GEMM: many same-shape GEMMs in one launch (attention-style ``Q @ K^T``, ``P @ V``).

``C[b] = A[b] @ B[b]^T`` with A ``[batch, M, K]``, B ``[batch, N, K]``, C ``[batch, M, N]``;
the batch is the third grid dimension. Baseline: ``torch.bmm(a, b.transpose(1, 2))``.
"""

from typing import Any

import tilelang
import tilelang.language as T

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
