"""The Chinese the students read, produced by the grader's own code paths.

Every verdict and notice below comes out of the code that makes it for a student -- ``compare``
and ``check`` on answers of every shape, the grading of one submission (the variant tag,
unreadable files, the notebook run's stops and crashes, IPython features a graded cell may not
use), the feedback file, the kernel workers' findings and the rubric -- and is rendered by
:func:`autograder.messages.zh`.  What counts as English left over is defined in
``zh_audit.untranslated``: after the variable parts a message carries (numbers, identifiers,
quoted code and units, the student's own text and exceptions) are set aside, no run of two
English words and no lone English word outside a short list of loanwords (``kernel``,
``notebook`` ...) may remain.  A scan of the grader's source (``zh_audit.templates``) finds the
message templates themselves and renders each with placeholder values: a new or reworded
English message without its Chinese fails here, named by file and line.
"""

import importlib.util
import json
import os
import re
import signal
import sys
import types
from pathlib import Path

import pytest

from autograder.check import check
from autograder.labs import load_lab
from autograder.messages import PHRASES, zh
from autograder.parts import Part, compare

_spec = importlib.util.spec_from_file_location("_zh_audit", Path(__file__).with_name("zh_audit.py"))
A = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = A  # dataclasses look their module up
_spec.loader.exec_module(A)

_CJK = re.compile(r"[\u4e00-\u9fff]")


def student_words(*answers) -> set[str]:
    """The variable parts an answer brings into a message: its strings (and their words), its
    keys, its numbers as written (``nan``) and the names of its values' types (``却是 int``)."""
    out: set[str] = set()

    def walk(x):
        out.add(type(x).__name__)
        if isinstance(x, float):
            out.add(repr(x))  # nan, inf
        if isinstance(x, str):
            out.update([x, *x.split()])
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, (list, tuple, set, frozenset)):
            for v in x:
                walk(v)

    for a in answers:
        walk(a)
    return out


def _assert_chinese(message: str, keep=(), exceptions: bool = True, what: str = "") -> str:
    """``zh(message)``, checked: some Chinese, and no English left but the variable parts."""
    out = zh(message)
    left = A.untranslated(out, keep, exceptions=exceptions)
    only_theirs = exceptions and not A._EXCEPTION.sub("", out).strip()  # the student's exception, nothing else
    assert not left and (_CJK.search(out) or only_theirs), (
        f"{what}\n  English: {message!r}\n  Chinese: {out!r}\n  left: {left}")
    return out


# ----------------------------------------------------------------------------- what counts as English
def test_what_counts_as_english_left_over():
    U = A.untranslated
    assert U("正确") == [] and U("wrong。提示：看单位") == ["wrong"] and U("the kernel 没有") == ["the kernel"]
    assert U("运行这一格时进程异常结束（was killed by SIGTERM）") == ["was killed by"]
    # identifiers, numbers, units, acronyms and CamelCase names are no words; nor does one end a run
    assert U("第 1 个参数（Y）应为 float32，却是 float16") == [] and U("MemoryError：这一格超出了内存上限 (2048 MiB)") == []
    assert U("在 N=4096 上用时 12.3 us：拷贝带宽的 85 %") == [] and U("the process 7 while running") == [
        "the process while running"]
    # quoted code and units, the variable parts the caller names, glosses, loanwords
    assert U("不认识的单位 'furlongs'；单位请写成例如 'MB'") == [] and U("评分时不允许执行 shell 命令 `!ls /tmp`") == []
    assert U("错误。提示：think about the units", keep=["think about the units"]) == []
    assert U("运行这一格时进程崩溃（段错误（segmentation fault））") == [] and U("notebook 未评分") == []
    assert U("崩溃（stack smashing detected）") == ["stack smashing detected"]
    # the student's exceptions are theirs; the grader's own are read
    student = "回答它的格子（第 3 格）出错：ZeroDivisionError: division by zero（第 2 行）"
    assert U(student, exceptions=True) == [] and U(student) == ["division by zero"]
    assert U("PermissionError: sandbox: access to '/etc' is not allowed", exceptions=True)
    assert U("NotAllowedInGradedCell: %reset is not allowed in graded cells", exceptions=True)


def test_a_phrase_the_table_does_not_know_is_left_as_it_is():
    assert zh("something the table does not know") == "something the table does not know"
    assert zh("no speed points: the widget frobnicated") == "没有速度分：the widget frobnicated"
    assert A.untranslated(zh("no speed points: the widget frobnicated")) == ["the widget frobnicated"]
    for pat, _ in PHRASES:  # every entry compiles and none matches the empty message
        assert not re.search(pat, ""), pat


# ----------------------------------------------------------------------------- the templates in the source
def test_the_scan_reads_the_message_templates_of_every_student_facing_module():
    ts = A.templates()
    per_file = {p: [t for t in ts if t.path == p] for p in A.SOURCES}
    assert all(per_file.values()), [p for p, v in per_file.items() if not v]
    shown = "\n".join(t.shown for t in ts)
    for needle in ("needs a GPU: not graded on this machine", "wrong unit: {!r} is a time", "wrong. Hint: {}",
                   "the cell that answers it (cell {}) failed: {}", "flagged: the notebook was released to student",
                   "the process was killed (SIGKILL) near its memory limit", "sandbox: access to {!r}",
                   "the kernel uses what the grader does not build: string constant", "sm_90a code: {}",
                   "widest global load per thread", "the evaluation process timed out",
                   "{}: {} (the scratch directory is full: its limit is {} MiB)", "is a FIFO (named pipe)"):
        assert needle in shown, needle
    assert len(ts) > 300


def test_the_scan_names_a_new_message_that_has_no_chinese():
    source = '''
NEW_MSG = "the widget was frobnicated"

def grade(x, problems, R):
    if x:
        return Verdict("wrong", f"the kernel frobnicated {x} widgets")
    problems.append("the notebook ran past its 5 s wall-clock limit; it was stopped")
    msg = "no speed points: "
    msg += "the gizmo was blue" if x else "too slow to time"
    R["timeout"] = f"building the kernel ran past its time limit ({x:g} s)"
    raise TirError(msg)
'''
    ts = A.templates_of(source, "autograder/new.py")
    bad = {t.shown: A.english_left(t, zh) for t in ts if A.english_left(t, zh)}
    assert set(bad) == {"autograder/new.py:2: 'the widget was frobnicated'",
                        "autograder/new.py:6: 'the kernel frobnicated {} widgets'",
                        "autograder/new.py:11: 'no speed points: the gizmo was blue'"}, bad
    good = {t.shown for t in ts} - set(bad)  # and it passes the ones the table knows
    assert {"autograder/new.py:7: 'the notebook ran past its 5 s wall-clock limit; it was stopped'",
            "autograder/new.py:11: 'no speed points: too slow to time'",
            "autograder/new.py:10: 'building the kernel ran past its time limit ({} s)'"} <= good, good


