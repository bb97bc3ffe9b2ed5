"""The kernel labs (elementwise, gemm, perfmodel): specs, builders, release, and grading on
the CPU with the same command instructors run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.labs import load_lab

ROOT = Path(__file__).resolve().parents[2]
LABS = ("elementwise", "gemm", "perfmodel")


@pytest.mark.parametrize("lab", LABS)
def test_the_instructor_notebook_is_what_build_py_writes(lab):
    pytest.importorskip("nbformat")
    r = subprocess.run([sys.executable, str(ROOT / "labs" / lab / "build.py"), "--check"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("lab", LABS)
def test_nbgrader_metadata_matches_the_spec(lab):
    spec, source = load_lab(lab)
    nb = json.loads(source.read_text(encoding="utf-8"))
    graded = {}
    for c in nb["cells"]:
        m = c["metadata"]["nbgrader"]
        if m.get("grade"):
            graded[m["grade_id"]] = m["points"]
    assert graded == {p.grade_id: p.points for p in spec.parts}
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("lab", ("elementwise", "gemm"))
def test_release_replaces_solutions_by_runnable_starters(lab, tmp_path):
    pytest.importorskip("nbformat")
    from autograder.release import release

    out = release(lab, tmp_path / f"{lab}.ipynb")
    text = out.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text
    answers = ["".join(c["source"]) for c in json.loads(text)["cells"]
               if c["metadata"]["nbgrader"]["grade_id"].endswith("_answer")]
    assert answers and not any("kernels" in a for a in answers)  # the references call the course's kernels
    spec, _ = load_lab(lab)
    for p in spec.parts:
        if p.kind == "kernel" and p.stub:
            assert "@tilelang.jit" in p.stub or "prim_func" in p.stub
            assert json.dumps(p.stub.splitlines()[0])[1:-1] in text


def test_kernel_texts_carry_the_ledger_target():
    """The bound printed with each kernel exercise is the ledger's, recomputed here."""
    from ledger.fusion import rmsnorm_cost
    from ledger.machines import get_machine

    _, source = load_lab("elementwise")
    text = "".join("".join(c["source"]) for c in json.loads(source.read_text(encoding="utf-8"))["cells"])
    c = rmsnorm_cost(16384, 4096, "float16")
    assert f"{c.bytes / 1e6:.1f} MB" in text
    assert f"{c.bytes / get_machine('h200-calibrated').bandwidth * 1e6:.1f} µs" in text


def test_references_follow_the_ledger(monkeypatch):
    import ledger.case_study as cs
    import ledger.fusion as F

    spec, _ = load_lab("elementwise")
    before = spec.part("e2_a").reference()
    monkeypatch.setattr(F, "rmsnorm_cost", lambda m, n, dtype="float16", **k: F.Cost(1.0, 7.0e6, "x"))
    assert spec.part("e2_a").reference() == pytest.approx(7.0) != before
    pm, _ = load_lab("perfmodel")
    before = pm.part("e1_d").reference()
    monkeypatch.setattr(cs, "ideal_bytes", lambda s=cs.CASE: 5e6)
    assert pm.part("e1_d").reference() == pytest.approx(5.0) != before


def test_the_design_decision_is_the_ledgers_and_flips_with_the_machine():
    spec, _ = load_lab("perfmodel")
    assert spec.part("e7_a").reference() == "split-K=8"
    assert spec.part("e7_e").reference() == {"skinny": "no split", "decode": "one block per head"}


def test_e7_reads_the_compiled_scale_cast():
    pytest.importorskip("tilelang")
    spec, _ = load_lab("elementwise")
    from autograder.kernelgrade.structure import TYPE_BYTES

    load, store = spec.part("e7_a").reference(), spec.part("e7_c").reference()
    assert TYPE_BYTES[load] == 16 and TYPE_BYTES[store] == 8  # 4 fp32 in, 4 fp16 out per access
    assert "half" in spec.part("e7_b").reference()


