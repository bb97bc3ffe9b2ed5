"""The recorded grading run on the GPU (labs/results/gpu-grading-*.json): every recorded
score is what the rubric gives for the recorded findings, every submission got what the
manifest expects, and the run names its device, date, versions and command.

The file is written by ``python -m autograder.kernelgrade.gpurun`` on a GPU machine
(labs/README.md, "GPU 评分"); until it is committed these tests are skipped.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.kernelgrade import rubric
from autograder.kernelgrade.gpurun import manifest
from autograder.kernelgrade.tasks import get_task
from autograder.labs import load_lab

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "labs" / "results").glob("gpu-grading-*.json"))

pytestmark = pytest.mark.skipif(not FILES, reason="no recorded GPU grading run yet: run "
                                "`python -m autograder.kernelgrade.gpurun` on a GPU (labs/README.md) and commit labs/results/")


def _runs():
    return [json.loads(f.read_text(encoding="utf-8")) for f in FILES]


def test_each_run_names_device_date_versions_and_command():
    for run in _runs():
        assert run["device"] and run["date"] and run["command"].startswith("python")
        for k in ("python", "torch", "tilelang", "cuda"):
            assert run["versions"].get(k), k
        assert run["protocol"] and "L2" in run["protocol"]


def test_recorded_scores_are_what_the_rubric_gives_for_the_recorded_findings():
    for run in _runs():
        spec, _ = load_lab(run["lab"])
        for sub in run["submissions"]:
            for gid, rec in sub["parts"].items():
                part = spec.part(gid)
                ref = part.reference()
                assert rec["points"] == part.points, f"{run['lab']}/{sub['name']}/{gid}: the spec's points changed"
                v = rubric.score(ref.aspect, part.points, get_task(ref.task), sub["findings"][ref.answer])
                assert (v.status, round(v.score, 6)) == (rec["status"], round(rec["score"], 6)), \
                    f"{run['lab']}/{sub['name']}/{gid}: recorded {rec['status']} {rec['score']}, rubric {v.status} {v.score}"


def test_every_submission_got_what_it_deserves():
    covered: dict[str, set] = {}
    for run in _runs():
        got = {s["name"] for s in run["submissions"]}
        assert {"reference", "starter"} <= got
        covered.setdefault(run["lab"], set()).update(got)
        for sub in run["submissions"]:
            bad = {g: sub["parts"][g]["status"] for g, ok in sub["meets"].items() if not ok}
            assert not bad, f"{run['lab']}/{sub['name']}: {bad}"
    for lab, got in covered.items():  # a batch may be split over several recorded runs (--only)
        assert {e["name"] for e in manifest() if e["lab"] == lab} <= got, lab


def test_the_reference_gets_every_kernel_point_on_the_gpu():
    for run in _runs():
        ref = next(s for s in run["submissions"] if s["name"] == "reference")
        assert ref["kernel_score"] == ref["kernel_max"]
        for f in ref["findings"].values():
            if f.get("speed"):
                assert not f["speed"]["flags"] and f["speed"]["after_timing_ok"]


def test_a_resubmission_is_graded_within_a_minute_with_the_cache_warm():
    for run in _runs():
        if run["lab"] == "elementwise":
            assert run["timing"]["reference_warm_wall_s"] <= 60, run["timing"]