def test_every_message_template_of_the_grader_reads_in_chinese():
    """The guard: a message a student can see, added or reworded in English without its Chinese
    in autograder.messages.PHRASES, fails here with its file, line and what stayed English."""
    failures = [f"{t.shown}\n    -> {zh(t.render(A.FILLINGS[0]))!r}: {left}"
                for t in A.templates() if (left := A.english_left(t, zh))]
    assert not failures, "untranslated message templates:\n" + "\n".join(failures)


# ----------------------------------------------------------------------------- analytic parts: every branch
def _p(kind, **kw):
    return Part(f"x_{kind}", "E0", 1, kind, "题目", lambda v: 0, **kw)


_NAN = {"__unserializable__": "non-finite float nan"}
_INF = {"__unserializable__": "non-finite float inf"}
_OBJ = {"__unserializable__": "Widget"}
_BIG = {"__unserializable__": "too large or too deep"}
_Q, _HINTED = _p("quantity", unit="MiB"), _p("quantity", unit="MB", hint="先把 MiB 换算成字节")
_ENGLISH_HINT = _p("number", hint="think about the units")
_TABLE = _p("table", abs_tol=0.1, options=("compute-bound", "memory-bound"))
_WANT = {512: {"f": 10.0, "g": "memory-bound"}, 4096: {"f": 20.0, "g": "compute-bound"}}
_FUNC = _p("function", probes=((1,), (2, "fp16")), fields=("flops", "bytes"))
_OUT = [{"flops": 1, "bytes": 2}, {"flops": 3, "bytes": 4}]
ANALYTIC = [  # (what, part, answer, reference, status)
    ("right", _Q, {"value": 64, "unit": "MiB"}, 64, "right"),
    ("right, converted", _Q, {"value": 67.108864, "unit": "MB"}, 64, "right"),
    ("off by a factor (GB for GiB)", _Q, {"value": 64, "unit": "MB"}, 64, "wrong"),
    ("off by a factor, with a hint", _HINTED, {"value": 2, "unit": "MB"}, 1, "wrong"),
    ("wrong, with an English hint", _ENGLISH_HINT, 3, 1, "wrong"),
    ("wrong dimension", _Q, {"value": 1, "unit": "ms"}, 64, "malformed"),
    ("wrong dimension: a rate", _Q, {"value": 1, "unit": "GB/s"}, 64, "malformed"),
    ("unknown unit", _Q, {"value": 1, "unit": "furlongs"}, 64, "malformed"),
    ("unknown prefix", _p("quantity", unit="FLOP/B"), {"value": 1, "unit": "GiFLOP/B"}, 64, "malformed"),
    ("unit not a string", _Q, {"value": 1, "unit": 3}, 64, "malformed"),
    ("NaN", _Q, {"value": _NAN, "unit": "MiB"}, 64, "malformed"),
    ("inf", _Q, {"value": _INF, "unit": "MiB"}, 64, "malformed"),
    ("text for a number", _Q, {"value": "about sixty", "unit": "MiB"}, 64, "malformed"),
    ("an object for a number", _Q, {"value": _OBJ, "unit": "MiB"}, 64, "malformed"),
    ("a list for a number", _Q, {"value": [1], "unit": "MiB"}, 64, "malformed"),
    ("too big for a number", _Q, {"value": _BIG, "unit": "MiB"}, 64, "malformed"),
    ("a function for a number", _Q, {"value": {"__unserializable__": "function"}, "unit": "MiB"}, 64, "malformed"),
    ("missing value", _Q, {"value": None, "unit": "MiB"}, 64, "missing"),
    ("a bare number for a quantity", _Q, 64, 64, "malformed"),
    ("number: missing", _p("number"), None, 1, "missing"),
    ("number: NaN", _p("number"), _NAN, 1, "malformed"),
    ("number: text", _p("number"), "one", 1, "malformed"),
    ("number: right", _p("number"), "1,000", 1000, "right"),
    ("choice: missing", _p("choice", options=("a", "b")), None, "a", "missing"),
    ("choice: not a string", _p("choice", options=("a", "b")), 3, "a", "malformed"),
    ("choice: not an option", _p("choice", options=("a", "b")), "c", "a", "malformed"),
    ("choice: wrong", _p("choice", options=("a", "b")), "b", "a", "wrong"),
    ("set: missing", _p("set", options=("a", "b")), None, ["a"], "missing"),
    ("set: a string", _p("set", options=("a", "b")), "a", ["a"], "malformed"),
    ("set: not strings", _p("set", options=("a", "b")), [1, 2], ["a"], "malformed"),
    ("set: not options", _p("set", options=("a", "b")), ["a", "zz"], ["a"], "malformed"),
    ("set: wrong", _p("set", options=("a", "b")), ["b"], ["a"], "wrong"),
    ("table: missing", _TABLE, None, _WANT, "missing"),
    ("table: not a dict", _TABLE, [1, 2], _WANT, "malformed"),
    ("table: every entry None", _TABLE, {"512": {"f": None, "g": None}, "4096": {"f": None, "g": None}}, _WANT,
     "missing"),
    ("table: some entries None", _TABLE, {"512": {"f": 1, "g": None}, "4096": {"f": 20, "g": "compute-bound"}},
     _WANT, "malformed"),
    ("table: a row missing", _TABLE, {"512": {"f": 10, "g": "memory-bound"}}, _WANT, "malformed"),
    ("table: a row not a dict", _TABLE, {"512": 3, "4096": {"f": 20, "g": "compute-bound"}}, _WANT, "malformed"),
    ("table: a column missing", _TABLE, {"512": {"f": 10}, "4096": {"f": 20, "g": "compute-bound"}}, _WANT,
     "malformed"),
    ("table: a cell not a string", _TABLE, {"512": {"f": 10, "g": 3}, "4096": {"f": 20, "g": "compute-bound"}},
     _WANT, "malformed"),
    ("table: a cell not an option", _TABLE,
     {"512": {"f": 10, "g": "io-bound"}, "4096": {"f": 20, "g": "compute-bound"}}, _WANT, "malformed"),
    ("table: a cell of text", _TABLE, {"512": {"f": "ten", "g": "memory-bound"},
                                       "4096": {"f": 20, "g": "compute-bound"}}, _WANT, "malformed"),
    ("table: wrong cells", _TABLE, {"512": {"f": 11, "g": "compute-bound"}, "4096": {"f": 20, "g": "compute-bound"}},
     _WANT, "wrong"),
    ("table: many wrong rows", _p("table"), {str(i): 0 for i in range(8)}, {i: 1 for i in range(8)}, "wrong"),
    ("table: a nested dict expected", _p("table"), {"a": 1}, {"a": {"x": 1}}, "malformed"),
    ("table: a list expected", _p("table"), {"a": 1}, {"a": ["x"]}, "malformed"),
    ("table: a missing entry", _p("table"), {"a": {"y": 1}}, {"a": {"x": 1}}, "malformed"),
    ("table: a missing nested entry", _p("table"), {"a": {"x": {}}}, {"a": {"x": {"z": 1}}}, "malformed"),
    ("mapping: missing", _p("mapping"), None, {"a": 1}, "missing"),
    ("mapping: not a dict", _p("mapping"), [1], {"a": 1}, "malformed"),
    ("mapping: wrong", _p("mapping"), {"b": 1}, {"a": 1}, "wrong"),
    ("function: none assigned", _FUNC, None, _OUT, "missing"),
    ("function: data assigned", _FUNC, {"not_callable": True, "type": "dict"}, _OUT, "malformed"),
    ("function: not evaluated", _FUNC, "garbage", _OUT, "malformed"),
    ("function: returns None", _FUNC, [{"ok": True, "value": None}] * 2, _OUT, "missing"),
    ("function: raises", _FUNC, [{"ok": False, "error": "ZeroDivisionError: division by zero"}] * 2, _OUT,
     "malformed"),
    ("function: times out", _FUNC, [{"ok": False, "error": "timeout after 2 s"}] * 2, _OUT, "malformed"),
    ("function: returns a number", _FUNC, [{"ok": True, "value": 3}] * 2, _OUT, "malformed"),
    ("function: a key missing", _FUNC, [{"ok": True, "value": {"flops": 1}}] * 2, _OUT, "malformed"),
    ("function: NaN", _FUNC, [{"ok": True, "value": {"flops": _NAN, "bytes": 2}}] * 2, _OUT, "malformed"),
    ("function: wrong", _FUNC, [{"ok": True, "value": {"flops": 1, "bytes": 2}},
                                {"ok": True, "value": {"flops": 9, "bytes": 9}}], _OUT, "wrong"),
    ("function: right", _FUNC, [{"ok": True, "value": o} for o in _OUT], _OUT, "right"),
    ("manual", _p("manual"), "我的解释", None, "manual"),
]


