"""RoPE: both pairing conventions, references against independent formulas, lowering."""
import pytest
import torch

from kernels import rope as R



def test_reference_interleaved_matches_complex_multiplication():
    S, H, D = 5, 2, 16
    x = torch.randn(S, H, D)
    cos, sin = R.rope_tables(S, D)
    z = torch.view_as_complex(x.view(S, H, D // 2, 2))
    rot = torch.view_as_real(z * torch.complex(cos, sin)[:, None, :]).flatten(-2)
    torch.testing.assert_close(R.ref_rope(x, cos, sin, D, "interleaved"), rot)


def test_reference_neox_matches_rotate_half():
    S, H, D = 5, 2, 16
    x = torch.randn(S, H, D)
    cos, sin = R.rope_tables(S, D)
    c = torch.cat([cos, cos], -1)[:, None, :]
    s = torch.cat([sin, sin], -1)[:, None, :]
    rotate_half = torch.cat([-x[..., D // 2:], x[..., : D // 2]], -1)
    torch.testing.assert_close(R.ref_rope(x, cos, sin, D, "neox"), x * c + rotate_half * s)


def test_partial_rope_leaves_leading_channels_and_self_checks():
    x = torch.randn(3, 2, 32)
    one, zero = torch.ones(3, 8), torch.zeros(3, 8)
    for style in R.STYLES:
        assert torch.equal(R.ref_rope(x, one, zero, 16, style), x)  # c=1, s=0: identity
        y = R.ref_rope(x, zero, one, 16, style)
        assert torch.equal(y[..., :16], x[..., :16])
    assert not torch.equal(R.ref_rope(x, zero, one, 16, "neox"), R.ref_rope(x, zero, one, 16, "interleaved"))


@pytest.fixture(scope="module")
def src():
    out = {}
    for style in R.STYLES:
        for name, k in (("naive", R.rope_naive(64, 8, 128, 64, style, "float16", 256)),
                        ("blocked", R.rope_blocked(16384, 32, 128, 128, style, "float16", 2, 256))):
            s = k.get_kernel_source()
            out[style, name] = s[s.index("__global__ void __launch_bounds__"):]
    s = R.rope_blocked(9, 4, 96, 32, "neox", "float16", 4, R._threads_for(4, 4, 96, 32)).get_kernel_source()
    out["ragged"] = s
    return out


@pytest.mark.slow
def test_blocked_stages_through_shared_and_stores_with_tma(src):
    for style in R.STYLES:
        s = src[style, "blocked"]
        assert s.count("__syncthreads()") == 2  # after staging, before the store
        assert "*(uint4*)(((half_t*)xs)" in s   # x staged with 16-byte copies
        assert "tl::tma_store(" in s            # the output tile leaves in one TMA store


@pytest.mark.slow
def test_neox_pairs_vectorize_and_interleaved_pairs_do_not(src):
    neox, inter = src["neox", "blocked"], src["interleaved", "blocked"]
    assert "float4 a = " in neox and "*(float4*)(((float*)cs)" in neox
    assert "float4" not in inter


@pytest.mark.slow
def test_naive_reads_partner_from_global_with_scalar_accesses(src):
    for style in R.STYLES:
        s = src[style, "naive"]
        assert "uint4" not in s and "__shared__" not in s


@pytest.mark.slow
def test_ragged_tile_compiles_with_bounds(src):
    assert "< 9" in src["ragged"]


def test_blocked_tiling_constraints():
    assert R._threads_for(2, 32, 128, 128) == 256
    assert R._threads_for(4, 1, 4096, 128) == 256
    assert R._threads_for(2, 1, 4096, 128) == 128
    with pytest.raises(ValueError, match="power of two"):
        R._threads_for(4, 3, 96, 32)
    with pytest.raises(ValueError, match="multiples of the thread count"):
        R._threads_for(1, 3, 10, 2)


F = lambda *s, dt=torch.float32: torch.zeros(*s, dtype=dt)  # noqa: E731
H = lambda *s: torch.zeros(*s, dtype=torch.float16)  # noqa: E731


@pytest.mark.parametrize("make, match", [
    (lambda: R.rope(H(4, 2, 16), F(4, 8), F(4, 8), 16, "gptj"), "style"),
    (lambda: R.rope(F(4, 2, 16), F(4, 8), F(4, 8), 16), "dtype"),
    (lambda: R.rope(H(4, 16), F(4, 8), F(4, 8), 16), "dimension"),
    (lambda: R.rope(H(4, 2, 16), F(4, 8), F(4, 8), 15), "even"),
    (lambda: R.rope(H(4, 2, 16), F(4, 8), F(4, 8), 32), "rope_dim"),
    (lambda: R.rope(H(4, 2, 16), F(4, 4), F(4, 8), 16), "cos: shape"),
    (lambda: R.rope(H(4, 2, 16), F(4, 8, dt=torch.float16), F(4, 8), 16), "cos: dtype"),
    (lambda: R.rope(H(4, 2, 16), F(8, 4).t(), F(4, 8), 16), "contiguous"),
    (lambda: R.rope(H(4, 2, 16), F(4, 8), F(4, 8), 16), "cuda"),
    (lambda: R.rope(H(4, 3, 16), F(4, 8), F(4, 8), 16, blk_s=2), "power of two"),
    (lambda: R.rope(H(4, 2, 2), F(4, 1), F(4, 1), 2, blk_s=1), "thread count"),
])
def test_bad_input_raises_value_error_before_launch(make, match):
    with pytest.raises(ValueError, match=match):
        make()
