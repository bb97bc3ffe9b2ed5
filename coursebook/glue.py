"""Glue ledger figures into a MyST-NB page.

A page calls ``glue_figures("ch02")`` once in a hidden cell; every figure of the
registry whose key starts with that prefix is then available to the prose as
``{glue:text}`ch02.prefill.tflop` ``, printed exactly as the figure's ``text``.
"""
from __future__ import annotations

from typing import Iterable

from ledger.figures import Figure, collect

__all__ = ["glue_figures", "figure_table", "GluedText"]


class GluedText:
    """An object whose plain-text repr is the text itself (no quotes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:  # what {glue:text} shows
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text


def _select(prefix: str | Iterable[str]) -> dict[str, Figure]:
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    figs = collect()
    chosen = {k: f for k, f in figs.items() if k.startswith(prefixes)}
    if not chosen:
        raise KeyError(f"no ledger figure has a key starting with {prefixes!r}")
    return chosen


def glue_figures(prefix: str | Iterable[str] = "") -> dict[str, Figure]:
    """Glue every figure whose key starts with ``prefix``; return them."""
    from myst_nb import glue

    chosen = _select(prefix)
    for key, f in chosen.items():
        glue(key, GluedText(f.text), display=False)
    return chosen


def figure_table(prefix: str | Iterable[str] = "", *, keys: Iterable[str] | None = None) -> str:
    """A Markdown table of figures: value, unit, source, conditions.

    Display it in a cell with ``IPython.display.Markdown(figure_table("ch02"))``.
    """
    chosen = _select(prefix)
    if keys is not None:
        keys = list(keys)
        missing = [k for k in keys if k not in chosen]
        if missing:
            raise KeyError(f"unknown figure keys: {missing}")
        chosen = {k: chosen[k] for k in keys}
    lines = ["| 键 key | 数值 | 单位 | 出处 source | 条件 conditions |", "|---|---:|---|---|---|"]
    for k, f in chosen.items():
        cond = f.conditions.replace("|", "\\|") or "—"
        lines.append(f"| `{k}` | {f.text} | {f.unit} | `{f.source}` | {cond} |")
    return "\n".join(lines)
