"""Per-token FP8 quantization: reference semantics and the generated CUDA."""
import re

import pytest
import torch

from kernels import quant as Q



@pytest.fixture(scope="module")
def src():
    k = Q.quant_fp8(16384, 4096, 128, "bfloat16", 4, 256)
    s = k.get_kernel_source()
    return s[s.index("__global__ void __launch_bounds__"):]


@pytest.mark.slow
def test_group_amax_is_an_8_lane_allreduce_without_workspace(src):
    # a group of 128 is spread over 8 threads: shuffle-only AllReduce, no shared workspace
    assert "tl::AllReduce<tl::MaxOp, 8, 1, 0, tl::NamedBarrier<256>>::run(amax[i_1])" in src
    assert "workspace" not in src


@pytest.mark.slow
def test_cast_is_saturating_e4m3_and_stores_are_16_bytes(src):
    assert "__nv_cvt_float2_to_fp8x2" in src and "__NV_SATFINITE, __NV_E4M3" in src
    assert "*(fp8_e4_16_t*)(Q +" in src
    assert "*(uint4*)(x + (i * 8)) = *(uint4*)(X +" in src


@pytest.mark.slow
def test_one_division_per_group_then_a_multiply_per_element(src):
    # blk_m=4: 4 groups per thread -> 4 scales (amax / 448) and 4 reciprocals, 8 divisions;
    # the 64 elements of the thread are multiplied (float4 products), never divided
    assert "inv[" in src and "make_float4(inv[" in src
    assert re.search(r"__\d+\.w = \(__\d+\.w\*v__\d+\.w\)", src)
    assert src.count("/v__") == 8, src.count("/v__")


def test_reference_round_trip():
    x = torch.randn(8, 512, dtype=torch.bfloat16) * 5
    q, s = Q.ref_quant_fp8(x, 128)
    assert q.dtype == torch.float8_e4m3fn and s.shape == (8, 4)
    back = q.float().view(8, 4, 128) * s[..., None]
    amax = x.float().view(8, 4, 128).abs().amax(-1, keepdim=True)
    assert ((back - x.float().view(8, 4, 128)).abs() <= amax / 16 + 1e-6).all()
    assert torch.allclose(q.float().abs().view(8, 4, 128).amax(-1), torch.full((8, 4), 448.0))


@pytest.mark.parametrize("make, match", [
    (lambda: Q.quantize_fp8(torch.zeros(4, 500, dtype=torch.bfloat16)), "multiple of group"),
    (lambda: Q.quantize_fp8(torch.zeros(4, 512, dtype=torch.float32)), "dtype"),
    (lambda: Q.quantize_fp8(torch.zeros(4, 512, dtype=torch.bfloat16), 128,
                            torch.zeros(4, 512, dtype=torch.float16)), "q: dtype"),
    (lambda: Q.quantize_fp8(torch.zeros(4, 512, dtype=torch.bfloat16), 128, None,
                            torch.zeros(4, 3)), "scale: shape"),
    (lambda: Q.quantize_fp8(torch.zeros(4, 512, dtype=torch.bfloat16)), "cuda"),
    (lambda: Q.quantize_fp8(torch.zeros(4, 65536, dtype=torch.bfloat16)), "per thread"),
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()
