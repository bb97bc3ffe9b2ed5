"""Helpers of the GEMM suites: rounds, errors, tolerances, priced GEMMs, fixed-repeat benches."""
from __future__ import annotations

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
