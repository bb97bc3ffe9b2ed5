"""Helpers of ``test_messages_zh``: what counts as English left in a Chinese message, and the
message templates of the grader's student-facing code, found by reading its source.

Not a test module (no ``test_`` prefix): ``test_messages_zh`` loads it by path.
"""
from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# ----------------------------------------------------------------------------- untranslated English
#: English technical terms that may stand, in parentheses, beside their Chinese (the gloss the
#: course gives once for a technical term).  Only these: a parenthesised English phrase that is
#: not one of them still counts as untranslated.
GLOSSES = ("segmentation fault", "bus error", "abort", "ledger")
#: English words a Chinese message may keep as they are: names (of tools, formats, the course's
#: objects) and keywords the student types; any other word standing alone counts as untranslated
LOANWORDS = {"kernel", "notebook", "shell", "source", "cells", "value", "None", "await", "extern", "jit", "tl",
             "tilelang", "nvcc", "bisheng", "wgmma", "mbarrier", "block", "warp", "shuffle", "err", "Python", "Jupyter",
             "Unicode", "nbgrader", "Ascend"}
#: unit tokens that look like English words
UNIT_WORDS = {"us", "ms", "ns", "s", "x"}
_WIDE = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"  # CJK and full-width punctuation
_QUOTED = re.compile(r"`[^`\n]*`|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])|\"[^\"\n]*\"")
_WORD = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")
# an exception raised by the student's code or by Python, with its message: "KeyError: 'x'"; the
# grader's own (PermissionError: sandbox: ..., NotAllowedInGradedCell: ...) are not excused
_EXCEPTION = re.compile(rf"\b[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?<!NotAllowedInGradedCell): "
                        rf"(?!sandbox:)[^{_WIDE}]*?(?= \(line \d+\)|[{_WIDE}]|$)")


def untranslated(text: str, keep=(), exceptions: bool = False) -> list[str]:
    """The English left in ``text`` (a message rendered by ``zh``): every run of two or more
    English words, and every English word standing alone that is not one of :data:`LOANWORDS`.

    A *word* is a token of two or more letters (``'`` and ``-`` inside allowed) that is not an
    all-capitals acronym or a CamelCase name (``GPU``, ``SIGKILL``, ``MemoryError``) nor a unit
    (``us``, ``ms``).  A *run* is two or more words with no Chinese (nor full-width punctuation)
    between them; anything else between them -- numbers, identifiers (``sm_90a``, ``N=4096``,
    ``T.Pipelined``, ``GB/s``), ASCII punctuation -- does not end it.  Not words, being no
    fixed phrase of the grader's: each string of ``keep`` (the variable parts the message
    carries: a parameter name, the student's own text, a hint ...); text in quotes or backticks
    (code, a unit, a key: ``'ms'``, ```!ls```, ``"value"``); a term of :data:`GLOSSES` in
    parentheses; with ``exceptions``, the message of an exception that is not the grader's own
    (``ZeroDivisionError: division by zero``; ``PermissionError: sandbox: ...`` and
    ``NotAllowedInGradedCell: ...`` are the grader's and are read)."""
    gap = " \x01 "  # what a removed part leaves: not a word, and it does not end a run
    for k in sorted({str(k) for k in keep if str(k)}, key=len, reverse=True):  # whole tokens only
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(k)}(?![A-Za-z0-9_])", gap, text)
    for g in GLOSSES:
        text = re.sub(rf"[（(]{re.escape(g)}[）)]", gap, text)
    if exceptions:
        text = _EXCEPTION.sub(gap, text)
    text = _QUOTED.sub(gap, text)
    left: list[str] = []
    for stretch in re.split(f"[{_WIDE}]+", text):
        run = [core for core in (tok.strip(".,;:!?()[]{}<>|*'\"") for tok in stretch.split()) if _is_word(core)]
        if len(run) > 1:
            left.append(" ".join(run))
        elif run and run[0] not in LOANWORDS:
            left.append(run[0])
    return left


def _is_word(core: str) -> bool:
    return (_WORD.fullmatch(core) is not None and len(core) > 1 and core not in UNIT_WORDS
            and not core.isupper() and not re.search(r"[a-z][A-Z]", core))


