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


def test_the_m16_challenger_is_the_recorded_search_winner():
    """The comment on W4A16_CHALLENGERS says the M = 16 challenger won suite gemm.w4a16's search on the H200, ahead of
    this suite's kernel: the records say so, or this fails (a new search run with another winner moves the challenger)."""
    from kernels.gemm.w4a16 import label
    from measure.results import load_results, records

    shape = (16, 8192, 8192)
    search = next(r for r in records(load_results("nvidia-h200"), kind="search")
                  if r.get("suite") == "gemm.w4a16" and r["name"] == "w4a16 16x8192x8192")
    challenger, kernel = label(flush.W4A16_CHALLENGERS[shape]), label(flush.W4A16_WINNERS[shape])
    assert search["best"] == challenger
    assert search["ms"][challenger] < search["ms"][kernel]
