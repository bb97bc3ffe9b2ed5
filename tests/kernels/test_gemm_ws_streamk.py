"""CPU checks of stream-K on the hand-written pipeline (kernels/gemm/streamk.py, ``streamk_ws``):
the schedule covers every tail K step once and the fix-up's slot arithmetic finds exactly the
pieces the kernel stores; the generated CUDA keeps the pipeline's structure (producer and two
consumer warpgroups, register budgets, TMA loads, fp32 partials by TMA store, fp16 whole tiles);
the additive changes to split-K leave the recorded configurations' calls unchanged."""

import itertools
import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from coursebook import claims  # noqa: E402
from kernels.gemm import splitk, streamk  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from measure.suites.gemm import streamk_ws as suite  # noqa: E402

SMEM_LIMIT = streamk.SMEM_LIMIT  # bytes of shared memory one block may use on the H100/H200

PLANS = [  # (M, N, K, block_N, workers, dp_waves)
    (1536, 1536, 8192, 256, 132, 0), (1536, 1536, 8192, 128, 132, -1), (1536, 1536, 8192, 128, 132, 0),
    (1024, 1024, 16384, 256, 132, 0), (2048, 2048, 8192, 256, 132, -1), (4096, 4096, 512, 128, 132, -1),
    (4096, 4096, 512, 128, 132, 6), (384, 768, 1024, 256, 8, -1), (1000, 520, 192, 128, 7, 0), (128, 256, 64, 256, 132, 0),
]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
def test_schedule_covers_each_tail_step_once_and_the_fixup_finds_every_piece(plan):
    M, N, K, bn, workers, dp = plan
    s = streamk.ws_schedule(M, N, K, bn, 64, workers, dp)
    assert s.dp_tiles + s.sk_tiles == s.tiles and s.dp_tiles == s.dp_rounds * workers
    assert s.dp_rounds == (s.tiles // workers if dp == -1 else dp)
    ipt = s.iters_per_tile
    covered: dict[tuple[int, int], int] = {}
    slots: dict[int, set[int]] = {}
    for w, pieces in enumerate(s.pieces()):
        assert len(pieces) <= s.max_segments
        assert sum(p[3] for p in pieces) == s.end(w) - s.begin(w)
        for slot, lt, k0, n in pieces:
            assert w * s.max_segments <= slot < (w + 1) * s.max_segments <= s.slots
            slots.setdefault(lt, set()).add(slot)
            for k in range(k0, k0 + n):
                covered[(lt, k)] = covered.get((lt, k), 0) + 1
    assert covered == {(lt, k): 1 for lt in range(s.sk_tiles) for k in range(ipt)}
    q, r = s.iters_per_worker, s.extra
    for lt in range(s.sk_tiles):
        lo, hi = streamk.sk_owner(lt * ipt, q, r), streamk.sk_owner((lt + 1) * ipt - 1, q, r)
        assert hi - lo + 1 <= s.max_contrib
        assert {streamk.sk_slot(w, lt, q, r, ipt, s.max_segments) for w in range(lo, hi + 1)} == slots[lt]
    # the load is balanced: no worker runs more than one K step over the mean
    per_worker = [s.dp_rounds * ipt + s.end(w) - s.begin(w) for w in range(workers)]
    assert max(per_worker) - min(per_worker) <= 1 and sum(per_worker) == s.tiles * ipt


@pytest.mark.parametrize("panel", [0, 8, 16])
def test_rasterization_visits_every_tile_once(panel):
    for gm, gn in ((12, 6), (12, 12), (8, 4), (3, 5)):
        seen = [streamk.raster(t, panel, gm, gn) for t in range(gm * gn)]
        assert sorted(seen) == list(itertools.product(range(gm), range(gn)))


def test_plan_errors_name_the_constraint():
    with pytest.raises(ValueError, match="dp_waves=2"):
        streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, 2)
    with pytest.raises(ValueError, match="nothing to fix up"):
        streamk.streamk_ws_fixup(1024, 1024, 1024, 256, 64, 8, 8, -1)  # 32 tiles on 8 workers: 4 full waves


