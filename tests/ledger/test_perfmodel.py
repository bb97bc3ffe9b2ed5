"""Chapter 28: misreadings, tile decision, fusion/split decisions and the design case vs the draft."""
import pytest

from ledger import case_study as cs, decisions, misreadings as mr, tiles
from ledger.figures import collect


def test_case_ledger():
    s = cs.CASE
    assert (s.rows, s.elements) == (163840, 20971520)
    assert cs.ideal_bytes() / 1e6 == pytest.approx(67.76, abs=0.005)
    assert cs.payload_bytes() / 1e6 == pytest.approx(63.57, abs=0.005)
    assert cs.lookup_bytes() / 1e6 == pytest.approx(4.19, abs=0.005)
    assert cs.scale_bytes() / 1e6 == pytest.approx(0.655, abs=0.0005)
    assert cs.sol_seconds(cs.ideal_bytes()) * 1e6 == pytest.approx(15.051, abs=0.0005)
    # both FLOP readings of the draft, and which the book uses
    assert cs.case_flops(s, "per_op") / 1e6 == pytest.approx(210.2, abs=0.05)
    assert cs.case_flops(s, "fused_absmax") / 1e6 == pytest.approx(189.2, abs=0.05)
    assert cs.case_cost(s).intensity == pytest.approx(3.102, abs=0.0005)
    assert cs.case_cost(s, "fused_absmax").intensity == pytest.approx(2.79, abs=0.005)
    assert cs.BOOK_READING == "per_op"
    assert cs.case_cost(s).bound("h200-calibrated", roof="cuda_core.fp32") == "memory-bound"


@pytest.mark.parametrize("key,rows,grid,waves,onchip,lookup,total,ratio", [
    ("A", 1, 163840, 156, 1.9, 251.66, 315.23, 4.65),
    ("B", 8, 20480, 20, 8.0, 31.46, 95.03, 1.40),
    ("C", 40, 4096, 4, 36.2, 6.29, 69.86, 1.03),
])
def test_designs(key, rows, grid, waves, onchip, lookup, total, ratio):
    d = cs.design(cs.DESIGNS[key])
    assert (d.rows_per_block, d.grid, d.waves) == (rows, grid, waves)
    assert round(d.onchip_bytes / 1024, 1) == onchip
    assert round(d.lookup_bytes / 1e6, 2) == lookup
    assert round(d.total_bytes / 1e6, 2) == total
    assert round(d.vs_ideal(), 2) == ratio
    assert round(d.payload_bytes / 1e6, 2) == 63.57


def test_design_a_diagnosis_and_c_tail():
    a = cs.design(1)
    assert a.floor_seconds() * 1e6 == pytest.approx(70.01, abs=0.005)
    assert (a.total_bytes - cs.ideal_bytes()) / 1e6 == pytest.approx(247.46, abs=0.005)
    assert 100 * a.lookup_bytes / a.total_bytes == pytest.approx(79.8, abs=0.05)
    c = cs.design(40)
    assert c.grid / (8 * 132) == pytest.approx(3.88, abs=0.005)
    assert c.last_wave_fill == pytest.approx(0.88, abs=0.005)
    with pytest.raises(ValueError, match="rows_per_block"):
        cs.design(3)


def test_misreadings_m1_to_m8():
    assert mr.m1_datasheet_factor() == pytest.approx(1.36, abs=0.005)
    t, c, r = mr.m2_roof_mixup()
    assert (round(t, 2), round(c, 2), round(r, 1)) == (161.97, 12.72, 12.7)
    roofs = mr.m3_roofs()
    assert [round(v, 2) for v in roofs.values()] == [306.67, 161.97, 12.72]
    two, one = mr.m4_split_vs_fused("fused_absmax")
    assert one.bytes / 1e6 == pytest.approx(67.76, abs=0.005) and one.intensity == pytest.approx(2.79, abs=0.005)
    # ours with every row's intermediate; the draft's 134.87 MB / AI 1.40 is an erratum figure
    assert two.bytes / 1e6 == pytest.approx(151.65, abs=0.005)
    assert two.bytes - one.bytes == 2 * cs.CASE.elements * 2
    assert (134.87e6 - one.bytes) == pytest.approx(2 * 4096 * 32 * 128 * 2, abs=0.01e6)  # q heads only
    assert mr.m5_transcendental() == pytest.approx(6.38, abs=0.005)
    flat, weighted = mr.softmax_row_cycles()
    assert (round(flat / 1000, 1), round(weighted / 1000, 1)) == (0.8, 1.7)
    assert weighted / flat == pytest.approx(2.08, abs=0.005)
    l6 = mr.m6_lookup()
    assert (round(l6["ideal_lookup_mb"], 2), round(100 * l6["ideal_share"], 1)) == (4.19, 6.2)
    assert (round(l6["a_lookup_mb"], 2), round(100 * l6["a_share"], 1)) == (251.66, 79.8)
    pre, dec = mr.m7_decode_sol()
    assert round(pre * 1e6, 3) == 15.051
    assert round(dec * 1e6, 3) == 0.004  # draft 0.003: payload only, see the erratum
    assert round(cs.sol_seconds(cs.payload_bytes(cs.DECODE)) * 1e6, 3) == 0.003
    s8 = mr.m8_scale()
    assert round(s8["scale_mb"], 3) == 0.655 and round(100 * s8["share"]) == 1


