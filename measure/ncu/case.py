"""Measure the DRAM bytes designs A, B and C of chapter 28's case really move.

One command on the GPU machine::

    python -m measure.ncu.case [--out DIR]

runs Nsight Compute on this module's workload and writes ``ncu_case.json`` (and the
raw ``ncu_case.csv``) to ``DIR`` (default ``$OUT`` when set, else ``measure/results/ncu``,
where the committed copy lives).
Equivalent by hand::

    ncu --clock-control none --profile-from-start off --print-units base --csv \\
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,... \\
        --log-file ncu_case.csv python -m measure.ncu.case --child
    python -m measure.ncu.case --parse ncu_case.csv

What is profiled (``--child``): the three designs are compiled, their inputs built
(4096 tokens, 32 q + 8 kv heads, head_dim 128) and every kernel is warmed up *before*
``cudaProfilerStart``; inside the profiled range exactly four kernels run, once each:

0. a calibration kernel, ``torch.mul(src, 2.0, out=dst)`` on 2**24 fp32 (64 MiB in,
   64 MiB out, larger than the 50 MiB L2): the meter must read ~67.1 MB each way;
1. design A, 2. design B, 3. design C.

Nsight Compute's default ``--cache-control all`` flushes the caches before every
profiled kernel, so each number is a cold-L2 launch; ``--clock-control none`` leaves
the clocks as the timing harness sees them.  ``lts__t_bytes.sum`` (bytes through L2)
is collected next to DRAM bytes: if L2 absorbs design A's repeated table reads, L2
traffic stays near the ledger's no-cache bytes while DRAM traffic falls toward the
ideal.
"""
from __future__ import annotations

import sys

from measure.ncu.driver import RESULTS, cli, profile_once, warm_up  # noqa: F401  (RESULTS: where the json lives)

METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "lts__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
)
MINIMAL_METRICS = METRICS[:3] + ("launch__grid_size",)
ORDER = ("calibration", "A", "B", "C")
CAL_ELEMS = 1 << 24


def child() -> None:
    """The workload ncu profiles: warm everything, then one launch of each kernel."""
    import torch

    from kernels import case_study as cs

    dev = torch.device("cuda")
    T_, H, D = cs.TOKENS, cs.Q_HEADS + cs.KV_HEADS, cs.HEAD_DIM
    g = torch.Generator(device=dev)
    g.manual_seed(28)
    x = (torch.randn((T_, H, D), generator=g, device=dev) * 2).bfloat16()
    w = (torch.randn((2, D), generator=g, device=dev) * 0.5 + 1).bfloat16()
    cos, sin = cs.rope_tables(T_, device=dev)
    q8 = torch.empty((T_ * H, D), dtype=torch.float8_e4m3fn, device=dev)
    s = torch.empty((T_ * H,), dtype=torch.float32, device=dev)
    xv = x.view(T_ * H, D)
    kernels = {d: cs.get_kernel(d, T_) for d in cs.DESIGNS}
    src = torch.randn(CAL_ELEMS, generator=g, device=dev)
    dst = torch.empty_like(src)
    launches = {
        "calibration": lambda: torch.mul(src, 2.0, out=dst),
        **{d: (lambda k=k: k(xv, w, cos, sin, q8, s)) for d, k in kernels.items()},
    }
    warm_up(launches)
    # sanity: design C's scales against the reference (outside the profiled range)
    _, s_ref, _ = cs.reference(x, w, cos, sin)
    err = ((s.view(T_, H) - s_ref).abs() / s_ref.abs()).max().item()
    print(f"[ncu_case] design C scale max rel err {err:.2e}", file=sys.stderr)
    profile_once(launches, ORDER)