def test_wave_model_predicts_the_gain_where_the_last_wave_is_poor():
    sk = streamk.ws_config(256, 4, 64, 0)  # 128 x 256 tiles streamed whole
    pred_awkward, w = suite.predicted_speedup(1536, 1536, 8192, sk, 132)
    pred_full, _ = suite.predicted_speedup(2048, 2048, 8192, sk, 132)
    assert w["tiles"] == 72 and w["waves_data_parallel"] == 1
    assert pred_awkward == pytest.approx(132 / 72) and pred_full == pytest.approx(132 / 128)
    assert w["critical_path_tiles"] >= w["ideal_waves"]


def test_the_row_order_hybrid_comes_apart_into_its_wave_and_its_tail():
    hybrid = streamk.ws_config(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4)  # a row-order hybrid
    rows = suite.wave_tail_rows(1536, 1536, 8192, hybrid, 132)
    assert rows == 1408  # 132 whole tiles = 11 of the 12 tile rows
    whole = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    wave = streamk.ws_schedule(rows, 1536, 8192, 128, 64, 132, -1)
    tail = streamk.ws_schedule(1536 - rows, 1536, 8192, 128, 64, 132, 0)
    assert (wave.dp_tiles, wave.sk_tiles) == (whole.dp_tiles, 0)
    assert (tail.dp_tiles, tail.sk_tiles) == (0, whole.sk_tiles)
    # the tail alone deals out the same pieces to the same workers as the hybrid's tail
    assert [[p[1:] for p in w] for w in tail.pieces()] == [[p[1:] for p in w] for w in whole.pieces()]
    # nothing to take apart: tiles in panels, a fix-up launched early, everything streamed, a fix-up inside the
    # kernel, whole tiles that end
    # inside a tile row (2048 x 2048 with 128 x 128 tiles: 256 tiles, 132 whole, 16 to a row)
    assert suite.wave_tail_rows(1536, 1536, 8192, dict(hybrid, panel=8), 132) is None
    assert suite.wave_tail_rows(1536, 1536, 8192, dict(hybrid, pdl=True), 132) is None  # the fix-up overlaps it
    assert suite.wave_tail_rows(1536, 1536, 8192, streamk.ws_config(256, 4, 64, 0, panel=0), 132) is None
    assert suite.wave_tail_rows(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1, panel=0, spread=True), 132) is None
    assert suite.wave_tail_rows(2048, 2048, 8192, hybrid, 132) is None
    assert suite.wave_tail_rows(1408, 1536, 8192, hybrid, 132) is None  # one full wave, no tail


def test_split_k_additions_keep_the_recorded_calls():
    from tools.kernel_digest import calls

    assert splitk.ws_splitk_config(4) == dict(splits=4, block_N=256, block_K=64, stages=4, cluster=1, epi_cols=64,
                                              panel=8, inflight=0)
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4)) == "ws s=4 128x256 st4 e64"
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, reduce_rows=8)) == "ws s=4 128x256 st4 e64 r8"
    (_, _, _), (red, rargs, rkw) = calls(lambda: splitk.build_ws(1024, 1024, 16384, splitk.ws_splitk_config(4), 132))
    assert rargs == (4, 1024, 1024) and rkw == {}
    (_, _, _), (red, rargs, rkw) = calls(
        lambda: splitk.build_ws(1024, 1024, 16384, splitk.ws_splitk_config(4, reduce_rows=32), 132))
    assert rargs == (4, 1024, 1024) and rkw == {"block_M": 32}


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
def test_pure_stream_k_stores_fp32_pieces_into_per_worker_slots(_fresh):
    cfg = streamk.ws_config(256, 4, 64, 0)
    gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    src = gemm.get_kernel_source()
    p = instruction_path(src)
    assert p["tma_load"] and p["tma_store"] and p["wgmma"] and set(wgmma_shapes(src)) == {(64, 256, 16)}
    info = launch_info(gemm)
    assert info.grid == (132, 1, 1) and "__launch_bounds__(384, 1)" in src
    assert info.smem_bytes <= SMEM_LIMIT  # four 48 KB stages + the fp32 staging of both consumers
    assert "warpgroup_reg_dealloc<40>" in src and src.count("warpgroup_reg_alloc<232>") == 2
    assert "full[0].init(128);" in src and "empty[0].init(8);" in src
    # worker w's range starts at w * 69 + min(w, 108) (9216 tail steps on 132 workers)
    assert "(((int)blockIdx.x) * 69) + min(((int)blockIdx.x), 108))" in src
    # pieces: rows (w * 2 + seg) * 128 (+ 64 for the second consumer) of the fp32 workspace; no C store, no atomics
    assert "tma_store(W_desc, (&(((float*)F0_s)" in src and "tma_store(W_desc, (&(((float*)F1_s)" in src
    assert "((((int)blockIdx.x) * 256) + (seg" in src and "C_desc" not in src and "atomic" not in src.lower()
    fsrc = fix.get_kernel_source()
    s = streamk.ws_schedule(1536, 1536, 8192, 256, 64, 132, 0)
    assert launch_info(fix).grid == (8, s.sk_tiles, 1)
    assert f"for (int c = 0; c < {s.max_contrib}; ++c)" in fsrc and "float4" in fsrc and "half_t" in fsrc


