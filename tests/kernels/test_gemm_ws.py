"""CPU checks of the hand-written warp-specialized rung 4 (kernels/gemm/ws.py): it lowers for
sm_90a, reaches the instruction path its docstring claims, releases a multicast stage at
cluster scope, and allocates the shared memory the ledger's budget predicts."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import ladder, support, ws  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from measure.suites.gemm import ladder as ladder_suite, lowp as lowp_suite  # noqa: E402

WS_CANDIDATES = [c for c in ladder_suite.TUNE_CANDIDATES if c.get("ws")]


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.fixture(scope="module")
def built():
    out = {}
    for cfg in WS_CANDIDATES:
        k = ladder.build_tuned(4096, 4096, 4096, cfg, workers=132)
        out[ladder.label(cfg)] = (cfg, k.get_kernel_source(), launch_info(k))
    return out


@pytest.mark.slow
def test_every_hand_written_candidate_is_a_three_warpgroup_tma_wgmma_pipeline(built):
    for name, (cfg, src, info) in built.items():
        p = instruction_path(src)
        assert p["tma_load"] and p["tma_store"] and p["wgmma"] and not p["cp_async"], name
        assert info.threads == ws.WS_THREADS == cfg["threads"] + 128, name
        # each consumer warpgroup owns 64 whole rows: one m64n256k16 per 16 columns of K
        assert set(wgmma_shapes(src)) == {(64, 256, 16)}, name
        # the register split after setmaxnreg, producer down, consumers up
        assert f"warpgroup_reg_dealloc<{ws.PRODUCER_REGS}>" in src, name
        assert src.count(f"warpgroup_reg_alloc<{ws.CONSUMER_REGS}>") == 2, name
        assert 128 * ws.PRODUCER_REGS + 256 * ws.CONSUMER_REGS <= 65536
        # the ledger's budget is what the kernel allocates (ring + C staging), within 227 KB
        assert info.dyn_smem_bytes == ladder.smem_budget(cfg) <= 232448, name


@pytest.mark.slow
def test_inflight_sets_the_wgmma_wait_depth(built):
    for name, (cfg, src, _) in built.items():
        waits = set(re.findall(r"wait_wgmma<(\d)>", src))
        want = {"0"} if cfg["inflight"] == 0 else {"0", "1"}
        assert waits == want, name


@pytest.mark.slow
def test_persistent_candidates_launch_one_block_per_sm(built):
    for name, (cfg, src, info) in built.items():
        if cfg.get("persistent"):
            # 512 tiles over 132 blocks (or 256 pair-tiles over 66 clusters): 4 rounds
            assert info.grid == (132, 1, 1), name
            assert "for (int t = 0; t < 4; ++t)" in src, name
        else:
            assert info.grid == (16, 32, 1), name


@pytest.mark.slow
def test_multicast_stage_is_released_by_both_blocks_of_the_cluster(built):
    """cluster=2: the B tile is multicast by rank 0; every consumer warp arrives on the stage's
    empty barrier of *both* blocks (8 warps x 2 blocks = 16 arrivals), so a multicast never
    overwrites a stage the peer still reads -- the release the automatic pipeline lacks."""
    pairs = {n: v for n, v in built.items() if v[0].get("cluster", 1) == 2}
    assert len(pairs) == 2
    for name, (cfg, src, _) in pairs.items():
        rel = support.multicast_release(src)
        assert rel["multicast"] and rel["cluster_release"], name
        stages = cfg["stages"]
        assert rel["barrier_counts"] == [128] * stages + [ws.empty_arrivals(2)] * stages == [128] * stages + [16] * stages, name
        # barriers initialised, then the cluster synchronised before any remote arrive, and
        # again at the end so no block exits while its peer may still arrive on its barriers
        first = src.index("fence_barrier_init")
        assert src.index("cluster_sync", first) < src.index("tma_load")
        assert src.rstrip().rstrip("}").rstrip().endswith("tl::cluster_sync();")
    for name, (cfg, src, _) in built.items():
        if cfg.get("cluster", 1) == 1:
            rel = support.multicast_release(src)
            assert not rel["multicast"] and not rel["cluster_release"], name
    # the automatic pipeline, for contrast (the probe of kernels.gemm.support)
    auto = support.multicast_release(support.probe_multicast().get_kernel_source())
    assert auto["multicast"] and not auto["cluster_release"]


@pytest.mark.slow
def test_ragged_shape_pads_the_cluster_grid():
    """1100 rows = 9 blocks of 128: a cluster of two needs 10, the extra block loads zeros past
    the edge and the TMA store clips it."""
    assert ws.ws_grid(1100, 1016, 256, 1) == (4, 9)
    assert ws.ws_grid(1100, 1016, 256, 2) == (4, 10)
    cfg = next(c for c in WS_CANDIDATES if c.get("cluster") == 2 and c.get("inflight") == 1)
    k = ladder.build_tuned(*ladder_suite.WS_RAGGED, cfg, workers=132)
    src = k.get_kernel_source()
    assert "tma_load_multicast" in src and launch_info(k).grid == (132, 1, 1)


@pytest.mark.parametrize("kw, match", [
    (dict(cluster=3), "cluster must be 1 or 2"),
    (dict(inflight=2), "inflight must be 0 or 1"),
    (dict(stages=2, inflight=1), "need at least 3"),
    (dict(cluster=2, workers=131), "multiple of cluster=2"),
    (dict(epi_cols=96), "must divide block_N=256"),
    (dict(block_N=24), "block_N"),
])
def test_bad_configuration_names_the_constraint(kw, match):
    with pytest.raises(ValueError, match=match):
        ws.rung4_ws(1024, 1024, 1024, **kw)


def test_build_tuned_refuses_a_shape_the_pipeline_does_not_have():
    cfg = dict(WS_CANDIDATES[0], block_M=256, block_N=128)
    with pytest.raises(ValueError, match="128 rows on 256 consumer threads"):
        ladder.build_tuned(1024, 1024, 1024, cfg)


# ------------------------------------------------------------------ fp8 (two-level accumulation)

@pytest.mark.slow
def test_fp8_candidates_reach_fp8_wgmma_with_the_partials_in_registers():
    from kernels.gemm import lowp

    for cfg in lowp_suite.FP8_WS_CANDIDATES:
        k = lowp.build_fp8_promoted(4096, 4096, 4096, cfg, workers=132)
        src, info = k.get_kernel_source(), launch_info(k)
        name = lowp.fp8_label(cfg)
        assert set(wgmma_shapes(src)) == {(64, cfg["block_N"], 32)} and "kFloat8_e4m3" in src, name
        assert info.grid == (132, 1, 1) and info.threads == ws.WS_THREADS, name
        # partials and the accumulator: 64 x block_N fp32 each, one partial (inflight=0) or two
        frags = re.findall(rf"float \w+\[{64 * cfg['block_N'] // 128}\];", src)
        assert len(frags) == 2 * (2 + cfg["inflight"]), name
        # the fp8 stage ring plus the bf16 C staging is what the kernel allocates, within 227 KB
        ring = cfg["stages"] * (128 + cfg["block_N"]) * cfg["block_K"]
        assert info.dyn_smem_bytes == ring + 128 * (cfg.get("epi_cols") or cfg["block_N"]) * 2 <= 232448, name
        assert "SA[0]" in src and "bfloat16_t" in src, name


def test_fp8_two_partials_need_an_even_number_of_k_blocks():
    with pytest.raises(ValueError, match="even number of 128-deep blocks, got 9"):
        ws.fp8_ws(1024, 1024, 1152, block_N=128, stages=6, inflight=1)


@pytest.mark.slow
def test_ptxas_serializes_wgmma_when_a_partial_is_added_while_the_next_is_in_flight():
    """inflight=1 for fp8 adds one partial while the wgmma of the other is in flight; ptxas
    answers with warning C7514 and serializes the wgmma (the record shows it ~20 % slower).
    The one-partial form, and the fp16 pipeline keeping its own wgmma in flight, do not."""
    from kernels.gemm.lowered import ptxas_report

    two = ptxas_report(ws.fp8_ws(1024, 1024, 1024, block_N=128, stages=6, inflight=1, workers=8).get_kernel_source())
    one = ptxas_report(ws.fp8_ws(1024, 1024, 1024, block_N=192, stages=4, inflight=0, workers=8).get_kernel_source())
    f16 = ptxas_report(ws.rung4_ws(1024, 1024, 1024, stages=3, inflight=1).get_kernel_source())
    assert two["serialized_wgmma"] and not one["serialized_wgmma"] and not f16["serialized_wgmma"]
    assert two["spill_bytes"] == one["spill_bytes"] == f16["spill_bytes"] == 0


def test_the_candidates_the_page_compares_are_in_the_search():
    """Every hand-written candidate the GEMM page names (coursebook.gemm_ladder.WS_KEYS) is one
    candidate of the tuned search, and every candidate of the search has a label of its own."""
    from coursebook.gemm_ladder import WS_KEYS, ws_label

    labels = [ladder.label(c) for c in ladder_suite.TUNE_CANDIDATES]
    assert len(set(labels)) == len(labels)
    named = {ws_label(k) for k in WS_KEYS}
    assert len(named) == len(WS_KEYS) and named <= {ladder.label(c) for c in WS_CANDIDATES}
