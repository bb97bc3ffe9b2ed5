"""Units, comparison rules and the spec model."""
from __future__ import annotations

import pytest

from autograder.parts import LabSpec, Part, SpecError, compare
from autograder.units import UnitError, parse_unit, to_base


def test_to_base():
    assert to_base(2, "GiB") == ("bytes", 2 * 2**30)


@pytest.mark.parametrize("unit,dim,factor", [
    ("MB", "bytes", 1e6), ("GiB", "bytes", 2**30), ("KiB", "bytes", 1024), ("B", "bytes", 1),
    ("GFLOP", "flop", 1e9), ("FLOPs", "flop", 1), ("TFLOPS", "flops", 1e12), ("GB/s", "bandwidth", 1e9),
    ("FLOP/B", "intensity", 1), ("FLOP/Byte", "intensity", 1), ("us", "time", 1e-6), ("µs", "time", 1e-6),
    ("ms", "time", 1e-3), ("B/param", "bytes_per_param", 1), ("%", "percent", 1), ("", "one", 1),
])
def test_parse_unit(unit, dim, factor):
    assert parse_unit(unit) == (dim, pytest.approx(factor))


@pytest.mark.parametrize("bad", ["furlong", "GiFLOP", "XB", 3])
def test_bad_units(bad):
    with pytest.raises(UnitError):
        parse_unit(bad)


def _q(**kw):
    return Part("x_a", "E0", 1, "quantity", "p", lambda v: 0, unit=kw.pop("unit", "MB"), **kw)


def test_quantity_conversion_and_messages():
    p = _q()
    assert compare(p, {"value": 64, "unit": "MiB"}, 67.108864).status == "right"
    assert compare(p, {"value": 64, "unit": "MB"}, 67.108864).status == "wrong"
    v = compare(p, {"value": 1, "unit": "ms"}, 67.1)
    assert v.status == "malformed" and "wrong unit" in v.message
    assert compare(p, {"value": None, "unit": "MB"}, 1).status == "missing"
    assert compare(p, {"value": "abc", "unit": "MB"}, 1).status == "malformed"
    assert compare(p, {"value": float("nan"), "unit": "MB"}, 1).status == "malformed"
    assert compare(p, 67.1, 67.1).status == "malformed"


def test_messages_never_contain_the_reference():
    p = _q(hint="think")
    v = compare(p, {"value": 12.5, "unit": "MB"}, 98.7654)
    assert v.status == "wrong" and "98.7" not in v.message and "98.7" in v.detail and "think" in v.message


def test_choice_set_table_function():
    c = Part("c_a", "E0", 1, "choice", "p", lambda: 0, options=("a", "b"))
    assert compare(c, " A ", "a").status == "right"
    assert compare(c, "z", "a").status == "malformed"
    s = Part("s_a", "E0", 1, "set", "p", lambda: 0, options=("x", "y", "z"))
    assert compare(s, ["y", "x"], ["x", "y"]).status == "right"
    assert compare(s, [], ["x"]).status == "wrong"
    assert compare(s, "x", ["x"]).status == "malformed"
    assert compare(s, ["q"], ["x"]).status == "malformed"
    t = Part("t_a", "E0", 2, "table", "p", lambda: 0, abs_tol=0.1)
    want = {512: {"f": 10.0, "g": 1.0}, 4096: {"f": 20.0, "g": 2.0}}
    assert compare(t, {"512": {"f": 10.05, "g": 1}, "4096": {"f": 20, "g": 2}}, want).status == "right"
    v = compare(t, {"512": {"f": 11, "g": 1}, "4096": {"f": 20, "g": 2}}, want)
    assert v.status == "wrong" and "512/f" in v.message
    assert compare(t, {"512": {"f": 1}}, want).status == "malformed"
    assert compare(t, {"512": {"f": None, "g": None}, "4096": {"f": None, "g": None}}, want).status == "missing"
    f = Part("f_a", "E0", 1, "function", "p", lambda: 0, probes=((1,), (2,)), fields=("n",))
    assert compare(f, [{"ok": True, "value": {"n": 1}}, {"ok": True, "value": {"n": 2}}],
                   [{"n": 1}, {"n": 2}]).status == "right"
    v = compare(f, [{"ok": False, "error": "ZeroDivisionError: x"}, {"ok": True, "value": {"n": 2}}],
                [{"n": 1}, {"n": 2}])
    assert v.status == "malformed" and "ZeroDivisionError" in v.message
    assert compare(f, [{"ok": True, "value": None}] * 2, [{"n": 1}, {"n": 2}]).status == "missing"


def test_spec_validation():
    with pytest.raises(SpecError):
        Part("Bad.Id", "E0", 1, "number", "p", lambda: 0)
    with pytest.raises(SpecError):
        Part("a", "E0", 1, "number", "p")  # no reference
    with pytest.raises(SpecError):
        Part("a", "E0", 1, "function", "p", lambda: 0)  # no probes
    with pytest.raises(SpecError):
        LabSpec("x", "x", (Part("a", "E0", 1, "manual", "p"), Part("a", "E0", 1, "manual", "p")))


def test_a_dict_answer_never_reveals_its_keys():
    p = Part("x_m", "E0", 1, "mapping", "p", lambda v: 0)
    want = {"kind": "cuda", "arch": "sm_90"}
    for answer in ({"kind": "cuda"}, {"kind": "cuda", "arch": "sm_80"}, {"kind": "cuda", "arch": "sm_90", "x": 1},
                   {"kind": "cuda", "arch": 5}):
        v = compare(p, answer, want)
        assert v.status == "wrong" and "arch" not in v.message and "kind" not in v.message, v
        assert "2" not in v.message  # not even how many keys
    assert compare(p, {"arch": "sm_90", "kind": "CUDA"}, want).status == "right"
    assert compare(p, None, want).status == "missing" and compare(p, [1], want).status == "malformed"


def test_tolerances_are_stated_per_part():
    assert _q(rel_tol=0.01).tolerance == "相对误差 ≤ 1%，按你写的单位换算后比较"
    p = Part("x_n", "E0", 1, "number", "p", lambda v: 0, rel_tol=1e-4)
    assert p.tolerance == "相对误差 ≤ 0.01%"
    p = Part("x_t", "E0", 1, "table", "p", lambda v: 0, rel_tol=0.01, abs_tol=0.15)
    assert p.tolerance.startswith("每一格 相对误差 ≤ 1% 或 绝对误差 ≤ 0.15")
    assert Part("x_c", "E0", 1, "choice", "p", lambda v: 0).tolerance == "精确匹配"
