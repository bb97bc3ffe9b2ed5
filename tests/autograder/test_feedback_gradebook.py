"""What the grader tells students and instructors: parts not graded for lack of a GPU, the
gradebook files, Chinese feedback, the output of ``check`` in a notebook, the tolerance of a
kernel part, and why bubblewrap failed."""
from __future__ import annotations

import csv
import json
import os
import re
import stat
import tempfile
from pathlib import Path

import pytest

from autograder.check import Verdicts, check
from autograder.kernelgrade import rubric
from autograder.labs import load_lab
from autograder.messages import zh
from autograder.parts import Verdict, compare

ROOT = Path(__file__).resolve().parents[2]
_CJK = re.compile(r"[\u4e00-\u9fff]")


# ----------------------------------------------------------------------------- check() in a notebook
def test_a_passing_hidden_test_outputs_nothing_and_check_is_not_echoed():
    spec, _ = load_lab("pytorch")
    part = next(p for p in spec.parts if p.kind == "number")
    right = {part.grade_id: part.reference(spec.default_variant())}
    # the hidden test of an analytic part: nbgrader reads a grade cell's output as its score
    assert check(right, part.grade_id, "pytorch", strict=True, quiet=True) is None
    with pytest.raises(AssertionError):
        check({}, part.grade_id, "pytorch", strict=True, quiet=True)
    got = check(right, part.grade_id, "pytorch", quiet=True)
    assert isinstance(got, Verdicts) and got == {part.grade_id: "right"}
    from IPython.core.interactiveshell import InteractiveShell

    data, meta = InteractiveShell.instance().display_formatter.format(got)
    assert data == {} and meta == {}  # Jupyter shows no Out[] after the printed line


def test_a_nan_answer_is_named_as_nan_not_as_a_dict(capsys):
    spec, _ = load_lab("pytorch")
    part = next(p for p in spec.parts if p.kind == "number")
    out = check({part.grade_id: float("nan")}, part.grade_id, "pytorch")
    assert out[part.grade_id] == "malformed"
    printed = capsys.readouterr().out
    assert "NaN/inf" in printed and "dict" not in printed
    q = next(p for p in spec.parts if p.kind == "quantity")
    v = compare(q, {"value": {"__unserializable__": "non-finite float inf"}, "unit": q.unit}, 1.0)
    assert v.status == "malformed" and "NaN/inf (inf)" in v.message and "dict" not in v.message


# ----------------------------------------------------------------------------- kernel rows
def _R(**kw):
    base = {"elaborate": {"errors": {}, "tirs": ["x"]}, "interface": {}, "build": {}, "structure": None,
            "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": True}
    base.update(kw)
    return base


def test_one_cause_gives_every_row_of_a_kernel_the_same_status():
    from autograder.kernelgrade.tasks import EW_ADD

    for R, want in ((_R(interface={"N=5": "parameter 1 (Y) must be float32, got float16"}), "malformed"),
                    (_R(timeout="building the kernel ran past its time limit (120 s)"), "timeout"),
                    (_R(elaborate={"missing": "no answer cell for k1_add"}), "missing")):
        assert {rubric.score(a, 2, EW_ADD, R).status for a in ("correct", "speed", "structure")} == {want}


def test_kernel_rows_show_the_tasks_tolerance_for_correctness_and_none_for_speed_and_structure():
    from measure.check import TOLERANCES

    from autograder.kernelgrade.tasks import DTYPE_TOLERANCE_TEXT

    for name, dt in (("fp32", "float32"), ("fp16", "float16"), ("bf16", "bfloat16")):
        atol, rtol = TOLERANCES[dt]
        assert atol == rtol and f"{name} " in DTYPE_TOLERANCE_TEXT
        m = re.search(rf"{name}(?: atol = rtol =)? ([0-9.e-]+)", DTYPE_TOLERANCE_TEXT)
        assert m and float(m.group(1)) == atol, (name, atol)
    for lab in ("primer", "elementwise", "gemm"):
        spec, _ = load_lab(lab)
        for p in spec.parts:
            if p.kind != "kernel":
                continue
            if p.reference().aspect == "correct":
                assert "atol" in p.tolerance and "1%" not in p.tolerance, p.grade_id
            else:
                assert p.tolerance == "", p.grade_id
    spec, _ = load_lab("gemm")
    assert "√K" in spec.part("k1_gemm").tolerance