@pytest.mark.slow
def test_hybrid_stores_whole_tiles_in_fp16_and_the_tail_in_fp32(_fresh):
    gemm, fix = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1), 132)
    src = gemm.get_kernel_source()
    assert set(wgmma_shapes(src)) == {(64, 128, 16)} and launch_info(gemm).smem_bytes <= SMEM_LIMIT
    assert "tma_store(C_desc, (&(((half_t*)H0_s)" in src and "tma_store(W_desc, (&(((float*)F0_s)" in src
    # the ring phase of a tail piece starts after the worker's 128 whole-tile steps
    assert "128 + " in src or "+ 128)" in src
    assert fix is not None and launch_info(fix).grid == (8, 12, 1)


def _fabricated(awk: dict, skinny: dict, full: dict, order: dict | None = None, fw: dict | None = None) -> dict:
    """A results file holding only suite gemm.streamk_ws, with the given speedups per shape; ``order``: the
    awkward shape's search times (ms) by label, ``fw``: the speedups of its full-wave bench."""
    from coursebook.tiles import SKWS

    recs = [dict(kind="bench", name=SKWS[k], ms=0.05, tflops=500.0, speedup=sp,
                 config=streamk.ws_config(256, 4, 64, 0), predicted_speedup_vs_dp=1.5,
                 waves=dict(tiles=72, waves_data_parallel=1, ideal_waves=0.55, last_wave_fill_data_parallel=0.55))
            for k, sp in (("awk", awk), ("skinny", skinny), ("full", full))]
    if order is not None:
        recs.append(dict(kind="search", name=SKWS["awk"], ms=order))
    if fw is not None:
        recs.append(dict(kind="bench", name="full-wave 128x144 1536x1536x8192", ms=0.055, speedup=fw))
    return {"suites": {"gemm.streamk_ws": {"records": recs}}}