# ----------------------------------------------------------------------------- templates from the source
#: the grader's modules whose strings reach a student: verdicts, notices, cell errors, kernel findings
SOURCES = ("autograder/parts.py", "autograder/units.py", "autograder/check.py", "autograder/grade.py",
           "autograder/extract.py", "autograder/variants.py", "autograder/runner.py", "autograder/sandbox.py",
           "autograder/kernelgrade/rubric.py", "autograder/kernelgrade/pipeline.py",
           "autograder/kernelgrade/worker.py", "autograder/kernelgrade/evaluate.py",
           "autograder/kernelgrade/tirsafe.py", "autograder/kernelgrade/structure.py",
           "autograder/kernelgrade/selfcheck.py")
#: calls whose argument (position, or keyword) is a message a student reads
MESSAGE_ARGS = {"Verdict": (1, "message"), "_Bad": (1, "message"), "NotebookError": (0, None),
                "TirError": (0, None), "UnitError": (0, None), "NotAllowedInGradedCell": (0, None),
                "_note": (0, None), "PermissionError": (0, None)}
#: lists of notices: ``<name>.append(message)``
NOTICE_LISTS = re.compile(r"(problems|notes|flags|bits)\W*$")
#: notices that are shown only inside a sentence: (file, list) -> the sentence
LIST_CONTEXTS = {("tirsafe.py", "problems"): "the kernel uses what the grader does not build: {} (host calls, pasted "
                                             "C source and non-identifier extern names are refused)"}
#: findings shown only inside a sentence: key -> the sentences
KEY_CONTEXTS = {"__unserializable__": ("the answer is not plain data ({})", "value: expected a finite number, got {}")}
#: keys of the findings (worker events, records) whose value is shown to the student
MESSAGE_KEYS = {"error", "found", "note", "timeout", "crash", "fatal", "missing", "__unserializable__"}
#: the statuses of a verdict (a table from one to another is no message)
STATUSES = {"right", "wrong", "malformed", "missing", "timeout", "error", "manual", "partial", "skipped", "flagged"}
#: functions whose return value is a fragment of a student's message (how a process ended,
#: what a structure check found) -- each rendered inside the sentences that carry it
FRAGMENT_RETURNS = {
    "_exit_text": ("the process {} while running this cell", "the process {} before running the cells",
                   "the kernel elaboration process {}: 7", "the evaluation process {}: 7", "the evaluation {}: 7"),
}
#: functions that return ``(state, message)``: the message, and the sentence its state puts it in
TUPLE_RETURNS = {
    "verify_tag": lambda state: "{}" if state in ("ok", "unverified") else "flagged: {}",  # grade.py
    "student_id": lambda state: "{}",  # the note on a file name, a notice of its own
}
#: module-level constants that are messages
MESSAGE_CONSTANTS = re.compile(r"^(NEEDS_GPU|\w+_MSG)$")
#: at most this many variants of one template (the choices of its parts multiply)
MAX_VARIANTS = 400


class Hole:
    """A variable part of a template (an f-string field, a name the scanner cannot resolve)."""

    def __init__(self, quoted: bool = False):
        self.quoted = quoted


# one filling per try: a number, a lower-case letter, an identifier; a template passes when one fits
FILLINGS = ("7", "x", "n_7")


@dataclass
class Template:
    path: str
    line: int
    parts: tuple  # str | Hole
    context: str = "{}"

    def render(self, fill: str) -> str:
        body = "".join(p if isinstance(p, str) else (f"'{fill}'" if p.quoted else fill) for p in self.parts)
        return self.context.format(body)

    @property
    def shown(self) -> str:
        body = "".join(p if isinstance(p, str) else ("{!r}" if p.quoted else "{}") for p in self.parts)
        return f"{self.path}:{self.line}: {self.context.format(body)!r}"


def _dimension_names():
    from autograder.units import DIMENSION_NAMES

    return list(DIMENSION_NAMES.values())


