"""The recorded grading run: a batch of submissions graded on a GPU, written beside the labs.

    python -m autograder.kernelgrade.gpurun --labs elementwise --out labs/results
    python -m autograder.kernelgrade.gpurun --labs gemm --out labs/results

For each lab the batch is: the instructor's notebook (``reference``), the released
starters (``starter``), and every submission of ``tests/autograder/kernel_bad/manifest.json``
for that lab (known-bad, slow, partly wrong), each made by replacing one answer cell of the
instructor's notebook.  Everything is graded by :func:`autograder.grade.grade_batch`, the
grader instructors run, with ``-j`` workers (the GPU pass holds a lock: one submission on
the GPU at a time).  The reference is graded once with a cold kernel cache first, then the
batch, then the reference again with the cache warm (the per-submission wall time of a
resubmission).

Written: ``<out>/gpu-grading-<device>-<lab>.json`` with the device, date, versions and
command; per submission its scores and statuses per part, whether they meet the manifest's
expectation, and the raw findings the rubric scored (times, % copy, x cuBLAS, flags);
and the throughput (submissions per hour per GPU).  ``tests/autograder/test_kernel_recorded.py``
checks on the CPU that every recorded score is what the rubric gives for the recorded findings.

Needs only the standard library, torch, tilelang (e.g. from ``make bundle``) and nvcc: no
Jupyter packages (notebooks are read and written as JSON).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["BAD_DIR", "manifest", "make_submission", "starter_submission", "batch_for", "main"]

REPO = Path(__file__).resolve().parents[2]
BAD_DIR = REPO / "tests" / "autograder" / "kernel_bad"
VARIANT_ID = "recorded-run"


def manifest() -> list[dict]:
    return json.loads((BAD_DIR / "manifest.json").read_text(encoding="utf-8"))["submissions"]


def _instructor(lab: str) -> dict:
    from ..labs import load_lab

    _, src = load_lab(lab)
    return json.loads(src.read_text(encoding="utf-8"))


def make_submission(nb: dict, replace: dict[str, str]) -> dict:
    """A copy of notebook ``nb`` whose answer cells ``<gid>_answer`` hold the given sources."""
    out = json.loads(json.dumps(nb))
    seen = set()
    for cell in out["cells"]:
        gid = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id", "")
        key = gid.removesuffix("_answer")
        if gid.endswith("_answer") and key in replace:
            cell["source"] = replace[key]
            cell["outputs"], cell["execution_count"] = [], None
            seen.add(key)
    missing = set(replace) - seen
    if missing:
        raise KeyError(f"no answer cell for {sorted(missing)}")
    return out


def starter_submission(lab: str) -> dict:
    """The instructor notebook with every kernel answer replaced by its released starter."""
    from ..labs import load_lab

    spec, _ = load_lab(lab)
    starters = {p.grade_id: p.stub for p in spec.parts if p.kind == "kernel" and p.stub}
    return make_submission(_instructor(lab), starters)


def batch_for(lab: str, side: str | None = None, only: set | None = None) -> list[dict]:
    """[{"name", "kind", "expect", "nb"}] of the recorded batch of ``lab`` (manifest entries
    filtered by ``side`` when given)."""
    from ..labs import load_lab

    spec, _ = load_lab(lab)
    nb = _instructor(lab)
    kernel_ids = [p.grade_id for p in spec.parts if p.kind == "kernel"]
    out = []
    if side in (None, "gpu"):
        out.append({"name": "reference", "kind": "reference", "expect": {g: ["right"] for g in kernel_ids}, "nb": nb})
        out.append({"name": "starter", "kind": "starter", "expect": {}, "nb": starter_submission(lab)})
    for entry in manifest():
        if entry["lab"] != lab or (side and entry["side"] != side) or (only and entry["name"] not in only):
            continue
        src = (BAD_DIR / f"{entry['name']}.py").read_text(encoding="utf-8")
        out.append({"name": entry["name"], "kind": entry["kind"], "expect": entry["expect"], "side": entry["side"],
                    "nb": make_submission(nb, {entry["answer"]: src})})
    return out


def _meets(rec: dict, expect: dict) -> dict:
    return {gid: (rec.get("parts", {}).get(gid, {}).get("status") in allowed) for gid, allowed in expect.items()}


def _versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch

        out.update(torch=torch.__version__, cuda=torch.version.cuda,
                   device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                   sm_count=torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else None)
    except Exception as exc:  # pragma: no cover - reported, not fatal
        out["torch_error"] = str(exc)
    try:
        import tilelang

        out["tilelang"] = tilelang.__version__
    except Exception:
        out["tilelang"] = None
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        out["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        out["driver"] = None
    try:
        nv = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=20)
        m = re.search(r"release (\d+\.\d+)", nv.stdout)
        out["nvcc"] = m.group(1) if m else None
    except (OSError, subprocess.TimeoutExpired):
        out["nvcc"] = None
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                       timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        out["commit"] = None
    return out


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (s or "cpu").lower()).strip("-")


def _summary_of(rec: dict, sub: dict, spec) -> dict:
    k = rec.get("kernels", {})
    kernel_parts = {p.grade_id: p for p in spec.parts if p.kind == "kernel"}
    return {
        "name": sub["name"], "kind": sub["kind"], "side": sub.get("side", "gpu"),
        "status": rec.get("status"), "auto_score": rec.get("auto_score"), "auto_max": rec.get("auto_max"),
        "kernel_score": round(sum(v.get("score", 0) for g, v in rec.get("parts", {}).items() if g in kernel_parts), 6),
        "kernel_max": sum(p.points for p in kernel_parts.values()),
        "parts": {g: {"status": v.get("status"), "score": v.get("score"), "points": kernel_parts[g].points,
                      "message": v.get("message")}
                  for g, v in rec.get("parts", {}).items() if g in kernel_parts},
        "expect": sub["expect"], "meets": _meets(rec, sub["expect"]),
        "times": {x: k.get(x) for x in ("wall_s", "elaborate_s", "build_s", "lock_wait_s", "gpu_s", "evaluate_s")},
        "sandbox_wall_s": (rec.get("sandbox") or {}).get("wall_s"),
        "device": k.get("device"), "confinement": {"elaborate": k.get("elaborate_confinement"),
                                                   "evaluate": k.get("evaluate_confinement")},
        "course_modules": k.get("course_modules"), "findings": k.get("results"),
    }


def run_lab(lab: str, out_dir: Path, jobs: int, keep: Path | None, only: set | None = None, tag: str = "") -> Path:
    from ..grade import grade_batch
    from ..labs import load_lab

    spec, _ = load_lab(lab)
    work = Path(tempfile.mkdtemp(prefix=f"gpurun-{lab}-"))
    os.environ["KERNELGRADE_CACHE"] = str(work / "kernel-cache")
    os.environ["KERNELGRADE_SHARED_CACHE"] = "1"
    os.environ["KERNELGRADE_VARIANT_ID"] = VARIANT_ID
    subs = batch_for(lab, only=only)
    sub_dir = work / "submissions"
    sub_dir.mkdir(parents=True)
    for s in subs:
        (sub_dir / f"{s['name']}.ipynb").write_text(json.dumps(s["nb"], ensure_ascii=False), encoding="utf-8")
    ref = sub_dir / "reference.ipynb"
    t_start = time.monotonic()
    print(f"[gpurun] {lab}: reference, cold kernel cache", flush=True)
    t0 = time.monotonic()
    grade_batch([ref], lab, work / "cold", jobs=1, progress=False, force=True)
    cold_wall = time.monotonic() - t0
    others = [sub_dir / f"{s['name']}.ipynb" for s in subs if s["name"] != "reference"]
    print(f"[gpurun] {lab}: {len(others)} more submissions, -j {jobs}", flush=True)
    t0 = time.monotonic()
    summary = grade_batch(others, lab, work / "batch", jobs=jobs, progress=True, force=True)
    batch_wall = time.monotonic() - t0
    print(f"[gpurun] {lab}: reference again, warm kernel cache", flush=True)
    t0 = time.monotonic()
    grade_batch([ref], lab, work / "warm", jobs=1, progress=False, force=True)
    warm_wall = time.monotonic() - t0
    recs = {}
    for d in ("batch", "warm"):
        for f in (work / d / "records").glob("*.json"):
            recs[f.stem] = json.loads(f.read_text(encoding="utf-8"))
    cold_rec = json.loads((work / "cold" / "records" / "reference.json").read_text(encoding="utf-8"))
    rows = [_summary_of(recs[s["name"]], s, spec) for s in subs]
    gpu_s = [r["times"]["gpu_s"] for r in rows if r["times"].get("gpu_s")]
    per_gpu = statistics.mean(gpu_s) if gpu_s else None
    versions = _versions()
    speed = [f for r in rows for f in (r["findings"] or {}).values() if f.get("speed")]
    # a real class compiles every student's kernels cold: CPU seconds per submission from the
    # cold reference (its compile threads busy for build_s, plus one elaboration process)
    ck = cold_rec.get("kernels", {})
    cores = os.cpu_count() or 1
    cpu_s = (ck.get("build_s") or 0) * min(8, cores) + (ck.get("elaborate_s") or 0)
    cpu_bound = 3600 * cores / cpu_s if cpu_s else None
    cold_rate = min(x for x in (cpu_bound, 3600 / per_gpu if per_gpu else None) if x) if (cpu_bound or per_gpu) else None
    result = {
        "label": "recorded grading run (live on the GPU named below)",
        "lab": lab, "device": versions.get("device"), "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([os.path.basename(sys.executable), "-m", "autograder.kernelgrade.gpurun"] + sys.argv[1:]),
        "versions": versions, "jobs": jobs, "variant_id": VARIANT_ID,
        "protocol": next((f["speed"].get("protocol") for f in speed), None),
        "copy_gbps": sorted({round(f["speed"]["copy_gbps"], 1) for f in speed if f["speed"].get("copy_gbps")}),
        "timing": {
            "reference_cold_wall_s": round(cold_wall, 2), "reference_cold_detail": {
                x: cold_rec.get("kernels", {}).get(x) for x in ("elaborate_s", "build_s", "gpu_s", "wall_s")},
            "reference_warm_wall_s": round(warm_wall, 2),
            "batch_wall_s": round(batch_wall, 2), "batch_submissions": len(others),
            "batch_per_hour": round(3600 * len(others) / batch_wall, 1) if batch_wall else None,
            "gpu_pass_mean_s": round(per_gpu, 2) if per_gpu else None,
            "gpu_bound_per_hour_per_gpu": round(3600 / per_gpu, 1) if per_gpu else None,
            "class_of_100_hours_per_gpu": round(100 * per_gpu / 3600, 2) if per_gpu else None,
            "cpu_cores": cores, "cold_cpu_s_per_submission": round(cpu_s, 1),
            "cold_cpu_bound_per_hour": round(cpu_bound, 1) if cpu_bound else None,
            "class_of_100_cold_estimate_hours_per_gpu": round(100 / cold_rate, 2) if cold_rate else None,
            "total_wall_s": round(time.monotonic() - t_start, 2),
            "grade_batch_summary": {k: summary.get(k) for k in ("graded", "wall_s", "per_minute", "jobs")},
        },
        "all_expectations_met": all(all(r["meets"].values()) for r in rows),
        "submissions": rows,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"gpu-grading-{_slug(versions.get('device') or 'cpu')}-{lab}{'-' + _slug(tag) if tag else ''}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    print(f"[gpurun] {lab}: wrote {path}", flush=True)
    print(f"{'submission':<22s} {'kind':<13s} {'kernels':>9s}  expectations", flush=True)
    for r in rows:
        bad = [g for g, ok in r["meets"].items() if not ok]
        print(f"{r['name']:<22s} {r['kind']:<13s} {r['kernel_score']:>4g}/{r['kernel_max']:<4g}  "
              + ("met" if not bad else "NOT MET: " + ", ".join(f"{g}={r['parts'].get(g, {}).get('status')}" for g in bad)),
              flush=True)
    t = result["timing"]
    print(f"[gpurun] {lab}: reference cold {t['reference_cold_wall_s']} s, warm {t['reference_warm_wall_s']} s; "
          f"batch {t['batch_submissions']} in {t['batch_wall_s']} s ({t['batch_per_hour']}/h); "
          f"GPU pass {t['gpu_pass_mean_s']} s -> {t['gpu_bound_per_hour_per_gpu']}/h per GPU", flush=True)
    if keep:
        shutil.copytree(work, keep / lab, dirs_exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograder.kernelgrade.gpurun", description=__doc__.split("\n")[0])
    ap.add_argument("--labs", default="elementwise,gemm", help="comma list (default elementwise,gemm)")
    ap.add_argument("--out", type=Path, default=REPO / "labs" / "results")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="submissions in flight (the GPU pass is serialised)")
    ap.add_argument("--keep", type=Path, help="also copy the graded folders (records, feedback) here")
    ap.add_argument("--only", help="comma list of manifest names (the reference and the starter always run)")
    ap.add_argument("--tag", default="", help="suffix of the result file (for a batch split over several runs)")
    ap.add_argument("--dry-run-cpu", action="store_true",
                    help="run without a GPU (GPU parts not graded): checks the script, never a result to commit")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if args.dry_run_cpu:
        os.environ["KERNELGRADE_GPU"] = "off"
        for lab in [x for x in args.labs.split(",") if x]:
            run_lab(lab, args.out, args.jobs, args.keep, only, args.tag)
        return 0
    try:
        import torch

        if not torch.cuda.is_available():
            print("error: no CUDA device: the recorded run needs a GPU", file=sys.stderr)
            return 2
    except ImportError:
        print("error: torch is not installed", file=sys.stderr)
        return 2
    for lab in [x for x in args.labs.split(",") if x]:
        run_lab(lab, args.out, args.jobs, args.keep, only, args.tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
