"""What the GEMM family shares: the compile targets and the one input check of every variant.

Convention everywhere: ``C[M, N] = A[M, K] @ B[N, K]^T`` (B stored like an ``nn.Linear``
weight), fp32 accumulation.  :func:`check_inputs` validates the operands of any variant
before a launch and raises ``ValueError`` naming the constraint; the variants add only
what is theirs (a split, a group size, the scales).
"""

from __future__ import annotations

from typing import Any

from kernels.common import TARGET

__all__ = ["TARGET", "TARGET_SM90", "require", "check_matrix", "check_cuda", "check_tiles", "check_wgmma_n",
           "check_inputs"]

#: Plain sm_90 (no wgmma / setmaxnreg); used to show what the "a" suffix buys.
TARGET_SM90: dict[str, str] = {"kind": "cuda", "arch": "sm_90"}


def require(cond: bool, message: str) -> None:
    """Raise ``ValueError(message)`` when ``cond`` is false (checks before launch)."""
    if not cond:
        raise ValueError(message)


def check_matrix(x: Any, name: str, shape: tuple[int, ...], dtype: Any) -> None:
    """Check one operand: a contiguous tensor of exact shape and dtype (device: :func:`check_cuda`)."""
    import torch

    require(isinstance(x, torch.Tensor), f"{name} must be a torch.Tensor")
    require(tuple(x.shape) == tuple(shape), f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    require(x.dtype == dtype, f"{name} must be {dtype}, got {x.dtype}")
    require(x.is_contiguous(), f"{name} must be contiguous (row-major)")


def check_cuda(**tensors: Any) -> None:
    """Every tensor on one CUDA device (checked last, so shape errors are reported first)."""
    devs = set()
    for name, t in tensors.items():
        require(t.is_cuda, f"{name} must live on a CUDA device")
        devs.add(t.device)
    require(len(devs) <= 1, f"all operands must be on one device, got {sorted(map(str, devs))}")


def check_tiles(**dims_and_tiles: tuple[int, int]) -> None:
    """Each keyword is ``name=(extent, tile)``; the extent must be a multiple of the tile."""
    for name, (extent, tile) in dims_and_tiles.items():
        require(extent > 0, f"{name}={extent} must be positive")
        require(extent % tile == 0, f"{name}={extent} must be a multiple of the tile size {tile}")


def check_wgmma_n(block_N: int) -> None:
    """Guard against the 0.1.x wgmma issue with block_N = 8 (mod 16).

    wgmma accepts N in multiples of 8, but tilelang 0.1.x mis-partitions the
    accumulator when the per-warpgroup N is an odd multiple of 8; tiles with
    ``block_N % 16 == 8`` are therefore refused (the probe in ``support`` shows
    what the compiler emits for them).
    """
    require(block_N % 16 == 0, f"block_N={block_N} must be a multiple of 16 (block_N = 8 mod 16 hits the 0.1.x wgmma bug)")


def check_inputs(a: Any, b: Any, dtype: Any, *, batched: bool = False, tiles: dict[str, int] | None = None,
                 tma_rows: bool = False, block_N: int | None = None, cuda: bool = True) -> tuple[int, ...]:
    """The operand check of every GEMM variant: ``a`` is ``[M, K]`` and ``b`` ``[N, K]`` (with a
    leading batch dimension when ``batched``), contiguous, of ``dtype``; returns ``(M, N, K)``
    (``(batch, M, N, K)``).  Then, in this order: ``tiles`` (``{"M": block_M, ...}``: each
    extent a multiple of its tile), ``tma_rows`` (K and N multiples of 8: 16-byte rows for TMA
    and the epilogue), ``block_N`` (the wgmma guard of :func:`check_wgmma_n`) and, last, one CUDA
    device (``cuda=False`` leaves the device to the caller, whose own checks come first)."""
    rank = 3 if batched else 2
    lead = "[batch, " if batched else "["
    require(hasattr(a, "shape") and len(a.shape) == rank, f"a must be a {rank}-D tensor {lead}M, K]")
    require(hasattr(b, "shape") and len(b.shape) == rank, f"b must be a {rank}-D tensor {lead}N, K]")
    *ba, M, K = a.shape
    *bb, N, Kb = b.shape
    require(ba == bb, f"batch sizes differ ({ba[0] if ba else ''} != {bb[0] if bb else ''})")
    require(K == Kb, f"a is {lead}M, K] and b is {lead}N, K]: K must agree ({K} != {Kb})")
    check_matrix(a, "a", (*ba, M, K), dtype)
    check_matrix(b, "b", (*bb, N, K), dtype)
    if tiles:
        ext = {"M": M, "N": N, "K": K}
        check_tiles(**{d: (ext[d], t) for d, t in tiles.items()})
    if tma_rows:
        require(K % 8 == 0, f"K={K} must be a multiple of 8 (16-byte rows for TMA)")
        require(N % 8 == 0, f"N={N} must be a multiple of 8 (16-byte rows for the epilogue)")
    if block_N is not None:
        check_wgmma_n(block_N)
    if cuda:
        check_cuda(a=a, b=b)
    return (*ba, M, N, K)
