"""The one place the kernel grader touches the course's measurement code.

Everything the grader needs from ``kernels`` -- the harness (fresh seeded inputs,
poisoned outputs, the fp64 comparison, CUDA-event timing with warm-up and L2 flush,
the device copy bandwidth), the tolerance tables and the GEMM tolerance -- is imported
here and nowhere else in :mod:`autograder.kernelgrade`.  When the harness moves to
another package, this file is the only one to change.
"""
from __future__ import annotations

from typing import Any

__all__ = ["Harness", "make_harness", "tolerance", "gemm_tolerance", "default_protocol",
           "validate_tensor", "protocol_line", "instruction_path"]


def _harness_module():
    from kernels import harness  # the course's harness (see kernels/harness.py)

    return harness


def make_harness(seed: int, device: str = "cuda", log=None) -> Any:
    """A course ``Harness`` whose random inputs derive from ``seed`` (the grader's private seed)."""
    return _harness_module().Harness(device=device, log=log or (lambda s: None), seed=int(seed))


def Harness(*args, **kwargs):  # noqa: N802 - mirrors the class name
    return _harness_module().Harness(*args, **kwargs)


def tolerance(dtype: Any) -> tuple[float, float]:
    """(atol, rtol) of the course for an output dtype, against an fp64 reference."""
    return _harness_module().tolerance(dtype)


def default_protocol() -> dict:
    """The course's timing protocol (warm-up, measured budget, L2 flush, statistic)."""
    return _harness_module().default_protocol()


def protocol_line() -> str:
    return str(default_protocol().get("describe", ""))


def validate_tensor(*args, **kwargs) -> None:
    return _harness_module().validate_tensor(*args, **kwargs)


def gemm_tolerance(K: int) -> dict:
    """``atol``/``rtol`` of the course's GEMM checks for reduction length ``K``."""
    from kernels.gemm.common import gemm_tolerance as _gt

    return _gt(K)


def instruction_path(src: str) -> dict:
    """Which hardware paths a generated CUDA source reaches (the course's GEMM reading)."""
    from kernels.gemm.common import instruction_path as _ip

    return _ip(src)
