"""Instruction-issue bounds: how fast a kernel can be when each element costs instructions, not bytes.

The roofline prices a transcendental at 1 FLOP.  The machine executes instructions: an accurate
``sinf`` is a few dozen of them, and every SM issues at most one warp instruction per clock on
each of its four schedulers -- 128 thread-instructions a clock, the same as its FP32 FMA lanes.
So the calibrated FP32 roof (FMA = 2 FLOP a lane a clock) also gives the issue rate, and a kernel
that executes ``I`` instructions an element needs at least ``I * n / issue_rate`` seconds.  Units
narrower than the issue width bound their own instructions: the special function unit (``MUFU``:
sine, cosine, exp2, reciprocal) and the float-to-integer converter deliver 16 results a clock per
SM on compute capability 9.0 (CUDA C++ Programming Guide, "Arithmetic Instructions" throughput
table), an eighth of the FP32 lanes.

Standard library only; the instruction counts come from a CPU record of the generated code
(``measure.instructions``), the rates from the machine profile.
"""
from __future__ import annotations

from ledger.machines import DEFAULT_MACHINE, Machine, get_machine

__all__ = ["FMA_FLOP", "FP32_LANES_PER_SM", "NARROW_UNIT_LANES_PER_SM", "issue_rate", "sm_clock_hz",
           "issue_bound_s", "unit_bound_s"]

#: FLOP an FMA counts for (one lane, one clock).
FMA_FLOP = 2
#: FP32 lanes (and thread-instructions issued a clock) per SM, compute capability 9.0.
FP32_LANES_PER_SM = 128
#: Results a clock per SM of the special function unit and of float-to-int conversion, cc 9.0.
NARROW_UNIT_LANES_PER_SM = 16


def issue_rate(machine: Machine | str | None = DEFAULT_MACHINE) -> float:
    """Thread-instructions a second the whole GPU can issue: the FP32 roof over 2 FLOP an FMA."""
    m = get_machine(machine)
    return m.roof("cuda_core.fp32") / FMA_FLOP


def sm_clock_hz(machine: Machine | str | None = DEFAULT_MACHINE) -> float:
    """The SM clock the FP32 roof implies: issue rate / (SMs x 128)."""
    m = get_machine(machine)
    return issue_rate(m) / (m.resource("sms") * FP32_LANES_PER_SM)


def issue_bound_s(instructions_per_element: float, n: int, machine: Machine | str | None = DEFAULT_MACHINE) -> float:
    """Shortest time to issue ``instructions_per_element`` for each of ``n`` elements."""
    if instructions_per_element < 0 or n < 0:
        raise ValueError("instructions_per_element and n must be >= 0")
    return instructions_per_element * n / issue_rate(machine)


def unit_bound_s(ops_per_element: float, n: int, machine: Machine | str | None = DEFAULT_MACHINE,
                 lanes_per_sm: int = NARROW_UNIT_LANES_PER_SM) -> float:
    """Shortest time for a unit of ``lanes_per_sm`` results a clock per SM to do ``ops_per_element``
    for each of ``n`` elements (default: the special function unit)."""
    m = get_machine(machine)
    return ops_per_element * n / (lanes_per_sm * m.resource("sms") * sm_clock_hz(m))
