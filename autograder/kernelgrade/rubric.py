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

from typing import Any

from ..parts import Verdict
from .tasks import CudaTask

__all__ = ["ASPECTS", "speed_fraction", "score", "score_correct", "score_speed", "score_structure", "score_ascend"]

ASPECTS = ("correct", "speed", "structure", "ascend")
NEEDS_GPU = "needs a GPU: not graded on this machine (run the GPU grading, see labs/README.md)"


def speed_fraction(metric: float | None, levels) -> float:
    """The fraction of the speed points a metric earns: the highest level it reaches."""
    if metric is None:
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
    bad = [s for s in shapes if not s.get("ok")]
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
            if not o.get("ok"):
                bits.append(f"{o.get('unwritten', 0)} unwritten, {o.get('nonfinite', 0)} NaN/inf, "
                            f"{o.get('mismatched', 0)} of {o.get('numel')} outside atol={o.get('atol'):.3g} "
                            f"rtol={o.get('rtol'):.3g} (max |err| {o.get('max_abs_err'):.3g})")
        if s.get("inputs_changed"):
            bits.append("overwrote its input(s) " + ", ".join(s["inputs_changed"]))
        notes.append(f"{s['label']}: " + "; ".join(bits))
    return Verdict("wrong", f"wrong on {len(bad)} of {len(shapes)} shapes -- " + " | ".join(notes))


def score_speed(points: float, task: CudaTask, R: dict) -> Verdict:
    c = score_correct(1.0, task, R)
    if c.status in ("missing", "timeout", "error", "malformed"):
        return Verdict(c.status if c.status in ("missing", "timeout") else "error", "no speed points: " + c.message)
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
    frac = speed_fraction(sp.get("metric"), task.levels)
    shape = ", ".join(f"{k}={v}" for k, v in sp["shape"].items())
    msg = (f"{sp['ms'] * 1e3:.1f} us at {shape}: {_fmt_metric(task, sp.get('metric'))}"
           f" (library {sp.get('baseline_ms', 0) * 1e3:.1f} us, copy {sp.get('copy_gbps', 0):.0f} GB/s); "
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
