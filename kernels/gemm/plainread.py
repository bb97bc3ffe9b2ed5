"""A plain read of a buffer: what any kernel that must read those bytes once pays, at least.

A W4A16 kernel reads its int4 weights and scales once; no kernel of that shape can take less time than the fastest
kernel that only reads the same bytes, under the same L2 flush.  :func:`plain_read` is such a reader, written the
plain TileLang way: ``blocks`` persistent blocks (one an SM), each streaming its contiguous share of the buffer,
viewed as rows of 128 bytes (32 int32 words), through a ``T.Pipelined`` ring of ``stages`` slots of ``rows``
rows.  On sm_90a tilelang 0.1.15 makes it a producer warpgroup issuing one-dimensional bulk copies (one a slot) and a
consumer warpgroup that adds every word of a slot into registers, then frees it; each block writes ``rows`` partial
sums.  The sum of all words modulo 2^32 (:func:`read_checksum`) proves every byte was read.

The configuration is the fastest of the timing probe ``readbound`` on the H200 and the H100 (132 blocks, 8 KB x 8
slots, 2026-12-06); suite ``gemm.flush`` times it beside its other references at M = 16.

:func:`plain_read_hot` is the same read with a second stream beside it, for the question what the activations' trip
through L2 costs a W4A16 kernel: with each slot of the buffer it also copies ``ratio`` slots of a small "hot"
buffer that every block reads whole once (as every block of the M = 64 kernel reads all 1 MB of the activations,
four bytes of them for every byte of weights), so the hot bytes come from L2 after the first block's miss.

:func:`plain_read_tiles` reads the W4A16 kernel's own operands in its own tiles, with nothing else of the kernel: one
block per 64 weight rows, the block's scales once, then per stage of ``block_K`` the 64 x ``block_K`` / 2 bytes of its
packed weights and the whole M x ``block_K`` activation tile, both as two-dimensional tensor copies into
128-byte-swizzled shared memory (the kernel's layout), in one ``T.Pipelined`` ring; the consumer adds every word.
"""
from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.gemm.common import TARGET, check_cuda, check_matrix, require

#: Bytes a row of the read buffer holds (32 int32 words).
ROW_BYTES = 128
WORDS = ROW_BYTES // 4
#: The probe's fastest reader: rows a slot (8 KB) and slots.
SLOT_ROWS, STAGES = 64, 8


def read_rows(nbytes: int) -> int:
    """Rows of 128 bytes that hold ``nbytes`` (which must be a whole number of rows)."""
    require(nbytes > 0 and nbytes % ROW_BYTES == 0, f"the read buffer must be a positive multiple of {ROW_BYTES} "
            f"bytes, got {nbytes}")
    return nbytes // ROW_BYTES


def check_read_config(rows_total: int, blocks: int, rows: int = SLOT_ROWS, stages: int = STAGES) -> int:
    """The slots a block streams; ``ValueError`` naming the constraint when the buffer does not split evenly or the
    ring does not fit a block's shared memory."""
    require(blocks > 0 and rows > 0 and stages >= 2, f"blocks, rows and stages must be positive (stages >= 2), got "
            f"{blocks}, {rows}, {stages}")
    require(rows_total % blocks == 0, f"{rows_total} rows do not split evenly over {blocks} blocks")
    per = rows_total // blocks
    require(per % rows == 0, f"a block's {per} rows are not a whole number of {rows}-row slots")
    require(rows * ROW_BYTES * stages <= 200 * 1024, f"{stages} slots of {rows * ROW_BYTES} B exceed 200 KB of "
            "shared memory")
    return per // rows


@tilelang.jit(target=TARGET)
def plain_read(rows_total: int, blocks: int, rows: int = SLOT_ROWS, stages: int = STAGES):
    """Kernel ``(X[rows_total, 32] int32, O[blocks, rows] int32)``: every word of ``X`` added into ``O``'s partial
    sums (see the module docstring)."""
    iters = check_read_config(rows_total, blocks, rows, stages)
    per = rows_total // blocks

    @T.prim_func
    def main(X: T.Tensor((rows_total, WORDS), "int32"), O: T.Tensor((blocks, rows), "int32")):
        with T.Kernel(blocks, threads=128) as bx:
            xs = T.alloc_shared((rows, WORDS), "int32")
            acc = T.alloc_fragment((rows, WORDS), "int32")
            red = T.alloc_fragment((rows,), "int32")
            T.clear(acc)
            for it in T.Pipelined(iters, num_stages=stages):
                T.copy(X[bx * per + it * rows, 0], xs)
                for i, j in T.Parallel(rows, WORDS):
                    acc[i, j] = acc[i, j] + xs[i, j]
            T.reduce_sum(acc, red, dim=1)
            T.copy(red, O[bx, 0])

    return main


