"""Schedules "vec" (a token over a few warps, bf16 unpacked by bit operations, one barrier)
and "vecp" (vec over several tokens per block, the next ones prefetched by ``cp.async``)."""
import tilelang
import tilelang.language as T

from kernels.common import TARGET
from kernels.quant import EPS, FP8, FP8_MAX

ACC = "float32"


# Nsight Compute showed the fragment bodies above are issue-bound (19-26 instructions per
# element): 256 threads share a row, so the row sum is a shared-memory tree with seven
# barriers, the RoPE tail takes a shared round trip with two more, and unpacking bf16 by
# the generic conversion costs two instructions for every odd element.  This schedule is
# written thread by thread (like "warp") but spreads a row over ``tpr`` threads (4 warps at
# the default 128), so a lane keeps 32 elements -- few enough registers for 8 blocks per SM:
#
# * lane ``t`` of a row holds ``seg`` consecutive channels of every chunk of ``tpr*seg``
#   channels (16-byte loads and stores: a warp instruction moves 512 contiguous bytes);
# * the sum of squares: four fp32 partial sums per lane, a warp shuffle reduction, one
#   value per warp in shared memory, one barrier -- the block's only one;
# * bf16 -> fp32 is a bit operation on a 32-bit word holding two bf16 values:
#   ``lo = w << 16`` and ``hi = w & 0xffff0000`` (one instruction per element); the
#   rounding back to bf16 is one packed convert per two elements;
# * the RoPE partner of a tail channel sits ``R/2/seg`` lanes away in the row's last warp:
#   one xor shuffle per element, in a branch that is uniform per warp;
# * the FP8 group of ``group`` channels is ``group/seg`` lanes: a shuffle max over them,
#   ``scale = max(amax, eps) * (1/448)`` and a multiply by its fast reciprocal
#   (``T.fast_rcp``).  The IEEE division of the reference costs about fourteen instructions
#   per group and lane (a reciprocal, Newton steps, a slow-path check): a tenth of the
#   kernel.  The product with the rounded constant is within one fp32 ulp of the quotient,
#   and a few ulp of fp32 change an e4m3 code only at an exact rounding tie -- far inside
#   the check's tolerances (scales to two bf16 ulps, codes to half an e4m3 step).
def vec_supported(N: int, rope_dim: int, group: int | None = None, dtype: str = "bfloat16",
                  tpr: int = 128, seg: int = 8) -> bool:
    """Shapes the vec schedule serves: 16-bit dtypes, ``seg`` in (8, 16), ``tpr`` a multiple
    of 32, N a multiple of ``tpr * seg`` with at most 64 elements per lane, the RoPE tail
    (R a power of two, R/seg lanes, at most one warp) and each quant group (group/seg lanes,
    a power of two up to 32) inside one warp."""
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    wc = tpr * seg
    return (dtype in ("float16", "bfloat16") and seg in (8, 16) and tpr % 32 == 0 and 32 <= tpr <= 1024
            and N % wc == 0 and N // tpr <= 64
            and pow2(rope_dim) and rope_dim % (2 * seg) == 0 and rope_dim // seg <= 32
            and (group is None or (pow2(group) and group % seg == 0 and group // seg <= 32 and wc % group == 0)))


_PREFETCH_L1 = """
__device__ __forceinline__ void tl_prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" :: "l"(p));
}
"""


@T.macro
def _widen(src, dst, base, n, dtype):
    """``dst[base + i] = fp32(src[i])`` for ``i < n``; bf16 pairs by a shift and a mask of the
    32-bit word that holds them (bf16 is the upper half of an fp32)."""
    if dtype == "bfloat16":
        for p in T.unroll(n // 2):
            dst[base + 2 * p] = T.reinterpret(T.reinterpret(src[T.Ramp(2 * p, 1, 2)], "uint32") << T.uint32(16),
                                              ACC)
            dst[base + 2 * p + 1] = T.reinterpret(
                T.reinterpret(src[T.Ramp(2 * p, 1, 2)], "uint32") & T.uint32(0xFFFF0000), ACC)
    else:
        for v in T.vectorized(n):
            dst[base + v] = T.cast(src[v], ACC)


def _vec_locals(NC: int, seg: int, dtype: str):
    """The registers of a vec lane, allocated inside the kernel being traced: the lane's
    ``NC * seg`` channels in fp32 (``xf``), one chunk of x / w / y in dtype and w in fp32,
    the FP8 codes of a chunk, the RoPE partner and cos/sin of a chunk, four partial sums and
    the scalars (1/rms, amax, scale, 1/scale)."""
    return (T.alloc_local((NC * seg,), ACC), T.alloc_local((seg,), dtype), T.alloc_local((seg,), dtype),
            T.alloc_local((seg,), ACC), T.alloc_local((seg,), dtype), T.alloc_local((seg,), FP8),
            T.alloc_local((seg,), ACC), T.alloc_local((seg,), ACC), T.alloc_local((seg,), ACC),
            T.alloc_local((4,), ACC), T.alloc_local((1,), ACC), T.alloc_local((1,), ACC),
            T.alloc_local((1,), ACC), T.alloc_local((1,), ACC))


@T.macro
def _vec_token(xf, w_l, wf, yl, ql, pv, cl, sl, acc, rs, am, sc, inv, red, red_row, W, C, Sn, Q, S, row, live,
               t, warp, lane, N, NC, seg, WC, NW, half, GL, TLN, PD, group, eps, dtype):
    """The vec schedule's work on one token whose channels are already in ``xf`` (fp32):
    the sum of squares (per warp, then ``red[red_row, :]`` and the block's barrier), y1,
    RoPE on the tail, the group scales and the FP8 codes (stored when ``live``)."""
    for v in T.unroll(4):
        acc[v] = 0.0
    for i in T.unroll(NC * seg):
        acc[i % 4] += xf[i] * xf[i]
    rs[0] = T.warp_reduce_sum(acc[0] + acc[1] + acc[2] + acc[3])
    if lane == 0:
        red[red_row, warp] = rs[0]
    T.sync_threads()
    rs[0] = 0.0
    for k in T.unroll(NW):
        rs[0] += red[red_row, k]
    rs[0] = T.rsqrt(rs[0] / N + eps)
    for c in T.unroll(NC):  # y1 = x * rsqrt * w rounded to dtype, kept in fp32
        for h in T.unroll(seg // 8):
            for v in T.vectorized(8):
                w_l[h * 8 + v] = W[c * WC + t * seg + h * 8 + v]
        _widen(w_l, wf, 0, seg, dtype)
        for v in T.vectorized(seg):
            yl[v] = T.cast(xf[c * seg + v] * rs[0] * wf[v], dtype)
        _widen(yl, xf, c * seg, seg, dtype)
    if warp == NW - 1:  # the token's last warp holds the tail (a warp-uniform branch)
        for v in T.unroll(seg):
            pv[v] = T.shfl_xor(xf[(NC - 1) * seg + v], PD)
        if lane >= 32 - TLN:
            r0 = (lane - (32 - TLN)) * seg  # first rotated channel of this lane
            p0 = r0 % half
            for h in T.unroll(seg // 4):
                for v in T.vectorized(4):
                    cl[h * 4 + v] = C[row, p0 + h * 4 + v]
                for v in T.vectorized(4):
                    sl[h * 4 + v] = Sn[row, p0 + h * 4 + v]
            for v in T.vectorized(seg):
                yl[v] = T.cast(xf[(NC - 1) * seg + v] * cl[v]
                               + T.if_then_else(r0 < half, -1.0, 1.0) * pv[v] * sl[v], dtype)
            _widen(yl, xf, (NC - 1) * seg, seg, dtype)
    for c in T.unroll(NC):  # xf holds y2: group amax over GL lanes, quantize, store
        am[0] = 0.0
        for v in T.unroll(seg):
            am[0] = T.max(am[0], T.abs(xf[c * seg + v]))
        for s in T.unroll(GL.bit_length() - 1):
            am[0] = T.max(am[0], T.shfl_xor(am[0], (GL // 2) >> s))
        sc[0] = T.max(am[0], EPS) * (1.0 / FP8_MAX)  # within one fp32 ulp of the quotient
        inv[0] = T.fast_rcp(sc[0])
        for v in T.vectorized(seg):
            ql[v] = T.cast(xf[c * seg + v] * inv[0], FP8)
        if live:
            for v in T.vectorized(seg):
                Q[row, c * WC + t * seg + v] = ql[v]
            if lane % GL == 0:
                S[row, (c * WC + t * seg) // group] = sc[0]


@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8_vec(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                         tpr: int = 128, rows: int = 1, seg: int = 8, eps: float = 1e-6, min_blocks: int = 0,
                         prefetch: bool = False):
    """RMSNorm + RoPE + FP8 with ``tpr`` threads per token, ``rows`` tokens per block.

    ``prefetch``: the lanes of the RoPE tail ask for their cos/sin lines (``prefetch.global.L1``)
    before the row loads, so the loads after the barrier hit L1 instead of waiting a DRAM
    round trip on the block's longest path (holding them in registers would cost occupancy)."""
    assert vec_supported(N, rope_dim, group, dtype, tpr, seg)
    WC, NW, half = tpr * seg, tpr // 32, rope_dim // 2
    NC = N // WC  # chunks per lane
    GL = group // seg  # lanes per quant group
    TLN, PD = rope_dim // seg, half // seg  # lanes of the RoPE tail; lane distance of a partner

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, N), FP8), S: T.Tensor((M, N // group), ACC)):
        with T.Kernel(T.ceildiv(M, rows), threads=tpr * rows) as bx:
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            tx = T.get_thread_binding()
            xf, xl, w_l, wf, yl, ql, pv, cl, sl, acc, rs, am, sc, inv = _vec_locals(NC, seg, dtype)
            red = T.alloc_shared((rows, NW), ACC)  # one partial sum per warp
            r, t = tx // tpr, tx % tpr
            warp, lane = t // 32, tx % 32
            # a ragged last block: surplus rows redo token M-1 and store nothing, so every
            # warp reaches the shuffles and the barrier
            row = T.min(bx * rows + r, M - 1)
            if prefetch:
                T.import_source(_PREFETCH_L1)
                if warp == NW - 1 and lane >= 32 - TLN:
                    p0 = ((lane - (32 - TLN)) * seg) % half
                    T.evaluate(T.call_extern("handle", "tl_prefetch_l1", T.access_ptr(C[row, p0], "r")))
                    T.evaluate(T.call_extern("handle", "tl_prefetch_l1", T.access_ptr(Sn[row, p0], "r")))
            for c in T.unroll(NC):
                for h in T.unroll(seg // 8):
                    for v in T.vectorized(8):
                        xl[h * 8 + v] = X[row, c * WC + t * seg + h * 8 + v]
                _widen(xl, xf, c * seg, seg, dtype)
            _vec_token(xf, w_l, wf, yl, ql, pv, cl, sl, acc, rs, am, sc, inv, red, r, W, C, Sn, Q, S, row,
                       bx * rows + r < M, t, warp, lane, N, NC, seg, WC, NW, half, GL, TLN, PD, group, eps, dtype)

    return main


# Schedule "vecp": the vec schedule fed ahead of time.  A vec block holds its token only in
# registers, so an SM has (resident blocks) x 8 KB requested at best, and nothing while a block
# reduces and quantizes.  Here a block of ``tpr`` threads walks ``rpb`` consecutive tokens and
# keeps the next ``stages - 1`` of them on their way with ``cp.async`` into a shared ring
# (16 bytes per lane and chunk: each lane copies exactly the bytes it will read back, so the
# ring needs no other synchronization than the barriers tilelang inserts around it).
@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8_vecp(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                          tpr: int = 128, seg: int = 8, rpb: int = 4, stages: int = 2, eps: float = 1e-6,
                          min_blocks: int = 0):
    """The vec schedule over ``rpb`` tokens per block, the next ``stages - 1`` prefetched;
    ``min_blocks`` > 0 caps the registers for that many resident blocks per SM."""
    assert vec_supported(N, rope_dim, group, dtype, tpr, seg) and stages >= 2 and rpb >= 1
    WC, NW, half = tpr * seg, tpr // 32, rope_dim // 2
    NC = N // WC
    GL = group // seg
    TLN, PD = rope_dim // seg, half // seg

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, N), FP8), S: T.Tensor((M, N // group), ACC)):
        with T.Kernel(T.ceildiv(M, rpb), threads=tpr) as bx:
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            t = T.get_thread_binding()
            xs = T.alloc_shared((stages, N), dtype)  # the ring of prefetched tokens
            red = T.alloc_shared((2, NW), ACC)  # double-buffered: token i+1 may write while i is read
            xf, xl, w_l, wf, yl, ql, pv, cl, sl, acc, rs, am, sc, inv = _vec_locals(NC, seg, dtype)
            warp, lane = t // 32, t % 32
            for s in T.unroll(stages - 1):  # prologue: the block's first tokens on their way
                for c in T.unroll(NC):
                    for h in T.unroll(seg // 8):
                        T.ptx_cp_async(T.access_ptr(xs[s, c * WC + t * seg + h * 8], "w", 8),
                                       T.access_ptr(X[T.min(bx * rpb + s, M - 1), c * WC + t * seg + h * 8], "r", 8),
                                       8)
                T.ptx_commit_group()
            for i in T.serial(rpb):
                nxt = i + stages - 1  # a token past the block's share is fetched (clamped) and unused
                for c in T.unroll(NC):
                    for h in T.unroll(seg // 8):
                        T.ptx_cp_async(T.access_ptr(xs[nxt % stages, c * WC + t * seg + h * 8], "w", 8),
                                       T.access_ptr(X[T.min(bx * rpb + nxt, M - 1), c * WC + t * seg + h * 8], "r",
                                                    8), 8)
                T.ptx_commit_group()
                T.ptx_wait_group(stages - 1)  # token i has landed
                row = T.min(bx * rpb + i, M - 1)
                if bx * rpb + i < M:  # uniform over the block: a ragged last block stops early
                    for c in T.unroll(NC):
                        for h in T.unroll(seg // 8):
                            for v in T.vectorized(8):
                                xl[h * 8 + v] = xs[i % stages, c * WC + t * seg + h * 8 + v]
                        _widen(xl, xf, c * seg, seg, dtype)
                    _vec_token(xf, w_l, wf, yl, ql, pv, cl, sl, acc, rs, am, sc, inv, red, i % 2, W, C, Sn, Q, S,
                               row, True, t, warp, lane, N, NC, seg, WC, NW, half, GL, TLN, PD, group, eps, dtype)

    return main
