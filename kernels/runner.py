"""Run every ``gpu_suite`` live on a CUDA GPU, or show the last recorded results.

Usage::

    python -m kernels.runner                      # live if CUDA is available, else recorded
    python -m kernels.runner --suite ch13 --out kernels/results/nvidia-h200.json
    python -m kernels.runner --suite gemm,ch28    # suites by group or module name
    python -m kernels.runner --list               # the suites it would run
    python -m kernels.runner --recorded [--device nvidia-h200]

Live mode discovers every module of the ``kernels`` package (``kernels/*.py``,
``kernels/gemm/*.py``, ...) that defines ``gpu_suite(h)``, calls each with one
:class:`kernels.harness.Harness` inside ``try/except`` (one failing family never
loses the others: the error and its traceback are recorded), measures the device
copy bandwidth once at the start, and rewrites the results file after *every*
suite, so a run cut short still leaves data.  A run of a subset of suites keeps
the other suites already in the file.

Results files are ``kernels/results/<device>.json`` with provenance (device name,
SM count, driver, CUDA, torch, tilelang, triton versions, UTC date, the exact
command; no hostname).  Book pages read them with :func:`load_results` and
:func:`render`; every rendering says whether it shows live or recorded numbers.
"""
import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SCHEMA = 1
_NOT_SUITES = {"harness", "runner", "bundle", "__main__"}
GROUPS = {
    "ch13": ("elementwise", "quant", "norm", "rope", "fused"),
    "ch02": ("ch02_measure",),
    "ch14": ("gemm",),
    "gemm": ("gemm",),
    "ch28": ("case_study", "ascend"),
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


def module_names() -> list[str]:
    """Every module under ``kernels`` (dotted, relative, sub-folders included whether or
    not they have an ``__init__.py``), sorted; nothing is imported."""
    root = Path(__file__).resolve().parent
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part.startswith((".", "_")) or part in ("results", "tests") for part in rel.parts[:-1]):
            continue
        base = path.stem
        if base == "__init__" and len(rel.parts) > 1:
            base = rel.parts[-2]
            name = ".".join(rel.parts[:-1])
        else:
            name = ".".join(rel.with_suffix("").parts)
        if base.startswith("_") or base in _NOT_SUITES or base.startswith("test"):
            continue
        out.append(name)
    return sorted(set(out))


def select(names: list[str], suites: str | None) -> list[str]:
    """Filter module names by a comma list of groups (ch13, gemm, ...) or name prefixes."""
    if not suites or suites == "all":
        return names
    wanted: list[str] = []
    for tok in (t.strip() for t in suites.split(",") if t.strip()):
        prefixes = GROUPS.get(tok, (tok,))
        for n in names:
            if any(n == p or n.startswith(p + ".") for p in prefixes) and n not in wanted:
                wanted.append(n)
    return wanted


def discover(suites: str | None = None):
    """[(name, gpu_suite or None, import error or None)] for the selected modules with a suite."""
    found = []
    for name in select(module_names(), suites):
        try:
            mod = importlib.import_module(f"kernels.{name}")
        except Exception as exc:  # an unimportable family is reported, not fatal
            found.append((name, None, exc))
            continue
        fn = getattr(mod, "gpu_suite", None)
        if callable(fn):
            found.append((name, fn, None))
    return found


# ---------------------------------------------------------------- provenance
def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        return ""


def device_slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def provenance(argv: list[str] | None = None) -> dict:
    import torch

    prov: dict = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m kernels.runner " + " ".join(argv if argv is not None else sys.argv[1:]),
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


