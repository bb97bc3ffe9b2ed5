"""CPU checks of stream-K's spread fix-up (``spread``, :func:`kernels.gemm.streamk.streamk_ws_spread`): the bands of
rows the contributors of a tail tile reduce partition each consumer's 64 rows; the protocol -- every worker stores
and counts all its pieces, then waits for each of its tiles and reduces its band -- finishes under any interleaving
of the workers (no wait closes a cycle), whether the tail pieces come after the whole tiles or first
(``tail_first``: the order of a worker's arrivals and reductions is the same), writes every row of every tail tile once with the separate fix-up's sum
(bit-identical), reads no slot before it is written and leaves the counters zero (emulated in numpy, two launches);
configuration errors name their constraint; a spread candidate compiles for sm_90a to one kernel with the
counter protocol."""

import numpy as np
import pytest

from kernels.gemm import streamk

PLANS = [  # (M, N, K, block_N, workers, dp_waves)
    (1536, 1536, 8192, 128, 132, -1), (1536, 1536, 8192, 256, 132, 0), (1024, 1024, 16384, 256, 132, 0),
    (2048, 2048, 8192, 256, 132, 0), (384, 768, 1024, 256, 8, -1), (1024, 512, 192, 128, 7, 0),
    (128, 128, 64 * 200, 128, 132, 0),  # one tile over 132 workers: more contributors than rows
]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_bands_partition_the_rows_of_every_tail_tile(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    for lt in range(s.sk_tiles):
        _, n = s.span(lt)
        rows = [i for c in range(n) for i in range(*streamk.spread_band(c, n))]
        assert rows == list(range(64))


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_spread_emulated_any_interleaving_finishes_and_writes_the_fixup_sum(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    ipt, q, r = s.iters_per_tile, s.iters_per_worker, s.extra
    rng = np.random.default_rng(sum(plan))
    parts = {slot: rng.standard_normal((128, bn)).astype(np.float32)
             for mine in s.pieces() for slot, *_ in mine}
    want = {}  # the separate fix-up's sum: pieces in worker order, cast once
    for lt in range(s.sk_tiles):
        w_lo, n = s.span(lt)
        total = None
        for c in range(n):
            x = parts[streamk.sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments)]
            total = x.copy() if total is None else total + x
        want[lt] = total.astype(np.float16)
    L = np.zeros(s.sk_tiles * 2, dtype=np.int64)  # zeroed once, kept between launches
    for _ in range(2):
        W = np.full((s.slots * 128, bn), np.nan, dtype=np.float32)
        C = {lt: np.full((128, bn), np.nan, dtype=np.float16) for lt in range(s.sk_tiles)}
        writes = {lt: np.zeros(128, dtype=int) for lt in range(s.sk_tiles)}
        # each consumer (worker, wg) runs: store + arrive per piece, then wait + band + depart per piece
        progs = {}
        for w, mine in enumerate(s.pieces()):
            for wg in range(2):
                ops = [("arrive", slot, lt) for slot, lt, _, _ in mine] + [("reduce", slot, lt) for slot, lt, _, _ in mine]
                progs[(w, wg)] = ops
        pc = {k: 0 for k in progs}
        live = [k for k in progs if progs[k]]
        while live:
            ready = []
            for k in live:
                op, slot, lt = progs[k][pc[k]]
                if op == "reduce" and L[lt * 2 + k[1]] < s.span(lt)[1]:
                    continue  # waiting
                ready.append(k)
            assert ready, "every remaining consumer waits: the protocol would hang"
            k = ready[rng.integers(len(ready))]
            (w, wg), (op, slot, lt) = k, progs[k][pc[k]]
            rows = slice(wg * 64, wg * 64 + 64)
            cnt = lt * 2 + wg
            if op == "arrive":
                W[slot * 128:(slot + 1) * 128][rows] = parts[slot][rows]
                L[cnt] += 1
            else:
                w_lo, n = s.span(lt)
                r0, r1 = streamk.spread_band(w - w_lo, n)
                total = None
                for c in range(n):
                    src = streamk.sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments)
                    x = W[src * 128:(src + 1) * 128][wg * 64 + r0:wg * 64 + r1]
                    assert not np.isnan(x).any(), "a band read a slot before its piece was stored"
                    total = x.copy() if total is None else total + x
                C[lt][wg * 64 + r0:wg * 64 + r1] = total.astype(np.float16)
                writes[lt][wg * 64 + r0:wg * 64 + r1] += 1
                old = L[cnt]
                L[cnt] += 1
                if old == 2 * n - 1:
                    L[cnt] = 0
            pc[k] += 1
            live = [k for k in live if pc[k] < len(progs[k])]
        assert not L.any()
        for lt in range(s.sk_tiles):
            assert (writes[lt] == 1).all()
            np.testing.assert_array_equal(C[lt], want[lt])


