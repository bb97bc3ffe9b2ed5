"""The grading spec of a lab (parts, points, kinds, tolerances) and the comparison of
one answer with its reference.

A lab's ``spec.py`` builds a :class:`LabSpec` of :class:`Part` objects.  Each part
has a ``reference`` callable computing the expected answer *in the grader's process*
(for the ``pytorch`` lab by calling ``ledger``); it is never written to a file the student
sees and never sent to the sandbox.  Function parts also carry ``probes``: the inputs the
grader sends to the sandbox, where the student's function is called on them.

Per-student variants: a lab declares :class:`Param` objects (an exercise's sizes, dtypes
...), each with the book's number as ``default`` and a pool of ``choices``.  A variant is
a flat dict ``{"E5.M": 4096, ...}`` (:mod:`autograder.variants` draws it from the student
id); every ``reference`` is called with the variant, and prompts may name a parameter as
``{{E5.M}}``.

Answer kinds (what the student assigns to ``ANSWER[grade_id]``):

``quantity``  ``{"value": 42.2, "unit": "FLOP/B"}``; relative tolerance after unit conversion
``number``    a plain number; relative (and optional absolute) tolerance
``choice``    one string out of ``options``; exact after normalisation
``set``       a list/set of strings out of ``options`` (or free strings); exact set equality
``table``     ``{row: value}`` (values numbers, strings or nested dicts); every cell must match
``mapping``   a dict compared whole after normalisation; no message names its keys
``function``  a function; called on ``probes``, each output ``{field: number}`` compared
``manual``    free text in a markdown cell, graded by hand (never auto-scored)
``kernel``    a TileLang kernel factory, graded by :mod:`autograder.kernelgrade` (the
              ``reference`` names the task and the aspect; :func:`compare` never sees it)
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .units import DIMENSION_NAMES, UnitError, parse_unit

__all__ = ["Part", "LabSpec", "Verdict", "compare", "KINDS", "SpecError", "unserializable"]

KINDS = ("quantity", "number", "choice", "set", "table", "mapping", "function", "manual",
         "kernel")  # kernel: autograder.kernelgrade

RIGHT, WRONG, MALFORMED, MISSING = "right", "wrong", "malformed", "missing"


class SpecError(ValueError):
    """A lab spec that is inconsistent (unknown kind, duplicate grade_id ...)."""


@dataclass(frozen=True)
class Part:
    grade_id: str
    exercise: str  # "E3"
    points: float
    kind: str
    prompt: str  # one line (Chinese) shown in feedback and the notebook
    reference: Callable[[dict], Any] | None = None  # reference(variant), computed at grading time
    unit: str = ""  # quantity: the unit the reference is computed in
    rel_tol: float = 0.01
    abs_tol: float = 0.0
    options: tuple[str, ...] = ()
    probes: tuple[tuple, ...] = ()  # function: argument tuples sent to the sandbox
    fields: tuple[str, ...] = ()  # function: output fields compared
    stub: str = ""  # the line the released notebook shows in place of the solution
    hint: str = ""  # shown when wrong (never the expected value)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SpecError(f"part {self.grade_id}: unknown kind {self.kind!r}")
        if not re.fullmatch(r"[a-z0-9_]+", self.grade_id):
            raise SpecError(f"grade_id {self.grade_id!r}: use lower-case letters, digits, '_'")
        if self.kind != "manual" and self.reference is None:
            raise SpecError(f"part {self.grade_id}: auto-graded part without a reference")
        if self.kind == "function" and not self.probes:
            raise SpecError(f"part {self.grade_id}: function part without probes")
        if self.kind == "quantity":
            parse_unit(self.unit)
        if self.points <= 0:
            raise SpecError(f"part {self.grade_id}: points must be positive")

    @property
    def auto(self) -> bool:
        return self.kind != "manual"

    def prompt_for(self, variant: dict | None) -> str:
        """The prompt with the variant's numbers in place of ``{{E5.M}}``."""
        return render(self.prompt, variant or {})

    @property
    def tolerance(self) -> str:
        """How close an answer must be, in the words shown to the student (Chinese)."""
        if self.kind == "kernel":  # the task's own tolerance for correctness; none for speed and structure
            return str(getattr(self.reference, "tolerance_text", "") or "")
        if self.kind in ("choice", "set", "mapping", "manual"):
            return "精确匹配" if self.kind != "manual" else ""
        rel = f"相对误差 ≤ {_pct(self.rel_tol)}" if self.rel_tol > 0 else ""
        ab = f"绝对误差 ≤ {self.abs_tol:g}" if self.abs_tol > 0 else ""
        if self.kind == "quantity" and ab:
            ab += f" {self.unit}"
        if rel and ab:
            text = f"{rel} 或 {ab}"
        else:
            text = rel or ab or "精确相等"
        if self.kind == "table":
            text = "每一格 " + text + "（文字格须精确匹配）"
        elif self.kind == "function":
            text = "每个输入上每个字段 " + text
        elif self.kind == "quantity":
            text += "，按你写的单位换算后比较"
        return text


