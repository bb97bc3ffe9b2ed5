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
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Source", "mode", "live_dir", "results_for", "overlay", "header", "use", "current", "notebook_record",
           "notebook_proof", "notebook_proof_sentence", "notebook_proof_markdown", "public_command"]

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


# ------------------------------------------------------------------ the committed proof: a chapter run live as notebooks
#: Where the records of a chapter executed live as Jupyter notebooks are committed
#: (``python -m tools.live_notebook run``; ``<device>.<topic>.notebook.json`` and the suites' raw
#: results beside it, ``<device>.<topic>.notebook-suites.json``).
NOTEBOOK_RECORDS = ROOT / "measure" / "results" / "live"


def notebook_record(topic: str, device: str = "nvidia-h200", folder: Path | None = None) -> tuple[dict, dict | None] | None:
    """The committed live-notebook record of ``topic``'s chapter on ``device`` and the raw results
    of the suites that run measured (None for either when not committed)."""
    folder = Path(folder) if folder else NOTEBOOK_RECORDS
    path = folder / f"{device}.{topic}.notebook.json"
    if not path.is_file():
        return None
    rec = json.loads(path.read_text(encoding="utf-8"))
    raw = folder / f"{device}.{topic}.notebook-suites.json"
    return rec, (json.loads(raw.read_text(encoding="utf-8")) if raw.is_file() else None)


def public_command(command: str) -> str:
    """The command of a record as a reader may retype it: the output folder and any other
    absolute path of the machine it ran on replaced by a placeholder."""
    command = re.sub(r"(--out)(?:=|\s+)\S+", r"\1 <输出目录>", command)
    return re.sub(r"(?<![\w<])/[^\s]+", "<路径>", command)


def _page_title(page: str) -> str:
    src = ROOT / "book" / page
    if src.is_file():
        for line in src.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return page.rsplit("/", 1)[-1].removesuffix(".md")


def _is_live_header(text: str | None, device: str) -> bool:
    return bool(text) and text.startswith("现场实测（live）") and device in text


def _when(date: str) -> str:
    return str(date)[:16].replace("T", " ") + " UTC"


def _fmt_pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def notebook_proof(topic: str, device: str = "nvidia-h200", folder: Path | None = None,
                   recorded: dict | None = None) -> dict | None:
    """What the committed live-notebook record of ``topic`` says, for the reader: device, date,
    versions, the command (paths replaced), per page its title, seconds, glued values, live values
    and whether its header said live, and per kernel the live time beside the recorded one
    (``recorded``: a merged results dict, default the recorded results of ``device``).  None when
    no record is committed."""
    got = notebook_record(topic, device, folder)
    if got is None:
        return None
    rec, raw = got
    from coursebook.measured import measured_values, slug
    from measure.results import load_results, records

    if recorded is None:
        try:
            recorded = load_results(device)
        except FileNotFoundError:
            recorded = {"suites": {}, "provenance": {}, "runs": []}
    rec_vals = measured_values(recorded)
    suites = sorted((raw or {}).get("suites") or {})
    names = [r.get("name", "") for r in records(raw or {"suites": {}}, "bench")]
    prefixes = tuple(f"rec.{slug(n)}." for n in names)
    shown: dict[str, str] = {}
    pages = []
    for p in rec.get("pages") or []:
        vals = p.get("values") or {}
        shown.update(vals)
        has_gpu = any(k.startswith("rec.") for k in vals)
        pages.append({"page": p.get("page"), "title": _page_title(p.get("page", "")), "seconds": p.get("seconds"),
                      "errors": len(p.get("errors") or []), "glued": int(p.get("glued") or 0),
                      "live_values": sum(1 for k in vals if k.startswith(prefixes)) if prefixes else 0,
                      "gpu": has_gpu, "header_live": _is_live_header(p.get("header"), rec.get("device", "?"))})
    kernels = []
    for n in names:
        k = f"rec.{slug(n)}.us"
        live_us = float(shown[k]) if k in shown else None
        rec_us = float(rec_vals[k]) if k in rec_vals else None
        kernels.append({"name": n, "live_us": live_us, "recorded_us": rec_us,
                        "ratio": live_us / rec_us if live_us and rec_us else None})
    return {"topic": topic, "device": rec.get("device"), "date": rec.get("date"), "mode": rec.get("mode"),
            "versions": rec.get("versions") or {}, "command": public_command(rec.get("command", "")),
            "suites": suites, "pages": pages, "kernels": kernels,
            "live_values": sum(1 for k in shown if prefixes and k.startswith(prefixes)),
            "recorded_dates": rec_vals.get("rec.dates", "?")}


