"""Why the W4A16 decode kernels stay far from the byte floor: Nsight Compute at M = 1 and 16.

One command on the GPU machine::

    python -m measure.ncu.w4a16 [--out DIR]

profiles, once each and after a warm-up, the W4A16 kernels of suite ``gemm.w4a16`` at the
decode shapes (M = 1 and 16, N = K = 8192, int4 weights, group 128) -- the warp-specialised
wgmma/mma kernel (:mod:`kernels.gemm.w4a16`) with the configurations that won the recorded
searches, its ``nomma`` and ``noexpand`` timing probes at M = 16, the decode kernel
(:mod:`kernels.gemm.w4a16_dec`) with its best recorded configuration and its ``loadonly``
probe at M = 1 -- and cuBLAS on the fp16 weights (``torch.matmul``, the suite's baseline) as a
memory-bound reference.  All are listed in :data:`PROFILED`; kernels are compiled with the
suite's own ``build`` and configurations.  It writes ``ncu_w4a16.csv`` (ncu's raw CSV) and
``ncu_w4a16.json`` (one row per profiled launch, plain-English keys, see :func:`summarize`)
to ``DIR`` (default ``$OUT``, else ``measure/results/ncu``).

The ncu options are those of :mod:`measure.ncu.driver` (``--clock-control none``; caches
flushed before each kernel, i.e. cold L2 as in the timing harness) plus a kernel filter: the
profiled range of the child holds one launch of each entry of :data:`PROFILED` and nothing
else, and a cuBLAS call may be more than one kernel (a split-K reduction), so every TileLang
launch sits between cuBLAS launches and is recognised by its name, ``main_kernel``.
"""
from __future__ import annotations

from typing import Any

from measure.ncu import driver
from measure.ncu.driver import RESULTS, find_ncu, profile_once, read_csv, warm_up  # noqa: F401

NAME = "ncu_w4a16"
MODULE = "measure.ncu.w4a16"
N = K = 8192
GROUP = 128
#: The name tilelang gives every kernel it generates (the launch the filter keeps as one kernel).
TILELANG_KERNEL = "main_kernel"

#: Warp-state reasons of the WarpStateStats section (cycles a warp spends in each state per
#: issued instruction; ``selected`` is the issuing state, the rest are stalls).
STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
          "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
          "short_scoreboard", "sleeping", "tex_throttle", "wait")


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


#: Metric name -> what it is (the raw metrics; ``summarize`` derives the plain-English keys).
#: Chosen from the SpeedOfLight, MemoryWorkloadAnalysis, Occupancy and WarpStateStats sections,
#: a few passes per kernel rather than whole sections.
CORE = {
    "gpu__time_duration.sum": "duration (ns)",
    "gpc__cycles_elapsed.max": "elapsed cycles (GPC clock)",
    "sm__cycles_elapsed.avg.per_second": "SM clock (Hz)",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput, % of peak",
    "lts__t_sector_hit_rate.pct": "L2 sector hit rate, %",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 read sectors from the SMs (LSU and TMA)",
    "lts__t_requests_srcunit_tex_op_read.sum": "L2 read requests from the SMs",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global-load sectors (LSU, ld.global)",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global-load requests (LSU, ld.global)",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy, %",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy, %",
    "launch__grid_size": "blocks",
    "launch__block_size": "threads per block",
    "launch__registers_per_thread": "registers per thread",
}
METRICS: tuple[str, ...] = tuple(CORE) + tuple(stall_metric(r) for r in STALLS)
#: Used when the first tier fails (an unknown metric name fails the whole ncu run): metrics
#: the committed logs of the other ncu modules already carry, and the three stalls a
#: memory-bound kernel is expected to show.
FALLBACK: tuple[str, ...] = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                             "lts__t_sector_hit_rate.pct", "lts__t_sectors_srcunit_tex_op_read.sum",
                             "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__cycles_elapsed.avg.per_second",
                             "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
                             *(stall_metric(r) for r in ("long_scoreboard", "barrier", "wait", "selected")))


def _suite_cfgs() -> dict[str, dict]:
    """The configurations named in :data:`PROFILED`, taken from the suite's own tables (so a
    renamed or dropped candidate fails here instead of profiling something else)."""
    from kernels.gemm.w4a16 import label
    from measure.suites.gemm.w4a16 import CANDIDATES, PROBES

    cfgs = {label(c): c for c in CANDIDATES["decode"]}
    cfgs.update({label(c): c for _, c, _ in PROBES})
    return cfgs


