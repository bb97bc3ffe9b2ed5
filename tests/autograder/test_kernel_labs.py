"""The kernel labs (elementwise, gemm, perfmodel, primer): specs, builders, release, and
grading on the CPU with the same command instructors run (per-student variants, signed tags)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.labs import load_lab

ROOT = Path(__file__).resolve().parents[2]
LABS = ("elementwise", "gemm", "perfmodel", "primer")
KERNEL_LABS = ("elementwise", "gemm", "primer")


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


@pytest.mark.parametrize("lab", KERNEL_LABS)
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
    v = spec.default_variant()
    before = spec.part("e2_a").reference(v)
    monkeypatch.setattr(F, "rmsnorm_cost", lambda m, n, dtype="float16", **k: F.Cost(1.0, 7.0e6, "x"))
    assert spec.part("e2_a").reference(v) == pytest.approx(7.0) != before
    pm, _ = load_lab("perfmodel")
    before = pm.part("e1_d").reference(pm.default_variant())
    monkeypatch.setattr(cs, "ideal_bytes", lambda s=cs.CASE: 5e6)
    assert pm.part("e1_d").reference(pm.default_variant()) == pytest.approx(5.0) != before


def test_the_primer_references_are_the_ledgers_on_each_students_numbers(monkeypatch):
    import ledger.primer as LP
    from autograder.variants import variant_for

    spec, _ = load_lab("primer")
    a, b = variant_for(spec, "alice"), variant_for(spec, "bob")
    for gid, want in (("e1_a", lambda v: LP.launch_shape(v["E1.N"], v["E1.threads"]).blocks),
                      ("e4_a", lambda v: LP.row_sum_tile(v["E4.blk_m"], v["E4.blk_n"], 128, v["E4.stages"]).smem_bytes
                       / 1024)):
        assert spec.part(gid).reference(a) == want(a) and spec.part(gid).reference(b) == want(b)
    monkeypatch.setattr(LP, "split_for", lambda m, blk_m, tiles, machine="h200-spec": 7)
    assert spec.part("e8_c").reference(a) == 7 and spec.part("e8_d").reference(a) == 256 * 7


def test_the_design_decision_is_the_ledgers_and_flips_with_the_machine():
    spec, _ = load_lab("perfmodel")
    book = spec.default_variant()
    assert spec.part("e7_a").reference(book) == "split-K=8"
    assert spec.part("e7_e").reference(book) == {"skinny": "no split", "decode": "one block per head"}
    # a wider skinny GEMM fills the machine without splitting; a decode of 8 sequences of 32 heads too
    wide = {**book, "E7.M": 2048}
    assert spec.part("e7_a").reference(wide) == "no split"
    assert spec.part("e7_c").reference({**book, "E7.batch": 8}) == "one block per head"


@pytest.mark.slow
def test_e7_reads_the_compiled_scale_cast():
    pytest.importorskip("tilelang")
    spec, _ = load_lab("elementwise")
    from autograder.kernelgrade.structure import TYPE_BYTES

    load, store = spec.part("e7_a").reference(None), spec.part("e7_c").reference(None)
    assert TYPE_BYTES[load] == 16 and TYPE_BYTES[store] == 8  # 4 fp32 in, 4 fp16 out per access
    assert "half" in spec.part("e7_b").reference(None)


# ----------------------------------------------------------------------------- graded on the CPU
@pytest.fixture(scope="module")
def cpu_grades(tmp_path_factory):
    """Each lab's instructor notebook (and the elementwise and primer starters), released to a
    student of their own -- their variant, a tag signed with a course key -- and graded with
    `python -m autograder grade` (per-student mode, tags checked), without a GPU."""
    pytest.importorskip("tilelang")
    import secrets

    from autograder.kernelgrade.gpurun import batch_for

    import shutil
    import tempfile

    tmp = tmp_path_factory.mktemp("kernel_labs")
    key = secrets.token_hex(16)
    cache = tempfile.mkdtemp(prefix="kg-cache-")  # reachable by the evaluate worker's uid (pytest's tree is not)
    os.chmod(cache, 0o755)
    env = {**os.environ, "KERNELGRADE_CACHE": cache, "KERNELGRADE_SHARED_CACHE": "1",
           "KERNELGRADE_GPU": "off", "AUTOGRADER_KEY": key}
    out = {}
    for lab in LABS:
        subs = tmp / lab
        subs.mkdir()
        if lab in KERNEL_LABS:
            for s in batch_for(lab, key.encode(), side="gpu", only=set()):
                if s["name"] == "reference" or (s["name"] == "starter" and lab in ("elementwise", "primer")):
                    (subs / f"{s['name']}.ipynb").write_text(json.dumps(s["nb"]), encoding="utf-8")
        else:  # no kernels: the instructor notebook of student "reference", tagged as released to them
            import nbformat

            from autograder.labs import load_builder
            from autograder.variants import TAG_KEY, make_tag, variant_for

            spec, _ = load_lab(lab)
            nb = load_builder(lab).build(variant_for(spec, "reference"), student="reference")
            nb.metadata[TAG_KEY] = make_tag(spec, "reference", key.encode())
            nbformat.write(nb, str(subs / "reference.ipynb"))
        r = subprocess.run([sys.executable, "-m", "autograder", "grade", lab, str(subs), "--out", str(tmp / f"g-{lab}"),
                            "-j", "2", "--no-progress"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
        assert r.returncode == 0, r.stderr[-2000:]
        out[lab] = {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in (tmp / f"g-{lab}" / "records").glob("*.json")}
        out[lab]["_dir"] = tmp / f"g-{lab}"
    yield out
    shutil.rmtree(cache, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_instructor_notebook_gets_every_point_this_machine_can_grade(cpu_grades, lab):
    rec = cpu_grades[lab]["reference"]
    spec, _ = load_lab(lab)
    pending = sum(p.points for p in spec.parts if p.kind == "kernel" and p.reference().aspect in ("correct", "speed"))
    # graded except what needs a GPU: pending, and neither a zero nor part of the maximum
    assert rec["status"] == ("pending_gpu" if pending else "graded"), rec["problems"]
    assert rec["variant"]["tag"] in ("ok", "common"), rec["problems"]
    assert rec["auto_score"] == rec["auto_max"] == pytest.approx(spec.auto_points - pending)
    for p in spec.parts:
        v = rec["parts"][p.grade_id]
        if p.kind == "manual":
            assert v["status"] == "manual"
        elif p.kind == "kernel" and p.reference().aspect in ("correct", "speed"):
            assert v["status"] == "skipped" and v["score"] == 0, (p.grade_id, v)
        else:
            assert v["status"] == "right" and v["score"] == p.points, (p.grade_id, v)


@pytest.mark.slow
def test_without_a_gpu_the_feedback_says_which_parts_were_not_graded(cpu_grades):
    fb = (cpu_grades["elementwise"]["_dir"] / "feedback" / "reference.md").read_text(encoding="utf-8")
    assert "需要 GPU" in fb and "k1_add_speed" in fb


@pytest.mark.slow
def test_the_released_starters_run_and_earn_only_what_they_do(cpu_grades):
    p = cpu_grades["primer"]["starter"]["parts"]
    assert p["k2_scale_struct"]["status"] == "wrong" and "2 B" in p["k2_scale_struct"]["message"]
    assert p["k3_row_sum_struct"]["status"] == "wrong" and "reduction" in p["k3_row_sum_struct"]["message"]
    for gid, v in p.items():
        assert v["status"] not in ("error", "malformed", "timeout"), (gid, v)
    rec = cpu_grades["elementwise"]["starter"]
    parts = rec["parts"]
    assert parts["k1_add_struct"]["status"] == "wrong"  # one 2-byte element per thread
    for gid in ("k2_rmsnorm_struct", "k4_fused_struct"):  # copy-through skeletons: no reduction yet
        assert parts[gid]["status"] in ("partial", "wrong") and "reduction" in parts[gid]["message"]
    assert parts["a1_add_ascend"]["status"] == "partial"  # lowers, but not double-buffered
    for gid, v in parts.items():
        assert v["status"] not in ("error", "malformed", "timeout"), (gid, v)  # every starter elaborates and compiles


@pytest.mark.slow
def test_the_analytic_sandbox_never_runs_kernel_cells(cpu_grades):
    rec = cpu_grades["elementwise"]["reference"]
    assert rec["sandbox"]["finished"] and not rec.get("cells")
    assert rec["kernels"]["elaborate_confinement"]
    # the student's own variant shape was elaborated (and is what the record names)
    v = rec["variant"]["params"]
    assert rec["kernels"]["variant_shapes"]["k1_add"] == {"N": v["K1.N"], "dtype": v["K1.dtype"]}
    assert rec["kernels"]["elaborate_isolation"] == rec["kernels"]["evaluate_isolation"] or \
        rec["kernels"]["evaluate_isolation"]


@pytest.mark.slow
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


# ----------------------------------------------------------------------------- nbgrader
@pytest.mark.slow
def test_nbgrader_gives_kernel_parts_the_same_points_as_ours_without_a_gpu(tmp_path, monkeypatch, kernel_cache):
    """The primer's instructor notebook autograded by the real nbgrader on this GPU-less machine:
    every part scores what `grade --common` gives it -- the structure points through nbgrader's
    partial credit, the parts that need a GPU 0 (they raise; never unearned points)."""
    pytest.importorskip("tilelang")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    from autograder.grade import grade_batch

    lab = "primer"
    spec, source = load_lab(lab)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("KERNELGRADE_GPU", "off")
    course = tmp_path / "course"
    (course / "source" / lab).mkdir(parents=True)
    (course / "source" / lab / f"{lab}.ipynb").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    c = Config()
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.course_id = "tilelang-course"
    c.ExecutePreprocessor.timeout = 900
    c.Execute.timeout = 900
    api = NbGraderAPI(config=c)
    assert api.generate_assignment(lab)["success"]
    d = course / "submitted" / "instructor" / lab
    d.mkdir(parents=True)
    nb = nbformat.read(str(source), as_version=4)
    nbformat.write(nb, str(d / f"{lab}.ipynb"))
    result = api.autograde(lab, "instructor")
    assert result["success"], result.get("log")
    ours_dir = tmp_path / "ours"
    ours_dir.mkdir()
    nbformat.write(nb, str(ours_dir / "instructor.ipynb"))
    grade_batch([ours_dir / "instructor.ipynb"], lab, tmp_path / "out", jobs=1, progress=False, variants="common")
    ours = json.loads((tmp_path / "out" / "records" / "instructor.json").read_text(encoding="utf-8"))
    auto_ids = {p.grade_id for p in spec.parts if p.auto}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nbg = gb.find_submission_notebook(lab, lab, "instructor")
        theirs = {g.name: g.score for g in nbg.grades if g.name in auto_ids}
    mine = {gid: ours["parts"][gid]["score"] for gid in auto_ids}
    assert theirs == pytest.approx(mine), {g: (theirs[g], mine[g]) for g in auto_ids if theirs[g] != pytest.approx(mine[g])}
    assert mine["k2_scale_struct"] == 1 and mine["k2_scale"] == 0 and ours["parts"]["k2_scale"]["status"] == "skipped"
