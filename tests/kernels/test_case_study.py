"""Chapter 28 design case (QK-norm + RoPE + FP8): CPU checks of the reference, the
three compiled designs (sm_90a source) and their agreement with the ledger."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tilelang")

from kernels import case_study as cs  # noqa: E402

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


def test_designs_differ_only_in_rows_per_block_and_match_the_ledger_grid(kernels):
    for d, k in kernels.items():
        info = cs.launch_of(k)
        led = cs.ledger_design(d)
        assert info["grid"] == led.grid, d
        assert led.rows_per_block == (H if d == "C" else cs.DESIGNS[d][0])
        assert info["threads"] == cs.DESIGNS[d][1]
    assert [cs.ledger_design(d).grid for d in "ABC"] == [163840, 20480, 4096]


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


def test_shared_memory_grows_with_rows(kernels):
    smem = {d: cs.launch_of(k)["shared_bytes"] for d, k in kernels.items()}
    # weights (512 B) + cos/sin rows (1 KiB) + the fp32 normalised rows
    for d, k in kernels.items():
        rows = H if d == "C" else cs.DESIGNS[d][0]
        assert smem[d] == 512 + 1024 + rows * 128 * 4, d
    assert smem["A"] < smem["B"] < smem["C"] < 48 * 1024


def test_ledger_bytes_are_the_books_numbers():
    mb = {d: cs.ledger_bytes(d)[0] / 1e6 for d in "ABC"}
    assert round(mb["A"], 2) == 315.23 and round(mb["B"], 2) == 95.03 and round(mb["C"], 2) == 69.86
    from ledger import case_study as lc

    assert round(lc.ideal_bytes() / 1e6, 2) == 67.76
    assert cs.ledger_bytes("A")[1] == lc.case_flops()


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


# ---------------------------------------------------------------- the ncu script's parser
def _fake_ncu_csv(long_form: bool = True) -> str:
    from kernels import ncu_case as nc

    grids = {"calibration": 65536, "A": 163840, "B": 20480, "C": 4096}
    dram = {"calibration": (67.2e6, 67.1e6), "A": (48.0e6, 21.7e6), "B": (47.5e6, 21.7e6), "C": (47.1e6, 21.6e6)}
    l2 = {"calibration": 134.4e6, "A": 330e6, "B": 100e6, "C": 72e6}
    ns = {"calibration": 33000, "A": 61000, "B": 21000, "C": 19000}
    head = ['"ID"', '"Process ID"', '"Kernel Name"', '"Block Size"', '"Grid Size"']
    lines = ["==PROF== Connected to process 123", "[ncu_case] program output"]
    if long_form:
        lines.append(",".join(head + ['"Section Name"', '"Metric Name"', '"Metric Unit"', '"Metric Value"']))
        for i, n in enumerate(nc.ORDER):
            vals = {"dram__bytes_read.sum": dram[n][0], "dram__bytes_write.sum": dram[n][1],
                    "gpu__time_duration.sum": ns[n], "lts__t_bytes.sum": l2[n], "launch__grid_size": grids[n]}
            for m, v in vals.items():
                lines.append(f'"{i}","123","main_kernel","(128, 1, 1)","({grids[n]}, 1, 1)","Command line profiler '
                             f'metrics","{m}","byte","{v:,.0f}"')
    else:
        ms = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "launch__grid_size"]
        lines.append(",".join(head + [f'"{m}"' for m in ms]))
        lines.append(",".join(['""'] * len(head) + ['"byte"', '"byte"', '"nsecond"', '""']))
        for i, n in enumerate(nc.ORDER):
            vals = [dram[n][0], dram[n][1], ns[n], grids[n]]
            lines.append(f'"{i}","123","main_kernel","(128, 1, 1)","({grids[n]}, 1, 1)",'
                         + ",".join(f'"{v:.0f}"' for v in vals))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("long_form", [True, False])
def test_ncu_parser_puts_measured_bytes_next_to_the_ledger(long_form):
    from kernels import ncu_case as nc

    s = nc.summarize(nc.read_csv(_fake_ncu_csv(long_form)), {"device": "fake"})
    a, c = s["designs"]["A"], s["designs"]["C"]
    assert a["dram_mb"] == pytest.approx(69.7) and a["ledger_mb"] == pytest.approx(315.228160)
    assert a["measured_over_ledger"] == pytest.approx(69.7 / 315.22816)
    assert c["measured_over_ideal"] == pytest.approx(68.7 / 67.76, rel=1e-3)
    assert a["time_us"] == pytest.approx(61.0) and s["time_ratio_A_over_C"] == pytest.approx(61 / 19)
    assert s["calibration"]["expected_mb_each_way"] == pytest.approx(67.108864)
    if long_form:
        assert a["l2_over_ledger"] == pytest.approx(330 / 315.22816)


def test_ncu_parser_rejects_a_mixed_up_order():
    from kernels import ncu_case as nc

    ks = nc.read_csv(_fake_ncu_csv())
    ks[1], ks[3] = ks[3], ks[1]
    with pytest.raises(ValueError, match="order"):
        nc.summarize(ks)
    with pytest.raises(ValueError, match="expected 4"):
        nc.summarize(ks[:3])
    with pytest.raises(ValueError, match="header"):
        nc.read_csv("no csv here")


def test_ncu_command_profiles_only_the_marked_range():
    from kernels import ncu_case as nc

    cmd = nc.ncu_command("ncu", "log.csv")
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--print-units") + 1] == "base"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert {"dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"} <= set(metrics)
    assert cmd[-2:] == ["kernels.ncu_case", "--child"]


def test_ncu_parse_mode_writes_the_results_json(tmp_path, capsys):
    import json

    from kernels import ncu_case as nc

    csv_path = tmp_path / "ncu_case.csv"
    csv_path.write_text(_fake_ncu_csv())
    assert nc.main(["--parse", str(csv_path), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "ncu_case.json").read_text())
    assert set(data["designs"]) == {"A", "B", "C"} and data["provenance"]["parsed_from"].endswith("ncu_case.csv")
    assert "design A: DRAM 69.70 MB" in capsys.readouterr().out
    rows = cs.design_rows(data, {})
    assert rows[0]["dram_mb"] == pytest.approx(69.7) and rows[2]["ledger_mb"] == pytest.approx(69.861376)
