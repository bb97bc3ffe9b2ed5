"""Chapter 13 elementwise kernels: lowering facts pinned on the generated CUDA (sm_90a)."""
import re

import pytest
import torch

from kernels import elementwise as E



def body(kernel) -> str:
    src = kernel.get_kernel_source()
    return src[src.index("__global__ void __launch_bounds__"):]


@pytest.fixture(scope="module")
def src():
    return {
        "per_thread_aligned": body(E.add_per_thread(1 << 16)),
        "per_thread_2047": body(E.add_per_thread(2047)),
        "parallel": body(E.add_parallel(1 << 16)),
        "fragment_aligned": body(E.add_fragment(1 << 16)),
        "scale_cast": body(E.scale_cast(1 << 16)),
        "rmw": body(E.rmw_group_sum(1024)),
    }


@pytest.mark.slow
def test_aligned_add_uses_128_bit_accesses(src):
    s = src["per_thread_aligned"]
    assert s.count("*(uint4*)(A +") == 1 and s.count("*(uint4*)(B +") == 1
    assert "*(uint4*)(C +" in s
    assert "tl::add2" in s  # half2 arithmetic on the loaded vectors


@pytest.mark.slow
def test_ragged_add_is_predicated_scalar_code(src):
    s = src["per_thread_2047"]
    assert "uint4" not in s
    assert "< 2047" in s
    assert re.search(r"C\[.*\] = \(A\[.*\] \+ B\[.*\]\);", s)


@pytest.mark.slow
def test_level1_parallel_threads_is_one_scalar_element_per_thread(src):
    s = src["parallel"]
    assert "uint4" not in s and "for (" not in s
    assert "blockIdx.x) * 256) + ((int)threadIdx.x)" in s


@pytest.mark.slow
def test_fragment_level_copies_whole_vectors(src):
    s = src["fragment_aligned"]
    assert "half_t a[8];" in s and "half_t b[8];" in s
    assert "*(uint4*)(a + 0) = *(uint4*)(A +" in s


@pytest.mark.slow
def test_fp32_to_fp16_cast_is_capped_at_4_lanes(src):
    s = src["scale_cast"]
    # npt=8 is split into 2 x 4 lanes: float4 loads, two half2 conversions, 64-bit stores
    assert "for (int i = 0; i < 2; ++i)" in s
    assert "*(float4*)(X_local_cast_1 + 0) = *(float4*)(X +" in s
    assert s.count("__float22half2_rn") == 2
    assert "*(uint2*)(Y +" in s and "*(uint4*)(Y" not in s


@pytest.mark.slow
def test_read_modify_write_store_is_scalarized(src):
    s = src["rmw"]
    loop = re.search(r"for \(int i_1 = 0; i_1 < 8; \+\+i_1\) \{\s*acc\[0\] = \(acc\[0\] \+ x\[i_1\]\);\s*\}", s)
    assert loop, s
    assert "float4" in s.split("acc[0] = 0x0p+0f")[0]  # the load before it is still vectorized


def test_references():
    a = torch.randn(100, dtype=torch.float16)
    b = torch.randn(100, dtype=torch.float16)
    assert torch.equal(E.ref_add(a, b), (a.float() + b.float()).half())
    x = torch.randn(10)
    assert E.ref_scale_cast(x, 2.0, torch.float16).dtype == torch.float16


@pytest.mark.parametrize("make, match", [
    (lambda: E.add(torch.zeros(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int32)), "dtype"),
    (lambda: E.add(torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.float32)), "dtype"),
    (lambda: E.add(torch.zeros(8, dtype=torch.float16), torch.zeros(9, dtype=torch.float16)), "shape"),
    (lambda: E.add(torch.zeros(2, 4, dtype=torch.float16), torch.zeros(2, 4, dtype=torch.float16)), "dimension"),
    (lambda: E.add(torch.zeros(16, dtype=torch.float16)[::2], torch.zeros(8, dtype=torch.float16)), "contiguous"),
    (lambda: E.add(torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.float16)), "cuda"),
    (lambda: E.add(torch.zeros(0, dtype=torch.float16), torch.zeros(0, dtype=torch.float16)), "at least one"),
    (lambda: E.add(torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.float16), level="x"), "level"),
    (lambda: E.add(torch.zeros(8, dtype=torch.float16), torch.zeros(8, dtype=torch.float16), threads=100), "threads"),
    (lambda: E.scale_to(torch.zeros(8, dtype=torch.float16), 1.0), "dtype"),
    (lambda: E.scale_to(torch.zeros(8), 1.0, torch.float32), "out_dtype"),
    (lambda: E.scale_to(torch.zeros(8), 1.0), "cuda"),
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()
