"""``check(ANSWER, grade_id)``: the student's self-check, called from the notebook.

It says right / wrong / malformed (with a hint and the part's tolerance) for one part,
or for every part when no grade_id is given; it never prints the expected value.
Manually graded parts are only listed.  Function answers are called here on the same
inputs the grader uses.

A released notebook binds ``check`` to its lab and student once, in its set-up cell::

    from autograder import checker
    check = checker("pytorch", "alice")   # the numbers of student alice

``strict=True`` raises ``AssertionError`` unless the part is right: the hidden test cells
nbgrader restores when it autogrades use it, so ``nbgrader autograde`` scores a wrong or
missing answer 0 (``check`` itself never raises otherwise).  Under ``strict`` (without
``points``) it returns ``None``: a grade cell's output is what nbgrader tries to read as a
score, so a passing hidden test must output nothing.  Otherwise it returns a
:class:`Verdicts` dict, which Jupyter does not echo after the printed lines.

Kernel parts (:mod:`autograder.kernelgrade`) can earn part of their points (speed levels,
structure checks).  Their hidden tests end with ``check(..., strict=True, points=True)``,
which returns the points earned as a number -- nbgrader takes a grade cell's numeric value
as partial credit -- and raises (0 points) for anything that earned nothing.  A kernel part
that needs a GPU is ``skipped`` on a machine without one; under ``strict`` that raises too:
``nbgrader autograde`` of a kernel lab must run on a GPU machine, and where it cannot, the
correctness and speed parts score 0 with the message "needs a GPU" rather than unearned
points (``python -m autograder grade`` reports them as not graded instead).
"""
from __future__ import annotations

from typing import Any

from .labs import find_part, load_lab
from .messages import zh
from .parts import Part, Verdict, compare

__all__ = ["check", "check_part", "checker", "Verdicts"]

_SYMBOL = {"right": "✔ 正确", "wrong": "✘ 错误", "malformed": "⚠ 格式不对", "missing": "… 尚未作答",
           "manual": "✎ 人工批改", "error": "✘ 出错",
           "partial": "◐ 部分得分", "skipped": "… 需要 GPU，本机未评", "flagged": "⚑ 已标记"}  # kernel labs


class Verdicts(dict):
    """``{grade_id: status}``, as returned by :func:`check`.  A plain dict for code, but shown
    as nothing when it is the value of a notebook cell: ``check`` has already printed each line."""

    def _ipython_display_(self) -> None:  # IPython: display nothing (no execute_result)
        return None


def _normalise(value: Any) -> Any:
    from .runner import _safe  # the same conversion the grader applies to sandboxed answers

    return _safe(value)


def _function_outputs(part: Part, fn: Any) -> Any:
    if not callable(fn):
        return {"not_callable": True, "type": type(fn).__name__}
    outs = []
    for args in part.probes:
        try:
            outs.append({"ok": True, "value": _normalise(fn(*args))})
        except Exception as exc:
            outs.append({"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
    return outs


def check_part(answers: dict, part: Part, variant: dict) -> Verdict:
    if not part.auto:
        return Verdict("manual", "graded by hand")
    if part.kind == "kernel":  # kernel labs: compile, read and (on a GPU) test the factory here
        from .kernelgrade.selfcheck import check_kernel_part

        return check_kernel_part(answers, part, variant)
    if not isinstance(answers, dict) or part.grade_id not in answers:
        return Verdict("missing", f'ANSWER["{part.grade_id}"] is not assigned yet')
    raw = answers[part.grade_id]
    if part.kind == "function":
        ans = _function_outputs(part, raw)
    else:
        if callable(raw):
            return Verdict("malformed", "expected data, got a function")
        ans = _normalise(raw)
    try:
        ref = part.reference(variant)
    except Exception as exc:  # pragma: no cover - the course environment is broken
        return Verdict("error", f"cannot compute the check ({type(exc).__name__}); is the course env active?")
    v = compare(part, ans, ref)
    v.detail = ""  # never shown here
    return v


def check(answers: dict, grade_id: str | None = None, lab: str | None = None, *,
          student: str | None = None, strict: bool = False, quiet: bool = False,
          points: bool = False) -> "Verdicts | float | None":
    """Print and return the verdict of one part (or of every part of the lab).

    ``student``: whose numbers (``None``: the book's).  ``strict``: raise ``AssertionError``
    unless every checked auto-graded part is right (kernel parts: unless they earned points).
    ``quiet``: print nothing.  ``points``: return the points earned instead of the verdicts
    (nbgrader's partial credit).  Returns ``None`` under ``strict`` without ``points`` (a
    hidden test cell outputs nothing), else :class:`Verdicts` (not echoed by Jupyter).
    """
    from .variants import variant_for

    if grade_id is None:
        spec, _ = load_lab(lab or "pytorch")
        parts = list(spec.parts)
    elif lab:
        spec, _ = load_lab(lab)
        parts = [spec.part(grade_id)]
    else:
        labname, part = find_part(grade_id)
        spec, _ = load_lab(labname)
        parts = [part]
    variant = variant_for(spec, student)
    out, bad, earned = {}, [], 0.0
    for p in parts:
        v = check_part(answers, p, variant)
        out[p.grade_id] = v.status
        earned += v.score if v.status in ("right", "partial") else 0.0
        msg = "" if v.status in ("right", "manual") else f" — {zh(v.message)}"  # the student reads Chinese
        if v.status == "wrong" and p.tolerance:
            msg += f"（容差：{p.tolerance}）"
        if not quiet:
            print(f"{p.grade_id}: {_SYMBOL.get(v.status, v.status)}{msg}")
        if v.status not in ("right", "manual") and not (v.status == "partial" and v.score > 0):
            bad.append(f"{p.grade_id}: {v.status}{msg}")
    if strict and bad:
        raise AssertionError("; ".join(bad))
    if points:
        return round(earned, 6)
    return None if strict else Verdicts(out)


def checker(lab: str, student: str | None = None):
    """``check`` bound to one lab and one student's numbers (the notebook's set-up cell)."""
    spec, _ = load_lab(lab)

    def bound(answers: dict, grade_id: str | None = None, *, strict: bool = False,
              quiet: bool = False, points: bool = False) -> "Verdicts | float | None":
        return check(answers, grade_id, spec.name, student=student, strict=strict, quiet=quiet, points=points)

    bound.lab, bound.student = spec.name, student  # type: ignore[attr-defined]
    bound.__doc__ = check.__doc__
    return bound
