"""Suite ``gemm.ladder``: rungs 1-5 and the tuned rung 4 at 4096^3 and 8192^3 against cuBLAS.

The tuned rung 4 is a fixed, explicit list of candidates (:data:`TUNE_CANDIDATES`, block
shapes x stages x raster panel x warp partition x who writes the pipeline) compiled in
parallel and timed on the GPU; every candidate's time, the winner and the compile times are
recorded.
"""
import time
from typing import Any

from kernels.gemm.ladder import RUNGS, build, build_tuned, gemm_ref, label, run
from kernels.gemm.lowered import launch_info
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import (BENCH_ROUNDS, SEARCH_ROUNDS, gemm_cost, gemm_tolerance, note_library_kernels,
                                        record_bench, rel_fro_err)

# --------------------------------------------------------------- tuned rung 4

#: The explicit search space of the tuned rung 4 (Hopper, fp16, large square shapes).
#: ``threads`` counts consumer threads (2 warpgroups = 256); tilelang adds a
#: producer warpgroup. Axes: block shape (128x256, 256x128), stages (3-4, bounded by
#: 227 KB of shared memory), raster panel (8/10), annotated vs inferred swizzle, the
#: warp partition of ``T.gemm`` (``policy``), the launch (``persistent``) and who writes the
#: pipeline (``ws``: by hand, :mod:`kernels.gemm.ws`; otherwise tilelang's automatic one);
#: :func:`kernels.gemm.ladder.build_tuned` compiles a candidate.
#: ``policy="row"`` gives each consumer warpgroup whole rows, so 128x256 issues m64n256k16
#: (the shape of CUTLASS's cooperative 128x256 kernel) instead of two m64n128k16, and
#: 256x128 issues m64n128 instead of m64n64 -- fewer shared-memory operand reads per
#: step, same registers (128 fp32 per thread, no spill under the 240-register budget).
#: ``persistent=True`` is :func:`kernels.gemm.ladder.rung4_persistent`: one block per SM walks the tiles, so
#: the next tile's loads overlap the current tile's epilogue (3 stages + the C tile fit).
#: The ``ws`` candidates are the hand-written pipeline (always the row partition, 128x256x64):
#: ``inflight`` (0/1 wgmma batches left running when a stage is released), ``epi_cols`` (C
#: stored in 128-column halves frees room for a fourth stage), ``persistent`` (one block per
#: SM, the producer's ring running across tiles) and ``cluster`` (2: B multicast to a pair of
#: blocks, released by the consumers of both).
#: Ruled out by compiling for sm_90a: three consumer warpgroups (192x256, 512 threads)
#: cap registers at 128 and ptxas refuses the m64n256 wgmma; block_K=128 with 2 stages
#: compiles but leaves the producer only one stage ahead.  128x128 and 128x192 blocks and
#: panel 16 were searched on the H200 and never came within 5 % of the best.
#: Cost: one compile per candidate and shape (about 5 s each, in parallel in the suite's
#: thread pool) plus one timed run each (~0.2 s at 4096^3, ~0.3 s at 8192^3).
_WS = dict(block_M=128, block_N=256, block_K=64, threads=256, panel=8, ws=True)
TUNE_CANDIDATES: list[dict[str, Any]] = [
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=10),
    dict(block_M=128, block_N=256, block_K=64, stages=4, threads=256, panel=8),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8),
    dict(block_M=256, block_N=128, block_K=64, stages=4, threads=256, panel=10),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, annotate=False),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8, annotate=False),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, policy="row"),
    dict(block_M=256, block_N=128, block_K=64, stages=3, threads=256, panel=8, policy="row"),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, persistent=True),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, policy="row", persistent=True),
    dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256, panel=8, persistent=True, m_fastest=False),
    dict(_WS, stages=3, inflight=1),
    dict(_WS, stages=3, inflight=0),
    dict(_WS, stages=4, inflight=0, epi_cols=128),
    dict(_WS, stages=4, inflight=0, epi_cols=128, persistent=True),
    dict(_WS, stages=4, inflight=1, epi_cols=128, persistent=True),
    dict(_WS, stages=4, inflight=0, epi_cols=128, persistent=True, cluster=2),
    dict(_WS, stages=4, inflight=1, epi_cols=128, persistent=True, cluster=2),
]

