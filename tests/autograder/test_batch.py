"""The crafted submissions, graded in one batch: each gets the right score and a clear message."""
from __future__ import annotations

import csv
import json
import os

import pytest

FULL = None


def _full(batch):
    return batch["spec"].auto_points


def _status(rec, gid):
    return rec["parts"][gid]["status"]


def _check_losses(batch, name):
    spec, rec, lost = batch["spec"], batch["records"][name], batch["cases"][name]["lost"]
    assert rec["status"] == "graded", rec.get("problems")
    for p in spec.parts:
        if not p.auto:
            assert _status(rec, p.grade_id) == "manual"
            continue
        want = lost.get(p.grade_id, "right")
        assert _status(rec, p.grade_id) == want, (name, p.grade_id, rec["parts"][p.grade_id])
    expected = sum(p.points for p in spec.parts if p.auto and p.grade_id not in lost)
    assert rec["auto_score"] == pytest.approx(expected)
    return rec


def test_instructor_scores_full_marks(batch):
    rec = _check_losses(batch, "instructor")
    assert rec["auto_score"] == _full(batch) > 0
    assert rec["sandbox"]["finished"] and rec["sandbox"]["restarts"] == 0


def test_released_notebook_scores_zero_without_crashing(batch):
    rec = batch["records"]["released"]
    assert rec["status"] == "graded" and rec["auto_score"] == 0
    assert rec["sandbox"]["finished"]
    statuses = {v["status"] for v in rec["parts"].values()}
    assert statuses <= {"missing", "manual"}, statuses
    assert not any(c["status"] != "ok" for c in rec.get("cells", {}).values())


def test_partly_right(batch):
    rec = _check_losses(batch, "partly_right")
    assert "SyntaxError" in rec["parts"]["e04_a"]["message"]
    assert "flops" in rec["parts"]["e13_a"]["message"]  # names the field and the inputs that failed


def test_units_are_converted_or_refused(batch):
    rec = _check_losses(batch, "units")
    assert "wrong unit" in rec["parts"]["e05_e"]["message"] and "time" in rec["parts"]["e05_e"]["message"]
    assert "unknown unit" in rec["parts"]["e03_a"]["message"]
    assert "value" in rec["parts"]["e03_b"]["message"]


def test_missing_reordered_and_retyped_cells_cost_only_their_parts(batch):
    rec = _check_losses(batch, "cells_moved")
    assert "never assigned" in rec["parts"]["e02_a"]["message"]


def test_infinite_loops_are_charged_to_their_part(batch):
    rec = _check_losses(batch, "infinite_loop")
    assert "limit" in rec["parts"]["e04_a"]["message"]
    assert "ignored the alarm" in rec["parts"]["e04_b"]["message"]
    assert rec["sandbox"]["restarts"] == 1


def test_memory_bomb(batch):
    rec = _check_losses(batch, "memory_bomb")
    assert "MemoryError" in rec["parts"]["e05_b"]["message"] and "memory limit (2048 MiB)" in rec["parts"]["e05_b"]["message"]


def test_fork_bomb_is_refused(batch):
    rec = _check_losses(batch, "fork_bomb")
    for gid in ("e06_a", "e13_d", "e11_c"):
        assert "not allowed" in rec["parts"][gid]["message"], rec["parts"][gid]


def test_snooping_on_other_submissions_and_grader_files_fails(batch):
    rec = _check_losses(batch, "snooper")
    # refused by the fences, or (bubblewrap) simply not there: the sandbox has its own /tmp
    assert any(w in rec["parts"]["e07_c"]["message"] for w in ("not allowed", "No such file")), rec["parts"]["e07_c"]
    assert not (batch["subs"] / "pwned.txt").exists()
    assert "landlock" in rec["sandbox"]["confinement"] or "unavailable" in rec["sandbox"]["confinement"]


