"""Find a lab: its grading spec (``labs/<lab>/spec.py``) and its instructor notebook."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

from .parts import LabSpec

__all__ = ["LabError", "labs_dir", "available_labs", "load_lab", "spec_digest"]


class LabError(ValueError):
    """Unknown lab or broken lab directory."""


def labs_dir() -> Path:
    env = os.environ.get("AUTOGRADER_LABS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "labs"


def available_labs() -> list[str]:
    d = labs_dir()
    return sorted(p.parent.name for p in d.glob("*/spec.py")) if d.is_dir() else []


_CACHE: dict[str, tuple[LabSpec, Path]] = {}


def load_lab(name: str) -> tuple[LabSpec, Path]:
    """``(spec, instructor notebook path)`` of lab ``name``; ``LabError`` if unknown."""
    if name in _CACHE:
        return _CACHE[name]
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
        raise LabError(f"lab name {name!r}: use letters, digits, '_' or '-'")
    d = labs_dir() / name
    spec_file = d / "spec.py"
    if not spec_file.is_file():
        raise LabError(f"unknown lab {name!r}; available: {', '.join(available_labs()) or 'none'}")
    mod_spec = importlib.util.spec_from_file_location(f"_autograder_lab_{name}", spec_file)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, LabSpec):
        raise LabError(f"{spec_file}: defines no SPEC (autograder.parts.LabSpec)")
    _CACHE[name] = (spec, d / f"{name}.ipynb")
    return _CACHE[name]


def spec_digest(name: str) -> str:
    """Hash of the lab's spec file: a rerun regrades everything when the spec changed."""
    spec_file = labs_dir() / name / "spec.py"
    return hashlib.sha256(spec_file.read_bytes()).hexdigest()[:16]


def find_part(grade_id: str):
    """``(lab name, part)`` of the part with this grade_id, searching every lab."""
    for lab in available_labs():
        spec, _ = load_lab(lab)
        for p in spec.parts:
            if p.grade_id == grade_id:
                return lab, p
    raise LabError(f"no lab has a part {grade_id!r}")
