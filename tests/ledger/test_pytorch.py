"""Chapter 02: every figure the draft quotes, reproduced to the digits it prints.

The right-hand strings are the draft's printed numbers (the point of the test); the
left-hand side is what the ledger computes.  Where the two cannot agree under a
consistent reading of the rules, the figure carries our value and an erratum records
the draft's (tested below).
"""
from __future__ import annotations

import pytest

from ledger import ops, step_budget as sb
from ledger.errata import errata, rounded_h200
from ledger.figures import collect
from ledger.machines import get_machine

FIGS = collect()

DRAFT = {
    # machines (section 2.2)
    "machines.h200.spec.tflops": "989.5", "machines.h200.spec.gbs": "4800",
    "machines.h200.spec.balance": "206.1", "machines.h200.cal.tflops": "729.3",
    "machines.h200.cal.tflops_int": "729", "machines.h200.cal.gbs_int": "4502",
    "machines.h200.cal.gbs": "4502.4", "machines.h200.cal.balance": "162",
    "machines.h200.cal.tensor_burst": "0.7370", "machines.h200.cal.tensor_sustained": "0.6684",
    "machines.h200.cal.hbm_envelope": "0.9380", "machines.h200.cal.hbm_copy": "0.8183",
    "machines.h100.spec.tflops": "1000", "machines.h100.spec.tbs": "3.0", "machines.h100.spec.balance": "333",
    # example 1: sin(cos(x))
    "pytorch.ex1.n_melem": "16.8", "pytorch.ex1.tensor_mb": "33.6", "pytorch.ex1.eager_mb": "134.2",
    "pytorch.ex1.fused_mb": "67.1", "pytorch.ex1.mflop": "33.6", "pytorch.ex1.ai_fused": "0.5",
    "pytorch.ex1.t_eager_us": "29.8", "pytorch.ex1.t_fused_us": "14.9", "pytorch.ex1.ratio": "2.0",
    # example 2: LayerNorm
    "pytorch.ex2.fused_mb": "134.2", "pytorch.ex2.three_pass_mb": "268.4", "pytorch.ex2.gflop": "0.268",
    "pytorch.ex2.flop_per_elem": "8", "pytorch.ex2.ai_fused": "2.0", "pytorch.ex2.ai_three_pass": "1.0",
    "pytorch.ex2.ratio": "2.0",
    # example 3: GEMM
    "pytorch.ex3.gflop": "137", "pytorch.ex3.flop_sci": "1.37e11", "pytorch.ex3.mb": "100.7",
    "pytorch.ex3.operand_mb": "33.6", "pytorch.ex3.ai": "1365", "pytorch.ex3.ai_1024": "341",
    "pytorch.ex3.ai_512": "171", "pytorch.ex3.ai_512_1": "170.7",
    # example 4: attention
    "pytorch.ex4.gflop": "278", "pytorch.ex4.qkvo_mb": "134.2", "pytorch.ex4.scores_gb": "6.44",
    "pytorch.ex4.naive_gb": "6.58", "pytorch.ex4.ai_naive": "42.2", "pytorch.ex4.ai_flash": "2068",
    "pytorch.ex4.t_naive_ms": "1.461", "pytorch.ex4.t_flash_us": "380.6", "pytorch.ex4.speedup": "3.8",
    "pytorch.ex4.io_ratio": "49", "pytorch.fusion.attn_ratio": "49",
    "pytorch.ex4.decode_gflop": "0.54", "pytorch.ex4.decode_mb": "537", "pytorch.ex4.decode_ai": "1.01",
    # optimizer, all-reduce, elementwise add
    "pytorch.adamw.bytes_per_param": "26", "pytorch.adamw.ai": "0.6", "pytorch.adamw.gb_7b": "182",
    "pytorch.allreduce.gb_8b": "28.11", "pytorch.allreduce.gb_8b_int": "28", "pytorch.add.ai": "0.17",
    # step budget (section 2.4)
    "pytorch.step.forward.tflop": "66.1", "pytorch.step.forward.gb": "28.45", "pytorch.step.forward.share": "27.9",
    "pytorch.step.backward.tflop": "132.1", "pytorch.step.backward.gb": "56.91", "pytorch.step.backward.share": "55.9",
    "pytorch.step.optimizer.tflop_2": "0.12", "pytorch.step.optimizer.gb": "208.78",
    "pytorch.step.optimizer.share": "14.3", "pytorch.step.optimizer.gflop": "120",
    "pytorch.step.bwd_over_fwd": "2", "pytorch.step.fwd_bwd_over_fwd": "3",
    "pytorch.step.comm.gb": "28.11", "pytorch.step.comm.share": "1.9", "pytorch.step.fwd_bwd_share": "84",
    "pytorch.infer.prefill.tflop": "66.1", "pytorch.infer.prefill.gb": "28.45", "pytorch.infer.prefill.gb_1": "28.5",
    "pytorch.infer.decode.gflop": "16.1", "pytorch.infer.decode.tflop": "0.016", "pytorch.infer.decode.gb": "14.50",
    "pytorch.infer.decode.gb_1": "14.5", "pytorch.infer.decode.ms": "3.220",
    "pytorch.infer.prefill.bound": "compute-bound", "pytorch.infer.decode.bound": "memory-bound",
    # exercises
    "pytorch.e3.balance_spec": "206.1",
    "pytorch.e6.flop_sci": "1.718e10", "pytorch.e6.mb": "25.17", "pytorch.e6.ai": "682.7", "pytorch.e6.bound": "compute-bound",
    "pytorch.e11.ai_min": "0.17", "pytorch.e11.ai_max": "2068", "pytorch.e11.flips_h100": "0",
    "pytorch.e11.gemm512.cal": "compute-bound", "pytorch.e11.gemm512.h100": "memory-bound",
    "pytorch.e11.gemm512.spec": "memory-bound", "pytorch.e11.add_ai_fp16": "0.17",
    "pytorch.e13.n_melem": "16.777",
    "pytorch.e13.silu.mflop": "83.9", "pytorch.e13.silu.mb": "67.11", "pytorch.e13.silu.ai": "1.25",
    "pytorch.e13.silu.t_us": "14.9", "pytorch.e13.silu.bound": "memory-bound",
    "pytorch.e13.rope.mflop": "50.3", "pytorch.e13.rope.mb": "67.11", "pytorch.e13.rope.ai": "0.75",
    "pytorch.e13.rope.t_us": "14.9", "pytorch.e13.rope.bound": "memory-bound",
    # E12 table (the one cell on a rounding edge is an erratum, below)
    "pytorch.e12.s512.forward": "12.1", "pytorch.e12.s512.backward": "24.2", "pytorch.e12.s512.comm": "7.6",
    "pytorch.e12.s4096.forward": "27.9", "pytorch.e12.s4096.backward": "55.9",
    "pytorch.e12.s4096.optimizer": "14.3", "pytorch.e12.s4096.comm": "1.9",
    "pytorch.e12.s32768.forward": "32.9", "pytorch.e12.s32768.backward": "65.8",
    "pytorch.e12.s32768.optimizer": "1.1", "pytorch.e12.s32768.comm": "0.1",
    "pytorch.e12.s131072.forward": "33.3", "pytorch.e12.s131072.backward": "66.6",
    "pytorch.e12.s131072.optimizer": "0.1", "pytorch.e12.s131072.comm": "0.0",
}