def test_spread_errors_name_the_constraint():
    kw = dict(block_N=256, block_K=64, stages=4, panel=8, inflight=0, epi_cols=64)
    with pytest.raises(ValueError, match="spread: the schedule streams no tile"):
        streamk._streamk_ws_program(1024, 1024, 1024, workers=8, dp_waves=-1, spread=True, **kw)
    with pytest.raises(ValueError, match="spread stores from registers without clipping: M=1000"):
        streamk._streamk_ws_program(1000, 1024, 1024, workers=132, dp_waves=0, spread=True, **kw)
    with pytest.raises(ValueError, match="must all be resident at once"):
        streamk._streamk_ws_program(1024, 1024, 1024, workers=264, dp_waves=0, spread=True, **kw)
    with pytest.raises(ValueError, match="choose one"):
        streamk._streamk_ws_program(1024, 1024, 1024, workers=132, dp_waves=0, spread=True, fixup=True, **kw)
    for bad in (dict(fixup=True), dict(pdl=True), dict(fix_rows=4), dict(fix_unroll=True)):
        with pytest.raises(ValueError):
            streamk.ws_config(128, 5, 64, -1, spread=True, **bad)
    with pytest.raises(ValueError, match="tail_first: only the spread and red fix-ups"):
        streamk.ws_config(128, 5, 64, -1, tail_first=True)
    with pytest.raises(ValueError, match="tail_first: only the spread and red fix-ups"):
        streamk._streamk_ws_program(1536, 1536, 8192, workers=132, dp_waves=-1, tail_first=True, **kw)


def test_spread_config_and_label():
    assert "spread" not in streamk.ws_config(128, 5, 64, -1, panel=0)
    cfg = streamk.ws_config(128, 5, 64, -1, panel=0, spread=True)
    assert cfg["spread"] is True and streamk.ws_label(cfg) == "dp+sk 128x128 st5 e64 p0 spread"
    tf = streamk.ws_config(128, 5, 64, -1, panel=0, spread=True, tail_first=True)
    assert streamk.ws_label(tf) == "dp+sk 128x128 st5 e64 p0 spread tf"


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


def _first_lines(src, *needles):
    lines = src.splitlines()
    return [next(i for i, ln in enumerate(lines) if nd in ln) for nd in needles]


@pytest.mark.slow
@pytest.mark.parametrize("tail_first", [False, True], ids=["tiles_first", "tail_first"])
def test_spread_compiles_to_one_kernel_with_the_counter_protocol(_fresh, tail_first):
    from kernels.gemm.lowered import launch_info

    cfg = streamk.ws_config(128, 5, 64, -1, panel=0, spread=True, tail_first=tail_first)
    gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    assert fix is None  # no second kernel
    src = gemm.get_kernel_source()
    s = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    for call in ("sksp::arrive(", "sksp::wait_count(", "sksp::depart(", "skqf::store_partial<64>("):
        assert src.count(call) == 2, call  # once per consumer warpgroup
    reduce = f"sksp::reduce_rows<128, {s.max_contrib}, {s.iters_per_worker}, {s.extra}, {s.iters_per_tile}, " \
             f"{s.max_segments}>("
    assert src.count(reduce) == 2
    assert "red.release.gpu.global.add.s32" in src and "ld.acquire.gpu.global.s32" in src
    assert "tma_store(W_desc" not in src and "int* __restrict__ L" in src
    info = launch_info(gemm)
    assert info.grid == (132, 1, 1) and info.dyn_smem_bytes + info.static_smem_bytes <= 232448
    # the first consumer's order: its piece counted before (tail_first) or after the whole tile's TMA store of C,
    # and its band reduced after both
    arrive, store_c, wait = _first_lines(src, "sksp::arrive(", "tma_store(C_desc", "sksp::wait_count(")
    assert (arrive < store_c) == tail_first and wait > max(arrive, store_c)