def test_page_sentences_on_stream_k_follow_the_records():
    from coursebook import claims, tiles

    def cases(res):  # the timeline sentence needs the profiler note: its own test is in tests/book/test_page_gemm.py
        return {c.key.split("skws.")[1]: c.case for c in tiles.streamk_ws_claims(res) if ".skws.tl." not in c.key}

    assert set(cases(None).values()) == {None}  # no record: the page says it cannot tell
    good = _fabricated({"cuBLAS": 0.93, "data-parallel": 1.6, "full-wave 128x144": 1.01},
                       {"cuBLAS": 1.01, "split-K ws": 1.02, "data-parallel": 3.0}, {"data-parallel": 1.0},
                       order={"sk 128x256 st4 e64": 0.092, "sk 128x256 st4 e64 p0": 0.075}, fw={"cuBLAS": 0.97})
    bad = _fabricated({"cuBLAS": 0.85, "data-parallel": 0.97, "full-wave 128x144": 0.85},
                      {"cuBLAS": 0.97, "split-K ws": 0.99}, {"data-parallel": 0.96},
                      order={"sk 128x256 st4 e64": 0.075, "sk 128x256 st4 e64 p0": 0.092}, fw={"cuBLAS": 0.85})
    assert cases(good) == {**{k: "above" for k in cases(good)}, "awk.order": "lower"}
    assert cases(bad) == {**{k: "below" for k in cases(bad)}, "awk.order": "higher"}
    tie = _fabricated({}, {}, {}, order={"sk 128x256 st4 e64": 0.075, "sk 128x256 st4 e64 p0": 0.0745})
    assert cases(tie)["awk.order"] == "tie"
    v = tiles.streamk_ws_values(good)
    assert v["derived.gemm.skws.awk.panel_us"] == "92.0" and v["derived.gemm.skws.awk.row_us"] == "75.0"
    assert v["derived.gemm.skws.fw.cublas"] == "0.97" and v["derived.gemm.skws.fw.us"] == "55.0"
    assert v["calc.gemm.skws.fw.tiles"] == "132" and v["calc.gemm.skws.awk.tiles"] == "72"
    v = tiles.streamk_ws_values(good)
    assert v["derived.gemm.skws.awk.cublas"] == "0.93" and v["derived.gemm.skws.skinny.splitk"] == "1.02"
    assert tiles.streamk_ws_values(None)["derived.gemm.skws.awk.dp"] == "—"
    # the page names the winner's form from its configuration: the aligned split and the fix-up's PDL signal
    form = "derived.gemm.skws.awk.form"
    assert "没有 block 跨两块" not in v[form] and "PDL" not in v[form]
    for r in good["suites"]["gemm.streamk_ws"]["records"]:
        if r["name"] == tiles.SKWS["awk"] and r["kind"] == "bench":
            r["config"] = streamk.ws_config(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4, pdl=True, pdl_at="end",
                                            aligned=True)
    v = tiles.streamk_ws_values(good)[form]
    assert v.startswith("整波之后只切尾部，128×128 的块，切开的块按行排队") and "没有 block 跨两块" in v
    assert v.endswith("拼合 kernel 以 PDL 启动、各段写完即放行") and "暂存区" not in v
    for r in good["suites"]["gemm.streamk_ws"]["records"]:  # one staging buffer for both (``share``), six stages
        if r["name"] == tiles.SKWS["awk"] and r["kind"] == "bench":
            r["config"] = streamk.ws_config(128, 6, 128, -1, panel=0, fix_vec=True, fix_rows=4, tail_cols=64,
                                            share=True, pdl=True, pdl_at="end", aligned=True)
    v = tiles.streamk_ws_values(good)[form]
    assert "整块和尾部段先后用同一块暂存区，省下的共享内存让流水有 6 级" in v and v.endswith("各段写完即放行")
    # the wave table takes the new records in, with the model's prediction beside the measurement
    rows = [r for r in tiles.wave_rows(good) if r["kind"].startswith("stream-K，手写")]
    assert len(rows) == 3 and rows[0]["meas"] == 1.6 and rows[0]["holds_dir"]
    assert claims.UNKNOWN not in {c.text for c in tiles.streamk_ws_claims(good) if ".skws.tl." not in c.key}


def test_full_wave_tile_gives_the_awkward_shape_one_tile_per_sm():
    """128 x 144 tiles: 12 x 11 = 132 tiles for 132 SMs, one full wave; the last tile column is clipped."""
    from kernels.gemm.ws import ws_grid
    from ledger.gemm import grid_waves

    cfg = suite.FULL_WAVE
    for shape in suite.FULL_WAVE_SHAPES:
        M, N, _ = shape
        assert grid_waves(M, N, cfg["block_M"], cfg["block_N"], sms=132) == (132, 1, 1.0)
        gn, gm = ws_grid(M, N, cfg["block_N"], cfg["cluster"])
        assert (gn, gm) == (11, 12) and gn * cfg["block_N"] > N  # the TMA store clips the last column
        # the 128 x 256 tiling of the baseline fills 72 of the 132 SMs
        assert grid_waves(M, N, 128, 256, sms=132)[0] == 72


