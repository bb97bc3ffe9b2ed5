"""The recorded grading run on the GPU (labs/results/gpu-grading-<device>-<lab>.json): every
recorded score is what the rubric gives for the recorded findings, every submission got what
the manifest expects, and the run names its device, date, versions and command.

The files are written by ``python -m autograder.kernelgrade.gpurun`` on a GPU machine
(labs/README.md, "记录的评分运行"); until they are committed these tests are skipped.
Re-scoring uses today's rubric and lab specs, so recalibrated speed levels are checked against
the recorded measurements; the recorded statuses must equal today's only while the lab's
spec is the one the run graded with.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.kernelgrade import rubric
from autograder.kernelgrade.gpurun import manifest
from autograder.kernelgrade.tasks import get_task
from autograder.labs import lab_file_digest, load_lab

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(f for f in (ROOT / "labs" / "results").glob("gpu-grading-*-*.json")
               if "submissions" in json.loads(f.read_text(encoding="utf-8")))

pytestmark = pytest.mark.skipif(not FILES, reason="no recorded GPU grading run yet: run "
                                "`python -m autograder.kernelgrade.gpurun` on a GPU (labs/README.md) and commit labs/results/")


def _runs():
    return [json.loads(f.read_text(encoding="utf-8")) for f in FILES]


def test_each_run_names_device_date_versions_and_command():
    for run in _runs():
        assert run["device"] and run["date"] and run["command"].startswith("python")
        assert "dry run" not in run["label"]
        for k in ("python", "torch", "tilelang", "cuda"):
            assert run["versions"].get(k), k
        assert run["protocol"] and "L2" in run["protocol"]


def _rescored(run, sub):
    spec, _ = load_lab(run["lab"])
    out = {}
    for gid, rec in sub["parts"].items():
        part = spec.part(gid)
        ref = part.reference()
        out[gid] = rubric.score(ref.aspect, part.points, get_task(ref.task), sub["findings"][ref.answer])
    return out


def test_recorded_scores_are_what_the_rubric_gives_for_the_recorded_findings():
    for run in _runs():
        if run.get("lab_spec") != lab_file_digest(run["lab"]):
            continue  # the spec changed since (e.g. recalibrated levels): the next test re-scores
        for sub in run["submissions"]:
            for gid, v in _rescored(run, sub).items():
                rec = sub["parts"][gid]
                assert (v.status, round(v.score, 6)) == (rec["status"], round(rec["score"], 6)), \
                    f"{run['lab']}/{sub['name']}/{gid}: recorded {rec['status']} {rec['score']}, rubric {v.status} {v.score}"


def test_every_submission_gets_what_it_deserves_under_todays_rubric():
    covered: dict[str, set] = {}
    expect = {(e["lab"], e["name"]): e["expect"] for e in manifest()}
    for run in _runs():
        got = {s["name"] for s in run["submissions"]}
        assert {"reference", "starter"} <= got
        covered.setdefault(run["lab"], set()).update(got)
        for sub in run["submissions"]:
            want = expect.get((run["lab"], sub["name"]), sub["expect"])
            scores = _rescored(run, sub)
            bad = {g: scores[g].status for g, allowed in want.items() if scores[g].status not in allowed}
            assert not bad, f"{run['lab']}/{sub['name']}: {bad}"
    for lab, got in covered.items():  # a batch may be split over several recorded runs (--only)
        assert {e["name"] for e in manifest() if e["lab"] == lab} <= got, lab


def test_the_reference_gets_every_kernel_point_on_the_gpu():
    for run in _runs():
        ref = next(s for s in run["submissions"] if s["name"] == "reference")
        assert sum(v.score for v in _rescored(run, ref).values()) == ref["kernel_max"]
        for f in ref["findings"].values():
            if f.get("speed"):
                assert not f["speed"]["flags"] and f["speed"]["after_timing_ok"]


def test_a_resubmission_is_graded_within_a_minute_with_the_cache_warm():
    for run in _runs():
        if run["lab"] == "elementwise":
            assert run["timing"]["warm_resubmission_wall_s"] <= 60, run["timing"]
