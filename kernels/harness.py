"""One GPU harness for every kernel family of the course.

Every ``gpu_suite(h)`` in ``kernels/`` (this chapter's kernels, the GEMMs, the case
study) receives a :class:`Harness` ``h`` from :mod:`kernels.runner` and uses only the
public API below.  The API is stable; new keyword arguments may be added, never
removed.

Inputs and outputs
------------------
``h.rand(shape, dtype, scale=1.0, offset=0.0)``
    Fresh random tensor on the harness device (normal distribution; a new seed every
    call, recorded, so two checks never share inputs).
``h.poisoned(shape, dtype)``
    Output buffer filled with a poison value (NaN for floating dtypes, including
    fp8; ``-123`` / the dtype's minimum for integers).  Call it before every launch.

Correctness
-----------
``h.check(name, got, want, *, dtype=None, atol=None, rtol=None, shape=None, **meta)``
    Compares ``got`` against a reference computed in fp32/fp64 (``want`` is cast to
    float64).  Tolerances default by the *output* dtype (:data:`TOLERANCES`).
    Counts every element that is still poison (unwritten), NaN/inf where the
    reference is finite, and outside ``atol + rtol * |want|``.  Appends a record of
    kind ``"check"`` and returns it (``rec["ok"]`` is a bool).  Never raises on a
    mismatch; raises ``ValueError`` on a shape mismatch.

Timing
------
``h.time(fn)``
    Milliseconds of ``fn()`` by CUDA events, following ``h.protocol`` (from
    ``ledger.protocol.DEFAULT_PROTOCOL``): warm-up for ``warmup_ms``, then as many
    timed launches as fit ``rep_ms``, each preceded by an L2 flush (a write of
    ``l2_flush_bytes`` bytes) outside the timed interval; returns the median.  On a
    CPU harness (tests) ``time.perf_counter`` is used.
``h.copy_bandwidth()``
    Device copy bandwidth in GB/s measured in this run (large device-to-device copy,
    bytes read + written); measured once and cached.
``h.bench(name, fn, *, bytes=None, flops=None, baselines=None, targets=None, ledger_source="", **meta)``
    Times ``fn`` and every baseline (``{"eager": f, "F.rms_norm": g, "torch.compile": c}``;
    a ``None`` baseline is recorded as unavailable), and appends a record of kind
    ``"bench"`` with ms, GB/s (``bytes`` / time), TFLOP/s (``flops`` / time), the
    fraction of the copy bandwidth, ``speedup[label] = baseline_ms / ms`` and, for
    ``targets`` such as ``{"frac_copy_bw": 0.85, "speedup:F.rms_norm": 1.15}``,
    whether each was met.  ``bytes`` and ``flops`` must come from :mod:`ledger`;
    ``ledger_source`` names the ledger function.
    With ``rounds > 1`` kernel and baselines alternate, the order reversed every other
    round (no one always runs first, on a cooler card); where NVML answers (``pynvml``,
    installed with the GPU machine's driver stack) each round also records the median SM
    clock and board power during that call (``mhz_per_round``, ``watts_per_round``) and
    the record names the power limit and the clock-event reasons seen
    (``clock_events``), so a power-capped comparison says so.
``h.search(name, candidates, rounds=1)``
    ``candidates`` maps a config label to a zero-argument callable; times each (``rounds``
    times, the starting point rotated every round, the median kept), returns
    ``(best_label, {label: ms})`` and records the search.
``h.precompile([(factory, args), (factory, args, kwargs), ...])``
    Compiles ``@tilelang.jit`` kernels in parallel (nvcc in threads) into tilelang's
    cache, so the suite's later calls load them; call it first in a suite.
``h.torch_compile(fn, name)``
    ``torch.compile(fn)`` warmed once; returns ``None`` (and records the exception)
    when inductor fails.

Bookkeeping
-----------
``ledger_cost("fusion.rmsnorm_bytes", m=..., n=..., dtype=...)`` (module function):
    ``(bytes, flops, source)`` from a :mod:`ledger` function, ``(None, None, why)``
    when the ledger lacks it.
``validate_tensor(name, t, dtype=, ndim=, shape=, device="cuda")`` (module function):
    raises ``ValueError`` naming the constraint (dtype, rank, shape, contiguity, device).
``h.note(name, text)``, ``h.skip(name, reason)``, ``h.error(name, exc)``: records.
``h.records``: the list of dicts (JSON-serialisable) the runner writes.
``h.suite``: the suite name the runner sets before calling ``gpu_suite``.
``h.quick``: ``True`` asks suites for small shapes only (smoke runs).
``h.protocol``: the benchmark protocol (from :mod:`ledger.protocol` when present).
"""
from __future__ import annotations