# ----------------------------------------------------------------------------- Chinese feedback
def test_the_fixed_phrases_of_the_feedback_read_in_chinese():
    spec, _ = load_lab("pytorch")
    q = next(p for p in spec.parts if p.kind == "quantity" and p.unit.endswith("B"))
    msgs = [
        "correct", "wrong", "graded by hand", "not answered yet",
        compare(q, {"value": 1.0, "unit": "ms"}, 1.0).message,
        compare(q, {"value": float("nan"), "unit": "ms"}, 1.0).message,
        'no answer: ANSWER["e13_d"] was never assigned',
        "not reached: the notebook ran out of time before this answer",
        "not reached: too many cells hung or crashed, so the notebook was not run to this answer",
        "the cell that answers it (cell 9) failed: cell ran past its 10 s limit and ignored the alarm; it was killed",
        "too many cells hung or crashed; stopped re-running",
        rubric.NEEDS_GPU,
        "no speed points: parameter 1 (Y) must be float32, got float16 (shape N=5)",
        "flagged: the notebook was released to student '2024002' but is graded as '2024003'; its answers were "
        "compared with '2024003''s numbers",
        "building the kernel ran past its time limit (120 s)",
    ]
    for m in msgs:
        out = zh(m)
        assert _CJK.search(out), m
        for english in ("correct", "wrong", "graded by hand", "not answered", "never assigned", "not reached",
                        "too many cells", "needs a GPU", "must be", "flagged", "ran past", "expected"):
            assert english not in out, (m, out)
    assert "2024002" in zh(msgs[-2]) and "'ms'" in zh(msgs[4])  # the variable parts are carried over
    assert zh("something the table does not know") == "something the table does not know"