@pytest.mark.parametrize("what,part,answer,reference,status", ANALYTIC, ids=[c[0] for c in ANALYTIC])
def test_every_verdict_of_an_analytic_part_reads_in_chinese(what, part, answer, reference, status):
    v = compare(part, answer, reference)
    assert v.status == status, (what, v)
    keep = student_words(answer, part.hint, part.fields)  # what the student wrote, the part's field names
    out = _assert_chinese(v.message, keep=keep, what=what)
    if part.hint:
        assert part.hint in out  # the variable parts are carried over


def test_the_verdicts_keep_their_variable_parts():
    assert "'furlongs'" in zh(compare(_Q, {"value": 1, "unit": "furlongs"}, 64).message)
    assert "'MiB'" in zh(compare(_Q, {"value": 1, "unit": "furlongs"}, 64).message)
    assert zh(compare(_Q, {"value": 1, "unit": "ms"}, 64).message) == "单位的种类不对：'ms' 是时间，这一问要的是字节数"
    case = {c[0]: c for c in ANALYTIC}
    assert "512/g" in zh(compare(_TABLE, case["table: wrong cells"][2], _WANT).message)
    assert "(2, 'fp16')" in zh(compare(_FUNC, case["function: wrong"][2], _OUT).message)
    assert "先把 MiB 换算成字节" in zh(compare(_HINTED, {"value": 2, "unit": "MB"}, 1).message)