#: Ragged shape of the hand-written candidates' check: 1100 rows are 9 blocks of 128 (an odd
#: count, so a cluster of two is padded), 1016 columns end inside a 256-wide tile, K = 1000
#: ends inside a 64-deep step.
WS_RAGGED = (1100, 1016, 1000)


def gpu_suite(h: Any) -> None:
    """Rungs 1-5 and the tuned rung 4 at 4096^3 and 8192^3 against cuBLAS (``torch.matmul``)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    h.note("cuBLAS settings", "torch.matmul on fp16 with the library defaults",
           allow_tf32=torch.backends.cuda.matmul.allow_tf32,
           allow_fp16_reduced_precision_reduction=torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    shapes = [(1024, 1024, 1024)] if h.quick else [(4096, 4096, 4096), (8192, 8192, 8192)]
    sms = sm_count(h)
    pers = next(c for c in TUNE_CANDIDATES if c.get("persistent"))
    # the hand-written pipeline on a ragged shape: plain, and persistent on clusters of two
    # (1100 rows = 9 blocks of 128, so the last cluster is padded with a block past the edge)
    ws_ragged = [c for c in TUNE_CANDIDATES if c.get("ws") and (not c.get("persistent") or c.get("cluster", 1) > 1)][::2]
    # every kernel of the suite compiled up front, in parallel
    thunks: dict[str, Any] = {}
    for (M, N, K) in shapes:
        for name in RUNGS:
            if name == "rung1_naive" and M > 4096:
                continue
            thunks[f"{name}@{M}"] = (lambda n=name, m=M, nn=N, k=K: build(n, m, nn, k))
        for cfg in TUNE_CANDIDATES:
            thunks[f"tuned:{label(cfg)}@{M}"] = (lambda c=cfg, m=M, nn=N, k=K: build_tuned(m, nn, k, c, sms))
    for name in ("rung3_pipelined", "rung4_annotated"):
        thunks[f"{name}@ragged"] = (lambda n=name: build(n, 1000, 1016, 1000))
    thunks["persistent@ragged"] = lambda: build_tuned(1000, 1016, 1000, pers, sms)
    for cfg in ws_ragged:
        thunks[f"ws:{label(cfg)}@ragged"] = (lambda c=cfg: build_tuned(*WS_RAGGED, c, sms))
    t0 = time.perf_counter()
    built = par_build(thunks)
    wall = time.perf_counter() - t0
    h.note("gemm ladder compile", f"{len(thunks)} kernels compiled in {wall:.1f} s wall (thread pool)",
           compile_wall_s=wall, compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})

    # ragged shapes (not multiples of the tile) for the rungs that claim them (compiled above)
    Mr, Nr, Kr = (1000, 1016, 1000)
    a = h.rand((Mr, Kr), torch.float16)
    b = h.rand((Nr, Kr), torch.float16)
    ref = gemm_ref(a, b)
    for name in ("rung3_pipelined", "rung4_annotated"):
        try:
            c = run(name, a, b, out=h.poisoned((Mr, Nr), torch.float16))
            h.check(f"{name} ragged {Mr}x{Nr}x{Kr}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kr))
        except Exception as exc:
            h.error(f"{name} ragged {Mr}x{Nr}x{Kr}", exc)
    if built["persistent@ragged"]["kernel"] is None:  # the persistent candidates must also serve ragged tiles
        h.error(f"{label(pers)} ragged {Mr}x{Nr}x{Kr}", RuntimeError(built["persistent@ragged"]["error"]))
    else:
        c = h.poisoned((Mr, Nr), torch.float16)
        built["persistent@ragged"]["kernel"](a, b, c)
        h.check(f"{label(pers)} ragged {Mr}x{Nr}x{Kr}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kr))
    Mw, Nw, Kw = WS_RAGGED
    a = h.rand((Mw, Kw), torch.float16)
    b = h.rand((Nw, Kw), torch.float16)
    ref = gemm_ref(a, b)
    for cfg in ws_ragged:
        rec = built[f"ws:{label(cfg)}@ragged"]
        if rec["kernel"] is None:
            h.error(f"{label(cfg)} ragged {Mw}x{Nw}x{Kw}", RuntimeError(rec["error"]))
            continue
        c = h.poisoned((Mw, Nw), torch.float16)
        rec["kernel"](a, b, c)
        h.check(f"{label(cfg)} ragged {Mw}x{Nw}x{Kw}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(Kw))

    for (M, N, K) in shapes:
        a = h.rand((M, K), torch.float16)
        b = h.rand((N, K), torch.float16)
        ref = gemm_ref(a, b)
        flops, nbytes, src = gemm_cost(M, N, K, "fp16")
        cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
        c_cublas = cublas()
        tol = gemm_tolerance(K)
        h.check(f"cuBLAS {M}^3", c_cublas, ref, rel_fro_err=rel_fro_err(c_cublas, ref), **tol)
        note_library_kernels(h, f"cuBLAS kernel {M}^3", cublas)
        for name, (_, cfg) in RUNGS.items():
            key = f"{name}@{M}"
            if key not in built:
                h.skip(f"{name} {M}^3", "the naive rung is timed at 4096^3 only (8x the work at 8192^3)")
                continue
            rec = built[key]
            if rec["kernel"] is None:
                h.error(f"{name} {M}^3", RuntimeError(rec["error"]))
                continue
            kern = rec["kernel"]
            c = h.poisoned((M, N), torch.float16)
            kern(a, b, c)
            err = rel_fro_err(c, ref)
            h.check(f"{name} {M}^3", c, ref, rel_fro_err=err, **tol)
            try:
                info = launch_info(kern)
                launch = dict(threads=info.threads, smem_bytes=info.smem_bytes)
            except RuntimeError:  # loaded from tilelang's disk cache: no device module to read
                launch = {}
            record_bench(
                h, f"{name} {M}^3", lambda k=kern, c=c: k(a, b, c), repeat=3 if name == "rung1_naive" else None,
                flops=flops, bytes=nbytes, ledger_source=src, baselines={"cuBLAS": cublas},
                rung=name, config=cfg, shape=[M, N, K], rel_fro_err=err, compile_s=rec["compile_s"],
                **launch,
            )
        # tuned rung 4: every candidate verified and timed, the fastest benched against cuBLAS
        cands: dict[str, Any] = {}
        errs: dict[str, Any] = {}
        for cfg in TUNE_CANDIDATES:
            rec = built[f"tuned:{label(cfg)}@{M}"]
            if rec["kernel"] is None:
                errs[label(cfg)] = rec["error"]
                continue
            kern = rec["kernel"]
            c = h.poisoned((M, N), torch.float16)
            kern(a, b, c)
            e = rel_fro_err(c, ref)
            if not (e < 1e-2):
                errs[label(cfg)] = f"wrong result: rel_fro_err={e:.3g}"
                continue
            cands[label(cfg)] = (lambda k=kern, c=c: k(a, b, c))
        h.note(f"tuned rung4 {M}^3 search space", f"{len(TUNE_CANDIDATES)} candidates, {len(cands)} valid",
               candidates=[label(c) for c in TUNE_CANDIDATES], rejected=errs,
               compile_s={label(c): round(built[f"tuned:{label(c)}@{M}"]["compile_s"], 2) for c in TUNE_CANDIDATES})
        if not cands:
            h.error(f"tuned rung4 {M}^3", RuntimeError(f"no valid candidate: {errs}"))
            continue
        best, _times = h.search(f"tuned rung4 {M}^3", cands, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in TUNE_CANDIDATES if label(c) == best)
        kern = built[f"tuned:{best}@{M}"]["kernel"]
        c = h.poisoned((M, N), torch.float16)
        kern(a, b, c)
        err = rel_fro_err(c, ref)
        h.check(f"tuned rung4 {M}^3", c, ref, rel_fro_err=err, config=cfg, **tol)
        target = 1.0 if M >= 8192 else 0.95
        record_bench(
            h, f"tuned rung4 {M}^3", lambda: kern(a, b, c), flops=flops, bytes=nbytes, ledger_source=src,
            baselines={"cuBLAS": cublas}, targets={"speedup:cuBLAS": target}, rounds=BENCH_ROUNDS,
            rung="rung4_tuned", config=cfg, shape=[M, N, K], rel_fro_err=err,
        )
        del a, b, ref, c_cublas
        torch.cuda.empty_cache()