# ----------------------------------------------------------------------------- graded on the CPU
@pytest.fixture(scope="module")
def cpu_grades(tmp_path_factory):
    """Instructor notebooks and the elementwise starter, graded with `python -m autograder grade`."""
    pytest.importorskip("tilelang")
    pytest.importorskip("nbformat")
    tmp = tmp_path_factory.mktemp("kernel_labs")
    env = {**os.environ, "KERNELGRADE_CACHE": str(tmp / "cache"), "KERNELGRADE_SHARED_CACHE": "1",
           "KERNELGRADE_GPU": "off"}
    from autograder.kernelgrade.gpurun import starter_submission

    out = {}
    for lab in LABS:
        _, src = load_lab(lab)
        subs = tmp / lab
        subs.mkdir()
        (subs / "instructor.ipynb").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
        if lab == "elementwise":
            (subs / "starter.ipynb").write_text(json.dumps(starter_submission(lab)), encoding="utf-8")
        r = subprocess.run([sys.executable, "-m", "autograder", "grade", lab, str(subs), "--out", str(tmp / f"g-{lab}"),
                            "-j", "2", "--no-progress"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=1500)
        assert r.returncode == 0, r.stderr[-2000:]
        out[lab] = {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in (tmp / f"g-{lab}" / "records").glob("*.json")}
        out[lab]["_dir"] = tmp / f"g-{lab}"
    return out


@pytest.mark.parametrize("lab", LABS)
def test_instructor_notebook_gets_every_point_this_machine_can_grade(cpu_grades, lab):
    rec = cpu_grades[lab]["instructor"]
    spec, _ = load_lab(lab)
    for p in spec.parts:
        v = rec["parts"][p.grade_id]
        if p.kind == "manual":
            assert v["status"] == "manual"
        elif p.kind == "kernel" and p.reference().aspect in ("correct", "speed"):
            assert v["status"] == "skipped" and v["score"] == 0, (p.grade_id, v)
        else:
            assert v["status"] == "right" and v["score"] == p.points, (p.grade_id, v)


def test_without_a_gpu_the_feedback_says_which_parts_were_not_graded(cpu_grades):
    fb = (cpu_grades["elementwise"]["_dir"] / "feedback" / "instructor.md").read_text(encoding="utf-8")
    assert "需要 GPU" in fb and "k1_add_speed" in fb


def test_the_released_starters_run_and_earn_only_what_they_do(cpu_grades):
    rec = cpu_grades["elementwise"]["starter"]
    parts = rec["parts"]
    assert parts["k1_add_struct"]["status"] == "wrong"  # one 2-byte element per thread
    for gid in ("k2_rmsnorm_struct", "k4_fused_struct"):  # copy-through skeletons: no reduction yet
        assert parts[gid]["status"] in ("partial", "wrong") and "reduction" in parts[gid]["message"]
    assert parts["a1_add_ascend"]["status"] == "partial"  # lowers, but not double-buffered
    for gid, v in parts.items():
        assert v["status"] not in ("error", "malformed", "timeout"), (gid, v)  # every starter elaborates and compiles


def test_the_analytic_sandbox_never_runs_kernel_cells(cpu_grades):
    rec = cpu_grades["elementwise"]["instructor"]
    assert rec["sandbox"]["finished"] and not rec.get("cells")
    assert rec["kernels"]["elaborate_confinement"]


def test_selfcheck_in_the_notebook_compiles_and_reads_structure(capsys):
    pytest.importorskip("tilelang")
    from autograder import check
    from autograder.kernelgrade.selfcheck import _MEMO

    spec, source = load_lab("gemm")
    nb = json.loads(source.read_text(encoding="utf-8"))
    ns: dict = {"ANSWER": {}}
    from autograder.kernelgrade.worker import _compiled

    for c in nb["cells"]:
        gid = c["metadata"]["nbgrader"]["grade_id"]
        if gid in ("kernel_setup", "k1_gemm_answer"):
            exec(_compiled("".join(c["source"]), f"selfcheck {gid}"), ns)
    out = check(ns["ANSWER"], "k1_gemm_struct", lab="gemm")
    assert out == {"k1_gemm_struct": "right"}
    _MEMO.clear()
    ns["ANSWER"]["k1_gemm"] = lambda M, N, K: None
    assert check(ns["ANSWER"], "k1_gemm", lab="gemm") == {"k1_gemm": "malformed"}
    assert "factory" in capsys.readouterr().out