_SHAPES = {  # answers of every shape, given to every part of a lab through check()
    "nothing": lambda p: {},
    "None": lambda p: {p.grade_id: None},
    "text": lambda p: {p.grade_id: "forty-two"},
    "a number": lambda p: {p.grade_id: 42.0},
    "NaN": lambda p: {p.grade_id: float("nan")},
    "a list": lambda p: {p.grade_id: [1, "x"]},
    "a dict": lambda p: {p.grade_id: {"value": 1, "unit": "furlongs"}},
    "a wrong unit": lambda p: {p.grade_id: {"value": 1, "unit": "ms" if p.unit != "us" else "MB"}},
    "a function": lambda p: {p.grade_id: lambda *a: 1 / 0},
    "a function of nothing": lambda p: {p.grade_id: lambda: {}},
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_check_prints_chinese_for_every_part_of_the_pytorch_lab(shape, capsys):
    spec, _ = load_lab("pytorch")
    keep = set()
    for p in spec.parts:
        answers = _SHAPES[shape](p)
        keep |= student_words(answers, p.hint, *(p.fields or ()), 1.0, {"k": []})  # and the functions' results
        check(answers, p.grade_id, "pytorch")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(spec.parts)
    for ln in lines:
        gid, _, said = ln.partition(": ")
        left = A.untranslated(said, keep, exceptions=True)
        assert not left and _CJK.search(said), (shape, ln, left)


@pytest.mark.parametrize("lab", ["primer", "elementwise", "gemm"])
def test_check_of_a_kernel_lab_without_answers_prints_chinese(lab, capsys):
    spec, _ = load_lab(lab)
    check({}, lab=lab)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(spec.parts)
    for ln in lines:
        said = ln.partition(": ")[2]
        assert not A.untranslated(said) and _CJK.search(said), ln


# ----------------------------------------------------------------------------- one submission through grade.py
KEY = b"k" * 32


class _Sandbox:
    """The notebook sandbox as grade.py sees it: ``run`` gives back a prepared RunResult."""

    def __init__(self, result):
        self.result = result

    def run(self, cells, probes, limits, preset=None):
        return self.result


def _notebook(student="alice", tag="signed", edit=None) -> dict:
    """The pytorch lab's instructor notebook (every answer right) as ``student`` hands it in."""
    from autograder.variants import TAG_KEY, make_tag

    spec, source = load_lab("pytorch")
    nb = json.loads(source.read_text(encoding="utf-8"))
    if tag == "signed":
        nb["metadata"][TAG_KEY] = make_tag(spec, student, KEY)
    elif tag is not None:
        nb["metadata"][TAG_KEY] = tag
    if edit:
        edit(nb)
    return nb


def _grade_one(tmp_path, content, run=None, *, name="alice.ipynb", key=KEY, mode="student", sandbox=None,
               limits=None):
    """The record grade.py makes of one file (``content``: a notebook dict, bytes, or a callable
    that makes the file at the path it is given), the notebook run being ``run`` (or a real
    one in ``sandbox``)."""
    from autograder.grade import _Batch, _Item, limits_for, student_id
    from autograder.sandbox import RunResult

    spec, source = load_lab("pytorch")
    path = tmp_path / name if isinstance(name, str) else Path(os.fsdecode(bytes(tmp_path) + b"/" + name))
    if callable(content):
        content(path)
    else:
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    sid, note = student_id(path)
    batch = _Batch(spec, source, limits or limits_for(spec), sandbox or _Sandbox(run or RunResult(finished=True)),
                   mode, key, {})
    return batch.grade(_Item(path, sid, note, None, None, ""))


def _feedback(rec) -> list[str]:
    """What the student's feedback file says in its own words: the notices, and the explanation
    of every part (report.student_markdown, the file the student gets)."""
    from autograder.report import student_markdown

    spec, _ = load_lab("pytorch")
    md = student_markdown(rec, spec)
    said, notices = [], False
    for ln in md.splitlines():
        if ln == "**注意**":
            notices = True
        elif notices and ln.startswith("- "):
            said.append(ln[2:])
        elif ln.startswith("| `"):
            notices = False
            said.append(re.split(r"(?<!\\) \| ", ln)[3].replace("\\|", "|"))  # the 说明 column
    return said


def _spec_words(lab="pytorch") -> set[str]:
    """What a lab's spec puts into messages: its parts' hints, output fields and options."""
    spec, _ = load_lab(lab)
    return {w for p in spec.parts for w in (p.hint, *p.fields, *p.options) if w}


def _assert_feedback_chinese(rec, keep=(), what=""):
    said = [s for s in _feedback(rec) if s]
    keep = set(keep) | _spec_words()
    for s in said:
        left = A.untranslated(s, keep, exceptions=True)
        assert not left and _CJK.search(s), f"{what}: {s!r} leaves {left}"
    return said


def test_the_variant_tag_notices_read_in_chinese(tmp_path):
    from autograder.variants import _sign, make_tag, variant_for

    spec, _ = load_lab("pytorch")
    gemm, _ = load_lab("gemm")
    stale = {**variant_for(spec, "alice")}
    stale[next(iter(stale))] = -1
    cases = {
        "missing": (None, KEY), "malformed": ({"lab": 1}, KEY),
        "altered": (make_tag(spec, "alice", b"another key" * 3), KEY),
        "other-lab": (make_tag(gemm, "alice", KEY), KEY), "other-student": (make_tag(spec, "bob", KEY), KEY),
        "stale": ({"lab": "pytorch", "student": "alice", "params": stale, "sig": _sign(KEY, "pytorch", "alice", stale)},
                  KEY),
        "unverified": ("signed", None),
    }
    for state, (tag, key) in cases.items():
        rec = _grade_one(tmp_path, _notebook(tag=tag), key=key)
        assert rec["problems"], state
        assert (rec["status"] == "flagged") == (state != "unverified"), (state, rec["status"])
        said = _assert_feedback_chinese(rec, keep=["alice", "bob", "gemm", "pytorch"], what=state)
        assert len(said) == len(rec["problems"]) + len(spec.parts)
    ok = _grade_one(tmp_path, _notebook())
    assert ok["problems"] == [] and ok["variant"]["tag"] == "ok"


def _tampered(nb):
    for c in nb["cells"]:
        m = c.get("metadata", {}).get("nbgrader", {})
        if m.get("grade_id") == "e01_a":
            m["points"] = 100
        if m.get("grade_id") == "e06_c":
            m["grade_id"] = "bonus"


def _v3(path):
    cell = {"cell_type": "code", "input": 'ANSWER["e04_a"] = 1', "language": "python", "outputs": [], "metadata": {}}
    path.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                "worksheets": [{"cells": [cell], "metadata": {}}]}), encoding="utf-8")


def _sparse(path):
    with open(path, "wb") as f:
        f.truncate(21 << 20)


UNREADABLE = {  # how a file is made -> what the grader says of it
    "a FIFO": lambda p: os.mkfifo(p),
    "a directory": lambda p: p.mkdir(),
    "a symbolic link": lambda p: p.symlink_to("/etc/hostname"),
    "a dangling link": lambda p: p.symlink_to(p.parent / "nowhere"),
    "too big": _sparse,
    "not UTF-8": b"\xff\xfe{\x00",
    "not JSON": b'{"cells": [',
    "nested too deeply": b"[" * 200000,
    "not an object": b"[1, 2]",
    "no list of cells": b'{"hello": "world"}',
    "a future format": b'{"nbformat": 5, "cells": []}',
    "an old format, broken": b'{"nbformat": 3, "worksheets": 7}',
    "a cell without text": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                       "cells": [{"cell_type": "code", "source": 7}]}).encode(),
}


@pytest.mark.parametrize("what", sorted(UNREADABLE))
def test_an_unreadable_file_is_named_in_chinese(tmp_path, what):
    content = UNREADABLE[what]
    rec = _grade_one(tmp_path, content)
    assert rec["status"] == "unreadable" and rec["problems"], rec
    keep = ["alice.ipynb"] + [os.strerror(e) for e in range(1, 134)]  # the system's words for a failed open
    try:  # and the JSON parser's for a file it cannot read
        json.loads(content)
    except (json.JSONDecodeError, TypeError) as exc:
        keep.append(getattr(exc, "msg", ""))
    except (ValueError, RecursionError):
        pass
    said = _assert_feedback_chinese(rec, keep=keep, what=what)
    assert all(s.startswith(("notebook 未评分：", "由助教人工批改")) for s in said[1:]), said