def test_tampered_metadata_changes_nothing(batch):
    rec = batch["records"]["tampered"]
    assert rec["auto_score"] == _full(batch)
    assert "bonus" not in rec["parts"] and "bonus2" not in rec["parts"]
    assert any("metadata" in p and "e01_a=100" in p for p in rec["problems"])
    assert any("bonus" in p and "bonus2" in p for p in rec["problems"])


@pytest.mark.parametrize("name,needle", [("invalid_json", "not valid JSON"), ("not_a_notebook", "not a notebook")])
def test_unreadable_files_get_zero_and_a_message(batch, name, needle):
    rec = batch["records"][name]
    assert rec["status"] == "unreadable" and rec["auto_score"] == 0
    assert any(needle in p for p in rec["problems"])
    assert all(v["status"] in ("malformed", "manual") for v in rec["parts"].values())


def test_a_notebook_that_kills_its_kernel(batch):
    rec = _check_losses(batch, "kills_kernel")
    assert "was killed (SIGKILL" in rec["parts"]["e03_a"]["message"]
    assert "exited with status 3" in rec["parts"]["e05_g"]["message"]
    assert rec["sandbox"]["restarts"] == 2


def test_output_flood_is_capped(batch):
    rec = _check_losses(batch, "output_flood")
    flooded = [c for c in rec["cells"].values() if c.get("output_chars", 0) > 10**6]
    assert flooded and all(len(c.get("output", "")) <= 4000 for c in rec["cells"].values())
    assert len(rec.get("stray_output", "")) <= 4000


def test_outputs_written(batch):
    out, spec = batch["out"], batch["spec"]
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert {r["student"] for r in rows} == set(batch["cases"])
    assert set(rows[0]) >= {"student", "auto_score", "auto_max"} | {p.grade_id for p in spec.parts}
    by = {r["student"]: r for r in rows}
    assert float(by["instructor"]["auto_score"]) == spec.auto_points
    assert by["instructor"]["e01_c"] == ""  # manual parts left for the grader
    log = json.loads((out / "log.json").read_text(encoding="utf-8"))
    assert log["students"] == len(batch["cases"])
    assert (out / "scores_by_exercise.png").stat().st_size > 1000
    for name in batch["cases"]:
        assert (out / "feedback" / f"{name}.md").exists() and (out / "feedback" / f"{name}.html").exists()


def test_feedback_never_shows_expected_values_but_instructor_copy_does(batch):
    out = batch["out"]
    student = (out / "feedback" / "partly_right.md").read_text(encoding="utf-8")
    teacher = (out / "instructor" / "partly_right.md").read_text(encoding="utf-8")
    assert "expected" not in student and "expected" in teacher
    assert "memory-bound" in student  # the student's own wrong answer is not hidden... but
    assert "compute-bound" not in student.split("e06_b")[1].split("\n")[0]  # the right one is


def test_rerun_skips_already_graded(batch, limits):
    from autograder.grade import grade_batch

    subs = sorted(batch["subs"].glob("*.ipynb"))
    again = grade_batch(subs, "lab02", batch["out"], jobs=2, limits=limits, progress=False, variants="common")
    assert again["graded"] == 0 and len(again["skipped"]) == len(subs)


def test_merge_without_matplotlib_writes_everything_but_the_plot(batch, tmp_path, monkeypatch, capsys):
    """A GPU node's offline bundle may lack matplotlib: grades, feedback and log are still written, the
    plot is skipped with a note that says so (``grade`` used to end in a traceback after grading)."""
    import sys

    from autograder.report import PLOT_SKIPPED, merge

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "merged"
    log = merge([batch["out"]], out)
    assert log["plot"] == PLOT_SKIPPED and "matplotlib" in PLOT_SKIPPED
    assert json.loads((out / "log.json").read_text(encoding="utf-8"))["plot"] == PLOT_SKIPPED
    assert not (out / "scores_by_exercise.png").exists()
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert {r["student"] for r in rows} == set(batch["cases"])
    assert all((out / "feedback" / f"{name}.md").exists() for name in batch["cases"])
    assert PLOT_SKIPPED in capsys.readouterr().err
