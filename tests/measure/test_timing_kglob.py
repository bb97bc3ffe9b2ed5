"""CPU check of the kglob probe (measure/results/timing/kglob.py): its candidates are valid configurations at the
shape and at lagd's ragged M, the suite's M = 64 kernel is among them, and three are ``kglob`` forms."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import kglob  # noqa: E402
import lagd  # noqa: E402

from kernels.gemm.w4a16 import check_config  # noqa: E402
from measure.suites.gemm.flush import W4A16_WINNERS  # noqa: E402


def test_candidates_are_valid_at_the_shape_and_the_ragged_m():
    cs = kglob.CANDS[64]
    assert W4A16_WINNERS[(64, 8192, 8192)] in cs and sum(bool(c.get("kglob")) for c in cs) == 3
    for c in cs:
        kw = {k: v for k, v in c.items() if k not in ("block_M",)}
        for m in (64, lagd.RAGGED[64]):
            check_config(m, 8192, 8192, group=128, block_M=c["block_M"], **kw)