import math
import statistics
import time
import traceback
from typing import Any, Callable, Mapping

__all__ = ["Harness", "ClockSampler", "TOLERANCES", "clock_event_names", "default_protocol", "tolerance", "ledger_cost",
           "validate_tensor"]

# (atol, rtol) by output dtype name, against an fp64 reference computed from the
# same (rounded) inputs.  fp16/bf16: a few ulps of the format; fp8 e4m3: one ulp
# (3 mantissa bits) relative.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
    "float8_e4m3fn": (2e-2, 1.25e-1),
    "float8_e5m2": (4e-2, 2.5e-1),
}

_FALLBACK_PROTOCOL = {
    "warmup_ms": 25.0,
    "rep_ms": 100.0,
    "flush_l2": True,
    "l2_flush_bytes": 256 * 1024 * 1024,
    "statistic": "median",
    "copy_bytes": 2 * 1024**3,
    "min_repeat": 10,
    "max_repeat": 5000,
    "describe": "warm-up 25 ms, measure 100 ms, L2 flushed (256 MB) before each sample, median",
    "source": "kernels.harness fallback (ledger.protocol not available)",
}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def tolerance(dtype: Any) -> tuple[float, float]:
    """(atol, rtol) for an output dtype (torch dtype or name)."""
    name = _dtype_name(dtype)
    if name not in TOLERANCES:
        return (0.0, 0.0)  # integers: exact
    return TOLERANCES[name]


def default_protocol() -> dict:
    """The benchmark protocol as a dict: ``ledger.protocol.DEFAULT_PROTOCOL`` when present.

    Keys: ``warmup_ms``, ``rep_ms`` (measured time budget: iterations =
    ``max(1, rep_ms / estimate)`` as ``ledger.protocol.iterations`` says, then clamped to
    ``[min_repeat, max_repeat]``), ``flush_l2``, ``l2_flush_bytes``, ``statistic``,
    ``copy_bytes`` (size of the copy-bandwidth probe), ``describe`` and ``source``.
    """
    proto = dict(_FALLBACK_PROTOCOL)
    try:
        from ledger import protocol as lp  # type: ignore

        bp = lp.DEFAULT_PROTOCOL
    except Exception:  # pragma: no cover - depends on the ledger being importable
        return proto
    proto.update({
        "warmup_ms": float(bp.warmup_ms),
        "rep_ms": float(bp.rep_ms),
        "flush_l2": bool(bp.flush_l2),
        "l2_flush_bytes": int(bp.flush_mb) * 1024 * 1024,
        "statistic": bp.statistic,
        "describe": bp.describe(),
        "source": "ledger.protocol.DEFAULT_PROTOCOL",
    })
    return proto


def _iterations(proto: Mapping, estimate_ms: float) -> tuple[int, int]:
    est = max(float(estimate_ms), 1e-4)
    try:
        from ledger.protocol import iterations

        warm, rep = iterations(est, float(proto["warmup_ms"]), float(proto["rep_ms"]))
    except Exception:
        warm = max(1, int(float(proto["warmup_ms"]) / est))
        rep = max(1, int(float(proto["rep_ms"]) / est))
    lo, hi = int(proto.get("min_repeat", 10)), int(proto.get("max_repeat", 5000))
    return min(warm, hi), max(lo, min(rep, hi))


def _statistic(proto: Mapping, samples: list) -> float:
    stat = proto.get("statistic", "median")
    if stat == "mean":
        return statistics.fmean(samples)
    if stat == "min":
        return min(samples)
    if stat == "max":
        return max(samples)
    return statistics.median(samples)