def summarize(kernels: list[dict], provenance: dict | None = None) -> dict:
    """Measured bytes and times of the designs next to the ledger's budget."""
    from ledger import case_study as lc
    from measure.suites.case_study import ledger_design

    if len(kernels) != len(ORDER):
        raise ValueError(f"expected {len(ORDER)} profiled kernels ({', '.join(ORDER)}), got {len(kernels)}")
    ideal = lc.ideal_bytes()
    out: dict = {"provenance": provenance or {}, "ideal_mb": ideal / 1e6, "designs": {}}
    for name, k in zip(ORDER, kernels):
        m = k["metrics"]
        rd, wr = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
        ns = m.get("gpu__time_duration.sum")
        rec = {
            "kernel": k["name"][:80], "grid": k["grid"], "block": k["block"],
            "dram_read_mb": None if rd is None else rd / 1e6,
            "dram_write_mb": None if wr is None else wr / 1e6,
            "dram_mb": None if rd is None or wr is None else (rd + wr) / 1e6,
            "l2_mb": None if m.get("lts__t_bytes.sum") is None else m["lts__t_bytes.sum"] / 1e6,
            "l2_hit_pct": m.get("lts__t_sector_hit_rate.pct"),
            "warps_active_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "registers_per_thread": m.get("launch__registers_per_thread"),
            "time_us": None if ns is None else ns / 1e3,
        }
        if rec["dram_mb"] is not None and ns:
            rec["dram_gbps"] = (rd + wr) / ns
        if name == "calibration":
            rec["expected_mb_each_way"] = CAL_ELEMS * 4 / 1e6
            out["calibration"] = rec
            continue
        d = ledger_design(name)
        grid = int(m["launch__grid_size"]) if m.get("launch__grid_size") is not None else None
        if grid is not None and grid != d.grid:
            raise ValueError(f"kernel {k['id']} has grid {grid}, design {name} needs {d.grid}: order mixed up")
        rec.update({
            "rows_per_block": d.rows_per_block, "ledger_mb": d.total_bytes / 1e6,
            "ledger_floor_us": lc.sol_seconds(d.total_bytes) * 1e6,
            "ideal_floor_us": lc.sol_seconds(ideal) * 1e6,
        })
        if rec["dram_mb"] is not None:
            rec["measured_over_ledger"] = rec["dram_mb"] / rec["ledger_mb"]
            rec["measured_over_ideal"] = rec["dram_mb"] / (ideal / 1e6)
        if rec["l2_mb"] is not None:
            rec["l2_over_ledger"] = rec["l2_mb"] / rec["ledger_mb"]
        out["designs"][name] = rec
    ds = out["designs"]
    if all(ds[n].get("time_us") for n in "ABC"):
        out["time_ratio_A_over_C"] = ds["A"]["time_us"] / ds["C"]["time_us"]
        out["time_ratio_B_over_C"] = ds["B"]["time_us"] / ds["C"]["time_us"]
    if all(ds[n].get("dram_mb") for n in "ABC"):
        out["dram_ratio_A_over_C"] = ds["A"]["dram_mb"] / ds["C"]["dram_mb"]
        out["ledger_ratio_A_over_C"] = ds["A"]["ledger_mb"] / ds["C"]["ledger_mb"]
    return out


def _report(summary: dict) -> None:
    cal = summary["calibration"]
    print(f"calibration: read {cal['dram_read_mb']:.1f} MB write {cal['dram_write_mb']:.1f} MB "
          f"(expected {cal['expected_mb_each_way']:.1f} each way)")
    for n, d in summary["designs"].items():
        print(f"design {n}: DRAM {d['dram_mb']:.2f} MB (ledger {d['ledger_mb']:.2f}, "
              f"x{d['measured_over_ledger']:.2f}), L2 {d['l2_mb']} MB, {d['time_us']:.1f} us")


def main(argv: list[str] | None = None) -> int:
    return cli(argv, doc=__doc__, name="ncu_case", module="measure.ncu.case", child=child, summarize=summarize,
               report=_report, metrics=METRICS, fallback_metrics=MINIMAL_METRICS)


if __name__ == "__main__":
    raise SystemExit(main())