def test_tile_decision_report():
    r = tiles.tile_decision(128, 256, 64, stages=3, threads=256)
    assert r.ok
    assert (r.smem_stage / 1024, r.smem_total / 1024) == (48.0, 144.0)
    assert (r.regs_per_thread, r.regs_per_block) == (128, 32768)
    assert (r.blocks_by_regs, r.blocks_by_smem, r.blocks_by_threads, r.blocks_per_sm) == (2, 1, 8, 1)
    assert r.binding == "smem"
    assert (r.tiles, r.waves, round(100 * r.last_wave_fill, 1)) == (512, 4, 87.9)
    text = r.format()
    assert "48.0 KB" in text and "87.9% full" in text and "binding=smem" in text
    bad = tiles.tile_decision(256, 256, 64, stages=4, threads=256)
    assert not bad.ok and bad.smem_total == 256 * 1024 and bad.acc_per_thread == 256
    assert any(f.startswith("C1") for f in bad.failures) and any(f.startswith("C2") for f in bad.failures)
    big = tiles.tile_decision(256, 256, 64, stages=1, threads=512)
    assert (big.regs_per_thread, big.blocks_by_regs) == (128, 1)
    odd = tiles.tile_decision(96, 128, 64, stages=2, threads=128, instr="wgmma")
    assert any("C3" in f and "64" in f for f in odd.failures)
    assert not tiles.tile_decision(96, 128, 64, stages=2, threads=128, instr="mma").failures


def test_fusion_split_decisions():
    ds = decisions.decisions()
    assert len(ds) == 6
    sk = decisions.skinny_gemm_split_k()
    assert (round(sk.a.bytes / 1e6, 1), round(sk.b.bytes / 1e6, 1), round(sk.delta_bytes / 1e6, 1)) == (4.2, 71.3, -67.1)
    assert (sk.a.grid, sk.b.grid) == (64, 512) and sk.winner() is sk.b
    dk = decisions.decode_split_kv()
    assert (round(dk.a.bytes / 1e6, 1), round(dk.b.bytes / 1e6, 1), round(dk.delta_bytes / 1e6, 1)) == (2147.5, 2149.6, -2.1)
    assert (dk.a.grid, dk.b.grid) == (32, 2048) and dk.winner() is dk.b
    # the same rule gives the opposite answer on a shape that fills the device
    wide = decisions.skinny_gemm_split_k(m=8192, n=8192, k=16384)
    assert wide.winner() is wide.a
    assert ds[0].winner().name == "fused" and ds[1].winner().name == "fused"
    assert not ds[3].a.feasible and ds[3].winner() is ds[3].b


def test_registry_has_the_chapter_and_errata():
    figs = collect()
    ch28 = {k: f for k, f in figs.items() if k.startswith("perfmodel.")}
    for k in ("perfmodel.m1.factor", "perfmodel.m3.tensor_core_fp8", "perfmodel.case.design_a.total_mb", "perfmodel.tile.good.last_wave_pct",
              "perfmodel.fusion.skinny.b_mb", "perfmodel.carver.valid", "perfmodel.ascend.example.cube_ii",
              "perfmodel.erratum.m4_split_mb", "perfmodel.erratum.m7_decode_sol_us", "perfmodel.erratum.case_flop_readings"):
        assert k in ch28, k
    assert ch28["perfmodel.case.design_c.vs_ideal"].text == "1.03"
    assert ch28["perfmodel.m2.ratio"].text == "12.7"
    assert "134.87" in ch28["perfmodel.erratum.m4_split_mb"].conditions
    for f in ch28.values():
        assert f.source and f.chapter == "perfmodel"


def test_swizzle_width_follows_the_row_bytes():
    """make_swizzled_layout (MakeGemmABLayout) picks the widest of 128/64/32-byte swizzles that divides a
    row's bytes, else a padded layout; make_mma_swizzle_layout's 512-bit rule is a different function."""
    assert [tiles.swizzle_bytes(k, 16) for k in (64, 32, 16, 8, 128)] == [128, 64, 32, 0, 128]
    assert tiles.swizzle_bytes(128, 8) == 128 and tiles.swizzle_bytes(96, 16) == 64 and tiles.swizzle_bytes(48, 16) == 32
    assert tiles.can_swizzle(32, 16) and not tiles.can_swizzle(16, 16)  # a 32-byte row: swizzled by one, not the other
    with pytest.raises(ValueError):
        tiles.swizzle_bytes(64, 4)
