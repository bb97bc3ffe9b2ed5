"""carver's real entry point and tilelang.tools.Analyzer on a hand-built H200 model (CPU).

ledger-B's tests/ledger/test_carver.py checks ledger.carver against carver's
DefaultPolicy walk step by step; here we run the public ``recommend_hints`` path the
GPU suite uses, including the tensor-core policy a real GPU reaches, and the Analyzer.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tilelang")

from measure import carver as cr  # noqa: E402


@pytest.fixture(scope="module")
def arch():
    return cr.hand_built_arch()


@pytest.fixture(scope="module")
def tc_hints(arch):
    return cr.recommend(arch, tensor_core_path=True)


def test_tensor_core_path_ranks_tiles_like_the_ledger(arch, tc_hints):
    assert len(tc_hints) == cr.TOPK and all(h["use_tc"] for h in tc_hints)
    cmp = cr.compare(tc_hints, cr.ledger_view(arch))
    assert cmp["same_order"], cmp["first_difference"]
    assert cmp["carver_tiles"][:3] == [[128, 128], [64, 256], [256, 64]]
    # the mirrored tiles share a priority: the model cannot tell them apart
    assert [64, 256] in cmp["tie_groups"][0] and [256, 64] in cmp["tie_groups"][0]
    assert all(len(g) == 2 for g in cmp["tie_groups"])


def test_tensor_core_hints_carry_warps_stages_and_rasterization(tc_hints):
    top = tc_hints[0]
    assert top["block"] == [128, 128] and top["warp"] == [64, 64]
    assert top["rstep"] == [32] and top["pipeline_stage"] == 2
    assert top["raster_order"] == "column" and top["raster_panel"] > 0
    cfg = cr.hint_config(top)
    assert cfg == dict(block_M=128, block_N=128, block_K=32, stages=2, threads=128,
                       panel=top["raster_panel"], order="column")


def test_without_a_gpu_carver_silently_drops_the_tensor_core_policy(arch, tc_hints):
    plain = cr.recommend(arch)
    assert not any(h["use_tc"] for h in plain)  # fell back to DefaultPolicy, no warning
    assert [h["block"] for h in plain] == [h["block"] for h in tc_hints]
    assert [h["rstep"] for h in plain] != [h["rstep"] for h in tc_hints]


def test_real_arch_needs_a_gpu():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="cuda device 0"):
        cr.real_arch()


@pytest.mark.slow
def test_top_hint_compiles_to_wgmma_with_column_rasterization(tc_hints):
    cfg = cr.hint_config(tc_hints[0])
    src = cr.hint_kernel(*cr.SHAPE, **cfg).get_kernel_source()
    assert "wgmma" in src and "rasterization2DColumn" in src


def test_analyzer_gives_half_an_answer_on_sm90(arch):
    cap = cr.analyzer_capture(arch)
    M, N, K = cr.SHAPE
    led = cr.analyzer_vs_ledger(cap)
    assert cap["total_flops"] == 2 * M * N * K == led["ledger_flops"]
    # 128x128 tiles move 2181.0 MB; Analyzer's int32 arithmetic wraps that to a negative count
    assert round(led["ledger_tiled_traffic"] / 1e6, 1) == 2181.0
    assert cap["total_global_bytes"] < 0 and cap["bytes_wrapped_int32"]
    assert cap["total_global_bytes"] == led["ledger_tiled_traffic"] - 2**32
    assert cap["estimated_time_s"] < 0  # a negative "time", returned without complaint
    small = cr.analyzer_capture(arch, 1024, 1024, 1024)
    assert small["total_global_bytes"] == cr.analyzer_vs_ledger(small, 1024, 1024, 1024)["ledger_tiled_traffic"]
    assert cap["expected_tflops"] is None  # "90" is not in ARCH_CONFIGS
    assert cap["expected_bandwidth_GBps"] == pytest.approx(12.08)
    assert cap["estimated_time_s"] == pytest.approx(cap["memory_only_time_s"], rel=1e-6)
    assert "Unsupported compute capability: 90" in cap["log"]
    # the same TIR on an "89" model gets a CUDA-core peak and a compute term
    cap89 = cr.analyzer_capture(cr.hand_built_arch(compute_capability="89"))
    assert cap89["expected_tflops"] == pytest.approx(82.6)
    assert cap89["estimated_time_s"] == pytest.approx(2 * M * N * K / 82.6e12, rel=1e-6)


def test_bad_arguments_raise_value_error(arch):
    with pytest.raises(ValueError, match="M must be"):
        cr.recommend(arch, M=0)
    with pytest.raises(ValueError, match="threads"):
        cr.hint_config({"block": [256, 256], "warp": [8, 8], "use_tc": True, "rstep": [32],
                        "pipeline_stage": 2, "thread": None})
    with pytest.raises(ValueError, match="positive"):
        cr.hand_built_arch(sms=0)
