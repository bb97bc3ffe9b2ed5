"""Rung 4, written by hand: an explicit warp-specialized Hopper GEMM (fp16 in, fp32 accumulate).

The automatic rung 4 (:func:`kernels.gemm.ladder.rung4_annotated`) lets tilelang split the
block into a TMA producer and two wgmma consumers.  Its CUDA shows what it does not do:
every consumer waits for its own wgmma batch to finish (``warpgroup_wait<0>``) before it
releases the stage; its persistent form (:func:`kernels.gemm.ladder.rung4_persistent`) gets
no ``setmaxnreg``; and its multicast (``T.copy_cluster``) releases a stage on the local
consumers' arrivals only (a race, see :func:`kernels.gemm.support.multicast_release`).  Here
the pipeline is written out with tilelang's explicit primitives (``T.tma_copy`` with a
barrier, ``T.wgmma_gemm``, ``T.wait_wgmma``, ``T.alloc_barrier`` /
``T.alloc_cluster_barrier``, ``T.mbarrier_arrive(bar, cta)``), each of those choices a knob:

* ``inflight`` -- wgmma batches a consumer leaves running when it releases a stage (measured
  on the H200: 1 is slower than 0 at three stages, it holds a second stage back);
* ``epi_cols`` -- C staged and stored in column chunks, which frees room for a fourth stage;
* ``workers`` -- a persistent grid, the producer's ring running on across tile boundaries;
* ``cluster`` -- 2 blocks along M share the B tile through a TMA multicast, and a stage is
  released by the consumers of *both* blocks.

Layout of one block (384 threads):

* warpgroup 0 -- producer: waits until a stage is free in every block of the cluster, issues
  the TMA loads of its two 64-row A halves and (cluster rank 0 only, multicast) the B tile;
* warpgroups 1 and 2 -- consumers: rows 0-63 and 64-127 of the 128 x ``block_N`` tile, one
  ``m64n{block_N}k16`` wgmma per 16 columns of K, accumulator in registers;
* epilogue: each consumer casts its rows to fp16, stages them in shared memory and TMA-stores
  them (the descriptor clips ragged edges).

Barriers: ``full[s]`` completes when the 128 producer threads have arrived and the stage's
bytes have landed; ``empty[s]`` completes when lane 0 of every consumer warp of every block in
the cluster has arrived (:func:`empty_arrivals`), so a multicast never overwrites a stage that
the peer block still reads.
"""


from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.gemm.common import TARGET, check_wgmma_n, require

#: Pass configuration of the hand-written kernels: tilelang's automatic warp specialization
#: and its thread-storage syncs are off, the kernel places every barrier itself.
WS_PASS_CONFIGS = {
    "tl.disable_warp_specialized": True,
    tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
}

#: Rows of the block tile (two consumer warpgroups x 64 rows each) and the thread count
#: (one producer + two consumer warpgroups).
WS_BLOCK_M = 128
WS_THREADS = 384
#: Register budgets after ``setmaxnreg`` (multiples of 8; 128 x 40 + 256 x 232 = 64512 of the
#: 65536 registers of an SM, so one block per SM).
PRODUCER_REGS = 40
CONSUMER_REGS = 232
#: Named barrier ids of the two consumers' epilogues (0 is ``__syncthreads``).
_EPILOGUE_BARRIER = (1, 2)


def empty_arrivals(cluster: int) -> int:
    """Arrivals that free one stage: lane 0 of every consumer warp of every block in the cluster."""
    return (WS_THREADS - 128) // 32 * cluster