def read_checksum(x: Any) -> int:
    """The sum of all int32 words of ``x`` modulo 2^32 (the reference a reader's partial sums must give)."""
    import torch

    return int(x.reshape(-1).view(torch.int32).to(torch.int64).sum().item()) % 2**32


def check_read_inputs(x: Any, out: Any, blocks: int, rows: int = SLOT_ROWS) -> None:
    """``x``: int32 ``[rows_total, 32]``, ``out``: int32 ``[blocks, rows]``, both contiguous on one CUDA device."""
    import torch

    require(isinstance(x, torch.Tensor) and x.dim() == 2, "x must be a 2-D torch.Tensor")
    check_matrix(x, "x", (x.shape[0], WORDS), torch.int32)
    check_matrix(out, "out", (blocks, rows), torch.int32)
    check_cuda(x=x, out=out)


#: What the partial sums hold before a reader writes them (a block that wrote nothing would leave it in the sum).
POISON = 0x5A5A5A5A


def make_reader(x: Any, blocks: int, rows: int = SLOT_ROWS, stages: int = STAGES, kernel: Any = None) -> tuple[Any, Any]:
    """``(run, out)``: a zero-argument launch of the reader over ``x`` (``kernel``, a reader already built for
    them, or :func:`plain_read`) and the partial sums it writes, poisoned with :data:`POISON` until it does."""
    import torch

    out = torch.full((blocks, rows), POISON, dtype=torch.int32, device=x.device)
    check_read_inputs(x, out, blocks, rows)
    kern = kernel if kernel is not None else plain_read(x.shape[0], blocks, rows, stages)
    return (lambda: kern(x, out)), out


