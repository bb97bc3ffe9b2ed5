"""ledger.machines and ledger.cost: profiles, rules, validation, standard library only."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import cost as C
from ledger import machines as M
from ledger.cost import Cost, dtype_bytes, judge

ROOT = Path(__file__).resolve().parents[2]


# --- machine profiles ------------------------------------------------------------------
def test_h200_calibrated_is_datasheet_times_calibration():
    spec, cal = M.get_machine("h200-spec"), M.get_machine("h200-calibrated")
    assert spec.peak_flops == pytest.approx(989.5e12)
    assert spec.bandwidth == pytest.approx(4800e9)
    # effective = theoretical x calibration, computed from the two fields
    fp16 = cal.compute["tensor_core.fp16"]
    assert fp16.theoretical == spec.compute["tensor_core.fp16"].theoretical
    assert cal.peak_flops == pytest.approx(fp16.theoretical * fp16.calibration)
    assert round(cal.peak_flops / 1e12, 1) == 729.3
    assert round(cal.bandwidth / 1e9, 1) == 4502.4
    assert round(cal.balance) == 162
    assert round(spec.balance, 1) == 206.1


def test_sustained_and_copy_mix_are_lower_than_burst_and_envelope():
    cal, sus = M.get_machine("h200-calibrated"), M.get_machine("h200-sustained")
    assert sus.peak_flops < cal.peak_flops
    assert cal.memory_rate("hbm.copy") < cal.memory_rate("hbm")
    assert cal.memory["hbm.copy"].calibration == 0.8183
    assert sus.compute["tensor_core.fp16"].calibration == 0.6684


def test_chapter28_roofs():
    cal = M.get_machine("h200-calibrated")
    assert round(cal.balance_for("cuda_core.fp32"), 2) == 12.72
    assert round(cal.balance_for("tensor_core.fp8"), 2) == 306.67
    assert round(cal.balance_for(), 2) == 161.97
    assert cal.with_roof("cuda_core.fp32").balance == pytest.approx(cal.balance_for("cuda_core.fp32"))
    assert cal.resource("sms") == 132


def test_h100_balance():
    h = M.get_machine("h100-spec")
    assert round(h.balance) == 333
    assert h.source and h.conditions


def test_every_profile_has_provenance_and_finite_rates():
    for name, m in M.machines().items():
        assert m.source.strip() and m.conditions.strip(), name
        for r in list(m.compute.values()) + list(m.memory.values()):
            assert math.isfinite(r.effective) and r.effective > 0


def test_unknown_machine_and_roof_name_the_argument():
    with pytest.raises(ValueError, match="machine"):
        M.get_machine("no-such-gpu")
    with pytest.raises(ValueError, match="roof"):
        M.get_machine().roof("tensor_core.fp4")
    with pytest.raises(ValueError, match="memory"):
        M.get_machine().memory_rate("l2")


def _write(d: Path, name: str, data: dict) -> Path:
    p = d / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


GOOD = {
    "name": "my-board",
    "description": "a measured board",
    "source": "my microbenchmark",
    "conditions": "one run",
    "compute": {"tensor_core.fp16": {"theoretical_tflops": 100.0, "calibration": 0.5}},
    "memory": {"hbm": {"theoretical_gbs": 1000.0}},
}


def test_user_profile_directory_is_picked_up_everywhere(tmp_path, monkeypatch):
    _write(tmp_path, "mine.json", GOOD)
    monkeypatch.setenv(M.ENV_VAR, str(tmp_path))
    m = M.get_machine("my-board")
    assert m.peak_flops == pytest.approx(50e12) and m.balance == pytest.approx(50.0)
    # the ledgers see it by name
    v = judge(Cost(100e12, 1e9, "x"), "my-board")
    assert v.lower_bound == pytest.approx(2.0)
    from ledger.step_budget import step_budget

    assert step_budget("my-board").machine.name == "my-board"
    # a user profile with a shipped name replaces it
    _write(tmp_path, "override.json", dict(GOOD, name="h100-spec"))
    assert M.get_machine("h100-spec").peak_flops == pytest.approx(50e12)


@pytest.mark.parametrize("patch, field", [
    ({"compute": {"tensor_core.fp16": {"theoretical_tflops": -1}}}, "theoretical_tflops"),
    ({"compute": {"tensor_core.fp16": {"theoretical_tflops": 1, "calibration": 3}}}, "calibration"),
    ({"memory": {}}, "memory"),
    ({"name": "Bad Name"}, "name"),
    ({"source": ""}, "source"),
    ({"default_compute": "cuda_core.fp32"}, "default_compute"),
    ({"bogus": 1}, "unknown field"),
    ({"resources": {"sms": 0}}, "resources.sms"),
])
def test_bad_profiles_name_the_field(tmp_path, monkeypatch, patch, field):
    _write(tmp_path, "bad.json", dict(GOOD, **patch))
    monkeypatch.setenv(M.ENV_VAR, str(tmp_path))
    with pytest.raises(M.MachineError, match=field):
        M.machines()


def test_yaml_is_refused_with_a_reason(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("name: x\n")
    with pytest.raises(M.MachineError, match="JSON"):
        M.load_profile(p)


def test_bad_env_dir_and_duplicate_names(tmp_path, monkeypatch):
    monkeypatch.setenv(M.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(M.MachineError, match=M.ENV_VAR):
        M.machines()
    _write(tmp_path, "a.json", GOOD)
    _write(tmp_path, "b.json", GOOD)
    monkeypatch.setenv(M.ENV_VAR, str(tmp_path))
    with pytest.raises(M.MachineError, match="already defined"):
        M.machines()


# --- cost ------------------------------------------------------------------------------
def test_dtype_table():
    assert dtype_bytes("fp32") == dtype_bytes("float32") == 4
    assert dtype_bytes("bf16") == dtype_bytes("bfloat16") == dtype_bytes("float16") == 2
    assert dtype_bytes("float8_e4m3fn") == dtype_bytes("fp8") == 1
    assert dtype_bytes("int4") == 0.5
    with pytest.raises(ValueError, match="out_dtype"):
        dtype_bytes("fp7", arg="out_dtype")


def test_cost_model():
    c = Cost(2e12, 1e9, "k")
    cal = M.get_machine("h200-calibrated")
    assert c.intensity == 2000
    assert c.memory_time(cal) == pytest.approx(1e9 / cal.bandwidth)
    assert c.compute_time(cal) == pytest.approx(2e12 / cal.peak_flops)
    assert c.lower_bound(cal) == max(c.memory_time(cal), c.compute_time(cal))
    assert c.bound(cal) == C.COMPUTE_BOUND
    assert Cost(1, 1e9).bound(cal) == C.MEMORY_BOUND
    # a cost exactly at the ridge is balanced
    ridge = M.profile_from_dict(dict(GOOD, compute={"tensor_core.fp16": {"theoretical_tflops": 100.0}},
                                     memory={"hbm": {"theoretical_gbs": 1000.0}}))
    assert Cost(100e9, 1e9).bound(ridge) == C.BALANCED
    assert Cost(101e9, 1e9).bound(ridge) == C.COMPUTE_BOUND
    s = c + Cost(1, 2, "j")
    assert (s.flops, s.bytes) == (2e12 + 1, 1e9 + 2)
    assert c.scaled(3).bytes == 3e9


def test_cost_rejects_bad_values_and_never_yields_inf():
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(ValueError, match="bytes"):
            Cost(1, bad)
        with pytest.raises(ValueError, match="flops"):
            Cost(bad, 1)
    with pytest.raises(ValueError, match="bytes"):
        Cost(5, 0).intensity
    with pytest.raises(ValueError, match="bytes"):
        judge(Cost(5, 0))
    with pytest.raises(ValueError):
        C.fmt_time(math.inf)


@pytest.mark.parametrize("value", [0, -3, 2.5, "4", None, math.nan, True])
def test_check_size_names_the_argument(value):
    with pytest.raises(ValueError, match="seq"):
        C.check_size("seq", value)


def test_formatters():
    assert C.fmt_bytes(67108864) == "67.11 MB"
    assert C.fmt_time(14.905e-6) == "14.905 µs"
    assert C.fmt_flops(2.0e12) == "2.00 TFLOP"


# --- the package as a whole -------------------------------------------------------------
def test_ledger_imports_only_the_standard_library():
    code = r"""
import importlib, pkgutil, sys
before = set(sys.modules)
import ledger
for info in pkgutil.iter_modules(ledger.__path__):
    importlib.import_module("ledger." + info.name)
from ledger.figures import collect
collect()
new = {m.split(".")[0] for m in set(sys.modules) - before}
bad = sorted(m for m in new if m != "ledger" and m not in sys.stdlib_module_names)
print(",".join(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"ledger imports non-standard modules: {out.stdout}"


def test_every_figure_is_finite_and_has_provenance():
    from ledger.figures import collect

    figs = collect()
    assert len(figs) > 100
    for k, f in figs.items():
        if isinstance(f.value, float):
            assert math.isfinite(f.value), k
        assert "nan" not in f.text.lower().split() and "inf" not in f.text.lower().split(), k
        assert f.source, k
        if k.startswith(("pytorch", "elementwise", "machines")):
            assert f.conditions, k
