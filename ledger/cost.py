"""The accounting rules, written once, and the (flops, bytes) pair they produce.

The rules every ledger in the course follows (the book calls them 记账口径):

1. **Bytes.** Each input tensor is read from memory once and each output tensor is
   written once.  Intermediates that a kernel keeps on chip are not counted.  When an
   operator is split into several kernels, every tensor that crosses a kernel boundary
   is an output of one kernel and an input of the next, so it is counted twice (one
   write, one read).
2. **Elementwise FLOPs.** add, sub, mul, div, max, min, abs, neg ... count 1 FLOP each.
3. **Transcendentals.** exp, log, tanh, sqrt, rsqrt, sin, cos, sigmoid's exp ... also
   count 1 FLOP.  This is a ledger convention, not the hardware cost: on a GPU they
   run on the special-function units at a fraction of the FMA rate, so operators dense
   in them are slower than the ledger's lower bound says.
4. **Multiply-add.** one multiply-accumulate of a matrix product counts 2 FLOP.

A :class:`Cost` is the pair ``(flops, bytes)`` of one operator call.  Against a
machine (:mod:`ledger.machines`) it gives the arithmetic intensity, the memory time,
the compute time, the lower bound ``max(memory time, compute time)`` and the bound
class.  The bound is a floor: a real kernel is slower (cache misses, launch, tails,
synchronisation).

Public API: :data:`DTYPE_BYTES`, :func:`dtype_bytes`, :func:`check_size`,
:class:`Cost`, :class:`Verdict`, :func:`judge`, :data:`FLOP_ELEMENTWISE`,
:data:`FLOP_TRANSCENDENTAL`, :data:`FLOP_MAC`, and the formatters :func:`fmt_bytes`,
:func:`fmt_flops`, :func:`fmt_time`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ledger.machines import Machine

__all__ = [
    "DTYPE_BYTES",
    "FLOP_ELEMENTWISE",
    "FLOP_TRANSCENDENTAL",
    "FLOP_MAC",
    "dtype_bytes",
    "check_size",
    "Cost",
    "Verdict",
    "judge",
    "fmt_bytes",
    "fmt_flops",
    "fmt_time",
    "MEMORY_BOUND",
    "COMPUTE_BOUND",
    "BALANCED",
]

#: Ledger FLOPs of one elementwise arithmetic operation (add, mul, max ...).
FLOP_ELEMENTWISE = 1
#: Ledger FLOPs of one transcendental (exp, rsqrt, sin ...): a convention, not the SFU cost.
FLOP_TRANSCENDENTAL = 1
#: Ledger FLOPs of one multiply-accumulate.
FLOP_MAC = 2

#: Bytes per element, one table for every ledger.  Names follow both the short form
#: the book prints (``fp16``) and the torch/TileLang spelling (``float16``).
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8, "float64": 8, "double": 8,
    "fp32": 4, "float32": 4, "float": 4, "tf32": 4,
    "fp16": 2, "float16": 2, "half": 2,
    "bf16": 2, "bfloat16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "e4m3": 1, "e5m2": 1,
    "float8_e4m3fn": 1, "float8_e4m3": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
    "int4": 0.5, "uint4": 0.5, "fp4": 0.5, "float4_e2m1fn": 0.5, "nf4": 0.5,
}

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"
BALANCED = "balanced"


def dtype_bytes(dtype: str, *, arg: str = "dtype") -> float:
    """Bytes per element of ``dtype``; an unknown name raises ``ValueError`` naming ``arg``."""
    if not isinstance(dtype, str) or dtype.lower() not in DTYPE_BYTES:
        raise ValueError(
            f"{arg}: unknown dtype {dtype!r}; known: {', '.join(sorted(DTYPE_BYTES))}"
        )
    return DTYPE_BYTES[dtype.lower()]


def check_size(name: str, value: object, *, integer: bool = True, allow_zero: bool = False) -> float:
    """Validate a size argument and return it (as int when ``integer``).

    Raises ``ValueError`` naming ``name`` when the value is not a finite number, is not
    an integer (when ``integer``), or is not positive (zero allowed with ``allow_zero``).
    Floats such as ``7e9`` are accepted as integers when they are whole.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if integer:
        if float(value) != int(value):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return value