#: NVML clock-event reason bits (``nvmlClocksEventReasons``) named in bench records.
CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x20: "sync_boost", 0x40: "sw_thermal_slowdown", 0x80: "hw_thermal_slowdown",
    0x100: "hw_power_brake_slowdown", 0x200: "display_clock_setting",
}


def clock_event_names(mask: int) -> list[str]:
    """Names of the bits set in an NVML clock-event-reason mask (unknown bits as hex)."""
    names = [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]
    rest = mask & ~sum(CLOCK_EVENT_BITS)
    return names + ([hex(rest)] if rest else [])


class ClockSampler:
    """Samples SM clock (MHz), board power (W) and the clock-event reasons through NVML
    every ``period_s`` while the ``with`` block runs.  Without NVML (no ``pynvml``, no
    driver: every CPU machine) it records nothing and ``available`` is False."""

    def __init__(self, device_index: int = 0, period_s: float = 0.005) -> None:
        self.period_s = period_s
        self.mhz: list[float] = []
        self.watts: list[float] = []
        self.events = 0
        self._stop = False
        self._thread = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nv = pynvml
            self._h = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self.available = True
        except Exception:  # no NVML: timing goes on, unsampled
            self._nv = None
            self.available = False

    def power_limit_w(self) -> float | None:
        if not self.available:
            return None
        try:
            return self._nv.nvmlDeviceGetEnforcedPowerLimit(self._h) / 1000.0
        except Exception:
            return None

    def _run(self) -> None:
        nv, h = self._nv, self._h
        while not self._stop:
            try:
                self.mhz.append(float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)))
                self.watts.append(nv.nvmlDeviceGetPowerUsage(h) / 1000.0)
                self.events |= int(nv.nvmlDeviceGetCurrentClocksEventReasons(h))
            except Exception:
                return
            time.sleep(self.period_s)

    def __enter__(self) -> "ClockSampler":
        self.mhz, self.watts, self.events, self._stop = [], [], 0, False
        if self.available:
            import threading

            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def summary(self) -> tuple[float | None, float | None]:
        """(median MHz, median W) of the last ``with`` block, ``None`` where unsampled."""
        return (statistics.median(self.mhz) if self.mhz else None,
                statistics.median(self.watts) if self.watts else None)


