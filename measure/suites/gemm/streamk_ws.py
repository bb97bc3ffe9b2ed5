"""Suite ``gemm.streamk_ws``: stream-K on the persistent hand-written pipeline
(:func:`kernels.gemm.streamk.build_ws`: whole tiles stored in fp16, the streamed tail's pieces as
fp32 partials by TMA store, then a fix-up kernel that adds each tail tile's pieces and casts it)
against cuBLAS fp16 and the same pipeline's data-parallel tiling, in alternating rounds, next to
the ledger's wave-count prediction.

Three shapes, chosen by the wave count (132 SMs, 128 x 256 tiles):

* 1536 x 1536 x 8192 -- 72 tiles, one wave 55 % full (144 tiles of 128 x 128: a second wave 9 %
  full): the model predicts stream-K near 1.8x the data-parallel tiling;
* 1024 x 1024 x 16384 -- the split-K shape, 32 tiles: the model predicts about 4x, the same gain
  as split-K; the best recorded split-K configuration runs in the same rounds;
* 2048 x 2048 x 8192 -- 128 tiles, one wave 97 % full: the model predicts almost nothing, and the
  fix-up is pure cost.

On the awkward shape the rounds also time a third answer to the same wave problem: the data-parallel
pipeline with 128 x 144 tiles (:data:`FULL_WAVE`), 12 x 11 = 132 tiles, exactly one per SM, no tail and
no fix-up (the last tile column is clipped: 11 x 144 > 1536); it has its own bench record against
cuBLAS and the 128 x 256 tiling.  The library's kernel names (profiler) are noted at every shape, and so is
where one call's time goes on the GPU's clock (profiler, 30 calls after the flush): the bench winner's kernels
(stream-K, then its fix-up) with their durations and the gap between them, cuBLAS's and the full-wave tiling's; and,
where the winner's schedule comes apart (:func:`wave_tail_rows`), its wave and its tail each run alone.

Each stream-K time includes its fix-up.  The fix-up inside the kernel (``fixup``, label ``last``):
the last piece of a tail tile's chunk to be counted adds the tile's pieces and writes C; spread inside the
kernel (``spread``): every contributor of a tail tile adds a band of its rows once all pieces are counted.  The
counters of both are checked with every check of their runners (see :mod:`measure.suites.gemm.splitk_ws`).
"""
from typing import Any

from kernels.gemm.ladder import build_tuned
from kernels.gemm.splitk import check_counters, make_ws_runner as make_splitk_runner, ws_splitk_config
from kernels.gemm.streamk import build_ws, make_ws_runner, ws_config as _c, ws_label as label, ws_schedule
from ledger.gemm import grid_waves
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import (BENCH_ROUNDS, SEARCH_ROUNDS, gemm_cost, gemm_tolerance, note_kernel_timeline,
                                        note_library_kernels, rel_fro_err, screen_workspace_candidates)
from measure.suites.gemm.splitk_ws import NO_SPLIT, check_fixup_counters

SHAPES = [(1536, 1536, 8192), (1024, 1024, 16384), (2048, 2048, 8192)]
#: Targets of the issue by shape (vs cuBLAS; on the awkward shape also >= the data-parallel tiling).
TARGETS: dict[tuple[int, int, int], dict[str, float]] = {
    (1536, 1536, 8192): {"speedup:cuBLAS": 0.9, "speedup:data-parallel": 1.0},
    (1024, 1024, 16384): {"speedup:cuBLAS": 1.0},
}
#: The recorded best split-K configuration at 1024 x 1024 x 16384 (suite gemm.splitk_ws), timed in
#: the same rounds there.
SPLITK_BEST = ws_splitk_config(4)

