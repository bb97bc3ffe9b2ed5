"""CPU checks of the low-precision GEMMs and of the sm_90a support audit (tilelang 0.1.15)."""

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import lowp, support  # noqa: E402
from kernels.gemm.common import instruction_path, launch_info, wgmma_shapes  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles():
    tilelang.disable_cache()
    yield
    tilelang.enable_cache()


@pytest.fixture(scope="module")
def audit():
    return support.audit()


# ------------------------------------------------------------------- audit


def test_int8_and_fp8_reach_hopper_wgmma(audit):
    for name in ("int8_gemm", "fp8_gemm"):
        r = audit[name]
        assert r["supported"], r["error"]
        assert r["path"]["wgmma"] and r["path"]["tma_load"]
    # fp8 and int8 wgmma step 32 along K (fp16 steps 16)
    assert {k for (_, _, k) in audit["fp8_gemm"]["wgmma_shapes"]} == {32}
    assert {k for (_, _, k) in audit["int8_gemm"]["wgmma_shapes"]} == {32}


def test_int4_tensor_core_gemm_is_not_lowered_for_sm90a(audit):
    r = audit["int4_gemm"]
    assert not r["supported"]
    assert "Check failed" in r["error"] and "int4" in r["error"]


def test_mx_block_scaled_gemm_needs_blackwell(audit):
    r = audit["mx_blockscaled"]
    assert not r["supported"]
    assert "Block-scaled GEMM requires" in r["error"]
    assert "SM100" in r["error"] and "SM120" in r["error"] and "sm_90a" in r["error"]


def test_block_n_24_lowers_to_n8_wgmma(audit):
    """The shape class of the 0.1.x wgmma issue compiles; whether it computes right is a GPU check."""
    r = audit["wgmma_n24"]
    assert r["supported"]
    assert {n for (_, n, _) in r["wgmma_shapes"]} == {8}


# --------------------------------------------------------------------- fp8


def test_fp8_shared_memory_matches_the_ledger():
    from ledger.cost import dtype_bytes
    from ledger.tiles import smem_total

    cfg = lowp.FP8_CANDIDATES[0]
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
