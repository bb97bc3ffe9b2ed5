"""Fused RMSNorm + RoPE (+ FP8): semantics = the chain of three steps; lowering facts."""
import pytest
import torch

from kernels import fused as Fu
from kernels import norm, quant, rope



def test_reference_is_the_chain_of_three_steps():
    M, N, R = 6, 256, 64
    x = torch.randn(M, N, dtype=torch.bfloat16)
    w = torch.randn(N, dtype=torch.bfloat16)
    cos, sin = rope.rope_tables(M, R)
    y = Fu.ref_rmsnorm_rope(x, w, cos, sin, R)
    chain = rope.ref_rope(norm.ref_rmsnorm(x, w)[:, None, :], cos, sin, R, "neox")[:, 0, :]
    assert torch.equal(y, chain)
    assert torch.equal(y[:, : N - R], norm.ref_rmsnorm(x, w)[:, : N - R])  # only the tail rotates
    q, s = Fu.ref_rmsnorm_rope_fp8(x, w, cos, sin, R, 128)
    q2, s2 = quant.ref_quant_fp8(chain, 128)
    assert torch.equal(q.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s, s2)


@pytest.fixture(scope="module")
def src():
    out = {}
    k1 = Fu.rmsnorm_rope(16384, 4096, 128, "bfloat16", 2, 256, 1e-6)
    k2 = Fu.rmsnorm_rope_fp8(16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6)
    for name, k in (("rope", k1), ("fp8", k2)):
        s = k.get_kernel_source()
        out[name] = s[s.index("__global__ void __launch_bounds__"):]
    return out


@pytest.mark.slow
def test_fused_kernel_reads_x_once_and_reduces_in_shared_workspace(src):
    for s in src.values():
        assert s.count("= *(uint4*)(X +") >= 1
        assert "tl::AllReduce<tl::SumOp, 256" in s and "workspace" in s


@pytest.mark.slow
def test_rows_live_in_registers_spread_over_all_threads(src):
    # blk_m * N / threads = 2 * 4096 / 256 = 32 elements per thread: every thread normalizes
    # its own share (the first version gave each row to one thread: 5 % of copy bandwidth)
    for s in src.values():
        assert "bfloat16_t x[32];" in s
        assert "*(uint4*)(x + (i * 8)) = *(uint4*)(X +" in s
        assert "xs" not in s and "tma_store" not in s  # no staged row tile


@pytest.mark.slow
def test_only_the_tail_goes_through_shared_memory(src):
    s = src["rope"]
    # the last 128 channels of a row belong to threads 240..255 (8 channels each)
    assert s.count("if (240 <= ((int)threadIdx.x))") == 2  # publish the tail, then rotate
    assert "*(uint4*)(((bfloat16_t*)tail)" in s  # published with 16-byte stores
    assert "*(uint4*)(Y + " in s  # the rows leave with 16-byte stores
    assert s.split("if (240 <= ((int)threadIdx.x))")[0].count("__syncthreads()") <= 3


@pytest.mark.slow
def test_fp8_variant_adds_a_group_absmax_and_a_saturating_cast(src):
    s = src["fp8"]
    assert "tl::AllReduce<tl::MaxOp, 8, 1, 0" in s  # a group is 8 lanes of one warp: shuffles only
    assert "__NV_SATFINITE, __NV_E4M3" in s
    assert "*(fp8_e4_16_t*)(Q + " in s  # 16-byte stores of the codes
    # 2 groups per thread: 2 scales and 2 reciprocals (float2); the elements are multiplied
    assert s.count("/v__") == 4 and "make_float4(inv[" in s
    assert "Y" not in s.split("{", 1)[0]  # no dtype output: only Q and S are written


B = lambda *s: torch.zeros(*s, dtype=torch.bfloat16)  # noqa: E731
F = lambda *s: torch.zeros(*s)  # noqa: E731