@claims.guards("gemm.skws.awk.order")
@pytest.mark.parametrize("panel", [0, 8])
def test_row_order_keeps_every_tile_row_of_the_stream_at_the_same_k(panel):
    """1536^3-ish awkward shape, 128 x 256 tiles streamed whole on 132 workers: in row order (panel 0) the 11
    workers of each tile row start where those of row 0 do (same N block, a few K steps apart: the first
    workers take one step more), so at any time every row reads the same few B tiles; in panels of eight rows
    walked by column they do not."""
    s = streamk.ws_schedule(1536, 1536, 8192, 256, 64, 132, 0)
    starts = {}  # worker -> (M block, N block, first K step) of its first piece
    for w, pieces in enumerate(s.pieces()):
        _, lt, k0, _ = pieces[0]
        mb, nb = streamk.raster(lt, panel, s.grid_m, s.grid_n)
        starts[w] = (mb, nb, k0)
    per_row = s.sk_iters // s.grid_m // s.iters_per_worker  # workers a tile row holds
    assert per_row == 11
    def pos(w):  # where in its row's sequence of (N block, K step) worker w starts
        return starts[w][1] * s.iters_per_tile + starts[w][2]

    in_step = all(abs(pos(w) - pos(w % per_row)) <= 2 * per_row for w in range(s.workers))
    assert in_step == (panel == 0)


def test_fixup_knobs_are_named_checked_and_reach_the_fixup_kernel():
    from tools.kernel_digest import calls

    base = streamk.ws_config(128, 5, 64, -1, panel=0)
    assert "fix_rows" not in base and "fix_unroll" not in base  # earlier configurations unchanged
    cfg = streamk.ws_config(128, 5, 64, -1, panel=0, fix_rows=4, fix_unroll=True)
    assert streamk.ws_label(cfg) == "dp+sk 128x128 st5 e64 p0 fr4 fu"
    with pytest.raises(ValueError, match="fix_rows=48 must divide 128"):
        streamk.ws_config(128, 5, 64, -1, fix_rows=48)
    with pytest.raises(ValueError, match="with fixup, spread or red there is none"):
        streamk.ws_config(128, 5, 64, -1, fixup=True, fix_rows=4)
    # build_ws makes the fix-up first, then the stream-K kernel
    (_, _, fkw), (_, _, gkw) = calls(lambda: streamk.build_ws(1536, 1536, 8192, cfg, 132))
    assert fkw == {"rows": 4, "unroll": True} and "pdl" not in gkw
    (_, _, fkw), (_, _, gkw) = calls(lambda: streamk.build_ws(1536, 1536, 8192, base, 132))
    assert fkw == {} and "pdl" not in gkw
    vec = streamk.ws_config(128, 5, 64, -1, panel=0, fix_rows=4, fix_vec=True, pdl=True)
    assert "fix_vec" not in base and streamk.ws_label(vec) == "dp+sk 128x128 st5 e64 p0 pdl fr4 fv"
    (_, _, fkw), (_, _, gkw) = calls(lambda: streamk.build_ws(1536, 1536, 8192, vec, 132))
    assert fkw == {"pdl": True, "rows": 4, "vec": True} and gkw.get("pdl") is True
    with pytest.raises(ValueError, match="fix_vec: the hand-written sum has no contributor loop to unroll"):
        streamk.ws_config(128, 5, 64, -1, fix_vec=True, fix_unroll=True)
    with pytest.raises(ValueError, match="with fixup, spread or red there is none"):
        streamk.ws_config(128, 5, 64, -1, red=True, fix_vec=True)


def test_reg_store_is_named_checked_and_builds_its_own_entry():
    """``reg_store`` (label ``rs``): the tail pieces from registers, a jit entry of its own; earlier configurations
    keep theirs; with a fix-up inside the kernel it is refused, naming why."""
    from tools.kernel_digest import calls

    base = streamk.ws_config(128, 5, 64, -1, panel=0, fix_rows=4, fix_vec=True)
    rs = streamk.ws_config(128, 6, 64, -1, panel=0, fix_rows=4, fix_vec=True, reg_store=True)
    assert "reg_store" not in base and streamk.ws_label(rs) == "dp+sk 128x128 st6 e64 p0 fr4 fv rs"
    (fix, _, fkw), (gemm, gargs, gkw) = calls(lambda: streamk.build_ws(1536, 1536, 8192, rs, 132))
    assert gemm.func.__name__ == "streamk_ws_rs" and fix.func.__name__ == "streamk_ws_fixup"
    assert fkw == {"rows": 4, "vec": True} and gkw["stages"] == 6 and "pdl" not in gkw
    (_, _, _), (gemm, _, _) = calls(lambda: streamk.build_ws(1536, 1536, 8192, base, 132))
    assert gemm.func.__name__ == "streamk_ws"
    for other in (dict(fixup=True), dict(spread=True), dict(red=True)):
        with pytest.raises(ValueError, match="reg_store stores the separate fix-up's pieces"):
            streamk.ws_config(128, 5, 64, -1, reg_store=True, **other)
    with pytest.raises(ValueError, match="reg_store: .* needs a streamed tail"):  # 132 tiles: no tail
        streamk.streamk_ws_rs(1408, 1536, 8192, 128, 64, 5, 0, 0, 64, 132, -1)


