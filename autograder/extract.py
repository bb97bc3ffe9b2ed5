"""Read a submitted notebook defensively and turn it into what the sandbox runs.

Nothing from the submission's metadata decides points: grade_ids in metadata are
used only to say which cell an answer was expected in (to charge a timeout to the
right part) and to find the markdown answers of manually graded parts.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NotebookError", "Submission", "read_submission", "ANSWER_KEY_RE"]

ANSWER_KEY_RE = re.compile(r"""ANSWER\s*\[\s*(['"])([A-Za-z0-9_]+)\1\s*\]\s*(?:=[^=]|\|=|\+=)""")
MAX_NOTEBOOK_BYTES = 20 << 20


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

    def cells_for(self, grade_id: str) -> list[int]:
        """Code cells that assign ANSWER[grade_id] or carry its answer-cell metadata."""
        out = []
        for c in self.cells:
            if grade_id in c["keys"] or c.get("grade_id") in (grade_id, f"{grade_id}_answer"):
                out.append(c["index"])
        return out


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    if not isinstance(src, str):
        raise NotebookError("a cell's source is neither text nor a list of lines")
    return src


def _python_only(src: str) -> str:
    """IPython syntax is not Python: ``%magic``/``!shell`` lines become comments, a ``%%`` cell is dropped."""
    if src.lstrip().startswith("%%"):
        return "# (cell magic removed by the grader)\n"
    lines = []
    for ln in src.splitlines():
        s = ln.lstrip()
        if s.startswith(("%", "!")):
            ln = ln[: len(ln) - len(s)] + "pass  # (IPython line removed by the grader)"
        lines.append(ln)
    return "\n".join(lines)


def read_submission(path: str | Path, sha256: str) -> Submission:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NotebookError(f"cannot read {path.name}: {exc.strerror}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"{path.name} is {len(raw) >> 20} MiB; notebooks over "
                            f"{MAX_NOTEBOOK_BYTES >> 20} MiB are not graded")
    try:
        nb = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotebookError(f"{path.name} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                            f"{exc.msg})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path.name} is JSON but not a notebook (no list of cells)")
    if nb.get("nbformat", 4) != 4:
        raise NotebookError(f"{path.name} uses notebook format {nb.get('nbformat')}; save it as format 4")
    sub = Submission(path, sha256)
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
            code = _python_only(src)
            sub.cells.append({"index": i, "source": code, "grade_id": gid,
                              "keys": sorted({m.group(2) for m in ANSWER_KEY_RE.finditer(code)})})
        elif cell.get("cell_type") == "markdown" and gid:
            sub.markdown[gid] = src[:20000]
    return sub
