"""Known-bad kernel submissions (tests/autograder/kernel_bad/) graded on the CPU.

All of them go into one submission, each as its own kernel part, through the real
pipeline (confined elaboration, evaluation without student code): the ones whose verdict
needs no GPU (a PyTorch op or a cached tensor instead of a factory, a side-stream launcher,
a sleep, pasted C source, out_idx, a wrong signature, an escape attempt, a compile error)
must get exactly the status the manifest expects; the ones that need a GPU must elaborate
and compile and be reported as not graded here -- never credited.  One bad part must not
disturb the others.  Their GPU verdicts are checked in the recorded grading run
(tests/autograder/test_kernel_recorded.py).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
pytestmark = pytest.mark.slow  # compiles every known-bad kernel (in the sandboxed evaluate worker)

from autograder.extract import read_submission  # noqa: E402
from autograder.kernelgrade import kernel_parts  # noqa: E402
from autograder.kernelgrade.gpurun import BAD_DIR, manifest  # noqa: E402
from autograder.kernelgrade.pipeline import grade_kernel_parts  # noqa: E402
from autograder.labs import load_lab  # noqa: E402
from autograder.parts import LabSpec  # noqa: E402

SUFFIX = {"": "", "_speed": "_speed", "_struct": "_struct"}


def _task_of(lab: str, answer: str) -> str:
    spec, _ = load_lab(lab)
    return next(p.reference().task for p in spec.parts if p.kind == "kernel" and p.reference().answer == answer)


def _aspects(lab: str, answer: str) -> dict:
    """The points of each aspect the lab grades this answer in (the copy has no structure)."""
    spec, _ = load_lab(lab)
    return {p.reference().aspect: p.points for p in spec.parts
            if p.kind == "kernel" and p.reference().answer == answer}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    import os

    import shutil
    import tempfile

    tmp = tmp_path_factory.mktemp("kernel_bad")
    cache = tempfile.mkdtemp(prefix="kg-cache-")  # reachable by the evaluate worker's uid (pytest's tree is not)
    os.chmod(cache, 0o755)
    old = {k: os.environ.get(k) for k in ("KERNELGRADE_CACHE", "KERNELGRADE_CALL_TIMEOUT", "KERNELGRADE_GPU")}
    os.environ.update(KERNELGRADE_CACHE=cache, KERNELGRADE_CALL_TIMEOUT="5", KERNELGRADE_GPU="off")
    entries = manifest()
    parts, cells, expect = [], [], {}
    for e in entries:
        gid = "bad_" + e["name"]
        parts += kernel_parts(gid, "X", _task_of(e["lab"], e["answer"]), _aspects(e["lab"], e["answer"]),
                              e["name"], "")
        src = (BAD_DIR / f"{e['name']}.py").read_text(encoding="utf-8")
        src = re.sub(r'ANSWER\["\w+"\]', f'ANSWER["{gid}"]', src)
        cells.append({"cell_type": "code", "source": src, "outputs": [], "execution_count": None,
                      "metadata": {"nbgrader": {"grade_id": f"{gid}_answer", "solution": True}}})
        for key, allowed in e["expect"].items():
            expect[gid + key[len(e["answer"]):]] = (e, allowed)
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    path = tmp / "bad.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    spec = LabSpec(name="elementwise", title="known-bad", parts=tuple(parts))
    _, instructor = load_lab("elementwise")
    try:
        verdicts, detail = grade_kernel_parts(spec, read_submission(path), None, instructor)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(cache, ignore_errors=True)
    return entries, verdicts, detail, expect


def test_the_manifest_names_a_file_for_every_entry_and_covers_the_issue_list():
    names = {e["name"] for e in manifest()}
    assert names == {p.stem for p in BAD_DIR.glob("*.py")}
    kinds = " ".join(sorted(names))
    for must in ("empty", "partial", "lowp", "torch_op", "cached_tensor", "reads_output", "side_stream", "sleep"):
        assert must in kinds, must
    labs = {e["lab"] for e in manifest()}
    assert labs == {"elementwise", "gemm", "primer"}
    for lab in labs:  # every kernel lab has known-bad, slow and partly wrong ones in its batch
        assert {"known-bad", "slow", "partly-wrong"} <= {e["kind"] for e in manifest() if e["lab"] == lab}, lab


def test_cpu_side_submissions_get_the_status_they_deserve(graded):
    entries, verdicts, detail, expect = graded
    wrong = []
    for gid, (e, allowed) in expect.items():
        if e["side"] != "cpu":
            continue
        v = verdicts[gid]
        if v.status not in allowed or v.score:
            wrong.append(f"{gid}: {v.status} {v.score} ({v.message[:120]})")
    assert not wrong, wrong


def test_gpu_side_submissions_elaborate_and_compile_but_are_never_credited_here(graded):
    entries, verdicts, detail, expect = graded
    for e in entries:
        if e["side"] != "gpu":
            continue
        gid = "bad_" + e["name"]
        for aspect in ("", "_speed"):
            v = verdicts[gid + aspect]
            assert v.status == "skipped" and v.score == 0, (gid + aspect, v.status, v.message)
        if gid + "_struct" in verdicts:
            assert verdicts[gid + "_struct"].status in ("right", "partial", "wrong"), verdicts[gid + "_struct"].message


def test_structure_is_read_even_when_the_gpu_verdict_waits(graded):
    entries, verdicts, detail, expect = graded
    for gid, (e, allowed) in expect.items():
        if gid.endswith("_struct") and e["side"] == "gpu":
            assert verdicts[gid].status in allowed, (gid, verdicts[gid].message)


def test_escape_attempts_fail_inside_the_confinement(graded):
    entries, verdicts, detail, expect = graded
    msg = verdicts["bad_add_escape"].message
    assert "escaped" not in msg and ("Operation not permitted" in msg or "Permission" in msg)
    conf = detail["elaborate_confinement"]
    assert any(line.startswith("seccomp: no new processes") for line in conf)
    assert any(line.startswith("landlock") for line in conf) and detail["elaborate_isolation"] in ("bwrap", "uid",
                                                                                                   "process")


def test_pasted_source_never_reaches_the_compiler(graded, tmp_path):
    entries, verdicts, detail, expect = graded
    assert "pragma_import_c" in verdicts["bad_add_inject"].message
    assert not Path("/tmp/pwned").exists()


def test_the_sleeper_is_stopped_by_its_own_limit_and_the_others_still_graded(graded):
    entries, verdicts, detail, expect = graded
    assert verdicts["bad_add_python_sleep"].status == "timeout"
    assert detail["elaborate_s"] < 120
    assert verdicts["bad_add_cached_tensor"].status == "malformed"  # graded after the sleeper, same process
