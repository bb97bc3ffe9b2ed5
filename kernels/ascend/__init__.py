"""Ascend kernels of the course, lowered on the CPU, never run on an NPU.

``programs``  the chapters' Ascend kernels in mainline tilelang 0.1.15's dialect
              (``tilelang.ascend.language``, target ``"ascend"``);
``surface``   an executable audit of which Ascend names mainline 0.1.15 has.

:mod:`measure.ascend` compiles them through tilelang's real compile path, stops at the
``bisheng`` call, and records the AscendC source plus what the scheduling passes decided
(latency estimates, multi-buffering, flags) in ``measure/results/ascend/`` (``index.json``).
"""

LABEL = "lowered on the CPU, never run on an NPU"

__all__ = ["LABEL"]
