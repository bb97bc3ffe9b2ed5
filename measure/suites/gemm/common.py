"""Helpers of the GEMM suites: rounds, errors, tolerances, priced GEMMs, fixed-repeat benches."""
from __future__ import annotations

import statistics
from typing import Any

from ledger.gemm import gemm_cost as _ledger_gemm_cost

from measure.cost import source_of

#: Rounds of alternating kernel / library timing for the benches that are compared with a
#: target ratio to cuBLAS or torch._scaled_mm (``Harness.bench(rounds=...)``).
BENCH_ROUNDS = 7
#: Rounds of a search that picks a winner by a few percent (the tuned rung 4, the fp8 kernels):
#: every candidate timed this many times, the starting point of the list rotated each round;
#: one timed call moves by several percent with the card's power-capped clock (byte-identical
#: kernels timed once each came out up to 11 % apart).
SEARCH_ROUNDS = 3


def rel_fro_err(out: Any, ref: Any) -> float:
    """Relative Frobenius error ||out - ref||_F / ||ref||_F, computed in fp32."""
    import torch

    o = out.detach().to(torch.float32)
    r = ref.detach().to(torch.float32)
    den = torch.linalg.vector_norm(r).item()
    num = torch.linalg.vector_norm(o - r).item()
    return num / den if den > 0 else num


def screen_workspace_candidates(cfgs, label, built_for, make_runner, poisoned, ref, limit: float = 1e-2):
    """Keep the candidates whose runner writes a right product twice in a row into the same poisoned
    output (a workspace is overwritten, never accumulated): ``({label: timed thunk}, {label: why
    rejected})``.  ``built_for(cfg)`` is the build record (``kernel`` None: not built, ``error``
    says why), ``make_runner(cfg)`` the runner ``fn(out)`` (ValueError: the config does not fit),
    ``poisoned()`` a fresh poisoned output, ``limit`` the largest relative Frobenius error."""
    cands: dict[str, Any] = {}
    rejected: dict[str, str] = {}
    for cfg in cfgs:
        rec = built_for(cfg)
        if rec["kernel"] is None:
            rejected[label(cfg)] = rec["error"]
            continue
        try:
            fn = make_runner(cfg)
        except ValueError as exc:
            rejected[label(cfg)] = str(exc)
            continue
        c = poisoned()
        e = None
        for _ in range(2):
            fn(c)
            e = rel_fro_err(c, ref)
            if not e < limit:
                break
        else:
            cands[label(cfg)] = (lambda f=fn, c=c: f(c))
            continue
        rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
    return cands, rejected


def fp32_tolerance(K: int) -> tuple[float, float]:
    """(atol, rtol) for an fp32-output GEMM against an fp32 reference with unit-variance inputs.

    Two fp32 summation orders of K products of size ~1 differ by about
    sqrt(K) * 2^-24 * K^0.5 in the worst rows; 1e-5 * K covers it with margin.
    """
    return (1e-5 * K, 1e-4)


def gemm_tolerance(K: int, rtol: float = 2e-3) -> dict[str, float]:
    """``h.check`` tolerances for a low-precision-output GEMM with unit-variance inputs.

    Two correct fp32 accumulations of K products differ by roughly sqrt(K) fp16 ulps
    of 1 in entries near zero, where the relative part of the tolerance gives nothing;
    a wrong tile is off by O(sqrt(K)) itself, 2^11 times more.
    """
    return dict(atol=float(2.0 ** -11 * K ** 0.5), rtol=rtol)


def gemm_cost(M: int, N: int, K: int, dtype: str = "fp16", out_dtype: str | None = None) -> tuple[float, float, str]:
    """(flops, bytes, source) of one GEMM from :func:`ledger.gemm.gemm_cost`."""
    c = _ledger_gemm_cost(M, N, K, dtype, out_dtype)
    return float(c.flops), float(c.bytes), source_of(_ledger_gemm_cost)


