"""Read a submitted notebook defensively and turn it into what the sandbox runs.

The file is opened only if it is a regular file (never a FIFO, device node, directory or
symbolic link), without blocking and with a size cap.  Nothing from the submission's
metadata decides points: grade_ids in metadata are used only to say which cell an answer
was expected in (to charge a timeout to the right part) and to find the markdown answers
of manually graded parts; the variant tag (:mod:`autograder.variants`) is only compared.

Code cells are turned from IPython syntax into plain Python the way IPython does it
(:mod:`autograder.ipython_cells`): magics and ``!`` lines become calls of
``get_ipython()``, which the sandbox answers.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .ipython_cells import to_python

__all__ = ["NotebookError", "Submission", "read_submission", "read_regular_file", "parse_notebook",
           "ANSWER_KEY_RE", "display_path"]

ANSWER_KEY_RE = re.compile(r"""ANSWER\s*\[\s*(['"])([A-Za-z0-9_]+)\1\s*\]\s*(?:=[^=]|\|=|\+=)""")
MAX_NOTEBOOK_BYTES = 20 << 20

_KIND = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory",
         stat.S_IFLNK: "a symbolic link"}


class NotebookError(ValueError):
    """A file that is not a readable notebook."""


@dataclass
class Submission:
    path: Path
    sha256: str
    cells: list[dict] = field(default_factory=list)  # code cells: index, source, grade_id
    markdown: dict[str, str] = field(default_factory=dict)  # grade_id -> text (manual parts)
    meta_points: dict[str, object] = field(default_factory=dict)  # what the file claims (ignored)
    meta_ids: list[str] = field(default_factory=list)  # every grade_id in the file's metadata
    tag: object = None  # notebook.metadata["autograder"]: the variant tag, if any
    notes: list[str] = field(default_factory=list)  # conversions the grader made (reported)

    def cells_for(self, grade_id: str) -> list[int]:
        """Code cells that assign ANSWER[grade_id] or carry its answer-cell metadata."""
        out = []
        for c in self.cells:
            if grade_id in c["keys"] or c.get("grade_id") in (grade_id, f"{grade_id}_answer"):
                out.append(c["index"])
        return out


def display_path(path: str | os.PathLike) -> str:
    """A path as text that can always be written out: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def read_regular_file(path: str | os.PathLike, max_bytes: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``; never blocks.

    ``lstat`` first (a FIFO or device is never opened), then ``O_NOFOLLOW | O_NONBLOCK``
    and ``fstat`` of what was opened (the same inode, still a regular file).
    """
    name = display_path(os.path.basename(os.fsdecode(path)))
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise NotebookError(f"cannot read {name}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = _KIND.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise NotebookError(f"{name} is {kind}, not a regular file; submit the notebook file itself")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotebookError(f"{name} is a symbolic link; submit the notebook file itself") from None
        raise NotebookError(f"cannot read {name}: {exc.strerror}") from None
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            raise NotebookError(f"{name} changed while it was being read; not graded")
        if st2.st_size > max_bytes:
            raise NotebookError(f"{name} is {st2.st_size >> 20} MiB; notebooks over "
                                f"{max_bytes >> 20} MiB are not graded")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise NotebookError(f"{name} is over {max_bytes >> 20} MiB; not graded")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    if not isinstance(src, str):
        raise NotebookError("a cell's source is neither text nor a list of lines")
    return src


def parse_notebook(raw: bytes, name: str) -> tuple[dict, list[str]]:
    """JSON -> a format-4 notebook dict (format 3 is converted); ``(nb, notes)``."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotebookError(f"{name} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                            f"{exc.msg})") from None
    except RecursionError:
        raise NotebookError(f"{name} is JSON nested too deeply to be a notebook") from None
    if not isinstance(nb, dict):
        raise NotebookError(f"{name} is JSON but not a notebook (not an object)")
    notes = []
    version = nb.get("nbformat", 4 if "cells" in nb else None)
    if version in (1, 2, 3) or (version is None and "worksheets" in nb):
        try:
            import nbformat

            nb = json.loads(nbformat.writes(nbformat.reads(raw.decode("utf-8"), as_version=4)))
        except Exception as exc:  # noqa: BLE001 - any failure of the converter is the file's
            raise NotebookError(f"{name} uses the old notebook format {version} and could not be "
                                f"converted ({type(exc).__name__}); open it in Jupyter and save it "
                                "again (Jupyter writes format 4)") from None
        notes.append(f"the notebook was in the old format {version}; it was converted to format 4 for grading")
    elif version not in (4, None):
        raise NotebookError(f"{name} says it is notebook format {version!r}; this grader reads format 4 "
                            "(and converts format 3)")
    if not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{name} is JSON but not a notebook (no list of cells)")
    return nb, notes


def read_submission(path: str | Path, sha256: str | None = None, raw: bytes | None = None) -> Submission:
    path = Path(path)
    if raw is None:
        raw = read_regular_file(path)
    name = display_path(path.name)
    nb, notes = parse_notebook(raw, name)
    sub = Submission(path, sha256 or hashlib.sha256(raw).hexdigest(), notes=notes)
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    sub.tag = meta.get("autograder")
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        gid = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        if gid:
            sub.meta_ids.append(gid)
        if gid and "points" in nbg:
            sub.meta_points[gid] = nbg.get("points")
        src = _source(cell)
        if cell.get("cell_type") == "code":
            code = to_python(src)
            sub.cells.append({"index": i, "source": code, "grade_id": gid,
                              "keys": sorted({m.group(2) for m in ANSWER_KEY_RE.finditer(code)})})
        elif cell.get("cell_type") == "markdown" and gid:
            sub.markdown[gid] = src[:20000]
    return sub