def check_hot_config(rows_total: int, blocks: int, ratio: int, rows: int = SLOT_ROWS, stages: int = STAGES) -> int:
    """Rows of the hot buffer of :func:`plain_read_hot` (each block reads it whole once: ``ratio`` times a block's
    share of the buffer); ``ValueError`` naming the constraint when the ring does not fit."""
    require(isinstance(ratio, int) and ratio >= 1, f"ratio must be a positive int, got {ratio!r}")
    check_read_config(rows_total, blocks, rows, stages)
    require(rows * (1 + ratio) * ROW_BYTES * stages <= 200 * 1024, f"{stages} slots of {rows * ROW_BYTES} B and "
            f"{ratio} x {rows * ROW_BYTES} B of hot rows exceed 200 KB of shared memory")
    return ratio * (rows_total // blocks)


@tilelang.jit(target=TARGET)
def plain_read_hot(rows_total: int, blocks: int, ratio: int, rows: int = SLOT_ROWS, stages: int = STAGES):
    """Kernel ``(X[rows_total, 32] int32, H[hot, 32] int32, O[blocks, rows] int32)``: every word of ``X`` and, in
    every block, every word of ``H`` (``hot`` = :func:`check_hot_config`) added into ``O``'s partial sums; the
    slots of ``H`` ride in the same ring as those of ``X``."""
    iters = check_read_config(rows_total, blocks, rows, stages)
    hot = check_hot_config(rows_total, blocks, ratio, rows, stages)
    per = rows_total // blocks
    hrows = rows * ratio

    @T.prim_func
    def main(X: T.Tensor((rows_total, WORDS), "int32"), H: T.Tensor((hot, WORDS), "int32"),
             O: T.Tensor((blocks, rows), "int32")):
        with T.Kernel(blocks, threads=128) as bx:
            xs = T.alloc_shared((rows, WORDS), "int32")
            hs = T.alloc_shared((hrows, WORDS), "int32")
            acc = T.alloc_fragment((rows, WORDS), "int32")
            red = T.alloc_fragment((rows,), "int32")
            T.clear(acc)
            for it in T.Pipelined(iters, num_stages=stages):
                T.copy(X[bx * per + it * rows, 0], xs)
                T.copy(H[it * hrows, 0], hs)
                for i, j in T.Parallel(rows, WORDS):
                    acc[i, j] = acc[i, j] + xs[i, j]
                for q in T.serial(ratio):
                    for i, j in T.Parallel(rows, WORDS):
                        acc[i, j] = acc[i, j] + hs[q * rows + i, j]
            T.reduce_sum(acc, red, dim=1)
            T.copy(red, O[bx, 0])

    return main


def hot_checksum(x: Any, hot: Any, blocks: int) -> int:
    """What :func:`plain_read_hot`'s partial sums must add up to: every word of ``x`` once and of ``hot`` once a
    block, modulo 2^32."""
    return (read_checksum(x) + blocks * read_checksum(hot)) % 2**32


#: Weight rows a block of :func:`plain_read_tiles` owns by default (the W4A16 kernel's with ``split="k"``).
TILE_ROWS = 64


def check_tiles_config(M: int, N: int, K: int, group: int = 128, block_K: int = 256, stages: int = 4,
                       rows: int = TILE_ROWS, ksplit: int = 1) -> int:
    """The stages a block of :func:`plain_read_tiles` streams; ``ValueError`` naming the constraint."""
    require(M > 0 and M % 16 == 0 and M <= 256, f"M must be a multiple of 16 up to 256, got {M}")
    require(rows in (64, 128), f"rows must be 64 or 128, got {rows}")
    require(N > 0 and N % rows == 0, f"N must be a positive multiple of {rows}, got {N}")
    require(ksplit in (1, 2, 4), f"ksplit must be 1, 2 or 4, got {ksplit}")
    require(block_K in (128, 256) and K % (block_K * ksplit) == 0, f"K ({K}) must be a multiple of block_K "
            f"(128 or 256, got {block_K}) times ksplit ({ksplit})")
    require(K % group == 0 and (K // group) % (2 * ksplit) == 0, f"K / group must be a whole multiple of "
            f"2 x ksplit: {K} / {group}, ksplit {ksplit}")
    require(stages >= 2, f"stages must be >= 2, got {stages}")
    smem = stages * (rows * block_K // 2 + M * block_K * 2) + rows * (K // group // ksplit) * 2
    require(smem <= 200 * 1024, f"{stages} stages of {rows} x {block_K // 2} B of weights and {M} x "
            f"{block_K * 2} B of activations, with the scales, exceed 200 KB of shared memory ({smem} B)")
    return K // block_K // ksplit


@tilelang.jit(target=TARGET)
def plain_read_tiles(M: int, N: int, K: int, group: int = 128, block_K: int = 256, stages: int = 4,
                     rows: int = TILE_ROWS, ksplit: int = 1):
    """Kernel ``(Wq[N, K/8] int32, A[M, K/2] int32, S[N, K/group/2] int32, O[N/rows*ksplit, rows] int32)``: the
    packed weights, the activations and the scales of an ``M x N x K`` W4A16 product viewed as 32-bit words, read
    in the kernel's tiles (see the module docstring).  ``rows`` weight rows a block over ``1/ksplit`` of K, the
    ``ksplit`` blocks of one set of rows side by side: each block adds its part of ``Wq`` and ``S`` and its K part
    of all of ``A`` (with ``rows=128, ksplit=2`` every activation byte feeds 128 weight rows, as in ``kpair``, and
    no cluster is formed)."""
    iters = check_tiles_config(M, N, K, group, block_K, stages, rows, ksplit)
    blocks, wk, ak, sk = N // rows * ksplit, block_K // 8, block_K // 2, K // group // 2 // ksplit

    @T.prim_func
    def main(Wq: T.Tensor((N, K // 8), "int32"), A: T.Tensor((M, K // 2), "int32"),
             S: T.Tensor((N, sk * ksplit), "int32"), O: T.Tensor((blocks, rows), "int32")):
        with T.Kernel(blocks, threads=128) as bx:
            ws = T.alloc_shared((rows, wk), "int32")
            as_ = T.alloc_shared((M, ak), "int32")
            ss = T.alloc_shared((rows, sk), "int32")
            acc = T.alloc_fragment((rows, wk), "int32")
            red = T.alloc_fragment((rows,), "int32")
            T.annotate_layout({ws: make_swizzled_layout(ws), as_: make_swizzled_layout(as_)})
            n0 = bx // ksplit * rows
            kb = bx % ksplit * iters
            T.clear(acc)
            T.copy(S[n0, bx % ksplit * sk], ss)
            for i, j in T.Parallel(rows, sk):
                acc[i, j % wk] = acc[i, j % wk] + ss[i, j]
            for ko in T.Pipelined(iters, num_stages=stages):
                T.copy(Wq[n0, (kb + ko) * wk], ws)
                T.copy(A[0, (kb + ko) * ak], as_)
                for i, j in T.Parallel(rows, wk):
                    acc[i, j] = acc[i, j] + ws[i, j]
                for q in T.serial(M * ak // (rows * wk)):
                    for i, j in T.Parallel(rows, wk):
                        acc[i, j] = acc[i, j] + as_[(q * rows + i) % M, (q * rows + i) // M * wk + j]
            T.reduce_sum(acc, red, dim=1)
            T.copy(red, O[bx, 0])

    return main


def tiles_checksum(wq: Any, a: Any, s: Any, rows: int = TILE_ROWS) -> int:
    """What :func:`plain_read_tiles`' partial sums must add up to: every word of the weights and scales once, of
    the activations once per set of ``rows`` weight rows, modulo 2^32."""
    return (read_checksum(wq) + read_checksum(s) + wq.shape[0] // rows * read_checksum(a)) % 2**32
