"""The Ascend pipe model reads tilelang's own EstimateLatency constants."""
import math

import pytest

from ledger import ascend


def test_header_found_in_installed_tilelang():
    p = ascend.find_header()
    assert p.name == "estimate_latency.h" and "tilelang" in p.parts
    params = ascend.latency_params()
    for name in ascend.NEEDED:
        assert name in params


def test_draft_constants():
    p = ascend.latency_params()
    assert (p["cube_throughput_fp16"], p["cube_throughput_bf16"], p["cube_throughput_fp32"], p["cube_throughput_fp8"]) == (8192, 8192, 512, 16384)
    assert (p["cube_base_latency"], p["cube_unit_m"], p["aic_mte2_to_l1_bandwidth"]) == (8, 16, 100)
    assert (p["mte2_gm_to_l1_base_latency"], p["mte2_gm_to_l1_min_ii"], p["l1_to_l0a_bandwidth"]) == (190, 64, 256)
    assert (p["mul_throughput"], p["div_throughput"], p["special_func_throughput"]) == (51, 13, 8)


def test_example_and_threshold():
    ii = ascend.pipe_ii(256, 224, 128)
    assert (ii.cube, ii.mte2, ii.mte1) == (1792, 1229, 256)
    assert ii.binding == "Cube" and round(ii.latency_over_period, 3) == 1.004
    assert ascend.min_stages(ii) == 3 and ascend.min_stages(ii, with_base=False) == 2
    side = ascend.square_threshold()
    assert side == 164
    assert ascend.pipe_ii(side, side, 128).binding == "Cube"
    assert ascend.pipe_ii(side - 4, side - 4, 128).binding == "MTE2"
    # alignment is charged: N=200 costs like N=208
    assert ascend.pipe_ii(128, 200, 128).cube == ascend.pipe_ii(128, 208, 128).cube


def test_parsed_constants_are_really_used(tmp_path, monkeypatch):
    text = ascend.find_header().read_text()
    doubled = text.replace("int64_t cube_throughput_fp16{8192};", "int64_t cube_throughput_fp16{16384};")
    assert doubled != text
    fake = tmp_path / "estimate_latency.h"
    fake.write_text(doubled)
    monkeypatch.setenv("TILELANG_ESTIMATE_LATENCY_H", str(fake))
    assert ascend.pipe_ii(256, 224, 128).cube == 896
    assert ascend.square_threshold() == math.ceil(16384 * 2 / 100)


def test_missing_header_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_ESTIMATE_LATENCY_H", str(tmp_path / "nope.h"))
    with pytest.raises(ascend.AscendHeaderError, match="not a file"):
        ascend.latency_params()
    monkeypatch.delenv("TILELANG_ESTIMATE_LATENCY_H")
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ascend.AscendHeaderError, match="cannot find"):
        ascend.find_header()
    with pytest.raises(ascend.AscendHeaderError, match="no 'int64_t"):
        ascend.parse_header("struct X {};")


def test_bad_input():
    with pytest.raises(ValueError, match="block_k"):
        ascend.pipe_ii(16, 16, 0)
    with pytest.raises(ValueError, match="dtype"):
        ascend.pipe_ii(16, 16, 16, "int3")