class _Scanner:
    def __init__(self, path: str, source: str | None = None):
        self.path = path
        self.tree = ast.parse(source if source is not None else (ROOT / path).read_text(encoding="utf-8"))
        self.functions = {n.name: n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)}
        self.module_env = self._env(self.tree.body)
        self.found: list[Template] = []

    def _env(self, body) -> dict[str, list]:
        """What each module-level name is assigned."""
        env: dict[str, list] = {}
        for n in body:
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        env.setdefault(t.id, []).append(("=", n.value))
        return env

    def _function_env(self, fn) -> dict:
        """What each name of ``fn`` is assigned (``a = ...``, ``a, b = x, y``) or added (``a += ...``)."""
        env: dict[str, list] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        env.setdefault(t.id, []).append(("=", n.value))
                    elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple) and len(t.elts) == len(n.value.elts):
                        for tt, vv in zip(t.elts, n.value.elts):
                            if isinstance(tt, ast.Name):
                                env.setdefault(tt.id, []).append(("=", vv))
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Name):
                env.setdefault(n.target.id, []).append(("+=", n.value))
        return env

    # -- expressions -> lists of part tuples
    def cands(self, e, env, depth=0) -> list[tuple]:
        hole = [(Hole(),)]
        if depth > 6:
            return hole
        if isinstance(e, ast.Constant):
            return [(e.value,)] if isinstance(e.value, str) else hole
        if isinstance(e, ast.JoinedStr):
            seqs = []
            for v in e.values:
                if isinstance(v, ast.Constant):
                    seqs.append([(v.value,)])
                elif v.format_spec is not None:
                    seqs.append([(Hole(),)])
                else:
                    inner = self.cands(v.value, env, depth + 1)
                    if v.conversion == ord("r"):
                        inner = [(Hole(quoted=True),) if all(isinstance(p, Hole) for p in c) else (repr(_flat(c)),)
                                 for c in inner]
                    seqs.append(inner)
            return _product(seqs)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            return _product([self.cands(e.left, env, depth + 1), self.cands(e.right, env, depth + 1)])
        if isinstance(e, ast.IfExp):
            return self.cands(e.body, env, depth + 1) + self.cands(e.orelse, env, depth + 1)
        if isinstance(e, ast.BoolOp) and isinstance(e.op, ast.Or):
            return [c for v in e.values for c in self.cands(v, env, depth + 1)]
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id == "DIMENSION_NAMES":
            return [(d,) for d in _dimension_names()]
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Dict):
            return [c for v in e.value.values for c in self.cands(v, env, depth + 1)]
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get" and len(e.args) == 2:
            out = self.cands(e.args[1], env, depth + 1)
            table = e.func.value
            if isinstance(table, ast.Name):  # a module-level table: _KIND.get(mode, "not a regular file")
                table = next((v for op, v in self.module_env.get(table.id, []) if isinstance(v, ast.Dict)), table)
            if isinstance(table, ast.Dict):
                out = [c for v in table.values for c in self.cands(v, env, depth + 1)] + out
            else:
                out = out + hole
            return out
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in self.functions and depth < 3:
            rets = [r.value for r in ast.walk(self.functions[e.func.id]) if isinstance(r, ast.Return) and r.value]
            if rets and all(_stringish(r) for r in rets):
                fenv = self._function_env(self.functions[e.func.id])
                return [c for r in rets for c in self.cands(r, fenv, depth + 1)]
            return hole
        if isinstance(e, ast.Name):
            defs = env.get(e.id) or self.module_env.get(e.id)
            if not defs or not any(_stringish(v) for _, v in defs):
                return hole
            base = [c for op, v in defs if op == "=" and _stringish(v) for c in self.cands(v, env, depth + 1)]
            if any(op == "=" and not _stringish(v) for op, v in defs):
                base.append((Hole(),))  # msg = str(exc); msg += " (the scratch directory is full ...)"
            for op, v in defs:
                if op == "+=":
                    base = base + _product([base, self.cands(v, env, depth + 1)])
            return base[:MAX_VARIANTS]
        return hole

    def add(self, node, e, env, context="{}"):
        for c in self.cands(e, env):
            if any(isinstance(p, str) and re.search(r"[A-Za-z]{2}", p) for p in c):
                self.found.append(Template(self.path, node.lineno, _merge(c), context))

    def scan(self) -> list[Template]:
        for name, vals in self.module_env.items():
            if MESSAGE_CONSTANTS.match(name):
                for _, v in vals:
                    self.add(v, v, self.module_env)
        for fn in [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.Module))]:
            env = self._function_env(fn) if isinstance(fn, ast.FunctionDef) else self.module_env
            nodes = (ast.walk(fn) if isinstance(fn, ast.FunctionDef)
                     else [n for stmt in fn.body if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
                           for n in ast.walk(stmt)])
            for n in nodes:
                self._visit(n, env, fn)
        # a function nested in another is walked with both: keep each template once
        seen, out = set(), []
        for t in self.found:
            key = (t.line, t.shown)
            if key not in seen:
                seen.add(key)
                out.append(t)
        return out

    def _visit(self, n, env, fn):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in MESSAGE_ARGS and (name != "PermissionError" or self.path.endswith("runner.py")):
                pos, kw = MESSAGE_ARGS[name]
                if len(n.args) > pos:
                    self.add(n, n.args[pos], env)
                for k in n.keywords:
                    if k.arg == kw:
                        self.add(n, k.value, env)
            if name == "append" and isinstance(n.func, ast.Attribute) and n.args:
                m = NOTICE_LISTS.search(ast.unparse(n.func.value))
                if m:
                    self.add(n, n.args[0], env, LIST_CONTEXTS.get((Path(self.path).name, m.group(1)), "{}"))
            if name == "setdefault" and len(n.args) == 2 and _key(n.args[0]) in MESSAGE_KEYS:
                self.add(n, n.args[1], env)
            for k in n.keywords:
                if k.arg in ("note",):
                    self.add(n, k.value, env)
        elif isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if k is not None and _key(k) in MESSAGE_KEYS and _key(v) not in STATUSES:  # {"timeout": "timeout"}
                    for ctx in KEY_CONTEXTS.get(_key(k), ("{}",)):
                        self.add(n, v, env, ctx)
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Subscript) and _key(t.slice) in MESSAGE_KEYS:
                    self.add(n, n.value, env)
        elif isinstance(n, ast.Return) and n.value is not None and isinstance(fn, ast.FunctionDef):
            if fn.name in FRAGMENT_RETURNS:
                for ctx in FRAGMENT_RETURNS[fn.name]:
                    self.add(n, n.value, env, ctx)
            elif fn.name in TUPLE_RETURNS and isinstance(n.value, ast.Tuple) and len(n.value.elts) == 2:
                state = _key(n.value.elts[0])
                self.add(n, n.value.elts[1], env, TUPLE_RETURNS[fn.name](state))
            elif self.path.endswith("structure.py") and isinstance(n.value, ast.Tuple) and len(n.value.elts) == 2:
                # an expectation's (ok, what was found), shown after "sm_90a code: [ok] " or "[--] "
                self.add(n, n.value.elts[1], env, "sm_90a code: [--] {}")


