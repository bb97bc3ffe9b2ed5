"""Measure the DRAM bytes designs A, B and C of chapter 28's case really move.

One command on the GPU machine::

    python -m kernels.ncu_case [--out DIR]

runs Nsight Compute on this module's workload and writes ``ncu_case.json`` (and the
raw ``ncu_case.csv``) to ``DIR`` (default ``$OUT`` when set, else ``kernels/results/ncu``;
the committed copy lives in ``kernels/results/ncu/`` -- a sub-folder, so the runner's
``kernels/results/*.json`` device files never see it).
Equivalent by hand::

    ncu --clock-control none --profile-from-start off --print-units base --csv \\
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,... \\
        --log-file ncu_case.csv python -m kernels.ncu_case --child
    python -m kernels.ncu_case --parse ncu_case.csv

What is profiled (``--child``): the three designs are compiled, their inputs built
(4096 tokens, 32 q + 8 kv heads, head_dim 128) and every kernel is warmed up *before*
``cudaProfilerStart``; inside the profiled range exactly four kernels run, once each:

0. a calibration kernel, ``torch.mul(src, 2.0, out=dst)`` on 2**24 fp32 (64 MiB in,
   64 MiB out, larger than the 50 MiB L2): the meter must read ~67.1 MB each way;
1. design A, 2. design B, 3. design C.

Nsight Compute's default ``--cache-control all`` flushes the caches before every
profiled kernel, so each number is a cold-L2 launch; ``--clock-control none`` leaves
the clocks as the timing harness sees them.  ``lts__t_bytes.sum`` (bytes through L2)
is collected next to DRAM bytes: if L2 absorbs design A's repeated table reads, L2
traffic stays near the ledger's no-cache bytes while DRAM traffic falls toward the
ideal.
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

METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "lts__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
)
ORDER = ("calibration", "A", "B", "C")
CAL_ELEMS = 1 << 24
RESULTS = Path(__file__).resolve().parent / "results" / "ncu"


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


def child() -> None:
    """The workload ncu profiles: warm everything, then one launch of each kernel."""
    import torch

    from kernels import case_study as cs

    dev = torch.device("cuda")
    T_, H, D = cs.TOKENS, cs.Q_HEADS + cs.KV_HEADS, cs.HEAD_DIM
    g = torch.Generator(device=dev)
    g.manual_seed(28)
    x = (torch.randn((T_, H, D), generator=g, device=dev) * 2).bfloat16()
    w = (torch.randn((2, D), generator=g, device=dev) * 0.5 + 1).bfloat16()
    cos, sin = cs.rope_tables(T_, device=dev)
    q8 = torch.empty((T_ * H, D), dtype=torch.float8_e4m3fn, device=dev)
    s = torch.empty((T_ * H,), dtype=torch.float32, device=dev)
    xv = x.view(T_ * H, D)
    kernels = {d: cs.get_kernel(d, T_) for d in cs.DESIGNS}
    src = torch.randn(CAL_ELEMS, generator=g, device=dev)
    dst = torch.empty_like(src)
    launches = {
        "calibration": lambda: torch.mul(src, 2.0, out=dst),
        **{d: (lambda k=k: k(xv, w, cos, sin, q8, s)) for d, k in kernels.items()},
    }
    warm_up(launches)
    # sanity: design C's scales against the reference (outside the profiled range)
    _, s_ref, _ = cs.reference(x, w, cos, sin)
    err = ((s.view(T_, H) - s_ref).abs() / s_ref.abs()).max().item()
    print(f"[ncu_case] design C scale max rel err {err:.2e}", file=sys.stderr)
    profile_once(launches, ORDER)


# ---------------------------------------------------------------- parsing ncu's CSV
def _num(v: str) -> float | None:
    v = (v or "").strip().replace(",", "")
    if v in ("", "n/a", "N/A"):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def read_csv(text: str) -> list[dict]:
    """Kernels in launch order: ``{"id", "name", "grid", "block", "metrics": {name: value}}``.

    Accepts the long ``--page details`` form (one row per metric, the default) and the
    wide ``--page raw`` form (one row per kernel, a units row after the header).
    Lines before the header (``==PROF==`` messages, program output) are skipped.
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
                                "metrics": {m: _num(r.get(m, "")) for m in METRICS if m in r}}
    return sorted(kernels.values(), key=lambda k: k["id"])