def test_notices_on_the_file_name_the_format_and_the_metadata_read_in_chinese(tmp_path):
    from autograder.sandbox import RunResult

    rec = _grade_one(tmp_path, _v3, mode="common")  # converted from format 3
    assert rec["status"] == "graded" and "format 3" in rec["problems"][0]
    _assert_feedback_chinese(rec, what="format 3")
    rec = _grade_one(tmp_path, _notebook(edit=_tampered), mode="common")
    assert len(rec["problems"]) == 2, rec["problems"]
    _assert_feedback_chinese(rec, keep=["e01_a", "e06_c", "bonus"], what="metadata")
    for raw in (b"\xd5\xc5\xc8\xfd.ipynb", b"\xff\xfe\xfd.ipynb"):  # GB18030 (a name from a Chinese zip), and not
        rec = _grade_one(tmp_path, _notebook(), name=raw, mode="common")
        assert "UTF-8" in rec["problems"][0]
        _assert_feedback_chinese(rec, keep=["'张三'"], what=raw)
    bad = RunResult(finished=True, cells={3: {"status": "ok", "output": "a\udcff", "output_chars": 2}},
                    stray_output="\ufffd\udcfe")
    rec = _grade_one(tmp_path, _notebook(), bad, mode="common")
    assert len(rec["problems"]) == 3, rec["problems"]
    _assert_feedback_chinese(rec, keep=["\ufffd\\udcfe"], what="not Unicode")


# ----------------------------------------------------------------------------- the notebook run's stops
class _Run:
    """``Sandbox._run`` (the parent's loop over the notebook's runs) on scripted runs: each of
    ``_one_run``'s results is (state, cell, phase, how the process ended)."""
    _launch = "process"

    def __init__(self, *script):
        self.script = list(script)

    def _one_run(self, *args):
        return self.script.pop(0)


def _exit(status, cpu=0.0, peak_kb=0, launch="process"):
    """How the grader describes a process that ended with wait status ``status`` (sandbox._exit_text)."""
    from autograder.sandbox import Limits, Sandbox

    return Sandbox._exit_text(types.SimpleNamespace(_launch=launch), status, cpu, 10.0, peak_kb,
                              Limits(memory_mb=1024, fsize_mb=16))


