"""Schedule "warp": one warp per token, the row sum and the RoPE partner by warp shuffles."""
import tilelang
import tilelang.language as T

from kernels.common import TARGET
from kernels.quant import EPS, FP8, FP8_MAX

ACC = "float32"


# Lane l holds channels [8l + 256j, +8) of its token (16-byte loads: a warp instruction
# moves 512 contiguous bytes); the sum of squares is a warp shuffle reduction; the RoPE
# partner of a tail channel sits half/8 lanes away in the last chunk (R a power of two,
# 16 <= R <= 256), so the rotation takes one xor shuffle per register instead of a shared
# round trip; the FP8 group (group/8 lanes) amax is a shuffle reduction of width group/8.
# The weight is staged once per block in shared memory (the only barrier, before any row
# work): left in global, ptxas hoists all its loads and needs ~220 registers.
def warp_supported(N: int, rope_dim: int, group: int | None = None, dtype: str = "bfloat16") -> bool:
    """Shapes the warp schedule serves: N % 256 == 0, R a power of two in [16, 256],
    group a power of two in [8, 256]; 16-bit dtypes; at most 128 elements per lane."""
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    return (dtype in ("float16", "bfloat16") and N % 256 == 0 and N // 32 <= 128
            and pow2(rope_dim) and 16 <= rope_dim <= 256
            and (group is None or (pow2(group) and 8 <= group <= 256 and N % group == 0)))


@T.macro
def _warp_row_rsqrt(X, xl, acc, rs, row, lane, NJ, N, eps):
    """One warp loads its row into registers (lane ``lane`` takes elements
    [8*lane + 256*j, +8), 16-byte loads) and leaves 1/rms of the row in ``rs[0]``:
    per-lane partial sums of squares in fp32, then one warp shuffle reduction."""
    for j in T.unroll(NJ):
        for v in T.vectorized(8):
            xl[j * 8 + v] = X[row, j * 256 + lane * 8 + v]
    for v in T.unroll(8):
        acc[v] = 0.0
    for j in T.unroll(NJ):
        for v in T.unroll(8):
            acc[v] += T.cast(xl[j * 8 + v], ACC) * T.cast(xl[j * 8 + v], ACC)
    rs[0] = 0.0
    for v in T.unroll(8):
        rs[0] += acc[v]
    rs[0] = T.warp_reduce_sum(rs[0])
    rs[0] = T.rsqrt(rs[0] / N + eps)


