"""The real nbgrader takes the instructor notebook as it is (generate_assignment, Python API)."""
from __future__ import annotations

import json
import os
import shutil
import sys

import nbformat
import pytest

from autograder.grade import grade_batch

nbgrader = pytest.importorskip("nbgrader")


def test_generate_assignment_then_our_grader(tmp_path, monkeypatch, lab, limits):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    spec, source = lab
    # nbgrader runs `alembic` from PATH: make the venv's scripts visible
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    course = tmp_path / "course"
    (course / "source" / "lab02").mkdir(parents=True)
    shutil.copy(source, course / "source" / "lab02" / "lab02.ipynb")
    c = Config()
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.course_id = "tilelang-course"
    result = NbGraderAPI(config=c).generate_assignment("lab02")
    assert result["success"], result.get("log")
    released = course / "release" / "lab02" / "lab02.ipynb"
    text = released.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "gemm_512\"}" not in text
    nb = nbformat.read(str(released), as_version=4)
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    # every part is an nbgrader grade cell with the spec's points; test cells stay locked
    assert {g: m["points"] for g, m in graded.items()} == {p.grade_id: p.points for p in spec.parts}
    assert all(m["locked"] for g, m in graded.items() if spec.part(g).auto)
    # nbgrader's stubs (raise NotImplementedError) grade to zero without breaking our grader
    out = tmp_path / "out"
    grade_batch([released], "lab02", out, jobs=1, limits=limits, progress=False)
    rec = json.loads((out / "records" / "lab02.json").read_text(encoding="utf-8"))
    assert rec["status"] == "graded" and rec["auto_score"] == 0
    assert rec["sandbox"]["finished"]
