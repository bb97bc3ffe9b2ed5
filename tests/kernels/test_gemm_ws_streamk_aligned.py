"""CPU checks of stream-K's aligned tail split (kernels/gemm/streamk.py, ``aligned``): each tail tile's K steps dealt
out to its own ``workers / sk_tiles`` workers, so that no worker has two pieces.  The schedule covers every tail step
once with one piece per worker and the same largest share as the one-sequence split; the separate fix-up finds every
piece (its TIR arithmetic and the hand-written sum's slot formula); the knob is kept only when set, refused where
it cannot apply, and the sm_90a code computes each worker's range inside its own tile."""

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import streamk  # noqa: E402
from kernels.gemm.lowered import launch_info, ptxas_report  # noqa: E402

ALIGNED = [  # (M, N, K, block_N, workers, dp_waves): sk_tiles divides workers
    (1536, 1536, 8192, 128, 132, -1),  # the awkward shape's hybrid: 12 tail tiles, 11 workers each
    (1536, 128, 8192, 128, 132, 0),  # the same tail streamed alone
    (256, 256, 1024, 128, 8, 0),  # 4 tiles, 2 workers each
    (128, 384, 192, 128, 9, 0),  # 3 tiles of 3 K steps, one step per worker
    (1664, 1408, 4096, 128, 132, -1),  # probe sk6's small plans: 11 tail tiles, 12 workers each
    (256, 768, 1024, 128, 132, 0),  # 12 tiles of 16 steps, 11 workers each
]


def _reduce_rows_slot(wk, lt, s):
    """The slot ``sksp::reduce_rows`` computes from its template arguments (C++ integer division of non-negatives)."""
    q, r, ipt, maxseg = streamk.slot_params(s)
    return wk * maxseg + lt - (wk * q + min(wk, r)) // ipt


@pytest.mark.parametrize("plan", ALIGNED, ids=lambda p: "x".join(map(str, p)))
def test_aligned_split_gives_every_worker_one_piece_of_one_tile(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp, aligned=True)
    seq = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    n, ipt = workers // s.sk_tiles, s.iters_per_tile
    assert (s.per_tile, s.max_segments, s.max_contrib, s.slots) == (n, 1, n, workers)
    assert (s.dp_tiles, s.sk_tiles, s.dp_rounds) == (seq.dp_tiles, seq.sk_tiles, seq.dp_rounds)
    covered = {}
    for w, pieces in enumerate(s.pieces()):
        assert len(pieces) == 1
        slot, lt, k0, steps = pieces[0]
        assert slot == w and lt == w // n and steps == s.end(w) - s.begin(w)
        for k in range(k0, k0 + steps):
            covered[(lt, k)] = covered.get((lt, k), 0) + 1
            assert s.owner(lt * ipt + k) == w
    assert covered == {(lt, k): 1 for lt in range(s.sk_tiles) for k in range(ipt)}
    # the separate fix-up: a tile's workers are lt * n .. lt * n + n - 1, each found at its slot, by either formula
    for lt in range(s.sk_tiles):
        w_lo, w_hi = s.owner(lt * ipt), s.owner((lt + 1) * ipt - 1)
        assert (w_lo, w_hi) == (lt * n, lt * n + n - 1) and s.span(lt) == (lt * n, n)
        assert [streamk.tail_slot(w, lt, s) for w in range(w_lo, w_hi + 1)] == list(range(w_lo, w_hi + 1))
        assert [_reduce_rows_slot(w, lt, s) for w in range(w_lo, w_hi + 1)] == list(range(w_lo, w_hi + 1))
    # balanced as before: one K step at most between workers, the same largest share as the one sequence
    shares = [s.end(w) - s.begin(w) for w in range(workers)]
    assert max(shares) - min(shares) <= 1 and sum(shares) == s.sk_iters
    assert max(shares) == max(seq.end(w) - seq.begin(w) for w in range(workers))


@pytest.mark.parametrize("plan", [(1536, 1536, 8192, 128, 132, -1), (1536, 1536, 8192, 256, 132, 0),
                                  (1000, 520, 192, 128, 7, 0)], ids=lambda p: "x".join(map(str, p)))
def test_the_general_helpers_are_the_one_sequence_split_unchanged(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    q, r, ipt = s.iters_per_worker, s.extra, s.iters_per_tile
    assert s.per_tile == 0
    for w in range(workers):
        assert s.begin(w) == w * q + min(w, r) and s.end(w) == s.begin(w) + q + (w < r)
    for i in range(s.sk_iters):
        assert streamk.tail_owner(i, s) == streamk.sk_owner(i, q, r)
    for lt in range(s.sk_tiles):
        for w in range(s.owner(lt * ipt), s.owner((lt + 1) * ipt - 1) + 1):
            assert streamk.tail_slot(w, lt, s) == streamk.sk_slot(w, lt, q, r, ipt, s.max_segments)
            assert _reduce_rows_slot(w, lt, s) == streamk.sk_slot(w, lt, q, r, ipt, s.max_segments)


def test_on_the_awkward_shape_the_aligned_split_spares_the_longest_workers_a_second_piece():
    """The reason for the knob: in the one sequence, 9 workers' ranges cross one of the 11 tile boundaries (two fall
    between workers), five of them with the largest share (12 steps): they store two pieces and refill the pipeline
    twice.  Aligned, nobody crosses, and the fix-up adds 132 pieces instead of 141."""
    seq = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    al = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1, aligned=True)
    two = [w for w, p in enumerate(seq.pieces()) if len(p) == 2]
    assert len(two) == 9 and sum(seq.end(w) - seq.begin(w) == 12 for w in two) == 5
    assert all(len(p) == 1 for p in al.pieces())
    assert sum(len(p) for p in seq.pieces()) == 141 and sum(len(p) for p in al.pieces()) == 132


