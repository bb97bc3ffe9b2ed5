"""CPU checks of stream-K's reducing fix-up (``red``, :func:`kernels.gemm.streamk.streamk_ws_red`): the protocol --
every tail piece adds its partial into its tile's fp32 sum, then counts it; the count that finds every other piece
counted casts the sum to C, zeroes it and resets the counter -- writes every row of every tail tile exactly once,
with the sum of all its pieces, and leaves the workspace and the counters zero, under any interleaving of the
consumers (emulated in numpy, two launches); configuration errors name their constraint; a red candidate compiles
for sm_90a to one kernel whose tail pieces go out as vector reductions."""

import numpy as np
import pytest

from kernels.gemm import streamk

PLANS = [  # (M, N, K, block_N, workers, dp_waves)
    (1536, 1536, 8192, 128, 132, -1), (1536, 1536, 8192, 256, 132, 0), (1024, 1024, 16384, 256, 132, 0),
    (384, 768, 1024, 256, 8, -1), (1024, 512, 192, 128, 7, 0),
    (128, 128, 64 * 200, 128, 132, 0),  # one tile over 132 workers
]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_span_names_exactly_the_workers_that_write_a_tail_tile(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    for lt in range(s.sk_tiles):
        w_lo, n = s.span(lt)
        assert [w for w, mine in enumerate(s.pieces()) if any(t == lt for _, t, _, _ in mine)] == list(range(w_lo, w_lo + n))


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_red_emulated_any_interleaving_writes_each_tail_tile_once_and_leaves_zeros(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    rng = np.random.default_rng(sum(plan))
    pieces = s.pieces()
    parts = {slot: rng.standard_normal((128, bn)).astype(np.float32) for mine in pieces for slot, *_ in mine}
    exact = {}
    for lt in range(s.sk_tiles):
        exact[lt] = sum(parts[slot].astype(np.float64) for mine in pieces for slot, t, _, _ in mine if t == lt)
    W = np.zeros((s.sk_tiles * 128, bn), dtype=np.float32)  # zeroed once, kept between launches
    L = np.zeros(s.sk_tiles * 2, dtype=np.int64)
    for _ in range(2):
        C = {lt: np.full((128, bn), np.nan, dtype=np.float16) for lt in range(s.sk_tiles)}
        writes = {lt: np.zeros(128, dtype=int) for lt in range(s.sk_tiles)}
        progs = {(w, wg): [op for slot, lt, _, _ in mine for op in (("add", slot, lt), ("count", slot, lt))]
                 for w, mine in enumerate(pieces) for wg in range(2)}
        pc = {k: 0 for k in progs}
        live = [k for k in progs if progs[k]]
        while live:  # nobody waits: any consumer with work left may take its next step
            k = live[rng.integers(len(live))]
            (w, wg), (op, slot, lt) = k, progs[k][pc[k]]
            rows = slice(lt * 128 + wg * 64, lt * 128 + wg * 64 + 64)
            if op == "add":
                W[rows] += parts[slot][wg * 64:wg * 64 + 64]
            else:
                old = L[lt * 2 + wg]
                L[lt * 2 + wg] += 1
                if old == s.span(lt)[1] - 1:  # the last piece: cast, zero, reset
                    L[lt * 2 + wg] = 0
                    C[lt][wg * 64:wg * 64 + 64] = W[rows].astype(np.float16)
                    writes[lt][wg * 64:wg * 64 + 64] += 1
                    W[rows] = 0
            pc[k] += 1
            live = [k for k in live if pc[k] < len(progs[k])]
        assert not L.any() and not W.any()
        for lt in range(s.sk_tiles):
            assert (writes[lt] == 1).all()
            np.testing.assert_allclose(C[lt].astype(np.float64), exact[lt], rtol=2e-3, atol=2e-3)


def test_red_errors_name_the_constraint():
    kw = dict(block_N=256, block_K=64, stages=4, panel=8, inflight=0, epi_cols=64)
    with pytest.raises(ValueError, match="red: the schedule streams no tile"):
        streamk._streamk_ws_program(1024, 1024, 1024, workers=8, dp_waves=-1, red=True, **kw)
    with pytest.raises(ValueError, match="red stores from registers without clipping: M=1000"):
        streamk._streamk_ws_program(1000, 1024, 1024, workers=132, dp_waves=0, red=True, **kw)
    for other in (dict(fixup=True), dict(spread=True)):
        with pytest.raises(ValueError, match="choose one"):
            streamk._streamk_ws_program(1024, 1024, 1024, workers=132, dp_waves=0, red=True, **other, **kw)
        with pytest.raises(ValueError, match="choose one"):
            streamk.ws_config(128, 5, 64, -1, red=True, **other)
    for bad in (dict(pdl=True), dict(fix_rows=4), dict(fix_unroll=True)):
        with pytest.raises(ValueError, match="red"):
            streamk.ws_config(128, 5, 64, -1, red=True, **bad)


def test_red_config_and_label():
    assert "red" not in streamk.ws_config(128, 5, 64, -1, panel=0)
    cfg = streamk.ws_config(128, 5, 64, -1, panel=0, red=True)
    assert cfg["red"] is True and streamk.ws_label(cfg) == "dp+sk 128x128 st5 e64 p0 red"
    tf = streamk.ws_config(128, 5, 64, -1, panel=0, red=True, tail_first=True)
    assert streamk.ws_label(tf) == "dp+sk 128x128 st5 e64 p0 red tf"


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
@pytest.mark.parametrize("tail_first", [False, True], ids=["tiles_first", "tail_first"])
def test_red_compiles_to_one_kernel_of_vector_reductions(_fresh, tail_first):
    from kernels.gemm.lowered import launch_info

    cfg = streamk.ws_config(128, 5, 64, -1, panel=0, red=True, tail_first=tail_first)
    gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    assert fix is None  # no second kernel
    src = gemm.get_kernel_source()
    s = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    for call in ("skrd::red_partial<64>(", "skrd::finish<64>("):
        assert src.count(call) == 2, call  # per consumer warpgroup, in a loop over its chunks of 64 columns
    assert "red.relaxed.gpu.global.add.v2.f32" in src
    assert "tma_store(W_desc" not in src and "int* __restrict__ L" in src
    assert "skqf::store_partial" not in src and "sksp::" not in src  # no piece goes to a slot of its own
    info = launch_info(gemm)
    assert info.grid == (132, 1, 1) and info.dyn_smem_bytes + info.static_smem_bytes <= 232448
    assert s.sk_tiles == 12  # the workspace is one tile per tail tile, not one slot per piece
    lines = src.splitlines()
    red, store_c = (next(i for i, ln in enumerate(lines) if nd in ln) for nd in ("skrd::red_partial<", "tma_store(C_desc"))
    assert (red < store_c) == tail_first
