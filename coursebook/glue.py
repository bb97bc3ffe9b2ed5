"""Glue ledger figures into a MyST-NB page.

A page calls ``glue_figures("pytorch")`` once in a hidden cell; every figure of the
registry whose key starts with that prefix is then available to the prose as
``{glue:text}`pytorch.prefill.tflop` ``, printed exactly as the figure's ``text``.
"""
from __future__ import annotations

import ast

from typing import Iterable

from ledger.figures import Figure, collect

__all__ = ["glue", "glue_figures", "glue_values", "glued_keys", "figure_table", "GluedText", "shown_text"]

#: The mime prefix of a glued output that is not displayed (myst-nb's, from papermill).
GLUE_PREFIX = "application/papermill.record/"


def shown_text(plain: str) -> str:
    """What myst-nb's ``{glue:text}`` prints for a ``text/plain`` output: it literal-evaluates the
    text first, so ``1.20`` would print as ``1.2`` and ``1.718e10`` as ``17180000000.0``, while a
    quoted ``'1.20'`` prints as ``1.20``."""
    try:
        return str(ast.literal_eval(plain))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return plain


class GluedText:
    """An object whose plain-text repr prints, through ``{glue:text}``, exactly as the text: the
    text itself where myst-nb would print it unchanged, else the text quoted (see :func:`shown_text`)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:  # what {glue:text} shows
        return self.text if shown_text(self.text) == self.text else repr(self.text)

    def _repr_markdown_(self) -> str:
        return self.text


def glue(name: str, variable, display: bool = True) -> None:
    """Glue ``variable`` under ``name`` for ``{glue:…}`` roles: myst-nb's ``glue`` where myst-nb is
    installed, else the same output written with IPython alone (a GPU machine that runs a chapter's
    notebook needs the Jupyter kernel, not the book's build stack)."""
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:
        _myst_glue = None
    if _myst_glue is not None:
        return _myst_glue(name, variable, display)
    import IPython
    from IPython.display import display as ipy_display

    mimebundle, metadata = IPython.core.formatters.format_display_data(variable)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    ipy_display({prefix + k: v for k, v in mimebundle.items()}, raw=True, metadata=metadata)


def _select(prefix: str | Iterable[str]) -> dict[str, Figure]:
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    figs = collect()
    chosen = {k: f for k, f in figs.items() if k.startswith(prefixes)}
    if not chosen:
        raise KeyError(f"no ledger figure has a key starting with {prefixes!r}")
    return chosen


def glue_figures(prefix: str | Iterable[str] = "") -> dict[str, Figure]:
    """Glue every figure whose key starts with ``prefix``; return them."""
    chosen = _select(prefix)
    for key, f in chosen.items():
        glue(key, GluedText(f.text), display=False)
    return chosen


def glue_values(values: dict[str, str]) -> dict[str, str]:
    """Glue computed texts (``{key: printed text}``, e.g. a helper's value function); return them."""
    for key, text in values.items():
        glue(key, GluedText(str(text)), display=False)
    return values


def glued_keys(page: str, prefixes: str | Iterable[str] = (), registry_only: bool = True) -> list[str]:
    """Keys glued by ``{glue:text}`key``` on ``book/<page>``, in order of first use: those starting
    with one of ``prefixes`` (a prefix ``"gemm"`` means ``"gemm."``; none: every key), and with
    ``registry_only`` only those the ledger's registry holds (the page's "where each number comes
    from" table)."""
    import re

    from coursebook.pagecheck import page_text

    text = page_text(page)
    keys = list(dict.fromkeys(re.findall(r"\{glue:text\}`([^`]+)`", text)))
    pre = (prefixes,) if isinstance(prefixes, str) else tuple(prefixes)
    if pre:
        keys = [k for k in keys if k.startswith(tuple(p if p.endswith(".") else p + "." for p in pre))]
    if registry_only:
        reg = collect()
        keys = [k for k in keys if k in reg]
    return keys


def figure_table(prefix: str | Iterable[str] = "", *, keys: Iterable[str] | None = None) -> str:
    """A Markdown table of figures: value, unit, source, conditions.

    Display it in a cell with ``IPython.display.Markdown(figure_table("pytorch"))``.
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
