"""Tables of chapter 14's recorded GEMM measurements, for the book page and the report.

Everything reads the JSON the runner writes (``kernels/results/<device>.json``)
through :func:`kernels.runner.load_results`; nothing is measured or retyped here.
Each function returns a list of row dicts (render with
:func:`kernels.runner.markdown_table`); an empty list means the run has no such rows.
"""

from __future__ import annotations

from typing import Any

SUITES = ("gemm.ladder", "gemm.splitk", "gemm.streamk", "gemm.grouped", "gemm.batched", "gemm.lowp", "gemm.support")


def load(device: str | None = "nvidia-h200") -> dict[str, Any] | None:
    """The recorded results of ``device`` (None when nothing is recorded yet)."""
    from kernels.runner import load_results

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


def tuning_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Every candidate of the tuned rung 4 with its time at each shape, the winner marked."""
    rows = []
    for r in _records(results, "gemm.ladder", "search"):
        for label, ms in sorted((r.get("ms") or {}).items(), key=lambda kv: kv[1]):
            rows.append({"search": r["name"], "candidate": label, "ms": _f(ms, ".3f"),
                         "winner": "yes" if label == r.get("best") else ""})
        for label, err in (r.get("errors") or {}).items():
            rows.append({"search": r["name"], "candidate": label, "ms": "", "winner": f"failed: {err}"[:80]})
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