@pytest.mark.parametrize("key", sorted(DRAFT))
def test_draft_figure_reproduced(key):
    assert key in FIGS, f"figure {key} missing"
    assert FIGS[key].text == DRAFT[key]


# figure key -> the value the draft printed; our value differs and an erratum says why
ERRATA = {
    "pytorch.step.forward.ms": 90.575, "pytorch.step.backward.ms": 181.151, "pytorch.step.optimizer.ms": 46.375,
    "pytorch.step.comm.ms": 6.243, "pytorch.infer.prefill.ms": 90.575, "pytorch.e12.s512.optimizer": 56.2,
    "pytorch.e6.ridge_edge": 999,
}


@pytest.mark.parametrize("key", sorted(ERRATA))
def test_erratum_records_draft_and_ours(key):
    by_fig = {e.figure: e for e in errata()}
    e = by_fig[key]
    assert e.draft == ERRATA[key]
    assert FIGS[key].value == e.ours != e.draft
    # the stated reason reproduces the draft's number
    assert e.draft_reading == e.draft
    for part in ("draft", "ours", "why"):
        assert f"{e.key}.{part}" in FIGS


def test_rounded_profile_explains_the_millisecond_errata():
    r = rounded_h200()
    assert r.peak_flops == 729.3e12 and r.bandwidth == 4502e9
    b = sb.step_budget(r)
    assert f"{b.stage('forward').time * 1e3:.3f}" == "90.575"
    assert f"{b.stage('comm').time * 1e3:.3f}" == "6.243"


