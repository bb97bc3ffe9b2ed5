"""Glue recorded (or live) GPU measurements into a page.

Pages never type a measured number: ``glue_measured()`` loads the results file
through :func:`measure.results.load_results` and glues, for every timed kernel,

* ``rec.<slug>.us`` / ``.gbps`` / ``.pct_copy`` / ``.tflops``,
* ``rec.<slug>.x.<baseline>`` for each speedup (``x.f-rms-norm``, ``x.cublas``…),

where ``<slug>`` is the kernel's record name in lower case with every run of other
characters turned into ``-`` (``rmsnorm[rows] fp16 16384x4096`` →
``rmsnorm-rows-fp16-16384x4096``); and the provenance as ``rec.device``,
``rec.sms``, ``rec.dates``, ``rec.driver``, ``rec.cuda``, ``rec.torch``,
``rec.tilelang``, ``rec.copy_gbps``, ``rec.mode``.
"""
from __future__ import annotations

import re

from coursebook.glue import GluedText

__all__ = ["slug", "measured_values", "glue_measured", "glue_missing", "provenance_line", "copy_bandwidth_words",
           "copy_bandwidth_range"]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _f(x: float, digits: int) -> str:
    return f"{x:.{digits}f}"


def copy_bandwidth_range(bandwidths) -> str | None:
    """Copy bandwidths (GB/s) as printed text: one figure when they all print the same to 1 GB/s,
    else ``"lo–hi"``; None when there is none.  The one rounding of every copy-bandwidth figure
    the pages print (the source line and the measured pages)."""
    bws = sorted(float(b) for b in bandwidths if b)
    if not bws:
        return None
    lo, hi = _f(bws[0], 0), _f(bws[-1], 0)
    return lo if lo == hi else f"{lo}–{hi}"


def measured_values(results: dict, mode: str = "recorded") -> dict[str, str]:
    """Every gluable value of a results dict, as printed text."""
    from measure.results import records

    p = results.get("provenance", {})
    runs = results.get("runs") or [p]
    out = {
        "rec.mode": mode,
        "rec.device": str(p.get("device", "?")),
        "rec.sms": str(p.get("sm_count", "?")),
        "rec.dates": "、".join(sorted({str(r.get("date", "?"))[:10] for r in runs})),
        "rec.driver": str(p.get("driver", "?")),
        "rec.cuda": str(p.get("cuda", "?")),
        "rec.torch": str(p.get("torch", "?")),
        "rec.tilelang": str(p.get("tilelang", "?")),
    }
    bws = [r.get("copy_gbps") or r.get("copy_bandwidth_gbps") for r in runs]
    bws = [b for b in bws if b] or [results.get("copy_bandwidth_gbps")]
    bw = copy_bandwidth_range(bws)
    if bw:
        out["rec.copy_gbps"] = bw
    for r in records(results, "bench"):
        k = f"rec.{slug(r.get('name', ''))}"
        if r.get("ms"):
            out[f"{k}.us"] = _f(r["ms"] * 1e3, 1)
        if r.get("gbps"):
            out[f"{k}.gbps"] = _f(r["gbps"], 0)
        if r.get("frac_copy_bw"):
            out[f"{k}.pct_copy"] = _f(100 * r["frac_copy_bw"], 1)
        if r.get("tflops"):
            out[f"{k}.tflops"] = _f(r["tflops"], 1)
        for base, v in (r.get("speedup") or {}).items():
            if v is not None:
                out[f"{k}.x.{slug(base)}"] = _f(v, 2)
    return out


def copy_bandwidth_words(results: dict) -> str:
    """The copy bandwidth the "share of copy bandwidth" figures divide by, in Chinese: one run's
    figure when the results hold one run, else the range over the runs -- each share being taken
    against the bandwidth of the run that measured it."""
    v = measured_values(results)
    bw = v.get("rec.copy_gbps", "?")
    if len(results.get("runs") or []) <= 1:
        return f"同一次运行实测的显存拷贝带宽 {bw} GB/s"
    if "–" not in bw:
        return f"各次运行实测的显存拷贝带宽都是 {bw} GB/s"
    return f"各次运行实测的显存拷贝带宽在 {bw} GB/s 之间，每个“占比”以它所在那次运行的拷贝带宽为分母"


def provenance_line(results: dict, mode: str = "recorded") -> str:
    """One Chinese line saying what the numbers are and where they were measured."""
    v = measured_values(results, mode)
    head = "现场实测（live）" if mode == "live" else "记录结果（recorded）"
    return (f"{head}：{v['rec.device']}（{v['rec.sms']} 个 SM），{v['rec.dates']}，驱动 {v['rec.driver']}，"
            f"CUDA {v['rec.cuda']}，torch {v['rec.torch']}，tilelang {v['rec.tilelang']}；"
            f"{copy_bandwidth_words(results)}。")


def glue_measured(device: str = "nvidia-h200", topic: str | None = None) -> dict[str, str]:
    """Glue every value of the results a page of ``topic`` reads -- recorded, or live on a CUDA GPU
    (:mod:`coursebook.live`: the topic's suites run once per build) -- and ``rec.header``, the line
    that labels them; returns the dict of glued texts.  Without ``topic`` the page reads the
    recorded results."""
    from coursebook import live
    from coursebook.glue import glue_values

    src = live.use(topic, device)
    vals = measured_values(src.results, src.mode)
    vals["rec.header"] = live.header(src)
    glue_values(vals)
    return vals


def glue_missing(page: str, measured: dict[str, str] | None, dash: str = "—") -> dict[str, str]:
    """Glue ``dash`` for every ``rec.*`` key ``book/<page>`` uses that ``measured`` lacks (no
    results file, or a record renamed by a later run), so the page says "no value" instead of
    failing the strict build; returns those keys.  A page test checks that, with the results in
    the repository, none is missing."""
    import re

    from coursebook.glue import glue_values

    from coursebook.pagecheck import page_text

    used = dict.fromkeys(re.findall(r"\{glue:text\}`(rec\.[^`]+)`", page_text(page)))
    return glue_values({k: dash for k in used if k not in (measured or {})})