@pytest.mark.slow
def test_reg_store_writes_the_pieces_from_registers_without_staging(_fresh):
    """The tail pieces go to the same workspace rows as the TMA form (slot ``w * segments + seg``, the second
    consumer 64 rows down), one register store per chunk and consumer; the fp32 staging is gone from shared memory
    (so six stages fit); whole tiles still go to C by TMA store."""
    s = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    tma, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1, panel=0), 132)
    rs5, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1, panel=0, reg_store=True), 132)
    rs6, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 6, 64, -1, panel=0, reg_store=True), 132)
    src = rs5.get_kernel_source()
    assert "F0_s" not in src and "tma_store(W_desc" not in src and "tma_store(C_desc, (&(((half_t*)H0_s)" in src
    assert src.count("skqf::store_partial<64>(") == 2  # one per consumer, in the unrolled loop over the chunks
    slot = s.max_segments * 128 * 128
    assert f"(((int)blockIdx.x) * {slot})" in src and f"+ {64 * 128})" in src
    assert launch_info(tma).smem_bytes - launch_info(rs5).smem_bytes >= 2 * 64 * 64 * 4
    assert launch_info(rs6).smem_bytes <= SMEM_LIMIT
    # with the fp32 staging, six stages do not fit: refused before lowering (the guard of ws_smem_bytes)
    with pytest.raises(ValueError, match=r"stages=6, .*: 245760 bytes of shared memory, past the 232448"):
        streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 6, 64, -1, panel=0), 132)


@pytest.mark.slow
def test_full_wave_kernel_is_persistent_on_132_blocks_with_n144_wgmma(_fresh):
    from kernels.gemm.ladder import build_tuned

    k = build_tuned(1536, 1536, 8192, suite.FULL_WAVE, 132)
    src = k.get_kernel_source()
    assert set(wgmma_shapes(src)) == {(64, 144, 16)}
    p = instruction_path(src)
    assert p["tma_load"] and p["tma_store"] and p["wgmma"]
    info = launch_info(k)
    assert info.grid == (132, 1, 1) and info.smem_bytes <= SMEM_LIMIT


