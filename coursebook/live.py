"""Live or recorded: which GPU numbers a page shows.

On a machine with a CUDA GPU, building the book (or running a chapter's notebook in Jupyter)
runs the suites of the chapter's topic live (:data:`measure.runner.TOPICS`) and the page glues
the live values, labelled live; elsewhere the page reads the recorded results.  The variable
``LIVE`` decides:

* ``LIVE=0`` -- recorded, even with a GPU (``make book LIVE=0``);
* ``LIVE=1`` -- live, and an error where there is no CUDA GPU;
* unset (or ``auto``) -- live where ``torch.cuda.is_available()``, else recorded.

``LIVE_QUICK=1`` runs the suites' small smoke shapes instead of the book's shapes (quick, but the
page's kernels at the book's shapes then read "—").  A topic runs once per build and code
(the live results are kept in ``COURSE_LIVE_DIR``, default ``_build/live/``, under a name that
carries the digest of the packages): every page of a chapter reads the same live run.  The
suites' console output goes to a log file beside the results, never into the page.

The live results are laid over the recorded ones (a live suite replaces the recorded suite of
the same name, as a later run does in a merge), so a page that also quotes another topic's
records still finds them; :func:`results_for` returns which suites are live.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Source", "mode", "live_dir", "results_for", "overlay", "header", "use", "current"]

#: The source this process's page reads (set by :func:`use`).
_CURRENT: "Source | None" = None

ROOT = Path(__file__).resolve().parent.parent


def mode(env: dict | None = None) -> str:
    """``"live"`` or ``"recorded"`` from ``LIVE`` (see the module's docstring)."""
    env = os.environ if env is None else env
    want = str(env.get("LIVE", "auto")).strip().lower()
    if want in ("0", "no", "false", "recorded", "off"):
        return "recorded"
    if want not in ("1", "yes", "true", "live", "on", "auto", ""):
        raise ValueError(f"LIVE={env.get('LIVE')!r}: use 0 (recorded), 1 (live) or leave it unset (auto)")
    gpu = _cuda_available()
    if want in ("1", "yes", "true", "live", "on") and not gpu:
        raise RuntimeError("LIVE=1 asks for live GPU numbers, but torch sees no CUDA GPU here; "
                           "use LIVE=0 (recorded) or leave LIVE unset")
    return "live" if gpu else "recorded"


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def live_dir(env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("COURSE_LIVE_DIR") or ROOT / "_build" / "live")


def _code_digest() -> str:
    h = hashlib.sha256()
    for top in ("ledger", "kernels", "measure"):
        for p in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" not in p.parts and "results" not in p.relative_to(ROOT / top).parts:
                h.update(p.relative_to(ROOT).as_posix().encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:12]


@dataclass
class Source:
    """The results a page reads: ``results`` (a merged-file dict), ``mode`` and the live suites."""

    results: dict
    mode: str
    topic: str | None = None
    live_suites: list[str] = field(default_factory=list)
    live_run: dict = field(default_factory=dict)
    path: str | None = None


def _run_topic(topic: str, out: Path, quick: bool) -> dict:
    """Run the topic's suites live into ``out`` (the runner's console output into ``out``.log)."""
    from measure import runner

    runner._setup_cuda_env()
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_suffix(".log")
    argv = ["--topic", topic, "--out", str(out)] + (["--quick"] if quick else [])
    with open(log, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        return runner.run_live(None, out, quick, argv, topic)


def results_for(topic: str | None, device: str = "nvidia-h200", env: dict | None = None) -> Source:
    """What a page of ``topic`` shows: the recorded results, or (live mode) those with the topic's
    suites replaced by a live run made once per build (see the module's docstring)."""
    from measure.results import load_results

    env = os.environ if env is None else env
    m = mode(env)
    try:
        recorded = load_results(device)
    except FileNotFoundError:
        recorded = {"suites": {}, "provenance": {}, "runs": []}
    if m == "recorded" or topic is None:
        return Source(recorded, "recorded", topic)
    from measure.runner import TOPICS

    if topic not in TOPICS:
        raise ValueError(f"unknown topic {topic!r}; topics are {sorted(TOPICS)}")
    quick = str(env.get("LIVE_QUICK", "")).strip() in ("1", "yes", "true")
    out = live_dir(env) / f"{topic}.{'quick.' if quick else ''}{_code_digest()}.json"
    if out.is_file():
        live = json.loads(out.read_text(encoding="utf-8"))
    else:
        live = _run_topic(topic, out, quick)
    return overlay(recorded, live, topic, path=str(out))


def overlay(recorded: dict, live: dict, topic: str, path: str | None = None) -> Source:
    """``recorded`` with every suite of ``live`` laid over it (live suites named, provenance of the
    live run kept apart)."""
    from measure.results import migrate

    live = migrate(live)
    prov = dict(live.get("provenance") or {})
    suites = {**(recorded.get("suites") or {})}
    for name, s in (live.get("suites") or {}).items():
        suites[name] = {**s, "copy_bandwidth_gbps": live.get("copy_bandwidth_gbps"), "run": "live", "live": True}
    merged = {**recorded, "suites": suites, "live_provenance": {**prov, "copy_bandwidth_gbps":
                                                                live.get("copy_bandwidth_gbps"),
                                                                "quick": bool(live.get("quick"))}}
    return Source(merged, "live", topic, sorted((live.get("suites") or {}).keys()), merged["live_provenance"], path)


def header(src: Source) -> str:
    """One Chinese line that labels the page's GPU numbers: live (device, date, versions, what ran)
    or recorded (device, dates of the runs, versions, the same run's copy bandwidth)."""
    from coursebook.measured import provenance_line

    if src.mode != "live":
        return provenance_line(src.results, "recorded")
    p = src.live_run
    bw = p.get("copy_bandwidth_gbps")
    quick = "（小形状冒烟运行，书中形状的数字显示为“—”）" if p.get("quick") else ""
    return (f"现场实测（live）：本页 {'、'.join(src.live_suites) or '—'} 套件的数字由本次构建在 "
            f"{p.get('device', '?')}（{p.get('sm_count', '?')} 个 SM）上实测{quick}，"
            f"{str(p.get('date', '?'))[:16].replace('T', ' ')} UTC，驱动 {p.get('driver', '?')}，"
            f"CUDA {p.get('cuda', '?')}，torch {p.get('torch', '?')}，tilelang {p.get('tilelang', '?')}；"
            f"同一次运行实测的显存拷贝带宽 {bw:.0f} GB/s。"
            if bw else "现场实测（live）：拷贝带宽未能测得。") + "其余数字取自记录结果（recorded）。"


def use(topic: str | None, device: str = "nvidia-h200") -> Source:
    """Decide once for this page (kernel process) where its GPU numbers come from; every table
    and glue of :mod:`coursebook.records` and :mod:`coursebook.measured` then reads it."""
    global _CURRENT
    if _CURRENT is None or _CURRENT.topic != topic:
        _CURRENT = results_for(topic, device)
    return _CURRENT


def current() -> Source | None:
    """The source chosen by :func:`use` in this process (None before)."""
    return _CURRENT
