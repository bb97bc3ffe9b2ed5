"""W4A16 at decode batch sizes spread over every SM: stream-K over the weights (``inst="sk"``).

The decode-shaped W4A16 kernels of :mod:`kernels.gemm.w4a16` give each block 64 weight rows over all of K: at
8192 rows that is 128 blocks on a GPU of 132 SMs, and a plain read of the weights' bytes is 0.5-1.2 us slower on
128 blocks than on 132 (probe ``readbound``, H200).  No split of the rows alone fixes it: 8192 / 132 = 62.06 rows
an SM, and any tile of 8 or more rows leaves some SM 64.  Here the work is cut in *units* of 64 weight rows x 128 k
(one scale group): ``U = N/64 * K/128`` units in tile order (a tile's 64 units of K, then the next tile's), block
``b`` of ``B`` taking units ``[b U // B, (b + 1) U // B)``: 62 or 63 each for 8192 x 8192 on 132 blocks.  A block's
range touches at most two tiles (:func:`schedule`); for each of its *segments* it runs the M = 16 kernel's
pipeline (one ring of 256-k stages, the two consumers on alternate stages, the interleaved weights expanded word-wide
into ``mma.sync`` with the scale applied after each group's product), a stage whose second half lies past the
segment computing only its first.  At a segment's end the two consumers' partials are added in shared memory and
the block *meets* the tile's other contributors in global memory, as ``kglob`` does: it writes its fp32 partial into
its slot of a workspace and counts on the tile's counter (acq_rel); the last of the tile's contributors to count
resets the counter, adds every slot in slot order (the same sum whichever block comes last) and stores C.  Nobody
waits for another block.

Only decode batches: ``M <= block_M`` with ``block_M`` 8 or 16 (one activation tile).  The ledger's byte count
(:mod:`ledger.w4a16`) does not include the workspace: at 8192 x 8192 and M = 16 every tile has two contributors, each
writing a 4 KB partial, so 1 MB written and read again through L2 beside the 34.6 MB of weights and scales.
"""

from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.gemm.common import TARGET, require
from ledger.w4a16 import smem_bytes
from kernels.gemm.w4a16 import (_BAR_BOTH, _BAR_EPI, _POST_FUSED_SRC, CONSUMER_REGS, PRODUCER_REGS, SMEM_LIMIT,
                                THREADS, W4_MMA_PASS_CONFIGS, WG_ROWS, WithWorkspace)

#: K of one unit: one scale group, so a range starts and ends on a group.
UNIT_K = 128
#: Weight rows of a tile (both consumers' rows: they take alternate stages of the same rows).
ROWS = WG_ROWS


def units(N: int, K: int) -> tuple[int, int]:
    """``(units a tile, units in all)``."""
    return K // UNIT_K, N // ROWS * (K // UNIT_K)


def block_of(x: int, U: int, B: int) -> int:
    """The block whose range holds unit ``x``: the largest ``b`` with ``b U // B <= x``."""
    return ((x + 1) * B - 1) // U


def schedule(N: int, K: int, blocks: int) -> list[list[tuple[int, int, int]]]:
    """Per block, its segments ``(tile, first unit, end unit)`` (units counted inside the tile), as the kernel
    computes them."""
    ut, U = units(N, K)
    out = []
    for b in range(blocks):
        u0, u1 = b * U // blocks, (b + 1) * U // blocks
        segs, u = [], u0
        while u < u1:
            t = u // ut
            e = min(u1, (t + 1) * ut)
            segs.append((t, u - t * ut, e - t * ut))
            u = e
        out.append(segs)
    return out


