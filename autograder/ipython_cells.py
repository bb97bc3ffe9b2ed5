"""IPython syntax -> plain Python, as IPython itself transforms a cell before running it.

``%time f()`` becomes ``get_ipython().run_line_magic('time', 'f()')``, ``x = !ls`` becomes
``x = get_ipython().getoutput('ls')``, ``obj?`` a ``pinfo`` magic; IPython's own
:class:`~IPython.core.inputtransformer2.TransformerManager` does it, in the grader (the
sandbox does not import IPython: it would cost a third of a second per submission).
A cell magic (``%%time``) becomes one ``run_cell_magic`` call whose body, when it is
Python, is transformed the same way.  The sandbox's ``get_ipython()``
(:class:`autograder.runner._Shell`) runs the magics graded cells may use and names the
others "not allowed in graded cells".

Cells without anything IPython-specific are returned unchanged (the common case, checked
with a cheap pattern first).
"""
from __future__ import annotations

import re
import threading

__all__ = ["to_python", "PYTHON_CELL_MAGICS"]

# a line starting with % or !, an assignment from one, a trailing or leading ? (help)
_MAYBE = re.compile(r"^[ \t]*[%!?]|=[ \t]*[%!]|\?[ \t]*$", re.M)
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}
_LOCK = threading.Lock()


def _manager():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def to_python(src: str) -> str:
    """The cell as plain Python that calls ``get_ipython()`` where IPython would."""
    if not _MAYBE.search(src):
        return src
    stripped = src.lstrip()
    if stripped.startswith("%%"):
        header, _, body = stripped.partition("\n")
        name, _, line = header[2:].strip().partition(" ")
        if name in PYTHON_CELL_MAGICS:
            body = to_python(body)
        return f"get_ipython().run_cell_magic({name!r}, {line.strip()!r}, {body!r})\n"
    try:
        with _LOCK:
            return _manager().transform_cell(src)
    except ImportError:  # IPython missing: the cell runs as Python and fails with a SyntaxError
        return src
    except Exception:  # noqa: BLE001 - IPython could not parse it; Python will say why
        return src
