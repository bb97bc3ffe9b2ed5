"""Fixtures: crafted submissions built from the instructor notebook, graded in one batch."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

from autograder.grade import grade_batch
from autograder.labs import load_lab
from autograder.release import strip_solutions
from autograder.sandbox import Limits

LIMITS = Limits(cell_timeout=5.0, notebook_timeout=40.0, memory_mb=2048, grace=1.0)


@pytest.fixture(scope="session")
def limits():
    return LIMITS


@pytest.fixture(scope="session")
def lab():
    spec, source = load_lab("pytorch")
    return spec, source


def _answer_cell(nb, gid: str) -> int:
    for i, c in enumerate(nb.cells):
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == f"{gid}_answer":
            return i
    raise KeyError(gid)


def _prepend(nb, gid: str, code: str) -> None:
    c = nb.cells[_answer_cell(nb, gid)]
    c.source = code + "\n" + c.source


def _append(nb, gid: str, code: str) -> None:
    c = nb.cells[_answer_cell(nb, gid)]
    c.source = c.source + "\n" + code


def _set(nb, gid: str, code: str) -> None:
    nb.cells[_answer_cell(nb, gid)].source = code


def crafted(source: Path, subs: Path) -> dict[str, dict]:
    """name -> {"nb": notebook or raw text, "lost": {grade_id: expected status}}"""
    base = nbformat.read(str(source), as_version=4)
    out: dict[str, dict] = {}

    def new(name):
        nb = copy.deepcopy(base)
        out[name] = {"nb": nb, "lost": {}}
        return nb, out[name]["lost"]

    new("instructor")
    out["released"] = {"nb": strip_solutions(copy.deepcopy(base), "pytorch"), "lost": "all"}

    nb, lost = new("partly_right")
    _append(nb, "e05_a", 'ANSWER["e05_a"]["value"] *= 1.5')
    _set(nb, "e06_b", 'ANSWER["e06_b"] = "memory-bound"')
    _append(nb, "e13_a", 'ANSWER["e13_a"] = lambda n, dtype="fp16": {"flops": 4 * n, "bytes": 2 * n * ELEM[dtype]}')
    _set(nb, "e03_c", 'ANSWER["e03_c"] = {"gemm_512", "gemm_1024"}')
    _set(nb, "e09_a", 'ANSWER["e09_a"] = {"auto", "cython", "nosuch"}')  # not an option: still just wrong
    _set(nb, "e04_a", 'ANSWER["e04_a"] = 4 +')  # syntax error
    lost.update(e05_a="wrong", e06_b="wrong", e13_a="wrong", e03_c="wrong", e09_a="wrong", e04_a="error")

    nb, lost = new("units")
    _set(nb, "e05_a", 'M = H = 4096; b = 2\nANSWER["e05_a"] = {"value": 2 * M * H * b / 1024, "unit": "KiB"}')  # right
    _set(nb, "e05_c", 'ANSWER["e05_c"] = {"value": 134.217728, "unit": "MiB"}')  # GB vs GiB confusion
    _set(nb, "e05_e", 'bw = 4800e9 * 0.9380\nANSWER["e05_e"] = {"value": 14.9, "unit": "MB"}')  # wrong dimension
    _set(nb, "e03_a", 'ANSWER["e03_a"] = {"value": 206.1, "unit": "furlongs"}')  # unknown unit
    _set(nb, "e03_b", 'ANSWER["e03_b"] = 162.0')  # a bare number where a quantity is asked
    lost.update(e05_c="wrong", e05_e="malformed", e03_a="malformed", e03_b="malformed")

    nb, lost = new("cells_moved")
    del nb.cells[_answer_cell(nb, "e02_a")]  # deleted answer cell
    nb.cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "setup"]
    i = _answer_cell(nb, "e03_a")  # retyped: a fresh cell, no metadata, different code
    nb.cells[i] = nbformat.v4.new_code_cell('peak, bw = 989.5, 4.8  # TFLOPS, TB/s\n'
                                            'ANSWER["e03_a"] = {"value": peak / bw, "unit": "FLOP/Byte"}')
    # reordered: exercise E12's cells moved to the very end, E11's test cells dropped
    e12 = [c for c in nb.cells if "e12" in json.dumps(c.get("metadata", {}))]
    nb.cells = [c for c in nb.cells if c not in e12] + e12
    nb.cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") not in ("e11_a", "e11_b")]
    lost.update(e02_a="missing")

    nb, lost = new("infinite_loop")
    _prepend(nb, "e04_a", "while True:\n    pass")
    _prepend(nb, "e04_b", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass")
    lost.update(e04_a="timeout", e04_b="timeout")

    nb, lost = new("memory_bomb")
    # 1 GiB per step: the 2 GiB address-space limit is hit on the second step, after touching
    # only 1 GiB (256 MiB steps touched 1.75 GiB first, ~1.7 s: too close to the 5 s cell limit
    # on a loaded 2-core machine, where it once read as a timeout)
    _prepend(nb, "e05_b", "hog = []\nwhile True:\n    hog.append(bytearray(1 << 30))")
    lost.update(e05_b="error")

    nb, lost = new("fork_bomb")
    _prepend(nb, "e06_a", "import os\nwhile True:\n    os.fork()")
    _prepend(nb, "e13_d", "import ctypes\nlibc = ctypes.CDLL(None)\nwhile True:\n    libc.fork()")
    _prepend(nb, "e11_c", "import subprocess\nsubprocess.run(['sh', '-c', ':(){ :|:& };:'])")
    lost.update(e06_a="error", e13_d="error", e11_c="error")

    nb, lost = new("snooper")
    spy = str(subs / "instructor.ipynb")
    _prepend(nb, "e07_c", f"open({spy!r}).read()")
    _set(nb, "e07_d", f"try:\n    stolen = open({spy!r}).read()\n    ANSWER['e07_d'] = 193.0\n"
                      f"except Exception:\n    ANSWER['e07_d'] = -1.0")
    _prepend(nb, "e12_b", "import os\nos.listdir('/work')")
    _prepend(nb, "e01_b", f"open({str(subs / 'pwned.txt')!r}, 'w').write('x')")  # next to the submissions
    _prepend(nb, "e02_b", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)")
    lost.update(e07_c="error", e07_d="wrong", e12_b="error", e01_b="error", e02_b="error")

    nb, lost = new("tampered")
    for c in nb.cells:
        m = c.get("metadata", {}).get("nbgrader", {})
        if m.get("grade_id") in ("e01_a", "e13_a"):
            m["points"] = 100
        if m.get("grade_id") == "e06_c":
            m["grade_id"] = "bonus"
            m["points"] = 50
    nb.cells.append(nbformat.v4.new_code_cell('ANSWER["bonus"] = 1', metadata={"nbgrader": {
        "grade": True, "grade_id": "bonus2", "locked": True, "points": 1000, "schema_version": 3, "solution": False}}))

    out["invalid_json"] = {"nb": '{"cells": [ {"cell_type": "code", "source": "ANSWER = {}"', "lost": "all"}
    out["not_a_notebook"] = {"nb": '{"hello": "world"}', "lost": "all"}

    nb, lost = new("kills_kernel")
    _prepend(nb, "e03_a", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    _prepend(nb, "e05_g", "import os\nos._exit(3)")
    lost.update(e03_a="error", e05_g="error")

    nb, lost = new("output_flood")
    _append(nb, "e04_a", "for i in range(300000):\n    print('flood', i)")
    _append(nb, "e04_b", "import os\nfor _ in range(100000):\n    os.write(1, b'y' * 1000)")
    _append(nb, "e05_a", "import sys\nsys.stderr.write('z' * (50 << 20))")
    return out


@pytest.fixture(scope="session")
def batch(tmp_path_factory, lab):
    spec, source = lab
    root = tmp_path_factory.mktemp("batch")
    subs = root / "subs"
    subs.mkdir()
    cases = crafted(source, subs)
    for name, case in cases.items():
        p = subs / f"{name}.ipynb"
        if isinstance(case["nb"], str):
            p.write_text(case["nb"], encoding="utf-8")
        else:
            nbformat.write(case["nb"], str(p))
    out = root / "out"
    summary = grade_batch(sorted(subs.glob("*.ipynb")), "pytorch", out, jobs=2, limits=LIMITS, progress=False, variants="common")
    from autograder.report import merge

    merge([out], out, "pytorch")
    recs = {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in (out / "records").glob("*.json")}
    return {"spec": spec, "cases": cases, "records": recs, "out": out, "subs": subs, "summary": summary}


@pytest.fixture()
def kernel_cache(monkeypatch):
    """A kernel cache the evaluate worker's unprivileged uid can reach (a grader running as root
    hands the cache to it; pytest's own tmp tree is private to root)."""
    import os
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="kg-cache-")
    os.chmod(d, 0o755)
    monkeypatch.setenv("KERNELGRADE_CACHE", d)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)
