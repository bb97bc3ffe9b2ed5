"""Find a lab: its grading spec (``labs/<lab>/spec.py``), its instructor notebook
(``labs/<lab>/<lab>.ipynb``) and, for per-student variants, its builder (``build.py``).

Labs are named by topic (``pytorch``, later ``elementwise``, ``gemm`` ...).  Old names
keep working on the command line through :data:`ALIASES` (``lab02`` is ``pytorch``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
from pathlib import Path

from .parts import LabSpec

__all__ = ["LabError", "write_readable", "nbgrader_meta", "params_literal", "labs_dir", "available_labs", "load_lab", "load_builder", "canonical_lab",
           "lab_file_digest", "find_part", "ALIASES"]

#: old lab names that still work (CLI and API) -> the topic name
ALIASES = {"lab02": "pytorch"}


class LabError(ValueError):
    """Unknown lab or broken lab directory."""


def labs_dir() -> Path:
    env = os.environ.get("AUTOGRADER_LABS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "labs"


def available_labs() -> list[str]:
    d = labs_dir()
    return sorted(p.parent.name for p in d.glob("*/spec.py")) if d.is_dir() else []


def canonical_lab(name: str) -> str:
    """The lab's directory name (``lab02`` -> ``pytorch``)."""
    return ALIASES.get(name, name)


_CACHE: dict[str, tuple[LabSpec, Path]] = {}
_LOCK = threading.RLock()


def _load_module(name: str, file: Path, what: str):
    mod_spec = importlib.util.spec_from_file_location(f"_autograder_lab_{name}_{what}", file)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def load_lab(name: str) -> tuple[LabSpec, Path]:
    """``(spec, instructor notebook path)`` of lab ``name``; ``LabError`` if unknown."""
    name = canonical_lab(name)
    with _LOCK:
        if name in _CACHE:
            return _CACHE[name]
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
            raise LabError(f"lab name {name!r}: use letters, digits, '_' or '-'")
        d = labs_dir() / name
        spec_file = d / "spec.py"
        if not spec_file.is_file():
            known = available_labs() + [f"{a} (= {t})" for a, t in ALIASES.items()]
            raise LabError(f"unknown lab {name!r}; available: {', '.join(known) or 'none'}")
        spec = getattr(_load_module(name, spec_file, "spec"), "SPEC", None)
        if not isinstance(spec, LabSpec):
            raise LabError(f"{spec_file}: defines no SPEC (autograder.parts.LabSpec)")
        if spec.name != name:
            raise LabError(f"{spec_file}: SPEC.name is {spec.name!r}, the directory is {name!r}")
        _CACHE[name] = (spec, d / f"{name}.ipynb")
        return _CACHE[name]


def load_builder(name: str):
    """The lab's ``build.py`` module (it must define ``build(variant=None)``), or ``None``."""
    name = canonical_lab(name)
    f = labs_dir() / name / "build.py"
    if not f.is_file():
        return None
    module = _load_module(name, f, "build")
    if not callable(getattr(module, "build", None)):
        raise LabError(f"{f}: defines no build(variant=None)")
    return module


def lab_file_digest(name: str) -> str:
    """Hash of the lab's spec file: a rerun regrades everything when the spec changed."""
    spec_file = labs_dir() / canonical_lab(name) / "spec.py"
    return hashlib.sha256(spec_file.read_bytes()).hexdigest()[:16]


def find_part(grade_id: str):
    """``(lab name, part)`` of the part with this grade_id, searching every lab."""
    for lab in available_labs():
        spec, _ = load_lab(lab)
        for p in spec.parts:
            if p.grade_id == grade_id:
                return lab, p
    raise LabError(f"no lab has a part {grade_id!r}")


def nbgrader_meta(gid: str, *, solution: bool, grade: bool, locked: bool, points: float | None = None) -> dict:
    """A cell's nbgrader metadata (schema 3) for a lab notebook the course builds."""
    m = {"grade": grade, "grade_id": gid, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


def params_literal(variant: dict) -> str:
    """A student's parameters as the Python dict literal of a lab's set-up cell, wrapped near 96 columns."""
    items = [f"{k!r}: {v!r}" for k, v in variant.items()]
    lines, cur = [], "{"
    for it in items:
        if len(cur) + len(it) > 96:
            lines.append(cur)
            cur = "     "
        cur += it + ", "
    return "\n".join(lines + [cur.rstrip(", ") + "}"])


def write_readable(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, readable by everyone (the umask's mode: mkstemp
    alone would leave a lab notebook 0600)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
