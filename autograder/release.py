"""Make the student notebook: solutions replaced by stubs, outputs cleared.

The released file keeps the nbgrader metadata (so an nbgrader course can use it) but
contains no solution, no reference answer and no checking code: the visible test
cells only call ``check(ANSWER, grade_id)``, which computes its verdict elsewhere.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import nbformat

from .labs import LabError, load_lab

__all__ = ["release", "strip_solutions", "ReleaseError"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
MARKDOWN_STUB = "（在此作答）"


class ReleaseError(ValueError):
    pass


def _strip_region(src: str, stub: str, where: str) -> str:
    lines = src.splitlines()
    out, inside, found = [], False, False
    for ln in lines:
        s = ln.strip()
        if s == BEGIN:
            if inside:
                raise ReleaseError(f"{where}: nested {BEGIN}")
            inside, found = True, True
            indent = ln[: len(ln) - len(ln.lstrip())]
            out += [indent + x for x in stub.splitlines()]
        elif s == END:
            if not inside:
                raise ReleaseError(f"{where}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(ln)
    if inside:
        raise ReleaseError(f"{where}: {BEGIN} is never closed")
    if not found:
        raise ReleaseError(f"{where}: a solution cell without {BEGIN} / {END}")
    return "\n".join(out)


def strip_solutions(nb, lab: str):
    spec, _ = load_lab(lab)
    stubs = {f"{p.grade_id}_answer": p.stub for p in spec.parts if p.auto}
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if not meta.get("solution"):
            continue
        gid = meta.get("grade_id", "")
        if cell.cell_type == "markdown":
            head = cell.source.split("\n\n", 1)[0]
            cell.source = head + "\n\n" + MARKDOWN_STUB if head.startswith("**") else MARKDOWN_STUB
        else:
            stub = stubs.get(gid, "# YOUR ANSWER HERE")
            cell.source = _strip_region(cell.source, stub, f"cell {i} ({gid})")
    text = json.dumps(nb)
    if BEGIN in text or END in text:
        raise ReleaseError("solution markers left in the released notebook")
    return nb


def release(lab: str, out: Path | None = None) -> Path:
    spec, source = load_lab(lab)
    if not source.is_file():
        raise LabError(f"lab {lab}: instructor notebook {source} is missing (run labs/{lab}/build.py)")
    nb = nbformat.read(str(source), as_version=4)
    nb = strip_solutions(nb, lab)
    out = Path(out) if out else Path("dist") / lab / f"{lab}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out