#: (name, M, suite label or "cuBLAS", probe).  Winners of the recorded H200 searches: the wgmma
#: form ``m16_k512_s4_k`` at M = 1, its mma.sync form at M = 16 (the probes were recorded on the
#: wgmma form, so it is profiled at M = 16 too); the decode kernel ``dec_r64_kw1_sk8_d4`` at both;
#: ``loadonly`` of the decode winner and of the configuration whose probe the suite recorded; the
#: word-wide wgmma winners of the later searches (M = 1 and 16) with their ``loadonly`` probes.
#: Every TileLang launch follows a cuBLAS launch or another TileLang launch, and the two cuBLAS
#: launches are separated by TileLang ones (see :func:`group_launches`).
PROFILED: tuple[tuple[str, int, str, str], ...] = (
    ("cuBLAS fp16 M=1", 1, "cuBLAS", ""),
    ("wgmma winner M=1", 1, "m16_k512_s4_k", ""),
    ("decode best M=1", 1, "dec_r64_kw1_sk8_d4", ""),
    ("decode best loadonly M=1", 1, "dec_r64_kw1_sk8_d4", "loadonly"),
    ("decode r128 sk4 loadonly M=1", 1, "dec_r128_kw1_sk4_d4", "loadonly"),
    ("cuBLAS fp16 M=16", 16, "cuBLAS", ""),
    ("mma winner M=16", 16, "m16_k512_s4_k_mma", ""),
    ("wgmma M=16", 16, "m16_k512_s4_k", ""),
    ("wgmma nomma M=16", 16, "m16_k512_s4_k", "nomma"),
    ("wgmma noexpand M=16", 16, "m16_k512_s4_k", "noexpand"),
    ("decode best M=16", 16, "dec_r64_kw1_sk8_d4", ""),
    # the word-wide winners of the later searches and their rings alone (``loadonly``)
    ("wide winner M=1", 1, "m16_k512_s6_k_wd", ""),
    ("wide loadonly M=1", 1, "m16_k512_s6_k_wd", "loadonly"),
    ("wide winner M=16", 16, "m16_k256_s4_w8_k_wd", ""),
    ("wide loadonly M=16", 16, "m16_k256_s4_w8_k_wd", "loadonly"),
    ("wide mmaonly M=16", 16, "m16_k256_s4_w8_k_wd", "mmaonly"),
)
ORDER = tuple(p[0] for p in PROFILED)


def build_thunks() -> dict[str, Any]:
    """Name -> zero-argument compile of every TileLang kernel in :data:`PROFILED` (through
    :func:`kernels.gemm.w4a16.build`, as the suite compiles them); also used to prebuild the
    tilelang cache on a CPU machine."""
    from kernels.gemm.w4a16 import build

    cfgs = _suite_cfgs()
    missing = sorted({lab for _, _, lab, _ in PROFILED if lab != "cuBLAS" and lab not in cfgs})
    if missing:
        raise KeyError(f"labels not in the gemm.w4a16 suite's tables: {missing}")
    return {name: (lambda m=M, c=cfgs[lab], p=probe: build(m, N, K, GROUP, c, probe=p))
            for name, M, lab, probe in PROFILED if lab != "cuBLAS"}


