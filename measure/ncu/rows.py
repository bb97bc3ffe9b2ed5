"""Why the row kernels of chapter 13 stop short of the copy bandwidth: Nsight Compute.

One command on the GPU machine::

    python -m measure.ncu.rows [--out DIR]

profiles, once each and after a warm-up, the bf16 16384 x 4096 row kernels the
chapter times -- RMSNorm (rows, blk_m=2), FP8 quant (blk_m=2), the fused RMSNorm + RoPE
+ FP8 kernel with the original body (blk_m=1, 8 blocks per SM), with the lean body
(blk_m=1, 6 blocks per SM), in the vec schedule (128 threads per token) and the vecp one
(vec, 2 tokens per block, the next one prefetched) -- and
writes ``ncu_rows.json`` (and the raw ``ncu_rows.csv``) to ``DIR`` (default ``$OUT``,
else ``measure/results/ncu``).  Per kernel: DRAM bytes and throughput (% of peak),
instructions executed, issue-slot use (% of peak) and warps active.  A kernel whose
issue slots are near full while DRAM is not is issue-bound: fewer instructions per
element, not more bytes in flight, is what makes it faster.  The ncu options are those
of :mod:`measure.ncu.driver` (``--clock-control none``; the default cache control flushes
the caches before each profiled kernel).
"""

from __future__ import annotations

from measure.ncu.driver import RESULTS, cli, profile_once, warm_up  # noqa: F401  (RESULTS: where the json lives)

METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed.sum",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__grid_size",
)
ORDER = ("rmsnorm rows", "quant_fp8", "fused fp8", "fused fp8 lean", "fused fp8 vec", "fused fp8 vecp")
M, N, R, G = 16384, 4096, 128, 128
FUSED_CFG = (1, 8)  # (blk_m, min blocks per SM) of the original fused body, as profiled
LEAN_CFG = (1, 6)  # the same for the lean body
VEC_CFG = (128, 1, 8, 9)  # vec schedule: (threads per token, tokens per block, channels per lane, min blocks)
VECP_CFG = (128, 8, 2, 2, 8)  # vecp: (threads per token, channels per lane, tokens per block, stages, min blocks)


def child() -> None:
    """The profiled workload: every kernel warmed up, then one launch of each in ORDER."""
    import torch

    from kernels import fused, norm, quant, rope

    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(13)
    x = torch.randn((M, N), generator=g, device=dev).bfloat16()
    w = (torch.randn(N, generator=g, device=dev) * 0.5 + 1).bfloat16()
    cos, sin = rope.rope_tables(M, R, device=dev)
    y = torch.empty_like(x)
    q = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=dev)
    s = torch.empty((M, N // G), dtype=torch.float32, device=dev)
    xv, wv, qv = x.view(M, N // G, G), w.view(N // G, G), q.view(M, N // G, G)
    k_rms = norm.rmsnorm_rows(M, N, "bfloat16", 2, 256, 1e-6)
    k_q = quant.quant_fp8(M, N, G, "bfloat16", 2, 256)
    k_f = fused.rmsnorm_rope_fp8(M, N, R, G, "bfloat16", FUSED_CFG[0], 256, 1e-6, FUSED_CFG[1])
    k_l = fused.rmsnorm_rope_fp8(M, N, R, G, "bfloat16", LEAN_CFG[0], 256, 1e-6, LEAN_CFG[1], True)
    k_v = fused.rmsnorm_rope_fp8_vec(M, N, R, G, "bfloat16", *VEC_CFG[:3], 1e-6, VEC_CFG[3])
    k_p = fused.rmsnorm_rope_fp8_vecp(M, N, R, G, "bfloat16", *VECP_CFG[:4], 1e-6, VECP_CFG[4])
    launches = {
        "rmsnorm rows": lambda: k_rms(x, w, y),
        "quant_fp8": lambda: k_q(xv, qv, s),
        "fused fp8": lambda: k_f(xv, wv, cos, sin, qv, s),
        "fused fp8 lean": lambda: k_l(xv, wv, cos, sin, qv, s),
        "fused fp8 vec": lambda: k_v(x, w, cos, sin, q, s),
        "fused fp8 vecp": lambda: k_p(x, w, cos, sin, q, s),
    }
    warm_up(launches)
    profile_once(launches, ORDER)


def summarize(kernels: list[dict], provenance: dict | None = None) -> dict:
    """Name the profiled kernels (launch order = ORDER) and derive GB/s and instructions per element."""
    if len(kernels) != len(ORDER):
        raise ValueError(f"expected {len(ORDER)} profiled kernels, got {len(kernels)}")
    out: dict = {"provenance": provenance or {}, "shape": [M, N], "kernels": {}}
    for name, k in zip(ORDER, kernels):
        m = k["metrics"]
        t = m.get("gpu__time_duration.sum")  # ns
        rd, wr = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
        inst = m.get("sm__inst_executed.sum")
        out["kernels"][name] = {
            "time_us": None if t is None else t / 1e3,
            "dram_read_mb": None if rd is None else rd / 1e6,
            "dram_write_mb": None if wr is None else wr / 1e6,
            "dram_gbps": None if None in (t, rd, wr) else (rd + wr) / t,
            "dram_pct_of_peak": m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "warp_instructions": inst,
            # thread instructions (warp instructions x 32) per element of x
            "instructions_per_element": None if inst is None else inst * 32 / (M * N),
            "issue_pct_of_peak": m.get("sm__inst_issued.avg.pct_of_peak_sustained_active"),
            "warps_active_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "registers_per_thread": m.get("launch__registers_per_thread"),
            "grid": m.get("launch__grid_size"),
        }
    return out


def _report(summary: dict) -> None:
    for n, d in summary["kernels"].items():
        print(f"{n:15s} {d['time_us']:.1f} us  DRAM {d['dram_gbps']:.0f} GB/s ({d['dram_pct_of_peak']:.1f}% peak)  "
              f"{d['instructions_per_element']:.2f} instr/elem  issue {d['issue_pct_of_peak']:.1f}%  "
              f"warps {d['warps_active_pct']:.1f}%  regs {d['registers_per_thread']}")


def main(argv: list[str] | None = None) -> int:
    return cli(argv, doc=__doc__, name="ncu_rows", module="measure.ncu.rows", child=child, summarize=summarize,
               report=_report, metrics=METRICS)


if __name__ == "__main__":
    raise SystemExit(main())