def _versions_text(v: dict) -> str:
    parts = [("Python", "python"), ("torch", "torch"), ("tilelang", "tilelang"), ("Triton", "triton"),
             ("CUDA", "cuda"), ("驱动", "driver"), ("nbclient", "nbclient"), ("ipykernel", "ipykernel")]
    return "，".join(f"{label} {v[k]}" for label, k in parts if v.get(k))


def notebook_proof_sentence(topic: str, device: str = "nvidia-h200", folder: Path | None = None) -> str:
    """One Chinese sentence for the chapter: whether (and where, when) it was executed live as
    notebooks; the page says where the comparison is shown."""
    p = notebook_proof(topic, device, folder)
    if p is None or p["mode"] != "live" or not any(pg["header_live"] for pg in p["pages"]):
        return "本章还没有在 GPU 上作为笔记本整章现场执行过的记录；"
    return f"本章在 {p['device']} 上作为 Jupyter 笔记本整章现场执行过一次（{_when(p['date'])}）；"


def notebook_proof_markdown(topic: str, device: str = "nvidia-h200", folder: Path | None = None,
                            recorded: dict | None = None) -> str:
    """The records appendix's note on the chapter's live execution: a paragraph, the pages (where
    the live values were shown) and the kernels' live times beside the recorded ones."""
    p = notebook_proof(topic, device, folder, recorded)
    if p is None:
        return "本章还没有在 GPU 上作为笔记本整章现场执行过的记录。"
    pages = p["pages"]
    gpu_pages = [pg for pg in pages if pg["gpu"]]
    live_heads = [pg for pg in gpu_pages if pg["header_live"]]
    ok = [pg for pg in pages if not pg["errors"]]
    mode = "现场实测（live）" if p["mode"] == "live" else f"{p['mode']}（不是现场实测）"
    suites = "、".join(p["suites"]) or "—"
    head = (f"本章的全部 {len(pages)} 个页面曾在一台 {p['device']} 上作为 Jupyter 笔记本依次现场执行："
            f"{_when(p['date'])}，{_versions_text(p['versions'])}；命令是 `{p['command']}`。"
            f"执行时第一个页面在 GPU 上运行本章的 {suites} 套件，其余页面读取同一次运行的结果；"
            f"记录的模式是{mode}。"
            f"{len(ok)} 个页面执行完毕{'、没有报错' if len(ok) == len(pages) else f'，{len(pages) - len(ok)} 个报错'}，"
            f"共粘贴 {sum(pg['glued'] for pg in pages)} 个值（含账本现场算出的数）；"
            f"其中这几个套件的 kernel 的 {p['live_values']} 个测量值（时间、带宽、占拷贝带宽的比例等）是现场测得的，"
            f"其余 GPU 数字仍取自记录结果。")
    head += (f"显示 GPU 数字的 {len(gpu_pages)} 个页面，页首的来源说明"
             + ("全部写着“现场实测（live）”和这台设备。" if len(live_heads) == len(gpu_pages) and gpu_pages else
                f"只有 {len(live_heads)} 个写着“现场实测（live）”和这台设备。"))
    rows = ["| 页面 | 执行用时 (s) | 粘贴的值 | 其中现场测得的 | 页首的来源说明 |", "|---|---:|---:|---:|---|"]
    for pg in pages:
        label = ("现场实测（live）" if pg["header_live"] else "未标注现场实测") if pg["gpu"] else "本页没有 GPU 数字"
        rows.append(f"| {pg['title']} | {pg['seconds']} | {pg['glued']} | {pg['live_values']} | {label} |")
    ks = [k for k in p["kernels"] if k["ratio"] is not None]
    out = [head, "", "\n".join(rows)]
    if ks:
        dev = [abs(k["ratio"] - 1) for k in ks]
        worst = max(ks, key=lambda k: abs(k["ratio"] - 1))
        out += ["", f"下表把这次现场执行测得的 {len(ks)} 个 kernel 的时间与本书采用的记录结果（{p['recorded_dates']}）并排：" 
                    f"两者之比（现场 ÷ 记录）在 {min(k['ratio'] for k in ks):.3f} 与 {max(k['ratio'] for k in ks):.3f} 之间，"
                    f"相差最多的是 {worst['name'].replace('|', '/')}（{_fmt_pct(max(dev))}）。"]
        t = ["| 测量项 | 现场 (µs) | 记录 (µs) | 现场 ÷ 记录 |", "|---|---:|---:|---:|"]
        for k in p["kernels"]:
            lv = f"{k['live_us']:.1f}" if k["live_us"] is not None else "—"
            rv = f"{k['recorded_us']:.1f}" if k["recorded_us"] is not None else "—"
            t.append(f"| {k['name'].replace('|', '/')} | {lv} | {rv} | "
                     f"{k['ratio']:.3f} |" if k["ratio"] is not None else f"| {k['name']} | {lv} | {rv} | — |")
        out += ["", "\n".join(t)]
    return "\n".join(out)
