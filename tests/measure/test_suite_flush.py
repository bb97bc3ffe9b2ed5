"""CPU check of suite gemm.flush's challengers: each is a valid configuration at its shape, one of suite
gemm.w4a16's searched candidates there (so its ragged check and the prebuilt cache cover it), different from the
winner it is timed beside, and compiled by the suite under its own name."""

import pytest

pytest.importorskip("tilelang")

from kernels.gemm.w4a16 import check_config  # noqa: E402
from measure.suites.gemm import flush  # noqa: E402
from measure.suites.gemm.w4a16 import CANDIDATES, RAGGED, regime  # noqa: E402


def test_challengers_are_searched_candidates_beside_a_winner():
    assert {(64, 8192, 8192), (16, 8192, 8192)} <= set(flush.W4A16_CHALLENGERS)
    for (M, N, K), c in flush.W4A16_CHALLENGERS.items():
        assert (M, N, K) in flush.W4A16_WINNERS and c != flush.W4A16_WINNERS[(M, N, K)]
        assert c in CANDIDATES[regime(M)]
        check_config(M, N, K, group=128, block_M=c["block_M"], **{k: v for k, v in c.items() if k != "block_M"})
        # a ragged M of the same pipeline form is checked by suite gemm.w4a16
        assert any(cfg.get("kglob") == c.get("kglob") and cfg.get("consumers", 2) == c.get("consumers", 2)
                   and s[0] % cfg["block_M"] for s, cfg in RAGGED)


def test_the_suite_builds_each_challenger_under_its_own_name():
    th = flush.build_thunks(132)
    for (M, N, K) in flush.W4A16_CHALLENGERS:
        assert f"w4a16 {M}x{N}x{K} challenger" in th and f"w4a16 {M}x{N}x{K}" in th
