"""Stream-K GEMM for a Hopper of ``SMS`` SMs (132 on the H200): data-parallel full waves + K-split tail tiles + fix-up.

When the number of output tiles ``T`` is a little more than a multiple of the SM
count, the last wave runs a handful of tiles on a mostly idle GPU. Stream-K
launches exactly ``sms`` persistent blocks:

1. **data-parallel part** -- the first ``T - T % sms`` tiles, ``T // sms`` per
   block, each computed whole and stored in fp16;
2. **stream-K part** -- the ``T % sms`` tail tiles are cut along K into their
   ``iters_per_tile`` K-steps, and the ``tail * iters_per_tile`` steps are dealt
   out evenly to all ``sms`` blocks; a block whose range crosses a tile boundary
   works on up to ``max_segments`` tile pieces. Each piece's fp32 partial is added
   tile-wise (atomically) into an fp32 workspace of ``tail`` tiles;
3. **fix-up** -- a second small kernel casts the tail tiles from the workspace to
   fp16 C.

The schedule is computed on the host (:func:`schedule`) and baked into the kernel.
Convention: ``C[M, N] = A[M, K] @ B[N, K]^T``, fp16 in/out, fp32 accumulate.

:func:`streamk_ws` is the same idea on the hand-written warp-specialised pipeline of
:mod:`kernels.gemm.ws` (TMA producer warpgroup, two wgmma consumer warpgroups, ``setmaxnreg``,
the producer's ring running on across work items): ``dp_waves`` full waves of whole tiles
(fp16 to C), then the remaining tiles' K steps dealt out evenly (``dp_waves=0``: every tile,
pure stream-K); each tail piece's fp32 partial goes by TMA store to its own workspace slot (no
atomics, a deterministic sum) and :func:`streamk_ws_fixup` adds the pieces of every tail tile
in worker order (see :class:`WsSchedule`).  Three forms do the fix-up inside the kernel instead:
:func:`streamk_ws_last` (the last piece of a chunk to be counted adds them all) and :func:`streamk_ws_spread`
(every contributor of a tail tile adds a band of its rows once all pieces are counted) and :func:`streamk_ws_red`
(every piece adds itself into its tile's fp32 sum by vector reductions at the L2; the last one to be counted casts
it); on the H200 all three were slower than the separate fix-up kernel, whose sum the suites now take written by hand
(``fix_vec``; ``measure/results/timing/README.md``).  :func:`streamk_ws_rs` stores the tail pieces from registers
instead of by TMA store (``reg_store``): its kernel ran 0.7 us shorter with six stages, but the timed calls were not
faster, so no suite takes it.  ``aligned`` (:func:`ws_schedule`) deals each tail tile's K steps out to its own
workers when the tail tiles divide the workers, so that no worker stores two pieces: on the H200 it took 1.3-1.5 us
off the awkward shape's hybrid, and with the fix-up signalled after the tail pieces (``pdl_at="end"``) it is the
suites' stream-K form.
"""

import math
from dataclasses import dataclass
from typing import Any

import tilelang
import tilelang.language as T

from tilelang.layout import make_swizzled_layout

from kernels.common import SMEM_PER_BLOCK, SMS
from kernels.gemm.common import TARGET, check_inputs as check_operands, check_wgmma_n, require

#: Where a ``pdl`` stream-K kernel signals that its fix-up kernel may be launched (see :func:`_streamk_ws_program`).
PDL_AT = ("start", "tail", "end")


def _check_signal_and_staging(pdl: bool, pdl_at: str, tail_cols: int, block_N: int, staged: bool) -> None:
    """The constraints of ``pdl_at`` and ``tail_cols`` (one place for :func:`ws_config` and the program): ``pdl_at``
    one of :data:`PDL_AT`, other than ``"start"`` only with ``pdl``; ``tail_cols`` only where the tail pieces go
    through an fp32 staging (``staged``: not fixup, spread, red or reg_store), dividing ``block_N``."""
    require(pdl_at in PDL_AT, f"pdl_at must be one of {PDL_AT}, got {pdl_at!r}")
    require(pdl or pdl_at == "start", f"pdl_at={pdl_at!r} places the signal of pdl: it needs pdl=True")
    if tail_cols:
        require(staged, "tail_cols sizes the fp32 staging of the tail pieces: fixup, spread, red and reg_store have none")
        require(block_N % tail_cols == 0, f"tail_cols={tail_cols} must divide block_N={block_N}")


def _check_aligned(aligned: bool, inside: bool) -> None:
    """``aligned`` only with the separate fix-up kernel (``inside``: a fix-up inside the kernel, which does not read
    the tile-by-tile split): one place for :func:`ws_config` and the program."""
    require(not aligned or not inside,
            "aligned: only the separate fix-up kernel reads the tile-by-tile split (fixup, spread and red do not)")


def _check_share(share: bool, epi_cols: int, tail_cols: int, staged: bool, hybrid: bool) -> None:
    """``share`` (one buffer for the whole tiles' fp16 staging and the tail pieces' fp32 staging) needs both
    stagings (``staged``: the tail pieces go through the fp32 staging; ``hybrid``: the schedule has whole tiles and a
    streamed tail) and the same bytes in each: ``epi_cols == 2 * tail_cols``.  One place for :func:`ws_config` and
    the program."""
    if not share:
        return
    require(staged, "share: the tail pieces must go through the fp32 staging (not fixup, spread, red or reg_store)")
    require(hybrid, "share: the schedule needs both whole tiles and a streamed tail (dp_rounds > 0 and sk_tiles > 0)")
    require(epi_cols == 2 * tail_cols,
            f"share: the fp16 staging of epi_cols={epi_cols} columns holds the fp32 staging of tail_cols={tail_cols} "
            f"only when epi_cols == 2 * tail_cols")


def _ws_pass_configs() -> dict:
    from kernels.gemm.ws import WS_PASS_CONFIGS

    return WS_PASS_CONFIGS


@dataclass(frozen=True)
class Schedule:
    """Host-side stream-K plan for one shape."""

    tiles: int  # output tiles
    tiles_n: int  # tiles along N
    iters_per_tile: int  # K steps per tile
    dp_tiles: int  # tiles computed whole (full waves)
    sk_tiles: int  # tail tiles split along K
    sk_iters: int  # tail K steps in all
    iters_per_block: int  # floor share of the tail steps per block
    extra: int  # the first `extra` blocks take one more step
    max_segments: int  # most tile pieces one block may touch
    dp_rounds: int  # whole tiles per block

    @property
    def waves_data_parallel(self) -> float:
        return self.tiles / SMS


def schedule(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, sms: int = SMS) -> Schedule:
    """Split ``ceil(M/bm) * ceil(N/bn)`` tiles into full waves and a K-split tail over ``sms`` blocks."""
    tiles_m, tiles_n = math.ceil(M / block_M), math.ceil(N / block_N)
    tiles = tiles_m * tiles_n
    ipt = math.ceil(K / block_K)
    sk_tiles = tiles % sms
    dp_tiles = tiles - sk_tiles
    sk_iters = sk_tiles * ipt
    q, r = divmod(sk_iters, sms)
    share = q + (1 if r else 0)
    # a range of `share` steps starting anywhere touches at most this many tiles
    max_segments = 0 if share == 0 else min(sk_tiles, (share + ipt - 2) // ipt + 1)
    return Schedule(tiles, tiles_n, ipt, dp_tiles, sk_tiles, sk_iters, q, r, max_segments, dp_tiles // sms)


@tilelang.jit(target=TARGET)
def streamk_gemm(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
    sms: int = SMS,
    tail_stages: int = 2,
):
    """Persistent stream-K kernel: writes DP tiles of C (fp16) and adds tail partials into W (fp32)."""
    s = schedule(M, N, K, block_M, block_N, block_K, sms)
    ipt = s.iters_per_tile
    tiles_n = s.tiles_n
    dp_tiles = s.dp_tiles
    q, r = s.iters_per_block, s.extra
    w_rows = max(s.sk_tiles, 1) * block_M

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((N, K), T.float16),
        C: T.Tensor((M, N), T.float16),
        W: T.Tensor((w_rows, block_N), T.float32),
    ):
        with T.Kernel(sms, threads=threads) as pid:
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            A_t = T.alloc_shared((block_M, block_K), T.float16)  # the tail loop has its own ring
            B_t = T.alloc_shared((block_N, block_K), T.float16)
            W_s = T.alloc_shared((block_M, block_N), T.float32)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            # 1. data-parallel full waves
            for rnd in T.serial(s.dp_rounds):
                tile = rnd * sms + pid
                tm = tile // tiles_n
                tn = tile % tiles_n
                T.clear(acc)
                for ko in T.Pipelined(ipt, num_stages=stages):
                    T.copy(A[tm * block_M, ko * block_K], A_s)
                    T.copy(B[tn * block_N, ko * block_K], B_s)
                    T.gemm(A_s, B_s, acc, transpose_B=True)
                T.copy(acc, C_s)
                T.copy(C_s, C[tm * block_M, tn * block_N])
            # 2. stream-K tail: steps [begin, end) of the tail's sk_iters steps
            begin = pid * q + T.min(pid, r)
            end = begin + q + T.if_then_else(pid < r, 1, 0)
            first = begin // ipt
            for seg in T.serial(s.max_segments):
                lt = first + seg  # local tail tile
                it0 = T.max(begin, lt * ipt)
                it1 = T.min(end, (lt + 1) * ipt)
                if it0 < it1:
                    tile = dp_tiles + lt
                    tm = tile // tiles_n
                    tn = tile % tiles_n
                    T.clear(acc)
                    for ko in T.Pipelined(it1 - it0, num_stages=tail_stages):
                        T.copy(A[tm * block_M, (it0 - lt * ipt + ko) * block_K], A_t)
                        T.copy(B[tn * block_N, (it0 - lt * ipt + ko) * block_K], B_t)
                        T.gemm(A_t, B_t, acc, transpose_B=True)
                    T.copy(acc, W_s)
                    T.atomic_add(W[lt * block_M, 0], W_s)

    return main


@tilelang.jit(target=TARGET)
def streamk_fixup(M: int, N: int, K: int, block_M: int = 128, block_N: int = 128, block_K: int = 64, sms: int = SMS):
    """Fix-up: cast the tail tiles from the fp32 workspace into fp16 C."""
    s = schedule(M, N, K, block_M, block_N, block_K, sms)
    tiles_n = s.tiles_n
    dp_tiles = s.dp_tiles
    w_rows = max(s.sk_tiles, 1) * block_M

    @T.prim_func
    def main(C: T.Tensor((M, N), T.float16), W: T.Tensor((w_rows, block_N), T.float32)):
        with T.Kernel(max(s.sk_tiles, 1), threads=256) as lt:
            tile = dp_tiles + lt
            tm = tile // tiles_n
            tn = tile % tiles_n
            for i, j in T.Parallel(block_M, block_N):
                C[tm * block_M + i, tn * block_N + j] = T.cast(W[lt * block_M + i, j], T.float16)

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)


