"""The one place the kernel grader touches the course's kernels and measurement code.

Everything :mod:`autograder.kernelgrade` (and a kernel lab's spec) needs from ``measure``
and ``kernels`` is imported here and nowhere else in ``autograder``
(``tests/test_architecture.py`` holds it to this file): the harness (fresh seeded
inputs, poisoned outputs, the fp64 comparison, CUDA-event timing with warm-up and L2
flush, the device copy bandwidth), the tolerance tables, the GEMM tolerance, the reading
of a generated CUDA source, the Ascend capture on the CPU, and the course kernels a lab's
reference answer reads.  The imports sit inside the functions: importing this module
imports neither torch nor tilelang, so the analytic grader stays light.
"""
from __future__ import annotations

from typing import Any

__all__ = ["make_harness", "tolerance", "gemm_tolerance", "default_protocol", "protocol_line",
           "validate_tensor", "instruction_path", "ascend_capture", "course_kernel"]


def make_harness(seed: int, device: str = "cuda", log=None) -> Any:
    """A course ``Harness`` whose random inputs derive from ``seed`` (the grader's private seed)."""
    from measure.harness import Harness

    return Harness(device=device, log=log or (lambda s: None), seed=int(seed))


def tolerance(dtype: Any) -> tuple[float, float]:
    """(atol, rtol) of the course for an output dtype, against an fp64 reference."""
    from measure.check import tolerance as _tol

    return _tol(dtype)


def default_protocol() -> dict:
    """The course's timing protocol (warm-up, measured budget, L2 flush, statistic)."""
    from measure.timing import protocol_dict

    return protocol_dict()


def protocol_line() -> str:
    return str(default_protocol().get("describe", ""))


def validate_tensor(*args, **kwargs) -> None:
    from kernels.common import validate_tensor as _vt

    return _vt(*args, **kwargs)


def gemm_tolerance(K: int) -> dict:
    """``atol``/``rtol`` of the course's GEMM checks for reduction length ``K``."""
    from measure.suites.gemm.common import gemm_tolerance as _gt

    return _gt(K)


def instruction_path(src: str) -> dict:
    """Which hardware paths a generated CUDA source reaches (the course's GEMM reading)."""
    from kernels.gemm.lowered import instruction_path as _ip

    return _ip(src)


def ascend_capture(name: str, func: Any, shape: dict) -> Any:
    """Lower an Ascend ``T.prim_func`` on the CPU up to the bisheng call (the course's capture)."""
    from measure.ascend import capture

    return capture(name, func, shape)


def course_kernel(module: str, name: str) -> Any:
    """``kernels.<module>.<name>``: a course kernel a lab's reference answer reads (e.g. the
    generated source of ``elementwise.scale_cast``)."""
    import importlib

    if not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(f"not a module of the kernels package: {module!r}")
    return getattr(importlib.import_module(f"kernels.{module}"), name)
