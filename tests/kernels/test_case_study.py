"""Chapter 28 design case (QK-norm + RoPE + FP8): CPU checks of the reference, the
three compiled designs (sm_90a source) and their agreement with the ledger."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tilelang")

from kernels import case_study as cs  # noqa: E402
from measure.suites.case_study import ledger_bytes, ledger_design  # noqa: E402

H = cs.Q_HEADS + cs.KV_HEADS


@pytest.fixture(scope="module")
def kernels():
    return {d: cs.get_kernel(d, cs.TOKENS) for d in cs.DESIGNS}


def _complex_reference(x, w, cos, sin, q_heads=cs.Q_HEADS, eps=cs.NORM_EPS):
    """Independent formulation: per-row loop, RoPE as a complex product of (i, i+64)."""
    T_, H_, D = x.shape
    half = D // 2
    z = torch.empty(T_, H_, D, dtype=torch.float64)
    for t in range(T_):
        for h in range(H_):
            v = x[t, h].double()
            y = v / torch.sqrt((v * v).mean() + eps) * w[0 if h < q_heads else 1].double()
            c = torch.complex(y[:half], y[half:]) * torch.complex(cos[t, :half].double(), sin[t, :half].double())
            z[t, h, :half], z[t, h, half:] = c.real, c.imag
    return z


def test_reference_matches_an_independent_formulation():
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(3, H, 128, generator=g) * 2).bfloat16()
    w = (torch.randn(2, 128, generator=g) * 0.5 + 1).bfloat16()
    cos, sin = cs.rope_tables(3)
    z, scale, q8 = cs.reference(x, w, cos, sin)
    zc = _complex_reference(x, w, cos, sin)
    torch.testing.assert_close(z.double(), zc, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(scale.double(), zc.abs().amax(-1) / 448, rtol=1e-5, atol=0)
    # every row uses the full fp8 range once, and the k heads use the second weight
    assert torch.allclose(q8.float().abs().amax(-1), torch.full((3, H), 448.0))
    w2 = w.clone()
    w2[1] = w2[1] * 2
    z2, _, _ = cs.reference(x, w2, cos, sin)
    torch.testing.assert_close(z2[:, : cs.Q_HEADS], z[:, : cs.Q_HEADS])
    torch.testing.assert_close(z2[:, cs.Q_HEADS :], 2 * z[:, cs.Q_HEADS :], rtol=1e-2, atol=1e-3)


def test_rope_tables_are_neox_and_position_zero_is_identity():
    cos, sin = cs.rope_tables(5)
    assert cos.shape == (5, 128) and cos.dtype == torch.float32
    assert torch.equal(cos[:, :64], cos[:, 64:]) and torch.equal(sin[:, :64], sin[:, 64:])
    assert torch.all(cos[0] == 1) and torch.all(sin[0] == 0)


@pytest.mark.slow
def test_designs_differ_only_in_rows_per_block_and_match_the_ledger_grid(kernels):
    for d, k in kernels.items():
        info = cs.launch_of(k)
        led = ledger_design(d)
        assert info["grid"] == led.grid, d
        assert led.rows_per_block == (H if d == "C" else cs.DESIGNS[d][0])
        assert info["threads"] == cs.DESIGNS[d][1]
    assert [ledger_design(d).grid for d in "ABC"] == [163840, 20480, 4096]


@pytest.mark.slow
def test_each_block_stages_its_lookups_exactly_once(kernels):
    for d, k in kernels.items():
        src = k.get_kernel_source()
        body = src[src.index("main_kernel(", src.index("__launch_bounds__")):]
        # one load statement each for the cos row, the sin row and the weights, before any loop
        first_loop = body.find("for (")
        for name in (r"COS\[", r"SIN\[", r"\bW\[|\(W \+ "):
            hits = [m.start() for m in re.finditer(name, body)]
            assert len(hits) == 1, (d, name, len(hits))
            assert first_loop == -1 or hits[0] < first_loop, (d, name)
        assert "__nv_cvt_float2_to_fp8x2" in src or "(fp8_e4_t)" in src
        assert "tl::AllReduce<tl::SumOp" in src and "tl::AllReduce<tl::MaxOp" in src
        assert "rsqrtf" in src


@pytest.mark.slow
def test_shared_memory_grows_with_rows(kernels):
    smem = {d: cs.launch_of(k)["shared_bytes"] for d, k in kernels.items()}
    # weights (512 B) + cos/sin rows (1 KiB) + the fp32 normalised rows
    for d, k in kernels.items():
        rows = H if d == "C" else cs.DESIGNS[d][0]
        assert smem[d] == 512 + 1024 + rows * 128 * 4, d
    assert smem["A"] < smem["B"] < smem["C"] < 48 * 1024


def test_ledger_bytes_are_the_books_numbers():
    mb = {d: ledger_bytes(d)[0] / 1e6 for d in "ABC"}
    assert round(mb["A"], 2) == 315.23 and round(mb["B"], 2) == 95.03 and round(mb["C"], 2) == 69.86
    from ledger import case_study as lc

    assert round(lc.ideal_bytes() / 1e6, 2) == 67.76
    assert ledger_bytes("A")[1] == lc.case_flops()


def test_bad_inputs_raise_value_error():
    x = torch.zeros(2, H, 128, dtype=torch.bfloat16)
    w = torch.zeros(2, 128, dtype=torch.bfloat16)
    cos, sin = cs.rope_tables(2)
    with pytest.raises(ValueError, match="dtype"):
        cs.check_inputs(x.float(), w, cos, sin)
    with pytest.raises(ValueError, match="head_dim"):
        cs.check_inputs(torch.zeros(2, H, 64, dtype=torch.bfloat16), w, cos, sin)
    with pytest.raises(ValueError, match="cos"):
        cs.check_inputs(x, w, cos[:1], sin)
    with pytest.raises(ValueError, match="device"):
        cs.check_inputs(x, w, cos, sin)  # CPU tensors: the kernels need CUDA
    with pytest.raises(ValueError, match="divide heads"):
        cs.check_config(40, 32, 128, 16, 128)
    with pytest.raises(ValueError, match="q_heads"):
        cs.check_config(40, 32, 128, 5, 128)  # 5 divides 40 but a block would span q and k
    with pytest.raises(ValueError, match="threads"):
        cs.check_config(40, 32, 128, 1, 256)
    with pytest.raises(ValueError, match="design"):
        cs.get_kernel("D", 16)
