"""Tables of chapter 14's recorded GEMM measurements, for the book page and the report.

Everything reads the JSON the runner writes (``measure/results/<device>.json``)
through :func:`measure.results.load_results`; nothing is measured or retyped here.
Each function returns a list of row dicts (render with
:func:`measure.render.markdown_table`); an empty list means the run has no such rows.
"""

from __future__ import annotations

from typing import Any

SUITES = ("gemm.ladder", "gemm.splitk", "gemm.streamk", "gemm.grouped", "gemm.batched", "gemm.lowp", "gemm.support")


def load(device: str = "nvidia-h200") -> dict[str, Any] | None:
    """The recorded results of ``device`` (None when nothing is recorded yet)."""
    from measure.results import load_results

    try:
        return load_results(device)
    except FileNotFoundError:
        return None


def _records(results: dict[str, Any] | None, suite: str, kind: str | None = None) -> list[dict[str, Any]]:
    if not results:
        return []
    recs = results.get("suites", {}).get(suite, {}).get("records", [])
    return [r for r in recs if kind is None or r.get("kind") == kind]


def _f(x: Any, spec: str) -> str:
    return "" if x is None else format(x, spec)


def _checks(results: dict[str, Any] | None, suite: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in _records(results, suite, "check")}


def ladder_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """One row per rung and shape: TFLOP/s, time, cuBLAS time, ratio, relative Frobenius error."""
    checks = _checks(results, "gemm.ladder")
    rows = []
    for r in _records(results, "gemm.ladder", "bench"):
        chk = checks.get(r["name"], {})
        cub = (r.get("baselines") or {}).get("cuBLAS")
        rows.append({
            "kernel": r["name"],
            "TFLOP/s": _f(r.get("tflops"), ".1f"),
            "ms": _f(r.get("ms"), ".3f"),
            "cuBLAS ms": _f(cub, ".3f"),
            "vs cuBLAS": _f((r.get("speedup") or {}).get("cuBLAS"), ".2f"),
            "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            "check": "ok" if chk.get("ok") else ("FAIL" if chk else ""),
        })
    return rows


def _pipeline(label: str) -> str:
    return "hand-written" if "_ws" in label else "automatic"


def tuning_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Every candidate of the tuned rung 4 with its time at each shape, the winner marked;
    ``pipeline`` says who wrote the warp-specialized pipeline (tilelang or :mod:`kernels.gemm.ws`)."""
    rows = []
    for r in _records(results, "gemm.ladder", "search"):
        for label, ms in sorted((r.get("ms") or {}).items(), key=lambda kv: kv[1]):
            rows.append({"search": r["name"], "candidate": label, "pipeline": _pipeline(label), "ms": _f(ms, ".3f"),
                         "winner": "yes" if label == r.get("best") else ""})
        for label, err in (r.get("errors") or {}).items():
            rows.append({"search": r["name"], "candidate": label, "pipeline": _pipeline(label), "ms": "",
                         "winner": f"failed: {err}"[:80]})
    return rows


def search_times(results: dict[str, Any] | None, side: int) -> dict[str, float]:
    """label -> ms of the tuned search at ``side``^3 (empty when not recorded)."""
    for r in _records(results, "gemm.ladder", "search"):
        if r.get("name") == f"tuned rung4 {side}^3":
            return dict(r.get("ms") or {})
    return {}


def vs_automatic(results: dict[str, Any] | None, side: int, label: str) -> float | None:
    """How much faster candidate ``label`` ran than the fastest automatic candidate of the same
    search, in percent (negative: slower); None when either is missing."""
    ms = search_times(results, side)
    auto = [t for k, t in ms.items() if "_ws" not in k]
    if label not in ms or not auto:
        return None
    return 100.0 * (min(auto) / ms[label] - 1.0)


def _candidates(results: dict[str, Any] | None) -> tuple[frozenset[str], int]:
    """(candidate labels, rounds) of the tuned searches: what makes two runs repeats."""
    out: set[str] = set()
    rounds = 0
    for r in _records(results, "gemm.ladder", "search"):
        out |= set(r.get("ms") or {}) | set(r.get("errors") or {})
        rounds = max(rounds, int(r.get("rounds", 1)))
    return frozenset(out), rounds


#: The experiment name under which the manifest declares the tuned search's repeats.
LADDER_REPEATS = "gemm.ladder tuned search"


def ladder_replicates(results: dict[str, Any] | None, device: str = "nvidia-h200",
                      results_dir: Any = None) -> list[tuple[str, dict[str, Any]]]:
    """The repeats of the tuned search that ``measure/results/manifest.json`` declares for
    ``device`` (independent runs of the same experiment), as ``(run name, results)`` in the
    declared order.  ``ValueError`` when a declared run searched other candidates or rounds than
    ``results``: a repeat that is not one must not be quoted as one."""
    import re

    from measure.results import repeat_runs

    want = _candidates(results)
    if not want[0]:
        return []
    out = []
    for fname, data in repeat_runs(device, LADDER_REPEATS, results_dir):
        if _candidates(data) != want:
            raise ValueError(f"{fname} is declared a repeat of the tuned search but searched other candidates "
                             f"or rounds")
        m = re.search(r"\.run(\d+)\.json$", fname)
        out.append((f"run {m.group(1)}" if m else fname, data))
    return out


def ws_rows(results: dict[str, Any] | None, sides: tuple[int, ...] = (4096, 8192),
            runs: list[tuple[str, dict[str, Any]]] | None = None) -> list[dict[str, str]]:
    """The hand-written candidates (:mod:`kernels.gemm.ws`) with what each one changes, the time
    in ``results`` and, for each run of ``runs`` (default: just ``results``), the time against
    the fastest automatic candidate of the same search (``+``: faster)."""
    from kernels.gemm.ladder import label
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    runs = runs or [("", results)]
    rows = []
    for cfg in TUNE_CANDIDATES:
        if not cfg.get("ws"):
            continue
        lab = label(cfg)
        row = {"candidate": lab, "stages": str(cfg["stages"]), "wgmma in flight": str(cfg.get("inflight", 1)),
               "C columns per store": str(cfg.get("epi_cols") or cfg["block_N"]),
               "persistent": "yes" if cfg.get("persistent") else "", "cluster": str(cfg.get("cluster", 1))}
        for side in sides:
            t = search_times(results, side).get(lab)
            gains = [vs_automatic(res, side, lab) for _, res in runs]
            row[f"{side}^3 us"] = _f(None if t is None else t * 1e3, ".1f")
            row[f"{side}^3 vs automatic"] = " / ".join("" if g is None else f"{g:+.1f}%" for g in gains)
        rows.append(row)
    return rows if any(r[f"{sides[0]}^3 us"] for r in rows) else []


def power_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Board power and SM clock sampled (NVML) while the tuned rung 4 and cuBLAS were timed, per
    shape and side, with the power limit and the clock-event reasons NVML reported."""
    rows = []
    for r in _records(results, "gemm.ladder", "bench"):
        mhz, w = r.get("mhz_per_round") or {}, r.get("watts_per_round") or {}
        for who in mhz:
            rows.append({
                "bench": r["name"], "timed": "cuBLAS" if who == "cuBLAS" else "kernel",
                "SM MHz (per-round medians)": f"{min(mhz[who]):.0f}-{max(mhz[who]):.0f}",
                "board W": f"{min(w[who]):.0f}-{max(w[who]):.0f}",
                "power limit W": _f(r.get("power_limit_w"), ".0f"),
                "clock events": ", ".join(r.get("clock_events") or []),
            })
    return rows