def check_inputs(a: Any, b: Any, block_M: int = 128, block_N: int = 128, block_K: int = 64) -> tuple[int, int, int]:
    """Validate operands; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    return check_operands(a, b, torch.float16, tiles={"M": block_M, "N": block_N, "K": block_K}, block_N=block_N)


def make_runner(a: Any, b: Any, sms: int = SMS, **cfg: Any):
    """Compile both kernels for a's and b's shape; returns ``fn() -> C`` (allocates C and W per call)."""
    import torch

    cfg = {**DEFAULT, **cfg}
    M, N, K = check_inputs(a, b, cfg["block_M"], cfg["block_N"], cfg["block_K"])
    s = schedule(M, N, K, cfg["block_M"], cfg["block_N"], cfg["block_K"], sms)
    main = streamk_gemm(M, N, K, sms=sms, **cfg)
    fix = streamk_fixup(M, N, K, cfg["block_M"], cfg["block_N"], cfg["block_K"], sms)
    w_rows = max(s.sk_tiles, 1) * cfg["block_M"]
    c = torch.empty((M, N), dtype=torch.float16, device=a.device)
    w = torch.empty((w_rows, cfg["block_N"]), dtype=torch.float32, device=a.device)

    def fn(out: Any = None) -> Any:
        dst = c if out is None else out
        w.zero_()
        main(a, b, dst, w)
        if s.sk_tiles:
            fix(dst, w)
        return dst

    return fn


# ---------------------------------------------------------------- stream-K on the hand-written pipeline
@dataclass(frozen=True)
class WsSchedule:
    """Host-side plan of :func:`streamk_ws` (128-row tiles, ``workers`` persistent blocks).

    Tiles ``[0, dp_tiles)`` are computed whole in ``dp_rounds`` full waves and stored in fp16;
    the ``sk_iters`` K steps of the remaining ``sk_tiles`` tiles are dealt out evenly, worker
    ``w`` taking the contiguous range ``[begin(w), end(w))`` of the tail's step sequence (tile by
    tile, K step by K step); each piece of a tile a worker touches is one fp32 partial, stored in
    workspace slot ``w * max_segments + piece``; a fix-up adds the pieces of a tile and casts it.
    With ``per_tile = n`` (the aligned split) each tail tile's K steps are dealt out to its own ``n``
    consecutive workers instead (``workers = n * sk_tiles``): every range still lies in one tile, so no
    worker has two pieces; ``iters_per_worker`` and ``extra`` are then the shares within a tile.
    """

    tiles: int  # output tiles
    grid_n: int  # tiles along N
    grid_m: int  # tiles along M
    iters_per_tile: int  # K steps per tile
    workers: int
    dp_tiles: int
    dp_rounds: int
    sk_tiles: int
    sk_iters: int
    iters_per_worker: int  # floor share of the tail steps
    extra: int  # workers 0 .. extra-1 take one more step
    max_segments: int  # most tile pieces one worker may touch
    max_contrib: int  # most workers that may touch one tail tile
    per_tile: int = 0  # aligned split: workers per tail tile (0: the tail's steps dealt out as one sequence)

    @property
    def slots(self) -> int:
        return self.workers * self.max_segments if self.sk_tiles else 0

    def begin(self, w: int) -> int:
        return tail_begin(w, self)

    def end(self, w: int) -> int:
        return tail_end(w, self)

    def owner(self, i: int) -> int:
        """The worker whose range holds tail step ``i``."""
        return tail_owner(i, self)

    def span(self, lt: int) -> tuple[int, int]:
        """(first worker, number of workers) that write a piece of tail tile ``lt``: the owners of its first and
        last K step and every worker between them (the kernels compute the same from ``sk_owner``)."""
        ipt = self.iters_per_tile
        w_lo = self.owner(lt * ipt)
        return w_lo, self.owner((lt + 1) * ipt - 1) - w_lo + 1

    def pieces(self) -> list[list[tuple[int, int, int, int]]]:
        """Per worker, its tail pieces as (workspace slot, tail tile, first K step, K steps): the
        host mirror of the kernel's loops (the tests check that every K step of every tail tile
        is covered once and that the fix-up's slot arithmetic finds exactly these pieces)."""
        out = []
        ipt = self.iters_per_tile
        for w in range(self.workers):
            b, e = self.begin(w), self.end(w)
            mine = []
            for seg in range(self.max_segments):
                lt = b // ipt + seg
                it0, it1 = max(b, lt * ipt), min(e, (lt + 1) * ipt)
                if it0 < it1:
                    mine.append((w * self.max_segments + seg, lt, it0 - lt * ipt, it1 - it0))
            out.append(mine)
        return out