def child() -> None:
    """The profiled workload: inputs per M as the suite makes them, every kernel compiled and
    warmed up, then one launch of each in ORDER (checking first that the non-probe kernels are right)."""
    import torch

    from measure.search import par_build
    from kernels.gemm.lowp import dequant_weight, pack_int4

    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(21)
    w_int = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=dev, generator=g)
    packed = pack_int4(w_int)
    scales = (torch.rand((N, K // GROUP), generator=g, device=dev) * 0.02 + 0.01).to(torch.float16)
    w16 = dequant_weight(packed, scales, GROUP).to(torch.float16)
    acts = {m: torch.rand((m, K), generator=g, device=dev).to(torch.float16) for m in (1, 16)}
    outs = {name: torch.empty((M, N), dtype=torch.float16, device=dev) for name, M, _, _ in PROFILED}
    built = par_build(build_thunks())
    errors = {k: v["error"] for k, v in built.items() if v["error"]}
    if errors:
        raise RuntimeError(f"compile failed: {errors}")
    launches = {}
    for name, M, lab, probe in PROFILED:
        a, c = acts[M], outs[name]
        if lab == "cuBLAS":
            launches[name] = (lambda a=a, c=c: torch.matmul(a, w16.t(), out=c))
        else:
            launches[name] = (lambda k=built[name]["kernel"], a=a, c=c: k(a, packed, scales, c))
    warm_up(launches)
    for name, M, lab, probe in PROFILED:  # the full kernels must compute the product (outside the range)
        if not probe:
            ref = torch.matmul(acts[M].float(), w16.float().t())
            err = ((outs[name].float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                raise RuntimeError(f"{name}: relative Frobenius error {err:.3g} against the fp32 reference")
    profile_once(launches, ORDER)


# ---------------------------------------------------------------- the summary
def group_launches(kernels: list[dict]) -> dict[str, list[dict]]:
    """Profiled kernels (launch order) -> launch name -> its kernels.  A TileLang entry is exactly
    one kernel named ``main_kernel``; a cuBLAS entry is every kernel up to the next ``main_kernel``."""
    out: dict[str, list[dict]] = {}
    i = 0
    for name, _, lab, _ in PROFILED:
        if lab == "cuBLAS":
            j = i
            while j < len(kernels) and kernels[j].get("name") != TILELANG_KERNEL:
                j += 1
            if j == i:
                raise ValueError(f"{name}: no kernel before the next TileLang kernel (position {i})")
            out[name] = kernels[i:j]
            i = j
        else:
            if i >= len(kernels) or kernels[i].get("name") != TILELANG_KERNEL:
                got = kernels[i].get("name") if i < len(kernels) else "nothing"
                raise ValueError(f"{name}: expected a TileLang kernel ({TILELANG_KERNEL}) at position {i}, got {got}")
            out[name] = [kernels[i]]
            i += 1
    if i != len(kernels):
        raise ValueError(f"{len(kernels) - i} profiled kernels left over after the {len(PROFILED)} launches")
    return out


def _sum(ks: list[dict], m: str) -> float | None:
    vals = [k["metrics"].get(m) for k in ks]
    return None if any(v is None for v in vals) else sum(vals)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def floors_us(M: int) -> dict[str, float]:
    """The ledger's roofline floors at this M (int4 weights; fp16 weights for cuBLAS)."""
    from ledger.w4a16 import fp16_cost, roofline, w4a16_cost

    w4, f16 = roofline(w4a16_cost(M, N, K, GROUP)), roofline(fp16_cost(M, N, K))
    return {"w4a16": w4.bound_s * 1e6, "fp16": f16.bound_s * 1e6,
            "w4a16_bytes": w4.cost.bytes, "fp16_bytes": f16.cost.bytes}


def summarize(kernels: list[dict], provenance: dict | None = None) -> dict:
    """One row per launch of PROFILED.  A cuBLAS launch of several kernels sums times, cycles and
    bytes; its ratios (throughput %, hit rate, occupancy, stalls) are those of its longest kernel."""
    groups = group_launches(kernels)
    provenance = dict(provenance or {})
    if "git" not in provenance:  # the commit, as measure.runner names it (COURSE_GIT_COMMIT in a copied tree)
        from measure.runner import git_state

        provenance["git"] = git_state()
    out: dict = {"provenance": provenance, "shape": {"N": N, "K": K, "group": GROUP}, "kernels": {},
                 "legend": LEGEND}
    for name, M, lab, probe in PROFILED:
        ks = groups[name]
        main = max(ks, key=lambda k: k["metrics"].get("gpu__time_duration.sum") or 0.0)
        m = main["metrics"]
        t_ns = _sum(ks, "gpu__time_duration.sum")
        rd = _sum(ks, "dram__bytes_read.sum")
        fl = floors_us(M)
        floor = fl["fp16"] if lab == "cuBLAS" else fl["w4a16"]
        ledger_bytes = fl["fp16_bytes"] if lab == "cuBLAS" else fl["w4a16_bytes"]
        stalls = {r: m.get(stall_metric(r)) for r in STALLS if m.get(stall_metric(r)) is not None}
        total = sum(stalls.values())
        top = sorted(((r, v) for r, v in stalls.items() if r != "selected"), key=lambda rv: -rv[1])[:3]
        clk = m.get("sm__cycles_elapsed.avg.per_second")
        out["kernels"][name] = {
            "config": lab, "probe": probe or None, "M": M,
            "kernel_names": [k.get("name") for k in ks],
            "duration_us": None if t_ns is None else t_ns / 1e3,
            "elapsed_cycles": _sum(ks, "gpc__cycles_elapsed.max"),
            "sm_clock_mhz": None if clk is None else clk / 1e6,
            "floor_us": floor,
            "fraction_of_floor": _ratio(floor * 1e3, t_ns),
            "ledger_bytes_mb": ledger_bytes / 1e6,
            "dram_read_mb": None if rd is None else rd / 1e6,
            "dram_write_mb": None if _sum(ks, "dram__bytes_write.sum") is None else _sum(ks, "dram__bytes_write.sum") / 1e6,
            "dram_read_tb_per_s": _ratio(rd, t_ns) and _ratio(rd, t_ns) / 1e3,
            "dram_throughput_pct_of_peak": m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "l2_hit_rate_pct": m.get("lts__t_sector_hit_rate.pct"),
            "l2_read_mb_from_sms": None if _sum(ks, "lts__t_sectors_srcunit_tex_op_read.sum") is None
            else _sum(ks, "lts__t_sectors_srcunit_tex_op_read.sum") * 32 / 1e6,
            "l2_sectors_per_read_request": _ratio(m.get("lts__t_sectors_srcunit_tex_op_read.sum"),
                                                  m.get("lts__t_requests_srcunit_tex_op_read.sum")),
            "global_load_sectors_per_request": _ratio(m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                                                      m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
            "achieved_occupancy_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "theoretical_occupancy_pct": m.get("sm__maximum_warps_per_active_cycle_pct"),
            "blocks": m.get("launch__grid_size"), "threads_per_block": m.get("launch__block_size"),
            "registers_per_thread": m.get("launch__registers_per_thread"),
            "top_stalls": [{"reason": r, "pct": 100.0 * v / total, "cycles_per_issue": v} for r, v in top] if total else [],
            "issue_pct": 100.0 * stalls["selected"] / total if total and "selected" in stalls else None,
        }
    return out


#: What the summary's keys mean (written into the JSON beside the rows).
LEGEND = {
    "duration_us": "gpu__time_duration, summed over the launch's kernels (cold L2, clocks not locked)",
    "elapsed_cycles": "gpc__cycles_elapsed.max: GPU cycles from the launch's start to its end",
    "sm_clock_mhz": "SM clock while the kernel ran",
    "floor_us": "the ledger's roofline floor (int4 bytes for the W4A16 kernels, fp16 bytes for cuBLAS)",
    "fraction_of_floor": "floor_us / duration_us",
    "ledger_bytes_mb": "the ledger's byte count of this GEMM",
    "dram_read_mb": "dram__bytes_read: bytes read from HBM",
    "dram_read_tb_per_s": "dram_read_mb / duration_us",
    "dram_throughput_pct_of_peak": "dram__throughput % of peak sustained over the elapsed time",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate: share of L2 sector lookups that hit",
    "l2_read_mb_from_sms": "L2 read sectors requested by the SMs (ld.global and TMA) x 32 B",
    "l2_sectors_per_read_request": "L2 read sectors per request from the SMs (TMA: many per request)",
    "global_load_sectors_per_request": "ld.global sectors per request (4 = a warp reads 128 contiguous bytes; "
                                       "none when the kernel loads its weights by TMA only)",
    "achieved_occupancy_pct": "sm__warps_active % of the SM's warp slots, over active cycles",
    "theoretical_occupancy_pct": "the most warps the launch's resources allow, % of slots",
    "top_stalls": "the three largest warp states other than issuing: % of all warp-state cycles per issue",
    "issue_pct": "share of warp-state cycles spent issuing (the 'selected' state)",
}


def _report(summary: dict) -> None:
    def f(x, spec):
        return "n/a" if x is None else format(x, spec)

    print(f"{'launch':30s} {'us':>6s} {'floor%':>6s} {'DRAM MB':>8s} {'TB/s':>5s} {'DRAM%':>5s} {'L2hit':>5s} "
          f"{'L2sec/rq':>8s} {'ldsec/rq':>8s} {'occ%':>5s}  top stalls")
    for n, d in summary["kernels"].items():
        st = ", ".join(f"{s['reason']} {s['pct']:.0f}%" for s in d["top_stalls"])
        print(f"{n:30s} {f(d['duration_us'], '6.1f')} {f(d['fraction_of_floor'] and 100 * d['fraction_of_floor'], '6.0f')} "
              f"{f(d['dram_read_mb'], '8.1f')} {f(d['dram_read_tb_per_s'], '5.2f')} "
              f"{f(d['dram_throughput_pct_of_peak'], '5.0f')} {f(d['l2_hit_rate_pct'], '5.0f')} "
              f"{f(d['l2_sectors_per_read_request'], '8.1f')} {f(d['global_load_sectors_per_request'], '8.1f')} "
              f"{f(d['achieved_occupancy_pct'], '5.0f')}  {st}")


def main(argv: list[str] | None = None) -> int:
    return driver.cli(argv, doc=__doc__, name=NAME, module=MODULE, child=child, summarize=summarize,
                      report=_report, metrics=METRICS, fallback_metrics=FALLBACK)


if __name__ == "__main__":
    raise SystemExit(main())
