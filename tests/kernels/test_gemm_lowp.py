"""CPU checks of the low-precision GEMMs and of the sm_90a support audit (tilelang 0.1.15)."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import lowp, support  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from measure.check import tolerance_stats  # noqa: E402
from measure.suites.gemm import lowp as lowp_suite  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    """Kernels loaded from a cache carry no device module (launch config); compile afresh."""
    yield


@pytest.fixture(scope="module")
def audit():
    return support.audit()


# ------------------------------------------------------------------- audit


@pytest.mark.slow
def test_int8_and_fp8_reach_hopper_wgmma(audit):
    for name in ("int8_gemm", "fp8_gemm"):
        r = audit[name]
        assert r["supported"], r["error"]
        assert r["path"]["wgmma"] and r["path"]["tma_load"]
    # fp8 and int8 wgmma step 32 along K (fp16 steps 16)
    assert {k for (_, _, k) in audit["fp8_gemm"]["wgmma_shapes"]} == {32}
    assert {k for (_, _, k) in audit["int8_gemm"]["wgmma_shapes"]} == {32}


@pytest.mark.slow
def test_int4_tensor_core_gemm_is_not_lowered_for_sm90a(audit):
    r = audit["int4_gemm"]
    assert not r["supported"]
    assert "Check failed" in r["error"] and "int4" in r["error"]


@pytest.mark.slow
def test_mx_block_scaled_gemm_needs_blackwell(audit):
    r = audit["mx_blockscaled"]
    assert not r["supported"]
    assert "Block-scaled GEMM requires" in r["error"]
    assert "SM100" in r["error"] and "SM120" in r["error"] and "sm_90a" in r["error"]


@pytest.mark.slow
def test_block_n_24_lowers_to_n8_wgmma(audit):
    """The shape class of the 0.1.x wgmma issue compiles; whether it computes right is a GPU check."""
    r = audit["wgmma_n24"]
    assert r["supported"]
    assert {n for (_, n, _) in r["wgmma_shapes"]} == {8}


# --------------------------------------------------------------------- fp8


@pytest.mark.slow
def test_fp8_shared_memory_matches_the_ledger():
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    cfg = lowp_suite.FP8_CANDIDATES[0]
    k = lowp.fp8_gemm(1024, 1024, 1024, **cfg)
    info = launch_info(k)
    assert info.dyn_smem_bytes == smem_total(cfg["block_M"], cfg["block_N"], cfg["block_K"], cfg["stages"],
                                             dtype_bytes("float8_e4m3fn"))
    assert info.threads == cfg["threads"] + 128
    src = k.get_kernel_source()
    assert "kFloat8_e4m3" in src
    assert instruction_path(src)["warp_specialized"]


def test_fp8_check_inputs():
    a = torch.zeros((128, 64), dtype=torch.float16)
    s = torch.ones(1)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        lowp.check_fp8_inputs(a, a, s, s)
    a8 = a.to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="scale_a"):
        lowp.check_fp8_inputs(a8, a8, torch.ones(2), s)
    with pytest.raises(ValueError, match="CUDA"):
        lowp.check_fp8_inputs(a8, a8, s, s)


# ----------------------------------------------------------------- dequant


def test_int4_packing_round_trips_and_dequantizes_per_group():
    g = torch.Generator().manual_seed(0)
    w = torch.randint(-8, 8, (16, 256), generator=g, dtype=torch.int8)
    packed = lowp.pack_int4(w)
    assert packed.shape == (16, 128) and packed.dtype == torch.uint8
    assert torch.equal(lowp.unpack_int4(packed), w)
    # low nibble holds the even k
    assert int(packed[0, 0]) & 0xF == int(w[0, 0]) + 8
    scales = torch.rand((16, 2), generator=g).to(torch.float16)
    deq = lowp.dequant_weight(packed, scales, 128)
    assert torch.allclose(deq[:, :128], w[:, :128].float() * scales[:, :1].float())
    assert torch.allclose(deq[:, 128:], w[:, 128:].float() * scales[:, 1:].float())
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        lowp.pack_int4(torch.full((2, 2), 9, dtype=torch.int8))


@pytest.mark.slow
def test_dequant_gemm_expands_in_shared_memory_before_wgmma():
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    c = lowp.DEQUANT_DEFAULT
    k = lowp.dequant_gemm(1024, 1024, 1024, **c)
    info = launch_info(k)
    src = k.get_kernel_source()
    # fp16 A and expanded-B rings plus the packed int4 ring, all `stages` deep
    packed_ring = c["stages"] * c["block_N"] * c["block_K"] * dtype_bytes("int4")
    assert info.dyn_smem_bytes == smem_total(c["block_M"], c["block_N"], c["block_K"], c["stages"], 2) + packed_ring
    p = instruction_path(src)
    assert p["wgmma"] and p["tma_load"]
    assert set(wgmma_shapes(src)) <= {(64, 64, 16), (64, 128, 16)}
    assert "fence_proxy_async" in src  # generic-proxy writes of B_s made visible to wgmma


def test_dequant_check_inputs():
    a = torch.zeros((128, 256), dtype=torch.float16)
    packed = torch.zeros((128, 128), dtype=torch.uint8)
    scales = torch.zeros((128, 2), dtype=torch.float16)
    with pytest.raises(ValueError, match="two int4 per byte"):
        lowp.check_dequant_inputs(a, torch.zeros((128, 256), dtype=torch.uint8), scales)
    with pytest.raises(ValueError, match="scale group"):
        lowp.check_dequant_inputs(torch.zeros((128, 200), dtype=torch.float16), torch.zeros((128, 100), dtype=torch.uint8), scales)
    with pytest.raises(ValueError, match="scales"):
        lowp.check_dequant_inputs(a, packed, torch.zeros((128, 3), dtype=torch.float16))
    with pytest.raises(ValueError, match="CUDA"):
        lowp.check_dequant_inputs(a, packed, scales)


# ------------------------------------------------------- fp8 two-level accumulation


@pytest.fixture(scope="module")
def promoted():
    out = {}
    for cfg in (lowp_suite.FP8_PROMOTED_CANDIDATES[0], lowp_suite.FP8_PROMOTED_CANDIDATES[1]):
        k = lowp.fp8_gemm_promoted(1024, 1024, 1024, **cfg)
        out[cfg["promote"]] = (cfg, k, k.get_kernel_source())
    return out


@pytest.mark.slow
def test_square_partition_splits_n_between_warpgroups():
    cfg = next(c for c in lowp_suite.FP8_PROMOTED_CANDIDATES if c["block_N"] == 192 and c["policy"] == "square")
    src = lowp.fp8_gemm_promoted(1024, 1024, 1024, **cfg).get_kernel_source()
    assert set(wgmma_shapes(src)) == {(64, 96, 32)}


@pytest.mark.slow
def test_promoted_fp8_stays_on_warp_specialized_wgmma(promoted):
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    cfg, k, src = promoted[1]
    p = instruction_path(src)
    assert p["wgmma"] and p["tma_load"] and p["warp_specialized"] and p["mbarrier"]
    assert not p["mma_sync"]
    # fp8 wgmma, K step 32; policy "row": each of the 2 consumer warpgroups owns 64 whole rows
    assert cfg["policy"] == "row"
    assert "kFloat8_e4m3" in src and set(wgmma_shapes(src)) == {(64, 192, 32)}
    info = launch_info(k)
    assert info.threads == cfg["threads"] + 128
    # the partial tile lives in registers: shared memory is the fp8 stage ring only
    assert info.dyn_smem_bytes == smem_total(cfg["block_M"], cfg["block_N"], cfg["block_K"], cfg["stages"],
                                             dtype_bytes("float8_e4m3fn"))


@pytest.mark.slow
def test_promotion_is_visible_in_the_generated_loop(promoted):
    _, _, src = promoted[1]
    loop = src[src.index("warpgroup_reg_alloc"):]
    # two register tiles: the wgmma partial and the fp32 main accumulator
    assert re.search(r"float part\[96\];", src) and re.search(r"float acc\[96\];", src)
    # the first wgmma of each K block starts from zero (scale-d = 0): clear_accum costs no instruction
    assert re.search(r"\(uint32_t\*\)\(part \+ [^;]*?\), \(\(0 < ki\) \? 1 : 0\)\);", loop)
    # after the wgmma group completes, the partial is added into acc with plain FADDs
    wait = loop.index("warpgroup_wait<0>")
    add = re.search(r"v_ = \*\(float4\*\)\(acc \+ .*?\n.*?v__1 = \*\(float4\*\)\(part \+ .*?\n\s*__1\.x = \(v_\.x\+v__1\.x\);", loop[wait:])
    assert add, "promotion acc += part not found after the wgmma wait"
    # ... inside the K loop (before the scaling epilogue)
    assert wait + add.start() < loop.index("SA[0]")


@pytest.mark.slow
def test_promote_every_two_blocks_is_conditional(promoted):
    _, _, src = promoted[2]
    assert "((ko_1 % 2) == 0) ? 0 : 1" in src  # the partial restarts on even blocks only
    assert "if ((ko_1 & 1) == 1)" in src  # and is promoted after odd ones
    with pytest.raises(ValueError, match="divide"):
        lowp.fp8_gemm_promoted(1024, 1024, 1152, **lowp_suite.FP8_PROMOTED_CANDIDATES[1])  # 9 K blocks


def test_fp8_search_lists_are_small_and_fit_shared_memory():
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    # the search records times by label: two candidates with one label would be timed as one
    every = lowp_suite.FP8_PROMOTED_CANDIDATES + lowp_suite.FP8_WS_CANDIDATES + lowp_suite.FP8_CANDIDATES
    labels = [lowp.fp8_label(c) for c in every]
    assert len(set(labels)) == len(labels)
    assert all(c in lowp_suite.FP8_WS_CANDIDATES for c in lowp_suite.FP8_WS_RAGGED)
    for cfg in lowp_suite.FP8_PROMOTED_CANDIDATES + lowp_suite.FP8_CANDIDATES:
        assert smem_total(cfg["block_M"], cfg["block_N"], cfg["block_K"], cfg["stages"], dtype_bytes("float8_e4m3fn")) <= 232448
        assert cfg["block_N"] % 16 == 0


def test_tolerance_stats_flag_a_wrong_tile_and_pass_bf16_rounding():
    g = torch.Generator().manual_seed(1)
    K = 4096
    ref = torch.randn((256, 256), generator=g, dtype=torch.float64) * K ** 0.5
    tol = dict(atol=2.0 ** -8 * K ** 0.5, rtol=1.6e-2)
    assert tolerance_stats(ref.to(torch.bfloat16), ref, **tol)["ok"]
    bad = ref.clone()
    bad[128:, 128:] = ref[:128, :128]  # one tile holds another tile's values
    st = tolerance_stats(bad, ref, **tol)
    assert not st["ok"] and st["mismatched"] > 128 * 128 // 2
    nan = ref.clone()
    nan[0, 0] = float("nan")
    assert tolerance_stats(nan, ref, **tol)["mismatched"] == 1


@pytest.mark.slow
def test_multicast_pipeline_releases_stages_locally_only(audit):
    """T.copy_cluster with a cluster mask lowers to a TMA multicast inside the automatic
    warp-specialized pipeline, but the stage barriers count only this block's consumers and
    nothing arrives on the other block's barrier: the leader may refill a stage its peer is
    still reading. The course keeps it out of the tuned search (chapter 14 says why)."""
    r = audit["multicast_gemm"]
    assert r["supported"] and r["path"]["warp_specialized"] and r["path"]["tma_load"]
    rel = support.multicast_release(support.probe_multicast().get_kernel_source())
    assert rel["multicast"]
    # 3 full barriers (1 producer arrival + bytes) and 3 empty barriers (the 256 local consumer threads)
    assert sorted(rel["barrier_counts"]) == [1, 1, 1, 256, 256, 256]
    assert not rel["cluster_release"]