@T.macro
def _warp_tail_rope(xl, pv, cl, sl, C, Sn, row, lane, NJ, half, rope_dim, dtype):
    """RoPE on the last chunk of a warp's row (the R tail channels are lanes
    ``32 - R/8 ..`` of it): every lane shuffles (full mask) for the partner half/8 lanes
    away, the tail lanes load their cos/sin and rotate in registers, rounding to dtype."""
    for v in T.unroll(8):
        pv[v] = T.shfl_xor(T.cast(xl[(NJ - 1) * 8 + v], ACC), half // 8)
    if lane >= 32 - rope_dim // 8:
        r0 = lane * 8 - (256 - rope_dim)
        p0 = r0 % half
        for v in T.vectorized(8):
            cl[v] = C[row, p0 + v]
        for v in T.vectorized(8):
            sl[v] = Sn[row, p0 + v]
        for v in T.unroll(8):
            xl[(NJ - 1) * 8 + v] = T.cast(
                T.cast(xl[(NJ - 1) * 8 + v], ACC) * cl[v]
                + T.if_then_else(r0 < half, -1.0, 1.0) * pv[v] * sl[v], dtype)


@tilelang.jit(target=TARGET)
def rmsnorm_rope_warp(M: int, N: int, rope_dim: int, dtype: str = "bfloat16", rows: int = 4,
                      eps: float = 1e-6, max_regs: int = 0):
    assert warp_supported(N, rope_dim, None, dtype)
    NJ, half = N // 256, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, rows), threads=32 * rows) as bx:
            if max_regs:
                T.annotate_min_blocks_per_sm(max(1, 65536 // (32 * rows * max_regs)))
            tx = T.get_thread_binding()
            xl = T.alloc_local((NJ * 8,), dtype)
            wl = T.alloc_local((8,), dtype)
            pv = T.alloc_local((8,), ACC)
            cl = T.alloc_local((8,), ACC)
            sl = T.alloc_local((8,), ACC)
            acc = T.alloc_local((8,), ACC)
            rs = T.alloc_local((1,), ACC)
            ws = T.alloc_shared((N,), dtype)
            T.copy(W[0], ws)
            # a ragged last block: surplus warps redo row M-1 and store nothing, so every
            # warp reaches the shuffles and the block's barrier (no divergent barrier)
            row = T.min(bx * rows + tx // 32, M - 1)
            live = bx * rows + tx // 32 < M
            lane = tx % 32
            _warp_row_rsqrt(X, xl, acc, rs, row, lane, NJ, N, eps)
            for j in T.unroll(NJ):  # y1, rounded to dtype as the unfused chain does
                for v in T.vectorized(8):
                    wl[v] = ws[j * 256 + lane * 8 + v]
                for v in T.unroll(8):
                    xl[j * 8 + v] = T.cast(T.cast(xl[j * 8 + v], ACC) * rs[0] * T.cast(wl[v], ACC), dtype)
                if live and j < NJ - 1:
                    for v in T.vectorized(8):
                        Y[row, j * 256 + lane * 8 + v] = xl[j * 8 + v]
            _warp_tail_rope(xl, pv, cl, sl, C, Sn, row, lane, NJ, half, rope_dim, dtype)
            if live:
                for v in T.vectorized(8):
                    Y[row, (NJ - 1) * 256 + lane * 8 + v] = xl[(NJ - 1) * 8 + v]

    return main


@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8_warp(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                          rows: int = 4, eps: float = 1e-6, max_regs: int = 0):
    """The warp schedule + the group quantizer: a group is group/8 lanes of one chunk."""
    assert warp_supported(N, rope_dim, group, dtype)
    NJ, half, G = N // 256, rope_dim // 2, N // group
    GL = group // 8  # lanes per group
    NSH = GL.bit_length() - 1  # xor-shuffle steps of the group amax

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, N), FP8), S: T.Tensor((M, G), ACC)):
        with T.Kernel(T.ceildiv(M, rows), threads=32 * rows) as bx:
            if max_regs:
                T.annotate_min_blocks_per_sm(max(1, 65536 // (32 * rows * max_regs)))
            tx = T.get_thread_binding()
            xl = T.alloc_local((NJ * 8,), dtype)
            wl = T.alloc_local((8,), dtype)
            pv = T.alloc_local((8,), ACC)
            cl = T.alloc_local((8,), ACC)
            sl = T.alloc_local((8,), ACC)
            acc = T.alloc_local((8,), ACC)
            rs = T.alloc_local((1,), ACC)
            am = T.alloc_local((1,), ACC)
            inv = T.alloc_local((1,), ACC)
            ql = T.alloc_local((8,), FP8)
            ws = T.alloc_shared((N,), dtype)
            T.copy(W[0], ws)
            row = T.min(bx * rows + tx // 32, M - 1)  # surplus warps redo row M-1, store nothing
            live = bx * rows + tx // 32 < M
            lane = tx % 32
            _warp_row_rsqrt(X, xl, acc, rs, row, lane, NJ, N, eps)
            for j in T.unroll(NJ):  # y1, rounded to dtype
                for v in T.vectorized(8):
                    wl[v] = ws[j * 256 + lane * 8 + v]
                for v in T.unroll(8):
                    xl[j * 8 + v] = T.cast(T.cast(xl[j * 8 + v], ACC) * rs[0] * T.cast(wl[v], ACC), dtype)
            _warp_tail_rope(xl, pv, cl, sl, C, Sn, row, lane, NJ, half, rope_dim, dtype)
            # xl holds y2 in dtype; per chunk: group amax (shuffles over GL lanes), quantize
            for j in T.unroll(NJ):
                am[0] = 0.0
                for v in T.unroll(8):
                    am[0] = T.max(am[0], T.abs(T.cast(xl[j * 8 + v], ACC)))
                for t in T.unroll(NSH):
                    am[0] = T.max(am[0], T.shfl_xor(am[0], (GL // 2) >> t))
                am[0] = T.max(am[0], EPS) / FP8_MAX  # the scale
                inv[0] = 1.0 / am[0]
                for v in T.unroll(8):
                    ql[v] = T.cast(T.clamp(T.cast(xl[j * 8 + v], ACC) * inv[0], -FP8_MAX, FP8_MAX), FP8)
                if live:
                    for v in T.vectorized(8):
                        Q[row, j * 256 + lane * 8 + v] = ql[v]
                    if lane % GL == 0:
                        S[row, (j * 256 + lane * 8) // group] = am[0]

    return main
