"""Fused RMSNorm + RoPE (+ FP8): semantics = the chain of three steps; lowering facts."""
import pytest
import torch

from kernels import fused as Fu
from kernels import norm, quant, rope

pytestmark = pytest.mark.slow


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


def test_fused_kernel_reads_x_once_and_reduces_in_shared_workspace(src):
    for s in src.values():
        assert s.count("= *(uint4*)(X +") >= 1
        assert "tl::AllReduce<tl::SumOp, 256" in s and "workspace" in s


def test_rope_rotates_the_shared_tile_in_place_and_the_tile_leaves_by_tma(src):
    s = src["rope"]
    assert "tl::tma_store(" in s and "Y[" in s.split("tl::tma_store(", 1)[1][:40]
    assert "half_t y[" not in s and "bfloat16_t y[" not in s  # no separate output fragment


def test_fp8_variant_adds_a_group_absmax_and_a_saturating_cast(src):
    s = src["fp8"]
    assert "tl::AllReduce<tl::MaxOp" in s
    assert "__NV_SATFINITE, __NV_E4M3" in s
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
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()