# --- behaviour, beyond the printed numbers ----------------------------------------------
def test_rules_behind_the_examples():
    n = 4096 * 4096
    for k in (1, 2, 5):
        eager = ops.elementwise_chain(n, k, fused=False)
        fused = ops.elementwise_chain(n, k, fused=True)
        assert eager.bytes == k * fused.bytes and eager.flops == fused.flops
    # AI of elementwise add does not depend on size
    assert ops.elementwise_add(10).intensity == pytest.approx(ops.elementwise_add(10 ** 8).intensity)
    # GEMM AI grows linearly with the edge; ridge edge solves AI = balance
    assert ops.gemm_square_intensity(2048) == pytest.approx(2 * ops.gemm_square_intensity(1024))
    h100 = get_machine("h100-spec")
    edge = ops.gemm_ridge_edge(h100)
    assert ops.gemm_square_intensity(int(edge)) == pytest.approx(h100.balance, rel=1e-3)
    # the io ratio of the S x S attention is 1 + 6S/(4d)
    for s in (1024, 4096, 8192, 16384):
        assert ops.attention_io_ratio(s) == pytest.approx(1 + 6 * s / (4 * 128))
    assert ops.attention_io_ratio(4096, score_passes=2) < ops.attention_io_ratio(4096)
    full = ops.attention_prefill(seq=8192)
    flash = ops.attention_prefill(seq=8192, materialize_scores=False)
    assert full.bytes - flash.bytes == ops.attention_scores_bytes(seq=8192)


def test_adamw_and_allreduce():
    a = ops.adamw(1e9)
    assert a.bytes == 26e9 and ops.adamw_bytes_per_param() == 26
    assert ops.adamw_bytes_per_param("fp32", "fp32") == 28
    assert ops.adamw(1e9, grad_dtype="fp32").bytes == 28e9
    for n in (2, 4, 8, 64):
        assert ops.ring_allreduce(1e9, n).bytes == pytest.approx(2 * (n - 1) / n * 2e9)
    assert ops.ring_allreduce(1e9, 1).bytes == 0


def test_decode_reads_all_weights_and_kv():
    b = sb.step_budget()
    m = b.model
    kv = m.layers * 2 * m.kv_heads * m.head_dim * b.seq * 2
    assert b.stage("decode").cost.bytes == pytest.approx(m.matmul_params * 2 + kv)
    # decode bytes grow with the KV length, prefill FLOPs grow super-linearly with seq
    assert sb.step_budget(seq=8192).stage("decode").cost.bytes > b.stage("decode").cost.bytes
    assert sb.step_budget(seq=8192).stage("prefill").cost.flops > 2 * b.stage("prefill").cost.flops


def test_step_budget_options_e11_e12():
    base = sb.step_budget()
    big = sb.step_budget(params=70e9, world=64)
    assert big.stage("optimizer").cost.bytes == pytest.approx(70e9 * 26)
    assert big.stage("optimizer").share > base.stage("optimizer").share
    h100 = sb.step_budget("h100-spec")
    assert h100.machine.name == "h100-spec"
    assert h100.stage("forward").time != base.stage("forward").time
    sweep = sb.seq_sweep()
    for shares in sweep.values():
        assert sum(shares.values()) == pytest.approx(100)
    # optimizer and comm absolute times do not depend on the sequence length
    t = {s: sb.step_budget(seq=s) for s in sb.SWEEP_SEQ_LENS}
    assert len({round(x.stage("optimizer").time, 12) for x in t.values()}) == 1
    assert len({round(x.stage("comm").time, 12) for x in t.values()}) == 1
    assert sweep[512]["optimizer"] > sweep[131072]["optimizer"]


def test_flips_detects_a_boundary_operator():
    g = [ops.gemm(512, 512, 512)]
    assert ops.flips("h200-calibrated", "h100-spec", g) == [g[0].name]
    assert ops.flips("h200-calibrated", "h100-spec") == []


@pytest.mark.parametrize("call, arg", [
    (lambda: ops.gemm(0, 1, 1), "m"),
    (lambda: ops.attention_prefill(seq=-1), "seq"),
    (lambda: ops.attention_decode(kv_len=0), "kv_len"),
    (lambda: ops.layernorm(8, 8, "fp12"), "dtype"),
    (lambda: ops.adamw(7e9, state_dtype="fp5"), "state_dtype"),
    (lambda: ops.ring_allreduce(1e9, 0), "world"),
    (lambda: ops.silu(2.5), "n"),
    (lambda: sb.step_budget(seq=0), "seq"),
    (lambda: sb.step_budget(params=-1), "params"),
    (lambda: sb.step_budget("tpu-v9"), "machine"),
    (lambda: sb.ModelConfig(hidden=4096, heads=3), "heads"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
