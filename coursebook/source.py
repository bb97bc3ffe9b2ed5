"""Kernel code as a page shows it: read from the installed course package, never retyped.

``show_source(factory, first, last)`` returns the factory's source (or the excerpt from the first
line containing ``first`` to the next line containing ``last``) as a Markdown code block headed by
the function's dotted name.  A ``@tilelang.jit`` factory keeps the Python function in ``.func``
(``.orig_func`` inside); a ``@T.macro`` or a plain function is read as it is.  When a marker is not
found the whole function is shown, and :func:`excerpt_bounds` says so (a page test checks every
marker a page uses).
"""
from __future__ import annotations

import inspect
import textwrap

__all__ = ["function_of", "excerpt_bounds", "excerpt", "show_source"]


def function_of(factory):
    """The Python function behind a kernel factory (``@tilelang.jit`` keeps it in ``.func``)."""
    fn = getattr(factory, "func", factory)
    return getattr(fn, "orig_func", fn)


def excerpt_bounds(lines: list[str], first: str | None, last: str | None) -> tuple[int, int] | None:
    """Indices (inclusive) of the excerpt from the line holding ``first`` to the next one holding
    ``last``; the whole list without markers; None when a marker is missing."""
    if first is None:
        return 0, len(lines) - 1
    i = next((n for n, ln in enumerate(lines) if first in ln), None)
    if i is None:
        return None
    if not last:
        return i, len(lines) - 1
    j = next((n for n, ln in enumerate(lines) if n >= i and last in ln), None)
    return None if j is None else (i, j)


def excerpt(factory, first: str | None = None, last: str | None = None) -> tuple[str, str]:
    """(dotted name, dedented source or excerpt) of ``factory``."""
    fn = function_of(factory)
    lines = inspect.getsource(fn).splitlines()
    bounds = excerpt_bounds(lines, first, last) or (0, len(lines) - 1)
    return f"{fn.__module__}.{fn.__name__}", textwrap.dedent("\n".join(lines[bounds[0]:bounds[1] + 1]))


def show_source(factory, first: str | None = None, last: str | None = None):
    """The excerpt as Markdown for a cell's output: the function's name, then the code."""
    from IPython.display import Markdown

    where, code = excerpt(factory, first, last)
    return Markdown(f"`{where}`（读自已安装的课程包）\n\n```python\n{code}\n```")
