"""Suite ``gemm.splitk_ws``: split-K on the persistent hand-written pipeline
(:func:`kernels.gemm.splitk.build_ws`: fp32 partials by TMA store, then one reduction kernel that
adds the slices and casts to fp16) against cuBLAS fp16 in alternating rounds, and against the
same pipeline without a split, next to the ledger's wave-count prediction.

Two shapes: the skinny 1024 x 1024 x 16384 (32 tiles of 128 x 256 for 132 SMs: the model
predicts a gain), and 2048 x 2048 x 8192 (128 tiles, already one full wave: the model predicts
none).  Each split's time includes the reduction.
"""
from typing import Any

from kernels.gemm.ladder import build_tuned
from kernels.gemm.splitk import build_ws, make_ws_runner, splitk_ref, ws_splitk_config as _c, ws_splitk_label as label
from ledger.gemm import grid_waves, split_k_cost
from measure.cost import source_of
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import (BENCH_ROUNDS, SEARCH_ROUNDS, gemm_cost, gemm_tolerance, rel_fro_err,
                                        screen_workspace_candidates)

SHAPES = [(1024, 1024, 16384), (2048, 2048, 8192)]
#: Targets of the issue (vs cuBLAS) by shape; the second shape has none (the model predicts no gain).
TARGETS = {(1024, 1024, 16384): 1.0}

#: Candidates: the recorded bests -- 128 x 256 tiles split 4 (128 items: one wave) with the
#: reduction on 32 rows per block (1024 x 1024 x 16384), split 2 (2048 x 2048 x 8192) -- and the
#: reduction moved into the kernel: the blocks of one tile form a cluster and sum their partials
#: through distributed shared memory, so the 16 MB of fp32 partials never leave the SMs and no
#: second kernel runs (split 4 with four stages and 64-column chunks, or three stages and 128-column
#: chunks; 128 x 128 tiles split 2).
CANDIDATES: list[dict[str, Any]] = [
    _c(4, reduce_rows=32), _c(2),
    _c(4, cluster_reduce=True), _c(4, stages=3, epi_cols=128, cluster_reduce=True),
    _c(2, block_N=128, stages=5, epi_cols=128, cluster_reduce=True),
]
#: The same pipeline without a split (persistent, 128 x 256, clusters of two): the no-split baseline.
NO_SPLIT = dict(ws=True, block_M=128, block_N=256, block_K=64, stages=4, threads=256, panel=8, inflight=0, epi_cols=128,
                persistent=True, cluster=2)


def predicted_speedup(M: int, N: int, cfg: dict[str, Any], sms: int) -> tuple[float, dict[str, Any]]:
    """Wave-count prediction over the no-split pipeline (same tile): ``waves(1) * split / waves(split)``
    (:func:`ledger.gemm.grid_waves`)."""
    g1, w1, f1 = grid_waves(M, N, 128, cfg["block_N"], split=1, sms=sms)
    gs, ws, fs = grid_waves(M, N, 128, cfg["block_N"], split=cfg["splits"], sms=sms)
    return w1 * cfg["splits"] / ws, dict(grid=gs, waves=ws, last_wave_fill=fs, grid_no_split=g1, waves_no_split=w1)


def gpu_suite(h: Any) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = sm_count(h)
    shapes = [(256, 512, 4096)] if h.quick else SHAPES
    thunks: dict[str, Any] = {}
    for (M, N, K) in shapes:
        for cfg in CANDIDATES:
            thunks[f"{label(cfg)}@{M}"] = (lambda c=cfg, m=M, n=N, k=K: build_ws(m, n, k, c, sms))
        thunks[f"nosplit@{M}"] = (lambda m=M, n=N, k=K: build_tuned(m, n, k, NO_SPLIT, sms))
    built = par_build(thunks)
    h.note("splitk ws compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})
    for (M, N, K) in shapes:
        shape = f"{M}x{N}x{K}"
        a = h.rand((M, K), torch.float16)
        b = h.rand((N, K), torch.float16)
        ref = splitk_ref(a, b)
        cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
        tol = gemm_tolerance(K)
        cands, rejected = screen_workspace_candidates(
            CANDIDATES, label, lambda cfg: built[f"{label(cfg)}@{M}"], lambda cfg: make_ws_runner(a, b, cfg, sms),
            lambda: h.poisoned((M, N), torch.float16), ref)
        h.note(f"split-K ws {shape} candidates", f"{len(cands)} valid of {len(CANDIDATES)}", rejected=rejected)
        nos = built[f"nosplit@{M}"]["kernel"]
        c0 = h.poisoned((M, N), torch.float16)
        nosplit = None
        if nos is not None:
            nos(a, b, c0)
            h.check(f"no-split ws {shape}", c0, ref, rel_fro_err=rel_fro_err(c0, ref), **tol)
            nosplit = (lambda: nos(a, b, c0))
        if not cands:
            h.error(f"split-K ws {shape}", RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(f"split-K ws {shape}", cands, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in CANDIDATES if label(c) == best)
        c = h.poisoned((M, N), torch.float16)
        fn = make_ws_runner(a, b, cfg, sms)
        fn(c)
        err = rel_fro_err(c, ref)
        h.check(f"split-K ws {shape}", c, ref, rel_fro_err=err, config=cfg, **tol)
        pred, waves = predicted_speedup(M, N, cfg, sms)
        if cfg.get("cluster_reduce"):  # the partials stay on chip: operands once, C once
            flops, nbytes, ledger_source = gemm_cost(M, N, K, "fp16")
        else:
            cost = split_k_cost(M, N, K, split=cfg["splits"], separate_reduce=True)
            flops, nbytes = cost.flops, cost.bytes
            ledger_source = source_of(split_k_cost) + "(separate_reduce=True)"
        baselines = {"cuBLAS": cublas}
        if nosplit is not None:
            baselines["no-split"] = nosplit
        tgt = TARGETS.get((M, N, K))
        rec = h.bench(f"split-K ws {shape}", lambda: fn(c), flops=float(flops), bytes=float(nbytes),
                      ledger_source=ledger_source, baselines=baselines,
                      targets={"speedup:cuBLAS": tgt} if tgt else None, rounds=BENCH_ROUNDS, config=cfg, label=best,
                      shape=[M, N, K], rel_fro_err=err, predicted_speedup_vs_no_split=pred, waves=waves,
                      fp16_cost=list(gemm_cost(M, N, K)[:2]))
        sp = rec["speedup"].get("no-split")
        if sp is not None:
            h.note(f"split-K ws {shape} prediction", f"predicted {pred:.2f}x vs no split, measured {sp:.2f}x",
                   predicted=pred, measured=sp)
        del a, b, ref, c, c0
        torch.cuda.empty_cache()
