"""Throughput benchmark: grade N students' instructor notebooks, report the rates.

``python -m autograder bench pytorch -n 100 -j 2`` builds N notebooks, each the solved
notebook of its own student (their variant, a signed tag), grades them as a class would
be graded (per-student references, tags checked, full isolation) and prints submissions
per minute, per second per core, the CPU seconds one submission costs, and the peak
resident memory of one sandboxed worker.

CPU time counts the grader, every process it waited for, and the runners' own CPU time
(bubblewrap's PID-1 reaper keeps it out of ``wait4``; each runner reports it), so
``per_cpu_second`` does not depend on what else the machine is doing.
"""
from __future__ import annotations

import json
import os
import resource
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import nbformat

from .grade import compute_references, grade_batch
from .labs import load_builder, load_lab
from .variants import TAG_KEY, make_tag, variant_for


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def bench(lab: str = "pytorch", n: int = 100, jobs: int | None = None, isolation: str = "auto") -> dict:
    jobs = jobs or os.cpu_count() or 1
    spec, source = load_lab(lab)
    builder = load_builder(lab)
    key = secrets.token_hex(16)
    old_key = os.environ.get("AUTOGRADER_KEY")
    os.environ["AUTOGRADER_KEY"] = key
    try:
        with tempfile.TemporaryDirectory(prefix="ag-bench-") as tmp:
            subs = Path(tmp) / "subs"
            subs.mkdir()
            for i in range(n):
                sid = f"s{i:04d}"
                if builder is not None:
                    nb = builder.build(variant_for(spec, sid), student=sid)
                else:
                    nb = nbformat.read(str(source), as_version=4)
                nb.metadata[TAG_KEY] = make_tag(spec, sid, key.encode())
                nbformat.write(nb, str(subs / f"{sid}.ipynb"))
            compute_references(spec)  # warm (the E9 references import tilelang once)
            c0, t0 = _cpu(), time.monotonic()
            summary = grade_batch(sorted(subs.glob("*.ipynb")), lab, Path(tmp) / "out", jobs=jobs,
                                  progress=False, isolation=isolation)
            wall = time.monotonic() - t0
            cpu = _cpu() - c0 + summary["runner_cpu_s_outside_rusage"]
            recs = [json.loads(r.read_text(encoding="utf-8")) for r in (Path(tmp) / "out" / "records").glob("*.json")]
            # full marks of what this machine grades (a kernel lab without a GPU: pending_gpu, auto_max less those parts)
            full = sum(1 for r in recs if r["auto_score"] == r["auto_max"] and r["status"] in ("graded", "pending_gpu"))
            shutil.rmtree(subs, ignore_errors=True)
    finally:
        if old_key is None:
            os.environ.pop("AUTOGRADER_KEY", None)
        else:
            os.environ["AUTOGRADER_KEY"] = old_key
    cores = min(jobs, os.cpu_count() or 1)
    return {"lab": spec.name, "submissions": n, "jobs": jobs, "cores": cores, "isolation": summary["isolation"],
            "wall_s": round(wall, 2), "per_minute": round(60 * n / wall, 1),
            "per_second_per_core": round(n / wall / cores, 3),
            "cpu_s": round(cpu, 2), "cpu_ms_per_submission": round(1000 * cpu / n, 1),
            "per_cpu_second": round(n / cpu, 2) if cpu > 0 else None,
            "load_avg_1min": round(os.getloadavg()[0], 2),
            "peak_rss_mb_per_worker": round(summary["peak_rss_kb_per_worker"] / 1024, 1),
            "all_full_marks": full == n}
