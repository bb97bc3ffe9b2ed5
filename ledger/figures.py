"""The figures registry: every number the book quotes, with where it comes from.

Each model module in :mod:`ledger` that contributes numbers to the book defines a
function ``figures() -> list[Figure]``.  :func:`collect` imports every module of the
package, calls those functions and returns one dictionary keyed by figure key.
Nothing is listed by hand here: a new module is picked up by being in the package.

A figure carries its value in the unit the book prints, the text exactly as the book
prints it (``text``), the function that computed it (``source``) and the conditions
it holds under (``conditions``).  ``python -m ledger figures --json`` prints
``{key: value}`` for all of them; ``--full`` adds the rest of the record.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import asdict, dataclass
from typing import Iterable, Union

Number = Union[int, float]

__all__ = ["Figure", "fig", "collect", "as_json_dict", "FigureError"]


class FigureError(ValueError):
    """A figure that cannot be registered (bad key, duplicate, NaN or inf)."""


@dataclass(frozen=True)
class Figure:
    key: str
    value: Union[Number, str]
    unit: str
    text: str
    source: str
    conditions: str
    chapter: str

    def record(self) -> dict:
        return asdict(self)


def _check_key(key: str) -> None:
    if not key or any(c.isspace() for c in key):
        raise FigureError(f"figure key must be a non-empty string without spaces, got {key!r}")
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789_.-")
    if set(key.lower()) - allowed:
        raise FigureError(f"figure key {key!r} may use only letters, digits, '_', '.', '-'")


def fig(
    key: str,
    value: Union[Number, str],
    unit: str,
    *,
    digits: int | None = None,
    source: str,
    conditions: str = "",
    chapter: str | None = None,
    text: str | None = None,
) -> Figure:
    """Build a :class:`Figure`.

    ``digits`` rounds ``value`` to that many decimals, both in ``value`` (so JSON
    consumers see what the book prints) and in ``text``.  ``text`` overrides the
    printed form (e.g. thousands separators).  ``chapter`` defaults to the key's
    first dotted component (``"pytorch.prefill.tflop"`` -> ``"pytorch"``).
    """
    _check_key(key)
    if isinstance(value, bool):
        raise FigureError(f"figure {key!r}: booleans are not figures")
    if isinstance(value, float) and not math.isfinite(value):
        raise FigureError(f"figure {key!r}: value is {value!r}; NaN and inf are never printed")
    if digits is not None:
        if not isinstance(value, (int, float)):
            raise FigureError(f"figure {key!r}: digits= needs a number, got {type(value).__name__}")
        value = round(float(value), digits) if digits > 0 else int(round(value))
        shown = f"{value:.{digits}f}" if digits > 0 else f"{value:d}"
    else:
        shown = str(value)
    return Figure(
        key=key,
        value=value,
        unit=unit,
        text=text if text is not None else shown,
        source=source,
        conditions=conditions,
        chapter=chapter if chapter is not None else key.split(".", 1)[0],
    )


_SKIP = {"__main__", "figures", "cli"}


def _modules() -> Iterable[object]:
    import ledger

    for info in sorted(pkgutil.iter_modules(ledger.__path__), key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith("_"):
            continue
        yield importlib.import_module(f"ledger.{info.name}")


def collect() -> dict[str, Figure]:
    """Every figure of every ledger module, keyed by figure key (sorted)."""
    out: dict[str, Figure] = {}
    for mod in _modules():
        fn = getattr(mod, "figures", None)
        if fn is None:
            continue
        for f in fn():
            if not isinstance(f, Figure):
                raise FigureError(f"{mod.__name__}.figures() returned {type(f).__name__}, not Figure")
            if f.key in out:
                raise FigureError(f"figure key {f.key!r} registered twice ({mod.__name__})")
            out[f.key] = f
    return dict(sorted(out.items()))


def as_json_dict(figs: dict[str, Figure] | None = None, full: bool = False) -> dict:
    figs = collect() if figs is None else figs
    if full:
        return {k: f.record() for k, f in figs.items()}
    return {k: f.value for k, f in figs.items()}
