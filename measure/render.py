"""The runner's printout of a results dict: where it was measured, one row per timed kernel,
one row per suite's checks.  Every rendering says whether it shows live or recorded numbers."""
from __future__ import annotations

from measure.results import records

__all__ = ["table_rows", "check_summary", "markdown_table", "text_table", "mode_label", "render"]


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


def copy_bandwidths(results: dict) -> list[float]:
    """The copy bandwidth of every run behind ``results`` (one per run of a merged file)."""
    runs = results.get("runs") or []
    bws = [r.get("copy_bandwidth_gbps") for r in runs if r.get("copy_bandwidth_gbps")]
    return bws or ([results["copy_bandwidth_gbps"]] if results.get("copy_bandwidth_gbps") else [])


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
    bws = copy_bandwidths(results)
    bw = "" if not bws else (f"{min(bws):.0f}" if round(min(bws)) == round(max(bws)) else f"{min(bws):.0f}-{max(bws):.0f}")
    proto = (results.get("protocol") or {}).get("describe", "")
    parts = [mode_label(results, mode),
             f"device copy bandwidth measured in the same run: {bw} GB/s; timing: {proto}",
             table(table_rows(results)), table(check_summary(results))]
    return "\n\n".join(parts)
