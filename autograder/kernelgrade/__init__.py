"""Grading TileLang kernels: interface, correctness and speed on a GPU, structure on the CPU,
Ascend lowering on the CPU.

A lab's spec declares a kernel part with :func:`kernel_parts` (or :func:`ascend_part`):
one answer cell in which the student assigns a ``@tilelang.jit`` factory to
``ANSWER["<grade_id>"]``, graded in several aspects, each its own grade_id with its own
points (``<id>`` correctness, ``<id>_speed``, ``<id>_struct``).  The contract of every
kernel part -- interface, shapes, reference, library baseline, ledger cost, speed levels,
expected structure -- is a task of :mod:`autograder.kernelgrade.tasks`.

Each kernel exercise also declares its per-student parameters with :func:`variant_params`
(``K1.N``, ``K1.dtype`` ...): they join the lab's ``params``, so the student's variant
shape is drawn, shown in ``P``, signed in the released notebook's tag and checked at
grading time exactly like the analytic parts' numbers (:mod:`autograder.variants`).

The student's Python runs only while the factory is elaborated, in a worker started inside
the grader's sandbox (:meth:`autograder.sandbox.Sandbox.run_program`); what comes back is
TIR (data).  A second worker, which runs no student code, compiles it, reads the
generated code, and on a GPU checks it on fresh inputs from a private seed and times it
with the course's protocol against the library in the same process (:mod:`pipeline`,
:mod:`worker`, :mod:`evaluate`).  Points follow :mod:`rubric`.

Modules: ``tasks`` (contracts), ``measure`` (the one adapter to ``measure`` and ``kernels``),
``tirsafe`` (what the build refuses), ``structure`` (reading generated code), ``confine``
(worker confinement), ``worker`` / ``evaluate`` (the two processes), ``pipeline``
(orchestration), ``rubric`` (points), ``selfcheck`` (the notebook's ``check``),
``gpurun`` (the recorded grading run).
"""
from __future__ import annotations

from ..parts import Part
from .pipeline import KernelRef, analytic_cells, grade_kernel_parts, has_kernel_parts
from .tasks import variant_params

__all__ = ["kernel_parts", "ascend_part", "KernelRef", "analytic_cells", "grade_kernel_parts",
           "has_kernel_parts", "variant_params", "SUFFIX"]

#: grade_id suffix of each aspect (the correctness part carries the bare id)
SUFFIX = {"correct": "", "speed": "_speed", "structure": "_struct", "ascend": ""}

_PROMPT = {"correct": "正确性（多种形状含非整块与个人变体，GPU）", "speed": "速度（与拷贝带宽或库对比，GPU）",
           "structure": "结构（sm_90a 生成代码，CPU）"}


def kernel_parts(gid: str, exercise: str, task: str, points: dict[str, float], prompt: str, stub: str,
                 hint: str = "") -> tuple[Part, ...]:
    """The parts of one CUDA kernel answer: correctness, speed, structure (those in ``points``)."""
    out = []
    for aspect in ("correct", "speed", "structure"):
        if aspect not in points:
            continue
        out.append(Part(gid + SUFFIX[aspect], exercise, points[aspect], "kernel",
                        f"{prompt} · {_PROMPT[aspect]}", reference=KernelRef(task, aspect, gid, exercise),
                        stub=stub if aspect == "correct" else "", hint=hint))
    return tuple(out)


def ascend_part(gid: str, exercise: str, task: str, points: float, prompt: str, stub: str) -> Part:
    """One Ascend kernel answer, lowered on the CPU and graded on the captured source."""
    return Part(gid, exercise, points, "kernel", f"{prompt} · 在 CPU 上降级（lowered on CPU）",
                reference=KernelRef(task, "ascend", gid, exercise), stub=stub)
