"""CPU check of the w4sk probe (measure/results/timing/w4sk.py): gemm.flush's M = 16 kernel is among the candidates,
every stream-K candidate and small check is a valid configuration, the small checks reach tiles of three or more
contributors and a ragged M, and the 128-block control has one contributor a tile."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import w4sk  # noqa: E402

from kernels.gemm import w4a16_sk as sk  # noqa: E402
from measure.suites.gemm.flush import W4A16_WINNERS  # noqa: E402


def _check(M, N, K, c):
    sk.check_config(M, N, K, group=128, block_M=c["block_M"], block_K=c["block_K"], stages=c["stages"],
                    blocks=c["blocks"])


def test_candidates_and_checks():
    assert W4A16_WINNERS[(16, 8192, 8192)] in w4sk.CANDS
    streamk = [c for c in w4sk.CANDS if c.get("inst") == "sk"]
    assert {c["blocks"] for c in streamk} == {128, 132}
    for c in streamk:
        for m in (w4sk.M, w4sk.RAGGED):
            _check(m, w4sk.N, w4sk.K, c)
    assert set(sk.contributors(8192, 8192, 128)) == {1}
    most = 0
    for (M, N, K), c in w4sk.SMALL:
        _check(M, N, K, c)
        most = max(most, max(sk.contributors(N, K, c["blocks"])))
    assert most >= 3 and any(M % c["block_M"] for (M, _, _), c in w4sk.SMALL)