@dataclass(frozen=True)
class Cost:
    """The (flops, bytes) of one operator call, with a name and its assumptions."""

    flops: float
    bytes: float
    name: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        for arg in ("flops", "bytes"):
            v = getattr(self, arg)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"Cost.{arg} must be a finite number >= 0, got {v!r}")

    # -- arithmetic -----------------------------------------------------------------
    def __add__(self, other: "Cost") -> "Cost":
        if not isinstance(other, Cost):
            return NotImplemented
        name = " + ".join(n for n in (self.name, other.name) if n)
        return Cost(self.flops + other.flops, self.bytes + other.bytes, name)

    def scaled(self, factor: float, name: str | None = None) -> "Cost":
        """This cost ``factor`` times (e.g. per layer x layers)."""
        check_size("factor", factor, integer=False, allow_zero=True)
        return Cost(self.flops * factor, self.bytes * factor, self.name if name is None else name, self.note)

    # -- the model --------------------------------------------------------------------
    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP/byte.  ``ValueError`` when bytes is 0."""
        if self.bytes == 0:
            raise ValueError(f"bytes: cost {self.name!r} moves 0 bytes; its intensity is undefined")
        return self.flops / self.bytes

    ai = intensity

    def memory_time(self, machine: "Machine | str | None" = None, memory: str | None = None) -> float:
        """Seconds to move ``bytes`` at the machine's (effective) memory rate."""
        from ledger.machines import get_machine

        return self.bytes / get_machine(machine).memory_rate(memory)

    def compute_time(self, machine: "Machine | str | None" = None, roof: str | None = None) -> float:
        """Seconds to do ``flops`` at the machine's (effective) compute roof ``roof``."""
        from ledger.machines import get_machine

        return self.flops / get_machine(machine).roof(roof)

    def lower_bound(self, machine: "Machine | str | None" = None, roof: str | None = None,
                    memory: str | None = None) -> float:
        """``max(memory time, compute time)`` in seconds: no kernel can be faster."""
        return max(self.memory_time(machine, memory), self.compute_time(machine, roof))

    def bound(self, machine: "Machine | str | None" = None, roof: str | None = None,
              memory: str | None = None) -> str:
        """``"memory-bound"``, ``"compute-bound"`` or (exact tie) ``"balanced"``."""
        return judge(self, machine, roof=roof, memory=memory).bound


@dataclass(frozen=True)
class Verdict:
    """A cost judged against one roof."""

    cost: Cost
    machine: str
    roof: str
    intensity: float  #: FLOP/byte (0 for a cost with no arithmetic)
    balance: float  #: FLOP/byte of the roof
    memory_time: float  #: s
    compute_time: float  #: s
    lower_bound: float  #: s
    bound: str

    def row(self) -> str:
        """One printable line (no NaN, no inf)."""
        return (
            f"{self.cost.name:<42s} {fmt_flops(self.cost.flops):>12s} {fmt_bytes(self.cost.bytes):>11s} "
            f"{self.intensity:>9.2f} {fmt_time(self.lower_bound):>11s}  {self.bound}"
        )


def judge(cost: Cost, machine: "Machine | str | None" = None, *, roof: str | None = None,
          memory: str | None = None) -> Verdict:
    """Judge ``cost`` against ``machine`` (default profile) and compute roof ``roof``."""
    from ledger.machines import get_machine

    m = get_machine(machine)
    if cost.bytes == 0:
        raise ValueError(f"bytes: cost {cost.name!r} moves 0 bytes; the ledger needs bytes > 0")
    t_mem = cost.bytes / m.memory_rate(memory)
    t_comp = cost.flops / m.roof(roof)
    if t_mem > t_comp:
        bound = MEMORY_BOUND
    elif t_comp > t_mem:
        bound = COMPUTE_BOUND
    else:
        bound = BALANCED
    ai = cost.flops / cost.bytes
    return Verdict(cost, m.name, roof or m.default_compute, ai, m.balance_for(roof, memory),
                   t_mem, t_comp, max(t_mem, t_comp), bound)


# ------------------------------------------------------------------------------------
# formatting: the units the book prints (decimal SI: 1 GB = 1e9 bytes)
# ------------------------------------------------------------------------------------
def _finite(x: float, what: str) -> float:
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"{what}: refusing to format {x!r}")
    return float(x)


def _si(x: float, unit: str, digits: int) -> str:
    x = _finite(x, unit)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= scale:
            return f"{x / scale:.{digits}f} {prefix}{unit}"
    return f"{x:.{digits}f} {unit}"


def fmt_bytes(b: float, digits: int = 2) -> str:
    """Bytes in decimal units: ``67.11 MB``."""
    return _si(b, "B", digits)


def fmt_flops(f: float, digits: int = 2) -> str:
    """FLOPs in decimal units: ``33.55 MFLOP``."""
    return _si(f, "FLOP", digits)


def fmt_time(seconds: float, digits: int = 3) -> str:
    """Seconds as ``s``, ``ms``, ``µs`` or ``ns``."""
    s = _finite(seconds, "time")
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(s) >= scale:
            return f"{s / scale:.{digits}f} {unit}"
    return f"{s / 1e-9:.{digits}f} ns"

