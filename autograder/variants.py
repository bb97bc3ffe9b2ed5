"""Per-student variants: each student's numbers, and the signed tag that binds a released
notebook to its student.

A lab declares :class:`autograder.parts.Param` objects.  :func:`variant_for` draws every
parameter from its pool with a seed derived from ``(lab, parameter, student id)`` alone
(SHA-256, no secret): the student's own ``check`` and the grader compute the same numbers,
and adding a parameter to a lab does not reshuffle the others.

``release --student ID`` writes the variant into the notebook's metadata as a *tag*:
``{"lab", "student", "params", "sig"}`` where ``sig`` is an HMAC-SHA256 under the course
key (a secret kept by the instructor, never in the repository).  The grader recomputes the
variant from the id it grades the file under and checks the tag: a notebook released to
another student, an altered tag or a missing one is *flagged* in the record, and the
answers are compared with the graded id's own numbers (so copied numbers do not score).

The course key: ``AUTOGRADER_KEY`` (the key itself), else the file named by
``AUTOGRADER_KEY_FILE``, else ``~/.config/tilelang-course/autograder.key``; ``release
--student`` creates that file (mode 0600) when none exists.  Grade on the machine that
released the notebooks, or copy the key file there.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from .parts import LabSpec

__all__ = ["VariantError", "variant_for", "variant_digest", "make_tag", "verify_tag", "course_key",
           "key_path", "TAG_KEY"]

TAG_KEY = "autograder"  # notebook.metadata[TAG_KEY]


class VariantError(ValueError):
    """No course key, or a tag that cannot be made."""


def variant_for(spec: LabSpec, student: str | None) -> dict:
    """The parameters of ``student`` (``None``: the book's defaults)."""
    if student is None:
        return spec.default_variant()
    out = {}
    for p in spec.params:
        h = hashlib.sha256(f"{spec.name}\0{p.key}\0{student}".encode("utf-8", "surrogateescape")).digest()
        out[p.key] = p.choices[int.from_bytes(h[:8], "big") % len(p.choices)]
    return spec.complete(out)


def variant_digest(variant: dict) -> str:
    return hashlib.sha256(_canonical(variant)).hexdigest()[:16]


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def key_path() -> Path:
    env = os.environ.get("AUTOGRADER_KEY_FILE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tilelang-course" / "autograder.key"


def course_key(create: bool = False) -> bytes | None:
    """The instructor's secret; ``create`` writes a new key file when none exists."""
    env = os.environ.get("AUTOGRADER_KEY")
    if env:
        return env.encode()
    path = key_path()
    try:
        text = path.read_text(encoding="ascii").strip()
        if text:
            return text.encode()
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        raise VariantError(f"course key {path}: cannot read it ({exc})") from None
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path.read_text(encoding="ascii").strip().encode()


def _sign(key: bytes, lab: str, student: str, params: dict) -> str:
    msg = _canonical({"lab": lab, "student": student, "params": params})
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def make_tag(spec: LabSpec, student: str, key: bytes) -> dict:
    params = variant_for(spec, student)
    return {"lab": spec.name, "student": student, "params": params,
            "sig": _sign(key, spec.name, student, params)}


def verify_tag(spec: LabSpec, tag, student: str, key: bytes | None) -> tuple[str, str]:
    """``(state, message)``; state is ``ok``, ``missing``, ``altered``, ``other-student``,
    ``other-lab``, ``stale`` (the lab's pools changed since release) or ``unverified``."""
    if not isinstance(tag, dict) or not tag:
        return "missing", ("the notebook carries no variant tag (it was not released with "
                           "`release --student`); its answers were compared with the numbers of "
                           f"student {student!r}")
    t_student, t_lab, params, sig = tag.get("student"), tag.get("lab"), tag.get("params"), tag.get("sig")
    if not (isinstance(t_student, str) and isinstance(t_lab, str) and isinstance(params, dict)
            and isinstance(sig, str)):
        return "altered", "the variant tag in the notebook's metadata is malformed (edited?)"
    if key is None:
        return "unverified", "no course key on this machine: the variant tag was not verified"
    try:
        good = hmac.compare_digest(sig, _sign(key, t_lab, t_student, params))
    except (TypeError, ValueError):  # params that are not JSON
        good = False
    if not good:
        return "altered", ("the variant tag does not verify under the course key (edited, or "
                           "released with another key)")
    if t_lab != spec.name:
        return "other-lab", f"the notebook was released for lab {t_lab!r}, not {spec.name!r}"
    if t_student != student:
        return "other-student", (f"the notebook was released to student {t_student!r} but is graded "
                                 f"as {student!r}; its answers were compared with {student!r}'s numbers")
    if params != variant_for(spec, student):
        return "stale", "the lab's parameters changed after this notebook was released"
    return "ok", ""