def test_aligned_is_kept_only_when_set_and_refused_where_it_cannot_apply():
    assert "aligned" not in streamk.ws_config(128, 6, 64, -1)
    cfg = streamk.ws_config(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=4, tail_cols=32, aligned=True)
    assert cfg["aligned"] is True and streamk.ws_label(cfg) == "dp+sk 128x128 st6 e64 p0 fr4 fv te32 al"
    for inside in (dict(spread=True), dict(red=True), dict(fixup=True)):
        with pytest.raises(ValueError, match="aligned: only the separate fix-up"):
            streamk.ws_config(128, 5, 64, -1, aligned=True, **inside)
    with pytest.raises(ValueError, match="the 72 tail tiles must divide the 132 workers"):
        streamk.ws_schedule(1536, 1536, 8192, 256, 64, 132, 0, aligned=True)
    with pytest.raises(ValueError, match="66 workers per tail tile must not exceed its 1 K steps"):
        streamk.ws_schedule(128, 256, 64, 128, 64, 132, 0, aligned=True)
    with pytest.raises(ValueError, match="streams no tile, there is no tail to split"):
        streamk.ws_schedule(1408, 1536, 8192, 128, 64, 132, -1, aligned=True)


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
def test_aligned_kernels_compute_each_range_inside_its_tile(_fresh):
    """sm_90a code of the six-stage hybrid with the aligned split: worker w streams tile w / 11 from K step
    11 (w % 11) + min(w % 11, 7), its one piece goes to workspace slot w, and the fix-up adds each tile's 11 pieces
    from slot 11 lt on; no spill, no serialised wgmma, the same shared memory as without the knob."""
    base = dict(panel=0, fix_vec=True, fix_rows=4, tail_cols=32)
    gemm, fix = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 6, 64, -1, aligned=True, **base), 132)
    plain, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 6, 64, -1, **base), 132)
    src, fsrc = gemm.get_kernel_source(), fix.get_kernel_source()
    # the K offset (in elements) of the worker's first step and the B rows of its tile, in the producer's TMA loads
    assert ("((((((int)blockIdx.x) % 11) * 704) + (min((((int)blockIdx.x) % 11), 7) * 64)) + (ko_1 * 64)), "
            "((((int)blockIdx.x) / 11) * 128));") in src
    # its first tail step: tile w / 11, then 11 steps for each worker before it in the tile, plus min(w % 11, 7)
    assert ("((((((int)blockIdx.x) / 11) * 128) + ((((int)blockIdx.x) % 11) * 11)) + min((((int)blockIdx.x) % 11), 7))"
            in src)
    # its one piece, both consumers' 64 rows, to workspace slot w
    assert "(h_1 * 32), (((int)blockIdx.x) * 128));" in src and "(h_3 * 32), ((((int)blockIdx.x) * 128) + 64));" in src
    assert " % 11" not in plain.get_kernel_source()
    assert launch_info(gemm).dyn_smem_bytes == launch_info(plain).dyn_smem_bytes
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"]
    assert launch_info(fix).grid == (32, 12, 1)
    # the hand-written sum over 11 pieces, slots found by (Q, R, IPT, MAXSEG) = (1, 0, 11, 1): the slot is the worker
    assert "sksp::reduce_rows<128, 11, 1, 0, 11, 1>(" in fsrc
    assert "(((int)blockIdx.y) * 11), 11, ((int)blockIdx.y)," in fsrc


def test_the_aligned_hybrid_comes_apart_into_its_wave_and_its_tail():
    """The suite's timeline runs a winner's wave and tail alone: with ``aligned`` the wave has nothing streamed (the
    knob dropped) and the tail alone deals out the hybrid's pieces to the same workers."""
    from measure.suites.gemm import streamk_ws as suite

    cfg = streamk.ws_config(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=4, tail_cols=32, aligned=True)
    rows = suite.wave_tail_rows(1536, 1536, 8192, cfg, 132)
    assert rows == 1408
    wave, tail = suite.part_config(cfg, -1), suite.part_config(cfg, 0)
    assert "aligned" not in wave and tail["aligned"] is True and cfg["aligned"] is True
    whole = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1, aligned=True)
    alone = streamk.ws_schedule(1536 - rows, 1536, 8192, 128, 64, 132, 0, aligned=True)
    assert [[p[1:] for p in w] for w in alone.pieces()] == [[p[1:] for p in w] for w in whole.pieces()]
    assert streamk.ws_schedule(rows, 1536, 8192, 128, 64, 132, -1).sk_tiles == 0
    pred, waves = suite.predicted_speedup(1536, 1536, 8192, cfg, 132)
    assert waves["pieces_max"] == 1 and waves["contributors_max"] == 11
    assert waves["critical_path_tiles"] == pytest.approx((128 + 12) / 128 * 128 / 256)  # in 128 x 256 tiles
