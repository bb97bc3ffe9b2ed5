"""CPU checks of stream-K's in-kernel fix-up (``fixup``, :func:`kernels.gemm.streamk.streamk_ws_last`):
the number of arrivals the kernel waits for on a tail tile's counter (``owner(last step) - owner(first
step) + 1``) is exactly the number of pieces the schedule gives that tile, and the counter protocol --
any arrival order, the last one summing the pieces from their slots in worker order -- writes every
tail tile once and leaves the counters zero (emulated in numpy); configuration errors name their
constraint; the suite's fix-up candidates compile for sm_90a to one kernel."""

import numpy as np
import pytest

from kernels.gemm import streamk
from measure.suites.gemm import streamk_ws as suite

PLANS = [  # (M, N, K, block_N, workers, dp_waves): the suite's schedules and some awkward ones
    (1536, 1536, 8192, 256, 132, 0), (1536, 1536, 8192, 128, 132, -1), (1024, 1024, 16384, 256, 132, 0),
    (2048, 2048, 8192, 256, 132, 0), (384, 768, 1024, 256, 8, -1), (1024, 512, 192, 128, 7, 0),
]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_arrivals_expected_per_tail_tile_are_its_pieces(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    ipt, q, r = s.iters_per_tile, s.iters_per_worker, s.extra
    pieces = [p for mine in s.pieces() for p in mine]
    for lt in range(s.sk_tiles):
        w_lo, w_hi = streamk.sk_owner(lt * ipt, q, r), streamk.sk_owner((lt + 1) * ipt - 1, q, r)
        mine = [p for p in pieces if p[1] == lt]
        assert len(mine) == w_hi - w_lo + 1 <= s.max_contrib
        # the slots the reducer reads, in worker order, are the slots the pieces were stored in
        assert [streamk.sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments) for c in range(w_hi - w_lo + 1)] \
            == sorted(p[0] for p in mine)


@pytest.mark.parametrize("plan", PLANS[:3] + PLANS[4:], ids=lambda p: "x".join(map(str, p)))
def test_fixup_emulated_any_order_writes_every_tail_tile_once(plan):
    M, N, K, bn, workers, dp = plan
    epi = 64
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    ipt, q, r = s.iters_per_tile, s.iters_per_worker, s.extra
    chunks = bn // epi
    rng = np.random.default_rng(sum(plan))
    n_counters = streamk.sk_fixup_counters(M, N, K, bn, 64, workers, dp, epi)
    assert n_counters == s.sk_tiles * 2 * chunks
    L = np.zeros(n_counters, dtype=np.int32)  # zeroed once, kept between launches
    slot_of = {}
    arrivals = []
    for mine in s.pieces():
        for slot, lt, k0, steps in mine:
            part = rng.standard_normal((128, bn)).astype(np.float32)  # the piece's partial tile
            slot_of[slot] = part
            arrivals += [(slot, lt, wg, h) for wg in range(2) for h in range(chunks)]
    want = {}
    for lt in range(s.sk_tiles):
        w_lo = streamk.sk_owner(lt * ipt, q, r)
        w_hi = streamk.sk_owner((lt + 1) * ipt - 1, q, r)
        total = None
        for c in range(w_hi - w_lo + 1):
            x = slot_of[streamk.sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments)]
            total = x.copy() if total is None else total + x
        want[lt] = total.astype(np.float16)
    for _ in range(2):
        W = np.full((s.slots * 128, bn), np.nan, dtype=np.float32)
        C = {lt: np.full((128, bn), np.nan, dtype=np.float16) for lt in range(s.sk_tiles)}
        writes = np.zeros(n_counters, dtype=int)
        for n in rng.permutation(len(arrivals)):
            slot, lt, wg, h = arrivals[n]
            rows, cols = slice(wg * 64, wg * 64 + 64), slice(h * epi, h * epi + epi)
            W[slot * 128:(slot + 1) * 128][rows, cols] = slot_of[slot][rows, cols]
            k = (lt * 2 + wg) * chunks + h
            old = L[k]
            L[k] += 1
            w_lo = streamk.sk_owner(lt * ipt, q, r)
            w_hi = streamk.sk_owner((lt + 1) * ipt - 1, q, r)
            if old == w_hi - w_lo:
                L[k] = 0
                total = None
                for c in range(s.max_contrib):
                    if w_lo + c <= w_hi:
                        src = streamk.sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments)
                        x = W[src * 128:(src + 1) * 128][rows, cols]
                        total = x.copy() if total is None else total + x
                C[lt][rows, cols] = total.astype(np.float16)
                writes[k] += 1
        assert (writes == 1).all() and not (L != 0).any()
        for lt in range(s.sk_tiles):
            np.testing.assert_array_equal(C[lt], want[lt])  # bit-identical, whatever the order


def test_fixup_errors_name_the_constraint():
    kw = dict(block_N=256, block_K=64, stages=4, panel=8, inflight=0, epi_cols=64)
    with pytest.raises(ValueError, match="nothing to fix up"):  # 32 tiles on 8 workers: 4 full waves
        streamk._streamk_ws_program(1024, 1024, 1024, workers=8, dp_waves=-1, fixup=True, **kw)
    with pytest.raises(ValueError, match="without clipping: M=1000"):
        streamk._streamk_ws_program(1000, 1024, 1024, workers=132, dp_waves=0, fixup=True, **kw)


def test_fixup_config_and_labels_leave_earlier_ones_alone():
    assert "fixup" not in streamk.ws_config(128, 5, 64, -1)
    assert streamk.ws_label(streamk.ws_config(128, 5, 64, -1)) == "dp+sk 128x128 st5 e64"  # the recorded best
    assert streamk.ws_label(streamk.ws_config(128, 5, 64, -1, fixup=True)) == "dp+sk 128x128 st5 e64 last"
    for shape, cands in suite.CANDIDATES.items():
        labels = [streamk.ws_label(c) for c in cands]
        assert len(set(labels)) == len(labels) and any(lab.endswith(" last") for lab in labels)
        assert any(not c.get("fixup") for c in cands)  # a baseline with the separate fix-up in the same run


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [c for c in suite.CANDIDATES[(1536, 1536, 8192)] if c.get("fixup")],
                         ids=lambda c: streamk.ws_label(c).replace(" ", "_").replace("+", "_"))
def test_fixup_candidates_compile_to_one_kernel_with_the_counter_protocol(_fresh, cfg):
    from kernels.gemm.lowered import launch_info

    gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    assert fix is None  # no second kernel
    src = gemm.get_kernel_source()
    s = streamk.ws_schedule(1536, 1536, 8192, cfg["block_N"], 64, 132, cfg["dp_waves"])
    assert src.count("skqf::store_partial<64>") == 2 and src.count("skqf::add_slice<64>") == 2
    assert src.count("skqf::store_sum<64>") == 2 and src.count("AtomicAddRet(") == 2
    assert f"for (int c = 0; c < {s.max_contrib}; ++c)" in src
    # the piece's own slot is taken from the accumulator: the call passes it and compares the slot
    calls = [ln for ln in src.splitlines() if "skqf::add_slice<64>(" in ln]
    assert len(calls) == 2 and all(("C0_l, (h" in ln or "C1_l, (h" in ln) and " == (" in ln for ln in calls)
    assert "tma_store(W_desc" not in src and "int* __restrict__ L" in src
    assert launch_info(gemm).grid == (132, 1, 1) and launch_info(gemm).smem_bytes <= 232448