def ws_grid(M: int, N: int, block_N: int, cluster: int) -> tuple[int, int]:
    """(blocks along N, blocks along M): M is padded to whole clusters; a padding block loads
    zeros past the edge and its store is clipped by the TMA descriptor."""
    nm = -(-M // WS_BLOCK_M)
    return -(-N // block_N), -(-nm // cluster) * cluster


@tilelang.jit(target=TARGET, pass_configs=WS_PASS_CONFIGS)
def rung4_ws(
    M: int,
    N: int,
    K: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 3,
    panel: int = 8,
    cluster: int = 1,
    inflight: int = 1,
    epi_cols: int = 0,
    workers: int = 0,
):
    """Hand-written warp-specialized rung 4 (see the module docstring).

    ``cluster`` = 1 or 2 blocks along M per cluster (2: the B tile is multicast);
    ``inflight`` = wgmma batches a consumer leaves running before it releases a stage
    (0 reproduces the automatic pipeline's ``warpgroup_wait<0>``, 1 keeps one in flight);
    ``panel`` = cluster rows per rasterization panel (0: plain row order);
    ``epi_cols`` = columns of C staged and stored at a time (0: all ``block_N``; half of it
    frees 32 KB of shared memory, room for a fourth stage);
    ``workers`` = 0: one block per tile; > 0: a persistent grid of ``workers`` blocks (one per
    SM) walking the tiles, the producer's ring running on across tile boundaries so the next
    tile's loads overlap the current tile's epilogue.
    """
    require(cluster in (1, 2), f"cluster must be 1 or 2 blocks, got {cluster}")
    require(inflight in (0, 1), f"inflight must be 0 or 1, got {inflight}")
    require(stages >= 2 + inflight, f"stages={stages}: need at least {2 + inflight} with inflight={inflight}")
    require(workers >= 0 and workers % cluster == 0, f"workers={workers} must be a non-negative multiple of cluster={cluster}")
    check_wgmma_n(block_N)
    epi_cols = epi_cols or block_N
    require(block_N % epi_cols == 0, f"epi_cols={epi_cols} must divide block_N={block_N}")
    half = WS_BLOCK_M // 2
    grid_n, grid_m = ws_grid(M, N, block_N, cluster)
    clusters_m = grid_m // cluster
    n_ctiles = clusters_m * grid_n  # tiles of a whole cluster (cluster x 128 rows, block_N columns)
    n_k = -(-K // block_K)
    acc_regs = half * block_N // 128
    persistent = workers > 0
    n_clusters = workers // cluster if persistent else n_ctiles
    rounds = -(-n_ctiles // n_clusters)
    grid = (workers,) if persistent else (grid_n, grid_m)
    cdims = (cluster, 1, 1) if persistent else (1, cluster, 1)

    @T.macro
    def tile_of(ct, rank, tile):
        """Cluster tile -> (M block, N block): panels of ``panel`` cluster rows walked column
        by column, so the tiles in flight at one time share A rows and B columns in L2; the
        blocks of a cluster get the same N block and adjacent M blocks."""
        if panel > 0:
            width = panel * grid_n
            first = ct // width * panel
            rows = T.min(panel, clusters_m - first)
            tile[0] = (first + ct % width % rows) * cluster + rank
            tile[1] = ct % width // rows
        else:
            tile[0] = ct // grid_n * cluster + rank
            tile[1] = ct % grid_n

    @T.macro
    def release(empty, s):
        if cluster > 1:
            for r in T.serial(cluster):
                T.mbarrier_arrive(empty[s], r)
        else:
            T.mbarrier_arrive(empty[s])

    @T.macro
    def produce(A, B, A0_s, A1_s, B_s, full, empty, tile, g0):
        m0 = tile[0] * WS_BLOCK_M
        n0 = tile[1] * block_N
        for ko in T.serial(n_k):
            g = g0 + ko
            s = g % stages
            T.barrier_wait(empty[s], g // stages % 2 ^ 1)
            k0 = ko * block_K
            T.tma_copy(A[m0:m0 + half, k0:k0 + block_K], A0_s[s, :, :], barrier=full[s])
            T.tma_copy(A[m0 + half:m0 + WS_BLOCK_M, k0:k0 + block_K], A1_s[s, :, :], barrier=full[s])
            if cluster > 1:
                T.tma_copy(B[n0:n0 + block_N, k0:k0 + block_K], B_s[s, :, :], barrier=full[s],
                           cluster_mask=(1 << cluster) - 1)
            else:
                T.tma_copy(B[n0:n0 + block_N, k0:k0 + block_K], B_s[s, :, :], barrier=full[s])
            T.barrier_arrive(full[s])

    @T.macro
    def consume(A_s, B_s, C_l, C_s, C, full, empty, tile, g0, wg):
        lane = T.get_thread_binding() % 32
        for ko in T.serial(n_k):
            g = g0 + ko
            s = g % stages
            T.barrier_wait(full[s], g // stages % 2)
            T.wgmma_gemm(A_s[s, :, :], B_s[s, :, :], C_l, transpose_B=True,
                         policy=T.GemmWarpPolicy.FullRow, clear_accum=ko == 0)
            T.wait_wgmma(inflight)
            # release the stage whose wgmma is known to be done (step ko - inflight)
            if ko >= inflight and lane == 0:
                release(empty, (g - inflight) % stages)
        T.wait_wgmma(0)
        if inflight > 0 and lane == 0:
            release(empty, (g0 + n_k - 1) % stages)
        T.warpgroup_fence_operand(C_l, num_regs=acc_regs)
        r0 = tile[0] * WS_BLOCK_M + wg * half
        for h in T.unroll(block_N // epi_cols):
            if h > 0 or persistent:  # the previous store has read C_s (its issuing thread waited)
                T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            T.copy(C_l[:, h * epi_cols:(h + 1) * epi_cols], C_s)
            T.fence_proxy_async()
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            c0 = tile[1] * block_N + h * epi_cols
            T.copy(C_s, C[r0:r0 + half, c0:c0 + epi_cols])

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(*grid, threads=WS_THREADS, cluster_dims=cdims) as ids:
            A0_s = T.alloc_shared((stages, half, block_K), T.float16)
            A1_s = T.alloc_shared((stages, half, block_K), T.float16)
            B_s = T.alloc_shared((stages, block_N, block_K), T.float16)
            C0_s = T.alloc_shared((half, epi_cols), T.float16)
            C1_s = T.alloc_shared((half, epi_cols), T.float16)
            C0_l = T.alloc_fragment((half, block_N), T.float32)
            C1_l = T.alloc_fragment((half, block_N), T.float32)
            tile = T.alloc_local((2,), T.int32)
            T.annotate_layout({
                A0_s: make_swizzled_layout(A0_s), A1_s: make_swizzled_layout(A1_s),
                B_s: make_swizzled_layout(B_s),
                C0_s: make_swizzled_layout(C0_s), C1_s: make_swizzled_layout(C1_s),
            })
            full = T.alloc_barrier([128] * stages)
            if cluster > 1:
                empty = T.alloc_cluster_barrier([empty_arrivals(cluster)] * stages)
            else:
                empty = T.alloc_barrier([empty_arrivals(1)] * stages)
            tx = T.get_thread_binding()
            if persistent:
                first_ct = ids // cluster
                rank = ids % cluster
            else:
                bx, by = ids
                first_ct = by // cluster * grid_n + bx
                rank = by % cluster
            if tx < 128:
                T.dec_max_nreg(PRODUCER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_ctiles:
                        tile_of(first_ct + t * n_clusters, rank, tile)
                        produce(A, B, A0_s, A1_s, B_s, full, empty, tile, t * n_k)
            elif tx < 256:
                T.inc_max_nreg(CONSUMER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_ctiles:
                        tile_of(first_ct + t * n_clusters, rank, tile)
                        consume(A0_s, B_s, C0_l, C0_s, C, full, empty, tile, t * n_k, 0)
            else:
                T.inc_max_nreg(CONSUMER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_ctiles:
                        tile_of(first_ct + t * n_clusters, rank, tile)
                        consume(A1_s, B_s, C1_l, C1_s, C, full, empty, tile, t * n_k, 1)
            if cluster > 1:
                T.cluster_sync()  # no block leaves while its peer may still arrive on its barriers

    return main