#: Candidates by shape: the recorded bests -- 128 x 128 tiles as full waves + a streamed tail (the
#: classic hybrid) on the awkward shape, 128 x 256 tiles streamed whole on the others -- and the same
#: schedules with the fix-up inside the kernel (no second kernel; the pieces still go through the
#: workspace): the hybrid with five or six stages (no fp32 staging: room for a sixth), 128 x 256
#: tiles streamed whole (at most three pieces per tile); and the hybrid with its fix-up kernel launched
#: as a programmatic dependent (``pdl``: launched while the stream-K kernel runs, it waits for it);
#: on the awkward shape also 128 x 256 tiles streamed whole with the fix-up kernel, plain and ``pdl``;
#: and the streamed tiles taken in row order (``panel=0``: the workers of one tile row keep in step with
#: those of every other row, at the same K offsets, so the B tiles they read are shared in L2) instead of
#: in panels of eight rows walked column by column; on the awkward shape also the row-order hybrid with the fix-up
#: spread over the contributors inside the kernel (``spread``: every piece of a tail tile is counted, then each of
#: its workers adds its own band of the tile's rows from every piece); and on every shape the separate fix-up with its
#: sum written by hand (``fix_vec``, 4 rows of a tail tile per block: a thread's loads of every piece in flight at
#: once), also launched as a programmatic dependent on the awkward shape; and there the tail split tile by tile
#: (``aligned``: each tail tile its own 11 workers, one piece each), alone and with the fix-up signalled after the
#: tail pieces (``pdl_at="end"``), at five stages and at six (narrow tail staging, ``tail_cols=32``), also with one
#: more wgmma batch in flight: the levers that paid in probe sk6; and at six stages with the full tail staging, the
#: whole tiles staged 128 columns at a time in the same buffer as the tail pieces (``share``, probe sk8).
CANDIDATES: dict[tuple[int, int, int], list[dict[str, Any]]] = {
    (1536, 1536, 8192): [_c(128, 5, 64, -1), _c(128, 5, 64, -1, fixup=True), _c(128, 6, 64, -1, fixup=True),
                         _c(256, 4, 64, 0, fixup=True), _c(128, 5, 64, -1, pdl=True),
                         _c(256, 4, 64, 0), _c(256, 4, 64, 0, pdl=True),
                         _c(128, 5, 64, -1, panel=0), _c(256, 4, 64, 0, panel=0),
                         _c(128, 5, 64, -1, panel=0, spread=True),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4, pdl=True),
                         *[_c(128, st, 64, -1, panel=0, fix_vec=True, fix_rows=4, aligned=True, **kw) for st, kw in (
                             (5, {}), (5, dict(pdl=True, pdl_at="end")),
                             (6, dict(tail_cols=32, pdl=True, pdl_at="end")),
                             (6, dict(tail_cols=32, pdl=True, pdl_at="end", inflight=1)))],
                         _c(128, 6, 128, -1, panel=0, fix_vec=True, fix_rows=4, aligned=True, tail_cols=64, share=True,
                            pdl=True, pdl_at="end")],
    (1024, 1024, 16384): [_c(256, 4, 64, 0), _c(256, 4, 64, 0, fixup=True), _c(256, 4, 64, 0, panel=0),
                          _c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=4)],
    (2048, 2048, 8192): [_c(256, 4, 64, 0), _c(256, 4, 64, 0, fixup=True), _c(256, 4, 64, 0, fix_vec=True, fix_rows=4),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4)],
}
QUICK_SHAPE = (256, 512, 4096)
#: The full-wave tiling of the awkward shape: 128 x 144 tiles (the hand-written pipeline, persistent on
#: one block per SM, six stages, the epilogue in chunks of 72 columns), 132 tiles for 132 SMs.
FULL_WAVE = dict(ws=True, block_M=128, block_N=144, block_K=64, stages=6, threads=256, panel=8, inflight=0,
                 epi_cols=72, persistent=True, cluster=1)
FULL_WAVE_SHAPES = [(1536, 1536, 8192)]


