"""Units of the quantities students answer with: parse, check the dimension, convert.

A quantity answer is ``{"value": <number>, "unit": "<unit>"}``.  Decimal and binary
prefixes are distinct (``GB`` = 1e9 B, ``GiB`` = 2**30 B): a student who answers
in GiB what was asked in GB is converted exactly, not forgiven a 7 % error.
"""
from __future__ import annotations

import re

__all__ = ["UnitError", "parse_unit", "to_base", "DIMENSION_NAMES"]


class UnitError(ValueError):
    """A unit string that cannot be parsed."""


_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}

# dimension -> human name used in messages
DIMENSION_NAMES = {
    "bytes": "a byte count (B, KB, MB, GB, KiB, MiB, GiB ...)",
    "flop": "an operation count (FLOP, MFLOP, GFLOP, TFLOP ...)",
    "time": "a time (s, ms, us, ns)",
    "intensity": "an arithmetic intensity (FLOP/B)",
    "flops": "a compute rate (GFLOPS, TFLOPS ...)",
    "bandwidth": "a bandwidth (GB/s, TB/s ...)",
    "bytes_per_param": "bytes per parameter (B/param)",
    "percent": "a percentage (%)",
    "one": "a plain number (unit \"\")",
}


def _prefix(p: str, allow_binary: bool = True) -> float:
    if p in _DECIMAL:
        return _DECIMAL[p]
    if allow_binary and p in _BINARY:
        return _BINARY[p]
    raise UnitError(f"unknown prefix {p!r}")


_BYTE_WORDS = ("B", "Byte", "Bytes", "byte", "bytes")
_FLOP_WORDS = ("FLOP", "FLOPs", "flop", "flops", "Flop", "Flops")


def parse_unit(unit: str) -> tuple[str, float]:
    """Return ``(dimension, factor)`` so that ``value * factor`` is in the base unit.

    Base units: B, FLOP, s, FLOP/B, FLOP/s, B/s, B/param, %, 1.
    """
    if not isinstance(unit, str):
        raise UnitError(f"a unit must be a string, got {type(unit).__name__}")
    u = unit.strip().replace(" ", "")
    if u in ("", "1", "-", "x", "×"):
        return "one", 1.0
    if u == "%":
        return "percent", 1.0
    if u in _TIME:
        return "time", _TIME[u]
    m = re.fullmatch(r"([A-Za-z]{0,2})(FLOP|FLOPs|flop|flops|Flop|Flops)/(B|Byte|byte)", u)
    if m:
        return "intensity", _prefix(m.group(1), allow_binary=False)
    m = re.fullmatch(r"([A-Za-z]{0,2})(B|Byte|Bytes|byte|bytes)/(param|parameter|参数)", u)
    if m:
        return "bytes_per_param", _prefix(m.group(1))
    m = re.fullmatch(r"([A-Za-z]{0,2})(B|Byte|Bytes|byte|bytes)/s", u)
    if m:
        return "bandwidth", _prefix(m.group(1))
    m = re.fullmatch(r"([A-Za-z]?)(FLOPS|FLOP/s|flop/s|FLOPs/s)", u)
    if m:
        return "flops", _prefix(m.group(1), allow_binary=False)
    for words, dim, binary in ((_FLOP_WORDS, "flop", False), (_BYTE_WORDS, "bytes", True)):
        for w in sorted(words, key=len, reverse=True):
            if u.endswith(w):
                head = u[: -len(w)]
                try:
                    return dim, _prefix(head, allow_binary=binary)
                except UnitError:
                    pass
    raise UnitError(f"unknown unit {unit!r}")


def to_base(value: float, unit: str) -> tuple[str, float]:
    """``(dimension, value in base unit)``."""
    dim, factor = parse_unit(unit)
    return dim, float(value) * factor