def _pct(x: float) -> str:
    return f"{x * 100:.6g}%"


_PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9_]+\.[A-Za-z0-9_]+)\}\}")


def render(text: str, variant: dict) -> str:
    """Replace ``{{E5.M}}`` by the variant's value (unknown names are an error)."""
    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in variant:
            raise SpecError(f"placeholder {{{{{key}}}}} names no parameter of the lab")
        return _show(variant[key])

    return _PLACEHOLDER.sub(sub, text)


def _show(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@dataclass(frozen=True)
class Param:
    """One per-student parameter of an exercise: ``E5.M`` drawn from ``choices``.

    ``default`` is the number the book prints (its published answer uses it); the
    instructor notebook, ``release`` without ``--student`` and nbgrader use the defaults.
    ``choices`` should not contain the default, so that no student is asked the book's
    question.
    """
    key: str  # "E5.M"
    default: Any
    choices: tuple
    label: str = ""  # what it is (Chinese), shown beside the value in the notebook

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]+\.[A-Za-z0-9_]+", self.key):
            raise SpecError(f"parameter {self.key!r}: write it as EXERCISE.NAME, e.g. E5.M")
        if not self.choices:
            raise SpecError(f"parameter {self.key}: no choices")
        if not all(isinstance(c, (int, float, str)) and not isinstance(c, bool) for c in (self.default, *self.choices)):
            raise SpecError(f"parameter {self.key}: values must be numbers or strings")


@dataclass(frozen=True)
class LabSpec:
    name: str
    title: str
    parts: tuple[Part, ...]
    cell_timeout: float = 10.0
    notebook_timeout: float = 60.0
    memory_mb: int = 1024
    scratch_mb: int = 64  # the sandbox's writable scratch directory (a size-limited tmpfs)
    params: tuple[Param, ...] = ()  # per-student variants (see Param)
    derive: Callable[[dict], dict] | None = None  # values that follow from the drawn ones (E7.S2 = 2 E7.S)
    sandbox: Any = None  # autograder.sandbox.SandboxPolicy: extra read-only paths, device nodes

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for p in self.parts:
            if p.grade_id in seen:
                raise SpecError(f"duplicate grade_id {p.grade_id}")
            seen.add(p.grade_id)
        keys = [p.key for p in self.params]
        if len(set(keys)) != len(keys):
            raise SpecError("duplicate parameter keys")
        for p in self.parts:  # every placeholder names a declared parameter
            render(p.prompt, self.default_variant())

    def default_variant(self) -> dict:
        """The book's numbers: the instructor notebook, nbgrader, ``grade --common``."""
        return self.complete({p.key: p.default for p in self.params})

    def complete(self, drawn: dict) -> dict:
        """The drawn parameters plus the derived ones."""
        out = dict(drawn)
        if self.derive is not None:
            out.update(self.derive(dict(drawn)))
        return out

    def part(self, grade_id: str) -> Part:
        for p in self.parts:
            if p.grade_id == grade_id:
                return p
        raise KeyError(grade_id)

    @property
    def exercises(self) -> list[str]:
        out: list[str] = []
        for p in self.parts:
            if p.exercise not in out:
                out.append(p.exercise)
        return out

    @property
    def auto_points(self) -> float:
        return sum(p.points for p in self.parts if p.auto)

    def probes(self) -> dict[str, list[list]]:
        """What the sandbox needs: function parts and their inputs (no references)."""
        return {p.grade_id: [list(a) for a in p.probes] for p in self.parts if p.kind == "function"}