@pytest.mark.slow
def test_unrolled_fixup_asks_nvcc_to_unroll_the_loop_over_the_pieces(_fresh):
    s = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    fix = streamk.streamk_ws_fixup(1536, 1536, 8192, 128, 64, 0, 132, -1, rows=4, unroll=True)
    src = fix.get_kernel_source()
    assert launch_info(fix).grid == (128 // 4, s.sk_tiles, 1)
    loop = f"for (int c = 0; c < {s.max_contrib}; ++c)"
    assert re.search(r"#pragma unroll\s*" + re.escape(loop), src)
    plain = streamk.streamk_ws_fixup(1536, 1536, 8192, 128, 64, 0, 132, -1, rows=4).get_kernel_source()
    assert loop in plain and not re.search(r"#pragma unroll\s*" + re.escape(loop), plain)


@pytest.mark.slow
def test_vec_fixup_loads_every_piece_before_adding(_fresh):
    """``fix_vec``: one call of the hand-written sum per block (128 threads, ``rows`` rows of a tail tile), templated
    on the schedule the stream-K kernel was built with; the generated loop over the pieces is gone."""
    s = streamk.ws_schedule(1536, 1536, 8192, 128, 64, 132, -1)
    fix = streamk.streamk_ws_fixup(1536, 1536, 8192, 128, 64, 0, 132, -1, rows=4, vec=True)
    src = fix.get_kernel_source()
    info = launch_info(fix)
    assert info.grid == (128 // 4, s.sk_tiles, 1) and info.block == (128, 1, 1)
    call = (f"sksp::reduce_rows<128, {s.max_contrib}, {s.iters_per_worker}, {s.extra}, {s.iters_per_tile}, "
            f"{s.max_segments}>(")
    assert src.count(call) == 1
    assert f"for (int c = 0; c < {s.max_contrib}; ++c)" not in src
    with pytest.raises(ValueError, match="vec stores whole rows of four columns without clipping: M=1500"):
        streamk.streamk_ws_fixup(1500, 1536, 8192, 128, 64, 0, 132, -1, rows=4, vec=True)


def test_tail_cols_is_a_knob_of_the_staged_pieces_only():
    assert "tail_cols" not in streamk.ws_config(128, 6, 64, -1)
    cfg = streamk.ws_config(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=4, tail_cols=32)
    assert cfg["tail_cols"] == 32 and streamk.ws_label(cfg) == "dp+sk 128x128 st6 e64 p0 fr4 fv te32"
    with pytest.raises(ValueError, match="tail_cols sizes the fp32 staging of the tail pieces"):
        streamk.ws_config(128, 6, 64, -1, reg_store=True, tail_cols=32)
    with pytest.raises(ValueError, match="tail_cols=48 must divide block_N=128"):
        streamk.ws_config(128, 6, 64, -1, tail_cols=48)


@pytest.mark.slow
def test_narrow_fp32_staging_makes_room_for_a_sixth_stage(_fresh):
    """``tail_cols=32``: the tail pieces leave in chunks of 32 fp32 columns (four TMA stores per consumer instead of
    two, to the same workspace rows), whole tiles still in chunks of 64 fp16 columns; the 16 KB saved let six stages
    fit, where six stages with 64-column fp32 staging do not."""
    six, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 6, 64, -1, panel=0, tail_cols=32), 132)
    five, _ = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1, panel=0), 132)
    src, src5 = six.get_kernel_source(), five.get_kernel_source()
    assert launch_info(six).smem_bytes <= SMEM_LIMIT
    # one more stage (32 KB of operands), half the fp32 staging (16 KB less); the barriers are static
    assert launch_info(six).dyn_smem_bytes - launch_info(five).dyn_smem_bytes == 32 * 1024 - 2 * 64 * 32 * 4
    assert "for (int h_1 = 0; h_1 < 4; ++h_1)" in src and "for (int h_1 = 0; h_1 < 2; ++h_1)" in src5
    # one 32-column TMA box per chunk, at column h * 32 of the piece's workspace rows (64 columns: two boxes a chunk)
    assert "tma_store(W_desc, (&(((float*)F0_s)[0])), (h_1 * 32), ((((int)blockIdx.x) * 256) + (seg_1 * 128)));" in src
    assert "tma_store(W_desc, (&(((float*)F0_s)[(i_2 * 2048)])), ((h_1 * 64) + (i_2 * 32))," in src5
    for s in (src, src5):  # whole tiles: two chunks of 64 fp16 columns
        assert "(h * 64)" in s and "tma_store(C_desc, (&(((half_t*)H0_s)" in s


@pytest.mark.slow
@pytest.mark.parametrize("inflight", [0, 1])
def test_six_stage_hybrid_keeps_its_registers_and_its_wgmma_in_flight(_fresh, inflight):
    """The six-stage hybrid of probe sk6 (narrow tail staging), also with one more wgmma batch in flight: ptxas
    neither spills nor serialises the wgmma (it would, were the accumulator touched while a batch is in flight)."""
    from kernels.gemm.lowered import ptxas_report

    cfg = streamk.ws_config(128, 6, 64, -1, inflight=inflight, panel=0, fix_vec=True, fix_rows=4, tail_cols=32)
    gemm, _ = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    rep = ptxas_report(gemm.get_kernel_source())
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"]
    # a batch left in flight only with inflight=1: in both main loops (whole tiles, tail pieces) of both consumers
    assert gemm.get_kernel_source().count("tl::wait_wgmma<1>();") == 4 * inflight