def variant_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Split-K, stream-K, grouped and batched rows with their baselines and wave predictions."""
    rows = []
    for suite in ("gemm.splitk", "gemm.streamk", "gemm.grouped", "gemm.batched"):
        for r in _records(results, suite, "bench"):
            sp = r.get("speedup") or {}
            pred = r.get("predicted_speedup_vs_no_split", r.get("predicted_speedup_vs_dp"))
            rows.append({
                "kernel": r["name"],
                "TFLOP/s": _f(r.get("tflops"), ".1f"),
                "ms": _f(r.get("ms"), ".3f"),
                "speedups": ", ".join(f"{v:.2f}x vs {k}" for k, v in sp.items() if v is not None),
                "predicted (waves)": _f(pred, ".2f"),
                "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            })
    return rows


def lowp_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """fp8 and dequantize GEMM rows against torch._scaled_mm / fp16 cuBLAS, with the element-wise check
    (a fast low-precision kernel can fail it: speed and accuracy are reported side by side)."""
    checks = _checks(results, "gemm.lowp")
    rows = []
    for r in _records(results, "gemm.lowp", "bench"):
        sp = r.get("speedup") or {}
        chk = checks.get(r["name"], {})
        rows.append({
            "kernel": r["name"],
            "TFLOP/s": _f(r.get("tflops"), ".1f"),
            "ms": _f(r.get("ms"), ".3f"),
            "speedups": ", ".join(f"{v:.2f}x vs {k}" for k, v in sp.items() if v is not None),
            "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            "max abs err": _f(chk.get("max_abs_err"), ".3g"),
            "check": "ok" if chk.get("ok") else (f"FAIL ({chk.get('mismatched')} elements)" if chk else ""),
        })
    return rows


def audit_rows(results: dict[str, Any] | None = None, live: bool = False) -> list[dict[str, str]]:
    """The sm_90a support audit: recorded with the GPU run, or run now (``live=True``, compiles only)."""
    audit = None
    for r in _records(results, "gemm.support", "note"):
        if r.get("name") == "hopper lowp audit":
            audit = r.get("audit")
    if audit is None and live:
        from kernels.gemm.support import audit_quiet

        audit = audit_quiet()
    rows = []
    for name, a in (audit or {}).items():
        rows.append({
            "construct": name,
            "sm_90a": "compiles" if a.get("supported") else "refused",
            "instruction path": ", ".join(k for k, v in (a.get("path") or {}).items() if v),
            "compiler says": a.get("error") or "",
        })
    return rows


def targets(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Every target the GEMM suites set, with the measured value and whether it was met."""
    rows = []
    for suite in SUITES:
        for r in _records(results, suite, "bench"):
            for key, t in (r.get("targets") or {}).items():
                rows.append({"kernel": r["name"], "target": f"{key} >= {t.get('target')}",
                             "value": _f(t.get("value"), ".2f"),
                             "met": {True: "yes", False: "no", None: "n/a"}[t.get("met")]})
    return rows
