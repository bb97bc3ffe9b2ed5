"""Roofline misreadings M1-M8 of chapter 28, each quantified on the case operator.

Every number is computed from the machine profiles (:mod:`ledger.machines`), the case
ledger (:mod:`ledger.case_study`) and the Ascend constants tilelang ships
(:mod:`ledger.ascend`).  The case operator is QK-norm + RoPE + FP8 quantisation; the
book's FLOP reading is 10 per element (AI 3.10); where a misreading depends on the
FLOPs, the draft's 9-per-element reading (AI 2.79) is computed beside it.

M1 datasheet vs calibrated peak       M5 transcendentals priced as 1 FLOP (Ascend pipes)
M2 tensor-core roof for an elementwise op   M6 payload counted, lookup tables not
M3 roof declared by input dtype       M7 efficiency read at a latency-bound scale
M4 one stage's AI for the fused op    M8 an efficiency above 100 %
"""
from __future__ import annotations

import argparse
from typing import Optional

from ledger import ascend, case_study as cs
from ledger.cost import Cost, dtype_bytes
from ledger.figures import Figure, fig
from ledger.machines import DEFAULT_MACHINE, get_machine

__all__ = ["m1_datasheet_factor", "m2_roof_mixup", "m3_roofs", "m4_split_vs_fused", "m5_transcendental",
           "m6_lookup", "m7_decode_sol", "m8_scale", "softmax_row_cycles", "figures"]

CAL = DEFAULT_MACHINE  #: the calibrated profile the chapter computes with
SPEC = "h200-spec"  #: the datasheet profile of the same board


def m1_datasheet_factor(unit: str = "tensor_core.fp16") -> float:
    """How much the datasheet underestimates compute time: datasheet / calibrated peak."""
    return get_machine(SPEC).roof(unit) / get_machine(CAL).roof(unit)


def m2_roof_mixup() -> tuple[float, float, float]:
    """(tensor-core balance, CUDA-core balance, ratio)."""
    m = get_machine(CAL)
    t, c = m.balance_for("tensor_core.fp16"), m.balance_for("cuda_core.fp32")
    return t, c, t / c


def m3_roofs() -> dict[str, float]:
    """Balance points of the three roofs an fp8 attention may be priced against."""
    m = get_machine(CAL)
    return {u: m.balance_for(u) for u in ("tensor_core.fp8", "tensor_core.fp16", "cuda_core.fp32")}


def m4_split_vs_fused(reading: str = cs.BOOK_READING) -> tuple[Cost, Cost]:
    """(two kernels, one kernel) as Costs with the same FLOPs."""
    f = cs.case_flops(cs.CASE, reading)
    return Cost(f, cs.two_kernel_bytes(cs.CASE), "two kernels"), Cost(f, cs.ideal_bytes(cs.CASE), "fused")


def m5_transcendental() -> float:
    """Cost of a special function relative to a multiply on the Ascend vector unit."""
    p = ascend.latency_params()
    return p["mul_throughput"] / p["special_func_throughput"]


def softmax_row_cycles(width: int = 8192, ops_per_score: int = 5, transcendental_per_score: int = 1) -> tuple[float, float]:
    """(cycles if every op ran at the multiply rate, cycles with exp at the special-function rate)."""
    if ops_per_score < transcendental_per_score or transcendental_per_score < 0:
        raise ValueError("ops_per_score must be >= transcendental_per_score >= 0")
    flat = ascend.vector_cycles({"mul": width * ops_per_score})
    weighted = ascend.vector_cycles({"mul": width * (ops_per_score - transcendental_per_score),
                                     "special_func": width * transcendental_per_score})
    return flat, weighted


def m6_lookup() -> dict[str, float]:
    ideal = cs.ideal_bytes()
    a = cs.design(1)
    return {"ideal_lookup_mb": cs.lookup_bytes() / 1e6, "ideal_share": cs.lookup_bytes() / ideal,
            "a_lookup_mb": a.lookup_bytes / 1e6, "a_share": a.lookup_bytes / a.total_bytes}


def m7_decode_sol() -> tuple[float, float]:
    """(prefill SOL, decode-step SOL) in seconds, both with the full ledger."""
    return cs.sol_seconds(cs.ideal_bytes(cs.CASE)), cs.sol_seconds(cs.ideal_bytes(cs.DECODE))


def m8_scale() -> dict[str, float]:
    """The scale tensor that, left out, inflates the reported efficiency."""
    s = cs.scale_bytes()
    ideal = cs.ideal_bytes()
    return {"scale_mb": s / 1e6, "share": s / ideal, "inflation": ideal / (ideal - s)}


TILEOPS_AT_ROOF = 0.80  # TileOPs roofline.md: >= 80 % counts as at the roof
TILEOPS_ANOMALY = 1.05  # > 105 % is an anomaly (a formula error, not performance)