ENDINGS = {
    "exit status 3": _exit(3 << 8), "exit 0": _exit(0), "SIGKILL": _exit(signal.SIGKILL),
    "SIGKILL at the CPU limit": _exit(signal.SIGKILL, cpu=10.0), "SIGXCPU": _exit(signal.SIGXCPU),
    "SIGXFSZ": _exit(signal.SIGXFSZ), "SIGKILL near memory": _exit(signal.SIGKILL, peak_kb=1000 << 10),
    "SIGSEGV": _exit(signal.SIGSEGV), "SIGBUS": _exit(signal.SIGBUS), "SIGABRT": _exit(signal.SIGABRT),
    "SIGSEGV near memory": _exit(signal.SIGSEGV, peak_kb=1000 << 10), "SIGTERM": _exit(signal.SIGTERM),
    "bwrap, SIGSEGV": _exit((128 + signal.SIGSEGV) << 8, launch="bwrap"), "signal 40": _exit(40),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_the_notebook_runs_stops_and_crashes_read_in_chinese(tmp_path, ending):
    from autograder.sandbox import Limits, Sandbox

    spec, source = load_lab("pytorch")
    from autograder.extract import read_submission

    sub = read_submission(source)
    a, b, c = (sub.cells_for(g)[0] for g in ("e04_a", "e04_b", "e05_a"))
    kill = ENDINGS[ending]
    lim = Limits(max_restarts=2)
    runs = {
        "a cell hangs, one crashes": _Run(("cell_hung", a, "cells", ""), ("eof", b, "cells", kill),
                                          ("done", None, "cells", "")),
        "too many": _Run(*[("eof", i, "cells", kill) for i in (a, b, c)]),
        "out of time": _Run(("notebook_timeout", c, "cells", "")),
        "flood": _Run(("flood", None, "cells", "")),
        "while calling": _Run(("eof", None, "probes", kill)),
        "hung while calling": _Run(("cell_hung", None, "probes", "")),
        "before the cells": _Run(("eof", None, "start", kill)),
    }
    for what, stub in runs.items():
        res = Sandbox._run(stub, [], {}, lim, 0, False, {})
        if what == "while calling":  # the functions' part: assigned, never called
            res.kinds = {"e06_c": "function"}
        rec = _grade_one(tmp_path, _notebook(), res, mode="common")
        assert rec["problems"] or any(v["status"] in ("timeout", "error") for v in rec["parts"].values()), what
        _assert_feedback_chinese(rec, what=f"{ending}, {what}")


# ----------------------------------------------------------------------------- a real run: what a cell may not do
REFUSED = {  # answer cell -> what is put before its code (or, with "%%", in its place)
    "e01_a": "!ls /",
    "e01_b": "%sx ls",
    "e02_a": "%%bash\necho hi",
    "e02_b": "%load_ext autoreload\n%reset -f",
    "e03_a": "%%writefile\nhello",
    "e03_b": "class Later:\n    def __await__(self):\n        yield 1\nawait Later()",
    "e04_a": "open('/etc/shadow').read()",
    "e04_b": "import os\nos.listdir('/root')",
    "e05_a": "import os\nos.remove('/etc/hostname')",
    "e05_b": "import ctypes\nctypes.CDLL(None).fork",
    "e05_c": "import os\nos.kill(1, 0)",
    "e05_d": "import subprocess\nsubprocess.run(['true'])",
    "e05_e": "open('big', 'wb').write(b'x' * (40 << 20))",
    "e05_f": "for i in range(12):\n    open(f'f{i}', 'wb').write(b'x' * (8 << 20))",
    "e06_c": "import time\nANSWER['e06_c'] = lambda n, b: time.sleep(60) if n > 300 else {}\nraise SystemExit",
    "e07_c": "1 / 0",
    "e07_d": "x = (",
    "e07_e": "ANSWER['e07_e'] = object()\nraise SystemExit",
}


def _refusing(nb):
    for c in nb["cells"]:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").removesuffix("_answer")
        if gid in REFUSED and c["metadata"]["nbgrader"].get("solution"):
            src = "".join(c["source"])
            c["source"] = REFUSED[gid] if REFUSED[gid].startswith("%%") else REFUSED[gid] + "\n" + src


def test_what_a_graded_cell_may_not_do_is_said_in_chinese(tmp_path):
    """A real run in the grader's sandbox: IPython features refused or skipped, the audit hook's
    refusals, the file-size and scratch limits, a function that hangs when called."""
    from autograder.grade import limits_for
    from autograder.sandbox import Sandbox

    spec, _ = load_lab("pytorch")
    with Sandbox("auto") as sb:
        rec = _grade_one(tmp_path, _notebook(edit=_refusing), mode="common", sandbox=sb,
                         limits=limits_for(spec, cell_timeout=4.0, notebook_timeout=90.0))
    said = _assert_feedback_chinese(rec, keep=["/etc/shadow", "/root", "object"], what="refused")
    text = "\n".join(said)
    for expected in ("评分时不允许执行 shell 命令", "评分时不允许执行 %sx（shell 命令）", "评分时不允许使用 %reset", "格会启动程序",
                     "%%writefile 需要一个文件名", "不支持顶层 await", "沙箱：评分时不允许访问", "沙箱：评分时不允许列出",
                     "临时目录之外", "调用 C 函数 `fork`", "向其他进程发信号", "subprocess.Popen",
                     "单个文件不能超过 16 MiB", "临时目录已满", "调用时超时", "答案不是普通数据（object）",
                     "ZeroDivisionError: division by zero", "SyntaxError"):
        assert expected in text, (expected, said)


def test_the_crafted_batch_gets_its_feedback_in_chinese(batch):
    """The batch of crafted submissions (infinite loops, memory and fork bombs, snooping, a killed
    kernel, floods, unreadable files ...) graded for real: every notice and explanation the
    students' feedback files show."""
    for name, rec in sorted(batch["records"].items()):
        keep = [f"{name}.ipynb"]
        try:  # the JSON parser's own words for a file it cannot read
            json.loads((batch["subs"] / f"{name}.ipynb").read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            keep.append(exc.msg)
        if rec["status"] != "unreadable":  # the grade_ids its metadata names (a notice on unknown ones)
            from autograder.extract import read_submission

            keep += read_submission(batch["subs"] / f"{name}.ipynb").meta_ids
        _assert_feedback_chinese(rec, keep=keep, what=name)


# ----------------------------------------------------------------------------- kernel parts
def _kR(**kw):
    R = {"elaborate": {"errors": {}, "tirs": ["N=5"]}, "interface": {}, "build": {}, "structure": None,
         "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": True}
    R.update(kw)
    return R


def _assert_kernel_verdicts(R, what, keep=(), aspects=("correct", "speed", "structure"), task="ew_add"):
    """The verdict of every aspect of a kernel part whose workers found ``R``, in Chinese."""
    from autograder.kernelgrade import rubric
    from autograder.kernelgrade.tasks import get_task

    out = {}
    for aspect in aspects:
        v = rubric.score(aspect, 3, get_task(task), R)
        out[aspect] = v
        _assert_chinese(v.message, keep=keep, what=f"{what} ({aspect}: {v.status})")
    return out


@pytest.mark.parametrize("lab", ["primer", "elementwise", "gemm"])
def test_a_kernel_lab_without_its_answer_cells_is_told_so_in_chinese(lab):
    """grade_kernel_parts' own findings when no answer cell is there: every aspect of every part."""
    from autograder.extract import Submission, read_submission
    from autograder.kernelgrade import pipeline as KP

    spec, source = load_lab(lab)
    verdicts, _ = KP._grade(spec, Submission(Path("x.ipynb"), "0"), spec.default_variant(), source, None, None,
                            read_submission)
    assert verdicts and {v.status for v in verdicts.values()} == {"missing"}
    for gid, v in verdicts.items():
        _assert_chinese(v.message, what=gid)


def test_what_stops_the_kernel_workers_is_said_in_chinese(tmp_path):
    """The pipeline's own words when a worker times out, floods, crashes or dies, with the real
    descriptions of how a process ends: elaboration (_fold_elaborate) and evaluation (_evaluate)."""
    from autograder.kernelgrade import pipeline as KP
    from autograder.sandbox import ProgramResult

    info = {"k": {"task": "ew_add", "calls": [{"label": "N=5"}], "cell": "x"}}
    for state, ending in [("timeout", ""), ("flood", ""), ("died", "")] + [("died", e) for e in ENDINGS.values()]:
        R = {"k": _kR(elaborate={"errors": {}, "tirs": []})}
        KP._fold_elaborate([], info, R, ProgramResult(state=state, exit=ending, output_tail="Traceback: boom"))
        assert R["k"]["elaborate"]["fatal"]
        _assert_kernel_verdicts(R["k"], f"elaboration {state} {ending}", keep=["Traceback: boom"])

    class Fake:
        def __init__(self, *runs):
            self.runs = list(runs)

        def run_program(self, program, args, job, limits, **kw):
            events, state, ending = self.runs.pop(0)
            for ev in events:
                kw["on_event"](ev)
            return ProgramResult(events=events, state=state, exit=ending, output_tail="Fatal Python error")

    hello = {"event": "hello", "gpu": True}
    parts = [{"gid": g, "task": "ew_add", "tirs": []} for g in ("a", "b")]
    scripts = {
        "a build hangs": [([hello, {"event": "start", "gid": "a", "phase": "build"}], "timeout", ""),
                          ([hello, {"event": "part_done", "gid": "b"}], "done", "")],
        "a kernel hangs": [([hello, {"event": "start", "gid": "a", "phase": "gpu"}], "timeout", ""),
                           ([hello, {"event": "part_done", "gid": "b"}], "done", "")],
        "nothing started": [([hello], "timeout", "")],
    }
    for e in ENDINGS.values():
        scripts[f"a worker dies: {e}"] = [([hello, {"event": "start", "gid": "a", "phase": "gpu"}], "died", e),
                                          ([hello], "died", e)]
    for what, runs in scripts.items():
        R = {g: _kR() for g in ("a", "b")}
        KP._evaluate(parts, {}, Fake(*runs), R, {}, KP.GpuGrant(tmp_path, 10, 10), tmp_path)
        assert R["a"]["timeout"] or R["a"]["crash"], (what, R["a"])
        for g in ("a", "b"):
            if R[g]["timeout"] or R[g]["crash"]:
                _assert_kernel_verdicts(R[g], f"{what}: {g}", keep=["Fatal Python error"])
    R = {g: _kR() for g in ("a", "b")}
    grant = KP.GpuGrant(tmp_path, 10, 10, total_s=5)
    grant.t_start -= 10  # the submission's whole time is spent
    KP._evaluate(parts, {}, Fake(), R, {}, grant, tmp_path)
    _assert_kernel_verdicts(R["a"], "past the total")


def _launches():
    def add(A, B, C):
        C.copy_((A.float() + B.float()).to(C.dtype))

    def nothing(A, B, C):
        pass

    def nan(A, B, C):
        C.fill_(float("nan"))

    def clobber(A, B, C):
        add(A, B, C)
        A.zero_()

    def off(A, B, C):
        add(A, B, C)
        C.add_(1)

    return add, [nothing, nan, clobber, off]


def test_what_the_gpu_checks_find_is_said_in_chinese():
    """Correctness and speed findings made by the evaluate worker's own code (on the CPU here,
    with stand-in launches): unwritten, NaN, overwritten inputs, mismatches, a shape that did not
    build, a launch too slow to time, an impossible time, wrong outputs after timing."""
    torch = pytest.importorskip("torch")
    import time as _time

    from autograder.kernelgrade import evaluate as EV
    from autograder.kernelgrade.measure import make_harness
    from autograder.kernelgrade.tasks import EW_ADD, GEMM_PIPELINED

    h = make_harness(seed=7, device="cpu")
    add, bad = _launches()
    shape = {"N": 4097, "dtype": "float16"}
    labels = [lb for lb, _ in EW_ADD.shapes_for(None)]  # the task's own labels, the variant's last
    shapes = [EV.check_shape(h, EW_ADD, shape, launch, labels[i % len(labels)]) for i, launch in enumerate(bad)]
    events = []
    pre = {"gid": "k", "task": EW_ADD, "built": {}, "time_label": "timing", "funcs": {},
           "errors": {"N=5": "parameter 0 (A) must have shape (5,), got (6,)"},
           "tirs": [{"role": "check", "label": "N=5", "shape": {"N": 5, "dtype": "float16"}},
                    {"role": "check", "label": "N=7", "shape": {"N": 7, "dtype": "float16"}}]}
    EV.gpu_part(pre, h, events.append)
    shapes += next(e for e in events if e["event"] == "correct")["shapes"]
    assert not any(s["ok"] for s in shapes)
    v = _assert_kernel_verdicts(_kR(correct=shapes), "wrong shapes")
    assert v["correct"].status == "wrong" and v["speed"].status == "wrong"

    small = {"N": 1 << 12, "dtype": "float16"}
    right = [{"ok": True, "label": "N=4096"}]
    calls = {"n": 0}

    def slow(A, B, C):
        _time.sleep(0.06)
        add(A, B, C)

    def breaks(A, B, C):
        calls["n"] += 1
        (add if calls["n"] == 1 else bad[0])(A, B, C)

    for what, launch in (("timed", add), ("too slow", slow), ("wrong after timing", breaks)):
        sp = EV.measure_speed(h, EW_ADD, small, launch, rounds=1)
        _assert_kernel_verdicts(_kR(correct=right, speed=sp), what, aspects=("speed",))
    sp = {**EV.measure_speed(h, EW_ADD, small, add, rounds=1), "flags": []}  # (a CPU under load may flag it)
    flags = EV.physical_flags(EW_ADD, 1e-4, 1e9, None, 3000.0, None) + EV.physical_flags(
        GEMM_PIPELINED, 1e-4, None, 1e12, None, 989e12)
    assert len(flags) == 2
    for what, speed in (("impossible", {**sp, "flags": flags}), ("no finite time", {**sp, "ms": "nan"}),
                        ("not timed", None)):
        _assert_kernel_verdicts(_kR(correct=right, speed=speed), what, aspects=("speed",))
    gemm = {**sp, "metric": 0.8, "shape": {"M": 4096, "N": 4096, "K": 4096}}
    v = _assert_kernel_verdicts(_kR(correct=right, speed=gemm), "against the library", aspects=("speed",),
                                task="gemm_pipelined", keep=[GEMM_PIPELINED.baseline_label])
    assert GEMM_PIPELINED.baseline_label in zh(v["speed"].message)
    assert torch is not None


def test_what_the_structure_checks_find_is_said_in_chinese():
    from autograder.kernelgrade import structure
    from autograder.kernelgrade.tasks import ASCEND_ADD, EW_ADD

    params = EW_ADD.signature({"N": 4096, "dtype": "float16"})
    good = {"paths": {"shared_memory": True, "tma_load": True, "wgmma": True, "mbarrier": True}, "stages": [3],
            "reduction": "warp shuffles", "accesses": {"A": {"load": 16}, "B": {"load": 16}, "C": {"store": 16},
                                                      "Cos": {"load": 4}, "Sin": {"load": 4}}}
    other = {"paths": {"shared_memory": True, "cp_async": True, "mma_sync": True}, "stages": [1],
             "reduction": "tl::AllReduce",
             "accesses": {"A": {"load": 4}, "C": {"store": 2}}}
    none = {"paths": {}, "stages": [], "reduction": None, "accesses": {}}
    keys = list(structure.EXPECTATIONS)
    for what, a in (("good", good), ("other", other), ("none", none)):
        checks = structure.evaluate(keys, a, params)
        v = _assert_kernel_verdicts(_kR(structure={"checks": checks}), what, aspects=("structure",))
        said = zh(v["structure"].message)
        assert said.count("✔") + said.count("✘") == len(keys) == said.count("；") + 1 - said.count("要求"), said
    asc_keys = list(structure.ASCEND_EXPECTATIONS)
    asc_good = {"lowers": True, "kernel_kind": "vector", "vf_region": True, "buffer_versions": {"ub_a": 2},
                "reduction": "reduce_sum", "sync": {"asc_sync_notify": 4}}
    asc_bad = {"lowers": True, "kernel_kind": "cube", "vf_region": False, "buffer_versions": {}, "reduction": None,
               "sync": {}}
    for what, a in (("ascend good", asc_good), ("ascend bad", asc_bad)):
        checks = structure.evaluate(asc_keys, a, params, ascend=True)
        _assert_kernel_verdicts(_kR(ascend={"lowers": True, "checks": checks}), what, aspects=("ascend",),
                                task=ASCEND_ADD.key, keep=["ub_a", "vector", "cube"])
    for what, R in (("no lowering", _kR(ascend=None)),
                    ("failed lowering", _kR(ascend={"lowers": False, "error": "KeyError: 'x'", "checks": []}))):
        _assert_kernel_verdicts(R, what, aspects=("ascend",), task=ASCEND_ADD.key)
    for what, R in (("unread", _kR(structure={"error": "AttributeError: no source"})), ("no build", _kR()),
                    ("no nvcc", _kR(build={"timing N=16777216": "RuntimeError: nvcc: not found"})),
                    ("no nvcc, self-check", _kR(build={"timing": "RuntimeError: nvcc: not found"})),
                    ("no compile", _kR(build={"variant N=4099,dtype=float16": "RuntimeError: ptxas fatal"})),
                    ("no gpu", _kR(gpu=False)), ("no gpu run", _kR(correct=None))):
        _assert_kernel_verdicts(R, what, keep=["nvcc: not found", "ptxas fatal", "no source"])


def _tir(body: str, *params: str):
    """Real TIR from a kernel body: the helper of the build-refusal tests in ``test_kernelgrade_units``."""
    spec = importlib.util.spec_from_file_location("_kg_units", Path(__file__).with_name("test_kernelgrade_units.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._tir(body, *params)


def test_what_the_build_refuses_is_said_in_chinese():
    """tirsafe's refusals of real TIR (host calls, pasted source, the interface, the jit options),
    as the rubric shows them for every aspect: alone, after "no speed points: " and "not read: "."""
    pytest.importorskip("tilelang")
    import tvm

    from autograder.kernelgrade import tirsafe
    from autograder.kernelgrade.tasks import EW_ADD

    sig = EW_ADD.signature({"N": 16, "dtype": "float16"})
    attempts = [
        lambda: tirsafe.check_body(_tir("T.import_source('int x;')\nfor i in T.Parallel(16):\n    C[i] = A[i]")),
        lambda: tirsafe.check_body(_tir("for i in T.Parallel(16):\n    C[i] = T.call_extern('float16', "
                                        "'f(); system(\"x\")', A[i])")),
        lambda: tirsafe.check_body(_tir("for i in T.Parallel(16):\n    C[i] = T.call_extern('float16', 'f(A[0]) + g', "
                                        "A[i])")),
        lambda: tirsafe.check_body(_tir("T.evaluate(T.call_packed('runtime.ModuleLoadFromFile', 'x.so'))\n"
                                        "for i in T.Parallel(16):\n    C[i] = A[i]")),
        lambda: tirsafe.check_interface(_tir("for i in T.Parallel(16):\n    C[i] = A[i]"),
                                        EW_ADD.signature({"N": 17, "dtype": "float16"})),
        lambda: tirsafe.check_interface(_tir("for i in T.Parallel(16):\n    C[i] = A[i]"),
                                        EW_ADD.signature({"N": 16, "dtype": "bfloat16"})),
        lambda: tirsafe.check_interface(_tir("for i in T.Parallel(16):\n    B[i] = A[i]",
                                             "A: T.Tensor((16,), 'float16'), B: T.Tensor((16,), 'float16')"), sig),
        lambda: tirsafe.compile_options({"out_idx": [-1]}),
        lambda: tirsafe.compile_options({"compile_flags": ["-Xcompiler", "-fplugin=/tmp/x.so"]}),
        lambda: tirsafe.compile_options({"pass_configs": {"tir.something": 1}}),
        lambda: tirsafe.compile_options({"pass_configs": {"tl.x": "a;b"}}),
        lambda: tirsafe.compile_options({"pass_configs": 3}),
        lambda: tirsafe.compile_options("fast"),
        lambda: tirsafe.load(7),
        lambda: tirsafe.load("{not json"),
        lambda: tirsafe.load(tvm.ir.save_json(_tir("for i in T.Parallel(16):\n    C[i] = A[i]").body)),
    ]
    for i, attempt in enumerate(attempts):
        with pytest.raises(tirsafe.TirError) as exc:
            attempt()
        _assert_kernel_verdicts(_kR(interface={"N=16": str(exc.value)}), f"refusal {i}: {exc.value}",
                                keep=["tir.something"])


def test_what_the_elaboration_worker_says_is_said_in_chinese():
    """The elaboration worker itself, run in the grader's sandbox on answer cells that raise,
    assign nothing, hang, or hold a factory that has the wrong signature, raises for one shape
    or hangs; and on a lab whose kernel set-up cell fails."""
    pytest.importorskip("tilelang")
    from autograder.kernelgrade import pipeline as KP
    from autograder.sandbox import Limits, Sandbox

    factory = ("@tilelang.jit(target=TARGET)\ndef f(N, dtype):\n    {extra}\n    @T.prim_func\n"
               "    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):\n"
               "        with T.Kernel(1, threads=32) as bx:\n            for i in T.Parallel(N):\n"
               "                C[i] = A[i] + B[i]\n    return main\nANSWER[{gid!r}] = f\n")
    cells = {
        "raises": "raise ValueError('bad idea')",
        "unassigned": "x = 1",
        "sleeps": "import time\ntime.sleep(30)",
        "signature": "def f(N):\n    return None\nANSWER['signature'] = f",
        "one_shape": factory.format(extra="assert N != 7, 'odd sizes are not handled'", gid="one_shape"),
        "hangs": factory.format(extra="import time; time.sleep(30)", gid="hangs"),
    }
    calls = [{"label": f"N={n}", "kwargs": {"N": n, "dtype": "float16"}, "shape": {"N": n, "dtype": "float16"},
              "role": "check"} for n in (64, 7)]
    setup = "import tilelang\nimport tilelang.language as T\nTARGET = {'kind': 'cuda', 'arch': 'sm_90a'}"
    lim = Limits(cell_timeout=120, notebook_timeout=120, cpu_s=120, memory_mb=16384, scratch_mb=64, nproc=256,
                 nofile=1024)
    with Sandbox("auto", jobs=1) as sb:
        for what, job_setup in (("cells", setup), ("set-up", setup + "\nraise RuntimeError('no CUDA here')")):
            job = {"parts": [{"gid": g, "kind": "cuda", "cell": c, "calls": calls} for g, c in cells.items()],
                   "setup": job_setup, "call_timeout": 2}
            res = sb.run_program(KP.WORKER, ["elaborate"], job, lim, packages=KP.ELAB_PACKAGES, files=KP.ELAB_FILES)
            assert res.state == ("done" if what == "cells" else "died"), res.output_tail
            info = {g: {"task": "ew_add", "calls": calls, "cell": c} for g, c in cells.items()}
            R = {g: _kR(elaborate={"errors": {}, "tirs": []}) for g in cells}
            KP._fold_elaborate(res.events, info, R, res)
            for g in cells:
                assert R[g]["elaborate"]["errors"] or R[g]["elaborate"].get("fatal"), (what, g, R[g])
                _assert_kernel_verdicts(R[g], f"{what}: {g}", keep=["bad idea", "odd sizes are not handled",
                                                                    "no CUDA here", res.output_tail.strip()[-200:]])
