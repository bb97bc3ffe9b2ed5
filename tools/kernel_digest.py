"""Digest of the generated code of every kernel the course compiles (safety net for refactors).

    .venv/bin/python -m tools.kernel_digest --out digest.json [--jobs 2] [--only gemm,norm]
    .venv/bin/python -m tools.kernel_digest --compare before.json after.json

Lowers every kernel configuration the GPU suites, the book pages and the tests compile --
every entry of the tuning tables included -- for ``sm_90a`` on this CPU (tilelang's
lowering and CUDA code generation, no ``nvcc``: the source is the one
``JITKernel.get_kernel_source()`` returns) and writes ``{kernel id: sha256 of the CUDA
source}``; the Ascend programs are lowered up to the ``bisheng`` call and their AscendC
source hashed the same way.  A kernel id names the family, the factory and its bound
arguments (defaults applied), so it does not change when a factory moves to another module.

``--compare`` lists the ids whose source changed, the ids only one side has, and for those
whether the same source exists under another id (a renamed or re-parametrised call that
generates the same code).  Exit status 1 when a source changed or an id disappeared.

The enumeration below mirrors the suites' configurations by reading their tables; where
a family moves, only :data:`MODULES` changes.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import os
import sys
import time
from typing import Any, Callable, Iterator

#: logical family -> module that holds its factories and tables (edit when code moves)
MODULES = {
    "elementwise": "kernels.elementwise",
    "quant": "kernels.quant",
    "norm": "kernels.norm",
    "rope": "kernels.rope",
    "fused": "kernels.fused",
    "fused.tables": "measure.suites.fused",
    "norm.tables": "measure.suites.norm",
    "pytorch": "kernels.pytorch",
    "case_study": "kernels.case_study",
    "carver": "measure.carver",
    "gemm.ladder": "kernels.gemm.ladder",
    "gemm.ladder.tables": "measure.suites.gemm.ladder",
    "gemm.ws": "kernels.gemm.ws",
    "gemm.lowp": "kernels.gemm.lowp",
    "gemm.lowp.tables": "measure.suites.gemm.lowp",
    "gemm.splitk": "kernels.gemm.splitk",
    "gemm.splitk.tables": "measure.suites.gemm.splitk",
    "gemm.streamk": "kernels.gemm.streamk",
    "gemm.streamk.tables": "measure.suites.gemm.streamk",
    "gemm.grouped": "kernels.gemm.grouped",
    "gemm.grouped.tables": "measure.suites.gemm.grouped",
    "gemm.batched": "kernels.gemm.batched",
    "gemm.batched.tables": "measure.suites.gemm.batched",
    "gemm.batched_ws.tables": "measure.suites.gemm.batched_ws",
    "gemm.bf16.tables": "measure.suites.gemm.bf16",
    "gemm.splitk_ws.tables": "measure.suites.gemm.splitk_ws",
    "gemm.streamk_ws.tables": "measure.suites.gemm.streamk_ws",
    "gemm.grouped_ws.tables": "measure.suites.gemm.grouped_ws",
    "gemm.w4a16": "kernels.gemm.w4a16",
    "gemm.w4a16.tables": "measure.suites.gemm.w4a16",
    "gemm.support": "kernels.gemm.support",
    "ascend": "measure.ascend",
}

def _sms() -> int:
    """SM count of the measured machine (the ledger's default profile): the persistent grids
    of the recorded runs. Read from the ledger, which exists on every branch this tool compares."""
    from ledger.machines import DEFAULT_MACHINE, get_machine

    return int(get_machine(DEFAULT_MACHINE).resource("sms"))


SMS = _sms()


def M(name: str):
    return importlib.import_module(MODULES[name])


Job = tuple[str, Any, tuple, dict]  # (family, jit factory, args, kwargs)


# ---------------------------------------------------------------- capture of builder calls
class _Stub:
    """What a patched factory call returns inside :func:`calls`: remembers the call."""

    def __init__(self, impl, args, kwargs):
        self.impl, self.args, self.kwargs = impl, args, kwargs


def calls(fn: Callable[[], Any]) -> list[tuple[Any, tuple, dict]]:
    """The jit factory calls ``fn()`` makes (builders like ``build_tuned`` dispatch to one),
    without compiling anything."""
    from tilelang.jit import JITImpl

    seen: list = []
    orig = JITImpl.__call__

    def fake(self, *args, **kwargs):
        seen.append((self, args, kwargs))
        return _Stub(self, args, kwargs)

    JITImpl.__call__ = fake
    try:
        fn()
    finally:
        JITImpl.__call__ = orig
    return [(i, a, k) for i, a, k in seen]


# ---------------------------------------------------------------- enumeration
def _elementwise() -> Iterator[Job]:
    E = M("elementwise")
    f16, f32, bf16 = "float16", "float32", "bfloat16"
    cases = [("parallel", f16, [1 << 20, 2047]), ("per_thread", f16, [1 << 20, 2047, 1_000_003]),
             ("fragment", f16, [1 << 20, 1_000_003]), ("fragment", f32, [1 << 20, 12_345]),
             ("per_thread", bf16, [65_537])]
    n = 1 << 28

    def level(lv, m, dt, npt=8):
        return (E.add_parallel, (m, dt, 256)) if lv == "parallel" else (E.LEVELS[lv], (m, dt, 256, npt))

    jobs = [level(lv, m, dt) for lv, dt, ms in cases for m in ms]
    jobs += [(E.scale_cast, (m, "float32", "float16", 256, 8)) for m in (1 << 20, 77_777, n)]
    jobs += [level(lv, n, f16) for lv in E.LEVELS] + [(E.add_fragment, (n, f16, 256, 16))]
    # tests and the book page
    jobs += [(E.add_per_thread, (1 << 16,)), (E.add_per_thread, (2047,)), (E.add_parallel, (1 << 16,)),
             (E.add_fragment, (1 << 16,)), (E.scale_cast, (1 << 16,)), (E.rmw_group_sum, (1024,))]
    for f, a in jobs:
        yield "elementwise", f, a, {}


def _quant() -> Iterator[Job]:
    Q = M("quant")
    cases = [("float16", 64, 4096, 128, 4), ("bfloat16", 37, 4096, 128, 4), ("bfloat16", 5, 1024, 1024, 1),
             ("float16", 3, 384, 128, 2)]
    for dt, m, n, g, bm in cases:
        yield "quant", Q.quant_fp8, (m, n, g, dt, bm, 256), {}
    for bm in (1, 2, 4):
        yield "quant", Q.quant_fp8, (16384, 4096, 128, "bfloat16", bm, 256), {}
    yield "quant", Q.quant_fp8, (16384, 4096, 128, "bfloat16", 2, 256), {}  # fused baseline, ncu_rows


def _norm() -> Iterator[Job]:
    N = M("norm")
    T = M("norm.tables")
    Mb, Nb = 16384, 4096
    cases = [("rows", "float16", 256, 4096, {"blk_m": 4}), ("rows", "bfloat16", 37, 4000, {"blk_m": 4}),
             ("rows", "float16", 33, 1000, {"blk_m": 2}), ("shared", "float16", 19, 4096, {}),
             ("shared", "float32", 7, 3000, {}), ("splitk", "float16", 9, 16384, {"blk_m": 1, "blk_k": 2048}),
             ("splitk", "bfloat16", 5, 10000, {"blk_m": 1, "blk_k": 2048})]
    for sched, dt, m, n, kw in cases:
        bm = kw.get("blk_m", 4)
        if sched == "rows":
            yield "norm", N.rmsnorm_rows, (m, n, dt, bm, 256, 1e-6), {}
        elif sched == "shared":
            yield "norm", N.rmsnorm_shared, (m, n, dt, 256, 1e-6), {}
        else:
            yield "norm", N.rmsnorm_splitk, (m, n, dt, bm, kw["blk_k"], 256, 1e-6), {}
    for dt, m, n, bm in (("float16", 128, 4096, 4), ("bfloat16", 29, 4000, 2), ("float16", 3, 1000, 1)):
        yield "norm", N.layernorm_rows, (m, n, dt, bm, 256, 1e-5), {}
    for bm, th in ((2, 256), (4, 256), (4, 512)):
        yield "norm", N.rmsnorm_rows, (Mb, Nb, "float16", bm, th, 1e-6), {}
        yield "norm", N.layernorm_rows, (Mb, Nb, "float16", bm, th, 1e-5), {}
    yield "norm", N.rmsnorm_shared, (Mb, Nb, "float16", 256, 1e-6), {}
    yield "norm", N.rmsnorm_splitk, (Mb // 8, Nb * 8, "float16", 1, 2048, 256, 1e-6), {}
    for m in (Mb, 37, 4 * Mb):
        for bm, th, mb in T.CAPPED_CFGS:
            yield "norm", N.rmsnorm_rows, (m, Nb, "float16", bm, th, 1e-6, mb), {}
        for rw, mr in T.WARP_CFGS:
            yield "norm", N.rmsnorm_warp, (m, Nb, "float16", rw, 1e-6, mr), {}
        for bm, st in T.PIPE_CFGS:
            if N.pipe_supported(Nb, "float16", bm):
                yield "norm", N.rmsnorm_pipe, (m, Nb, "float16", bm, st, SMS, 256, 1e-6), {}
    for bm, th in ((2, 256), (4, 256), (4, 512)):
        yield "norm", N.rmsnorm_rows, (4 * Mb, Nb, "float16", bm, th, 1e-6), {}
    # chapter 1's LayerNorm, the fused chain's step 1 (bf16) and the tests
    yield "norm", N.layernorm_rows, (8192, 4096, "float16", 2, 256, 1e-5), {}
    yield "norm", N.rmsnorm_rows, (Mb, Nb, "bfloat16", 2, 256, 1e-6), {}
    for bm, st in ((2, 4), (2, 8)):
        yield "norm", N.rmsnorm_pipe, (Mb, Nb, "bfloat16", bm, st, SMS, 256, 1e-6), {}
    yield "norm", N.rmsnorm_rows, (64, 1024, "float16", 1, 32, 1e-6), {}


def _rope() -> Iterator[Job]:
    R = M("rope")
    cases = [(64, 8, 128, 128, "float16", 2), (37, 4, 128, 64, "bfloat16", 2), (9, 4, 96, 32, "float16", 4),
             (16, 2, 64, 64, "float16", 2)]
    for S, H, D, Rd, dt, bs in cases:
        for st in R.STYLES:
            yield "rope", R.rope_naive, (S, H, D, Rd, st, dt, 256), {}
            yield "rope", R.rope_blocked, (S, H, D, Rd, st, dt, bs, R._threads_for(bs, H, D, Rd)), {}
    for st in R.STYLES:
        yield "rope", R.rope_naive, (9, 3, 96, 32, st, "float16", 256), {}
        for b in (1, 2, 4):
            yield "rope", R.rope_blocked, (16384, 32, 128, 128, st, "float16", b, 256), {}
        yield "rope", R.rope_naive, (16384, 32, 128, 128, st, "float16", 256), {}
        yield "rope", R.rope_naive, (64, 8, 128, 64, st, "float16", 256), {}
    for bs in (1, 2, 4):  # step 2 of the fused chain's baseline: one "head" of 4096
        yield "rope", R.rope_blocked, (16384, 1, 4096, 128, "neox", "bfloat16", bs, R._threads_for(bs, 1, 4096, 128)), {}


def _fused() -> Iterator[Job]:
    F = M("fused")
    T = M("fused.tables")
    Mb, Nb, Rb, Gb = 16384, 4096, 128, 128
    for dt, m, n, r, bm in (("bfloat16", 64, 4096, 128, 2), ("float16", 37, 4096, 64, 2), ("bfloat16", 5, 1024, 1024, 1)):
        yield "fused", F.rmsnorm_rope, (m, n, r, dt, bm, 256, 1e-6), {}
        yield "fused", F.rmsnorm_rope_fp8, (m, n, r, 128, dt, bm, 256, 1e-6), {}
        if F.vec_supported(n, r, 128, dt):
            yield "fused", F.rmsnorm_rope_fp8_vec, (m, n, r, 128, dt, *T.VEC_DEFAULT[:3], 1e-6, T.VEC_DEFAULT[3]), {}
    for bm in T.BLK_MS:
        yield "fused", F.rmsnorm_rope_fp8, (Mb, Nb, Rb, Gb, "bfloat16", bm, 256, 1e-6), {}
        yield "fused", F.rmsnorm_rope, (Mb, Nb, Rb, "bfloat16", bm, 256, 1e-6), {}
    for m in (Mb, 37):
        for rw, mr in T.WARP_CFGS:
            yield "fused", F.rmsnorm_rope_warp, (m, Nb, Rb, "bfloat16", rw, 1e-6, mr), {}
            yield "fused", F.rmsnorm_rope_fp8_warp, (m, Nb, Rb, Gb, "bfloat16", rw, 1e-6, mr), {}
        for bm, th, mb in T.CAPPED_CFGS:
            yield "fused", F.rmsnorm_rope, (m, Nb, Rb, "bfloat16", bm, th, 1e-6, mb), {}
            yield "fused", F.rmsnorm_rope_fp8, (m, Nb, Rb, Gb, "bfloat16", bm, th, 1e-6, mb), {}
        for bm, th, mb in T.LEAN_CFGS:
            yield "fused", F.rmsnorm_rope_fp8, (m, Nb, Rb, Gb, "bfloat16", bm, th, 1e-6, mb, True), {}
        for tpr, rw, sg, mb, pf in T.VEC_CFGS:
            if F.vec_supported(Nb, Rb, Gb, "bfloat16", tpr, sg):
                yield "fused", F.rmsnorm_rope_fp8_vec, (m, Nb, Rb, Gb, "bfloat16", tpr, rw, sg, 1e-6, mb, pf), {}
        for rpb, st, mb in T.VECP_CFGS:
            yield "fused", F.rmsnorm_rope_fp8_vecp, (m, Nb, Rb, Gb, "bfloat16", 128, 8, rpb, st, 1e-6, mb), {}
        for bm, st in T.PIPE_CFGS:
            if F.pipe_supported(Nb, Rb, Gb, bm):
                yield "fused", F.rmsnorm_rope_fp8_pipe, (m, Nb, Rb, Gb, "bfloat16", bm, st, SMS, T.PIPE_THREADS, 1e-6), {}
    # tests and the Nsight Compute workload
    yield "fused", F.rmsnorm_rope, (16384, 4096, 128, "bfloat16", 2, 256, 1e-6), {}
    yield "fused", F.rmsnorm_rope_fp8, (16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6), {}
    yield "fused", F.rmsnorm_rope_fp8, (16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6, 5), {}
    yield "fused", F.rmsnorm_rope_fp8, (16384, 4096, 128, 128, "bfloat16", 2, 256, 1e-6, 4, True), {}
    yield "fused", F.rmsnorm_rope_fp8, (16384, 4096, 128, 128, "bfloat16", 1, 256, 1e-6, 8), {}
    yield "fused", F.rmsnorm_rope_fp8, (16384, 4096, 128, 128, "bfloat16", 1, 256, 1e-6, 6, True), {}
    yield "fused", F.rmsnorm_rope_warp, (37, 4096, 128, "bfloat16", 4, 1e-6, 168), {}
    yield "fused", F.rmsnorm_rope_fp8_warp, (16384, 4096, 128, 128, "bfloat16", 4, 1e-6, 168), {}
    for args in ((16384, 4096, 128, 128, "bfloat16", 128, 1, 8, 1e-6), (37, 4096, 128, 128, "bfloat16", 128, 2, 8, 1e-6),
                 (16384, 4096, 128, 128, "bfloat16", 128, 1, 16, 1e-6), (37, 4096, 64, 128, "float16", 128, 2, 8, 1e-6),
                 (16384, 4096, 128, 128, "bfloat16", 128, 1, 8, 1e-6, 9)):
        yield "fused", F.rmsnorm_rope_fp8_vec, args, {}
    yield "fused", F.rmsnorm_rope_fp8_vecp, (37, 4096, 128, 128, "bfloat16", 128, 8, 4, 3, 1e-6, 8), {}
    yield "fused", F.rmsnorm_rope_fp8_vecp, (16384, 4096, 128, 128, "bfloat16", 128, 8, 2, 2, 1e-6, 8), {}
    yield "fused", F.rmsnorm_rope_fp8_pipe, (16384, 4096, 128, 128, "bfloat16", 2, 4, SMS, 256, 1e-6), {}


def _pytorch() -> Iterator[Job]:
    P = M("pytorch")
    yield "pytorch", P.sincos_fused, (4096 * 4096, "float16"), {}
    yield "pytorch", P.sincos_fused, (4096,), {}


def _case_study() -> Iterator[Job]:
    C = M("case_study")
    for tokens in (37, C.TOKENS):
        for d in C.DESIGNS:
            for impl, a, k in calls(lambda d=d, t=tokens: C.get_kernel(d, t)):
                yield "case_study", impl, a, k


def _carver() -> Iterator[Job]:
    """The four hints of the recorded run and the Analyzer's rung-3 TIR."""
    cr = M("carver")
    panel = dict(panel=11, order="column")
    builders = []
    for bm, bn in ((64, 128), (128, 64), (128, 128), (128, 256)):
        cfg = dict(block_M=bm, block_N=bn, block_K=32, stages=2, threads=128, **panel)
        builders.append(lambda cfg=cfg: cr.hint_kernel(4096, 4096, 4096, **cfg))
    builders.append(lambda: cr.hint_kernel(4096, 4096, 4096, 128, 128, 32, 3, 128, 0, "row"))
    for b in builders:
        for impl, a, k in calls(b):
            yield "carver", impl, a, k


def _gemm_ladder() -> Iterator[Job]:
    L, LT = M("gemm.ladder"), M("gemm.ladder.tables")
    for side in (1024, 4096, 8192):
        for name in L.RUNGS:
            if name == "rung1_naive" and side > 4096:
                continue
            for impl, a, k in calls(lambda n=name, s=side: L.build(n, s, s, s)):
                yield "gemm.ladder", impl, a, k
        if side == 1024:
            continue
        for cfg in LT.TUNE_CANDIDATES:
            for impl, a, k in calls(lambda c=cfg, s=side: L.build_tuned(s, s, s, c, SMS)):
                yield "gemm.ladder", impl, a, k
    pers = next(c for c in LT.TUNE_CANDIDATES if c.get("persistent"))
    ws_ragged = [c for c in LT.TUNE_CANDIDATES if c.get("ws") and (not c.get("persistent") or c.get("cluster", 1) > 1)][::2]
    builders = [lambda n=n: L.build(n, 1000, 1016, 1000) for n in ("rung3_pipelined", "rung4_annotated")]
    builders.append(lambda: L.build_tuned(1000, 1016, 1000, pers, SMS))
    builders += [lambda c=c: L.build_tuned(*LT.WS_RAGGED, c, SMS) for c in ws_ragged]
    builders += [lambda c=c: L.build_tuned(*LT.WS_RAGGED, c, SMS) for c in LT.TUNE_CANDIDATES if c.get("ws")]
    # tests: the tuned shapes without persistence, the block_N = 24 probe, plain sm_90a twins
    builders += [lambda c=c: L.rung4_annotated(4096, 4096, 4096, **c) for c in LT.TUNE_CANDIDATES[:9]]
    builders += [lambda: L.rung4_annotated(256, 240, 256, block_M=128, block_N=24, block_K=64, stages=2,
                                           threads=128, panel=0)]
    for b in builders:
        for impl, a, k in calls(b):
            yield "gemm.ladder", impl, a, k


def _gemm_ws() -> Iterator[Job]:
    W = M("gemm.ws")
    yield "gemm.ws", W.rung4_ws, (1024, 1024, 1024), dict(stages=4, epi_cols=128, inflight=0, cluster=2, workers=8)
    yield "gemm.ws", W.rung4_ws, (1024, 1024, 1024), dict(stages=3, inflight=1)
    yield "gemm.ws", W.fp8_ws, (1024, 1024, 1024), dict(block_N=128, stages=6, inflight=1, workers=8)
    yield "gemm.ws", W.fp8_ws, (1024, 1024, 1024), dict(block_N=192, stages=4, inflight=0, workers=8)


def _gemm_lowp() -> Iterator[Job]:
    L, LT = M("gemm.lowp"), M("gemm.lowp.tables")
    builders = []
    for side in (4096, 8192):
        for c in LT.FP8_PROMOTED_CANDIDATES + LT.FP8_WS_CANDIDATES:
            builders.append(lambda c=c, s=side: L.build_fp8_promoted(s, s, s, c, SMS))
        for c in LT.FP8_CANDIDATES:
            builders.append(lambda c=c, s=side: L.fp8_gemm(s, s, s, **c))
    for c in LT.FP8_WS_RAGGED:
        builders.append(lambda c=c: L.build_fp8_promoted(*LT.FP8_RAGGED, c, SMS))
    for m, n, k in ((4096, 4096, 4096), (128, 8192, 8192)):
        builders.append(lambda m=m, n=n, k=k: L.dequant_gemm(m, n, k, **L.DEQUANT_DEFAULT))
    # tests
    for c in LT.FP8_CANDIDATES[:1]:
        builders.append(lambda c=c: L.fp8_gemm(1024, 1024, 1024, **c))
    builders.append(lambda: L.dequant_gemm(1024, 1024, 1024, **L.DEQUANT_DEFAULT))
    for c in LT.FP8_PROMOTED_CANDIDATES[:3]:
        builders.append(lambda c=c: L.fp8_gemm_promoted(1024, 1024, 1024, **c))
    for c in LT.FP8_WS_CANDIDATES:
        builders.append(lambda c=c: L.build_fp8_promoted(4096, 4096, 4096, c, SMS))
    for b in builders:
        for impl, a, k in calls(b):
            yield "gemm.lowp", impl, a, k


def _gemm_variants() -> Iterator[Job]:
    S, K, G, B = M("gemm.splitk"), M("gemm.streamk"), M("gemm.grouped"), M("gemm.batched")
    ST, KT, GT, BT = M("gemm.splitk.tables"), M("gemm.streamk.tables"), M("gemm.grouped.tables"), M("gemm.batched.tables")
    m, n, k = ST.SHAPE
    for s in ST.SPLITS:
        for form in ("tile", "element"):
            yield "gemm.splitk", S.splitk_gemm, (m, n, k, s), dict(form=form, **S.DEFAULT)
        yield "gemm.splitk", S.splitk_gemm, (m, n, k, s), dict(form="element", **S.WIDE)
    m, n, k = KT.SHAPE
    yield "gemm.streamk", K.streamk_gemm, (m, n, k), dict(sms=SMS, **K.DEFAULT)
    yield "gemm.streamk", K.streamk_fixup, (m, n, k, 128, 128, 64, SMS), {}
    yield "gemm.streamk", K.streamk_gemm, (m, n, k), dict(K.DEFAULT)
    yield "gemm.streamk", K.streamk_fixup, (m, n, k), {}
    L = M("gemm.ladder")
    yield "gemm.streamk", L.rung4_annotated, (m, n, k), dict(**K.DEFAULT, panel=10)
    sizes = GT.MOE_SIZES
    bm = G.DEFAULT["block_M"]
    _, _, _, ntiles = G.tables(sizes, bm)
    max_m = -(-max(sizes) // bm) * bm
    yield "gemm.grouped", G.grouped_concat, (sum(sizes), 4096, 2048, len(sizes), ntiles), dict(G.DEFAULT)
    yield "gemm.grouped", G.grouped_ptr, (max_m, 4096, 2048, len(sizes), ntiles), dict(
        block_M=bm, block_N=G.DEFAULT["block_N"], block_K=G.DEFAULT["block_K"], threads=G.DEFAULT["threads"])
    for bt, mm, nn, kk in list(BT.SHAPES.values()) + [(3, 1000, 200, 136), (8, 1000, 1024, 128)]:
        yield "gemm.batched", B.batched_gemm, (bt, mm, nn, kk), dict(B.DEFAULT)


def _gemm_w4a16() -> Iterator[Job]:
    """Every candidate of every regime at its shapes, the ragged checks, the timing probes, and the
    configurations the tests lower."""
    W, WT = M("gemm.w4a16"), M("gemm.w4a16.tables")
    group = 128
    builders = []
    for (m, n, k) in WT.SHAPES:
        for cfg in WT.CANDIDATES[WT.regime(m)]:
            builders.append(lambda m=m, n=n, k=k, c=cfg: W.build(m, n, k, group, c))
    for (m, n, k), cfg in WT.RAGGED:
        builders.append(lambda m=m, n=n, k=k, c=cfg: W.build(m, n, k, group, c))
    for (m, n, k), cfg, probe in WT.PROBES:
        builders.append(lambda m=m, n=n, k=k, c=cfg, p=probe: W.build(m, n, k, group, c, probe=p))
    for (m, n, k), cfg in TEST_W4A16:
        builders.append(lambda m=m, n=n, k=k, c=cfg: W.build(m, n, k, group, W.config(**c)))
    for b in builders:
        for impl, a, kw in calls(b):
            yield "gemm.w4a16", impl, a, kw


#: The W4A16 configurations tests/kernels/test_gemm_w4a16.py lowers (shape, config arguments).
TEST_W4A16 = [
    ((1, 8192, 8192), dict(block_M=16, block_K=256, stages=4)),
    ((128, 8192, 8192), dict(block_M=128, block_K=128, stages=4, cluster=2)),
    ((4096, 4096, 4096), dict(block_M=256, block_K=64, stages=4, split="n")),
    ((16, 8192, 8192), dict(block_M=16, block_K=256, stages=4, stages_w=12)),
    ((128, 8192, 8192), dict(block_M=128, block_K=64, stages=4, split="n", stages_w=8, kpair=True)),
    ((16, 8192, 8192), dict(block_M=16, block_K=256, stages=4, inst="mma")),
    ((16, 8192, 8192), dict(block_M=16, block_K=512, stages=4, chunk=128)),
    ((128, 8192, 8192), dict(block_M=128, block_K=128, stages=4, cluster=2, chunk=64)),
]


def _gemm_ws_forms() -> Iterator[Job]:
    """The bf16 tuned GEMM (every candidate, both shapes, the fp16 repeats' kernel) and the batch
    folded into M on the hand-written pipeline (every candidate of both attention products)."""
    L, FT, BT, B = M("gemm.ladder"), M("gemm.bf16.tables"), M("gemm.batched_ws.tables"), M("gemm.batched")
    builders = []
    for (m, n, k) in FT.SHAPES:
        for cfg in FT.bf16_candidates():
            builders.append(lambda m=m, n=n, k=k, c=cfg: L.build_tuned(m, n, k, c, SMS, dtype="bfloat16"))
    fp16_cfg = next(c for c in FT.bf16_candidates() if L.label(c) == FT.FP16_LABEL)
    builders.append(lambda: L.build_tuned(*FT.SHAPES[-1], fp16_cfg, SMS))
    builders.append(lambda: L.build_tuned(1024, 1024, 1024, FT.bf16_candidates()[0], 132, dtype="bfloat16"))
    for kind, shape in (("scores", BT.SCORES), ("context", BT.CONTEXT)):
        for cfg in BT.CANDIDATES[kind]:
            builders.append(lambda s=shape, c=cfg: B.build_ws(*s, c, SMS))
    builders.append(lambda: B.build_ws(4, 256, 512, 128, BT.CANDIDATES["scores"][0], workers=8))
    for b in builders:
        for impl, a, kw in calls(b):
            yield "gemm.ws_forms", impl, a, kw


def _gemm_variants_ws() -> Iterator[Job]:
    """Split-K and grouped GEMM on the hand-written pipeline: every candidate at every shape (and
    routing), the no-split baseline, the reductions, and what the tests lower."""
    S, G, L = M("gemm.splitk"), M("gemm.grouped"), M("gemm.ladder")
    ST, GT = M("gemm.splitk_ws.tables"), M("gemm.grouped_ws.tables")
    builders = []
    for (m, n, k) in ST.SHAPES:
        for cfg in ST.CANDIDATES:
            builders.append(lambda m=m, n=n, k=k, c=cfg: S.build_ws(m, n, k, c, SMS))
        builders.append(lambda m=m, n=n, k=k: L.build_tuned(m, n, k, ST.NO_SPLIT, SMS))
    for sizes in GT.MIXES.values():
        for cfg in GT.CANDIDATES:
            builders.append(lambda s=sizes, c=cfg: G.build_ws(s, GT.N, GT.K, c, SMS))
        bm = G.DEFAULT["block_M"]
        _, _, _, ntiles = G.tables(sizes, bm)
        max_m = -(-max(sizes) // bm) * bm
        builders.append(lambda s=sizes, t=ntiles: G.grouped_concat(sum(s), GT.N, GT.K, len(s), t, **G.DEFAULT))
        builders.append(lambda s=sizes, t=ntiles, mm=max_m: G.grouped_ptr(
            mm, GT.N, GT.K, len(s), t, block_M=bm, block_N=G.DEFAULT["block_N"], block_K=G.DEFAULT["block_K"],
            threads=G.DEFAULT["threads"]))
    # tests
    builders.append(lambda: S.build_ws(1024, 1024, 16384, S.ws_splitk_config(4, cluster=2), SMS))
    builders.append(lambda: G.build_ws((300, 17, 1100), 1024, 512, G.ws_config(), 8))
    for b in builders:
        for impl, a, kw in calls(b):
            yield "gemm.variants_ws", impl, a, kw


def _gemm_streamk_ws() -> Iterator[Job]:
    """Stream-K on the hand-written pipeline: every candidate at every shape, its fix-up, the
    data-parallel and split-K baselines of the suite."""
    K, S, L, KT = M("gemm.streamk"), M("gemm.splitk"), M("gemm.ladder"), M("gemm.streamk_ws.tables")
    builders = []
    for (m, n, k) in KT.SHAPES:
        for cfg in KT.candidates((m, n, k)):
            builders.append(lambda m=m, n=n, k=k, c=cfg: K.build_ws(m, n, k, c, SMS))
        builders.append(lambda m=m, n=n, k=k: L.build_tuned(m, n, k, KT.NO_SPLIT, SMS))
    builders.append(lambda: S.build_ws(1024, 1024, 16384, KT.SPLITK_BEST, SMS))
    for b in builders:
        for impl, a, kw in calls(b):
            yield "gemm.streamk_ws", impl, a, kw


def _gemm_support() -> Iterator[Job]:
    P = M("gemm.support")
    for name, fn in P.PROBES.items():
        for impl, a, k in calls(fn):
            yield "gemm.support", impl, a, k


FAMILIES: dict[str, Callable[[], Iterator[Job]]] = {
    "elementwise": _elementwise, "quant": _quant, "norm": _norm, "rope": _rope, "fused": _fused,
    "pytorch": _pytorch, "case_study": _case_study, "carver": _carver, "gemm.ladder": _gemm_ladder,
    "gemm.ws": _gemm_ws, "gemm.lowp": _gemm_lowp, "gemm.variants": _gemm_variants, "gemm.support": _gemm_support,
    "gemm.w4a16": _gemm_w4a16, "gemm.ws_forms": _gemm_ws_forms, "gemm.variants_ws": _gemm_variants_ws,
    "gemm.streamk_ws": _gemm_streamk_ws,
}


# ---------------------------------------------------------------- ids and lowering
def _fname(impl) -> str:
    f = getattr(impl.func, "orig_func", None) or impl.func
    return f.__name__


def kernel_id(family: str, impl, args: tuple, kwargs: dict) -> str:
    f = getattr(impl.func, "orig_func", None) or impl.func
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    body = ", ".join(f"{k}={v!r}" for k, v in bound.arguments.items())
    return f"{family}/{f.__name__}({body})"


def jobs(only: list[str] | None = None) -> dict[str, tuple[Any, tuple, dict]]:
    """{kernel id: (factory, args, kwargs)}, every family (or ``only``), duplicates merged."""
    out: dict[str, tuple] = {}
    for fam, gen in FAMILIES.items():
        if only and fam not in only:
            continue
        for family, impl, a, k in gen():
            out.setdefault(kernel_id(family, impl, a, k), (impl, a, k))
    return out


def lowered_source(impl, args: tuple, kwargs: dict) -> str:
    """The CUDA source ``impl(*args, **kwargs).get_kernel_source()`` would return, without nvcc."""
    from tilelang import tvm
    from tilelang.engine.lower import lower

    tir = impl.get_tir(*args, **kwargs)
    pc = dict(impl.pass_configs or {})
    if tir.attrs and "tilelang_pass_configs" in tir.attrs:
        pc = {**dict(tir.attrs["tilelang_pass_configs"]), **pc}
    with tvm.transform.PassContext(opt_level=3, config=pc), tvm.target.Target(impl.target):
        return lower(tir, target=impl.target).kernel_source


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _digest_part(part: int, nparts: int, only: list[str] | None) -> dict[str, str]:
    import logging

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    out = {}
    for i, (kid, (impl, a, k)) in enumerate(sorted(jobs(only).items())):
        if i % nparts != part:
            continue
        try:
            out[kid] = _sha(lowered_source(impl, a, k))
        except Exception as exc:  # a probe that does not lower is a finding: keep its error class
            out[kid] = f"error {type(exc).__name__}"
    return out


def _ascend() -> dict[str, str]:
    cap = M("ascend")
    with cap.quiet_tilelang():
        caps = cap.capture_all()
    return {f"ascend/{name}": _sha(c.source) for name, c in sorted(caps.items())}


def digest(nparts: int = 1, only: list[str] | None = None, ascend: bool = True) -> dict[str, str]:
    if nparts <= 1:
        out = _digest_part(0, 1, only)
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing as mp

        with ProcessPoolExecutor(nparts, mp_context=mp.get_context("spawn")) as pool:
            parts = list(pool.map(_digest_part, range(nparts), [nparts] * nparts, [only] * nparts))
        out = {k: v for p in parts for k, v in p.items()}
    if ascend and not only:
        out.update(_ascend())
    return dict(sorted(out.items()))


def compare(before: dict[str, str], after: dict[str, str]) -> dict[str, Any]:
    """Changed, missing and new ids; a missing or new id whose source exists on the other side
    under another id is listed with that id."""
    by_sha_before: dict[str, list[str]] = {}
    for k, v in before.items():
        by_sha_before.setdefault(v, []).append(k)
    by_sha_after: dict[str, list[str]] = {}
    for k, v in after.items():
        by_sha_after.setdefault(v, []).append(k)
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    missing = {k: by_sha_after.get(before[k], []) for k in sorted(before.keys() - after.keys())}
    new = {k: by_sha_before.get(after[k], []) for k in sorted(after.keys() - before.keys())}
    return {"compared": len(before.keys() & after.keys()), "identical": len(before.keys() & after.keys()) - len(changed),
            "changed": changed, "missing": missing, "new": new}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the digest JSON here")
    ap.add_argument("--jobs", type=int, default=1, help="processes lowering in parallel")
    ap.add_argument("--only", default=None, help="comma list of families (no Ascend)")
    ap.add_argument("--no-ascend", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the kernel ids and exit")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    a = ap.parse_args(argv)
    if a.compare:
        b, c = (json.load(open(p, encoding="utf-8"))["kernels"] for p in a.compare)
        res = compare(b, c)
        print(json.dumps(res, indent=1))
        return 1 if res["changed"] or any(not v for v in res["missing"].values()) else 0
    only = a.only.split(",") if a.only else None
    if a.list:
        for k in sorted(jobs(only)):
            print(k)
        return 0
    t0 = time.time()
    kern = digest(a.jobs, only, ascend=not a.no_ascend)
    import tilelang

    data = {"tilelang": tilelang.__version__, "target": "sm_90a (lowered on CPU, no nvcc)",
            "seconds": round(time.time() - t0, 1), "count": len(kern), "kernels": kern}
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"{len(kern)} kernels in {data['seconds']} s -> {a.out}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