def ws_schedule(M: int, N: int, K: int, block_N: int, block_K: int = 64, workers: int = SMS,
                dp_waves: int = -1, aligned: bool = False) -> WsSchedule:
    """Plan for :func:`streamk_ws`: ``dp_waves`` full waves computed whole (-1: every full wave,
    the tail being the last partial wave; 0: every tile streamed, pure stream-K; k: ``k`` full
    waves, the rest -- at least one full wave plus the partial one for k = full waves - 1, the
    "two-tile" hybrid -- streamed).  ``aligned``: each tail tile split among ``workers / sk_tiles`` workers of its
    own (the tail tiles must divide the workers), so that no worker's range crosses a tile boundary: one piece per
    worker, at the same largest share whenever ``sk_tiles`` divides ``workers``."""
    from kernels.gemm.ws import WS_BLOCK_M

    require(workers >= 1, f"workers must be >= 1, got {workers}")
    grid_m, grid_n = -(-M // WS_BLOCK_M), -(-N // block_N)
    tiles = grid_m * grid_n
    ipt = -(-K // block_K)
    full = tiles // workers
    require(dp_waves >= -1 and dp_waves <= full, f"dp_waves={dp_waves}: {tiles} tiles on {workers} workers have {full} full waves")
    dp_rounds = full if dp_waves == -1 else dp_waves
    dp_tiles = dp_rounds * workers
    sk_tiles = tiles - dp_tiles
    sk_iters = sk_tiles * ipt
    q, r = divmod(sk_iters, workers)
    share = q + (1 if r else 0)
    max_segments = 0 if share == 0 else min(sk_tiles, (share + ipt - 2) // ipt + 1)
    # a tile's ipt steps span at most ceil(ipt / q) + 1 worker ranges (each range has >= q steps)
    max_contrib = 0 if sk_tiles == 0 else min(workers, ipt if q == 0 else -(-ipt // q) + 1)
    if aligned:
        require(sk_tiles > 0, "aligned: the schedule streams no tile, there is no tail to split")
        require(workers % sk_tiles == 0,
                f"aligned: the {sk_tiles} tail tiles must divide the {workers} workers (each tile its own workers)")
        n = workers // sk_tiles
        require(n <= ipt, f"aligned: {n} workers per tail tile must not exceed its {ipt} K steps")
        q, r = divmod(ipt, n)
        return WsSchedule(tiles, grid_n, grid_m, ipt, workers, dp_tiles, dp_rounds, sk_tiles, sk_iters, q, r, 1, n, n)
    return WsSchedule(tiles, grid_n, grid_m, ipt, workers, dp_tiles, dp_rounds, sk_tiles, sk_iters, q, r,
                      max_segments, max_contrib)


def raster(ct: Any, panel: int, grid_m: int, grid_n: int, tmin: Any = min) -> tuple[Any, Any]:
    """Tile index -> (M block, N block): panels of ``panel`` tile rows walked column by column
    (the rasterization of :func:`kernels.gemm.ws.rung4_ws`, cluster 1); ``tmin`` is ``T.min`` in a kernel."""
    if panel <= 0:
        return ct // grid_n, ct % grid_n
    width = panel * grid_n
    first = ct // width * panel
    rows = tmin(panel, grid_m - first)
    return first + ct % width % rows, ct % width // rows


def _swizzled(*bufs: Any) -> dict:
    """The swizzled layout for every shared buffer given (``None`` skipped)."""
    return {b: make_swizzled_layout(b) for b in bufs if b is not None}


#: Device helpers of the spread fix-up (``spread``, :func:`streamk_ws_spread`): the arrival on a tail tile's
#: counter (release), the wait for all of its pieces (acquire), the reduction of a band of rows of the tile (every
#: piece read at the L2, added in worker order, cast, stored) and the departure (the last one resets the counter).
_SPREAD_SRC = r"""
namespace sksp {
__device__ __forceinline__ void arrive(int* p) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
}
__device__ __forceinline__ void wait_count(const int* p, int target) {
  int v;
  do {
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  } while (v < target);
}
// the second count of a tail tile's band readers: the last of the 2n arrivals leaves the counter zero
__device__ __forceinline__ void depart(int* p, int total) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  if (old == total - 1) *p = 0;
}
// rows [r0, r1) of one consumer's 64 rows of a tail tile: the n pieces (workers w_lo .. w_lo + n - 1, their
// workspace slots as sk_slot computes them) added in worker order, then cast and stored to C (dst: the first
// of those 64 rows and the tile's first column; w: the workspace at the same 64 rows of slot 0)
template <int BN, int MAXC, int Q, int R, int IPT, int MAXSEG, typename Out>
__device__ __forceinline__ void reduce_rows(Out* dst, int ldc, const float* w, int w_lo, int n, int lt, int r0,
                                            int r1, int tid) {
  const int vec = (r1 - r0) * (BN / 4);
  for (int i = tid; i < vec; i += 128) {
    const int row = r0 + i / (BN / 4), col = 4 * (i % (BN / 4));
    float4 v[MAXC];
#pragma unroll
    for (int k = 0; k < MAXC; ++k) {
      if (k < n) {
        const int wk = w_lo + k;
        const int slot = wk * MAXSEG + lt - (wk * Q + min(wk, R)) / IPT;
        v[k] = __ldcg(reinterpret_cast<const float4*>(w + ((long)slot * 128 + row) * BN + col));
      }
    }
    float4 s = v[0];
#pragma unroll
    for (int k = 1; k < MAXC; ++k) {
      if (k < n) {
        s.x += v[k].x;
        s.y += v[k].y;
        s.z += v[k].z;
        s.w += v[k].w;
      }
    }
    Out o[4] = {Out(s.x), Out(s.y), Out(s.z), Out(s.w)};
    *reinterpret_cast<uint2*>(dst + (long)row * ldc + col) = *reinterpret_cast<uint2*>(o);
  }
}
}  // namespace sksp
"""


#: Device helpers of the reducing fix-up (``red``, :func:`streamk_ws_red`).  The accumulator layout is that of
#: :data:`kernels.gemm.ws._FIXUP_SRC` (thread ``t``'s registers ``acc[4c + 2r + e]`` hold row ``16 (t / 32) +
#: (t % 32) / 4 + 8r``, column ``8c + 2 (t % 4) + e``).  ``red_partial`` adds a consumer's 64 rows into the tail
#: tile's fp32 sum in the workspace with vector reductions at the L2 (``red.global.add.v2.f32``, no value comes
#: back); ``finish`` -- run by the last piece to be counted -- reads the finished sum at the L2, stores it to C in
#: 16 bits and writes zeros back, so every complete launch leaves the workspace as it found it.
_RED_SRC = r"""
namespace skrd {
template <int COLS>
__device__ __forceinline__ void red_partial(float* dst, int ld, const float* acc, int off, int tid) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};"
                   :: "l"(dst + (row + 8 * r) * ld + 8 * c + col), "f"(acc[off + 4 * c + 2 * r]),
                      "f"(acc[off + 4 * c + 2 * r + 1]) : "memory");
}
template <int COLS, typename Out>
__device__ __forceinline__ void finish(Out* dst, int ldc, float* w, int ld, int tid) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
  float2 v[COLS / 8][2];
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) v[c][r] = __ldcg(reinterpret_cast<const float2*>(w + (row + 8 * r) * ld + 8 * c + col));
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      skqf::st2(dst + (row + 8 * r) * ldc + 8 * c + col, v[c][r].x, v[c][r].y);
      __stcg(reinterpret_cast<float2*>(w + (row + 8 * r) * ld + 8 * c + col), make_float2(0.f, 0.f));
    }
}
}  // namespace skrd
"""


def spread_band(c: int, n: int, rows: int = 64) -> tuple[int, int]:
    """Rows ``[r0, r1)`` of a consumer's ``rows`` that contributor ``c`` of ``n`` reduces (:data:`_SPREAD_SRC`)."""
    return c * rows // n, (c + 1) * rows // n


def _py_select(cond: Any, a: Any, b: Any) -> Any:
    return a if cond else b


def sk_owner(i: Any, q: int, r: int, select: Any = _py_select) -> Any:
    """The worker whose range holds tail step ``i`` (``q`` steps each, the first ``r`` workers one
    more); ``select`` is ``T.if_then_else`` in a kernel, so the fix-up and the tests share it."""
    if q == 0:
        return i
    return select(i < r * (q + 1), i // (q + 1), r + (i - r * (q + 1)) // q)


def tail_begin(w: Any, s: "WsSchedule", tmin: Any = min) -> Any:
    """First tail step of worker ``w`` (``tmin`` is ``T.min`` in a kernel): ``w q + min(w, r)`` in the one
    sequence, or, with the aligned split, the same within its tile ``w // per_tile``."""
    q, r, n = s.iters_per_worker, s.extra, s.per_tile
    if not n:
        return w * q + tmin(w, r)
    return w // n * s.iters_per_tile + w % n * q + tmin(w % n, r)


def tail_share(w: Any, s: "WsSchedule", select: Any = _py_select) -> Any:
    """Tail steps of worker ``w``: ``q``, one more for the first ``r`` workers (of its tile, with the aligned
    split)."""
    c = w % s.per_tile if s.per_tile else w
    return s.iters_per_worker + select(c < s.extra, 1, 0)


def tail_end(w: Any, s: "WsSchedule") -> int:
    """One past the last tail step of worker ``w`` (see :func:`tail_begin`)."""
    return tail_begin(w, s) + tail_share(w, s)


def tail_owner(i: Any, s: "WsSchedule", select: Any = _py_select) -> Any:
    """The worker whose range holds tail step ``i`` (:func:`sk_owner`; with the aligned split, within the step's
    tile, whose workers are ``lt * per_tile`` onwards)."""
    q, r, n = s.iters_per_worker, s.extra, s.per_tile
    if not n:
        return sk_owner(i, q, r, select)
    ipt = s.iters_per_tile
    return i // ipt * n + sk_owner(i % ipt, q, r, select)


def tail_slot(wk: Any, lt: Any, s: "WsSchedule", tmin: Any = min) -> Any:
    """Workspace slot of worker ``wk``'s piece of tail tile ``lt`` (:func:`sk_slot` for either split)."""
    return wk * s.max_segments + lt - tail_begin(wk, s, tmin) // s.iters_per_tile


def slot_params(s: "WsSchedule") -> tuple[int, int, int, int]:
    """``(Q, R, IPT, MAXSEG)`` for the hand-written sum (``sksp::reduce_rows``), whose slot is ``wk MAXSEG + lt -
    (wk Q + min(wk, R)) / IPT``: the schedule's own for the one sequence; ``(1, 0, per_tile, 1)`` for the aligned
    split, where ``lt = wk // per_tile`` and the slot is ``wk``."""
    if s.per_tile:
        return 1, 0, s.per_tile, 1
    return s.iters_per_worker, s.extra, s.iters_per_tile, s.max_segments


def sk_slot(wk: Any, lt: Any, q: int, r: int, ipt: int, max_segments: int, tmin: Any = min) -> Any:
    """Workspace slot of worker ``wk``'s piece of tail tile ``lt``: its pieces are numbered from the
    tile holding its first step (``begin(wk) // ipt``), as the kernel's ``seg`` loop numbers them."""
    return wk * max_segments + lt - (wk * q + tmin(wk, r)) // ipt


def sk_fixup_counters(M: int, N: int, K: int, block_N: int, block_K: int, workers: int, dp_waves: int,
                      epi_cols: int) -> int:
    """Counters of the in-kernel fix-up (``fixup``): one per chunk of ``epi_cols`` columns of each
    consumer's 64 rows of each tail tile (int32, zero before the first launch, left zero by every
    complete launch)."""
    s = ws_schedule(M, N, K, block_N, block_K, workers, dp_waves)
    return s.sk_tiles * 2 * (block_N // epi_cols)


#: Shared memory one block may use on an H100/H200 SM (bytes), from the ledger's machine model (227 KiB opt-in).
SMEM_LIMIT = SMEM_PER_BLOCK


def ws_smem_bytes(block_N: int, block_K: int, stages: int, epi_cols: int, tail_cols: int, *, has_dp: bool,
                  f32_staging: bool) -> int:
    """Dynamic shared memory of :func:`streamk_ws`: the ring (two 64-row A halves and the B tile per stage, fp16),
    the fp16 staging of whole tiles (``has_dp``, ``epi_cols`` columns per consumer half) and, where the tail pieces
    have a buffer of their own (``f32_staging``; with ``share`` they reuse the fp16 one), their fp32 staging of
    ``tail_cols`` columns."""
    from kernels.gemm.ws import WS_BLOCK_M

    half = WS_BLOCK_M // 2
    ring = stages * (2 * half + block_N) * block_K * 2
    return ring + (2 * half * epi_cols * 2 if has_dp else 0) + (2 * half * tail_cols * 4 if f32_staging else 0)


def _streamk_ws_program(M: int, N: int, K: int, *, block_N: int, block_K: int, stages: int, panel: int,
                        inflight: int, epi_cols: int, workers: int, dp_waves: int, fixup: bool = False,
                        pdl: bool = False, spread: bool = False, tail_first: bool = False, red: bool = False,
                        reg_store: bool = False, pdl_at: str = "start", tail_cols: int = 0, aligned: bool = False,
                        share: bool = False):
    """Stream-K on the hand-written warp-specialised pipeline of :mod:`kernels.gemm.ws` (one
    TMA producer warpgroup, two wgmma consumer warpgroups of 64 rows, ``setmaxnreg``, full/empty
    barriers per stage, the producer's ring running on across work items): full tiles first,
    then this worker's tail pieces; whole tiles go to C in fp16, tail pieces to the fp32
    workspace ``W`` by TMA store (see :class:`WsSchedule`), or with ``reg_store`` straight from the
    accumulator's registers (no fp32 staging in shared memory, no wait for its reads).  ``pdl_at``: where the
    consumers signal that the fix-up kernel may be launched (``pdl``): ``"start"`` every thread at its start,
    ``"tail"`` each consumer once its whole tiles are stored (before its tail pieces), ``"end"`` each consumer once
    its last tail piece is stored.  The first signal of a block counts for it (PTX ``griddepcontrol``), so the fix-up
    is launched once every worker has reached that point; the fix-up's own wait (``T.pdl_sync``) still waits for the
    whole stream-K kernel, wherever the signal is.  ``tail_cols``: the tail pieces go through their fp32 staging in
    chunks of that many columns instead of ``epi_cols`` (a narrower staging leaves room for one more stage).
    ``aligned``: the tail split tile by tile (:func:`ws_schedule`), one piece per worker; the separate fix-up only.
    ``share``: the whole tiles' fp16 staging and the tail pieces' fp32 staging are one buffer (a consumer stages its
    whole tiles first and its tail pieces after them), which leaves room for one more stage."""
    from kernels.gemm.ws import (_EPILOGUE_BARRIER, _FIXUP_SRC, CONSUMER_REGS, PRODUCER_REGS, WS_BLOCK_M, WS_THREADS,
                                 empty_arrivals, stages_ahead)

    require(inflight in (0, 1), f"inflight must be 0 or 1, got {inflight}")
    staged = not (fixup or spread or red or reg_store)  # the tail pieces go through an fp32 staging
    _check_signal_and_staging(pdl, pdl_at, tail_cols, block_N, staged)
    require(stages_ahead(stages, inflight) >= 1, f"stages={stages}: need at least {2 + inflight} with inflight={inflight}")
    check_wgmma_n(block_N)
    epi_cols = epi_cols or block_N
    require(block_N % epi_cols == 0, f"epi_cols={epi_cols} must divide block_N={block_N}")
    tail_cols = tail_cols or epi_cols
    _check_aligned(aligned, fixup or spread or red)
    s = ws_schedule(M, N, K, block_N, block_K, workers, dp_waves, aligned)
    _check_share(share, epi_cols, tail_cols, staged, s.dp_rounds > 0 and s.sk_tiles > 0)
    half = WS_BLOCK_M // 2
    smem = ws_smem_bytes(block_N, block_K, stages, epi_cols, tail_cols, has_dp=s.dp_rounds > 0,
                         f32_staging=s.sk_tiles > 0 and staged and not share)
    require(smem <= SMEM_LIMIT,
            f"stages={stages}, block_K={block_K}, epi_cols={epi_cols}, tail_cols={tail_cols}"
            f"{', share' if share else ''}: {smem} bytes of shared memory, past the {SMEM_LIMIT} one block may use on "
            "an H100/H200 SM (the launch would be refused)")
    ipt, q, r = s.iters_per_tile, s.iters_per_worker, s.extra
    acc_regs = half * block_N // 128
    w_rows = max(s.slots, 1) * WS_BLOCK_M
    has_dp, has_sk = s.dp_rounds > 0, s.sk_tiles > 0
    n_chunks = block_N // epi_cols
    # fixup: the last piece of a tail tile's chunk to be counted sums the tile's pieces (see streamk_ws_last)
    require(fixup + spread + red <= 1, "fixup, spread and red are three fix-ups inside the kernel: choose one")
    require(not tail_first or spread or red,
            "tail_first: only the spread and red fix-ups let a worker's tail pieces come first (spread=True or red=True)")
    require(not red or has_sk, "red: the schedule streams no tile, there is nothing to fix up")
    require(not reg_store or (has_sk and not (fixup or spread or red)),
            "reg_store: the separate fix-up's pieces from registers; it needs a streamed tail and no fix-up inside "
            "the kernel (fixup, spread and red store from registers already)")
    require(not fixup or has_sk, "fixup: the schedule streams no tile, there is nothing to fix up")
    require(not spread or has_sk, "spread: the schedule streams no tile, there is nothing to fix up")
    require(not spread or workers <= SMS, f"spread: workers={workers} must all be resident at once (at most {SMS}): "
            "a worker waits for the pieces of the others")
    if red:  # one fp32 sum per tail tile, not one slot per piece
        w_rows = s.sk_tiles * WS_BLOCK_M
    if fixup or spread or red:
        form = "fixup" if fixup else ("spread" if spread else "red")
        require(M % WS_BLOCK_M == 0 and N % block_N == 0,
                f"{form} stores from registers without clipping: M={M} must be a multiple of {WS_BLOCK_M}, "
                f"N={N} of block_N={block_N}")
        require(w_rows * block_N < 2 ** 31 and M * N < 2 ** 31,
                f"{form}: the workspace ({w_rows} x {block_N}) and C must have fewer than 2^31 elements")

    @T.macro
    def produce(A, B, A0_s, A1_s, B_s, full, empty, mb, nb, k_first, n_steps, g0):
        m0 = mb * WS_BLOCK_M
        n0 = nb * block_N
        for ko in T.serial(n_steps):
            g = g0 + ko
            st = g % stages
            T.barrier_wait(empty[st], g // stages % 2 ^ 1)
            k0 = (k_first + ko) * block_K
            T.tma_copy(A[m0:m0 + half, k0:k0 + block_K], A0_s[st, :, :], barrier=full[st])
            T.tma_copy(A[m0 + half:m0 + WS_BLOCK_M, k0:k0 + block_K], A1_s[st, :, :], barrier=full[st])
            T.tma_copy(B[n0:n0 + block_N, k0:k0 + block_K], B_s[st, :, :], barrier=full[st])
            T.barrier_arrive(full[st])

    @T.macro
    def produce_dp(A, B, A0_s, A1_s, B_s, full, empty, w, g_base):
        for t in T.serial(s.dp_rounds):
            mb, nb = raster(t * workers + w, panel, s.grid_m, s.grid_n, T.min)
            produce(A, B, A0_s, A1_s, B_s, full, empty, mb, nb, 0, ipt, g_base + t * ipt)

    @T.macro
    def produce_sk(A, B, A0_s, A1_s, B_s, full, empty, begin, end, g_base):
        for seg in T.serial(s.max_segments):
            lt = begin // ipt + seg
            it0 = T.max(begin, lt * ipt)
            it1 = T.min(end, (lt + 1) * ipt)
            if it0 < it1:
                mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
                produce(A, B, A0_s, A1_s, B_s, full, empty, mb, nb, it0 - lt * ipt, it1 - it0, g_base + it0 - begin)

    @T.macro
    def mainloop(A_s, B_s, acc, full, empty, n_steps, g0, lane):
        for ko in T.serial(n_steps):
            st = (g0 + ko) % stages
            T.barrier_wait(full[st], (g0 + ko) // stages % 2)
            T.wgmma_gemm(A_s[st, :, :], B_s[st, :, :], acc, transpose_B=True,
                         policy=T.GemmWarpPolicy.FullRow, clear_accum=ko == 0)
            T.wait_wgmma(inflight)
            if ko >= inflight and lane == 0:
                T.mbarrier_arrive(empty[(g0 + ko - inflight) % stages])
        T.wait_wgmma(0)
        if inflight > 0 and lane == 0:
            T.mbarrier_arrive(empty[(g0 + n_steps - 1) % stages])

    @T.macro
    def store(acc, S, D, r0, c_first, wg, cols):
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        for h in T.unroll(block_N // cols):
            # the previous store from S has been read (its issuing thread waited)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            T.copy(acc[:, h * cols:(h + 1) * cols], S)
            T.fence_proxy_async()
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            c0 = c_first + h * cols
            T.copy(S, D[r0:r0 + half, c0:c0 + cols])

    @T.macro
    def store_regs(acc, W, slot, wg):
        """A tail piece to its workspace slot from the accumulator's registers, chunk by chunk (no staging)."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        tid = T.get_thread_binding() % 128
        for h in T.unroll(n_chunks):
            T.call_extern("handle", f"skqf::store_partial<{epi_cols}>",
                          T.address_of(W[slot * WS_BLOCK_M + wg * half, h * epi_cols]), block_N, acc.data,
                          h * epi_cols // 2, tid)

    @T.macro
    def fixup_piece(acc, W, C, L, F, Sum, slot, lt, wg):
        """Chunk by chunk: store this piece's fp32 chunk to workspace slot ``slot`` from registers, count it
        on the chunk's counter (one thread, acq_rel, between two barriers of the warpgroup); the arrival
        that finds all the tile's other pieces counted resets the counter and writes C's chunk: the
        pieces added in worker order (as :func:`streamk_ws_fixup` does), its own from registers, the
        others read back from the workspace."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        tid = T.get_thread_binding() % 128
        w_lo = sk_owner(lt * ipt, q, r, T.if_then_else)
        w_hi = sk_owner((lt + 1) * ipt - 1, q, r, T.if_then_else)
        mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
        for h in T.unroll(n_chunks):
            T.call_extern("handle", f"skqf::store_partial<{epi_cols}>",
                          T.address_of(W[slot * WS_BLOCK_M + wg * half, h * epi_cols]), block_N, acc.data,
                          h * epi_cols // 2, tid)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if tid == 0:
                F[wg] = T.atomic_add(L[(lt * 2 + wg) * n_chunks + h], 1, memory_order="acq_rel", return_prev=True)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if F[wg] == w_hi - w_lo:
                if tid == 0:
                    L[(lt * 2 + wg) * n_chunks + h] = 0  # every piece has arrived: ready for the next launch
                for c in T.serial(s.max_contrib):
                    if w_lo + c <= w_hi:
                        src_slot = sk_slot(w_lo + c, lt, q, r, ipt, s.max_segments, T.min)
                        src = src_slot * WS_BLOCK_M + wg * half
                        T.call_extern("handle", f"skqf::add_slice<{epi_cols}>", Sum.data,
                                      T.address_of(W[src, h * epi_cols]), block_N, tid, c, acc.data,
                                      h * epi_cols // 2, src_slot == slot)
                T.call_extern("handle", f"skqf::store_sum<{epi_cols}>",
                              T.address_of(C[mb * WS_BLOCK_M + wg * half, nb * block_N + h * epi_cols]), N,
                              Sum.data, tid)

    @T.macro
    def red_piece(acc, W, C, L, F, lt, wg):
        """This piece's fp32 partial (the consumer's 64 rows) added into the tail tile's sum in the workspace by
        vector reductions at the L2, then counted on the tile's counter of these rows (one thread, acq_rel, between
        two barriers of the warpgroup); the count that finds the tile's other pieces all counted casts the sum to
        C, zeroes it and resets the counter.  Nobody waits for another block; the order of the additions is the
        order in which the pieces reach the L2, so the low bits of a tail tile may differ from launch to launch."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        tid = T.get_thread_binding() % 128
        w_lo = sk_owner(lt * ipt, q, r, T.if_then_else)
        w_hi = sk_owner((lt + 1) * ipt - 1, q, r, T.if_then_else)
        mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
        for h in T.unroll(n_chunks):
            T.call_extern("handle", f"skrd::red_partial<{epi_cols}>",
                          T.address_of(W[lt * WS_BLOCK_M + wg * half, h * epi_cols]), block_N, acc.data,
                          h * epi_cols // 2, tid)
        T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
        if tid == 0:
            F[wg] = T.atomic_add(L[lt * 2 + wg], 1, memory_order="acq_rel", return_prev=True)
        T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
        if F[wg] == w_hi - w_lo:
            if tid == 0:
                L[lt * 2 + wg] = 0  # every piece has arrived: ready for the next launch
            for h in T.unroll(n_chunks):
                T.call_extern("handle", f"skrd::finish<{epi_cols}>",
                              T.address_of(C[mb * WS_BLOCK_M + wg * half, nb * block_N + h * epi_cols]), N,
                              T.address_of(W[lt * WS_BLOCK_M + wg * half, h * epi_cols]), block_N, tid)

    @T.macro
    def spread_store(acc, W, L, slot, lt, wg):
        """This piece's fp32 partial (the consumer's 64 rows) to its workspace slot from registers, then one
        arrival (release) on the tail tile's counter of these rows."""
        store_regs(acc, W, slot, wg)
        T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
        if T.get_thread_binding() % 128 == 0:
            T.call_extern("handle", "sksp::arrive", T.address_of(L[lt * 2 + wg]))

    @T.macro
    def spread_reduce(C, W, L, w, lt, wg):
        """After every arrival of this worker: wait until all the tile's pieces of these rows have arrived, add
        this worker's band of rows (:func:`spread_band`) from every piece in worker order, store it to C, count
        again (the last of the 2n counts resets the counter)."""
        tid = T.get_thread_binding() % 128
        w_lo = sk_owner(lt * ipt, q, r, T.if_then_else)
        n = sk_owner((lt + 1) * ipt - 1, q, r, T.if_then_else) - w_lo + 1
        mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
        if tid == 0:
            T.call_extern("handle", "sksp::wait_count", T.address_of(L[lt * 2 + wg]), n)
        T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
        T.call_extern("handle", f"sksp::reduce_rows<{block_N}, {s.max_contrib}, {q}, {r}, {ipt}, {s.max_segments}>",
                      T.address_of(C[mb * WS_BLOCK_M + wg * half, nb * block_N]), N, T.address_of(W[wg * half, 0]),
                      w_lo, n, lt, (w - w_lo) * half // n, (w - w_lo + 1) * half // n, tid)
        T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
        if tid == 0:
            T.call_extern("handle", "sksp::depart", T.address_of(L[lt * 2 + wg]), 2 * n)

    @T.macro
    def consume_dp(A_s, B_s, acc, H_s, C, full, empty, w, g_base, lane, wg):
        for t in T.serial(s.dp_rounds):
            mb, nb = raster(t * workers + w, panel, s.grid_m, s.grid_n, T.min)
            mainloop(A_s, B_s, acc, full, empty, ipt, g_base + t * ipt, lane)
            store(acc, H_s, C, mb * WS_BLOCK_M + wg * half, nb * block_N, wg, epi_cols)

    @T.macro
    def consume_sk(A_s, B_s, acc, F_s, C, W, full, empty, w, begin, end, g_base, lane, wg, L, F, Sum):
        for seg in T.serial(s.max_segments):
            lt = begin // ipt + seg
            it0 = T.max(begin, lt * ipt)
            it1 = T.min(end, (lt + 1) * ipt)
            if it0 < it1:
                mainloop(A_s, B_s, acc, full, empty, it1 - it0, g_base + it0 - begin, lane)
                if fixup:
                    fixup_piece(acc, W, C, L, F, Sum, w * s.max_segments + seg, lt, wg)
                elif spread:
                    spread_store(acc, W, L, w * s.max_segments + seg, lt, wg)
                elif red:
                    red_piece(acc, W, C, L, F, lt, wg)
                elif reg_store:
                    store_regs(acc, W, w * s.max_segments + seg, wg)
                else:
                    store(acc, F_s, W, (w * s.max_segments + seg) * WS_BLOCK_M + wg * half, 0, wg, tail_cols)

    @T.macro
    def consume(A_s, B_s, acc, H_s, F_s, C, W, full, empty, w, begin, end, lane, wg, L=None, F=None, Sum=None):
        """One consumer warpgroup (rows ``wg * 64`` of every tile): whole tiles, then tail pieces (``tail_first``:
        the other way round)."""
        if tail_first:
            consume_sk(A_s, B_s, acc, F_s, C, W, full, empty, w, begin, end, 0, lane, wg, L, F, Sum)
            if has_dp:
                consume_dp(A_s, B_s, acc, H_s, C, full, empty, w, end - begin, lane, wg)
        else:
            if has_dp:
                consume_dp(A_s, B_s, acc, H_s, C, full, empty, w, 0, lane, wg)
            if pdl and pdl_at == "tail":  # whole tiles stored: the fix-up kernel may be launched
                T.pdl_trigger()
            if has_sk:
                consume_sk(A_s, B_s, acc, F_s, C, W, full, empty, w, begin, end, s.dp_rounds * ipt, lane, wg, L, F,
                           Sum)
            if pdl and pdl_at == "end":  # every tail piece stored: the fix-up kernel may be launched
                T.pdl_trigger()
        if spread:  # every arrival of this worker is made: now its bands (no wait can close a cycle)
            for seg in T.serial(s.max_segments):
                lt = begin // ipt + seg
                if T.max(begin, lt * ipt) < T.min(end, (lt + 1) * ipt):
                    spread_reduce(C, W, L, w, lt, wg)

    @T.macro
    def body(A, B, C, W, L):
        with T.Kernel(workers, threads=WS_THREADS) as w:
            A0_s = T.alloc_shared((stages, half, block_K), T.float16)
            A1_s = T.alloc_shared((stages, half, block_K), T.float16)
            B_s = T.alloc_shared((stages, block_N, block_K), T.float16)
            C0_l = T.alloc_fragment((half, block_N), T.float32)
            C1_l = T.alloc_fragment((half, block_N), T.float32)
            if has_dp:  # fp16 staging of whole tiles
                H0_s = T.alloc_shared((half, epi_cols), T.float16)
                H1_s = T.alloc_shared((half, epi_cols), T.float16)
            else:
                H0_s = H1_s = None
            if share:  # the same bytes: the whole tiles' staging is read out before the first tail piece is staged
                F0_s = T.view(H0_s, (half, tail_cols), T.float32)
                F1_s = T.view(H1_s, (half, tail_cols), T.float32)
            elif has_sk and not fixup and not spread and not red and not reg_store:  # fp32 staging of tail pieces
                F0_s = T.alloc_shared((half, tail_cols), T.float32)
                F1_s = T.alloc_shared((half, tail_cols), T.float32)
            else:
                F0_s = F1_s = None
            T.annotate_layout(_swizzled(A0_s, A1_s, B_s, H0_s, H1_s, F0_s, F1_s))
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([empty_arrivals(1)] * stages)
            if fixup:  # each consumer's last count and its sum of one chunk
                T.import_source(_FIXUP_SRC)
                F = T.alloc_shared((2,), T.int32)
                Sum = T.alloc_local((epi_cols // 2,), T.float32)
            elif red:  # each consumer's last count
                T.import_source(_FIXUP_SRC + _RED_SRC)
                F = T.alloc_shared((2,), T.int32)
                Sum = None
            else:
                F = Sum = None
            if spread:
                T.import_source(_FIXUP_SRC + _SPREAD_SRC)
            if reg_store:
                T.import_source(_FIXUP_SRC)
            tx = T.get_thread_binding()
            if pdl and pdl_at == "start":  # the fix-up kernel may be launched now; it waits for this one (T.pdl_sync)
                T.pdl_trigger()
            lane = tx % 32  # noqa: F841 (used by the consumers)
            begin = tail_begin(w, s, T.min)
            end = begin + tail_share(w, s, T.if_then_else)
            if tx < 128:
                T.dec_max_nreg(PRODUCER_REGS)
                if tail_first:
                    produce_sk(A, B, A0_s, A1_s, B_s, full, empty, begin, end, 0)
                    if has_dp:
                        produce_dp(A, B, A0_s, A1_s, B_s, full, empty, w, end - begin)
                else:
                    if has_dp:
                        produce_dp(A, B, A0_s, A1_s, B_s, full, empty, w, 0)
                    if has_sk:
                        produce_sk(A, B, A0_s, A1_s, B_s, full, empty, begin, end, s.dp_rounds * ipt)
            elif tx < 256:
                T.inc_max_nreg(CONSUMER_REGS)
                consume(A0_s, B_s, C0_l, H0_s, F0_s, C, W, full, empty, w, begin, end, lane, 0, L, F, Sum)
            else:
                T.inc_max_nreg(CONSUMER_REGS)
                consume(A1_s, B_s, C1_l, H1_s, F1_s, C, W, full, empty, w, begin, end, lane, 1, L, F, Sum)

    if red:
        @T.prim_func
        def main_red(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16),
                     C: T.Tensor((M, N), T.float16), W: T.Tensor((w_rows, block_N), T.float32),
                     L: T.Tensor((s.sk_tiles * 2,), T.int32)):
            body(A, B, C, W, L)

        return main_red

    if spread:
        @T.prim_func
        def main_spread(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16),
                        C: T.Tensor((M, N), T.float16), W: T.Tensor((w_rows, block_N), T.float32),
                        L: T.Tensor((s.sk_tiles * 2,), T.int32)):
            body(A, B, C, W, L)

        return main_spread

    if fixup:
        @T.prim_func
        def main_last(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16),
                      C: T.Tensor((M, N), T.float16), W: T.Tensor((w_rows, block_N), T.float32),
                      L: T.Tensor((s.sk_tiles * 2 * n_chunks,), T.int32)):
            body(A, B, C, W, L)

        return main_last

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16),
             W: T.Tensor((w_rows, block_N), T.float32)):
        body(A, B, C, W, None)

    return main


@tilelang.jit(target=TARGET, pass_configs=_ws_pass_configs())
def streamk_ws(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = SMS,
    dp_waves: int = -1,
    pdl: bool = False,
    pdl_at: str = "start",
    tail_cols: int = 0,
    aligned: bool = False,
    share: bool = False,
):
    """Stream-K (``dp_waves=0``), or full waves + stream-K tail (``dp_waves=-1``: the last partial
    wave streamed; ``k``: the tiles after ``k`` full waves streamed), on the hand-written pipeline:
    ``workers`` persistent blocks of 384 threads, 128 x ``block_N`` tiles; whole tiles stored to C
    (fp16), tail pieces to the fp32 workspace (see :class:`WsSchedule`); :func:`streamk_ws_fixup`
    finishes the tail tiles.  ``pdl``: the fix-up is launched as a programmatic dependent (see
    :func:`streamk_ws_fixup`), signalled where ``pdl_at`` says; ``tail_cols``: the width of the tail pieces' fp32
    staging (see :func:`_streamk_ws_program`); ``aligned``: the tail split tile by tile (:func:`ws_schedule`);
    ``share``: one buffer for both stagings (see :func:`_streamk_ws_program`)."""
    return _streamk_ws_program(M, N, K, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                               inflight=inflight, epi_cols=epi_cols, workers=workers, dp_waves=dp_waves,
                               **(dict(pdl=True) if pdl else {}), **(dict(pdl_at=pdl_at) if pdl_at != "start" else {}),
                               **(dict(tail_cols=tail_cols) if tail_cols else {}),
                               **(dict(aligned=True) if aligned else {}), **(dict(share=True) if share else {}))


def _ws_last_pass_configs() -> dict:
    from kernels.gemm.ws import WS_FIXUP_PASS_CONFIGS

    return WS_FIXUP_PASS_CONFIGS


@tilelang.jit(target=TARGET, pass_configs=_ws_pass_configs())
def streamk_ws_rs(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = SMS,
    dp_waves: int = -1,
    pdl: bool = False,
    pdl_at: str = "start",
    aligned: bool = False,
):
    """:func:`streamk_ws` with the tail pieces stored to the workspace straight from the accumulator's registers
    (``reg_store``): no fp32 staging in shared memory (a stage's worth of it freed), no wait for a TMA store to
    have read it; same arguments, same workspace layout, same separate fix-up."""
    return _streamk_ws_program(M, N, K, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                               inflight=inflight, epi_cols=epi_cols, workers=workers, dp_waves=dp_waves,
                               reg_store=True, **(dict(pdl=True) if pdl else {}),
                               **(dict(pdl_at=pdl_at) if pdl_at != "start" else {}),
                               **(dict(aligned=True) if aligned else {}))


@tilelang.jit(target=TARGET, pass_configs=_ws_last_pass_configs())
def streamk_ws_last(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = SMS,
    dp_waves: int = -1,
):
    """:func:`streamk_ws` with the fix-up inside (no second kernel), "the last piece reduces": the kernel
    takes ``(A, B, C, W, L)``; every tail piece stores its fp32 chunks (``epi_cols`` columns of a
    consumer's 64 rows) from registers into its workspace slot and counts each on the chunk's int32
    counter in ``L`` (:func:`sk_fixup_counters` of them, acq_rel atomic); the arrival that sees the
    tile's other pieces all counted resets the counter to 0 and writes the chunk of C in fp16, the
    pieces added in worker order (its own from registers, the others read back from the workspace).  Nobody waits for another block.  ``L`` zero before
    the first launch (the caller allocates it zeroed); every complete launch leaves it zero."""
    return _streamk_ws_program(M, N, K, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                               inflight=inflight, epi_cols=epi_cols, workers=workers, dp_waves=dp_waves, fixup=True)


@tilelang.jit(target=TARGET, pass_configs=_ws_last_pass_configs())
def streamk_ws_spread(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = SMS,
    dp_waves: int = -1,
    tail_first: bool = False,
):
    """:func:`streamk_ws` with the fix-up inside, spread over the contributors ("every piece reduces a band"): the
    kernel takes ``(A, B, C, W, L)``; each tail piece stores its fp32 partial (a consumer's 64 rows) from registers
    into its workspace slot and arrives (release) on the tile's int32 counter of those rows (``2 * sk_tiles`` of
    them); once a worker has stored all its pieces, it waits (acquire) for each of its tiles until all ``n`` pieces
    have arrived and adds its own band of rows (:func:`spread_band`) from every piece in worker order -- the same
    sum as :func:`streamk_ws_fixup` -- and stores it in fp16; the last of the ``2n`` counts resets the counter.  A
    worker waits for others, so all ``workers`` blocks must be resident at once (one per SM, ``workers <= SMS``);
    every arrival precedes every wait of its worker, so no wait closes a cycle.  ``L`` zero before the first
    launch (the caller allocates it zeroed); every complete launch leaves it zero.  ``tail_first``: each worker
    computes its tail pieces before its whole tiles, so that the pieces have long arrived when it reduces its
    bands after the whole tiles (the wait is then almost never a wait, and the partials are stored while the
    other workers still compute)."""
    return _streamk_ws_program(M, N, K, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                               inflight=inflight, epi_cols=epi_cols, workers=workers, dp_waves=dp_waves, spread=True,
                               tail_first=tail_first)


@tilelang.jit(target=TARGET, pass_configs=_ws_last_pass_configs())
def streamk_ws_red(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = SMS,
    dp_waves: int = -1,
    tail_first: bool = False,
):
    """:func:`streamk_ws` with the fix-up inside, by reductions at the L2 ("every piece adds, the last one casts"):
    the kernel takes ``(A, B, C, W, L)``, ``W`` one fp32 tile per tail tile (``sk_tiles * 128`` rows, zero before
    the first launch) and ``L`` one int32 counter per consumer's 64 rows of a tail tile (``2 * sk_tiles``, zero);
    each tail piece adds its partial into its tile's sum with ``red.global.add.v2.f32`` and counts it (acq_rel);
    the count that finds every other piece counted casts the sum to C in fp16, writes zeros over it and resets the
    counter, so every complete launch leaves ``W`` and ``L`` zero.  Nobody waits for another block.  The sum's
    order is the order of arrival at the L2: unlike the other fix-ups, a tail tile is not bit-for-bit the same
    from launch to launch.  ``tail_first``: each worker computes its tail pieces before its whole tiles."""
    return _streamk_ws_program(M, N, K, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                               inflight=inflight, epi_cols=epi_cols, workers=workers, dp_waves=dp_waves, red=True,
                               tail_first=tail_first)


@tilelang.jit(target=TARGET)
def streamk_ws_fixup(M: int, N: int, K: int, block_N: int = 256, block_K: int = 64, panel: int = 8,
                     workers: int = SMS, dp_waves: int = -1, rows: int = 16, threads: int = 256, pdl: bool = False,
                     unroll: bool = False, vec: bool = False, aligned: bool = False):
    """Fix-up of :func:`streamk_ws`: every tail tile's pieces (workers ``owner(first step)`` to
    ``owner(last step)``) added in fp32 in worker order and cast to fp16 once, ``rows`` rows of a tile per block.
    ``pdl``: launched while the stream-K kernel (``pdl=True``) runs, each block first waits until it has
    completed and its writes are visible (``T.pdl_sync``).  ``unroll``: the loop over a tile's contributors
    unrolled, so that a thread's loads of every piece are in flight together instead of one piece's after the
    previous piece's have been added.  ``vec``: the sum written by hand (:data:`_SPREAD_SRC`'s ``reduce_rows``, 128
    threads a block): a thread reads the same four columns of every piece into registers first -- all its loads in
    flight at once, one wait at the L2 instead of one per piece -- then adds them in worker order.  ``aligned``: the
    stream-K kernel's tail was split tile by tile (:func:`ws_schedule`); the same sum, over each tile's own
    workers."""
    from kernels.gemm.ws import _FIXUP_SRC, WS_BLOCK_M

    s = ws_schedule(M, N, K, block_N, block_K, workers, dp_waves, aligned)
    require(s.sk_tiles > 0, "no tail tiles: the schedule is purely data-parallel, there is nothing to fix up")
    require(WS_BLOCK_M % rows == 0, f"rows={rows} must divide {WS_BLOCK_M}")
    ipt = s.iters_per_tile
    w_rows = s.slots * WS_BLOCK_M
    if vec:
        require(not unroll, "vec: the hand-written sum has no contributor loop to unroll")
        require(M % WS_BLOCK_M == 0 and N % block_N == 0 and block_N % 4 == 0,
                f"vec stores whole rows of four columns without clipping: M={M} must be a multiple of {WS_BLOCK_M}, "
                f"N={N} of block_N={block_N}")

        @T.prim_func
        def main_vec(W: T.Tensor((w_rows, block_N), T.float32), C: T.Tensor((M, N), T.float16)):
            with T.Kernel(WS_BLOCK_M // rows, s.sk_tiles, threads=128) as (bx, lt):
                T.import_source(_FIXUP_SRC + _SPREAD_SRC)
                if pdl:
                    T.pdl_sync()
                tid = T.get_thread_binding()
                w_lo = tail_owner(lt * ipt, s, T.if_then_else)
                n = tail_owner((lt + 1) * ipt - 1, s, T.if_then_else) - w_lo + 1
                mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
                sq, sr, sipt, sseg = slot_params(s)
                T.call_extern("handle", f"sksp::reduce_rows<{block_N}, {s.max_contrib}, {sq}, {sr}, {sipt}, {sseg}>",
                              T.address_of(C[mb * WS_BLOCK_M, nb * block_N]), N, T.address_of(W[0, 0]), w_lo, n, lt,
                              bx * rows, (bx + 1) * rows, tid)

        return main_vec

    @T.prim_func
    def main(W: T.Tensor((w_rows, block_N), T.float32), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(WS_BLOCK_M // rows, s.sk_tiles, threads=threads) as (bx, lt):
            if pdl:
                T.pdl_sync()
            acc = T.alloc_fragment((rows, block_N), T.float32)
            T.clear(acc)
            w_lo = tail_owner(lt * ipt, s, T.if_then_else)
            w_hi = tail_owner((lt + 1) * ipt - 1, s, T.if_then_else)
            for c in (T.unroll if unroll else T.serial)(s.max_contrib):
                wk = w_lo + c
                if wk <= w_hi:
                    slot = tail_slot(wk, lt, s, T.min)
                    for i, j in T.Parallel(rows, block_N):
                        acc[i, j] += W[slot * WS_BLOCK_M + bx * rows + i, j]
            mb, nb = raster(s.dp_tiles + lt, panel, s.grid_m, s.grid_n, T.min)
            for i, j in T.Parallel(rows, block_N):
                C[mb * WS_BLOCK_M + bx * rows + i, nb * block_N + j] = T.cast(acc[i, j], T.float16)

    return main


def ws_config(block_N: int = 256, stages: int = 3, epi_cols: int = 64, dp_waves: int = -1, inflight: int = 0,
              panel: int = 8, fixup: bool = False, pdl: bool = False, fix_rows: int = 0,
              fix_unroll: bool = False, spread: bool = False, tail_first: bool = False,
              red: bool = False, fix_vec: bool = False, reg_store: bool = False,
              pdl_at: str = "start", tail_cols: int = 0, aligned: bool = False, share: bool = False) -> dict[str, Any]:
    """One configuration of :func:`build_ws` (K blocks of 64); ``fixup`` (the tail tiles summed inside
    the kernel, :func:`streamk_ws_last`) and ``pdl`` (the fix-up kernel launched as a programmatic
    dependent) are kept only when set (earlier configurations unchanged), as are ``fix_rows`` (rows of a tail
    tile per block of the separate fix-up, default 16), ``fix_unroll`` (its contributor loop unrolled) and
    ``fix_vec`` (its sum written by hand, every piece's load in flight at once) and ``reg_store`` (the tail pieces
    stored to the workspace from registers, :func:`streamk_ws_rs`) and ``pdl_at`` (where a ``pdl`` kernel signals
    its fix-up: ``"tail"`` or ``"end"``, kept only when not ``"start"``) and ``tail_cols`` (the width of the tail
    pieces' fp32 staging, kept only when set) and ``aligned`` (the tail split tile by tile, :func:`ws_schedule`;
    the separate fix-up only) and ``share`` (one buffer for the whole tiles' and the tail pieces' staging,
    ``epi_cols == 2 * tail_cols``; whether the schedule has both is checked where it is built)."""
    cfg = dict(block_N=block_N, block_K=64, stages=stages, epi_cols=epi_cols, dp_waves=dp_waves, inflight=inflight,
               panel=panel)
    if fixup:
        cfg["fixup"] = True
    if spread:
        require(not fixup, "fixup and spread are two fix-ups inside the kernel: choose one")
        cfg["spread"] = True
    if red:
        require(not fixup and not spread, "fixup, spread and red are three fix-ups inside the kernel: choose one")
        cfg["red"] = True
    if tail_first:
        require(spread or red,
                "tail_first: only the spread and red fix-ups let a worker's tail pieces come first (spread=True or red=True)")
        cfg["tail_first"] = True
    if pdl:
        require(not spread, "pdl overlaps the launch of the fix-up kernel: with spread there is none")
        require(not fixup, "pdl overlaps the launch of the fix-up kernel: with fixup there is none")
        require(not red, "pdl overlaps the launch of the fix-up kernel: with red there is none")
        cfg["pdl"] = True
    _check_signal_and_staging(pdl, pdl_at, tail_cols, block_N, not (fixup or spread or red or reg_store))
    if pdl_at != "start":
        cfg["pdl_at"] = pdl_at
    if tail_cols:
        cfg["tail_cols"] = tail_cols
    _check_aligned(aligned, fixup or spread or red)
    if aligned:
        cfg["aligned"] = True
    if share:
        _check_share(share, epi_cols, tail_cols, not (fixup or spread or red or reg_store), True)
        cfg["share"] = True
    if reg_store:
        require(not fixup and not spread and not red,
                "reg_store stores the separate fix-up's pieces: fixup, spread and red store from registers already")
        cfg["reg_store"] = True
    if fix_rows or fix_unroll or fix_vec:
        require(not fixup and not spread and not red,
                "fix_rows / fix_unroll / fix_vec shape the separate fix-up kernel: with fixup, spread or red there is none")
        require(not (fix_vec and fix_unroll), "fix_vec: the hand-written sum has no contributor loop to unroll")
        from kernels.gemm.ws import WS_BLOCK_M

        require(fix_rows == 0 or WS_BLOCK_M % fix_rows == 0, f"fix_rows={fix_rows} must divide {WS_BLOCK_M}")
        if fix_rows:
            cfg["fix_rows"] = fix_rows
        if fix_unroll:
            cfg["fix_unroll"] = True
        if fix_vec:
            cfg["fix_vec"] = True
    return cfg


def ws_label(cfg: dict[str, Any]) -> str:
    """Short printable name: ``sk`` = pure stream-K, ``dp+sk`` = full waves + streamed tail, ``dpK+sk``;
    ``fr`` rows of a tile per fix-up block, ``fu`` the fix-up's contributor loop unrolled, ``fv`` its sum by hand;
    ``last`` / ``spread`` / ``red`` the fix-up inside the kernel (one reducer / every contributor a band / every
    piece added at the L2, the last one casts), ``tf`` tail pieces first, ``rs`` tail pieces stored from registers,
    ``pdl@tail`` / ``pdl@end`` the fix-up signalled after the whole tiles / after the tail pieces, ``te`` the width of
    the tail pieces' fp32 staging, ``al`` the tail split tile by tile, ``sh`` one buffer for both stagings."""
    d = cfg["dp_waves"]
    kind = "sk" if d == 0 else ("dp+sk" if d == -1 else f"dp{d}+sk")
    return (f"{kind} 128x{cfg['block_N']} st{cfg['stages']} e{cfg['epi_cols']}"
            + (f" if{cfg['inflight']}" if cfg["inflight"] else "") + (f" p{cfg['panel']}" if cfg["panel"] != 8 else "")
            + (" last" if cfg.get("fixup") else "") + (" spread" if cfg.get("spread") else "")
            + (" red" if cfg.get("red") else "")
            + (" tf" if cfg.get("tail_first") else "")
            + (" pdl" if cfg.get("pdl") else "") + (f"@{cfg['pdl_at']}" if cfg.get("pdl_at") else "")
            + (f" fr{cfg['fix_rows']}" if cfg.get("fix_rows") else "") + (" fu" if cfg.get("fix_unroll") else "")
            + (" fv" if cfg.get("fix_vec") else "") + (" rs" if cfg.get("reg_store") else "")
            + (f" te{cfg['tail_cols']}" if cfg.get("tail_cols") else "") + (" al" if cfg.get("aligned") else "")
            + (" sh" if cfg.get("share") else ""))


def build_ws(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = SMS) -> tuple[Any, Any]:
    """(stream-K kernel, fix-up kernel or None when nothing is streamed or the fix-up is inside the
    kernel, ``fixup``) of one configuration."""
    kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "panel", "inflight", "epi_cols", "dp_waves")}
    if cfg.get("fixup"):
        return streamk_ws_last(M, N, K, workers=workers, **kw), None
    tf = dict(tail_first=True) if cfg.get("tail_first") else {}  # earlier spread configurations: same build
    if cfg.get("spread"):
        return streamk_ws_spread(M, N, K, workers=workers, **kw, **tf), None
    if cfg.get("red"):
        return streamk_ws_red(M, N, K, workers=workers, **kw, **tf), None
    al = {"aligned": True} if cfg.get("aligned") else {}  # earlier configurations keep their exact builds
    s = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], workers, cfg["dp_waves"], bool(al))
    fx = dict(pdl=True) if cfg.get("pdl") and s.sk_tiles else {}  # earlier configurations keep their exact builds
    if cfg.get("fix_rows"):
        fx["rows"] = cfg["fix_rows"]
    if cfg.get("fix_unroll"):
        fx["unroll"] = True
    if cfg.get("fix_vec"):
        fx["vec"] = True
    fix = None
    if s.sk_tiles:
        fix = streamk_ws_fixup(M, N, K, cfg["block_N"], cfg["block_K"], cfg["panel"], workers, cfg["dp_waves"], **fx,
                               **al)
    entry = streamk_ws_rs if cfg.get("reg_store") else streamk_ws
    at = {"pdl_at": cfg["pdl_at"]} if fx.get("pdl") and cfg.get("pdl_at") else {}
    if cfg.get("tail_cols") and s.sk_tiles:
        at["tail_cols"] = cfg["tail_cols"]
    if cfg.get("share"):
        at["share"] = True
    return entry(M, N, K, workers=workers, **kw, **({"pdl": True} if fx.get("pdl") else {}), **at, **al), fix


def check_ws_inputs(a: Any, b: Any, cfg: dict[str, Any]) -> tuple[int, int, int]:
    """Operands of :func:`build_ws`: fp16 ``[M, K]`` and ``[N, K]`` on one CUDA device, M a multiple
    of 128 and N of ``block_N`` (the fix-up writes whole tiles), K of 64."""
    import torch

    return check_operands(a, b, torch.float16, tiles={"M": 128, "N": cfg["block_N"], "K": cfg["block_K"]},
                          block_N=cfg["block_N"])


def make_ws_runner(a: Any, b: Any, cfg: dict[str, Any], workers: int = SMS):
    """``fn(c)``: the stream-K kernel (whole tiles into ``c``, pieces into an fp32 workspace), then
    the fix-up of the tail tiles.  With ``red`` one kernel does both; the runner owns the tail tiles' fp32 sums
    (``fn.workspace``) and counters (``fn.counters``), both zeroed here once and left zero by every complete
    launch.  With ``fixup`` or ``spread`` one kernel does both; the runner owns its workspace
    (filled with NaN: a chunk summed before every piece has landed shows in the result) and its
    counters (allocated zeroed here, once; every complete launch leaves them zero), exposed as
    ``fn.counters`` (:func:`kernels.gemm.splitk.check_counters`)."""
    import torch

    M, N, K = check_ws_inputs(a, b, cfg)
    gemm, fix = build_ws(M, N, K, cfg, workers)
    s = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], workers, cfg["dp_waves"], bool(cfg.get("aligned")))
    if cfg.get("red"):  # the tail tiles' sums and counters, zero here once; every complete launch leaves them zero
        ws = torch.zeros((s.sk_tiles * 128, cfg["block_N"]), dtype=torch.float32, device=a.device)
        counters = torch.zeros(s.sk_tiles * 2, dtype=torch.int32, device=a.device)

        def red(c: Any) -> Any:
            gemm(a, b, c, ws, counters)
            return c

        red.counters = counters
        red.workspace = ws
        return red
    if cfg.get("fixup") or cfg.get("spread"):
        wl = torch.full((max(s.slots, 1) * 128, cfg["block_N"]), float("nan"), dtype=torch.float32, device=a.device)
        n_counters = s.sk_tiles * 2 if cfg.get("spread") else sk_fixup_counters(
            M, N, K, cfg["block_N"], cfg["block_K"], workers, cfg["dp_waves"], cfg["epi_cols"])
        counters = torch.zeros(n_counters, dtype=torch.int32, device=a.device)

        def last(c: Any) -> Any:
            gemm(a, b, c, wl, counters)
            return c

        last.counters = counters
        return last
    w = torch.empty((max(s.slots, 1) * 128, cfg["block_N"]), dtype=torch.float32, device=a.device)

    def fn(c: Any) -> Any:
        gemm(a, b, c, w)
        if fix is not None:
            fix(w, c)
        return c

    return fn