# ---------------------------------------------------------------- results I/O
def _clean(obj):
    """JSON-safe: NaN/inf -> None, tuples -> lists, unknown objects -> str."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)


def write_results(path: Path, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_clean(data), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def merge_results(paths: list[Path]) -> dict:
    """Join result files of several runs on one device into one file.

    Each suite keeps its own date and command and gains the copy bandwidth and
    provenance of the run that measured it; a later file's suite replaces an
    earlier one.  Refuses files from different devices or schemas.
    """
    if not paths:
        raise ValueError("merge needs at least one results file")
    merged: dict = {"schema": SCHEMA, "suites": {}, "runs": []}
    device = None
    for p in paths:
        data = json.loads(Path(p).read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{p}: schema {data.get('schema')!r}, expected {SCHEMA!r}")
        prov = data.get("provenance", {})
        if device is None:
            device = prov.get("device")
        elif prov.get("device") != device:
            raise ValueError(f"{p}: device {prov.get('device')!r} differs from {device!r}")
        if data.get("quick"):
            raise ValueError(f"{p}: a --quick smoke run cannot be merged into recorded results")
        merged["runs"].append({**prov, "copy_bandwidth_gbps": data.get("copy_bandwidth_gbps")})
        for name, suite in data.get("suites", {}).items():
            merged["suites"][name] = {**suite, "copy_bandwidth_gbps": data.get("copy_bandwidth_gbps"),
                                      "run": len(merged["runs"]) - 1}
        merged.update({"provenance": prov, "protocol": data.get("protocol"),
                       "copy_bandwidth_gbps": data.get("copy_bandwidth_gbps"), "quick": False})
    return merged


def available_devices(results_dir: Path | None = None) -> list[str]:
    d = Path(results_dir or RESULTS_DIR)
    return sorted(p.stem for p in d.glob("*.json"))


def load_results(device: str | None = None, results_dir: Path | None = None) -> dict:
    """The recorded results of ``device`` (a slug like ``"nvidia-h200"``; default: the
    most recently recorded file).  Returns the JSON dict: ``provenance``, ``protocol``,
    ``copy_bandwidth_gbps``, ``suites`` ({name: {status, records, ...}}).
    Raises ``FileNotFoundError`` naming what exists when nothing matches."""
    d = Path(results_dir or RESULTS_DIR)
    if device is None:
        files = sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if not files:
            raise FileNotFoundError(f"no recorded results in {d}")
        path = files[0]
    else:
        path = d / f"{device_slug(device)}.json"
        if not path.exists():
            raise FileNotFoundError(f"no results for {device!r} in {d}; have {available_devices(d)}")
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("suites", {})
    data["_path"] = str(path)
    return data


def records(results: dict, kind: str | None = None) -> list[dict]:
    out = []
    for sname, suite in results.get("suites", {}).items():
        for r in suite.get("records", []):
            if kind is None or r.get("kind") == kind:
                out.append({"suite": sname, **r})
    return out


def _fmt(x, spec):
    return "" if x is None else format(x, spec)


def table_rows(results: dict) -> list[dict]:
    """One row per timed kernel: suite, kernel, us, GB/s, % of copy bandwidth, TFLOP/s,
    speedups and targets (met / missed)."""
    rows = []
    for r in records(results, "bench"):
        sp = r.get("speedup") or {}
        tg = r.get("targets") or {}
        missed = [k for k, v in tg.items() if isinstance(v, dict) and v.get("met") is False]
        rows.append({
            "suite": r["suite"],
            "kernel": r.get("name", ""),
            "us": _fmt(r.get("ms") and r["ms"] * 1e3, ".1f"),
            "GB/s": _fmt(r.get("gbps"), ".0f"),
            "% copy": _fmt(r.get("frac_copy_bw") and 100 * r["frac_copy_bw"], ".1f"),
            "TFLOP/s": _fmt(r.get("tflops"), ".1f"),
            "speedup": ", ".join(f"{v:.2f}x {k}" for k, v in sp.items() if v is not None),
            "targets": ("all met" if tg and not missed else ("missed: " + ", ".join(missed) if missed else "")),
        })
    return rows


def check_summary(results: dict) -> list[dict]:
    """Per suite: checks passed / total, errors."""
    out = []
    for sname, suite in results.get("suites", {}).items():
        recs = suite.get("records", [])
        checks = [r for r in recs if r.get("kind") == "check"]
        errors = [r for r in recs if r.get("kind") == "error"]
        out.append({"suite": sname, "status": suite.get("status", "?"),
                    "checks": f"{sum(bool(r.get('ok')) for r in checks)}/{len(checks)}",
                    "errors": len(errors), "seconds": _fmt(suite.get("seconds"), ".0f")})
    return out


def markdown_table(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    esc = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(esc(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def text_table(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    w = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    line = lambda vals: "  ".join(str(v).ljust(w[c]) for c, v in zip(cols, vals))  # noqa: E731
    return "\n".join([line(cols), line("-" * w[c] for c in cols)] + [line([r.get(c, "") for c in cols]) for r in rows])


def mode_label(results: dict, mode: str) -> str:
    p = results.get("provenance", {})
    where = f"{p.get('device', '?')} ({p.get('sm_count', '?')} SMs)"
    if mode == "live":
        return f"LIVE results, measured now on {where}"
    runs = results.get("runs") or [p]
    dates = ", ".join(r.get("date", "?") for r in runs)
    cmds = "; ".join(f"`{r.get('command', '?')}`" for r in runs)
    return (f"RECORDED results (not measured now): recorded on {where} {dates}, "
            f"driver {p.get('driver', '?')}, CUDA {p.get('cuda', '?')}, torch {p.get('torch', '?')}, "
            f"tilelang {p.get('tilelang', '?')}; command{'s' if len(runs) > 1 else ''} {cmds}")


def render(results: dict, mode: str = "recorded", fmt: str = "markdown") -> str:
    """Mode label, copy bandwidth, protocol, the per-kernel table and the check summary."""
    table = markdown_table if fmt == "markdown" else text_table
    bw = results.get("copy_bandwidth_gbps")
    proto = results.get("protocol", {}).get("describe", "")
    parts = [mode_label(results, mode),
             f"device copy bandwidth measured in the same run: {_fmt(bw, '.0f')} GB/s; timing: {proto}",
             table(table_rows(results)), table(check_summary(results))]
    return "\n\n".join(parts)


def current_mode() -> str:
    try:
        import torch

        return "live" if torch.cuda.is_available() else "recorded"
    except Exception:
        return "recorded"


# ---------------------------------------------------------------- live run
def run_live(suites: str | None, out: Path | None, quick: bool, argv: list[str]) -> dict:
    _setup_cuda_env()
    import torch

    from kernels.harness import Harness

    prov = provenance(argv)
    out = Path(out) if out else RESULTS_DIR / f"{device_slug(prov['device'])}.json"
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
    data.update({"provenance": prov, "protocol": h.protocol, "copy_bandwidth_gbps": bw,
                 "quick": quick})
    write_results(out, data)
    print(f"[runner] LIVE on {prov['device']} ({prov.get('sm_count')} SMs), copy bandwidth {bw:.0f} GB/s")
    print(f"[runner] timing: {h.protocol.get('describe')}")
    for name, fn, err in discover(suites):
        t0 = time.time()
        h.records = []
        h.suite = name
        print(f"[runner] suite {name}")
        status = "ok"
        if err is not None:
            h.error(f"import kernels.{name}", err)
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
                                "command": prov["command"], "records": list(h.records)}
        write_results(out, data)
        torch.cuda.empty_cache()
    print(f"[runner] wrote {out}")
    return data


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m kernels.runner", description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=None, help="comma list: ch13, ch02, gemm/ch14, ch28, or module names")
    ap.add_argument("--out", default=None, help="results JSON (default kernels/results/<device>.json)")
    ap.add_argument("--quick", action="store_true", help="small shapes only (smoke run)")
    ap.add_argument("--recorded", action="store_true", help="show recorded results even with a GPU")
    ap.add_argument("--device", default=None, help="recorded results of this device slug")
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    ap.add_argument("--merge", nargs="+", metavar="FILE", default=None,
                    help="join result files of several runs on one device into --out, then exit")
    ap.add_argument("--format", default="text", choices=("text", "markdown"))
    args = ap.parse_args(argv)
    if args.merge:
        if not args.out:
            ap.error("--merge needs --out")
        write_results(Path(args.out), merge_results([Path(p) for p in args.merge]))
        print(f"[runner] merged {len(args.merge)} files into {args.out}")
        return 0
    if args.list:
        for n in select(module_names(), args.suite):
            print(n)
        return 0
    if not args.recorded and current_mode() == "live":
        data = run_live(args.suite, Path(args.out) if args.out else None, args.quick, argv)
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
