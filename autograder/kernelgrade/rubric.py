"""Points from what the kernel workers found (pure functions; no GPU, no tilelang).

One kernel part of a lab is graded in up to three aspects, each its own grade_id:

``correct``    every shape (aligned, ragged, the student's variant) matches the fp64
               reference within the course's tolerances, nothing left unwritten, inputs
               untouched: all points; anything else: none.  Needs a GPU.
``speed``      only for a correct kernel.  The metric is the fraction of the measured copy
               bandwidth (memory-bound operators) or the speed relative to the library
               (GEMM); the task's ``levels`` ``((threshold, fraction), ...)`` give the
               fraction of the points.  A time below the physical bound scores nothing and
               is flagged for the instructor.  Needs a GPU.
``structure``  the expectations on the sm_90a code (vector width, shared staging,
               pipeline stages): the fraction met.  Runs on the CPU.
``ascend``     the Ascend version lowers on the CPU and shows the expected structure:
               the fraction met, nothing when it does not lower.  Runs on the CPU.

Statuses beyond the analytic parts': ``partial`` (some of the points), ``skipped`` (needs a
GPU this machine does not have: not graded, not zero by fault of the student) and
``flagged`` (an impossible time: no points, the instructor decides).
"""
from __future__ import annotations

import math
from typing import Any

from ..parts import Verdict
from .tasks import CudaTask

__all__ = ["ASPECTS", "number", "speed_fraction", "score", "score_correct", "score_speed", "score_structure", "score_ascend"]

ASPECTS = ("correct", "speed", "structure", "ascend")
NEEDS_GPU = "needs a GPU: not graded on this machine (run the GPU grading, see labs/README.md)"