def summarize(kernels: list[dict], provenance: dict | None = None) -> dict:
    """Measured bytes and times of the designs next to the ledger's budget."""
    from kernels import case_study as cs
    from ledger import case_study as lc

    if len(kernels) != len(ORDER):
        raise ValueError(f"expected {len(ORDER)} profiled kernels ({', '.join(ORDER)}), got {len(kernels)}")
    ideal = lc.ideal_bytes()
    out: dict = {"provenance": provenance or {}, "ideal_mb": ideal / 1e6, "designs": {}}
    for name, k in zip(ORDER, kernels):
        m = k["metrics"]
        rd, wr = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
        ns = m.get("gpu__time_duration.sum")
        rec = {
            "kernel": k["name"][:80], "grid": k["grid"], "block": k["block"],
            "dram_read_mb": None if rd is None else rd / 1e6,
            "dram_write_mb": None if wr is None else wr / 1e6,
            "dram_mb": None if rd is None or wr is None else (rd + wr) / 1e6,
            "l2_mb": None if m.get("lts__t_bytes.sum") is None else m["lts__t_bytes.sum"] / 1e6,
            "l2_hit_pct": m.get("lts__t_sector_hit_rate.pct"),
            "warps_active_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "registers_per_thread": m.get("launch__registers_per_thread"),
            "time_us": None if ns is None else ns / 1e3,
        }
        if rec["dram_mb"] is not None and ns:
            rec["dram_gbps"] = (rd + wr) / ns
        if name == "calibration":
            rec["expected_mb_each_way"] = CAL_ELEMS * 4 / 1e6
            out["calibration"] = rec
            continue
        d = cs.ledger_design(name)
        grid = int(m["launch__grid_size"]) if m.get("launch__grid_size") is not None else None
        if grid is not None and grid != d.grid:
            raise ValueError(f"kernel {k['id']} has grid {grid}, design {name} needs {d.grid}: order mixed up")
        rec.update({
            "rows_per_block": d.rows_per_block, "ledger_mb": d.total_bytes / 1e6,
            "ledger_floor_us": lc.sol_seconds(d.total_bytes) * 1e6,
            "ideal_floor_us": lc.sol_seconds(ideal) * 1e6,
        })
        if rec["dram_mb"] is not None:
            rec["measured_over_ledger"] = rec["dram_mb"] / rec["ledger_mb"]
            rec["measured_over_ideal"] = rec["dram_mb"] / (ideal / 1e6)
        if rec["l2_mb"] is not None:
            rec["l2_over_ledger"] = rec["l2_mb"] / rec["ledger_mb"]
        out["designs"][name] = rec
    ds = out["designs"]
    if all(ds[n].get("time_us") for n in "ABC"):
        out["time_ratio_A_over_C"] = ds["A"]["time_us"] / ds["C"]["time_us"]
        out["time_ratio_B_over_C"] = ds["B"]["time_us"] / ds["C"]["time_us"]
    if all(ds[n].get("dram_mb") for n in "ABC"):
        out["dram_ratio_A_over_C"] = ds["A"]["dram_mb"] / ds["C"]["dram_mb"]
        out["ledger_ratio_A_over_C"] = ds["A"]["ledger_mb"] / ds["C"]["ledger_mb"]
    return out


# ---------------------------------------------------------------- driver
def find_ncu() -> str:
    for cand in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if cand and Path(cand).is_file():
            return cand
    raise RuntimeError("ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")


MINIMAL_METRICS = METRICS[:3] + ("launch__grid_size",)


def ncu_command(ncu: str, log_file: str, metrics: tuple[str, ...] = METRICS,
                module: str = "kernels.ncu_case") -> list[str]:
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
    summary = summarize(read_csv(text), prov)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    report(summary)
    print("wrote", path)
    return 0


def _report(summary: dict) -> None:
    cal = summary["calibration"]
    print(f"calibration: read {cal['dram_read_mb']:.1f} MB write {cal['dram_write_mb']:.1f} MB "
          f"(expected {cal['expected_mb_each_way']:.1f} each way)")
    for n, d in summary["designs"].items():
        print(f"design {n}: DRAM {d['dram_mb']:.2f} MB (ledger {d['ledger_mb']:.2f}, "
              f"x{d['measured_over_ledger']:.2f}), L2 {d['l2_mb']} MB, {d['time_us']:.1f} us")


def main(argv: list[str] | None = None) -> int:
    return cli(argv, doc=__doc__, name="ncu_case", module="kernels.ncu_case", child=child, summarize=summarize,
               report=_report, metrics=METRICS, fallback_metrics=MINIMAL_METRICS)


if __name__ == "__main__":
    raise SystemExit(main())
