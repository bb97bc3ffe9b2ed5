"""The Nsight Compute driver shared by the profiles of :mod:`measure.ncu`.

A profile module defines the workload (``child()``: every kernel warmed up, then one
launch of each inside the profiled range), the metrics it asks ncu for and how it
summarizes ncu's CSV; :func:`cli` runs ``ncu --clock-control none --profile-from-start off
... python -m <module> --child`` and writes ``<name>.csv`` and ``<name>.json`` (default
directory ``$OUT``, else ``measure/results/ncu``).  ncu's default ``--cache-control all``
flushes the caches before every profiled kernel, so each number is a cold-L2 launch;
``--clock-control none`` leaves the clocks as the timing harness sees them.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from measure.results import RESULTS_DIR

RESULTS = RESULTS_DIR / "ncu"


# ---------------------------------------------------------------- the profiled workload
def warm_up(launches: dict[str, Callable[[], Any]], rounds: int = 3) -> None:
    """Run every launch ``rounds`` times (compiles, caches, clocks), then synchronize."""
    import torch

    for _ in range(rounds):
        for fn in launches.values():
            fn()
    torch.cuda.synchronize()


def profile_once(launches: dict[str, Callable[[], Any]], order: tuple[str, ...]) -> None:
    """One launch of each kernel in ``order`` inside the profiled range (ncu runs with
    ``--profile-from-start off``), so the CSV's launch order is ``order``."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for name in order:
        launches[name]()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


# ---------------------------------------------------------------- parsing ncu's CSV
def _num(v: str) -> float | None:
    v = (v or "").strip().replace(",", "")
    if v in ("", "n/a", "N/A"):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def read_csv(text: str, metrics: tuple[str, ...] = ()) -> list[dict]:
    """Kernels in launch order: ``{"id", "name", "grid", "block", "metrics": {name: value}}``.

    Accepts the long ``--page details`` form (one row per metric, the default) and the
    wide ``--page raw`` form (one row per kernel, a units row after the header).
    Lines before the header (``==PROF==`` messages, program output) are skipped; in the
    wide form the columns named in ``metrics`` are read.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with '\"ID\"') found")
    body = [ln for ln in lines[start:] if ln.startswith('"')]  # drop ==PROF== and program lines
    rows = list(csv.DictReader(io.StringIO("\n".join(body))))
    kernels: dict[str, dict] = {}
    if rows and "Metric Name" in rows[0]:
        for r in rows:
            k = kernels.setdefault(r["ID"], {"id": int(r["ID"]), "name": r.get("Kernel Name", ""),
                                             "grid": r.get("Grid Size", ""), "block": r.get("Block Size", ""),
                                             "metrics": {}})
            k["metrics"][r["Metric Name"]] = _num(r["Metric Value"])
    else:
        for r in rows:
            if not (r.get("ID") or "").strip().isdigit():
                continue  # the units row
            kernels[r["ID"]] = {"id": int(r["ID"]), "name": r.get("Kernel Name", ""),
                                "grid": r.get("Grid Size", ""), "block": r.get("Block Size", ""),
                                "metrics": {m: _num(r.get(m, "")) for m in metrics if m in r}}
    return sorted(kernels.values(), key=lambda k: k["id"])


# ---------------------------------------------------------------- driver
def find_ncu() -> str:
    for cand in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if cand and Path(cand).is_file():
            return cand
    raise RuntimeError("ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")


def ncu_command(ncu: str, log_file: str, metrics: tuple[str, ...], module: str) -> list[str]:
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base",
            "--csv", "--metrics", ",".join(metrics), "--log-file", log_file,
            sys.executable, "-m", module, "--child"]


def _provenance(ncu: str | None, cmd: list[str] | None) -> dict:
    prov = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "cache_control": "ncu default (all caches flushed before each profiled kernel)",
            "clock_control": "none"}
    try:
        import tilelang
        import torch

        prov["tilelang"] = tilelang.__version__
        prov["torch"] = torch.__version__
        if torch.cuda.is_available():
            prov["device"] = torch.cuda.get_device_name(0)
            prov["sms"] = torch.cuda.get_device_properties(0).multi_processor_count
    except Exception as exc:  # provenance must not lose the measurement
        prov["env_error"] = repr(exc)
    if ncu:
        try:
            prov["ncu_version"] = subprocess.run([ncu, "--version"], capture_output=True, text=True,
                                                 timeout=60).stdout.strip().splitlines()[-1]
        except Exception as exc:
            prov["ncu_version"] = repr(exc)
    if cmd:
        prov["command"] = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))
    return prov


def cli(argv: list[str] | None, *, doc: str, name: str, module: str, child: Callable[[], None],
        summarize: Callable[[list[dict], dict], dict], report: Callable[[dict], None],
        metrics: tuple[str, ...], fallback_metrics: tuple[str, ...] | None = None) -> int:
    """The command line shared by the ncu modules: ``--child`` runs the profiled workload;
    ``--parse CSV`` summarizes an existing log; otherwise ncu runs ``module --child`` and
    ``DIR/<name>.csv`` and ``DIR/<name>.json`` are written (``--out DIR``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--child", action="store_true", help="run the profiled workload (under ncu)")
    ap.add_argument("--parse", metavar="CSV", help="summarize an existing ncu CSV log")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(RESULTS), help="output directory")
    args = ap.parse_args(argv)
    if args.child:
        child()
        return 0
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.parse:
        text = Path(args.parse).read_text()
        prov = _provenance(None, None)
        prov["parsed_from"] = str(args.parse)
    else:
        ncu = find_ncu()
        log = out_dir / f"{name}.csv"
        cmd = ncu_command(ncu, str(log), metrics, module)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        failed = proc.returncode != 0 or not log.exists() or '"ID"' not in log.read_text()
        if failed and fallback_metrics:
            # one retry with the metrics the chapter needs (an unknown metric name fails
            # the whole ncu run)
            cmd = ncu_command(ncu, str(log), fallback_metrics, module)
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        if proc.returncode != 0 or not log.exists():
            raise RuntimeError(f"ncu failed (rc={proc.returncode}); see output above")
        text = log.read_text()
        prov = _provenance(ncu, cmd)
    summary = summarize(read_csv(text, metrics), prov)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    report(summary)
    print("wrote", path)
    return 0