@dataclass
class Verdict:
    status: str  # right / wrong / malformed / missing / timeout / error / manual
    message: str  # shown to the student: never contains the expected value
    detail: str = ""  # instructor only: expected value, raw answer
    score: float = 0.0

    def to_json(self) -> dict:
        return {"status": self.status, "message": self.message, "detail": self.detail,
                "score": self.score}


# --------------------------------------------------------------------------- helpers
def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def _close(got: float, want: float, rel: float, abs_: float) -> bool:
    return abs(got - want) <= max(abs_, rel * abs(want))


def _norm(s: Any) -> str:
    return re.sub(r"\s+", " ", str(s)).strip().lower()


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)


class _Bad(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def unserializable(x: Any) -> str | None:
    """What the sandbox's marker says (``{"__unserializable__": "..."}``), else None."""
    if isinstance(x, dict) and set(x) == {"__unserializable__"}:
        return str(x["__unserializable__"])
    return None


def _as_number(x: Any, what: str) -> float:
    marker = unserializable(x)
    if marker is not None:  # NaN/inf and objects are sent back as a marker, never as a dict answer
        if marker.startswith("non-finite float"):
            raise _Bad(MALFORMED, f"{what}: expected a finite number, got NaN/inf ({marker.split()[-1]})")
        raise _Bad(MALFORMED, f"{what}: expected a finite number, got {marker}")
    if isinstance(x, str):
        try:
            x = float(x.replace(",", ""))
        except ValueError:
            raise _Bad(MALFORMED, f"{what}: expected a number, got the text {x[:40]!r}") from None
    if not _is_number(x):
        raise _Bad(MALFORMED, f"{what}: expected a finite number, got {type(x).__name__}")
    return float(x)


def _quantity(part: Part, answer: Any, want: float) -> bool:
    if not isinstance(answer, dict) or "value" not in answer or "unit" not in answer:
        raise _Bad(MALFORMED, 'expected {"value": <number>, "unit": "<unit>"}')
    if answer["value"] is None:
        raise _Bad(MISSING, "not answered yet (value is None)")
    got = _as_number(answer["value"], "value")
    try:
        dim, factor = parse_unit(answer["unit"])
    except UnitError as exc:
        raise _Bad(MALFORMED, f"{exc}; write the unit as e.g. {part.unit!r}") from None
    want_dim, want_factor = parse_unit(part.unit)
    if dim != want_dim:
        raise _Bad(MALFORMED, f"wrong unit: {answer['unit']!r} is {DIMENSION_NAMES[dim]}, "
                              f"this part asks for {DIMENSION_NAMES[want_dim]}")
    return _close(got * factor, want * want_factor, part.rel_tol, part.abs_tol * want_factor)


def _choice(part: Part, answer: Any, want: str) -> bool:
    if answer is None:
        raise _Bad(MISSING, "not answered yet")
    if not isinstance(answer, str):
        raise _Bad(MALFORMED, f"expected one string, got {type(answer).__name__}")
    if part.options and _norm(answer) not in {_norm(o) for o in part.options}:
        raise _Bad(MALFORMED, f"{answer[:40]!r} is not one of the options {list(part.options)}")
    return _norm(answer) == _norm(want)


def _set(part: Part, answer: Any, want: Sequence[str]) -> bool:
    if answer is None:
        raise _Bad(MISSING, "not answered yet")
    if isinstance(answer, str) or not isinstance(answer, (list, tuple, set, frozenset)):
        raise _Bad(MALFORMED, f"expected a list or set of strings, got {type(answer).__name__}")
    if not all(isinstance(a, str) for a in answer):
        raise _Bad(MALFORMED, "every element of the set must be a string")
    got = {_norm(a) for a in answer}
    if part.options:
        allowed = {_norm(o) for o in part.options}
        extra = sorted(got - allowed)
        if extra:
            raise _Bad(MALFORMED, f"not among the options: {extra[:5]}")
    return got == {_norm(w) for w in want}


def _cell_equal(part: Part, got: Any, want: Any, where: str) -> bool:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            raise _Bad(MALFORMED, f"{where}: expected a dict, got {type(got).__name__}")
        return all([_cell_equal(part, _lookup(got, k), v, f"{where}[{k!r}]")
                    for k, v in want.items()])
    if got is _MISSING_CELL:
        raise _Bad(MALFORMED, f"{where}: missing entry")
    if isinstance(want, bool) or isinstance(want, str):
        if not isinstance(got, (str, bool)):
            raise _Bad(MALFORMED, f"{where}: expected a string, got {type(got).__name__}")
        if part.options and isinstance(got, str) and _norm(got) not in {_norm(o) for o in part.options}:
            raise _Bad(MALFORMED, f"{where}: {got[:40]!r} is not one of {list(part.options)}")
        return _norm(got) == _norm(want)
    if isinstance(want, (list, tuple, set, frozenset)):
        if not isinstance(got, (list, tuple, set, frozenset)):
            raise _Bad(MALFORMED, f"{where}: expected a list, got {type(got).__name__}")
        return sorted(_norm(g) for g in got) == sorted(_norm(w) for w in want)
    if want is None:
        return got is None
    g = _as_number(got, where)
    return _close(g, float(want), part.rel_tol, part.abs_tol)


class _MissingCell:
    pass


_MISSING_CELL = _MissingCell()


def _lookup(d: dict, k: Any) -> Any:
    if k in d:
        return d[k]
    return d.get(str(k), _MISSING_CELL)


def _table(part: Part, answer: Any, want: dict) -> tuple[bool, list[str]]:
    if answer is None:
        raise _Bad(MISSING, "not answered yet")
    if not isinstance(answer, dict):
        raise _Bad(MALFORMED, f"expected a dict {{row: value}}, got {type(answer).__name__}")
    leaves = [v for row in want for v in ((_lookup(answer, row).values() if isinstance(_lookup(answer, row), dict)
                                           else [_lookup(answer, row)]))]
    if leaves and all(v is None for v in leaves):
        raise _Bad(MISSING, "not answered yet (every entry is None)")
    if any(v is None for v in leaves):
        raise _Bad(MALFORMED, "some entries are still None: fill in every row")
    wrong: list[str] = []
    for row, w in want.items():
        got = _lookup(answer, row)
        if got is _MISSING_CELL:
            raise _Bad(MALFORMED, f"row {row!r} is missing (rows: {list(want)})")
        if isinstance(w, dict):
            if not isinstance(got, dict):
                raise _Bad(MALFORMED, f"row {row!r}: expected a dict, got {type(got).__name__}")
            for col, wv in w.items():
                gv = _lookup(got, col)
                if gv is _MISSING_CELL:
                    raise _Bad(MALFORMED, f"row {row!r}: column {col!r} is missing")
                if not _cell_equal(part, gv, wv, f"[{row!r}][{col!r}]"):
                    wrong.append(f"{row}/{col}")
        elif not _cell_equal(part, got, w, f"[{row!r}]"):
            wrong.append(str(row))
    return (not wrong), wrong


def _mapping(part: Part, answer: Any, want: dict) -> bool:
    """A dict answer compared whole.  Its keys are part of the answer, so no message names
    them (nor how many there are): a wrong or incomplete dict is just wrong."""
    if answer is None:
        raise _Bad(MISSING, "not answered yet")
    if not isinstance(answer, dict):
        raise _Bad(MALFORMED, f"expected a dict, got {type(answer).__name__}")
    if {str(k) for k in answer} != {str(k) for k in want}:
        return False
    try:
        return all(_cell_equal(part, _lookup(answer, k), v, "") for k, v in want.items())
    except _Bad:
        return False


def _function_outputs(part: Part, outputs: Any, want: list[dict]) -> tuple[bool, list[str]]:
    """``outputs`` is what the sandbox sent back: list of {"ok":..., "value"|"error":...}."""
    if outputs is None:
        raise _Bad(MISSING, "no function was assigned to this part")
    if isinstance(outputs, dict) and outputs.get("not_callable"):
        raise _Bad(MALFORMED, f"expected a function, got {outputs.get('type', '?')}")
    if not isinstance(outputs, list) or len(outputs) != len(want):
        raise _Bad(MALFORMED, "the function could not be evaluated")
    if all(isinstance(o, dict) and o.get("ok") and o.get("value") is None for o in outputs):
        raise _Bad(MISSING, "the function returns None: not written yet")
    wrong: list[str] = []
    for i, (out, w) in enumerate(zip(outputs, want)):
        args = ", ".join(_fmt(a) for a in part.probes[i])
        if not isinstance(out, dict) or not out.get("ok"):
            err = (out or {}).get("error", "?") if isinstance(out, dict) else "?"
            raise _Bad(MALFORMED, f"calling it with ({args}) raised {err}")
        got = out.get("value")
        if not isinstance(got, dict):
            raise _Bad(MALFORMED, f"with ({args}) it returned {type(got).__name__}; "
                                  f"return a dict with keys {list(part.fields)}")
        for f in part.fields:
            if f not in got:
                raise _Bad(MALFORMED, f"with ({args}) the result has no key {f!r}")
            g = _as_number(got[f], f"({args}) -> {f}")
            if not _close(g, float(w[f]), part.rel_tol, part.abs_tol):
                wrong.append(f"{f} at ({args})")
    return (not wrong), wrong


def compare(part: Part, answer: Any, reference: Any) -> Verdict:
    """Compare one extracted answer with the reference computed by the grader."""
    if part.kind == "manual":
        return Verdict("manual", "graded by hand", "")
    if part.kind == "kernel":  # graded by autograder.kernelgrade, never compared here
        raise SpecError(f"part {part.grade_id}: kernel parts are graded by autograder.kernelgrade")
    try:
        if part.kind == "quantity":
            ok, where = _quantity(part, answer, float(reference)), []
        elif part.kind == "number":
            if answer is None:
                raise _Bad(MISSING, "not answered yet")
            ok, where = _close(_as_number(answer, "answer"), float(reference),
                               part.rel_tol, part.abs_tol), []
        elif part.kind == "choice":
            ok, where = _choice(part, answer, reference), []
        elif part.kind == "set":
            ok, where = _set(part, answer, reference), []
        elif part.kind == "table":
            ok, where = _table(part, answer, reference)
        elif part.kind == "mapping":
            ok, where = _mapping(part, answer, reference), []
        elif part.kind == "function":
            ok, where = _function_outputs(part, answer, reference)
        else:  # pragma: no cover - guarded by Part
            raise SpecError(part.kind)
    except _Bad as bad:
        return Verdict(bad.status, bad.message, f"expected {_fmt(reference)}; got {_fmt(answer)[:300]}")
    detail = f"expected {_fmt(reference)}; got {_fmt(answer)[:300]}"
    if ok:
        return Verdict(RIGHT, "correct", detail, part.points)
    msg = "wrong"
    if where:
        msg += ": check " + ", ".join(where[:6]) + (" …" if len(where) > 6 else "")
    if part.hint:
        msg += f". Hint: {part.hint}"
    return Verdict(WRONG, msg, detail)
