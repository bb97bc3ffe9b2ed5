"""Suite ``gemm.w4a16``: the swap-AB W4A16 kernel (:mod:`kernels.gemm.w4a16`) and, for M <= 16, the
decode kernel (:mod:`kernels.gemm.w4a16_dec`: packed weights straight into registers, split K
summed in a cluster) against cuBLAS on the fp16 weights, at four decode batches on 8192 x 8192
weights and one square product.

Per shape: every candidate of its regime is compiled in parallel, checked (fp32 reference on
fresh inputs, poisoned output, then 50 more launches so a race shows before timing), searched
in rotated rounds, and the winner benched in alternating rounds against cuBLAS with the
fraction of the ledger's floor (:func:`ledger.w4a16.roofline`) it reaches.  Ragged shapes check
each pipeline form; timing probes (the same pipeline with the expansion or the tensor-core
work left out) say what sits on the critical path.
"""
import os
from typing import Any

from kernels.gemm.lowp import dequant_weight, pack_int4
from kernels.gemm.w4a16 import build, config as _c, kernel_weights, label, serves
from kernels.gemm.w4a16_dec import config as _d
from kernels.gemm.w4a16_tma import config as _t
from ledger.w4a16 import DECODE_SHAPES, SQUARE_SHAPE, fp16_cost, gain_bound, roofline, w4a16_cost
from measure.cost import source_of
from measure.search import par_build
from measure.suites.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, gemm_tolerance, rel_fro_err
#: The measured shapes (from the ledger: four decode batches on 8192 x 8192 weights, one square).
SHAPES: list[tuple[int, int, int]] = [*DECODE_SHAPES, SQUARE_SHAPE]


#: The issue's targets: speed-up over cuBLAS on the fp16 weights, by M.
TARGETS = {1: 2.5, 16: 2.5, 64: 2.0, 128: 1.3, 4096: 0.9}


#: The TMA decode kernel's candidates (one wave on 132 SMs for N = K = 8192: N/rows x split blocks,
#: 2 per SM when the shared memory allows, :func:`ledger.w4a16.tma_plan`; the last one holds 2 per SM
#: only at M <= 8, where the activation slice is half as large).
TMA_DECODE: list[dict[str, Any]] = [_t(128, 4, 4, 1), _t(128, 4, 2, 2), _t(128, 2, 4, 2), _t(128, 2, 8, 1),
                                    _t(256, 4, 4, 1), _t(128, 4, 6, 1)]

#: A small, aimed search per regime (each list compiled in parallel, checked, then timed in
#: rounds).  The first candidates of each list are the winners of the recorded searches (one
#: ring for both tiles; wgmma, or the warp-level m16n8k16 ``inst="mma"`` for a 16-row activation
#: tile; a ring of its own for the weights, ``stages_w``).  The others expand a stage in pieces
#: (``chunk``): two register buffers used in turn, so one piece's expansion overlaps the
#: previous piece's tensor-core work inside one consumer (the probes of the recorded run put
#: both on the critical path), which also lets a stage grow to 1024 of K (longer runs of each
#: weight row per TMA copy) without more registers; and deeper rings (more weight bytes in flight).
#: ``wide``: the same pipelines with the word-wide expansion (one 128-bit shared-memory read per
#: 8 weights instead of a byte read per 2).
def _fused(*cfgs: dict[str, Any]) -> list[dict[str, Any]]:
    """The same configurations with ``fuse`` (one PTX lop3 per fp16 pair of the interleaved expansion)."""
    return [dict(c, fuse=True) for c in cfgs]


