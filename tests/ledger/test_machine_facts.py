"""Machine facts are read from the profiles, not typed in each model.

The SM count, shared memory and register limits live in a profile's ``resources``;
the profile the chapters compute with is ``DEFAULT_MACHINE``.  Changing a profile
changes every model that uses it.
"""
import ast
import json
from pathlib import Path

import pytest

from ledger import carver, decisions, machines
from ledger.machines import DEFAULT_MACHINE, MachineError, get_machine
from ledger.tiles import HOPPER, TileLimits, tile_decision

ROOT = Path(__file__).resolve().parents[2]


def test_hopper_limits_are_the_default_profiles_resources():
    m = get_machine(DEFAULT_MACHINE)
    assert HOPPER.sms == m.resource("sms") == 132
    assert HOPPER.smem_per_block == m.resource("smem_per_block_kb") * 1024
    assert HOPPER.smem_per_sm == m.resource("smem_per_sm_kb") * 1024
    assert (HOPPER.regs_per_sm, HOPPER.max_threads_per_sm, HOPPER.max_regs_per_thread, HOPPER.max_threads_per_block) == (
        m.resource("regs_per_sm"), m.resource("max_threads_per_sm"), m.resource("max_regs_per_thread"),
        m.resource("max_threads_per_block"))
    assert m.name in HOPPER.source


def test_tile_limits_of_another_profile():
    a100 = TileLimits.from_machine("a100-sxm4-80gb-spec")
    assert (a100.sms, a100.smem_per_block, a100.smem_per_sm) == (108, 163 * 1024, 164 * 1024)
    # the same tile fits an H200 block and not an A100 block (C1: 4 stages x 48 KB = 192 KB)
    assert tile_decision(128, 256, 64, stages=4, threads=256).ok
    r = tile_decision(128, 256, 64, stages=4, threads=256, limits=a100)
    assert not r.ok and any("C1" in f and "163 KB" in f for f in r.failures)
    assert any("per block" in f for f in tile_decision(64, 64, 32, stages=1, threads=2048).failures)


def _user_profile(tmp_path, monkeypatch, **resources):
    data = json.loads((machines.BUILTIN_DIR / f"{DEFAULT_MACHINE}.json").read_text(encoding="utf-8"))
    data["resources"].update(resources)
    (tmp_path / "mine.json").write_text(json.dumps(data))
    monkeypatch.setenv(machines.ENV_VAR, str(tmp_path))


def test_carver_device_follows_the_profile(tmp_path, monkeypatch):
    assert carver.CarverDevice().compute_max_core == get_machine().resource("sms")
    assert carver.CarverDevice().smem_cap == get_machine().resource("smem_per_block_kb") * 1024
    _user_profile(tmp_path, monkeypatch, sms=100, smem_per_block_kb=99)
    dev = carver.CarverDevice()
    assert (dev.compute_max_core, dev.smem_cap) == (100, 99 * 1024)
    assert "100 SMs" in dev.describe() and "smem_cap 99 KB" in dev.describe()
    a100 = carver.CarverDevice.from_machine("a100-sxm4-80gb-spec")
    assert (a100.compute_max_core, a100.smem_cap, a100.reg_cap) == (108, 163 * 1024, 65536)


def test_decision_floor_uses_the_machines_sm_count(tmp_path, monkeypatch):
    d = decisions.decisions()[4]
    small = min((d.a, d.b), key=lambda o: o.grid)
    assert small.grid < 132  # the option whose grid does not fill an H200
    base = d.floor_seconds(small)
    assert d.floor_seconds(small, sms=132) == base
    _user_profile(tmp_path, monkeypatch, sms=2 * 132)
    assert d.floor_seconds(small) == pytest.approx(2 * base)  # half the grid share of twice the SMs


def test_missing_resource_is_a_clear_error():
    m = get_machine(DEFAULT_MACHINE)
    bare = machines.profile_from_dict({"name": "x", "description": "d", "source": "s", "conditions": "c",
                                       "compute": {"a": {"theoretical_tflops": 1}},
                                       "memory": {"hbm": {"theoretical_gbs": 1}}})
    with pytest.raises(MachineError, match="no resource 'sms'"):
        TileLimits.from_machine(bare)
    assert TileLimits.from_machine(m).sms == HOPPER.sms


def test_default_profile_named_once():
    """Models name the default profile through DEFAULT_MACHINE, not as a typed string."""
    hits = []
    for f in sorted((ROOT / "ledger").glob("*.py")):
        if f.name == "machines.py":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == DEFAULT_MACHINE:
                hits.append(f"{f.name}:{node.lineno}")
    assert hits == []
