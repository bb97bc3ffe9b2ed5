"""The real nbgrader: generate_assignment on the instructor notebook, then autograde three
submissions (unanswered, the instructor's, partly right); its totals equal ours."""
from __future__ import annotations

import copy
import json
import os
import shutil
import sys

import nbformat
import pytest

from autograder.grade import grade_batch

nbgrader = pytest.importorskip("nbgrader")

LAB = "pytorch"


def _course(tmp_path, monkeypatch, source):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    # nbgrader runs `alembic` from PATH: make the venv's scripts visible
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    course = tmp_path / "course"
    (course / "source" / LAB).mkdir(parents=True)
    shutil.copy(source, course / "source" / LAB / f"{LAB}.ipynb")
    c = Config()
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.course_id = "tilelang-course"
    c.ExecutePreprocessor.timeout = 600  # the E9 checks import tilelang (seconds on a busy machine)
    c.Execute.timeout = 600
    api = NbGraderAPI(config=c)
    result = api.generate_assignment(LAB)
    assert result["success"], result.get("log")
    return course, api


def test_generate_assignment_keeps_points_and_strips_answers(tmp_path, monkeypatch, lab, limits):
    spec, source = lab
    course, _ = _course(tmp_path, monkeypatch, source)
    released = course / "release" / LAB / f"{LAB}.ipynb"
    text = released.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "gemm_512\"}" not in text and "strict=True" not in text
    nb = nbformat.read(str(released), as_version=4)
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    # every part is an nbgrader grade cell with the spec's points; test cells stay locked
    assert {g: m["points"] for g, m in graded.items()} == {p.grade_id: p.points for p in spec.parts}
    assert all(m["locked"] for g, m in graded.items() if spec.part(g).auto)
    # nbgrader's stubs (raise NotImplementedError) grade to zero without breaking our grader
    out = tmp_path / "out"
    grade_batch([released], LAB, out, jobs=1, limits=limits, progress=False, variants="common")
    rec = json.loads((out / "records" / f"{LAB}.json").read_text(encoding="utf-8"))
    assert rec["status"] == "graded" and rec["auto_score"] == 0
    assert rec["sandbox"]["finished"]


def _answer(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{gid}_answer")


def _partly_right(source):
    nb = nbformat.read(str(source), as_version=4)
    nb = copy.deepcopy(nb)
    _answer(nb, "e05_a").source += '\nANSWER["e05_a"]["value"] *= 1.5'
    _answer(nb, "e06_b").source = 'ANSWER["e06_b"] = "memory-bound"'
    _answer(nb, "e04_a").source = 'ANSWER["e04_a"] = 4 +'  # a syntax error
    _answer(nb, "e03_c").source = 'ANSWER["e03_c"] = {"gemm_512", "gemm_1024"}'
    _answer(nb, "e09_c").source = 'ANSWER["e09_c"] = {"kind": "cuda"}'  # half of the dict
    _answer(nb, "e13_a").source += '\nANSWER["e13_a"] = lambda n, dtype="fp16": {"flops": 4 * n, "bytes": 2 * n}'
    # IPython idioms that are right in Jupyter must be right here too
    cell = _answer(nb, "e02_a")
    cell.source = "%%time\n" + cell.source.replace("### BEGIN SOLUTION\n", "").replace("\n### END SOLUTION", "")
    cell = _answer(nb, "e01_b")
    cell.source = "%matplotlib inline\ndisplay('e01_b')\n" + cell.source
    return nb, {"e05_a", "e06_b", "e04_a", "e03_c", "e09_c", "e13_a"}


@pytest.mark.slow
def test_nbgrader_autograde_totals_equal_ours(tmp_path, monkeypatch, lab, limits):
    """Unanswered -> 0, the instructor's -> 100 %, partly right -> exactly our score, part by part."""
    from nbgrader.api import Gradebook

    spec, source = lab
    course, api = _course(tmp_path, monkeypatch, source)
    released = course / "release" / LAB / f"{LAB}.ipynb"
    partly, wrong = _partly_right(source)
    subs = {"unanswered": nbformat.read(str(released), as_version=4),
            "instructor": nbformat.read(str(source), as_version=4), "partly": partly}
    ours_dir = tmp_path / "ours"
    ours_dir.mkdir()
    for student, nb in subs.items():
        d = course / "submitted" / student / LAB
        d.mkdir(parents=True)
        nbformat.write(nb, str(d / f"{LAB}.ipynb"))
        nbformat.write(nb, str(ours_dir / f"{student}.ipynb"))
        result = api.autograde(LAB, student)
        assert result["success"], result.get("log")
    grade_batch(sorted(ours_dir.glob("*.ipynb")), LAB, tmp_path / "out", jobs=2, limits=limits,
                progress=False, variants="common")
    ours = {s: json.loads((tmp_path / "out" / "records" / f"{s}.json").read_text(encoding="utf-8"))
            for s in subs}
    auto_ids = {p.grade_id for p in spec.parts if p.auto}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in subs:
            nbg = gb.find_submission_notebook(LAB, LAB, student)
            theirs = {g.name: g.score for g in nbg.grades if g.name in auto_ids}
            assert set(theirs) == auto_ids
            mine = {gid: ours[student]["parts"][gid]["score"] for gid in auto_ids}
            assert theirs == pytest.approx(mine), {g: (theirs[g], mine[g]) for g in auto_ids
                                                   if theirs[g] != pytest.approx(mine[g])}
            assert nbg.code_score == pytest.approx(ours[student]["auto_score"])
            assert nbg.max_code_score == pytest.approx(spec.auto_points)
    # a passing hidden test outputs nothing: nbgrader reads a grade cell's output as its score
    # (and warns that a dict "cannot be converted to a float")
    graded = nbformat.read(str(course / "autograded" / "instructor" / LAB / f"{LAB}.ipynb"), as_version=4)
    for c in graded.cells:
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade"):
            assert not [o for o in c.get("outputs", []) if o.get("output_type") == "execute_result"], c.source
    assert ours["unanswered"]["auto_score"] == 0
    assert ours["instructor"]["auto_score"] == spec.auto_points
    lost = sum(spec.part(g).points for g in wrong)
    assert ours["partly"]["auto_score"] == pytest.approx(spec.auto_points - lost)
    assert {g for g in auto_ids if ours["partly"]["parts"][g]["status"] != "right"} == wrong