class Harness:
    """Verification and timing shared by every ``gpu_suite``; see the module docstring."""

    def __init__(
        self,
        device: str = "cuda",
        protocol: Mapping | None = None,
        quick: bool = False,
        log: Callable[[str], None] | None = print,
        seed: int = 0,
    ) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.is_cuda = self.device.type == "cuda"
        self.protocol = dict(protocol) if protocol is not None else default_protocol()
        self.quick = quick
        self.log = log or (lambda s: None)
        self.records: list[dict] = []
        self.suite = ""
        self._seed = seed
        self._copy_bw: float | None = None
        self._copy_ms: float | None = None
        self._flush_buf = None

    # ------------------------------------------------------------------ inputs
    def _gen(self):
        self._seed += 1
        g = self.torch.Generator(device=self.device)
        g.manual_seed(1_000_003 * self._seed + int(time.time_ns() % 1_000_000))
        return g

    def rand(self, shape, dtype, scale: float = 1.0, offset: float = 0.0):
        torch = self.torch
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
        g = self._gen()
        x = torch.randn(shape, generator=g, device=self.device, dtype=torch.float32)
        if scale != 1.0:
            x.mul_(scale)
        if offset != 0.0:
            x.add_(offset)
        return x.to(dtype)

    def poisoned(self, shape, dtype):
        torch = self.torch
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
        out = torch.empty(shape, dtype=dtype, device=self.device)
        if dtype.is_floating_point:
            if out.element_size() == 1:  # fp8: fill the NaN bit pattern
                out.view(torch.uint8).fill_(0x7F)
            else:
                out.fill_(float("nan"))
        else:
            info = torch.iinfo(dtype)
            out.fill_(info.min if info.min < 0 else info.max)
        return out

    # ------------------------------------------------------------- correctness
    def check(self, name, got, want, *, dtype=None, atol=None, rtol=None, shape=None, **meta) -> dict:
        torch = self.torch
        if tuple(got.shape) != tuple(want.shape):
            raise ValueError(f"{name}: shape {tuple(got.shape)} != reference {tuple(want.shape)}")
        out_dtype = dtype if dtype is not None else got.dtype
        a0, r0 = tolerance(out_dtype)
        atol = a0 if atol is None else atol
        rtol = r0 if rtol is None else rtol
        g = got.detach().to(torch.float64)
        w = want.detach().to(torch.float64)
        finite_ref = torch.isfinite(w)
        if got.dtype.is_floating_point:
            unwritten = int((torch.isnan(g) & finite_ref).sum())
        else:
            info = torch.iinfo(got.dtype)
            sentinel = info.min if info.min < 0 else info.max
            unwritten = int(((got == sentinel) & (want != sentinel)).sum())
        bad_nonfinite = int((~torch.isfinite(g) & finite_ref).sum())
        diff = (g - w).abs()
        diff = torch.where(finite_ref, diff, torch.zeros_like(diff))
        allowed = atol + rtol * w.abs()
        over = (diff > allowed) & finite_ref & torch.isfinite(g)
        mismatched = int(over.sum())
        finite_diff = diff[torch.isfinite(diff)]
        max_abs = float(finite_diff.max()) if finite_diff.numel() else (0.0 if not diff.numel() else float("nan"))
        rec = {
            "kind": "check",
            "suite": self.suite,
            "name": name,
            "shape": list(shape if shape is not None else got.shape),
            "dtype": _dtype_name(out_dtype),
            "numel": int(got.numel()),
            "atol": atol,
            "rtol": rtol,
            "max_abs_err": max_abs,
            "unwritten": unwritten,
            "nonfinite": bad_nonfinite,
            "mismatched": mismatched,
            "ok": unwritten == 0 and bad_nonfinite == 0 and mismatched == 0,
        }
        rec.update(meta)
        self.records.append(rec)
        status = "ok" if rec["ok"] else "FAIL"
        self.log(
            f"  check {name:<40s} {str(tuple(rec['shape'])):<22s} {rec['dtype']:<14s} "
            f"{status} max|err|={max_abs:.3g} unwritten={unwritten} mismatched={mismatched}"
        )
        return rec

    # ------------------------------------------------------------------ timing
    def _flush(self):
        if self._flush_buf is None:
            n = int(self.protocol.get("l2_flush_bytes", _FALLBACK_PROTOCOL["l2_flush_bytes"]))
            self._flush_buf = self.torch.empty(max(n // 4, 1), dtype=self.torch.int32, device=self.device)
        self._flush_buf.zero_()

    def time(self, fn: Callable[[], Any], *, repeat: int | None = None, flush_l2: bool | None = None) -> float:
        """Statistic (median by default) of CUDA-event samples of ``fn()``, in ms."""
        torch = self.torch
        flush_l2 = bool(self.protocol.get("flush_l2", True)) if flush_l2 is None else flush_l2
        if not self.is_cuda:
            samples = []
            fn()
            for _ in range(max(3, min(repeat or 5, 10))):
                t0 = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - t0) * 1e3)
            return _statistic(self.protocol, samples)
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        n_est = 5
        s.record()
        for _ in range(n_est):
            fn()
        e.record()
        torch.cuda.synchronize()
        warm, rep = _iterations(self.protocol, s.elapsed_time(e) / n_est)
        rep = int(repeat or rep)
        for _ in range(warm):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
        for i in range(rep):
            if flush_l2:
                self._flush()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        samples = [a.elapsed_time(b) for a, b in zip(starts, ends)]
        return _statistic(self.protocol, samples)

    def copy_bandwidth(self) -> float:
        """GB/s (1e9 B/s) of a large device-to-device copy, read + written bytes."""
        if self._copy_bw is not None:
            return self._copy_bw
        torch = self.torch
        nbytes = int(self.protocol.get("copy_bytes", _FALLBACK_PROTOCOL["copy_bytes"]))
        if not self.is_cuda:
            nbytes = min(nbytes, 64 * 1024 * 1024)
        src = torch.empty(nbytes // 4, dtype=torch.float32, device=self.device).fill_(1.0)
        dst = torch.empty_like(src)
        ms = self.time(lambda: dst.copy_(src))
        moved = 2 * src.numel() * src.element_size()
        self._copy_ms = ms
        self._copy_bw = moved / (ms * 1e-3) / 1e9
        self.records.append({
            "kind": "copy_bandwidth", "suite": self.suite, "name": "device copy (torch copy_)",
            "bytes": moved, "ms": ms, "gbps": self._copy_bw, "ok": True,
        })
        self.log(f"  device copy bandwidth: {self._copy_bw:.1f} GB/s ({moved / 1e9:.2f} GB in {ms:.3f} ms)")
        del src, dst
        return self._copy_bw

    def bench(self, name, fn, *, bytes=None, flops=None, baselines=None, targets=None,
              ledger_source: str = "", rounds: int = 1, **meta) -> dict:
        """Time ``fn`` and each baseline; with ``rounds > 1`` the kernel and its baselines
        are timed in alternation, ``rounds`` times, and each figure is the median of its
        per-round statistics -- a slow drift of the clocks (a GPU heating up under a
        minute of GEMMs) then moves kernel and baseline alike instead of biasing the ratio."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        per_round: dict[str, list] = {"kernel": []}
        mhz: dict[str, list] = {}
        watts: dict[str, list] = {}
        base_errors: dict[str, str] = {}
        sampler = self._sampler() if rounds > 1 else None
        events = 0
        order = [("kernel", fn)] + [(k, v) for k, v in (baselines or {}).items() if v is not None]
        for rnd in range(rounds):
            for label, f in (order if rnd % 2 == 0 else order[::-1]):
                if label in base_errors:
                    continue
                try:
                    if sampler is not None:
                        with sampler:
                            t = self.time(f)
                        m, w = sampler.summary()
                        events |= sampler.events
                        if m is not None:
                            mhz.setdefault(label, []).append(m)
                            watts.setdefault(label, []).append(w)
                    else:
                        t = self.time(f)
                    per_round.setdefault(label, []).append(t)
                except Exception as exc:  # a failing baseline must not lose the kernel
                    if label == "kernel":
                        raise
                    base_errors[label] = f"{type(exc).__name__}: {exc}"
        ms = statistics.median(per_round["kernel"])
        rec: dict = {"kind": "bench", "suite": self.suite, "name": name, "ms": ms,
                     "bytes": bytes, "flops": flops, "ledger_source": ledger_source}
        if rounds > 1:
            rec["rounds"] = rounds
            rec["ms_per_round"] = per_round
            rec["order"] = "alternating, reversed every other round"
            if mhz:
                rec["mhz_per_round"] = mhz
                rec["watts_per_round"] = watts
                rec["power_limit_w"] = sampler.power_limit_w()
                rec["clock_events"] = clock_event_names(events)
        if bytes:
            rec["gbps"] = bytes / (ms * 1e-3) / 1e9
            bw = self.copy_bandwidth()
            rec["copy_gbps"] = bw
            rec["frac_copy_bw"] = rec["gbps"] / bw
        if flops:
            rec["tflops"] = flops / (ms * 1e-3) / 1e12
        rec["baselines"] = {}
        rec["speedup"] = {}
        for label, bfn in (baselines or {}).items():
            if bfn is None:
                rec["baselines"][label] = None
            elif label in base_errors:
                rec["baselines"][label] = None
                rec.setdefault("baseline_errors", {})[label] = base_errors[label]
            else:
                bms = statistics.median(per_round[label])
                rec["baselines"][label] = bms
                rec["speedup"][label] = bms / ms
        if targets:
            met = {}
            for key, want in targets.items():
                if key.startswith("speedup:"):
                    have = rec["speedup"].get(key.split(":", 1)[1])
                else:
                    have = rec.get(key)
                met[key] = {"target": want, "value": have,
                            "met": None if have is None else bool(have >= want)}
            rec["targets"] = met
        rec["ok"] = True
        rec.update(meta)
        self.records.append(rec)
        parts = [f"{ms * 1e3:9.1f} us"]
        if "gbps" in rec:
            parts.append(f"{rec['gbps']:7.1f} GB/s ({100 * rec['frac_copy_bw']:5.1f}% copy)")
        if "tflops" in rec:
            parts.append(f"{rec['tflops']:7.1f} TFLOP/s")
        for label, sp in rec["speedup"].items():
            parts.append(f"{sp:.2f}x vs {label}")
        self.log(f"  bench {name:<40s} " + "  ".join(parts))
        return rec

    def _sampler(self) -> "ClockSampler | None":
        """One :class:`ClockSampler` per harness (CUDA only; ``None`` when NVML is absent)."""
        if not self.is_cuda:
            return None
        if getattr(self, "_clock_sampler", None) is None:
            idx = self.device.index if self.device.index is not None else self.torch.cuda.current_device()
            self._clock_sampler = ClockSampler(idx)
        return self._clock_sampler if self._clock_sampler.available else None

    def search(self, name, candidates: Mapping[str, Callable[[], Any]], rounds: int = 1):
        """Time every candidate, return ``(best_label, {label: ms})`` and record the search.

        With ``rounds > 1`` every candidate is timed once per round, each round starting one
        ``len / rounds`` further down the list (no candidate always runs at the same point of
        a power-capped minute), and its figure is the median of its rounds
        (``ms_per_round`` in the record)."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        labels = list(candidates)
        per: dict[str, list] = {k: [] for k in labels}
        errors: dict[str, str] = {}
        for rnd in range(rounds):
            start = (rnd * len(labels)) // rounds
            for label in labels[start:] + labels[:start]:
                if label in errors:
                    continue
                try:
                    per[label].append(self.time(candidates[label]))
                except Exception as exc:
                    errors[label] = f"{type(exc).__name__}: {exc}"
        times = {k: statistics.median(v) for k, v in per.items() if v and k not in errors}
        if not times:
            raise RuntimeError(f"{name}: every candidate failed: {errors}")
        best = min(times, key=times.get)
        rec = {"kind": "search", "suite": self.suite, "name": name, "best": best,
               "ms": times, "errors": errors, "ok": True}
        if rounds > 1:
            rec["rounds"] = rounds
            rec["ms_per_round"] = {k: per[k] for k in times}
        self.records.append(rec)
        self.log(f"  search {name}: best {best} ({times[best] * 1e3:.1f} us) of "
                 + ", ".join(f"{k}={v * 1e3:.1f}us" for k, v in times.items()))
        return best, times

    def precompile(self, jobs, num_workers: int | None = None) -> int:
        """Compile kernels in parallel before a suite uses them.

        ``jobs``: iterable of ``(factory, args)`` or ``(factory, args, kwargs)`` where
        ``factory`` is a ``@tilelang.jit`` function.  Elaboration runs serially, lowering
        and nvcc in threads (``tilelang.jit.par_compile``); the kernels land in
        tilelang's kernel cache, so the suite's later ``factory(*args)`` calls load them
        instead of compiling one by one.  Failures are recorded as notes, never raised
        (the suite's own call reports the error).  Returns the number compiled.
        """
        import os as _os

        from tilelang.jit import par_compile

        groups: dict = {}
        seen = set()
        for job in jobs:
            f, args = job[0], tuple(job[1])
            kw = dict(job[2]) if len(job) > 2 else {}
            key = (id(f), args, tuple(sorted(kw.items())))
            if key in seen:
                continue
            seen.add(key)
            gkey = (str(getattr(f, "target", None)), str(getattr(f, "out_idx", None)),
                    str(getattr(f, "execution_backend", None)), str(getattr(f, "pass_configs", None)),
                    str(getattr(f, "compile_flags", None)))
            try:
                groups.setdefault(gkey, (f, []))[1].append(f.get_tir(*args, **kw))
            except Exception as exc:
                self.note("precompile", f"elaboration failed for {getattr(f, '__name__', f)}{args}: "
                                        f"{type(exc).__name__}: {str(exc)[:200]}")
        n = 0
        workers = num_workers or max(1, min(32, (_os.cpu_count() or 2)))
        for f, funcs in groups.values():
            t0 = time.time()
            try:
                out = par_compile(funcs, out_idx=f.out_idx, execution_backend=f.execution_backend,
                                  target=f.target, target_host=f.target_host, verbose=False,
                                  pass_configs=f.pass_configs, compile_flags=f.compile_flags,
                                  num_workers=min(workers, len(funcs)), ignore_error=True)
                n += sum(k is not None for k in out)
            except Exception as exc:
                self.note("precompile", f"par_compile failed: {type(exc).__name__}: {str(exc)[:200]}")
            self.log(f"  precompiled {len(funcs)} kernels in {time.time() - t0:.1f} s")
        return n

    def torch_compile(self, fn, name: str = ""):
        try:
            cfn = self.torch.compile(fn)
            return cfn
        except Exception as exc:
            self.error(f"torch.compile {name}", exc)
            return None

    def warm_compiled(self, cfn, *args, name: str = ""):
        """Call a torch.compile'd function once; None (recorded) when inductor fails."""
        if cfn is None:
            return None
        try:
            cfn(*args)
            if self.is_cuda:
                self.torch.cuda.synchronize()
            return lambda: cfn(*args)
        except Exception as exc:
            self.error(f"torch.compile {name}", exc)
            return None

    # ------------------------------------------------------------- bookkeeping
    def note(self, name, text, **meta):
        self.records.append({"kind": "note", "suite": self.suite, "name": name, "text": text, "ok": True, **meta})
        self.log(f"  note {name}: {text}")

    def skip(self, name, reason):
        self.records.append({"kind": "skip", "suite": self.suite, "name": name, "reason": reason, "ok": True})
        self.log(f"  skip {name}: {reason}")

    def error(self, name, exc: BaseException):
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.records.append({"kind": "error", "suite": self.suite, "name": name,
                             "error": f"{type(exc).__name__}: {exc}", "traceback": tb[-4000:], "ok": False})
        self.log(f"  ERROR {name}: {type(exc).__name__}: {str(exc)[:300]}")


def ledger_cost(qualname: str, **kwargs) -> tuple[float | None, float | None, str]:
    """Bytes and FLOPs from a ledger function ``"module.func"`` (under :mod:`ledger`).

    The function may return a number (bytes), a ``(bytes, flops)`` pair, a mapping or an
    object with ``bytes``/``flops`` (or ``total_bytes``/``total_flops``) members.
    Returns ``(bytes, flops, source)``; ``(None, None, reason)`` when the ledger has
    no such function yet -- the harness then reports time only, never a retyped number.
    """
    import importlib

    mod_name, _, fn_name = qualname.rpartition(".")
    try:
        mod = importlib.import_module(f"ledger.{mod_name}")
        fn = getattr(mod, fn_name)
    except (ImportError, AttributeError) as exc:
        return None, None, f"ledger.{qualname} unavailable ({type(exc).__name__})"
    out = fn(**kwargs)
    src = f"ledger.{qualname}"
    if isinstance(out, (int, float)):
        return float(out), None, src
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return float(out[0]), (None if out[1] is None else float(out[1])), src

    def pick(obj, *names):
        for n in names:
            v = obj.get(n) if isinstance(obj, Mapping) else getattr(obj, n, None)
            if callable(v):
                v = v()
            if v is not None:
                return float(v)
        return None

    return pick(out, "bytes", "total_bytes", "nbytes"), pick(out, "flops", "total_flops"), src


def validate_tensor(name: str, t: Any, *, dtype: Any = None, ndim: int | None = None,
                    shape: tuple | None = None, device: str | None = "cuda") -> None:
    """Raise ``ValueError`` naming the violated constraint (before any launch).

    Order: type, dtype, rank, shape, contiguity, device -- so a CPU test can reach
    every check with CPU tensors.  ``dtype`` may be one dtype or a tuple of them;
    ``shape`` entries of ``None`` are free.
    """
    import torch

    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if t.dtype not in allowed:
            names = ", ".join(_dtype_name(d) for d in allowed)
            raise ValueError(f"{name}: dtype must be {names}, got {_dtype_name(t.dtype)}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if shape is not None:
        if len(shape) != t.dim() or any(s is not None and s != d for s, d in zip(shape, t.shape)):
            want = tuple("*" if s is None else s for s in shape)
            raise ValueError(f"{name}: shape must be {want}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous (row-major), got strides {tuple(t.stride())}")
    if device is not None and t.device.type != device:
        raise ValueError(f"{name}: must be on a {device} device, got {t.device}")


def finite_or_none(x):
    """JSON helper: NaN/inf become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