def candidates(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    return CANDIDATES.get(shape, [_c(256, 4, 64, 0), _c(128, 5, 64, -1)])


def predicted_speedup(M: int, N: int, K: int, cfg: dict[str, Any], sms: int) -> tuple[float, dict[str, Any]]:
    """Wave-count prediction over the data-parallel tiling (128 x 256 tiles, the baseline's):
    its waves (:func:`ledger.gemm.grid_waves`) over the ideal ``tiles / sms`` waves of a perfectly
    balanced schedule, in 128 x 256-tile units -- the time of one tile taken as proportional to
    its area.  The record also keeps the schedule's critical path (the most K steps one worker
    runs), the figure a perfect stream-K would reach."""
    g_dp, w_dp, f_dp = grid_waves(M, N, 128, NO_SPLIT["block_N"], sms=sms)
    g_sk, w_sk, f_sk = grid_waves(M, N, 128, cfg["block_N"], sms=sms)
    area = cfg["block_N"] / NO_SPLIT["block_N"]
    s = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], sms, cfg["dp_waves"], bool(cfg.get("aligned")))
    steps = s.dp_rounds * s.iters_per_tile + s.iters_per_worker + (1 if s.extra else 0)
    return w_dp / (g_sk * area / sms), dict(
        tiles=g_sk, waves_data_parallel=w_dp, last_wave_fill_data_parallel=f_dp, ideal_waves=g_sk * area / sms,
        critical_path_tiles=steps / s.iters_per_tile * area, dp_tiles=s.dp_tiles, sk_tiles=s.sk_tiles,
        pieces_max=s.max_segments, contributors_max=s.max_contrib)


def wave_tail_rows(M: int, N: int, K: int, cfg: dict[str, Any], sms: int) -> int | None:
    """Rows of C that a configuration's whole-tile waves cover, when its schedule can be taken apart: full waves
    then a streamed tail (``dp_waves=-1``), tiles in row order (``panel=0``), the fix-up a kernel of its own launched
    after the stream-K kernel (not ``pdl``: a fix-up launched early shares the SMs with it and its time), and the
    whole tiles filling whole tile rows.  Then the rows above run alone as the wave (the same kernel, nothing
    streamed) and the rows below as the tail (every tile streamed: the same pieces, workers and fix-up); None
    otherwise."""
    from kernels.gemm.ws import WS_BLOCK_M

    if cfg.get("panel") != 0 or cfg.get("dp_waves") != -1 or any(cfg.get(k) for k in ("fixup", "spread", "red", "pdl")):
        return None
    s = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], sms, -1)
    if s.dp_rounds < 1 or not s.sk_tiles or s.dp_tiles % s.grid_n:
        return None
    return s.dp_tiles // s.grid_n * WS_BLOCK_M


def part_config(cfg: dict[str, Any], dp_waves: int) -> dict[str, Any]:
    """The configuration that runs one part of :func:`wave_tail_rows` alone: the wave (``dp_waves=-1`` on its rows,
    nothing streamed, so no tail split to align) or the tail (``0``, every tile streamed as in the hybrid).  A part
    has one of the two stagings only, so ``share`` (one buffer for both) is dropped: the part's one staging has the
    same size and layout."""
    pc = dict(cfg, dp_waves=dp_waves)
    pc.pop("share", None)
    if dp_waves == -1:
        pc.pop("aligned", None)
    return pc


def build_thunks(sms: int, shapes: "list[tuple[int, int, int]] | None" = None) -> dict[str, Any]:
    """Label -> zero-argument compile of every kernel the suite builds for ``shapes`` (:data:`SHAPES` unless given):
    each shape's candidates, the data-parallel and full-wave baselines, split-K at the skinny shape.  A driver
    prebuilds the tilelang cache on a CPU machine from the same list."""
    thunks: dict[str, Any] = {}
    for (M, N, K) in SHAPES if shapes is None else shapes:
        for cfg in candidates((M, N, K)):
            thunks[f"{label(cfg)}@{M}"] = (lambda c=cfg, m=M, n=N, k=K: build_ws(m, n, k, c, sms))
        thunks[f"dp@{M}"] = (lambda m=M, n=N, k=K: build_tuned(m, n, k, NO_SPLIT, sms))
        if (M, N, K) in FULL_WAVE_SHAPES:
            thunks[f"full-wave@{M}"] = (lambda m=M, n=N, k=K: build_tuned(m, n, k, FULL_WAVE, sms))
        if (M, N, K) == (1024, 1024, 16384):
            from kernels.gemm.splitk import build_ws as build_splitk

            thunks["splitk@1024"] = (lambda: build_splitk(1024, 1024, 16384, SPLITK_BEST, sms))
    return thunks


