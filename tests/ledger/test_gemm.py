"""Chapter 14 (GEMM): the ledger, the tile budget and the benchmark protocol against the draft."""
import math

import pytest

from ledger import gemm, protocol, tiles
from ledger.figures import collect

# numbers the chapter-14 draft prints
DRAFT = {
    "h100_balance": 333, "crossover": 1e3, "smem_stage_kb": 16, "smem_3stage_kb": 48, "smem_per_sm_kb": 228,
    "blocks": 4, "acc_elems": 16384, "acc_regs": 128, "cc70_regs": 65536, "cc70_threads": 2048,
    "full_occ_regs": 32, "alloc_unit": 256, "min_mib": 96, "naive_gb": 275, "warmup_ms": 25, "rep_ms": 100,
}


def test_flops_bytes_ai():
    assert gemm.gemm_flops(4096, 4096, 4096) == 2 * 4096 ** 3
    assert gemm.gemm_min_bytes(2, 3, 5) == 2 * (2 * 5 + 5 * 3 + 2 * 3)
    assert gemm.gemm_min_bytes(2, 3, 5, "fp8", "fp32") == (2 * 5 + 5 * 3) + 4 * 2 * 3
    for side in (256, 1000, 4096):
        assert gemm.gemm_ai(side, side, side) == pytest.approx(gemm.square_ai(side)) == pytest.approx(2 * side / 6)


def test_crossover_near_one_thousand_on_h100():
    from ledger.machines import get_machine
    h100 = get_machine("h100-spec")
    assert round(h100.balance) == DRAFT["h100_balance"]
    side = gemm.square_crossover(h100.balance)
    assert gemm.square_ai(round(side)) == pytest.approx(h100.balance, rel=1e-3)
    assert math.isclose(side, DRAFT["crossover"], rel_tol=0.01)
    # the flip is real: memory-bound just below, compute-bound just above
    assert gemm.gemm_cost(512, 512, 512).bound(h100) == "memory-bound"
    assert gemm.gemm_cost(2048, 2048, 2048).bound(h100) == "compute-bound"


def test_tiled_and_naive_traffic():
    m = 4096
    assert gemm.tiled_traffic(m, m, m, 256, 256) / 1e6 == pytest.approx(1107.3, abs=0.05)
    assert gemm.tiled_traffic(m, m, m, 128, 256) / 1e6 == pytest.approx(1644.2, abs=0.05)
    assert gemm.tiled_traffic(m, m, m, 128, 128) / 1e6 == pytest.approx(2181.0, abs=0.05)
    # bigger tiles never move more
    assert gemm.tiled_traffic(m, m, m, 64, 64) > gemm.tiled_traffic(m, m, m, 128, 128)
    assert round(gemm.gemm_min_bytes(m, m, m) / 2 ** 20) == DRAFT["min_mib"]
    assert round(gemm.naive_traffic(m, m, m) / 1e9) == DRAFT["naive_gb"]
    ratio = gemm.naive_traffic(m, m, m) / gemm.gemm_min_bytes(m, m, m)
    assert 1e3 <= ratio < 1e4  # "three orders of magnitude"


def test_split_k_and_waves():
    assert gemm.split_k_bytes(1024, 1024, split=1) / 1e6 == pytest.approx(4.2, abs=0.05)
    assert gemm.split_k_bytes(1024, 1024, split=8) / 1e6 == pytest.approx(71.3, abs=0.05)
    assert gemm.split_k_bytes(1024, 1024, split=8, separate_reduce=False) == 8 * gemm.split_k_bytes(1024, 1024, split=1)
    grid, w, fill = gemm.grid_waves(4096, 4096, 128, 256, blocks_per_sm=1)
    assert (grid, w) == (512, 4) and fill == pytest.approx(116 / 132)
    grid, w, fill = gemm.grid_waves(1024, 1024, 128, 128, split=8)
    assert grid == 512


def test_split_k_and_dequant_costs():
    c = gemm.split_k_cost(1024, 1024, 16384, split=8)
    assert c.flops == gemm.gemm_flops(1024, 1024, 16384)
    assert c.bytes == 2 * (1024 * 16384 * 2) + 8 * 1024 * 1024 * 4
    d = gemm.dequant_gemm_cost(16, 4096, 4096)
    assert d.bytes == 2 * 16 * 4096 + 0.5 * 4096 * 4096 + 2 * 4096 * 32 + 2 * 16 * 4096
    with pytest.raises(ValueError, match="weight_dtype"):
        gemm.dequant_gemm_cost(1, 1, 1, weight_dtype="int3")


def test_tile_budget_of_the_chapter():
    assert tiles.smem_per_stage(128, 128, 32) / 1024 == DRAFT["smem_stage_kb"]
    assert tiles.smem_total(128, 128, 32, 3) / 1024 == DRAFT["smem_3stage_kb"]
    assert tiles.HOPPER.smem_per_sm // 1024 == DRAFT["smem_per_sm_kb"]
    assert tiles.HOPPER.smem_per_sm // tiles.smem_total(128, 128, 32, 3) == DRAFT["blocks"]
    assert tiles.accumulator_per_thread(128, 128, 128) == DRAFT["acc_regs"]
    assert tiles.full_occupancy_regs() == DRAFT["full_occ_regs"]
    assert tiles.VOLTA_BEST_PRACTICES.reg_alloc_unit == DRAFT["alloc_unit"]
    assert tiles.warp_rounded_regs(100) == 104  # 3200 per warp -> 3328 = 13 x 256
    assert tiles.warp_rounded_regs(128) == 128


def test_protocol_iterations_and_checklist():
    p = protocol.DEFAULT_PROTOCOL
    assert (p.warmup_ms, p.rep_ms) == (DRAFT["warmup_ms"], DRAFT["rep_ms"])
    assert p.iterations(0.5) == (50, 200)
    assert p.iterations(400.0) == (1, 1)  # never zero
    assert p.do_bench_kwargs()["return_mode"] == p.statistic
    lines = protocol.fair_comparison_checklist()
    for item in ("baseline", "shape", "dtype", "epilogue", "protocol"):
        assert any(line.split(". ", 1)[1].startswith(item) for line in lines)
    assert "25 ms" in lines[4] and "median" in lines[4]
    with pytest.raises(ValueError, match="statistic"):
        protocol.BenchProtocol(statistic="best")
    with pytest.raises(ValueError, match="warmup_ms"):
        protocol.BenchProtocol(warmup_ms=0)
    with pytest.raises(ValueError, match="estimate_ms"):
        protocol.iterations(float("nan"))


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="k"):
        gemm.gemm_flops(4, 4, 0)
    with pytest.raises(ValueError, match="dtype"):
        gemm.gemm_min_bytes(4, 4, 4, "fp12")
    with pytest.raises(ValueError, match="block_n"):
        gemm.tiled_traffic(4, 4, 4, 2, -1)
    with pytest.raises(ValueError, match="threads"):
        tiles.accumulator_per_thread(128, 128, 0)


def test_registry_has_the_chapter():
    figs = collect()
    ch14 = {k: f for k, f in figs.items() if k.startswith("gemm.")}
    for k in ("gemm.machine.h100_balance", "gemm.ledger.s4096.ai", "gemm.naive.traffic_gb",
              "gemm.budget.smem_3stage_kb", "gemm.bench.warmup_ms", "gemm.waves.last_fill_pct"):
        assert k in ch14
    assert ch14["gemm.naive.traffic_gb"].value == DRAFT["naive_gb"]
    assert ch14["gemm.ledger.s512.ai"].text == "170.7"
    for f in ch14.values():
        assert f.source and f.unit is not None