def library_kernels(fn: Any) -> list[str]:
    """Names of the CUDA kernels one call of ``fn`` launches (torch.profiler), memsets and
    copies left out -- which cuBLAS kernel ``torch.matmul`` picked for a shape."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if getattr(e.device_type, "name", "") == "CUDA"}
    return sorted(n for n in names if not n.startswith(("Memset", "Memcpy")))


def note_library_kernels(h: Any, name: str, fn: Any) -> None:
    """Note (record ``name``) the kernels one call of ``fn`` launches, on a CUDA harness; a profiler
    failure is recorded as an error of that note and the suite goes on."""
    if not h.is_cuda:
        return
    try:
        names = library_kernels(fn)
        h.note(name, ", ".join(names) or "none seen", kernels=names)
    except Exception as exc:  # the profiler is a nicety; the bench goes on without it
        h.error(name, exc)


def timeline_from_trace(events: list[dict[str, Any]], flush_names: set[str]) -> dict[str, Any]:
    """Medians over the calls of a profiled loop ``flush, fn, flush, fn, ...``: ``events`` are the kernel events of a
    Chrome trace (``name``, ``ts`` and ``dur`` in us, any order); a kernel named in ``flush_names`` opens a call, the
    kernels after it (up to the next flush) are that call's.  Returns the first call's kernel names, each kernel's
    median GPU duration, the median gap between consecutive kernels (negative when a kernel starts before the
    previous one ends: a programmatic dependent launch), the median span from the first kernel's start to the last
    one's end, the number of calls and the kernel counts seen.  Only the calls with the most common kernel count are
    used; ValueError when no call launched a kernel."""
    calls: list[list[dict[str, Any]]] = []
    cur: list[dict[str, Any]] | None = None
    for e in sorted(events, key=lambda e: e["ts"]):
        if e["name"] in flush_names:
            cur = []
            calls.append(cur)
        elif cur is not None:
            cur.append(e)
    calls = [c for c in calls if c]
    if not calls:
        raise ValueError("no call launched a kernel between the flushes")
    counts = [len(c) for c in calls]
    n = max(set(counts), key=lambda k: (counts.count(k), k))
    calls = [c for c in calls if len(c) == n]
    med = statistics.median
    return dict(kernels=[e["name"] for e in calls[0]],
                dur_us=[med(c[i]["dur"] for c in calls) for i in range(n)],
                gaps_us=[med(c[i]["ts"] - c[i - 1]["ts"] - c[i - 1]["dur"] for c in calls) for i in range(1, n)],
                span_us=med(max(e["ts"] + e["dur"] for e in c) - c[0]["ts"] for c in calls),
                calls=len(calls), kernels_per_call=sorted(set(counts)))


def kernel_timeline(h: Any, fn: Any, calls: int = 30) -> dict[str, Any]:
    """:func:`timeline_from_trace` of ``calls`` calls of ``fn``, each after the harness's L2 flush (its flush mode),
    under ``torch.profiler`` (CUPTI: the GPU's own clock).  The flush's kernels are learnt from one profiled flush
    alone; ``fn`` must launch none of them."""
    import json
    import os
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    def trace(body: Any) -> list[dict[str, Any]]:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            body()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path, encoding="utf-8") as f:
                return [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
        finally:
            os.unlink(path)

    flush_names = {e["name"] for e in trace(h._flush)}
    if not flush_names:
        raise RuntimeError("the L2 flush launched no kernel the profiler saw")
    for _ in range(3):
        fn()

    def loop() -> None:
        for _ in range(calls):
            h._flush()
            fn()

    out = timeline_from_trace(trace(loop), flush_names)
    out["flush_mode"] = h.protocol.get("flush_mode", "write")
    return out


def note_kernel_timeline(h: Any, name: str, subjects: dict[str, Any], calls: int = 30) -> None:
    """Note (record ``name``, field ``timeline``: label -> :func:`kernel_timeline`) the kernels each subject's call
    launches and their GPU durations, on a CUDA harness; a profiler failure is recorded as an error of that note and
    the suite goes on."""
    if not h.is_cuda:
        return
    try:
        tl = {lab: kernel_timeline(h, fn, calls) for lab, fn in subjects.items()}
        h.note(name, "; ".join(f"{lab}: " + " + ".join(f"{d:.1f}" for d in t["dur_us"]) + f" us, span {t['span_us']:.1f}"
                               for lab, t in tl.items()), timeline=tl)
    except Exception as exc:  # the profiler is a nicety; the bench goes on without it
        h.error(name, exc)


def record_bench(h: Any, name: str, fn: Any, *, repeat: int | None = None, **kw: Any) -> dict[str, Any]:
    """``h.bench`` when ``repeat`` is None; otherwise time with ``h.time(fn, repeat=repeat)`` (slow kernels)
    and append a bench record of the same shape (baselines timed the same way)."""
    if repeat is None:
        return h.bench(name, fn, **kw)
    ms = h.time(fn, repeat=repeat)
    rec: dict[str, Any] = {"kind": "bench", "suite": h.suite, "name": name, "ms": ms, "repeat": repeat,
                           "bytes": kw.get("bytes"), "flops": kw.get("flops"), "ledger_source": kw.get("ledger_source", "")}
    if kw.get("flops"):
        rec["tflops"] = kw["flops"] / (ms * 1e-3) / 1e12
    if kw.get("bytes"):
        rec["gbps"] = kw["bytes"] / (ms * 1e-3) / 1e9
    rec["baselines"], rec["speedup"] = {}, {}
    for label, bfn in (kw.get("baselines") or {}).items():
        if bfn is None:
            rec["baselines"][label] = None
            continue
        bms = h.time(bfn)
        rec["baselines"][label] = bms
        rec["speedup"][label] = bms / ms
    rec["ok"] = True
    for k, v in kw.items():
        if k not in ("bytes", "flops", "ledger_source", "baselines", "targets"):
            rec[k] = v
    h.records.append(rec)
    h.log(f"  bench {name:<40s} {ms * 1e3:9.1f} us  {rec.get('tflops', 0):7.1f} TFLOP/s (repeat={repeat})")
    return rec