@pytest.mark.parametrize("make, match", [
    (lambda: Fu.fused_rmsnorm_rope(B(4, 512), B(256), F(4, 64), F(4, 64), 128), "weight: shape"),
    (lambda: Fu.fused_rmsnorm_rope(B(4, 512), B(512), F(4, 32), F(4, 64), 128), "cos: shape"),
    (lambda: Fu.fused_rmsnorm_rope(B(4, 512), B(512), F(4, 64), F(4, 64), 1024), "rope_dim"),
    (lambda: Fu.fused_rmsnorm_rope(B(4, 100), B(100), F(4, 32), F(4, 32), 64), "multiple of threads"),
    (lambda: Fu.fused_rmsnorm_rope(B(4, 512), B(512), F(4, 64), F(4, 64), 128), "cuda"),
    (lambda: Fu.fused_rmsnorm_rope_fp8(B(4, 512), B(512), F(4, 64), F(4, 64), 128, 100), "group"),
    (lambda: Fu.fused_rmsnorm_rope_fp8(torch.zeros(4, 512), F(512), F(4, 64), F(4, 64), 128), "dtype"),
    (lambda: Fu.fused_rmsnorm_rope_fp8(B(4, 512), B(512), F(4, 64), F(4, 64), 128, schedule="rows"), "schedule"),
    (lambda: Fu.fused_rmsnorm_rope_fp8(B(4, 512), B(512), F(4, 64), F(4, 64), 128, schedule="vec"),
     "does not serve N=512"),
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.fixture(scope="module")
def warp_src():
    out = {}
    for name, k in (("rope", Fu.rmsnorm_rope_warp(37, 4096, 128, "bfloat16", 4, 1e-6, 168)),
                    ("fp8", Fu.rmsnorm_rope_fp8_warp(16384, 4096, 128, 128, "bfloat16", 4, 1e-6, 168))):
        s = k.get_kernel_source()
        out[name] = s[s.index("__global__ void __launch_bounds__"):]
    return out


@pytest.mark.slow
def test_warp_schedule_rope_partner_is_a_lane_shuffle(warp_src):
    for s in warp_src.values():
        assert "tl::warp_reduce_sum(rs[0])" in s and "workspace" not in s
        assert s.count("__syncthreads()") == 1  # the weight, staged once per block
        assert "*(uint4*)(xl + (j * 8)) = *(uint4*)(X + " in s
        # R = 128: the tail is lanes 16..31 of the last chunk, the partner 8 lanes away
        assert "__shfl_xor_sync((uint)4294967295, ((float)xl[(v_4 + 120)]), 8, 32)" in s
        assert "if (16 <= (((int)threadIdx.x) & 31))" in s
        assert "__launch_bounds__(128, 3)" in s
    assert "*(uint4*)(Y + " in warp_src["rope"]


@pytest.mark.slow
def test_warp_schedule_fp8_group_amax_over_16_lanes(warp_src):
    s = warp_src["fp8"]
    # group 128 = 16 lanes x 8 channels: 4 xor shuffles (8, 4, 2, 1)
    assert "__shfl_xor_sync((uint)4294967295, am[0], (8 >> t), 32)" in s and "t < 4" in s
    assert "*(fp8_e4_8_t*)(Q + " in s  # 8 codes per lane, 256 contiguous bytes per warp
    assert "Y" not in s.split("{", 1)[0]


def test_warp_supported_shapes():
    assert Fu.warp_supported(4096, 128, 128)
    assert not Fu.warp_supported(4000, 128, 128)  # N % 256
    assert not Fu.warp_supported(4096, 96, 128)  # R not a power of two
    assert not Fu.warp_supported(4096, 128, 128, "float32")


@pytest.mark.slow
def test_min_blocks_caps_registers_through_launch_bounds():
    k = Fu.rmsnorm_rope_fp8(16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6, 5)
    assert "__launch_bounds__(256, 5)" in k.get_kernel_source()


@pytest.fixture(scope="module")
def pipe_src():
    out = {}
    for name, m in (("full", 16384), ("ragged", 37)):
        s = Fu.rmsnorm_rope_fp8_pipe(m, 4096, 128, 128, "bfloat16", 2, 4, 132, 256, 1e-6).get_kernel_source()
        out[name] = s[s.index("__global__ void __launch_bounds__"):]
    return out


@pytest.mark.slow
def test_fp8_pipe_streams_rows_and_tables_by_tma(pipe_src):
    s = pipe_src["full"]
    assert "__launch_bounds__(384, 1)" in s and "tl::warpgroup_reg_alloc<240>()" in s
    # x (2 tokens x 4096 bf16 = 16384 B) and the cos/sin rows (2 x 64 fp32 = 512 B) all by TMA
    for d in ("X_desc", "C_desc", "Sn_desc"):
        assert f"tl::tma_load({d}" in s
    assert s.count("arrive_and_expect_tx(16384)") == 1 and s.count("arrive_and_expect_tx(512)") == 2
    # the consumers keep the fragment schedule: group amax in 8 lanes, a block sum over 256
    assert "tl::AllReduce<tl::MaxOp, 8, 1, 128" in s and "tl::AllReduce<tl::SumOp, 256, 8, 128" in s
    # one __syncthreads (the mbarrier init); the tail exchange uses the consumers' named barrier
    assert s.count("__syncthreads()") == 1 and "tl::__sync_thread_partial(3, 256)" in s
    assert "*(fp8_e4_16_t*)(Q + " in s


@pytest.mark.slow
def test_fp8_pipe_ragged_tokens_are_stored_row_by_row(pipe_src):
    s = pipe_src["ragged"]
    assert "if (((((int)blockIdx.x) * 2) + i_11) < 37)" in s


def test_pipe_supported_shapes():
    assert Fu.pipe_supported(4096, 128, 128, 2) and Fu.pipe_supported(4096, 128, 128, 1)
    assert not Fu.pipe_supported(4096, 128, 96, 2)  # N not a multiple of group
    assert not Fu.pipe_supported(1024, 128, 128, 1)  # 1024 over 256 threads x 8
    assert not Fu.pipe_supported(4096, 6, 128, 2)  # cos/sin rows of 12 bytes: not a TMA stride


@pytest.mark.slow
def test_lean_body_widens_once_and_drops_the_clamp():
    s = Fu.rmsnorm_rope_fp8(16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6, 4, True).get_kernel_source()
    s = s[s.index("__global__ void __launch_bounds__"):]
    assert "__launch_bounds__(256, 4)" in s
    assert "float xf[32];" in s  # the row, widened to fp32 once, reused by every later step
    assert s.count("fabsf(") == 4 and "0x0p+0f/*0.000000e+00*/ - " not in s  # amax over |y|, no 0 - y
    assert "clamp" not in s and "__NV_SATFINITE, __NV_E4M3" in s  # the e4m3 cast saturates by itself
    assert "tl::AllReduce<tl::MaxOp, 8, 1, 0" in s and "*(fp8_e4_16_t*)(Q + " in s


@pytest.fixture(scope="module")
def vec_src():
    out = {}
    for name, args in (("full", (16384, 4096, 128, 128, "bfloat16", 128, 1, 8, 1e-6)),
                       ("ragged", (37, 4096, 128, 128, "bfloat16", 128, 2, 8, 1e-6)),
                       ("seg16", (16384, 4096, 128, 128, "bfloat16", 128, 1, 16, 1e-6)),
                       ("fp16", (37, 4096, 64, 128, "float16", 128, 2, 8, 1e-6))):
        s = Fu.rmsnorm_rope_fp8_vec(*args).get_kernel_source()
        out[name] = s[s.index("__global__ void __launch_bounds__"):]
    return out


@pytest.mark.slow
def test_vec_schedule_has_one_barrier_and_no_shared_tree(vec_src):
    for s in vec_src.values():
        assert s.count("__syncthreads()") == 1 and "tl::AllReduce" not in s and "workspace" not in s
        assert "tl::warp_reduce_sum(" in s  # per-warp sum, one value per warp in shared memory
        assert "*(uint4*)(xl + " in s and "= *(uint4*)(X + " in s  # 16-byte loads of 8 channels
        assert "tl::fast_rcp(sc[0])" in s and "__NV_SATFINITE, __NV_E4M3" in s
    # 128 threads x 8 channels per chunk: lane t holds channels 1024c + 8t .. + 8 (c < 4)
    assert "(c * 1024)) + (((int)threadIdx.x) * 8))" in vec_src["full"]
    assert "*(fp8_e4_8_t*)(Q + " in vec_src["full"] and "*(fp8_e4_16_t*)(Q + " in vec_src["seg16"]


@pytest.mark.slow
def test_vec_schedule_unpacks_bf16_by_shift_and_mask(vec_src):
    for name in ("full", "ragged", "seg16"):
        s = vec_src[name]
        # x, w and the rounded y1/y2: each 32-bit word of two bf16 -> (w << 16, w & 0xffff0000)
        assert s.count("<< (uint)16") == s.count("& (uint)4294901760") >= 3
        assert "__bfloat1622float2" not in s
    assert "<< (uint)16" not in vec_src["fp16"]  # fp16 keeps the plain conversion


@pytest.mark.slow
def test_vec_schedule_rope_partner_and_group_amax_are_shuffles(vec_src):
    s = vec_src["full"]
    # R = 128 over 8-channel lanes: the tail is lanes 16..31 of the row's last warp, the
    # partner 64 channels = 8 lanes away; a 128-channel group is 16 lanes: shuffles 8, 4, 2, 1
    assert "if ((((int)threadIdx.x) >> 5) == 3)" in s
    assert "__shfl_xor_sync((uint)4294967295, xf[(v_2 + 24)], 8, 32)" in s
    assert "if (16 <= (((int)threadIdx.x) & 31))" in s
    assert "__shfl_xor_sync((uint)4294967295, am[0], (8 >> s), 32)" in s and "s < 4" in s
    # ragged: two tokens per block, the surplus one is recomputed and never stored
    r = vec_src["ragged"]
    assert "min(((((int)blockIdx.x) * 2) + (((int)threadIdx.x) >> 7)), 36)" in r
    assert "if (((((int)blockIdx.x) * 2) + (((int)threadIdx.x) >> 7)) < 37)" in r


def test_vec_supported_shapes():
    assert Fu.vec_supported(4096, 128, 128) and Fu.vec_supported(4096, 128, 128, tpr=256)
    assert Fu.vec_supported(4096, 128, 128, seg=16)
    assert not Fu.vec_supported(4096, 128, 128, tpr=32)  # 128 channels per lane: too many registers
    assert not Fu.vec_supported(4000, 128, 128)  # N % (tpr * seg)
    assert not Fu.vec_supported(4096, 512, 128)  # the tail would span two warps
    assert not Fu.vec_supported(4096, 128, 96)  # group not a power of two
    assert not Fu.vec_supported(4096, 128, 128, "float32")
    with pytest.raises(AssertionError):
        Fu.rmsnorm_rope_fp8_vec(64, 4000, 128, 128, "bfloat16", 128, 1, 8, 1e-6)


@pytest.mark.slow
def test_vecp_prefetches_the_next_tokens_with_cp_async():
    s = Fu.rmsnorm_rope_fp8_vecp(37, 4096, 128, 128, "bfloat16", 128, 8, 4, 3, 1e-6, 8).get_kernel_source()
    s = s[s.index("__global__ void __launch_bounds__"):]
    assert "__launch_bounds__(128, 8)" in s
    # 4 chunks of 16 bytes per lane and token: 2 tokens in the prologue, 1 per iteration
    assert s.count("tl::cp_async_gs<16>(") == 2 and s.count("tl::cp_async_commit()") == 2
    assert "tl::cp_async_wait<2>()" in s  # stages=3: two tokens stay in flight
    assert "((i + 2) % 3) * 4096" in s  # the ring slot the next fetch fills
    assert "min((((((int)blockIdx.x) * 4) + i) + 2), 36)" in s  # fetches past the end are clamped
    assert "if (((((int)blockIdx.x) * 4) + i) < 37) {" in s  # a ragged block stops early
    assert "tl::warp_reduce_sum(" in s and "tl::AllReduce" not in s
    assert "<< (uint)16" in s and "__NV_SATFINITE, __NV_E4M3" in s