def _key(e) -> str | None:
    """The key a subscript or dict entry names (either branch of ``"a" if c else "b"``)."""
    if isinstance(e, ast.IfExp):
        return next((k for k in (_key(e.body), _key(e.orelse)) if k in MESSAGE_KEYS), None)
    return e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None


def _stringish(e) -> bool:
    """Could ``e`` be text the scanner can read (a literal, an f-string, a sum, a choice, a lookup)?"""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str)
    if isinstance(e, ast.Call):
        return isinstance(e.func, ast.Name) or (isinstance(e.func, ast.Attribute) and e.func.attr == "get")
    if isinstance(e, ast.Subscript):
        return isinstance(e.value, ast.Dict)
    return isinstance(e, (ast.JoinedStr, ast.BinOp, ast.IfExp, ast.BoolOp))


def _flat(c) -> str:
    return "".join(p if isinstance(p, str) else "7" for p in c)


def _product(seqs) -> list[tuple]:
    out = []
    for combo in itertools.islice(itertools.product(*seqs), MAX_VARIANTS):
        out.append(tuple(p for part in combo for p in part))
    return out


def _merge(c) -> tuple:
    out: list = []
    for p in c:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return tuple(out)


def templates(sources=SOURCES) -> list[Template]:
    """Every message template of ``sources`` (paths under the repository root)."""
    return [t for path in sources for t in _Scanner(path).scan()]


def templates_of(source: str, name: str = "module.py") -> list[Template]:
    """The message templates of a piece of source text (the scanner's own tests)."""
    return _Scanner(name, source).scan()


def english_left(t: Template, zh) -> list[str]:
    """What stays English of ``t`` rendered by ``zh``, with the filling that leaves least (a
    template passes when its variable parts, filled with a number, a letter or an identifier --
    whichever its phrase expects -- leave no English)."""
    return min((untranslated(zh(t.render(f))) for f in FILLINGS), key=len)
