"""The pytorch lab (formerly lab02): spec, release, the in-notebook check, the builder."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import check
from autograder.check import check_part
from autograder.labs import LabError
from autograder.release import ReleaseError, release, strip_solutions

ROOT = Path(__file__).resolve().parents[2]


def test_every_exercise_has_auto_and_manual_parts_where_needed(lab):
    spec, _ = lab
    assert spec.exercises == [f"E{i}" for i in range(1, 14)]
    for ex in spec.exercises:
        kinds = {p.kind for p in spec.parts if p.exercise == ex}
        assert kinds - {"manual"} or ex == "E10", ex  # E10 asks only for explanations
    assert {p.kind for p in spec.parts} >= {"quantity", "number", "choice", "set", "table", "mapping",
                                           "function", "manual"}


def test_references_follow_the_ledger(lab, monkeypatch):
    """References are computed when grading: change the ledger and they change."""
    spec, _ = lab
    import ledger.ops as ops

    v = spec.default_variant()
    before = spec.part("e05_a").reference(v)
    monkeypatch.setattr(ops, "layernorm", lambda m, h, dtype="fp16", passes=1, **k: ops.Cost(8 * m * h, 7.0 * m * h))
    assert spec.part("e05_a").reference(v) == pytest.approx(7.0 * 4096 * 4096 / 1e6) != before


def test_e9_references_come_from_the_installed_tilelang(lab):
    import inspect

    import tilelang

    spec, _ = lab
    backends = spec.part("e09_a").reference({})
    ann = str(inspect.signature(tilelang.compile).parameters["execution_backend"].annotation)
    assert backends and all(f"'{b}'" in ann or f'"{b}"' in ann for b in backends)
    assert spec.part("e09_d").reference({}) in inspect.getdoc(tilelang.compile)


def test_e13_functions_probed_on_grader_inputs(lab):
    spec, _ = lab
    p = spec.part("e13_a")
    assert len(p.probes) >= 3 and len({a[1] for a in p.probes}) >= 3  # several dtypes


def test_check_says_right_wrong_malformed_without_the_answer(lab, capsys):
    spec, source = lab
    ns: dict = {}
    nb = nbformat.read(str(source), as_version=4)
    code = "\n".join(c.source for c in nb.cells
                     if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade"))
    exec(compile(code, "pytorch", "exec"), ns)
    answers = ns["ANSWER"]
    for p in spec.parts:
        assert check_part(answers, p, spec.default_variant()).status == ("right" if p.auto else "manual"), p.grade_id
    answers["e05_a"] = {"value": 1.0, "unit": "MB"}
    answers["e05_c"] = {"value": 1.0, "unit": "s"}
    res = check(answers, "e05_a")
    res.update(check(answers, "e05_c"))
    res.update(check({}, "e05_b"))
    out = capsys.readouterr().out
    assert res == {"e05_a": "wrong", "e05_c": "malformed", "e05_b": "missing"}
    ref = spec.part("e05_a").reference(spec.default_variant())
    assert f"{ref:.3g}" not in out and "67.1" not in out and "expected" not in out
    every = check(answers)
    assert set(every) == {p.grade_id for p in spec.parts} and every["e05_b"] == "right"


def test_release_strips_solutions_and_keeps_metadata(tmp_path, lab):
    spec, source = lab
    out = release("pytorch", tmp_path / "student.ipynb")
    text = out.read_text(encoding="utf-8")
    nb = nbformat.read(str(out), as_version=4)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "strict=True" not in text  # the hidden tests nbgrader restores are not in the student's copy
    inst = nbformat.read(str(source), as_version=4)
    solutions = [c.source for c in inst.cells if c.metadata.get("nbgrader", {}).get("solution")]
    released = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(solutions) == len(released) and not set(solutions) & set(released)
    for p in spec.parts:  # stubs in place, no reference value of any part written out
        if p.auto:
            assert p.stub.splitlines()[0] in "\n".join(released)
    assert "gemm_512\"}" not in text and "TILELANG_DEFAULT_TARGET\"" not in text
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_release_refuses_broken_markers_and_unknown_labs(tmp_path, lab):
    _, source = lab
    nb = nbformat.read(str(source), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
    cell.source = cell.source.replace("### END SOLUTION", "")
    with pytest.raises(ReleaseError, match="never closed"):
        strip_solutions(nb, "pytorch")
    with pytest.raises(LabError, match="unknown lab"):
        release("lab99", tmp_path / "x.ipynb")
    assert not (tmp_path / "x.ipynb").exists()


def test_notebook_is_built_from_build_py():
    r = subprocess.run([sys.executable, str(ROOT / "labs" / "pytorch" / "build.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_instructor_notebook_runs_in_jupyter_and_checks_pass(lab):
    """The notebook as a student runs it: a real kernel, check() after every answer."""
    from nbclient import NotebookClient

    spec, source = lab
    nb = nbformat.read(str(source), as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outs = {}
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if c.cell_type == "code" and gid and c.metadata["nbgrader"].get("grade"):
            outs[gid] = "".join(o.get("text", "") for o in c.outputs)
    assert outs and all("✔" in t for t in outs.values()), {g: t for g, t in outs.items() if "✔" not in t}
