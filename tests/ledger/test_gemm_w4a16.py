"""The W4A16 ledger (ledger/w4a16.py): bytes of int4 vs fp16 weights, each kernel's floor, the
largest gain the count allows and where it shrinks."""

import math

import pytest

from ledger import w4a16 as lw
from ledger.cost import dtype_bytes
from ledger.machines import DEFAULT_MACHINE, get_machine

MACH = get_machine(DEFAULT_MACHINE)


def test_bytes_are_int4_weights_plus_scales_activations_and_output():
    m, n, k = 16, 8192, 8192
    c = lw.w4a16_cost(m, n, k, group=128)
    want = 2 * m * k + n * k / 2 + 2 * n * (k // 128) + 2 * m * n
    assert c.bytes == pytest.approx(want) and c.flops == 2 * m * n * k
    f = lw.fp16_cost(m, n, k)
    assert f.bytes == 2 * m * k + 2 * n * k + 2 * m * n and f.flops == c.flops


def test_floor_is_the_larger_of_byte_and_flop_time():
    r = lw.roofline(lw.w4a16_cost(128, 8192, 8192), MACH)
    assert r.bound_s == max(r.memory_s, r.compute_s)
    assert r.memory_s == pytest.approx(r.cost.bytes / MACH.memory_rate(None))
    assert r.compute_s == pytest.approx(r.cost.flops / MACH.roof(None))
    assert r.bound == "compute"
    assert lw.roofline(lw.w4a16_cost(1, 8192, 8192), MACH).bound == "memory"


def test_gain_bound_is_near_the_weight_ratio_for_decode_and_one_for_a_square_product():
    g1 = lw.gain_bound(1, 8192, 8192, machine=MACH)
    assert 3.5 < g1 < 4.0  # 2 bytes vs half a byte per weight, plus scales and activations
    gains = [lw.gain_bound(m, 8192, 8192, machine=MACH) for m in (1, 16, 64, 128, 256)]
    assert all(a >= b for a, b in zip(gains, gains[1:]))  # it only shrinks as M grows
    assert lw.gain_bound(4096, 4096, 4096, machine=MACH) == pytest.approx(1.0)


def test_the_gain_starts_to_shrink_where_the_int4_kernel_turns_compute_bound():
    m0 = lw.compute_bound_from(8192, 8192, machine=MACH)
    m1 = lw.fp16_compute_bound_from(8192, 8192, machine=MACH)
    assert 16 < m0 < 64 < 128 < m1  # decode batches below, the 128-row batch between the two
    below, above = math.floor(m0), math.ceil(m0)
    assert lw.roofline(lw.w4a16_cost(below, 8192, 8192), MACH).bound == "memory"
    assert lw.roofline(lw.w4a16_cost(above, 8192, 8192), MACH).bound == "compute"
    # before the crossover the gain is flat (both memory-bound), after it it falls like 1/M
    assert lw.gain_bound(1, 8192, 8192, machine=MACH) / lw.gain_bound(below, 8192, 8192, machine=MACH) < 1.05
    assert lw.gain_bound(128, 8192, 8192, machine=MACH) < 0.55 * lw.gain_bound(above, 8192, 8192, machine=MACH)


def test_shared_memory_budget_of_the_kernel():
    i4, fp16, fp32 = dtype_bytes("int4"), dtype_bytes("fp16"), dtype_bytes("fp32")
    got = lw.smem_bytes(8192, group=128, block_m=16, block_k=256, stages=4, rows=64)
    assert got == 4 * (16 * 256 * fp16 + 64 * 256 * i4) + 64 * 64 * fp16 + 16 * 64 * fp16 + 64 * 16 * fp32
    two = lw.smem_bytes(4096, group=128, block_m=256, block_k=64, stages=4, rows=128, split_k=False, stages_w=6)
    assert two == 4 * 256 * 64 * fp16 + 6 * 128 * 64 * i4 + 128 * 32 * fp16 + 2 * 256 * 64 * fp16
    pair = lw.smem_bytes(8192, group=128, block_m=128, block_k=64, stages=4, rows=128, split_k=False, stages_w=8,
                         k_pair=True)
    assert pair - lw.smem_bytes(8192, group=128, block_m=128, block_k=64, stages=4, rows=128, split_k=False,
                                stages_w=8) == 2 * 64 * 128 * fp32
    with pytest.raises(ValueError):
        lw.smem_bytes(8192, group=0, block_m=16, block_k=256, stages=4, rows=64)


def test_figures_are_registered_with_their_source():
    figs = {f.key: f for f in lw.figures()}
    assert figs["gemm.w4a16.m1.gain_bound"].source == "ledger.w4a16.gain_bound"
    assert figs["gemm.w4a16.m128.w4_bound"].value == "compute"
    assert figs["gemm.w4a16.m1.w4_bound"].value == "memory"
    assert figs["gemm.w4a16.s4096.gain_bound"].value == pytest.approx(1.0)
    assert figs["gemm.w4a16.w4_compute_bound_from_m"].value == round(lw.compute_bound_from(8192, 8192))


def test_setmaxnreg_split_gives_the_consumers_exactly_what_the_producer_frees():
    from ledger.w4a16 import REGISTER_FILE, WS_BLOCKS, setmaxnreg_split

    two, four = setmaxnreg_split(*WS_BLOCKS[2]), setmaxnreg_split(*WS_BLOCKS[4])
    assert (two["launch"], two["take"]) == (168, 232)  # the recorded two-consumer kernels
    assert (four["threads"], four["launch"], four["keep"], four["extra"], four["take"]) == (640, 96, 32, 16, 112)
    for b in (two, four):
        assert b["launch"] * b["threads"] <= REGISTER_FILE
        # what the consumers take never exceeds what the producer freed (else setmaxnreg.inc waits for ever)
        assert (b["threads"] - 128) * b["extra"] <= b["freed"] == 128 * (b["launch"] - b["keep"])
    with pytest.raises(ValueError, match="multiple of 128"):
        setmaxnreg_split(500, 32)
    with pytest.raises(ValueError, match="keep=20"):
        setmaxnreg_split(640, 20)
    with pytest.raises(ValueError, match="keep=100"):
        setmaxnreg_split(640, 100)


def test_post_fold_counts_the_fold_against_the_saved_multiplies():
    from ledger.w4a16 import post_fold

    assert post_fold(16) == {"ffma": 8, "hmul2": 32}
    assert post_fold(64) == {"ffma": 32, "hmul2": 32}  # at M = 64 the fold costs as much as it saves
    assert post_fold(16, group=256)["hmul2"] == 64
    with pytest.raises(ValueError, match="split evenly"):
        post_fold(1)


def test_m64_activation_traffic_figures_halve_with_kpair():
    """The on-chip paragraph's figures: kpair (128-row tiles) reads the activations from L2 half as often,
    and the ratio is the 64-row traffic over the ledger's DRAM bytes."""
    from ledger.figures import collect
    from ledger.w4a16 import w4a16_cost

    f = collect()
    assert f["gemm.w4a16.m64.tiles"].value == 128
    assert f["gemm.w4a16.m64.act_l2_kp_mb"].value == pytest.approx(f["gemm.w4a16.m64.act_l2_mb"].value / 2, abs=0.1)
    assert f["gemm.w4a16.m64.act_l2_mb"].value == pytest.approx(128 * 64 * 8192 * 2 / 1e6, abs=0.1)
    assert f["gemm.w4a16.m64.act_l2_x"].value == pytest.approx(
        128 * 64 * 8192 * 2 / w4a16_cost(64, 8192, 8192).bytes, abs=0.05)


def test_expand_ops_count_one_lop3_per_pair_with_fuse():
    from ledger.w4a16 import expand_ops

    assert expand_ops() == {"lop3": 4, "shf": 1, "hfma2": 4, "hmul2": 4, "total": 13}
    assert expand_ops(fused=False)["total"] == 17 and expand_ops(fused=False)["lop3"] == 8
    assert expand_ops(scaled=False) == {"lop3": 4, "shf": 1, "hfma2": 4, "hmul2": 0, "total": 9}
    assert expand_ops(scaled=False, fused=False)["total"] == 13


def test_smem_of_two_segments_adds_their_scales_and_hand_over_tile():
    one = lw.smem_bytes(8192, group=128, block_m=16, block_k=256, stages=8, rows=64)
    two = lw.smem_bytes(8192, group=128, block_m=16, block_k=256, stages=8, rows=64, segments=2)
    assert two - one == 64 * 64 * 2 + 64 * 16 * 4  # the second tile's scales (fp16) and fp32 hand-over tile
    with pytest.raises(ValueError):
        lw.smem_bytes(8192, group=128, block_m=16, block_k=256, stages=8, rows=64, segments=0)
