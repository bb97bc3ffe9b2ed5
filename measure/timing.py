"""Timing: milliseconds by CUDA events under the ledger's benchmark protocol.

``Timing`` is the part of :class:`measure.harness.Harness` that times:

``h.time(fn, *, repeat=None, flush_l2=None)``
    Milliseconds of ``fn()`` by CUDA events, following ``h.protocol``
    (:func:`protocol_dict` of :data:`ledger.protocol.DEFAULT_PROTOCOL`): warm-up for
    ``warmup_ms``, then as many timed launches as fit ``rep_ms``, each preceded by an L2
    flush (a write of ``l2_flush_bytes`` bytes; with ``flush_mode="clean"`` followed by a read
    of as many other bytes) outside the timed interval; returns the
    statistic (median).  On a CPU harness (tests) ``time.perf_counter`` is used.
``h.copy_bandwidth()``
    Device copy bandwidth in GB/s measured in this run (large device-to-device copy, bytes
    read + written); measured once and cached.
``h.bench(name, fn, *, bytes=None, flops=None, baselines=None, targets=None, ledger_source="", rounds=1, unpriced=None, **meta)``
    Times ``fn`` and every baseline (``{"eager": f, "F.rms_norm": g, "torch.compile": c}``; a
    ``None`` baseline is recorded as unavailable) and appends a record of kind ``"bench"``
    with ms, GB/s (``bytes`` / time), TFLOP/s (``flops`` / time), the fraction of the copy
    bandwidth, ``speedup[label] = baseline_ms / ms`` and, for ``targets`` such as
    ``{"frac_copy_bw": 0.85, "speedup:F.rms_norm": 1.15}``, whether each was met.
    ``bytes`` and ``flops`` come from :mod:`ledger` (:func:`measure.cost.priced`);
    a bench without either must say why (``unpriced="..."``): nothing falls back to
    timing only without a word.  With ``rounds > 1`` kernel and baselines alternate, the
    order reversed every other round; where NVML answers each round also records the median
    SM clock and board power (``mhz_per_round``, ``watts_per_round``), the power limit and
    the clock-event reasons (``clock_events``).
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Mapping

from ledger.protocol import DEFAULT_PROTOCOL, FLUSH_MODES, BenchProtocol, iterations

__all__ = ["protocol_dict", "ClockSampler", "clock_event_names", "CLOCK_EVENT_BITS", "Timing"]

#: Harness settings the ledger's protocol does not fix: the size of the copy-bandwidth probe
#: and the clamp on the number of timed launches.
COPY_BYTES = 2 * 1024**3
MIN_REPEAT, MAX_REPEAT = 10, 5000


def protocol_dict(p: BenchProtocol = DEFAULT_PROTOCOL) -> dict:
    """The protocol as the dict a results file records: ``warmup_ms``, ``rep_ms`` (measured
    time budget: iterations = ``max(1, rep_ms / estimate)`` as :func:`ledger.protocol.iterations`
    says, then clamped to ``[min_repeat, max_repeat]``), ``flush_l2``, ``l2_flush_bytes``,
    ``statistic``, ``copy_bytes`` (size of the copy-bandwidth probe), ``describe``, ``source``."""
    return {
        "warmup_ms": float(p.warmup_ms),
        "rep_ms": float(p.rep_ms),
        "flush_l2": bool(p.flush_l2),
        "l2_flush_bytes": int(p.flush_mb) * 1024 * 1024,
        "flush_mode": p.flush_mode,
        "statistic": p.statistic,
        "copy_bytes": COPY_BYTES,
        "min_repeat": MIN_REPEAT,
        "max_repeat": MAX_REPEAT,
        "describe": p.describe(),
        "source": "ledger.protocol.DEFAULT_PROTOCOL",
    }


def _iterations(proto: Mapping, estimate_ms: float) -> tuple[int, int]:
    warm, rep = iterations(max(float(estimate_ms), 1e-4), float(proto["warmup_ms"]), float(proto["rep_ms"]))
    lo, hi = int(proto.get("min_repeat", MIN_REPEAT)), int(proto.get("max_repeat", MAX_REPEAT))
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
        except Exception:  # no NVML: timing goes on, unsampled (the record then has no clocks)
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


class Timing:
    """CUDA-event timing, the copy bandwidth and bench records (mixed into the Harness)."""

    torch: Any
    device: Any
    is_cuda: bool
    protocol: dict
    suite: str
    records: list

    def _flush(self):
        """Rewrite a buffer larger than L2; with ``flush_mode="clean"`` then read a second one of
        the same size, so that the dirty lines the write left are written back here, outside the
        timed interval, and L2 holds clean lines of data the timed kernel does not use."""
        mode = self.protocol.get("flush_mode", "write")
        if mode not in FLUSH_MODES:
            raise ValueError(f"flush_mode must be one of {FLUSH_MODES}, got {mode!r}")
        n = int(self.protocol.get("l2_flush_bytes", DEFAULT_PROTOCOL.flush_mb * 1024 * 1024))
        if self._flush_buf is None:
            self._flush_buf = self.torch.empty(max(n // 4, 1), dtype=self.torch.int32, device=self.device)
        self._flush_buf.zero_()
        if mode == "clean":
            if getattr(self, "_clean_buf", None) is None:
                self._clean_buf = self.torch.ones(max(n // 4, 1), dtype=self.torch.int32, device=self.device)
            self._clean_sum = self._clean_buf.sum()

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
        nbytes = int(self.protocol.get("copy_bytes", COPY_BYTES))
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
              ledger_source: str = "", rounds: int = 1, unpriced: str | None = None, **meta) -> dict:
        """Time ``fn`` and each baseline; with ``rounds > 1`` the kernel and its baselines
        are timed in alternation, ``rounds`` times, and each figure is the median of its
        per-round statistics -- a slow drift of the clocks (a GPU heating up under a
        minute of GEMMs) then moves kernel and baseline alike instead of biasing the ratio."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        if not bytes and not flops and not unpriced:
            raise ValueError(f"{name}: a bench needs bytes or flops from the ledger, or unpriced='<why not>'")
        if (bytes or flops) and not ledger_source:
            raise ValueError(f"{name}: bytes/flops need the ledger function that computed them (ledger_source)")
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
        if unpriced:
            rec["unpriced"] = unpriced
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
