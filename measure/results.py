"""Recorded results: read, merge, load -- every file named, nothing picked by date or glob.

Layout of ``measure/results/`` (see its README):

* ``raw/<device>.runN.json`` -- one file per GPU run, exactly as the runner wrote it: the
  archive.  ``raw/*.log`` are the runs' console logs (archive only).
* ``manifest.json`` -- per device: the merged file, the raw runs it is merged from (its
  *inputs*, in order: a later run's suite replaces an earlier one) and the declared
  repeats a page quotes (independent runs of one experiment).  A raw file that is not an
  input is archive only.
* ``<device>.json`` -- the merge of the inputs (:func:`merge_results`), what the book reads.
  It names its inputs with their sha256, and every suite names the raw file it came from.
* ``ncu/`` (Nsight Compute summaries), ``ascend/`` (Ascend captures).

Names recorded by older code are mapped when a file is read (:data:`SUITE_ALIASES`,
:data:`RECORD_PREFIX_ALIASES`); the raw files stay as recorded.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Iterable

__all__ = ["RESULTS_DIR", "RAW_DIR", "SCHEMA", "SUITE_ALIASES", "RECORD_PREFIX_ALIASES", "device_slug",
           "read_results", "write_results", "merge_results", "manifest", "merge_inputs", "repeat_runs", "next_raw_path",
           "load_results", "available_devices", "records", "summary_provenance", "run_of"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RAW_DIR = RESULTS_DIR / "raw"
MANIFEST = RESULTS_DIR / "manifest.json"
SCHEMA = 1

#: Suite names of recorded files -> the names of the suites today.  # rename_ids: keep
SUITE_ALIASES = {"ch02_measure": "pytorch", "carver_run": "carver"}  # rename_ids: keep
#: Record-name prefixes of recorded files -> today's prefixes.  # rename_ids: keep
RECORD_PREFIX_ALIASES = {"ch02.": "pytorch."}  # rename_ids: keep


def device_slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


# ---------------------------------------------------------------- reading and writing
def _rename_record(rec: dict, suite: str) -> dict:
    out = dict(rec)
    if "suite" in out:
        out["suite"] = suite
    name = out.get("name")
    if isinstance(name, str):
        for old, new in RECORD_PREFIX_ALIASES.items():
            if name.startswith(old):
                out["name"] = new + name[len(old):]
    return out


def migrate(data: dict) -> dict:
    """A results dict with today's suite and record names (:data:`SUITE_ALIASES`,
    :data:`RECORD_PREFIX_ALIASES`); everything else as recorded."""
    suites = {}
    for name, suite in (data.get("suites") or {}).items():
        new = SUITE_ALIASES.get(name, name)
        suites[new] = {**suite, "records": [_rename_record(r, new) for r in suite.get("records", [])]}
    return {**data, "suites": suites}


def read_results(path: Path | str) -> dict:
    """One results file (raw or merged), names migrated; ``_path`` says where it came from."""
    path = Path(path)
    data = migrate(json.loads(path.read_text(encoding="utf-8")))
    data.setdefault("suites", {})
    data["_path"] = str(path)
    return data


def _clean(obj):
    """JSON-safe: NaN/inf -> None, tuples -> lists, unknown objects -> str."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)


def dumps(data: dict) -> str:
    return json.dumps(_clean(data), indent=1, ensure_ascii=False) + "\n"


