"""Bytes and FLOPs of a timed kernel, from the ledger function that counts them.

A suite imports the ledger function it means (an import arrow, not a string resolved at
run time) and prices a bench with it::

    from ledger.fusion import rmsnorm_cost
    by, fl, src = priced(rmsnorm_cost, m=M, n=N, dtype="float16")
    h.bench(name, fn, bytes=by, flops=fl, ledger_source=src)

:func:`priced` raises when the ledger function returns neither bytes nor FLOPs: a bench is
never silently left with a time only.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

__all__ = ["Priced", "priced", "source_of"]


class Priced(NamedTuple):
    """What the ledger says one kernel moves and computes; ``source`` names the function."""

    bytes: float | None
    flops: float | None
    source: str


def source_of(fn: Callable[..., Any]) -> str:
    """``ledger.fusion.rmsnorm_cost`` for that function (its module and qualified name)."""
    return f"{fn.__module__}.{fn.__qualname__}"


def _pick(obj: Any, *names: str) -> float | None:
    for n in names:
        v = obj.get(n) if isinstance(obj, Mapping) else getattr(obj, n, None)
        if callable(v):
            v = v()
        if v is not None:
            return float(v)
    return None


def priced(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Priced:
    """Call a :mod:`ledger` function and read bytes and FLOPs off its result: a number
    (bytes), a ``(bytes, flops)`` pair, or a mapping / object with ``bytes``/``flops``
    (or ``total_bytes``/``total_flops``).  ``TypeError`` when it has neither."""
    src = source_of(fn)
    if not src.startswith("ledger."):
        raise ValueError(f"{src}: bytes and FLOPs come from the ledger package")
    out = fn(*args, **kwargs)
    if isinstance(out, (int, float)):
        return Priced(float(out), None, src)
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return Priced(float(out[0]), None if out[1] is None else float(out[1]), src)
    by, fl = _pick(out, "bytes", "total_bytes", "nbytes"), _pick(out, "flops", "total_flops")
    if by is None and fl is None:
        raise TypeError(f"{src} returned {type(out).__name__} without bytes or flops")
    return Priced(by, fl, src)
