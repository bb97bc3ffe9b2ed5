"""Batched GEMM: many same-shape GEMMs in one launch (attention-style ``Q @ K^T``, ``P @ V``).

``C[b] = A[b] @ B[b]^T`` with A ``[batch, M, K]``, B ``[batch, N, K]``, C ``[batch, M, N]``;
the batch is the third grid dimension. Baseline: ``torch.bmm(a, b.transpose(1, 2))``.
"""

from typing import Any

import tilelang
import tilelang.language as T

from kernels.gemm.common import TARGET, check_cuda, check_matrix, check_wgmma_n, require


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

    require(hasattr(a, "shape") and len(a.shape) == 3, "a must be [batch, M, K]")
    require(hasattr(b, "shape") and len(b.shape) == 3, "b must be [batch, N, K]")
    bt, M, K = a.shape
    bt2, N, K2 = b.shape
    require(bt == bt2, f"batch sizes differ ({bt} != {bt2})")
    require(K == K2, f"K must agree ({K} != {K2})")
    check_matrix(a, "a", (bt, M, K), torch.float16)
    check_matrix(b, "b", (bt, N, K), torch.float16)
    require(K % 8 == 0 and N % 8 == 0, f"K={K} and N={N} must be multiples of 8 (16-byte rows for TMA)")
    check_wgmma_n(block_N)
    check_cuda(a=a, b=b)
    return bt, M, N, K


def run(a: Any, b: Any, **cfg: Any) -> Any:
    cfg = {**DEFAULT, **cfg}
    bt, M, N, K = check_inputs(a, b, cfg["block_N"])
    return batched_gemm(bt, M, N, K, **cfg)(a, b)


# ------------------------------------------------------------------ GPU suite

#: Attention-like batches (batch x heads = 64, sequence 2048, head dim 128).
SHAPES = {
    "scores Q@K^T": (64, 2048, 2048, 128),
    "context P@V": (64, 2048, 128, 2048),
}


def gpu_suite(h: Any) -> None:
    """Batched GEMM on attention-like shapes vs ``torch.bmm``."""
    import torch

    from kernels.gemm.common import gemm_tolerance, par_build, rel_fro_err, record_bench
    from ledger.gemm import gemm_cost

    torch.backends.cuda.matmul.allow_tf32 = False
    shapes = {"small": (4, 256, 256, 128)} if h.quick else SHAPES
    built = par_build({k: (lambda s=s: batched_gemm(*s, **DEFAULT)) for k, s in shapes.items()})
    # ragged M and N (TMA clips the edge tiles)
    bt, M, N, K = 3, 1000, 200, 136
    try:
        a = h.rand((bt, M, K), torch.float16)
        b = h.rand((bt, N, K), torch.float16)
        c = h.poisoned((bt, M, N), torch.float16)
        check_inputs(a, b)
        batched_gemm(bt, M, N, K, **DEFAULT)(a, b, c)
        ref = batched_ref(a, b)
        h.check(f"batched ragged {bt}x{M}x{N}x{K}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(K))
    except Exception as exc:
        h.error(f"batched ragged {bt}x{M}x{N}x{K}", exc)
    for label, (bt, M, N, K) in shapes.items():
        rec = built[label]
        if rec["kernel"] is None:
            h.error(f"batched {label}", RuntimeError(rec["error"]))
            continue
        kern = rec["kernel"]
        a = h.rand((bt, M, K), torch.float16)
        b = h.rand((bt, N, K), torch.float16)
        ref = batched_ref(a, b)
        c = h.poisoned((bt, M, N), torch.float16)
        kern(a, b, c)
        err = rel_fro_err(c, ref)
        name = f"batched {label} {bt}x{M}x{N}x{K}"
        h.check(name, c, ref, rel_fro_err=err, **gemm_tolerance(K))
        cost = gemm_cost(M, N, K, "fp16").scaled(bt)
        record_bench(h, name, lambda k=kern, a=a, b=b, c=c: k(a, b, c), flops=float(cost.flops), bytes=float(cost.bytes),
                     ledger_source="ledger.gemm.gemm_cost(...).scaled(batch)",
                     baselines={"torch.bmm": lambda a=a, b=b: torch.bmm(a, b.transpose(1, 2))},
                     shape=[bt, M, N, K], rel_fro_err=err, compile_s=rec["compile_s"])
        del a, b, ref, c