def gpu_suite(h: Any) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = sm_count(h)
    shapes = [QUICK_SHAPE] if h.quick else SHAPES
    thunks = build_thunks(sms, shapes)
    built = par_build(thunks)
    h.note("streamk ws compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})
    for (M, N, K) in shapes:
        shape = f"{M}x{N}x{K}"
        a = h.rand((M, K), torch.float16)
        b = h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        tol = gemm_tolerance(K)
        runners: dict[str, Any] = {}

        def runner(cfg: dict[str, Any]) -> Any:
            runners[label(cfg)] = make_ws_runner(a, b, cfg, sms)
            return runners[label(cfg)]

        cands, rejected = screen_workspace_candidates(
            candidates((M, N, K)), label, lambda cfg: built[f"{label(cfg)}@{M}"], runner,
            lambda: h.poisoned((M, N), torch.float16), ref)
        for lab in list(cands):  # a fix-up's two screened launches must leave its counters zero
            left = check_counters(runners[lab])
            if left:
                del cands[lab]
                rejected[lab] = f"{left} fix-up counters left non-zero"
        h.note(f"stream-K ws {shape} candidates", f"{len(cands)} valid of {len(candidates((M, N, K)))}", rejected=rejected)
        cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
        baselines: dict[str, Any] = {"cuBLAS": cublas}
        note_library_kernels(h, f"cuBLAS kernel {shape}", cublas)
        dp = built[f"dp@{M}"]["kernel"]
        c_dp = h.poisoned((M, N), torch.float16)
        if dp is not None:
            dp(a, b, c_dp)
            h.check(f"data-parallel ws {shape}", c_dp, ref, rel_fro_err=rel_fro_err(c_dp, ref), **tol)
            baselines["data-parallel"] = lambda: dp(a, b, c_dp)
        fw = built.get(f"full-wave@{M}", {}).get("kernel") if (M, N, K) in FULL_WAVE_SHAPES else None
        if fw is not None:  # written twice into one poisoned output (the clipped last tile column included)
            c_fw = h.poisoned((M, N), torch.float16)
            fw(a, b, c_fw)
            fw(a, b, c_fw)
            h.check(f"full-wave 128x144 {shape}", c_fw, ref, rel_fro_err=rel_fro_err(c_fw, ref), **tol)
            baselines["full-wave 128x144"] = lambda: fw(a, b, c_fw)
        if (M, N, K) == (1024, 1024, 16384) and built["splitk@1024"]["kernel"] is not None:
            c_sp = h.poisoned((M, N), torch.float16)
            sp = make_splitk_runner(a, b, SPLITK_BEST, sms)
            sp(c_sp)
            h.check(f"split-K ws {shape} (baseline)", c_sp, ref, rel_fro_err=rel_fro_err(c_sp, ref), **tol)
            baselines["split-K ws"] = lambda: sp(c_sp)
        if not cands:
            h.error(f"stream-K ws {shape}", RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(f"stream-K ws {shape}", cands, rounds=SEARCH_ROUNDS)
        for lab in cands:  # every timed launch of a fix-up left its counters zero
            if hasattr(runners[lab], "counters"):
                check_fixup_counters(h, f"stream-K ws {shape} {lab} counters after the search", runners[lab])
        cfg = next(c for c in candidates((M, N, K)) if label(c) == best)
        c = h.poisoned((M, N), torch.float16)
        fn = make_ws_runner(a, b, cfg, sms)
        fn(c)
        err = rel_fro_err(c, ref)
        h.check(f"stream-K ws {shape}", c, ref, rel_fro_err=err, config=cfg, **tol)
        check_fixup_counters(h, f"stream-K ws {shape} counters", fn)
        pred, waves = predicted_speedup(M, N, K, cfg, sms)
        flops, nbytes, src = gemm_cost(M, N, K, "fp16")
        s = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], sms, cfg["dp_waves"], bool(cfg.get("aligned")))
        rec = h.bench(f"stream-K ws {shape}", lambda: fn(c), flops=flops, bytes=nbytes, ledger_source=src,
                      baselines=baselines, targets=TARGETS.get((M, N, K)), rounds=BENCH_ROUNDS, config=cfg, label=best,
                      shape=[M, N, K], rel_fro_err=err, predicted_speedup_vs_dp=pred, waves=waves,
                      schedule=dict(s.__dict__, slots=s.slots), sms=sms,
                      fixup=bool(cfg.get("fixup") or cfg.get("spread")))
        # the output of the last timed launch, and the counters every timed launch left behind
        h.check(f"stream-K ws {shape} after timing", c, ref, rel_fro_err=rel_fro_err(c, ref), config=cfg, **tol)
        check_fixup_counters(h, f"stream-K ws {shape} counters after timing", fn)
        if fw is not None:  # the full-wave tiling against the library and the 128 x 256 tiling, its own rounds
            fw_base = {k: v for k, v in baselines.items() if k in ("cuBLAS", "data-parallel")}
            g, w_fw, fill = grid_waves(M, N, 128, FULL_WAVE["block_N"], sms=sms)
            h.bench(f"full-wave 128x144 {shape}", lambda: fw(a, b, c_fw), flops=flops, bytes=nbytes,
                    ledger_source=src, baselines=fw_base, targets=TARGETS.get((M, N, K)), rounds=BENCH_ROUNDS,
                    config=FULL_WAVE, shape=[M, N, K], tiles=g, waves=w_fw, last_wave_fill=fill, sms=sms)
            h.check(f"full-wave 128x144 {shape} after timing", c_fw, ref, rel_fro_err=rel_fro_err(c_fw, ref),
                    **tol)
        # where the time of one call goes, on the GPU's clock: the stream-K kernel, the gap, the fix-up
        subjects = {"stream-K": lambda: fn(c), "cuBLAS": cublas}
        if fw is not None:
            subjects["full-wave 128x144"] = lambda: fw(a, b, c_fw)
        rows = wave_tail_rows(M, N, K, cfg, sms)
        if rows is not None:  # the winner's wave and its tail, each alone on its own rows of A
            for part, lo, hi, d in (("wave alone", 0, rows, -1), ("tail alone", rows, M, 0)):
                try:
                    pc = part_config(cfg, d)
                    pf = make_ws_runner(a[lo:hi].contiguous(), b, pc, sms)
                    po = h.poisoned((hi - lo, N), torch.float16)
                    pf(po)
                    pf(po)
                    chk = h.check(f"stream-K ws {shape} {part}", po, ref[lo:hi], rel_fro_err=rel_fro_err(po, ref[lo:hi]),
                                  config=pc, rows=[lo, hi], **tol)
                except Exception as exc:  # the timeline goes on without this part
                    h.error(f"stream-K ws {shape} {part}", exc)
                    continue
                if chk["ok"]:
                    subjects[part] = lambda pf=pf, po=po: pf(po)
        note_kernel_timeline(h, f"stream-K ws {shape} timeline", subjects)
        sp = rec["speedup"].get("data-parallel")
        if sp is not None:
            h.note(f"stream-K ws {shape} prediction", f"predicted {pred:.2f}x vs data-parallel, measured {sp:.2f}x",
                   predicted=pred, measured=sp)
        del a, b, ref, c, c_dp
        torch.cuda.empty_cache()
