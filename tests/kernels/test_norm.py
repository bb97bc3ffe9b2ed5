"""Chapter 13 RMSNorm / LayerNorm: references and lowering facts on the generated CUDA."""
import re

import pytest
import torch

from kernels import norm as Nm



def body(kernel) -> str:
    src = kernel.get_kernel_source()
    return src[src.index("__global__ void __launch_bounds__"):]


@pytest.fixture(scope="module")
def src():
    return {
        "rows": body(Nm.rmsnorm_rows(256, 4096, "float16", 4, 256, 1e-6)),
        "rows_ragged": body(Nm.rmsnorm_rows(37, 4000, "bfloat16", 4, 256, 1e-6)),
        "shared": body(Nm.rmsnorm_shared(19, 4096, "float16", 256, 1e-6)),
        "splitk": body(Nm.rmsnorm_splitk(5, 10000, "bfloat16", 1, 2048, 256, 1e-6)),
        "layernorm": body(Nm.layernorm_rows(29, 4000, "bfloat16", 2, 256, 1e-5)),
        "rows32": body(Nm.rmsnorm_rows(64, 1024, "float16", 1, 32, 1e-6)),
    }


@pytest.mark.slow
def test_reduction_is_thread_local_then_allreduce_with_shared_workspace(src):
    s = src["rows"]
    assert "for (int rv = 0; rv < 16; ++rv)" in s  # per-thread partial sums first
    assert "tl::AllReduce<tl::SumOp, 256, 1, 0, tl::NamedBarrier<256>>::run(ss[i_3], (&(workspace[0])))" in s
    assert "extern __shared__ __align__(1024) float workspace[];" in s


@pytest.mark.slow
def test_reduction_within_one_warp_needs_no_workspace(src):
    s = src["rows32"]
    assert re.search(r"tl::AllReduce<tl::SumOp, 32, 1, 0, [^>]*>?>::run\(ss\[0\]\)", s), s
    assert "workspace" not in s


@pytest.mark.slow
def test_rows_are_loaded_with_128_bit_accesses(src):
    assert "*(uint4*)(x + (i * 8)) = *(uint4*)(X +" in src["rows"]


@pytest.mark.slow
def test_ragged_row_is_zero_padded_and_divided_by_n(src):
    s = src["rows_ragged"]
    assert "< 125" in s and "< 37" in s          # column (in 16-byte units) and row bounds
    assert "broadcast_var = bfloat16_t(0x0p+0f" in s  # padding loads zeros
    assert "4.000000e+03" in s                   # the sum is divided by N, not the padded width


@pytest.mark.slow
def test_splitk_second_pass_walks_tiles_in_reverse(src):
    s = src["splitk"]
    loops = re.findall(r"for \(int (k\w*) = 0; \1 < 5; \+\+\1\)", s)
    assert len(loops) == 2, loops
    assert re.search(r"\+ 8192\) - \(" + loops[1] + r" \* 2048\)\)", s)  # tile (4 - k): reversed


@pytest.mark.slow
def test_layernorm_reduces_twice(src):
    assert src["layernorm"].count("tl::AllReduce<tl::SumOp") == 2


def test_references():
    x = torch.randn(4, 64) * 3 + 1
    w = torch.randn(64)
    y = Nm.ref_rmsnorm(x, w)
    want = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(y, want)
    y2 = Nm.ref_layernorm(x, w, None, 1e-5)
    torch.testing.assert_close(y2, torch.nn.functional.layer_norm(x, (64,), w, None, 1e-5), atol=1e-5, rtol=1e-5)


X = lambda *s, dt=torch.float16: torch.zeros(*s, dtype=dt)  # noqa: E731


