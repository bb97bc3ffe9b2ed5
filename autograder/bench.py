"""Throughput benchmark: grade N copies of the instructor notebook, report the rates.

``python -m autograder bench lab02 -n 100 -j 2`` prints submissions per minute, per
second per core, and the peak resident memory of one sandboxed worker.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from .grade import grade_batch
from .labs import load_lab


def bench(lab: str = "lab02", n: int = 100, jobs: int | None = None) -> dict:
    jobs = jobs or os.cpu_count() or 1
    _, source = load_lab(lab)
    with tempfile.TemporaryDirectory(prefix="ag-bench-") as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        text = source.read_text(encoding="utf-8")
        for i in range(n):  # distinct content: no submission is skipped as already graded
            (subs / f"s{i:04d}.ipynb").write_text(text.replace('"nbformat_minor"', f'"x_copy": {i}, "nbformat_minor"', 1),
                                                   encoding="utf-8")
        t0 = time.monotonic()
        summary = grade_batch(sorted(subs.glob("*.ipynb")), lab, Path(tmp) / "out", jobs=jobs, progress=False)
        wall = time.monotonic() - t0
        recs = list((Path(tmp) / "out" / "records").glob("*.json"))
        import json

        full = sum(1 for r in recs if json.loads(r.read_text())["auto_score"] == json.loads(r.read_text())["auto_max"])
        shutil.rmtree(subs, ignore_errors=True)
    cores = min(jobs, os.cpu_count() or 1)
    return {"lab": lab, "submissions": n, "jobs": jobs, "cores": cores, "wall_s": round(wall, 2),
            "per_minute": round(60 * n / wall, 1), "per_second_per_core": round(n / wall / cores, 3),
            "peak_rss_mb_per_worker": round(summary["peak_rss_kb_per_worker"] / 1024, 1),
            "all_full_marks": full == n}
