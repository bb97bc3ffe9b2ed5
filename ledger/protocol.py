"""The benchmark protocol of chapter 14, as data the kernel harness uses and prints.

A speed comparison means something only when both sides fix the same five things:
the baseline, the shape, the dtypes and accumulation, the epilogue and the
measurement protocol.  :class:`BenchProtocol` is the fifth: target milliseconds for
warm-up and for measurement (converted into iteration counts from a first estimate,
as ``tilelang.profiler.do_bench`` does: ``n = max(1, int(target_ms / estimate_ms))``),
an L2 flush before every sample, the statistic reported and the timing backend.
:func:`fair_comparison_checklist` is the whole list; ``measure.timing`` prints
:meth:`BenchProtocol.describe` with every result.

Public API (kept small and stable): :class:`BenchProtocol`, :data:`DEFAULT_PROTOCOL`,
:func:`iterations`, :func:`fair_comparison_checklist`, :data:`FAIRNESS_ITEMS`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Optional

from ledger.figures import Figure, fig

__all__ = ["BenchProtocol", "DEFAULT_PROTOCOL", "FLUSH_MODES", "iterations", "fair_comparison_checklist",
           "FAIRNESS_ITEMS", "figures"]

STATISTICS = ("median", "mean", "min", "max")
#: How the L2 is flushed before a sample: ``write`` rewrites a buffer larger than L2 (do_bench's
#: ``cache.zero_()``), which leaves L2 full of dirty lines that the timed kernel may have to write
#: back; ``clean`` follows that write with a read of a second buffer of the same size, so L2 holds
#: clean lines of data no kernel uses (suite ``gemm.flush`` measures the difference).
FLUSH_MODES = ("write", "clean")
BACKENDS = ("event", "cupti", "cudagraph")


def _ms(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number of milliseconds, got {v!r}")
    return float(v)


@dataclass(frozen=True)
class BenchProtocol:
    """How one kernel is timed.  Defaults: the ``do_bench`` targets, median, L2 flushed."""

    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    flush_l2: bool = True
    flush_mb: int = 256  # do_bench's cache_size: a buffer larger than L2 is rewritten
    flush_mode: str = "write"  # FLUSH_MODES
    statistic: str = "median"
    backend: str = "event"
    estimate_runs: int = 5  # runs timed first to estimate one call

    def __post_init__(self) -> None:
        _ms("warmup_ms", self.warmup_ms)
        _ms("rep_ms", self.rep_ms)
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {self.statistic!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.flush_mode not in FLUSH_MODES:
            raise ValueError(f"flush_mode must be one of {FLUSH_MODES}, got {self.flush_mode!r}")
        if not isinstance(self.flush_mb, int) or self.flush_mb <= 0:
            raise ValueError(f"flush_mb must be a positive integer, got {self.flush_mb!r}")
        if not isinstance(self.estimate_runs, int) or self.estimate_runs <= 0:
            raise ValueError(f"estimate_runs must be a positive integer, got {self.estimate_runs!r}")

    def iterations(self, estimate_ms: float) -> tuple[int, int]:
        """(warm-up iterations, measured iterations) for a call estimated at ``estimate_ms``."""
        return iterations(estimate_ms, self.warmup_ms, self.rep_ms)

    def do_bench_kwargs(self) -> dict:
        """Keyword arguments for ``tilelang.profiler.do_bench`` that realise this protocol."""
        return {"warmup": self.warmup_ms, "rep": self.rep_ms, "backend": self.backend,
                "return_mode": self.statistic, "cache_size": self.flush_mb}

    def describe(self) -> str:
        """One line printed with every timed result."""
        how = f"{self.flush_mb} MB" if self.flush_mode == "write" else f"{self.flush_mb} MB written, then {self.flush_mb} MB read"
        flush = f"L2 flushed ({how}) before each sample" if self.flush_l2 else "L2 not flushed"
        return (f"warm-up {self.warmup_ms:g} ms, measure {self.rep_ms:g} ms (iterations = max(1, target/estimate)), "
                f"{flush}, {self.statistic} of samples, {self.backend} timing, kernel only")

    def record(self) -> dict:
        return asdict(self)


DEFAULT_PROTOCOL = BenchProtocol()


def iterations(estimate_ms: float, warmup_ms: float = 25.0, rep_ms: float = 100.0) -> tuple[int, int]:
    """``(max(1, int(warmup/estimate)), max(1, int(rep/estimate)))`` as do_bench converts them."""
    e = _ms("estimate_ms", estimate_ms)
    return max(1, int(_ms("warmup_ms", warmup_ms) / e)), max(1, int(_ms("rep_ms", rep_ms) / e))


#: The five things a fair comparison fixes, and what to write down for each.
FAIRNESS_ITEMS: tuple[tuple[str, str], ...] = (
    ("baseline", "which baseline: cuBLAS / cuBLASLt, a CATLASS template (+ dispatch policy, swizzle), "
                 "a hand-written Ascend C kernel, a torch / torch_npu operator"),
    ("shape", "M, N, K, batch, transposes, padding, layout (row/column major or NZ)"),
    ("dtype", "input dtypes, accumulator dtype, output dtype; whether fp32 inputs may use TF32"),
    ("epilogue", "bias / activation / quantisation included or not; fused and unfused reported apart"),
    ("protocol", "warm-up and repeats, L2 flush, statistic (mean/median/min), backend, kernel-only or with launch"),
)


def fair_comparison_checklist(protocol: Optional[BenchProtocol] = None) -> list[str]:
    """The checklist as printable lines; the protocol line carries the concrete settings."""
    p = DEFAULT_PROTOCOL if protocol is None else protocol
    lines = [f"{i}. {name}: {what}" for i, (name, what) in enumerate(FAIRNESS_ITEMS, 1)]
    lines[-1] += f" -- here: {p.describe()}"
    lines += [
        "6. report TFLOP/s (and GB/s for memory-bound variants) with FLOPs and bytes from the ledger",
        "7. report correctness against one golden result with rtol/atol",
        "8. report compile-time parameters: block_M/N/K, num_stages, threads, policy, split_k",
    ]
    return lines


def figures() -> list[Figure]:
    p = DEFAULT_PROTOCOL
    c = "tilelang.profiler.do_bench defaults (tilelang 0.1.15, profiler/bench.py); the course reports the median"
    n_w, n_r = p.iterations(0.5)
    return [
        fig("gemm.bench.warmup_ms", p.warmup_ms, "ms", digits=0, source="ledger.protocol.DEFAULT_PROTOCOL", conditions=c),
        fig("gemm.bench.rep_ms", p.rep_ms, "ms", digits=0, source="ledger.protocol.DEFAULT_PROTOCOL", conditions=c),
        fig("gemm.bench.flush_mb", p.flush_mb, "MB", source="ledger.protocol.DEFAULT_PROTOCOL", conditions=c),
        fig("gemm.bench.statistic", p.statistic, "", source="ledger.protocol.DEFAULT_PROTOCOL", conditions=c),
        fig("gemm.bench.example_warmup_iters", n_w, "iterations", source="ledger.protocol.iterations",
            conditions="a kernel estimated at 0.5 ms"),
        fig("gemm.bench.example_rep_iters", n_r, "iterations", source="ledger.protocol.iterations",
            conditions="a kernel estimated at 0.5 ms"),
        fig("gemm.bench.fairness_items", len(FAIRNESS_ITEMS), "items", source="ledger.protocol.FAIRNESS_ITEMS",
            conditions="baseline, shape, dtype and accumulation, epilogue, measurement protocol"),
    ]


def main() -> int:
    print(DEFAULT_PROTOCOL.describe())
    print()
    for line in fair_comparison_checklist():
        print(line)
    print()
    print(f"{'estimate ms':>12} {'warm-up iters':>14} {'measured iters':>15}")
    for e in (0.005, 0.05, 0.5, 5.0, 50.0, 500.0):
        w, r = DEFAULT_PROTOCOL.iterations(e)
        print(f"{e:>12g} {w:>14d} {r:>15d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