@pytest.mark.parametrize("make, match", [
    (lambda: Nm.rmsnorm(X(4, 64, dt=torch.int8)), "dtype"),
    (lambda: Nm.rmsnorm(X(64)), "dimension"),
    (lambda: Nm.rmsnorm(X(4, 64), X(32)), "shape"),
    (lambda: Nm.rmsnorm(X(4, 64), X(64, dt=torch.float32)), "dtype"),
    (lambda: Nm.rmsnorm(X(64, 4).t()), "contiguous"),
    (lambda: Nm.rmsnorm(X(4, 64)), "cuda"),
    (lambda: Nm.rmsnorm(X(4, 65536)), "splitk"),
    (lambda: Nm.rmsnorm(X(4, 64), schedule="fast"), "schedule"),
    (lambda: Nm.layernorm(X(4, 64), None, X(63)), "shape"),
    (lambda: Nm.layernorm(X(0, 64)), "at least one"),
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.fixture(scope="module")
def warp_src():
    return body(Nm.rmsnorm_warp(37, 4096, "float16", 4, 1e-6, 160))


@pytest.mark.slow
def test_warp_schedule_one_row_per_warp_shuffles_only(warp_src):
    s = warp_src
    # lane l holds [8l + 256j, +8): 16 uint4 loads per lane, each warp instruction 512 bytes
    assert "half_t xl[128];" in s
    assert "*(uint4*)(xl + (j * 8)) = *(uint4*)(X + " in s and "(j * 256)" in s and "& 31) * 8)" in s
    assert "tl::warp_reduce_sum(rs[0])" in s  # the row's sum: warp shuffles only
    assert "AllReduce" not in s and "workspace" not in s
    # the only barrier stages the weight once per block, outside any loop over the row
    assert s.count("__syncthreads()") == 1
    assert "*(uint4*)(Y + " in s  # 16-byte stores
    # ragged M: surplus warps load row M-1 (clamped) and store nothing
    assert "min(" in s and "< 37)" in s
    assert "__launch_bounds__(128, 3)" in s  # max_regs=160 -> 3 blocks of 128 threads per SM


@pytest.mark.slow
def test_min_blocks_caps_registers_through_launch_bounds():
    assert "__launch_bounds__(256, 5)" in body(Nm.rmsnorm_rows(256, 4096, "float16", 2, 256, 1e-6, 5))
    assert "__launch_bounds__(256, 1)" in body(Nm.rmsnorm_rows(256, 4096, "float16", 2, 256, 1e-6))


@pytest.fixture(scope="module")
def pipe_src():
    return {"full": body(Nm.rmsnorm_pipe(16384, 4096, "float16", 2, 4, 132, 256, 1e-6)),
            "ragged": body(Nm.rmsnorm_pipe(37, 4096, "bfloat16", 2, 4, 132, 256, 1e-6))}


@pytest.mark.slow
def test_pipe_schedule_is_a_warp_specialized_tma_ring(pipe_src):
    s = pipe_src["full"]
    # T.Pipelined on sm_90a: one producer warp group (128 threads, registers given back)
    # plus the 256 consumer threads; one block per SM
    assert "__launch_bounds__(384, 1)" in s
    assert "tl::warpgroup_reg_dealloc<24>()" in s and "tl::warpgroup_reg_alloc<240>()" in s
    # the producer: one TMA load per tile of 2 rows x 4096 fp16 = 16384 bytes, 4 ring slots
    assert "tl::tma_load(X_desc" in s and "arrive_and_expect_tx(16384)" in s
    assert "(it & 3)" in s
    # persistent: 16384 rows / 2 per tile = 8192 tiles over 132 blocks -> 63 trips
    assert "for (int it = 0; it < 63; ++it)" in s
    # consumers: the tile read from shared in 16-byte vectors, reduced across the 256 threads
    assert "*(uint4*)(x + " in s and "tl::AllReduce<tl::SumOp, 256" in s
    assert "*(uint4*)(Y + " in s


@pytest.mark.slow
def test_pipe_schedule_ragged_rows_are_stored_row_by_row(pipe_src):
    s = pipe_src["ragged"]
    # TMA fills rows past M with zeros; the stores test each row of the tile against M
    assert re.search(r"if \(\(\(\(\(int\)blockIdx.x\) \* 2\) \+ \(i_\d+ >> 1\)\) < 37\)", s)


def test_pipe_supported_shapes():
    assert Nm.pipe_supported(4096, "float16", 1) and Nm.pipe_supported(4096, "bfloat16", 2)
    assert not Nm.pipe_supported(4100, "float16", 2)  # 8200-byte rows: not a TMA stride (16 B)
    assert not Nm.pipe_supported(1024, "float16", 1)  # 1024 elements over 256 threads x 8 per vector
    assert Nm.pipe_supported(1024, "float32", 2)
