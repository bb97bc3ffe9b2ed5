"""What every kernel family shares: the compile target, the machine's SM count, input checks."""
from __future__ import annotations

from typing import Any

from ledger.machines import DEFAULT_MACHINE, get_machine

__all__ = ["TARGET", "SMS", "SMEM_PER_BLOCK", "dtype_name", "validate_tensor"]

#: Compile target of every CUDA kernel of the course (H200 = sm_90a).
TARGET = {"kind": "cuda", "arch": "sm_90a"}

#: Streaming multiprocessors of the measured machine (the ledger's default profile): the
#: default grid of the persistent kernels, and the count a CPU-side wave prediction uses.
SMS = int(get_machine(DEFAULT_MACHINE).resource("sms"))

#: Shared memory one block may use on that machine (bytes; the 227 KiB opt-in maximum of an H100/H200 SM): the limit
#: the kernels' own shared-memory counts are checked against before lowering.
SMEM_PER_BLOCK = int(get_machine(DEFAULT_MACHINE).resource("smem_per_block_kb")) * 1024


def dtype_name(dtype: Any) -> str:
    """``torch.float16`` -> ``"float16"``."""
    return str(dtype).replace("torch.", "")


def validate_tensor(name: str, t: Any, *, dtype: Any = None, ndim: int | None = None,
                    shape: tuple | None = None, device: str | None = "cuda") -> None:
    """Raise ``ValueError`` naming the violated constraint (before any launch).

    Order: type, dtype, rank, shape, contiguity, device -- so a CPU test can reach
    every check with CPU tensors.  ``dtype`` may be one dtype or a tuple of them;
    ``shape`` entries of ``None`` are free.
    """
    import torch

    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if t.dtype not in allowed:
            names = ", ".join(dtype_name(d) for d in allowed)
            raise ValueError(f"{name}: dtype must be {names}, got {dtype_name(t.dtype)}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if shape is not None:
        if len(shape) != t.dim() or any(s is not None and s != d for s, d in zip(shape, t.shape)):
            want = tuple("*" if s is None else s for s in shape)
            raise ValueError(f"{name}: shape must be {want}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous (row-major), got strides {tuple(t.stride())}")
    if device is not None and t.device.type != device:
        raise ValueError(f"{name}: must be on a {device} device, got {t.device}")
