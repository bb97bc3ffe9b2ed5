"""What the B multicast of the hand-written rung 4 saves: Nsight Compute at 8192^3 (fp16).

One command on the GPU machine::

    python -m measure.ncu.gemm [--out DIR]

profiles, once each and after a warm-up, four 8192^3 fp16 GEMMs -- the first automatic
candidate of the tuned search, the hand-written persistent pipeline without and with the
cluster multicast of B (all three named by :func:`configs`), and cuBLAS
(``torch.matmul``) -- and writes ``ncu_gemm.json`` (and the raw ``ncu_gemm.csv``) to
``DIR`` (default ``$OUT``, else ``measure/results/ncu``).  Per kernel: time, L2 bytes read
on behalf of the SMs, DRAM bytes, the SM clock while it ran, and tensor-pipe activity where
the installed ncu knows the metric.  The multicast claim of the GEMM chapter is that L2 read bytes
drop: one L2 read of a B tile feeds two SMs.  The ncu options are those of
:mod:`measure.ncu.driver` (``--clock-control none``; caches flushed before each kernel).
"""

from __future__ import annotations

from measure.ncu.driver import RESULTS, cli, profile_once, warm_up  # noqa: F401  (RESULTS: where the json lives)

#: The first tier; an unknown metric fails the whole ncu run, then :data:`FALLBACK` is used.
METRICS = (
    "gpu__time_duration.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_bytes.sum",
    "dram__bytes_read.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
)
FALLBACK = METRICS[:5] + ("launch__grid_size",)
SIDE = 8192
ORDER = ("automatic", "hand-written", "hand-written multicast", "cuBLAS")


def configs() -> dict[str, dict]:
    """The three TileLang candidates profiled, by the name ORDER gives them."""
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    ws = [c for c in TUNE_CANDIDATES if c.get("ws") and c.get("persistent") and c.get("inflight") == 0]
    return {
        "automatic": TUNE_CANDIDATES[0],
        "hand-written": next(c for c in ws if c.get("cluster", 1) == 1),
        "hand-written multicast": next(c for c in ws if c.get("cluster", 1) == 2),
    }


def child() -> None:
    """The profiled workload: every kernel warmed up, then one launch of each in ORDER."""
    import torch

    from kernels.gemm import ladder

    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(14)
    a = torch.randn((SIDE, SIDE), generator=g, device=dev).half()
    b = torch.randn((SIDE, SIDE), generator=g, device=dev).half()
    c = torch.empty((SIDE, SIDE), dtype=torch.float16, device=dev)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    kerns = {name: ladder.build_tuned(SIDE, SIDE, SIDE, cfg, sms) for name, cfg in configs().items()}
    launches = {name: (lambda k=k: k(a, b, c)) for name, k in kerns.items()}
    launches["cuBLAS"] = lambda: torch.matmul(a, b.t())
    warm_up(launches)
    profile_once(launches, ORDER)


def summarize(kernels: list[dict], provenance: dict | None = None) -> dict:
    """Name the profiled kernels (launch order = ORDER); L2 read bytes, DRAM bytes, clock."""
    if len(kernels) != len(ORDER):
        raise ValueError(f"expected {len(ORDER)} profiled kernels, got {len(kernels)}")
    from kernels.gemm import ladder

    out: dict = {"provenance": provenance or {}, "side": SIDE, "kernels": {},
                 "configs": {n: ladder.label(c) for n, c in configs().items()}}
    for name, k in zip(ORDER, kernels):
        m = k["metrics"]
        t = m.get("gpu__time_duration.sum")  # ns
        sec = m.get("lts__t_sectors_srcunit_tex_op_read.sum")
        clk = m.get("sm__cycles_elapsed.avg.per_second")
        out["kernels"][name] = {
            "kernel": k.get("name"),
            "time_us": None if t is None else t / 1e3,
            "tflops": None if t is None else 2.0 * SIDE ** 3 / t / 1e3,
            "l2_read_mb": None if sec is None else sec * 32 / 1e6,  # 32-byte sectors
            "l2_mb": None if m.get("lts__t_bytes.sum") is None else m["lts__t_bytes.sum"] / 1e6,
            "dram_read_mb": None if m.get("dram__bytes_read.sum") is None else m["dram__bytes_read.sum"] / 1e6,
            "sm_mhz": None if clk is None else clk / 1e6,
            "tensor_active_pct": m.get("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"),
            "grid": m.get("launch__grid_size"),
        }
    return out


def _report(summary: dict) -> None:
    def f(x, spec):  # a counter ncu did not deliver prints as n/a
        return "n/a" if x is None else format(x, spec)

    for n, d in summary["kernels"].items():
        print(f"{n:24s} {f(d['time_us'], '.1f')} us  L2 read {f(d['l2_read_mb'], '.0f')} MB  "
              f"L2 {f(d['l2_mb'], '.0f')} MB  DRAM read {f(d['dram_read_mb'], '.0f')} MB  "
              f"{f(d['sm_mhz'], '.0f')} MHz  tensor {f(d['tensor_active_pct'], '.1f')}")


def main(argv: list[str] | None = None) -> int:
    return cli(argv, doc=__doc__, name="ncu_gemm", module="measure.ncu.gemm", child=child, summarize=summarize,
               report=_report, metrics=METRICS, fallback_metrics=FALLBACK)


if __name__ == "__main__":
    raise SystemExit(main())