# ----------------------------------------------------------------------------- no GPU: pending, not zero
@pytest.fixture()
def kernel_cache(monkeypatch):
    import shutil

    d = tempfile.mkdtemp(prefix="ag-kcache-")
    os.chmod(d, 0o755)
    monkeypatch.setenv("KERNELGRADE_CACHE", d)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_parts_that_need_a_gpu_are_pending_not_zero_in_the_gradebook(tmp_path, monkeypatch, kernel_cache):
    import autograder.kernelgrade as KG
    from autograder.grade import grade_batch
    from autograder.report import merge

    spec, source = load_lab("primer")

    def fake_kernels(spec, sub, variant, instructor_source, sandbox=None, eval_sandbox=None, **kw):
        out = {}
        for p in spec.parts:
            if p.kind == "kernel":
                aspect = p.reference().aspect
                out[p.grade_id] = (Verdict("skipped", rubric.NEEDS_GPU) if aspect in ("correct", "speed")
                                   else Verdict("right", "sm_90a code: [ok] x", score=p.points))
        return out, {"wall_s": 2.5, "elaborate_s": 1.0, "evaluate_s": 1.5}

    monkeypatch.setattr(KG, "grade_kernel_parts", fake_kernels)
    subs = Path(tempfile.mkdtemp(prefix="ag-subs-"))
    os.chmod(subs, 0o755)
    import shutil

    request_cleanup = lambda: shutil.rmtree(subs, ignore_errors=True)  # noqa: E731
    sub = subs / "2024001.ipynb"
    sub.write_bytes(source.read_bytes())
    os.chmod(sub, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    out = tmp_path / "out"
    try:
        grade_batch([sub], "primer", out, jobs=1, progress=False, variants="common")
    finally:
        request_cleanup()
    merge([out], out)
    rec = json.loads((out / "records" / "2024001.json").read_text(encoding="utf-8"))
    pending = sum(p.points for p in spec.parts if p.kind == "kernel" and p.reference().aspect in ("correct", "speed"))
    assert pending > 0
    assert rec["status"] == "pending_gpu" and rec["pending_gpu_points"] == pending
    assert rec["auto_max"] == pytest.approx(spec.auto_points - pending) == rec["auto_score"]
    row = next(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert row["assignment"] == "primer" and row["status"] == "pending_gpu" and row["graded_at"]
    assert float(row["auto_max"]) == rec["auto_max"] and float(row["auto_score"]) == rec["auto_score"]
    for p in spec.parts:
        if p.kind == "kernel" and p.reference().aspect in ("correct", "speed"):
            assert row[p.grade_id] == "", p.grade_id  # no number: not graded, not a zero
        elif p.auto:
            assert float(row[p.grade_id]) == p.points, p.grade_id
    parts = {r["grade_id"]: r for r in csv.DictReader((out / "parts.csv").open(encoding="utf-8"))}
    assert list(parts) == [p.grade_id for p in spec.parts]
    assert all(r["assignment"] == "primer" for r in parts.values())
    assert {g: float(r["max_points"]) for g, r in parts.items()} == {p.grade_id: p.points for p in spec.parts}
    fb = (out / "feedback" / "2024001.md").read_text(encoding="utf-8")
    assert f"{rec['auto_score']:g} / {rec['auto_max']:g}" in fb and "需要 GPU，这台机器上未评" in fb
    assert "needs a GPU" not in fb and "needs a GPU" in (out / "instructor" / "2024001.md").read_text(encoding="utf-8")
    log = json.loads((out / "log.json").read_text(encoding="utf-8"))
    entry = log["submissions"][0]
    assert entry["auto_max"] == rec["auto_max"] and entry["kernel_s"]["wall_s"] == 2.5
    assert entry["wall_s"] == rec["grade_wall_s"] >= entry["sandbox"]["wall_s"]


# ----------------------------------------------------------------------------- bubblewrap's own words
def test_a_bubblewrap_that_fails_is_reported_with_what_it_said(monkeypatch):
    import shutil

    from autograder.sandbox import IsolationError, Sandbox

    tmp_path = Path(tempfile.mkdtemp(prefix="ag-fakebwrap-"))  # not pytest's (mode 0700): the sandbox uid runs it
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho \"bwrap: Can't find source path /root/.pyenv/versions/3.11.7: Permission denied\""
                    " >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AUTOGRADER_BWRAP", str(fake))
    if os.geteuid() == 0:  # as root the launcher goes through setpriv; the fake must still be reachable
        os.chmod(tmp_path, 0o755)
        for parent in tmp_path.parents:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                pytest.skip(f"{parent} is not searchable by the sandbox uid")
    try:
        with pytest.raises(IsolationError) as err:
            Sandbox("bwrap").close()
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    msg = str(err.value)
    assert "Can't find source path /root/.pyenv/versions/3.11.7: Permission denied" in msg
    if os.geteuid() == 0:
        assert "AUTOGRADER_SANDBOX_UID" in msg  # and what to do about it


def test_an_interpreter_reached_through_a_linked_directory_runs_at_its_real_path():
    """A virtual environment reached through a symbolic link (a worktree's .venv linked to the main
    checkout's) is bound at its real path: the sandbox must start the interpreter there too."""
    import shutil
    import sys

    from autograder.sandbox import Sandbox

    d = Path(tempfile.mkdtemp(prefix="ag-linkedvenv-"))
    try:
        real_bin = os.path.realpath(os.path.dirname(os.path.abspath(sys.executable)))
        (d / "bin").symlink_to(real_bin, target_is_directory=True)
        python = str(d / "bin" / os.path.basename(sys.executable))
        with Sandbox("auto", python=python) as sb:
            assert sb.python == os.path.join(real_bin, os.path.basename(sys.executable))
            r = sb.run([{"index": 0, "source": 'ANSWER["x"] = 41 + 1', "keys": ["x"]}], {})
            assert r.finished and r.answers == {"x": 42}, (r.problems, r.stray_output)
    finally:
        shutil.rmtree(d, ignore_errors=True)
