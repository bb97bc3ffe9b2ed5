"""Schedule "fragment": ``blk_m`` tokens per block, the rows in register fragments.

The schedule of ``norm.rmsnorm_rows`` plus a little work on the tail: the rows go global ->
register fragment with 16-byte loads (one global read), fp32 squares -> ``T.reduce_sum`` ->
normalized value cast to dtype *in the same fragment*.  RoPE pairs channel ``p`` with
``p + R/2``, which another thread holds, so only the R tail channels make a short trip
through shared memory: they are published to a ``(blk_m, R)`` shared tile, one barrier, then
each thread that owns a tail channel rotates it in its registers with the partner read from
the tile.  The rows leave with 16-byte stores (RMSNorm + RoPE), or, for the FP8 variant, the
row fragment is laid out as ``(blk_m, N / group, group)`` so that ``T.reduce_absmax`` over
the last dimension finds each group inside a few lanes of one warp (a shuffle-only
reduction, no shared memory), and the quantizer multiplies by ``1 / scale`` (one division
per group, not per element): one read of x, one write of 1 byte per element plus the scales.

Why the rows are normalized in the fragment and not in a shared tile: a ``T.Parallel`` loop
that writes a shared tile while reading the per-row fragment ``rs`` is bound by layout
inference to ``rs``'s layout, which gives each row to a single thread -- with ``blk_m = 2``
two threads of 256 normalize the whole tile (a 512-iteration loop each), about 5 % of the
copy bandwidth.  Loops that *write a fragment* take the fragment's layout: every thread gets
its own share.
"""
import tilelang
import tilelang.language as T

from kernels.common import TARGET
from kernels.quant import EPS, FP8, FP8_MAX

ACC = "float32"


@tilelang.jit(target=TARGET)
def rmsnorm_rope(M: int, N: int, rope_dim: int, dtype: str = "bfloat16", blk_m: int = 1,
                 threads: int = 256, eps: float = 1e-6, min_blocks: int = 0):
    start, half = N - rope_dim, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            x = T.alloc_fragment((blk_m, N), dtype)  # whole rows, in registers
            w = T.alloc_fragment((N,), dtype)
            sq = T.alloc_fragment((blk_m, N), ACC)
            rs = T.alloc_fragment((blk_m,), ACC)
            tail = T.alloc_shared((blk_m, rope_dim), dtype)  # the only shared round trip
            cs = T.alloc_shared((blk_m, half), ACC)
            ss = T.alloc_shared((blk_m, half), ACC)
            T.copy(X[bx * blk_m, 0], x)
            T.copy(W[0], w)
            T.copy(C[bx * blk_m, 0], cs)
            T.copy(Sn[bx * blk_m, 0], ss)
            for i, j in T.Parallel(blk_m, N):
                sq[i, j] = T.cast(x[i, j], ACC) * T.cast(x[i, j], ACC)
            T.reduce_sum(sq, rs, dim=1)
            for i in T.Parallel(blk_m):
                rs[i] = T.rsqrt(rs[i] / N + eps)
            for i, j in T.Parallel(blk_m, N):  # y1, rounded to dtype as the unfused chain does
                x[i, j] = T.cast(T.cast(x[i, j], ACC) * rs[i] * T.cast(w[j], ACC), dtype)
            for i, r in T.Parallel(blk_m, rope_dim):  # publish the tail: the partners live elsewhere
                tail[i, r] = x[i, start + r]
            for i, r in T.Parallel(blk_m, rope_dim):  # rotate each owned tail channel in registers
                p = r % half
                partner = T.if_then_else(r < half, r + half, r - half)
                sign = T.if_then_else(r < half, -1.0, 1.0)
                x[i, start + r] = T.cast(T.cast(x[i, start + r], ACC) * cs[i, p]
                                         + sign * T.cast(tail[i, partner], ACC) * ss[i, p], dtype)
            T.copy(x, Y[bx * blk_m, 0])

    return main


@T.macro
def _tail_rope(v, tail, cs, ss, blk_m, G, group, start, half, dtype):
    """NeoX RoPE on the channels ``c = g * group + k >= start`` of the row fragment ``v``
    (whose cos/sin rows sit in the shared ``cs``/``ss``): the tail is published to the
    shared ``tail`` tile, each owning thread rotates its channels with the partner read
    back, rounds to ``dtype`` and keeps the result in ``v``'s own dtype.  The condition is
    resolved at compile time per register, so only the threads that own tail channels work."""
    for i, g, k in T.Parallel(blk_m, G, group):
        if g * group + k >= start:
            tail[i, g * group + k - start] = v[i, g, k]
    for i, g, k in T.Parallel(blk_m, G, group):
        if g * group + k >= start:
            r = g * group + k - start
            p = r % half
            partner = T.if_then_else(r < half, r + half, r - half)
            sign = T.if_then_else(r < half, -1.0, 1.0)
            v[i, g, k] = T.cast(T.cast(T.cast(v[i, g, k], ACC) * cs[i, p]
                                       + sign * T.cast(tail[i, partner], ACC) * ss[i, p], dtype), v.dtype)


