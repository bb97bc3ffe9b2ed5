"""Make the student notebook: solutions replaced by stubs, hidden tests removed, outputs cleared.

The released file keeps the nbgrader metadata (so an nbgrader course can use it) but
contains no solution, no reference answer and no checking code: the visible test cells
only call ``check(ANSWER, grade_id)``, which computes its verdict elsewhere.  The hidden
tests (``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``, nbgrader's markers) are
removed here exactly as ``nbgrader generate_assignment`` removes them.

``release(lab, student=ID)`` writes one student's variant (their numbers in the text, in
``P`` and in ``check``) and a signed tag in ``metadata["autograder"]``;
:func:`release_roster` does it for every id of a roster file.
"""
from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path

from .labs import LabError, canonical_lab, load_builder, load_lab
from .variants import TAG_KEY, course_key, key_path, make_tag, variant_for

__all__ = ["release", "release_roster", "strip_solutions", "ReleaseError", "read_roster"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MARKDOWN_STUB = "（在此作答）"


class ReleaseError(ValueError):
    pass


def _strip_region(src: str, stub: str | None, where: str, begin: str = BEGIN, end: str = END,
                  required: bool = True) -> str:
    lines = src.splitlines()
    out, inside, found = [], False, False
    for ln in lines:
        s = ln.strip()
        if s == begin:
            if inside:
                raise ReleaseError(f"{where}: nested {begin}")
            inside, found = True, True
            indent = ln[: len(ln) - len(ln.lstrip())]
            if stub is not None:
                out += [indent + x for x in stub.splitlines()]
        elif s == end:
            if not inside:
                raise ReleaseError(f"{where}: {end} without {begin}")
            inside = False
        elif not inside:
            out.append(ln)
    if inside:
        raise ReleaseError(f"{where}: {begin} is never closed")
    if required and not found:
        raise ReleaseError(f"{where}: a solution cell without {begin} / {end}")
    return "\n".join(out).rstrip("\n") if found and stub is None else "\n".join(out)


def strip_solutions(nb, lab: str):
    spec, _ = load_lab(lab)
    stubs = {f"{p.grade_id}_answer": p.stub for p in spec.parts if p.auto}
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if HIDDEN_BEGIN in cell.source:
                cell.source = _strip_region(cell.source, None, f"cell {i}", HIDDEN_BEGIN, HIDDEN_END,
                                            required=False)
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
    for marker in (BEGIN, END, HIDDEN_BEGIN, HIDDEN_END):
        if marker in text:
            raise ReleaseError(f"{marker!r} left in the released notebook")
    return nb


def _umask_mode() -> int:
    """0o666 less the process umask: what a plain open() would create (mkstemp makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _write(nb, out: Path) -> Path:
    import nbformat  # imported on use: its schema validator takes over a second to import

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.chmod(tmp, _umask_mode())
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out


def _student_notebook(lab: str, student: str, key: bytes):
    import nbformat

    spec, source = load_lab(lab)
    builder = load_builder(lab)
    if builder is not None:
        nb = builder.build(variant_for(spec, student), student=student)
    else:
        nb = nbformat.read(str(source), as_version=4)
    nb = strip_solutions(nb, lab)
    nb.metadata[TAG_KEY] = make_tag(spec, student, key)
    return nb


def release(lab: str, out: Path | None = None, student: str | None = None) -> Path:
    """Write the student notebook; with ``student``, that student's variant, tagged."""
    import nbformat

    spec, source = load_lab(lab)
    lab = canonical_lab(lab)
    if student is not None:
        _check_id(student)
        nb = _student_notebook(lab, student, course_key(create=True))
        return _write(nb, Path(out) if out else Path("dist") / lab / f"{student}.ipynb")
    if not source.is_file():
        raise LabError(f"lab {lab}: instructor notebook {source} is missing (run labs/{lab}/build.py)")
    nb = strip_solutions(nbformat.read(str(source), as_version=4), lab)
    return _write(nb, Path(out) if out else Path("dist") / lab / f"{lab}.ipynb")


def _check_id(student: str) -> None:
    from .grade import student_id

    sid, note = student_id(student + ".ipynb")
    if sid != student or note:
        raise ReleaseError(f"student id {student!r} is not one the grader derives from a file name "
                           f"(it would read {sid!r}); use {sid!r}")


def read_roster(path: Path) -> list[str]:
    """Student ids, one per line (the first column of a CSV); ``#`` comments and blank lines
    are skipped, a header named ``id``/``student``/``学号`` too."""
    from .grade import student_id

    text = Path(path).read_text(encoding="utf-8-sig")
    ids, seen = [], {}
    for row in csv.reader(text.splitlines()):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        raw = row[0].strip()
        if raw.lower() in ("id", "student", "student_id", "学号") and not ids:
            continue
        sid, _ = student_id(raw + ".ipynb")
        if sid.casefold() in seen:
            raise ReleaseError(f"roster {path}: {raw!r} and {seen[sid.casefold()]!r} give the same student id {sid!r}")
        seen[sid.casefold()] = raw
        ids.append(sid)
    if not ids:
        raise ReleaseError(f"roster {path}: no student ids in it")
    return ids


def release_roster(lab: str, roster: Path, out_dir: Path | None = None) -> list[Path]:
    """One tagged notebook per student of ``roster``: ``OUT/<id>.ipynb``."""
    lab = canonical_lab(lab)
    load_lab(lab)
    out_dir = Path(out_dir) if out_dir else Path("dist") / lab
    key = course_key(create=True)
    return [_write(_student_notebook(lab, sid, key), out_dir / f"{sid}.ipynb") for sid in read_roster(roster)]


def key_location() -> str:
    return str(key_path())
