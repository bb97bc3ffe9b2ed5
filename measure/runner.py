"""Run the GPU suites live on a CUDA GPU, or show the recorded results.

Usage::

    python -m measure.runner                            # live if CUDA is available, else recorded
    python -m measure.runner --topic elementwise        # live: writes measure/results/raw/<device>.runN.json
    python -m measure.runner --suite gemm.ladder,norm   # suites by name (a prefix selects a package)
    python -m measure.runner --list [--topic gemm]      # the suites it would run
    python -m measure.runner --recorded --device nvidia-h200
    python -m measure.runner --merge --device nvidia-h200   # re-merge the manifest's inputs

Live mode imports every module of :mod:`measure.suites` that defines ``gpu_suite(h)``
(the suite's name is its module path below ``measure.suites``: ``norm``,
``gemm.ladder``), calls each with one :class:`measure.harness.Harness` inside
``try/except`` (one failing family never loses the others: the error and its traceback
are recorded), measures the device copy bandwidth once at the start, and rewrites the
results file (by default the next ``measure/results/raw/<device>.runN.json``, never the
merged file) after *every* suite, so a run cut short still leaves data.  Every suite
records the commit it ran (and whether the checkout was dirty) and the sha256 of the
kernel sources and of its own module.  A run of a subset of suites keeps the other suites
already in the output file.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from measure.render import render
from measure.results import (RESULTS_DIR, SCHEMA, device_slug, load_results, merge_inputs, merge_results,
                             next_raw_path, write_results)

ROOT = Path(__file__).resolve().parent.parent
SUITES_DIR = Path(__file__).resolve().parent / "suites"

#: Topic -> the suites (names or package prefixes) that measure it.
TOPICS = {
    "pytorch": ("pytorch",),
    "primer": ("primer",),
    "elementwise": ("elementwise", "quant", "norm", "rope", "fused"),
    "gemm": ("gemm",),
    "perfmodel": ("case_study", "carver"),
}


# ---------------------------------------------------------------- discovery
def _setup_cuda_env() -> None:
    """Point tilelang at nvcc when CUDA_HOME is unset (e.g. /usr/local/cuda on GPU boxes)."""
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"):
        return
    if shutil.which("nvcc"):
        return
    for cand in ("/usr/local/cuda", *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)):
        if (Path(cand) / "bin" / "nvcc").exists():
            os.environ["CUDA_HOME"] = str(cand)
            os.environ["PATH"] = f"{cand}/bin:" + os.environ.get("PATH", "")
            return


def suite_names() -> list[str]:
    """Every suite module below ``measure.suites`` (dotted, relative), sorted; nothing imported.
    Helper modules (``common``, names starting with ``_``) are not suites."""
    out = []
    for path in sorted(SUITES_DIR.rglob("*.py")):
        rel = path.relative_to(SUITES_DIR).with_suffix("")
        if any(part.startswith("_") for part in rel.parts) or rel.name == "common":
            continue
        out.append(".".join(rel.parts))
    return sorted(out)


def select(names: list[str], suites: str | None = None, topics: str | None = None) -> list[str]:
    """Filter suite names by a comma list of names or package prefixes (``gemm`` selects
    ``gemm.*``) and/or of topics (:data:`TOPICS`).  ``ValueError`` naming what exists when a
    token matches nothing."""
    if not suites and not topics:
        return names
    wanted: list[str] = []
    prefixes: list[tuple[str, str]] = []
    for tok in (t.strip() for t in (topics or "").split(",") if t.strip()):
        if tok not in TOPICS:
            raise ValueError(f"unknown topic {tok!r}; topics are {sorted(TOPICS)}")
        prefixes += [(tok, p) for p in TOPICS[tok]]
    prefixes += [(tok, tok) for tok in (t.strip() for t in (suites or "").split(",") if t.strip())]
    for tok, p in prefixes:
        hits = [n for n in names if n == p or n.startswith(p + ".")]
        if not hits:
            raise ValueError(f"{tok!r} selects no suite; suites are {names}")
        wanted += [n for n in hits if n not in wanted]
    return wanted


def discover(suites: str | None = None, topics: str | None = None):
    """[(name, gpu_suite or None, import error or None)] of the selected suites."""
    found = []
    for name in select(suite_names(), suites, topics):
        try:
            mod = importlib.import_module(f"measure.suites.{name}")
        except Exception as exc:  # an unimportable family is reported, not fatal
            found.append((name, None, exc))
            continue
        fn = getattr(mod, "gpu_suite", None)
        if callable(fn):
            found.append((name, fn, None))
    return found


# ---------------------------------------------------------------- provenance
def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=cwd).stdout.strip()
    except Exception:
        return ""


def tree_sha256(*roots: Path) -> str:
    """sha256 over every ``.py`` file below ``roots`` (relative path and bytes, sorted)."""
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(Path(root).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            h.update(str(p.relative_to(ROOT)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def git_state() -> dict:
    """``{"commit", "dirty"}`` of the checkout the suites ran from.  ``COURSE_GIT_COMMIT`` /
    ``COURSE_GIT_DIRTY``, when set, name it (a copied tree, which may sit inside another git
    checkout whose HEAD is not the code that ran); else git; else both None."""
    env = os.environ.get("COURSE_GIT_COMMIT")
    if env:
        return {"commit": env, "dirty": os.environ.get("COURSE_GIT_DIRTY", "unknown") not in ("0", "false", "no")}
    commit = _run(["git", "rev-parse", "HEAD"], cwd=ROOT)
    if commit:
        status = _run(["git", "status", "--porcelain", "--", "kernels", "measure", "ledger"], cwd=ROOT)
        return {"commit": commit, "dirty": bool(status)}
    return {"commit": None, "dirty": None}


def code_identity(suite: str) -> dict:
    """What a suite ran: the commit (and dirty flag), the sha256 of the kernel sources
    (the ``kernels`` package) and of the suite's own module."""
    mod = SUITES_DIR.joinpath(*suite.split(".")).with_suffix(".py")
    return {"git": git_state(), "kernels_sha256": tree_sha256(ROOT / "kernels"),
            "suite_sha256": hashlib.sha256(mod.read_bytes()).hexdigest() if mod.exists() else None}