CANDIDATES: dict[str, list[dict[str, Any]]] = {
    "decode": [_c(16, 512, 4, inst="mma"), _c(16, 512, 4), _c(16, 512, 4, inst="mma", chunk=128),
               _c(16, 512, 4, wide=True), _c(16, 256, 4, wide=True), _c(16, 256, 8, wide=True),
               _c(16, 512, 4, chunk=128, wide=True), _c(16, 512, 4, cluster=2, wide=True),
               _c(16, 512, 4, inst="mma", wide=True), _c(16, 512, 4, inst="mma", cluster=2, wide=True),
               _c(16, 256, 4, stages_w=8, wide=True), _c(16, 512, 6, wide=True),
               # the decode kernel (kernels.gemm.w4a16_dec): weights loaded into registers `depth` groups
               # ahead, split K over a cluster of `split` blocks of `rows` weight rows (1-4 blocks per SM)
               _d(128, 1, 4, 4), _d(128, 1, 4, 2), _d(128, 1, 4, 6), _d(128, 1, 4, 8), _d(64, 1, 4, 4),
               _d(64, 1, 4, 8), _d(64, 2, 4, 4), _d(128, 1, 8, 4), _d(128, 1, 8, 8), _d(64, 1, 8, 4),
               _d(256, 1, 4, 4), _d(256, 1, 4, 8),
               # four consumer warpgroups taking the K blocks in turn (``consumers=4``, 640 threads): twice the
               # warps to hide the expansion's latencies behind one another (the recorded profile: the ring alone
               # and the ring with the tensor-core work both ran in ~2/3 of the whole kernel's time)
               _c(16, 256, 8, wide=True, consumers=4), _c(16, 128, 8, wide=True, consumers=4),
               _c(16, 128, 16, wide=True, consumers=4), _c(16, 256, 12, wide=True, consumers=4),
               _c(16, 256, 8, cluster=2, wide=True, consumers=4),
               # the weights repacked offline so that every stage's tile is one contiguous run (``tiled``)
               _c(16, 512, 6, wide=True, tiled=True), _c(16, 512, 4, wide=True, tiled=True),
               _c(16, 256, 8, wide=True, tiled=True), _c(16, 256, 8, wide=True, consumers=4, tiled=True),
               _c(16, 128, 16, wide=True, consumers=4, tiled=True),
               # the weights' nibbles interleaved offline (``perm``): each thread reads its own 16-byte unit and
               # picks every fp16 pair with one mask: over a quarter fewer instructions per weight than ``wide``
               # (nvcc's PTX, counted by a test)
               _c(16, 512, 4, wide=True, perm=True), _c(16, 512, 6, wide=True, perm=True),
               _c(16, 256, 8, wide=True, perm=True), _c(16, 256, 4, stages_w=8, wide=True, perm=True),
               _c(16, 512, 4, inst="mma", wide=True, perm=True), _c(16, 512, 6, wide=True, tiled=True, perm=True),
               _c(16, 256, 8, wide=True, consumers=4, perm=True), _c(16, 256, 12, wide=True, consumers=4, perm=True),
               _c(16, 128, 16, wide=True, consumers=4, perm=True),
               _c(16, 256, 8, inst="mma", wide=True, consumers=4, perm=True),
               _c(16, 256, 12, inst="mma", wide=True, consumers=4, perm=True),
               _c(16, 512, 6, inst="mma", wide=True, perm=True),
               # the scale after the tensor-core work (``post``): each 128-k group's mma.sync partial in fp32,
               # times the row's scale; the expansion drops its mul.f16x2.  Beside it, the same pieces with the
               # scale in the expansion (the control)
               _c(16, 512, 6, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(16, 512, 6, inst="mma", chunk=128, wide=True, perm=True),
               _c(16, 512, 4, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(16, 512, 6, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True),
               _c(16, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(16, 256, 12, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True),
               _c(16, 256, 12, inst="mma", chunk=128, wide=True, consumers=4, perm=True, post=True),
               _c(16, 256, 8, inst="mma", chunk=128, wide=True, consumers=4, perm=True, post=True),
               _c(16, 256, 12, inst="mma", chunk=128, wide=True, consumers=4, tiled=True, perm=True, post=True),
               # an activation tile of 8 rows for M <= 8 (mma.sync's n8; refused at M = 16): half the tensor-core
               # work, the activation ring and the fold of the 16-row tile, whose rows past M are zeros
               _c(8, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(8, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(8, 256, 16, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(8, 512, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
               _c(8, 256, 12, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True),
               # the four-consumer winner of the last search on tiled interleaved weights, and with longer stages
               _c(16, 256, 12, wide=True, consumers=4, tiled=True, perm=True), _c(16, 512, 4, wide=True, consumers=4, perm=True),
               # the TMA decode kernel (kernels.gemm.w4a16_tma): the weights through a TMA ring (`stages` slots of
               # `gps` 128-k groups), expanded word-wide from shared memory into mma.sync; split K over a cluster
               # of `split` blocks of `rows` weight rows; 256 blocks at 2 per SM or 128 at 1 per SM
               *TMA_DECODE,
               # ``fuse``: the best interleaved forms of the last search with each fp16 pair picked by one lop3 written
               # in PTX (from the C form nvcc emits an AND and an OR: two LOP3 per pair in the SASS)
               *_fused(_c(8, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
                       _c(8, 256, 12, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True),
                       _c(8, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True),
                       _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True),
                       _c(16, 256, 12, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True),
                       _c(16, 256, 12, inst="mma", chunk=128, wide=True, consumers=4, perm=True, post=True),
                       _c(16, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True),
                       _c(16, 256, 12, wide=True, consumers=4, tiled=True, perm=True),
                       _c(16, 256, 12, wide=True, consumers=4, perm=True))],
    "m64": [_c(64, 256, 4), _c(64, 128, 6, stages_w=8), _c(64, 256, 4, chunk=64), _c(64, 256, 4, chunk=128),
            _c(64, 512, 2, chunk=128), _c(64, 256, 4, chunk=128, wide=True), _c(64, 256, 4, wide=True),
            _c(64, 512, 2, chunk=128, wide=True), _c(64, 256, 4, cluster=2, chunk=128, wide=True),
            _c(64, 256, 4, inst="mma", chunk=128, wide=True), _c(64, 128, 6, stages_w=8, wide=True),
            _c(64, 128, 8, wide=True, consumers=4), _c(64, 128, 4, wide=True, consumers=4),
            _c(64, 256, 4, wide=True, tiled=True), _c(64, 128, 6, wide=True, tiled=True),
            _c(64, 256, 4, wide=True, perm=True), _c(64, 256, 4, wide=True, tiled=True, perm=True),
            _c(64, 128, 6, wide=True, tiled=True, perm=True), _c(64, 128, 6, stages_w=8, wide=True, perm=True),
            _c(64, 256, 4, chunk=128, wide=True, perm=True), _c(64, 128, 8, stages_w=8, wide=True, perm=True),
            _c(64, 256, 4, stages_w=8, wide=True, perm=True),
            _c(64, 256, 4, inst="mma", chunk=128, wide=True, perm=True, post=True),
            # two blocks of a cluster split K for the same 128 weight rows (``kpair``), on interleaved weights: each
            # activation stage feeds 128 weight rows instead of 64, and each SM reads half of the activations
            _c(64, 128, 4, "n", stages_w=8, kpair=True, wide=True, perm=True),
            _c(64, 256, 2, "n", stages_w=4, kpair=True, wide=True, perm=True),
            _c(64, 128, 6, "n", stages_w=8, kpair=True, wide=True, perm=True),
            _c(64, 128, 4, "n", stages_w=12, kpair=True, wide=True, perm=True),
            # ``lag``: each consumer keeps one stage's wgmma running while it expands the next into a second register
            # buffer (its activation slot freed a stage late, so 8 slots of 128 k); in the probes 0.5-4 % faster
            # than the recorded winner (256-k stages, 4 + 8 slots, no lag) under the write flush, 7-10 % under the
            # clean one
            _c(64, 128, 8, stages_w=8, wide=True, perm=True, lag=True),
            _c(64, 128, 8, stages_w=4, wide=True, perm=True, lag=True),
            _c(64, 128, 8, stages_w=16, wide=True, perm=True, lag=True),
            *_fused(_c(64, 128, 8, stages_w=8, wide=True, perm=True, lag=True), _c(64, 256, 4, wide=True, tiled=True, perm=True),
                    _c(64, 256, 4, stages_w=8, wide=True, perm=True), _c(64, 128, 8, stages_w=16, wide=True, perm=True, lag=True)),
            # ``kglob``: kpair's split of K without the cluster (two blocks on the same 128 weight rows, each half of
            # K, meeting in a global workspace); in the timing probe of that name, on an H100, the 128-k form with
            # lag was the fastest M = 64 kernel under the write flush and 2.2 us slower under the clean one
            _c(64, 128, 8, "n", stages_w=8, wide=True, perm=True, lag=True, fuse=True, kglob=True),
            _c(64, 256, 4, "n", stages_w=4, wide=True, perm=True, lag=True, fuse=True, kglob=True)],
    "m128": [_c(128, 64, 8, cluster=2), _c(128, 128, 4, cluster=2, chunk=64), _c(128, 256, 2, cluster=2, chunk=64),
             _c(128, 128, 4, chunk=64), _c(128, 128, 4, chunk=64, wide=True),
             _c(128, 128, 4, cluster=2, chunk=64, wide=True), _c(128, 128, 4, wide=True),
             _c(128, 128, 4, chunk=64, wide=True, tiled=True), _c(128, 128, 4, wide=True, perm=True),
             _c(128, 128, 4, wide=True, tiled=True, perm=True),
             _c(128, 256, 2, chunk=128, wide=True, tiled=True, perm=True),
             _c(128, 128, 4, stages_w=8, wide=True, perm=True), _c(128, 128, 4, stages_w=4, wide=True, perm=True),
             _c(128, 128, 2, "n", stages_w=4, kpair=True, wide=True, perm=True),
             _c(128, 128, 2, "n", stages_w=6, kpair=True, wide=True, perm=True),
             *_fused(_c(128, 128, 4, stages_w=4, wide=True, perm=True), _c(128, 128, 4, stages_w=8, wide=True, perm=True),
                     _c(128, 128, 4, wide=True, tiled=True, perm=True))],
    "square": [_c(256, 64, 4, "n"), _c(256, 64, 4, "n", chunk=32), _c(256, 128, 2, "n", wide=True),
               _c(256, 128, 2, "n", wide=True, perm=True), *_fused(_c(256, 128, 2, "n", wide=True, perm=True))],
}

#: Ragged checks: M not a multiple of the activation tile (rows past M are TMA zeros, the
#: store is clipped), K a few groups, N a few blocks; one per pipeline form.
RAGGED: list[tuple[tuple[int, int, int], dict[str, Any]]] = [
    ((5, 1024, 2048), _c(16, 256, 4)),
    ((5, 1024, 2048), _c(16, 256, 4, stages_w=8, inst="mma")),
    ((100, 2048, 1024), _c(64, 128, 6, cluster=2)),
    ((100, 2048, 2048), _c(64, 128, 4, "n", stages_w=8, kpair=True)),
    ((300, 1024, 2048), _c(256, 64, 4, "n")),
    ((5, 1024, 2048), _c(16, 512, 4, chunk=128)),
    ((5, 1024, 2048), _c(16, 512, 4, inst="mma", chunk=128)),
    ((100, 2048, 1024), _c(64, 256, 4, chunk=64)),
    ((300, 1024, 2048), _c(256, 64, 4, "n", chunk=32)),
    ((5, 1024, 2048), _d(128, 1, 4, 4)),
    ((13, 1024, 2048), _d(64, 2, 4, 2)),
    ((5, 1024, 2048), _c(16, 512, 4, wide=True)),
    ((5, 1024, 2048), _c(16, 256, 4, cluster=2, wide=True)),
    ((5, 1024, 2048), _c(16, 256, 4, inst="mma", wide=True)),
    ((5, 1024, 2048), _c(16, 256, 4, stages_w=8, wide=True)),
    ((100, 2048, 1024), _c(64, 256, 4, chunk=128, wide=True)),
    ((300, 1024, 2048), _c(128, 128, 4, chunk=64, wide=True)),
    ((300, 1024, 2048), _c(256, 128, 2, "n", wide=True)),
    ((3, 512, 1024), _d(64, 1, 1, 4)),
    ((5, 1024, 2048), _t(128, 4, 4, 1)),
    ((13, 512, 1024), _t(64, 1, 2, 2)),
    ((3, 768, 1024), _t(256, 2, 2, 1)),
    ((5, 1024, 2048), _c(16, 256, 8, wide=True, consumers=4)),
    ((100, 2048, 1024), _c(64, 128, 4, wide=True, consumers=4)),
    ((13, 1024, 1024), _c(16, 128, 8, cluster=2, consumers=4)),
    ((5, 1024, 2048), _c(16, 512, 4, wide=True, tiled=True)),
    ((100, 2048, 1024), _c(64, 128, 6, wide=True, tiled=True)),
    ((13, 1024, 2048), _c(16, 256, 8, wide=True, consumers=4, tiled=True)),
    ((5, 1024, 2048), _c(16, 512, 4, wide=True, perm=True)),
    ((13, 1024, 2048), _c(16, 256, 8, wide=True, consumers=4, tiled=True, perm=True)),
    ((5, 1024, 2048), _c(16, 256, 4, stages_w=8, inst="mma", wide=True, perm=True)),
    ((100, 2048, 1024), _c(64, 256, 4, chunk=128, wide=True, perm=True)),
    ((300, 1024, 2048), _c(128, 128, 4, wide=True, tiled=True, perm=True)),
    ((300, 1024, 2048), _c(256, 128, 2, "n", wide=True, perm=True)),
    ((13, 1024, 2048), _c(16, 256, 8, inst="mma", wide=True, consumers=4, perm=True)),
    ((5, 1024, 2048), _c(16, 512, 6, inst="mma", chunk=128, wide=True, perm=True, post=True)),
    ((13, 1024, 2048), _c(16, 256, 8, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True)),
    ((100, 2048, 1024), _c(64, 256, 4, inst="mma", chunk=128, wide=True, perm=True, post=True)),
    ((13, 1024, 2048), _c(16, 256, 8, inst="mma", chunk=128, wide=True, consumers=4, perm=True, post=True)),
    ((5, 1024, 2048), _c(8, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True)),
    ((100, 2048, 2048), _c(64, 128, 4, "n", stages_w=8, kpair=True, wide=True, perm=True)),
    ((300, 1024, 2048), _c(128, 128, 2, "n", stages_w=4, kpair=True, wide=True, perm=True)),
    ((5, 1024, 2048), _c(8, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True, fuse=True)),
    ((100, 2048, 1024), _c(64, 128, 8, stages_w=8, wide=True, perm=True, lag=True, fuse=True)),
    ((100, 2048, 2048), _c(64, 128, 8, "n", stages_w=8, wide=True, perm=True, lag=True, fuse=True, kglob=True)),
]

#: Timing probes (the same pipeline with one part left out, wrong results): ``noexpand`` skips
#: the weight expansion, ``nomma`` the tensor-core work; for the recorded decode winner and for
#: its form in pieces.  ``loadonly``: the decode kernel with only its register loads; for the
#: wgmma kernel, its TMA ring alone (consumers wait for a stage and release it); ``mmaonly``: the
#: ring and the tensor-core work without any expansion (the registers are never filled).
PROBES: list[tuple[tuple[int, int, int], dict[str, Any], str]] = [
    ((16, 8192, 8192), _c(16, 512, 4), "nomma"),
    ((16, 8192, 8192), _c(16, 512, 4), "noexpand"),
    ((16, 8192, 8192), _c(16, 512, 4, chunk=128), "nomma"),
    ((16, 8192, 8192), _c(16, 512, 4, chunk=128), "noexpand"),
    # the decode kernel's memory pipeline alone (register loads, nothing else), at M = 1
    ((1, 8192, 8192), _d(128, 1, 4, 4), "loadonly"),
    ((1, 8192, 8192), _d(128, 1, 4, 8), "loadonly"),
    # the TMA decode kernel's load path alone (ring, waits, shared-memory reads of the weights)
    ((1, 8192, 8192), _t(128, 4, 4, 1), "loadonly"),
    ((1, 8192, 8192), _t(128, 2, 4, 2), "loadonly"),
    ((16, 8192, 8192), _t(128, 4, 4, 1), "loadonly"),
    # the word-wide winners' rings alone: consumers that wait for each stage and release it
    ((1, 8192, 8192), _c(16, 512, 6, wide=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 256, 4, stages_w=8, wide=True), "loadonly"),
    ((1, 8192, 8192), _c(16, 512, 6, wide=True), "mmaonly"),
    ((16, 8192, 8192), _c(16, 256, 4, stages_w=8, wide=True), "mmaonly"),
    ((16, 8192, 8192), _c(16, 256, 8, wide=True, consumers=4), "loadonly"),
    ((16, 8192, 8192), _c(16, 256, 8, wide=True, consumers=4), "mmaonly"),
    ((16, 8192, 8192), _c(16, 256, 8, wide=True, consumers=4, tiled=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 512, 4, wide=True, tiled=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 512, 4, wide=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 512, 4, wide=True), "mmaonly"),
    # the mma.sync winner on interleaved weights: its ring alone, and with the tensor-core work
    ((16, 8192, 8192), _c(16, 512, 6, inst="mma", wide=True, perm=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 512, 6, inst="mma", wide=True, perm=True), "mmaonly"),
    # the post kernel with the deepest ring: its ring alone, and with the tensor-core work
    ((16, 8192, 8192), _c(16, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True), "loadonly"),
    ((16, 8192, 8192), _c(16, 256, 12, inst="mma", chunk=128, wide=True, perm=True, post=True), "mmaonly"),
]


def regime(M: int) -> str:
    return "decode" if M <= 16 else "m64" if M <= 64 else "m128" if M <= 128 else "square"


def make_inputs(h: Any, M: int, N: int, K: int, group: int = 128) -> tuple[Any, Any, Any, Any]:
    """Fresh activations, int4 weights, scales (0.01..~0.05) and their fp16 expansion."""
    import torch

    a = h.rand((M, K), torch.float16)
    w_int = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=a.device)
    packed = pack_int4(w_int)
    scales = (h.rand((N, K // group), torch.float32, scale=0.02).abs() + 0.01).to(torch.float16)
    w16 = dequant_weight(packed, scales, group).to(torch.float16)
    return a, packed, scales, w16


def applies(cfg: dict[str, Any], M: int) -> bool:
    """Whether a candidate of M's regime is built for M (:func:`kernels.gemm.w4a16.serves`: an 8-row
    activation tile serves M <= 8 only); the search lists the others as skipped."""
    return "block_M" not in cfg or serves(cfg["block_M"], M)


def build_thunks(shapes: list[tuple[int, int, int]], skip: tuple[str, ...] = (), group: int = 128,
                 candidates: "dict[str, list[dict[str, Any]]] | None" = None,
                 ragged: "list[tuple[tuple[int, int, int], dict[str, Any]]] | None" = None,
                 probes: "list[tuple[tuple[int, int, int], dict[str, Any], str]] | None" = None) -> dict[str, Any]:
    """Label -> zero-argument compile of every kernel the suite builds for ``shapes``: the
    candidates of each shape's regime, the ragged checks, the probes (this module's tables unless
    given).  A driver prebuilds the tilelang cache on a CPU machine from the same list
    (``.gpuwork/prebuild.py``)."""
    candidates = CANDIDATES if candidates is None else candidates
    ragged = RAGGED if ragged is None else ragged
    probes = PROBES if probes is None else probes
    thunks: dict[str, Any] = {}
    for (M, N, K) in shapes:
        for cfg in candidates[regime(M)]:
            if label(cfg) not in skip and applies(cfg, M):
                thunks[f"{label(cfg)}@{M}x{N}x{K}"] = (lambda m=M, n=N, k=K, c=cfg: build(m, n, k, group, c))
    for (M, N, K), cfg in ragged:
        if label(cfg) not in skip:
            thunks[f"{label(cfg)}@{M}x{N}x{K}"] = (lambda m=M, n=N, k=K, c=cfg: build(m, n, k, group, c))
    for (M, N, K), cfg, probe in probes:
        if (M, N, K) in shapes and f"{probe}:{label(cfg)}" not in skip:
            thunks[f"{probe} {label(cfg)}@{M}x{N}x{K}"] = (
                lambda m=M, n=N, k=K, c=cfg, p=probe: build(m, n, k, group, c, probe=p))
    return thunks


def gpu_suite(h: Any, skip: tuple[str, ...] = (), *, shapes: "list[tuple[int, int, int]] | None" = None,
              candidates: "dict[str, list[dict[str, Any]]] | None" = None,
              ragged: "list[tuple[tuple[int, int, int], dict[str, Any]]] | None" = None,
              probes: "list[tuple[tuple[int, int, int], dict[str, Any], str]] | None" = None) -> None:
    """W4A16 (swap AB) vs cuBLAS on the fp16 weights: search, check, alternating-round bench,
    fraction of the ledger's floor; ragged checks; timing probes.  ``skip`` (and the
    ``W4A16_SKIP`` environment variable, comma-separated): labels not to build (a driver that
    saw them hang or fault).  ``shapes``, ``candidates``, ``ragged``, ``probes``: a smaller run
    (suite ``gemm.w4a16_tma``); this module's tables by default."""
    import torch

    group = 128
    CANDIDATES = globals()["CANDIDATES"] if candidates is None else candidates  # noqa: N806
    RAGGED = globals()["RAGGED"] if ragged is None else ragged  # noqa: N806
    PROBES = globals()["PROBES"] if probes is None else probes  # noqa: N806
    skip = tuple(skip) + tuple(x for x in os.environ.get("W4A16_SKIP", "").split(",") if x)
    shapes = ([(16, 1024, 1024), (128, 1024, 2048)] if h.quick else SHAPES) if shapes is None else shapes
    thunks = build_thunks(shapes, skip, group, CANDIDATES, RAGGED, PROBES)
    built = par_build(thunks)
    h.note("w4a16 compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]}, skipped=list(skip))

    def launch(tag: str, fn: Any, times: int = 1) -> None:
        h.log(f"  launch {tag}")  # a driver that sees a hang or a fault skips this label next time
        for _ in range(times):
            fn()
        torch.cuda.synchronize()

    for (M, N, K), cfg in RAGGED:
        key = f"{label(cfg)}@{M}x{N}x{K}"
        name = f"w4a16 {label(cfg)} ragged {M}x{N}x{K}"
        if key not in built or built[key]["kernel"] is None:
            h.skip(name, built.get(key, {}).get("error") or "skipped")
            continue
        a, packed, scales, w16 = make_inputs(h, M, N, K, group)
        ref = torch.matmul(a.float(), w16.float().t())
        c = h.poisoned((M, N), torch.float16)
        wq = kernel_weights(packed, cfg)
        launch(f"{label(cfg)} {M}x{N}x{K}", lambda k=built[key]["kernel"]: k(a, wq, scales, c))
        h.check(name, c, ref, rel_fro_err=rel_fro_err(c, ref), config=cfg, **gemm_tolerance(K))
        del a, packed, scales, w16, ref, c

    for (M, N, K) in shapes:
        shape = f"{M}x{N}x{K}"
        a, packed, scales, w16 = make_inputs(h, M, N, K, group)
        ref = torch.matmul(a.float(), w16.float().t())
        tiles: dict = {}

        def weights(cfg: dict[str, Any]) -> Any:  # each repacked copy made once (offline repacking)
            if not cfg.get("tiled") and not cfg.get("perm"):
                return packed
            key = (cfg["split"], cfg["block_K"] if cfg.get("tiled") else 0, bool(cfg.get("perm")))
            if key not in tiles:
                tiles[key] = kernel_weights(packed, cfg)
            return tiles[key]

        cands: dict[str, Any] = {}
        rejected: dict[str, str] = {}
        for cfg in CANDIDATES[regime(M)]:
            rec = built.get(f"{label(cfg)}@{shape}")
            if rec is None or rec["kernel"] is None:
                rejected[label(cfg)] = (rec or {}).get("error") or "skipped"
                continue
            c = h.poisoned((M, N), torch.float16)
            fn = (lambda k=rec["kernel"], c=c, w=weights(cfg): k(a, w, scales, c))
            launch(f"{label(cfg)} {shape}", fn)
            e = rel_fro_err(c, ref)
            if e < 1e-2:  # a wrong or unwritten tile gives O(1) or NaN
                launch(f"{label(cfg)} {shape}", fn, times=50)  # a race shows up before the timed search
                e2 = rel_fro_err(c, ref)
                if e2 < 1e-2:
                    cands[label(cfg)] = fn
                else:
                    rejected[label(cfg)] = f"rel_fro_err={e:.3g}, after 50 more launches {e2:.3g}"
            else:
                rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
        h.note(f"w4a16 {shape} candidates", f"{len(cands)} valid of {len(CANDIDATES[regime(M)])}", rejected=rejected)
        if not cands:
            h.error(f"w4a16 {shape}", RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(f"w4a16 {shape}", cands, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in CANDIDATES[regime(M)] if label(c) == best)
        kern = built[f"{best}@{shape}"]["kernel"]
        c = h.poisoned((M, N), torch.float16)
        wb = weights(cfg)
        kern(a, wb, scales, c)
        err = rel_fro_err(c, ref)
        h.check(f"w4a16 {shape}", c, ref, rel_fro_err=err, config=cfg, **gemm_tolerance(K))
        w4 = roofline(w4a16_cost(M, N, K, group))
        f16 = roofline(fp16_cost(M, N, K))
        rec = h.bench(f"w4a16 {shape}", lambda: kern(a, wb, scales, c), flops=w4.cost.flops, bytes=w4.cost.bytes,
                      ledger_source=source_of(w4a16_cost),
                      baselines={"cuBLAS fp16 weights": lambda: torch.matmul(a, w16.t())},
                      targets={"speedup:cuBLAS fp16 weights": TARGETS.get(M, 1.0)}, rounds=BENCH_ROUNDS,
                      config=cfg, label=best, shape=[M, N, K], group=group, rel_fro_err=err,
                      floor_us=w4.bound_s * 1e6, floor_bound=w4.bound, fp16_floor_us=f16.bound_s * 1e6,
                      gain_bound=gain_bound(M, N, K, group), machine=w4.machine, floor_source=source_of(roofline))
        rec["frac_floor"] = w4.bound_s * 1e3 / rec["ms"]
        base = rec["baselines"].get("cuBLAS fp16 weights")
        if base:
            rec["cublas_frac_floor"] = f16.bound_s * 1e3 / base
        h.log(f"    floor {w4.bound_s * 1e6:.1f} us ({w4.bound}); reached {100 * rec['frac_floor']:.0f} %; "
              f"gain bound {rec['gain_bound']:.2f}x")
        for (pm, pn, pk), pcfg, probe in PROBES:
            pr = built.get(f"{probe} {label(pcfg)}@{shape}")
            full = built.get(f"{label(pcfg)}@{shape}")
            if (pm, pn, pk) != (M, N, K) or not pr or pr["kernel"] is None or not full or full["kernel"] is None:
                continue
            cp = h.poisoned((M, N), torch.float16)
            wp = weights(pcfg)
            launch(f"{probe}:{label(pcfg)} {shape}", lambda k=pr["kernel"]: k(a, wp, scales, cp))
            h.search(f"w4a16 probe {probe} {shape} {label(pcfg)}",
                     {"full": lambda k=full["kernel"]: k(a, wp, scales, c),
                      probe: lambda k=pr["kernel"]: k(a, wp, scales, cp)}, rounds=SEARCH_ROUNDS)
            del cp
        del a, packed, scales, w16, ref, c, tiles
        torch.cuda.empty_cache()
