"""The Ascend pipe model prices with tilelang 0.1.15's EstimateLatency constants.

The constants are committed in ``ledger.ascend_params``; where tilelang is installed,
they are checked against the header it ships.
"""
import hashlib
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import ascend
from ledger.ascend_params import PARAMS, SOURCE

ROOT = Path(__file__).resolve().parents[2]


def _installed_header() -> Path:
    try:
        return ascend.find_header()
    except ascend.AscendHeaderError as exc:
        pytest.skip(f"tilelang is not installed here, nothing to compare with ({exc})")


def _header_text(params: dict) -> str:
    """A header in the shape of tilelang's, holding ``params``."""
    body = "\n".join(f"  int64_t {k}{{{v}}};" for k, v in params.items())
    return f"#pragma once\nnamespace tvm {{\nnamespace tl {{\nstruct AscendLatencyParams {{\n{body}\n}};\n}}\n}}\n"


def test_committed_constants_name_their_source():
    assert SOURCE["package"] == "tilelang" and SOURCE["version"] == "0.1.15"
    assert SOURCE["path"] == "tilelang/" + ascend.HEADER_RELPATH.as_posix()
    assert len(SOURCE["sha256"]) == 64 and int(SOURCE["sha256"], 16) >= 0
    for name in ascend.NEEDED:
        assert isinstance(PARAMS[name], int), name
    assert ascend.latency_params() == PARAMS
    assert ascend.latency_params() is not PARAMS  # callers get a copy, the data stay as committed


def test_committed_constants_equal_the_installed_header():
    """Runs where tilelang is installed: the committed data are what the header says."""
    hdr = _installed_header()
    assert hdr.name == "estimate_latency.h" and "tilelang" in hdr.parts
    assert hdr.as_posix().endswith(SOURCE["path"])
    assert ascend.latency_params(hdr) == PARAMS
    chk = ascend.check_installed()
    assert chk.differences == {}, f"committed != installed header: {chk.differences}"
    if chk.version == SOURCE["version"]:
        assert hashlib.sha256(hdr.read_bytes()).hexdigest() == SOURCE["sha256"]
    assert chk.ok


def test_check_names_every_field_that_differs(tmp_path):
    changed = dict(PARAMS, cube_throughput_fp16=16384)
    del changed["valu_bandwidth"]
    changed["new_field"] = 7
    fake = tmp_path / "estimate_latency.h"
    fake.write_text(_header_text(changed))
    chk = ascend.check_installed(fake)
    assert chk.differences == {"cube_throughput_fp16": (8192, 16384), "valu_bandwidth": (256, None),
                               "new_field": (None, 7)}
    assert not chk.ok
    fake.write_text(_header_text(PARAMS))
    assert ascend.check_installed(fake).ok


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


def test_parsed_constants_are_really_used(tmp_path):
    fake = tmp_path / "estimate_latency.h"
    fake.write_text(_header_text(dict(PARAMS, cube_throughput_fp16=16384)))
    p = ascend.latency_params(fake)
    assert ascend.pipe_ii(256, 224, 128, params=p).cube == 896
    assert ascend.square_threshold(params=p) == math.ceil(16384 * 2 / 100)
    out = subprocess.run([sys.executable, "-m", "ledger.ascend", "--header", str(fake), "--block", "256", "224", "128"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert str(fake) in out.stdout and " 896 " in out.stdout


def test_missing_header_is_a_clear_error(monkeypatch, tmp_path):
    with pytest.raises(ascend.AscendHeaderError, match="not a file"):
        ascend.latency_params(tmp_path / "nope.h")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ascend.AscendHeaderError, match="cannot find.*does not need it"):
        ascend.find_header()
    with pytest.raises(ascend.AscendHeaderError, match="no 'int64_t"):
        ascend.parse_header("struct X {};")


def test_check_installed_cli():
    out = subprocess.run([sys.executable, "-m", "ledger.ascend", "--check-installed"], cwd=ROOT,
                         capture_output=True, text=True)
    try:
        ascend.find_header()
    except ascend.AscendHeaderError:
        assert out.returncode == 2 and "cannot find" in out.stderr and "Traceback" not in out.stderr
    else:
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.rstrip().endswith("same") and SOURCE["sha256"] in out.stdout


def test_bad_input():
    with pytest.raises(ValueError, match="block_k"):
        ascend.pipe_ii(16, 16, 0)
    with pytest.raises(ValueError, match="dtype"):
        ascend.pipe_ii(16, 16, 16, "int3")