def figures() -> list[Figure]:
    src = "ledger.misreadings"
    cal, spec = get_machine(CAL), get_machine(SPEC)
    cm = f"{cal.name} vs {spec.name}: {cal.source}"
    out = [
        fig("perfmodel.m1.datasheet_tflops", spec.roof("tensor_core.fp16") / 1e12, "TFLOPS", digits=1, source="ledger.machines", conditions=cm),
        fig("perfmodel.m1.calibrated_tflops", cal.roof("tensor_core.fp16") / 1e12, "TFLOPS", digits=2, source="ledger.machines", conditions=cm),
        fig("perfmodel.m1.factor", m1_datasheet_factor(), "x", digits=2, source=src + ".m1_datasheet_factor", conditions=cm),
        fig("perfmodel.m1.burst", cal.compute["tensor_core.fp16"].calibration, "", digits=4, source="ledger.machines", conditions=cm),
        fig("perfmodel.m1.sustained", get_machine("h200-sustained").compute["tensor_core.fp16"].calibration, "", digits=4,
            source="ledger.machines", conditions="h200-sustained"),
        fig("perfmodel.m1.hbm_calibration", cal.memory["hbm"].calibration, "", digits=4, source="ledger.machines", conditions=cm),
        fig("perfmodel.m1.copy_calibration", cal.memory["hbm.copy"].calibration, "", digits=4, source="ledger.machines", conditions=cm),
        fig("perfmodel.machine.hbm_gbs", cal.bandwidth / 1e9, "GB/s", digits=1, source="ledger.machines", conditions=cm),
    ]
    t, c, r = m2_roof_mixup()
    out += [
        fig("perfmodel.m2.tensor_balance", t, "FLOP/B", digits=2, source=src + ".m2_roof_mixup", conditions=cal.name),
        fig("perfmodel.m2.cuda_balance", c, "FLOP/B", digits=2, source=src + ".m2_roof_mixup", conditions=cal.name),
        fig("perfmodel.m2.ratio", r, "x", digits=1, source=src + ".m2_roof_mixup", conditions=cal.name),
    ]
    for unit, v in m3_roofs().items():
        out.append(fig(f"perfmodel.m3.{unit.replace('.', '_')}", v, "FLOP/B", digits=2, source=src + ".m3_roofs", conditions=cal.name))
    for reading, tag in ((cs.BOOK_READING, ""), ("fused_absmax", "alt.")):
        two, one = m4_split_vs_fused(reading)
        c4 = f"case operator, {reading} FLOP reading; two kernels = norm+RoPE | quant with a bf16 intermediate"
        out += [
            fig(f"perfmodel.m4.{tag}split_mb", two.bytes / 1e6, "MB", digits=2, source=src + ".m4_split_vs_fused", conditions=c4),
            fig(f"perfmodel.m4.{tag}fused_mb", one.bytes / 1e6, "MB", digits=2, source=src + ".m4_split_vs_fused", conditions=c4),
            fig(f"perfmodel.m4.{tag}split_ai", two.intensity, "FLOP/B", digits=2, source=src + ".m4_split_vs_fused", conditions=c4),
            fig(f"perfmodel.m4.{tag}fused_ai", one.intensity, "FLOP/B", digits=2, source=src + ".m4_split_vs_fused", conditions=c4),
            fig(f"perfmodel.m4.{tag}ratio", one.intensity / two.intensity, "x", digits=2, source=src + ".m4_split_vs_fused", conditions=c4),
        ]
    flat, weighted = softmax_row_cycles()
    src5 = ascend.SOURCE
    c5 = (f"Ascend vector ops/cycle of {src5['package']} {src5['version']} estimate_latency.h (ledger.ascend_params); "
          "8192-wide softmax row, 5 ops per score, 1 of them exp")
    out += [
        fig("perfmodel.m5.ratio", m5_transcendental(), "x", digits=2, source=src + ".m5_transcendental", conditions=c5),
        fig("perfmodel.m5.softmax_flat_kcycles", flat / 1000, "k cycles", digits=1, source=src + ".softmax_row_cycles", conditions=c5),
        fig("perfmodel.m5.softmax_weighted_kcycles", weighted / 1000, "k cycles", digits=1, source=src + ".softmax_row_cycles", conditions=c5),
        fig("perfmodel.m5.softmax_ratio", weighted / flat, "x", digits=2, source=src + ".softmax_row_cycles", conditions=c5),
    ]
    l6 = m6_lookup()
    c6 = "case operator; design A reads the lookup data once per row"
    out += [
        fig("perfmodel.m6.ideal_lookup_mb", l6["ideal_lookup_mb"], "MB", digits=2, source=src + ".m6_lookup", conditions=c6),
        fig("perfmodel.m6.ideal_share_pct", 100 * l6["ideal_share"], "%", digits=1, source=src + ".m6_lookup", conditions=c6),
        fig("perfmodel.m6.a_lookup_mb", l6["a_lookup_mb"], "MB", digits=2, source=src + ".m6_lookup", conditions=c6),
        fig("perfmodel.m6.a_share_pct", 100 * l6["a_share"], "%", digits=1, source=src + ".m6_lookup", conditions=c6),
    ]
    pre, dec = m7_decode_sol()
    c7 = f"case operator on {cal.name}; decode = 1 token, 40 rows of 128, full ledger (payload + lookup)"
    out += [
        fig("perfmodel.m7.prefill_sol_us", pre * 1e6, "µs", digits=3, source=src + ".m7_decode_sol", conditions=c7),
        fig("perfmodel.m7.decode_sol_us", dec * 1e6, "µs", digits=3, source=src + ".m7_decode_sol", conditions=c7),
        fig("perfmodel.m7.decode_sol_ns", dec * 1e9, "ns", digits=1, source=src + ".m7_decode_sol", conditions=c7),
        fig("perfmodel.m7.decode_bytes", cs.ideal_bytes(cs.DECODE), "B", digits=0, source="ledger.case_study.ideal_bytes", conditions=c7),
    ]
    s8 = m8_scale()
    c8 = "case operator: one fp32 scale per (token, head) row"
    out += [
        fig("perfmodel.m8.scale_mb", s8["scale_mb"], "MB", digits=3, source=src + ".m8_scale", conditions=c8),
        fig("perfmodel.m8.scale_share_pct", 100 * s8["share"], "%", digits=2, source=src + ".m8_scale", conditions=c8),
        fig("perfmodel.m8.at_roof_pct", 100 * TILEOPS_AT_ROOF, "%", digits=0, source="TileOPs docs/design/roofline.md:156-163",
            conditions="cited threshold"),
        fig("perfmodel.m8.anomaly_pct", 100 * TILEOPS_ANOMALY, "%", digits=0, source="TileOPs docs/design/roofline.md:156-163",
            conditions="cited threshold"),
    ]
    # chapter 28 section 1.1: sin(cos(x)) fused vs eager floors
    n = 4096 * 4096
    fused, eager = Cost(2 * n, 2 * n * 2), Cost(2 * n, 4 * n * 2)
    c11 = f"sin(cos(x)), 4096x4096 fp16, {cal.name}"
    out += [
        fig("perfmodel.failure.sincos_fused_us", fused.memory_time(cal) * 1e6, "µs", digits=3, source="ledger.cost.Cost.memory_time", conditions=c11),
        fig("perfmodel.failure.sincos_eager_us", eager.memory_time(cal) * 1e6, "µs", digits=3, source="ledger.cost.Cost.memory_time", conditions=c11),
    ]
    # errata: draft numbers this ledger does not reproduce
    two, _ = m4_split_vs_fused("fused_absmax")
    s, draft_mb = cs.CASE, 134.87
    inter_b = dtype_bytes(s.in_dtype)
    k_mb = 2 * s.tokens * s.kv_heads * s.head_dim * inter_b / 1e6
    ideal_mb = cs.ideal_bytes(s) / 1e6
    book_c, alt_c = cs.case_cost(s, cs.BOOK_READING), cs.case_cost(s, "fused_absmax")
    out += [
        fig("perfmodel.erratum.m4_split_mb", two.bytes / 1e6, "MB", digits=2, source=src + ".m4_split_vs_fused",
            conditions=f"draft printed {draft_mb:.2f} MB (AI 1.40, 2.0x). {draft_mb:.2f} - {ideal_mb:.2f} = "
                       f"{draft_mb - ideal_mb:.2f} MB is exactly the {s.in_dtype} intermediate of the {s.q_heads} q "
                       f"heads written and read back (2 x {s.tokens}x{s.q_heads}x{s.head_dim}x{inter_b:g} B); the "
                       f"{s.kv_heads} k heads' intermediate ({k_mb:.2f} MB) is missing. With every row: "
                       f"{two.bytes / 1e6:.2f} MB."),
        fig("perfmodel.erratum.m7_decode_sol_us", dec * 1e6, "µs", digits=3, source=src + ".m7_decode_sol",
            conditions=f"draft printed 0.003 µs, which is the payload alone ({cs.payload_bytes(cs.DECODE):.0f} B); "
                       f"with the RoPE row and the norm weights the step moves {cs.ideal_bytes(cs.DECODE):.0f} B."),
        fig("perfmodel.erratum.case_flop_readings",
            f"{book_c.flops / 1e6:.1f} MFLOP / AI {book_c.intensity:.2f} (book) vs "
            f"{alt_c.flops / 1e6:.1f} MFLOP / AI {alt_c.intensity:.2f}", "",
            source="ledger.case_study.FLOP_READINGS",
            conditions="the draft counts |x| and max as one op in section 2.3 and as two in 6.2; the ledger rule "
                       f"(one FLOP per operation) gives {cs.FLOP_READINGS[cs.BOOK_READING][0]} per element; both "
                       "readings are registered (perfmodel.case.*, perfmodel.case.alt.*)"),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    argparse.ArgumentParser(prog="python -m ledger.misreadings", description="Roofline misreadings M1-M8.").parse_args(argv)
    for f in figures():
        print(f"{f.key:<40} {f.text:>12} {f.unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