def contributors(N: int, K: int, blocks: int) -> list[int]:
    """Per tile, how many blocks' ranges touch it (the count its counter must reach)."""
    ut, U = units(N, K)
    return [block_of(t * ut + ut - 1, U, blocks) - block_of(t * ut, U, blocks) + 1 for t in range(N // ROWS)]


def workspace(M: int, N: int, K: int, blocks: int, block_M: int = 16) -> tuple[tuple[int, int], tuple[int]]:
    """The fp32 partials (a slot of 64 rows x ``block_M`` for each of a tile's possible contributors) and the int32
    counters (one a tile), both allocated zeroed once; every complete launch leaves the counters zero."""
    tiles = N // ROWS
    return (tiles * max(contributors(N, K, blocks)) * ROWS, block_M), (tiles,)


def check_config(M: int, N: int, K: int, *, group: int, block_M: int, block_K: int, stages: int, blocks: int) -> None:
    """Every constraint of one configuration, each failure naming it (ValueError)."""
    for name, v in (("M", M), ("N", N), ("K", K), ("blocks", blocks), ("stages", stages)):
        require(isinstance(v, int) and v > 0, f"{name} must be a positive int, got {v!r}")
    require(group == UNIT_K, f"the units are one scale group of {UNIT_K} k: group must be {UNIT_K}, got {group}")
    require(block_M in (8, 16), f"block_M is the decode batch's tile, 8 or 16 rows: got {block_M}")
    require(M <= block_M, f"stream-K here serves one activation tile: M={M} must be <= block_M={block_M}")
    require(N % ROWS == 0, f"N={N} must be a multiple of the {ROWS} weight rows of a tile")
    require(block_K in (UNIT_K, 2 * UNIT_K), f"block_K is one or two units ({UNIT_K} or {2 * UNIT_K}): got {block_K}")
    require(K % UNIT_K == 0, f"K={K} must be a multiple of the {UNIT_K}-k unit")
    require(stages % 2 == 0 and stages >= 2,
            f"the two consumers take alternate stages, so a slot always serves the same one: stages={stages} must "
            "be even")
    ut, U = units(N, K)
    require(N // ROWS <= blocks <= U,
            f"blocks={blocks} must lie between the {N // ROWS} tiles (so a range touches at most two) and the {U} "
            "units (so none is empty)")
    sm = smem_bytes(K, group=group, block_m=block_M, block_k=block_K, stages=stages, rows=ROWS, segments=2)
    require(sm <= SMEM_LIMIT, f"{sm} bytes of shared memory exceed the {SMEM_LIMIT} a block may use")


@tilelang.jit(target=TARGET, pass_configs=W4_MMA_PASS_CONFIGS)
def w4a16_sk(M: int, N: int, K: int, group: int = 128, block_M: int = 16, block_K: int = 256, stages: int = 8,
             blocks: int = 132):
    """The stream-K decode kernel ``(A, Bq, S, C, Wk, L)``: ``Bq`` interleaved as
    :func:`kernels.gemm.w4a16.interleave_weights` writes it, ``Wk`` and ``L`` shaped by :func:`workspace`."""
    check_config(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, blocks=blocks)
    ut, U = units(N, K)
    B, P, G, kc = blocks, block_K // UNIT_K, K // group, UNIT_K
    tiles = N // ROWS
    maxc = max(contributors(N, K, blocks))
    ws_shape, l_shape = workspace(M, N, K, blocks, block_M)
    wide_rb, wide_plane = min(block_K // 2, 128), ROWS * 128

    @T.macro
    def piece(W_s, S_s, seg, Wf, A_t, acc, accg, s, c0, k):
        """One scale group of stage ``s`` (its bytes from ``c0 // 2``, its first k ``k``, the scales of segment
        ``seg``): expanded without the scale into ``Wf``, multiplied into ``accg``, the partial times the row's scale
        added to ``acc``."""
        T.evaluate(T.call_extern("handle", f"w4uf::expand<{kc // 16}, {G}, {group}, {wide_rb}, {wide_plane}>",
                                 T.access_ptr(W_s[s, 0, 0], "r"), T.access_ptr(S_s[seg, 0, 0], "r"), 0, c0 // 2, k,
                                 Wf.data))
        T.gemm(Wf, A_t, accg, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
        for j, m in T.Parallel(WG_ROWS, block_M):
            acc[j, m] = acc[j, m] + accg[j, m] * T.cast(S_s[seg, j, k // group], T.float32)

    @T.macro
    def segment(c, seg, A_s, W_s, S_s, R_s, C_s, F, Wa, Wb, acc, accg, full, empty, C, Wk, L, bx, tx, tile0, a0, e0,
                len1, ns0, ns1):
        """Consumer ``c`` (0 or 1) in segment ``seg`` (0 or 1, both Python ints: the code is written out for each):
        the segment's stages of its parity, then the two consumers' partials added (consumer 1's into consumer 0's
        through shared memory) and, by consumer 0, the meet in global memory."""
        lane = tx % 32
        start = 0 if seg == 0 else ns0
        count = ns0 if seg == 0 else ns1
        first_u = a0 if seg == 0 else 0
        end_u = e0 if seg == 0 else len1
        tile = tile0 + seg
        if count > 0:
            T.clear(acc)
            par = (c + start) % 2  # this consumer's first stage of the segment, counted from its start
            for i in T.serial(T.max(count - par + 1, 0) // 2):
                t = start + par + 2 * i
                s = t % stages
                T.barrier_wait(full[s], t // stages % 2)
                u = first_u + P * (t - start)
                piece(W_s, S_s, seg, Wa, A_s[s, :, 0:kc], acc, accg, s, 0, u * UNIT_K)
                if P == 2:
                    if u + 1 < end_u:
                        piece(W_s, S_s, seg, Wb, A_s[s, :, kc:2 * kc], acc, accg, s, kc, (u + 1) * UNIT_K)
                if lane == 0:
                    T.mbarrier_arrive(empty[s])
            if c == 1:
                T.copy(acc, R_s[seg, :, :])
                T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
            else:
                T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                for j, m in T.Parallel(WG_ROWS, block_M):
                    acc[j, m] = acc[j, m] + R_s[seg, j, m]
                base = tile * ut
                bf = ((base + 1) * B - 1) // U
                nc = ((base + ut) * B - 1) // U - bf + 1
                slot = tile * maxc + bx - bf
                for j, m in T.Parallel(WG_ROWS, block_M):
                    Wk[slot * WG_ROWS + j, m] = acc[j, m]
                T.sync_threads(barrier_id=_BAR_EPI[0], arrive_count=128)
                if tx % 128 == 0:
                    F[0] = T.atomic_add(L[tile], 1, memory_order="acq_rel", return_prev=True)
                T.sync_threads(barrier_id=_BAR_EPI[0], arrive_count=128)
                if F[0] == nc - 1:
                    if tx % 128 == 0:
                        L[tile] = 0  # every contributor has met: ready for the next launch
                    T.clear(acc)
                    for q in T.serial(nc):  # slot order: the same sum whichever block is last
                        for j, m in T.Parallel(WG_ROWS, block_M):
                            acc[j, m] = acc[j, m] + Wk[(tile * maxc + q) * WG_ROWS + j, m]
                    for j, m in T.Parallel(WG_ROWS, block_M):
                        C_s[m, j] = T.cast(acc[j, m], T.float16)
                    T.fence_proxy_async()
                    T.sync_threads(barrier_id=_BAR_EPI[0], arrive_count=128)
                    T.copy(C_s, C[0:block_M, tile * ROWS:tile * ROWS + WG_ROWS])

    @T.macro
    def consumer(c, A_s, W_s, S_s, R_s, C_s, F, Wa, Wb, acc, accg, full, empty, sbar, C, Wk, L, bx, tx, tile0, a0, e0,
                 len1, ns0, ns1):
        """Consumer warpgroup ``c``: its registers, the scales, then each segment in turn."""
        T.inc_max_nreg(CONSUMER_REGS)
        T.barrier_wait(sbar, 0)
        for seg in (0, 1):  # a Python loop: the code is written out for each segment
            segment(c, seg, A_s, W_s, S_s, R_s, C_s, F, Wa, Wb, acc, accg, full, empty, C, Wk, L, bx, tx, tile0, a0,
                    e0, len1, ns0, ns1)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        Bq: T.Tensor((N, K // 2), T.uint8),
        S: T.Tensor((N, G), T.float16),
        C: T.Tensor((M, N), T.float16),
        Wk: T.Tensor(ws_shape, T.float32),
        L: T.Tensor(l_shape, T.int32),
    ):
        with T.Kernel(B, threads=THREADS) as bx:
            T.import_source(_POST_FUSED_SRC)
            A_s = T.alloc_shared((stages, block_M, block_K), T.float16)
            W_s = T.alloc_shared((stages, ROWS, block_K // 2), T.uint8)
            S_s = T.alloc_shared((2, ROWS, G), T.float16)
            C_s = T.alloc_shared((block_M, WG_ROWS), T.float16)
            R_s = T.alloc_shared((2, WG_ROWS, block_M), T.float32)
            F = T.alloc_shared((1,), T.int32)
            W0 = T.alloc_fragment((WG_ROWS, kc), T.float16)
            W0b = T.alloc_fragment((WG_ROWS, kc), T.float16)
            W1 = T.alloc_fragment((WG_ROWS, kc), T.float16)
            W1b = T.alloc_fragment((WG_ROWS, kc), T.float16)
            acc0 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            acc1 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            g0 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            g1 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            T.annotate_layout({A_s: make_swizzled_layout(A_s), W_s: make_swizzled_layout(W_s),
                               C_s: make_swizzled_layout(C_s)})
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([4] * stages)  # lane 0 of each warp of the consumer that read the stage
            sbar = T.alloc_barrier([128])
            tx = T.get_thread_binding()
            # this block's units and its (at most two) segments
            u0 = bx * U // B
            u1 = (bx + 1) * U // B
            tile0 = u0 // ut
            a0 = u0 - tile0 * ut
            e0 = T.min(u1 - tile0 * ut, ut)
            len1 = u1 - tile0 * ut - e0
            ns0 = (e0 - a0 + P - 1) // P
            ns1 = (len1 + P - 1) // P
            if tx < 128:
                T.dec_max_nreg(PRODUCER_REGS)
                T.tma_copy(S[tile0 * ROWS:tile0 * ROWS + ROWS, 0:G], S_s[0, :, :], barrier=sbar)
                t1 = T.min(tile0 + 1, tiles - 1)  # the second segment's tile (its own again when there is none)
                T.tma_copy(S[t1 * ROWS:t1 * ROWS + ROWS, 0:G], S_s[1, :, :], barrier=sbar)
                T.barrier_arrive(sbar)
                for t in T.serial(ns0 + ns1):
                    s = t % stages
                    T.barrier_wait(empty[s], t // stages % 2 ^ 1)
                    n0 = T.if_then_else(t < ns0, tile0, tile0 + 1) * ROWS
                    k0 = T.if_then_else(t < ns0, a0 + P * t, P * (t - ns0)) * UNIT_K
                    T.tma_copy(A[0:block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s])
                    T.tma_copy(Bq[n0:n0 + ROWS, k0 // 2:k0 // 2 + block_K // 2], W_s[s, :, :], barrier=full[s])
                    T.barrier_arrive(full[s])
            elif tx < 256:
                consumer(0, A_s, W_s, S_s, R_s, C_s, F, W0, W0b, acc0, g0, full, empty, sbar, C, Wk, L, bx, tx, tile0,
                         a0, e0, len1, ns0, ns1)
            else:
                consumer(1, A_s, W_s, S_s, R_s, C_s, F, W1, W1b, acc1, g1, full, empty, sbar, C, Wk, L, bx, tx, tile0,
                         a0, e0, len1, ns0, ns1)

    return main


def config(block_M: int = 16, block_K: int = 256, stages: int = 8, blocks: int = 132) -> dict[str, Any]:
    """One configuration as the suites take it (the weights interleaved: ``perm``)."""
    return dict(inst="sk", block_M=block_M, block_K=block_K, stages=stages, blocks=blocks, perm=True)


def label(cfg: dict[str, Any]) -> str:
    return f"sk_m{cfg['block_M']}_k{cfg['block_K']}_s{cfg['stages']}_b{cfg['blocks']}"


def build(M: int, N: int, K: int, group: int, cfg: dict[str, Any], probe: str = "") -> Any:
    """Compile one configuration, wrapped so that it is called ``(A, Bq, S, C)`` (no timing probes)."""
    require(not probe, f"the stream-K decode kernel has no timing probes: got {probe!r}")
    kern = w4a16_sk(M, N, K, group, cfg["block_M"], cfg["block_K"], cfg["stages"], cfg["blocks"])
    return WithWorkspace(kern, *workspace(M, N, K, cfg["blocks"], cfg["block_M"]))