def number(v: Any) -> float | None:
    """A number from a worker's findings.  Non-finite numbers travel by name (``"nan"``,
    ``"inf"``, ``"-inf"``: JSON has no NaN) and come back as floats; anything else that is not
    a number is None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v.strip().lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity"):
        return float(v)
    return None


def _finite(v: Any) -> bool:
    n = number(v)
    return n is not None and math.isfinite(n)


def _g(v: Any) -> str:
    n = number(v)
    return "n/a" if n is None else f"{n:.3g}"


def _output_ok(o: dict) -> bool:
    """One compared output: the worker's verdict, and a finite max |err| where one is given
    (NaN when no element was written: a failed comparison whatever else it says)."""
    return bool(o.get("ok")) and (o.get("max_abs_err") is None or _finite(o["max_abs_err"]))


def _shape_ok(s: dict) -> bool:
    return bool(s.get("ok")) and all(_output_ok(o) for o in s.get("outputs") or [])


def speed_fraction(metric: float | None, levels) -> float:
    """The fraction of the speed points a metric earns: the highest level it reaches (none for
    a metric that is missing or not finite)."""
    metric = number(metric)
    if metric is None or not math.isfinite(metric):
        return 0.0
    frac = 0.0
    for threshold, f in levels:
        if metric >= threshold:
            frac = max(frac, f)
    return frac


def _fmt_metric(task: CudaTask, v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{100 * v:.1f} % of the copy bandwidth" if task.metric == "frac_copy" else f"{v:.2f}x {task.baseline_label}"


def _levels_text(task: CudaTask) -> str:
    parts = []
    for thr, f in task.levels:
        t = f"{100 * thr:.0f} %" if task.metric == "frac_copy" else f"{thr:g}x"
        parts.append(f"{t} -> {100 * f:.0f} %")
    return "; ".join(parts)


def _early(R: dict) -> Verdict | None:
    """The verdict when the kernel never reached a check (missing, not elaborated, bad interface)."""
    el = R.get("elaborate") or {}
    if el.get("missing"):
        return Verdict("missing", el["missing"])
    if el.get("fatal"):
        return Verdict("error", el["fatal"])
    errs = el.get("errors") or {}
    if errs and not el.get("tirs"):
        first = next(iter(errs.values()))
        status = first.get("status", "error")
        return Verdict({"timeout": "timeout", "missing": "missing"}.get(status, "error" if status == "error" else "malformed"),
                       first.get("error", "the factory could not be elaborated"))
    if errs:
        lb, e = next(iter(errs.items()))
        return Verdict("error", f"the factory failed for {lb}: {e.get('error')}")
    iface = R.get("interface") or {}
    if iface:
        lb, msg = next(iter(iface.items()))
        return Verdict("malformed", f"{msg} (shape {lb})")
    if R.get("timeout"):
        return Verdict("timeout", R["timeout"])
    if R.get("crash"):
        return Verdict("error", f"the kernel crashed the GPU run: {R['crash']}")
    return None


def score_correct(points: float, task: CudaTask, R: dict) -> Verdict:
    v = _early(R)
    if v is not None:
        return v
    build = R.get("build") or {}
    if build:
        lb, msg = next(iter(build.items()))
        return Verdict("error", f"does not compile for sm_90a ({lb}): {msg}")
    if not R.get("gpu"):
        return Verdict("skipped", NEEDS_GPU)
    shapes = R.get("correct")
    if shapes is None:
        return Verdict("error", "the GPU run ended before this kernel was checked")
    bad = [s for s in shapes if not _shape_ok(s)]
    if not bad:
        return Verdict("right", f"correct on all {len(shapes)} shapes (fresh inputs, poisoned outputs, fp64 reference)",
                       score=points)
    notes = []
    for s in bad[:4]:
        if s.get("error"):
            notes.append(f"{s['label']}: {s['error']}")
            continue
        bits = []
        for o in s.get("outputs", []):
            if not _output_ok(o):
                err = (_g(o.get("max_abs_err")) if _finite(o.get("max_abs_err"))
                       else "not finite: no element compares")
                bits.append(f"{o.get('unwritten', 0)} unwritten, {o.get('nonfinite', 0)} NaN/inf, "
                            f"{o.get('mismatched', 0)} of {o.get('numel')} outside atol={_g(o.get('atol'))} "
                            f"rtol={_g(o.get('rtol'))} (max |err| {err})")
        if s.get("inputs_changed"):
            bits.append("overwrote its input(s) " + ", ".join(s["inputs_changed"]))
        notes.append(f"{s['label']}: " + "; ".join(bits))
    return Verdict("wrong", f"wrong on {len(bad)} of {len(shapes)} shapes -- " + " | ".join(notes))


def score_speed(points: float, task: CudaTask, R: dict) -> Verdict:
    c = score_correct(1.0, task, R)
    if c.status in ("missing", "timeout", "error", "malformed"):  # the same cause, the same status on every row
        return Verdict(c.status, "no speed points: " + c.message)
    if not R.get("gpu"):
        return Verdict("skipped", NEEDS_GPU)
    if c.status != "right":
        return Verdict("wrong", "no speed points: the kernel is not correct on every shape")
    sp = R.get("speed")
    if not sp:
        return Verdict("error", "the kernel was not timed (the GPU run ended early)")
    if sp.get("flags"):
        return Verdict("flagged", "no speed points; flagged for the instructor: " + " | ".join(sp["flags"]))
    if not sp.get("after_timing_ok", False):
        return Verdict("wrong", "no speed points: the outputs of the timed launches are wrong")
    if sp.get("too_slow"):
        return Verdict("wrong", "no speed points: " + sp.get("note", "too slow to time"))
    if not (_finite(sp.get("ms")) and _finite(sp.get("metric"))):
        return Verdict("wrong", f"no speed points: the timing gave no finite time ({sp.get('ms')!r} ms, "
                                f"metric {sp.get('metric')!r})")
    frac = speed_fraction(sp.get("metric"), task.levels)
    shape = ", ".join(f"{k}={v}" for k, v in sp["shape"].items())
    msg = (f"{number(sp['ms']) * 1e3:.1f} us at {shape}: {_fmt_metric(task, number(sp.get('metric')))}"
           f" (library {(number(sp.get('baseline_ms')) or 0) * 1e3:.1f} us, "
           f"copy {(number(sp.get('copy_gbps')) or 0):.0f} GB/s); "
           f"levels: {_levels_text(task)}")
    status = "right" if frac >= 1.0 else "partial" if frac > 0 else "wrong"
    return Verdict(status, msg, score=round(points * frac, 6))


def _fraction(checks: list[dict]) -> float:
    return sum(1 for c in checks if c.get("ok")) / len(checks) if checks else 0.0


def _checks_text(checks: list[dict]) -> str:
    return "; ".join(("[ok] " if c.get("ok") else "[--] ") + c.get("found", c.get("key", "")) for c in checks)


def score_structure(points: float, task: CudaTask, R: dict) -> Verdict:
    v = _early(R)
    if v is not None:
        return Verdict(v.status, "not read: " + v.message)
    build = R.get("build") or {}
    if build:
        lb, msg = next(iter(build.items()))
        if "nvcc" in msg.lower() and ("not found" in msg.lower() or "no such file" in msg.lower()):
            return Verdict("skipped", f"not read: nvcc is not installed here ({msg[:120]})")
        return Verdict("error", f"does not compile for sm_90a ({lb}): {msg}")
    st = R.get("structure")
    if not st or st.get("error"):
        return Verdict("error", "the generated code could not be read: " + str((st or {}).get("error", "no build")))
    checks = st.get("checks") or []
    frac = _fraction(checks)
    status = "right" if frac >= 1.0 else "partial" if frac > 0 else "wrong"
    return Verdict(status, "sm_90a code: " + _checks_text(checks), score=round(points * frac, 6))


def score_ascend(points: float, task: Any, R: dict) -> Verdict:
    v = _early(R)
    if v is not None:
        return v
    a = R.get("ascend")
    if not a:
        return Verdict("error", "the Ascend lowering did not run")
    if not a.get("lowers"):
        return Verdict("wrong", f"lowered on CPU: failed before the bisheng call -- {a.get('error', '')}")
    checks = a.get("checks") or []
    frac = _fraction([c for c in checks if c.get("key") != "lowers"])  # lowering is the entry ticket
    status = "right" if frac >= 1.0 else "partial" if frac > 0 else "wrong"
    return Verdict(status, "lowered on CPU (never run on an NPU): " + _checks_text(checks), score=round(points * frac, 6))


def score(aspect: str, points: float, task: Any, R: dict) -> Verdict:
    fn = {"correct": score_correct, "speed": score_speed, "structure": score_structure, "ascend": score_ascend}[aspect]
    return fn(points, task, R)