def write_results(path: Path | str, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps(data), encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------- merging
def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def summary_provenance(runs: list[dict]) -> dict:
    """What all runs share: each key with its one value, or the distinct values joined by
    `` / `` where runs differ (never the last run's value alone); ``date`` and ``command``
    are per run (see ``runs``) and left out."""
    keys: list[str] = []
    for r in runs:
        keys += [k for k in r if k not in keys and k not in ("date", "command", "file", "sha256",
                                                             "copy_bandwidth_gbps", "git", "sources_sha256")]
    out: dict = {}
    for k in keys:
        vals = list(dict.fromkeys(r.get(k) for r in runs if r.get(k) is not None))
        if vals:
            out[k] = vals[0] if len(vals) == 1 else " / ".join(str(v) for v in vals)
    dates = sorted(str(r.get("date")) for r in runs if r.get("date"))
    if dates:
        out["first_date"], out["last_date"] = dates[0], dates[-1]
    return out


def merge_results(paths: Iterable[Path | str], names: Iterable[str] | None = None) -> dict:
    """Join the result files of several runs on one device, in the order given (a later
    file's suite replaces an earlier one).

    Every suite keeps its own date and command and gains the copy bandwidth of the run that
    measured it and ``run`` (the name of that run's file).  ``inputs`` lists the files with
    their sha256; ``runs`` their provenance; ``provenance`` is :func:`summary_provenance`.
    Refuses files from different devices or schemas, and smoke (``--quick``) runs."""
    paths = [Path(p) for p in paths]
    names = list(names) if names is not None else [p.name for p in paths]
    if not paths:
        raise ValueError("merge needs at least one results file")
    merged: dict = {"schema": SCHEMA, "inputs": [], "runs": [], "suites": {}}
    device = None
    protocol = None
    for p, name in zip(paths, names):
        data = read_results(p)
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{p}: schema {data.get('schema')!r}, expected {SCHEMA!r}")
        prov = data.get("provenance", {})
        if device is None:
            device = prov.get("device")
        elif prov.get("device") != device:
            raise ValueError(f"{p}: device {prov.get('device')!r} differs from {device!r}")
        if data.get("quick"):
            raise ValueError(f"{p}: a --quick smoke run cannot be merged into recorded results")
        merged["inputs"].append({"file": name, "sha256": _sha256(p)})
        merged["runs"].append({"file": name, **prov, "copy_bandwidth_gbps": data.get("copy_bandwidth_gbps")})
        for sname, suite in data.get("suites", {}).items():
            merged["suites"][sname] = {**suite, "copy_bandwidth_gbps": data.get("copy_bandwidth_gbps"), "run": name}
        protocol = protocol or data.get("protocol")
        if _same_protocol(data.get("protocol")) != _same_protocol(protocol):
            raise ValueError(f"{p}: timing protocol differs from the earlier inputs'")
    merged["provenance"] = summary_provenance(merged["runs"])
    merged["protocol"] = protocol
    merged["quick"] = False
    return merged


def _same_protocol(p: dict | None) -> dict | None:
    """A recorded protocol in comparable form: a record from before ``flush_mode`` existed flushed
    by writing (the only mode then), so the missing key reads as ``"write"``."""
    return None if p is None else {"flush_mode": "write", **p}


# ---------------------------------------------------------------- the manifest
def manifest(results_dir: Path | str | None = None) -> dict:
    """``{device slug: {"merged", "inputs", "repeats"}}`` of ``manifest.json``."""
    p = Path(results_dir or RESULTS_DIR) / "manifest.json"
    return json.loads(p.read_text(encoding="utf-8"))


def merge_inputs(device: str, results_dir: Path | str | None = None) -> list[Path]:
    """The raw files the merged file of ``device`` is made from, in merge order."""
    d = Path(results_dir or RESULTS_DIR)
    entry = manifest(d).get(device_slug(device))
    if entry is None:
        raise KeyError(f"manifest.json has no entry for {device!r}")
    return [d / f for f in entry["inputs"]]


def repeat_runs(device: str, experiment: str, results_dir: Path | str | None = None) -> list[tuple[str, dict]]:
    """The declared repeats of ``experiment`` (e.g. ``"gemm.ladder tuned search"``) as
    ``(file name, results)`` in the manifest's order; ``[]`` when none are declared."""
    d = Path(results_dir or RESULTS_DIR)
    entry = manifest(d).get(device_slug(device), {})
    files = (entry.get("repeats") or {}).get(experiment, [])
    return [(Path(f).name, read_results(d / f)) for f in files]


def next_raw_path(device: str, results_dir: Path | str | None = None) -> Path:
    """``raw/<device>.runN.json`` with N one past the highest run recorded: where a live run
    writes by default (it never overwrites the merged file)."""
    raw = Path(results_dir or RESULTS_DIR) / "raw"
    slug = device_slug(device)
    nums = [int(m.group(1)) for p in raw.glob(f"{slug}.run*.json") if (m := re.search(r"\.run(\d+)$", p.stem))]
    return raw / f"{slug}.run{max(nums, default=0) + 1}.json"


# ---------------------------------------------------------------- loading
def available_devices(results_dir: Path | str | None = None) -> list[str]:
    d = Path(results_dir or RESULTS_DIR)
    return sorted(p.stem for p in d.glob("*.json") if p.name != "manifest.json")


def load_results(device: str, results_dir: Path | str | None = None) -> dict:
    """The recorded results of ``device`` (a slug like ``"nvidia-h200"`` or a device name).
    Returns the JSON dict: ``provenance``, ``protocol``, ``copy_bandwidth_gbps``, ``runs``,
    ``inputs``, ``suites`` ({name: {status, records, ...}}).  Raises ``FileNotFoundError``
    naming what exists when nothing matches."""
    if not device:
        raise ValueError("load_results needs a device (e.g. 'nvidia-h200'); see available_devices()")
    d = Path(results_dir or RESULTS_DIR)
    path = d / f"{device_slug(device)}.json"
    if not path.exists():
        raise FileNotFoundError(f"no results for {device!r} in {d}; have {available_devices(d)}")
    return read_results(path)


def run_of(results: dict, suite: str) -> dict:
    """The provenance of the run that measured ``suite`` in a merged file (its ``run`` names the
    run's file); a single run's file (no ``runs``) answers its own provenance."""
    name = results.get("suites", {}).get(suite, {}).get("run")
    for run in results.get("runs") or []:
        if name is not None and run.get("file") == name:
            return run
    return results.get("provenance", {})


def records(results: dict, kind: str | None = None) -> list[dict]:
    """Every record of every suite (``suite`` set to the suite's name), optionally one kind."""
    out = []
    for sname, suite in results.get("suites", {}).items():
        for r in suite.get("records", []):
            if kind is None or r.get("kind") == kind:
                out.append({**r, "suite": sname})
    return out