@T.macro
def _rms_rope_quant(x, w, sqe, sq, rs, tail, cs, ss, amax, inv, q, blk_m, G, group, N, start, half, eps):
    """The work of the FP8 fused kernels on a row fragment ``x (blk_m, G, group)``:
    RMSNorm in place (rounded to dtype), RoPE on the tail (:func:`_tail_rope`), group
    amax, quantize into ``q``; the scales are left in ``amax``."""
    for i, g, k in T.Parallel(blk_m, G, group):
        sqe[i, g, k] = T.cast(x[i, g, k], ACC) * T.cast(x[i, g, k], ACC)
    T.reduce_sum(sqe, sq, dim=2)  # within a group: a few lanes of one warp
    T.reduce_sum(sq, rs, dim=1)  # across the groups of the row
    for i in T.Parallel(blk_m):
        rs[i] = T.rsqrt(rs[i] / N + eps)
    for i, g, k in T.Parallel(blk_m, G, group):
        x[i, g, k] = T.cast(T.cast(x[i, g, k], ACC) * rs[i] * T.cast(w[g, k], ACC), x.dtype)
    _tail_rope(x, tail, cs, ss, blk_m, G, group, start, half, x.dtype)
    # x now holds y2 in dtype: the same numbers the unfused chain hands the quantizer
    T.reduce_absmax(x, amax, dim=2)
    for i, g in T.Parallel(blk_m, G):
        amax[i, g] = T.max(amax[i, g], EPS) / FP8_MAX  # the scale
        inv[i, g] = 1.0 / amax[i, g]
    for i, g, k in T.Parallel(blk_m, G, group):
        q[i, g, k] = T.cast(T.clamp(T.cast(x[i, g, k], ACC) * inv[i, g], -FP8_MAX, FP8_MAX), FP8)


@T.macro
def _rms_rope_quant_lean(x, xf, w, sqe, sq, rs, tail, cs, ss, amax, ab, inv, q, blk_m, G, group, N, start, half,
                         eps):
    """The same arithmetic as :func:`_rms_rope_quant`, written for fewer instructions per
    element (the fragment kernels are issue-bound, not memory-bound, once enough rows are
    in flight): the input is widened to fp32 once (``xf``) and every later step reads the
    fp32 copy of the dtype-rounded values instead of unpacking bf16 again; the group amax
    is a max over ``|y|`` (one min/max instruction with an abs modifier); no clamp before
    the cast -- the e4m3 conversion saturates (``__NV_SATFINITE``) and ``|y| * inv``
    exceeds the largest finite e4m3 value only by rounding."""
    for i, g, k in T.Parallel(blk_m, G, group):
        xf[i, g, k] = T.cast(x[i, g, k], ACC)
    for i, g, k in T.Parallel(blk_m, G, group):
        sqe[i, g, k] = xf[i, g, k] * xf[i, g, k]
    T.reduce_sum(sqe, sq, dim=2)
    T.reduce_sum(sq, rs, dim=1)
    for i in T.Parallel(blk_m):
        rs[i] = T.rsqrt(rs[i] / N + eps)
    for i, g, k in T.Parallel(blk_m, G, group):  # y1 rounded to dtype, kept as fp32
        xf[i, g, k] = T.cast(T.cast(xf[i, g, k] * rs[i] * T.cast(w[g, k], ACC), x.dtype), ACC)
    _tail_rope(xf, tail, cs, ss, blk_m, G, group, start, half, x.dtype)
    for i, g, k in T.Parallel(blk_m, G, group):
        ab[i, g, k] = T.abs(xf[i, g, k])
    T.reduce_max(ab, amax, dim=2)
    for i, g in T.Parallel(blk_m, G):
        amax[i, g] = T.max(amax[i, g], EPS) / FP8_MAX  # the scale
        inv[i, g] = 1.0 / amax[i, g]
    for i, g, k in T.Parallel(blk_m, G, group):
        q[i, g, k] = T.cast(xf[i, g, k] * inv[i, g], FP8)


@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                     blk_m: int = 1, threads: int = 256, eps: float = 1e-6, min_blocks: int = 0,
                     lean: bool = False):
    """Same schedule on a (blk_m, G, group) fragment, so the group amax stays in a warp.

    ``min_blocks`` (0 = let ptxas choose) asks for that many resident blocks per SM
    (``__launch_bounds__``): fewer registers per thread, more rows in flight.
    ``lean=True`` runs the body :func:`_rms_rope_quant_lean` (same results, fewer
    instructions per element) instead of :func:`_rms_rope_quant`."""
    start, half = N - rope_dim, rope_dim // 2
    G = N // group

    @T.prim_func
    def main(X: T.Tensor((M, G, group), dtype), W: T.Tensor((G, group), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, G, group), FP8), S: T.Tensor((M, G), ACC)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            x = T.alloc_fragment((blk_m, G, group), dtype)
            w = T.alloc_fragment((G, group), dtype)
            sqe = T.alloc_fragment((blk_m, G, group), ACC)  # squares, element by element
            sq = T.alloc_fragment((blk_m, G), ACC)  # sum of squares of each group
            rs = T.alloc_fragment((blk_m,), ACC)
            tail = T.alloc_shared((blk_m, rope_dim), ACC if lean else dtype)
            cs = T.alloc_shared((blk_m, half), ACC)
            ss = T.alloc_shared((blk_m, half), ACC)
            amax = T.alloc_fragment((blk_m, G), ACC)
            inv = T.alloc_fragment((blk_m, G), ACC)
            q = T.alloc_fragment((blk_m, G, group), FP8)
            T.copy(X[bx * blk_m, 0, 0], x)
            T.copy(W[0, 0], w)
            T.copy(C[bx * blk_m, 0], cs)
            T.copy(Sn[bx * blk_m, 0], ss)
            if lean:
                xf = T.alloc_fragment((blk_m, G, group), ACC)  # the row widened once
                ab = T.alloc_fragment((blk_m, G, group), ACC)  # |y|
                _rms_rope_quant_lean(x, xf, w, sqe, sq, rs, tail, cs, ss, amax, ab, inv, q, blk_m, G, group, N,
                                     start, half, eps)
            else:
                _rms_rope_quant(x, w, sqe, sq, rs, tail, cs, ss, amax, inv, q, blk_m, G, group, N, start, half, eps)
            T.copy(q, Q[bx * blk_m, 0, 0])
            T.copy(amax, S[bx * blk_m, 0])

    return main