def provenance(argv: list[str] | None = None) -> dict:
    import torch

    prov: dict = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m measure.runner " + " ".join(argv if argv is not None else sys.argv[1:]),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    for mod in ("tilelang", "triton"):
        try:
            prov[mod] = importlib.import_module(mod).__version__
        except Exception as exc:
            prov[mod] = f"unavailable ({type(exc).__name__})"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        prov.update({
            "device": p.name,
            "sm_count": p.multi_processor_count,
            "compute_capability": f"{p.major}.{p.minor}",
            "memory_gib": round(p.total_memory / 2**30, 1),
            "device_count": torch.cuda.device_count(),
        })
        drv = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        prov["driver"] = drv.splitlines()[0] if drv else "unknown"
    nv = _run(["nvcc", "--version"]) or _run([os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"), "--version"])
    m = re.search(r"release ([0-9.]+)", nv)
    prov["nvcc"] = m.group(1) if m else "not found"
    return prov


def current_mode() -> str:
    try:
        import torch

        return "live" if torch.cuda.is_available() else "recorded"
    except Exception:
        return "recorded"


# ---------------------------------------------------------------- live run
def run_live(suites: str | None, out: Path | None, quick: bool, argv: list[str], topics: str | None = None) -> dict:
    _setup_cuda_env()
    import torch

    from measure.harness import Harness

    prov = provenance(argv)
    out = Path(out) if out else next_raw_path(prov["device"])
    data = {"schema": SCHEMA, "suites": {}}
    if out.exists():  # keep the suites this run does not touch
        try:
            old = json.loads(out.read_text(encoding="utf-8"))
            if old.get("provenance", {}).get("device") == prov["device"]:
                data["suites"] = old.get("suites", {})
        except Exception:
            pass
    h = Harness("cuda", quick=quick)
    h.suite = "device"
    bw = h.copy_bandwidth()
    data.update({"provenance": prov, "protocol": h.protocol, "copy_bandwidth_gbps": bw, "quick": quick})
    write_results(out, data)
    print(f"[runner] LIVE on {prov['device']} ({prov.get('sm_count')} SMs), copy bandwidth {bw:.0f} GB/s")
    print(f"[runner] timing: {h.protocol.get('describe')}")
    for name, fn, err in discover(suites, topics):
        t0 = time.time()
        h.records = []
        h.suite = name
        print(f"[runner] suite {name}")
        status = "ok"
        if err is not None:
            h.error(f"import measure.suites.{name}", err)
            status = "import-error"
        else:
            try:
                fn(h)
            except Exception as exc:
                h.error(f"gpu_suite {name}", exc)
                status = "error"
            finally:
                torch.cuda.synchronize() if torch.cuda.is_available() else None
        if status == "ok" and any(r.get("kind") == "check" and not r.get("ok") for r in h.records):
            status = "check-failed"
        data["suites"][name] = {"status": status, "seconds": time.time() - t0, "date": prov["date"],
                                "command": prov["command"], **code_identity(name), "records": list(h.records)}
        write_results(out, data)
        torch.cuda.empty_cache()
    print(f"[runner] wrote {out}")
    return data


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m measure.runner", description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=None, help="comma list of suite names or prefixes (norm, gemm.ladder, gemm)")
    ap.add_argument("--topic", default=None, help=f"comma list of topics: {', '.join(TOPICS)}")
    ap.add_argument("--out", default=None, help="results JSON (default: the next measure/results/raw/<device>.runN.json)")
    ap.add_argument("--quick", action="store_true", help="small shapes only (smoke run)")
    ap.add_argument("--recorded", action="store_true", help="show recorded results even with a GPU")
    ap.add_argument("--device", default="nvidia-h200", help="device slug of the recorded results")
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    ap.add_argument("--merge", nargs="*", metavar="FILE", default=None,
                    help="merge these raw files (in this order) into --out; without files, the manifest's "
                         "inputs of --device into its merged file")
    ap.add_argument("--format", default="text", choices=("text", "markdown"))
    args = ap.parse_args(argv)
    if args.merge is not None:
        if args.merge:
            if not args.out:
                ap.error("--merge FILE... needs --out")
            files, out = [Path(p) for p in args.merge], Path(args.out)
        else:
            files = merge_inputs(args.device)
            out = Path(args.out) if args.out else RESULTS_DIR / f"{device_slug(args.device)}.json"
        names = [str(p.relative_to(RESULTS_DIR)) if p.resolve().is_relative_to(RESULTS_DIR) else p.name
                 for p in (f.resolve() for f in files)]
        write_results(out, merge_results(files, names))
        print(f"[runner] merged {len(files)} files into {out}")
        return 0
    if args.list:
        for n in select(suite_names(), args.suite, args.topic):
            print(n)
        return 0
    if not args.recorded and current_mode() == "live":
        data = run_live(args.suite, Path(args.out) if args.out else None, args.quick, argv, args.topic)
        print()
        print(render(data, "live", args.format))
        bad = [s for s, v in data["suites"].items() if v["status"] != "ok"]
        return 1 if bad else 0
    try:
        data = load_results(args.device)
    except FileNotFoundError as exc:
        print(f"No CUDA GPU here and no recorded results: {exc}")
        return 1
    print("No CUDA GPU here (or --recorded): showing recorded results." if not args.recorded
          else "Showing recorded results (--recorded).")
    print(render(data, "recorded", args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
