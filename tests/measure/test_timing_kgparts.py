"""CPU check of the kgparts probe (measure/results/timing/kgparts.py): each form is a valid configuration with its
probe (``loadonly`` only on the twins without lag), the suite's M = 64 kernel and the kglob form are both taken
whole and as every probe, and the clean flush is searched first."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import kgparts  # noqa: E402

from kernels.gemm.w4a16 import check_config  # noqa: E402
from measure.suites.gemm.flush import W4A16_WINNERS  # noqa: E402


def test_forms_and_probes():
    forms = kgparts.FORMS
    for c, p in forms:
        check_config(64, 8192, 8192, group=128, **c)
        assert not (p == "loadonly" and c.get("lag"))
    lag, kg = W4A16_WINNERS[(64, 8192, 8192)], kgparts.KG
    assert kg.get("kglob") and kg.get("lag")
    for form in (lag, kg):
        assert {p for c, p in forms if c == form} == {"", "mmaonly", "noexpand"}
    twins = [c for c, p in forms if p == "loadonly"]
    assert sorted(bool(c.get("kglob")) for c in twins) == [False, True]
    assert kgparts.MODES[0] == "clean"
