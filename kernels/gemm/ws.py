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
  released by the consumers of *both* blocks;
* ``store_bufs`` / ``evict_first`` -- the epilogue's TMA store issued without waiting
  (``T.tma_copy``), into staging buffers used in turn, waited on (``T.tma_store_wait``) only when
  its buffer comes round again, optionally with an L2 evict-first hint (for outputs that dominate
  the time, such as attention scores);
* ``cluster_reduce`` (split-K) -- the blocks of one tile's K slices form a thread-block cluster
  and sum their fp32 partials through distributed shared memory instead of a workspace and a
  second kernel;
* ``fixup`` (split-K) -- "the last block reduces": every block stores its fp32 partial chunk to the
  workspace and counts it on a per-chunk counter (an acq_rel atomic); the block that arrives last
  adds the slices in index order and writes C (no second kernel, no waiting on another block).

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


#: Largest portable thread-block cluster (the blocks of one split-K tile under ``cluster_reduce``).
MAX_CLUSTER = 8
#: Threads of one consumer warpgroup, each summing 8 consecutive columns at a time.
_SUM_THREADS = 128
_SUM_VEC = 8


def reduce_vectors(splits: int, epi_cols: int) -> int:
    """8-column vectors one block sums per consumer and chunk under ``cluster_reduce``: its
    ``64 / splits`` rows of the consumer's 64, ``epi_cols`` columns."""
    return (WS_BLOCK_M // 2 // splits) * (epi_cols // _SUM_VEC)


def check_cluster_reduce(splits: int, epi_cols: int) -> None:
    """The cluster sum's work division: every block takes ``64 / splits`` whole rows of a consumer's
    half and the 128 threads of the consumer take whole 8-column vectors, all in equal number."""
    require(splits >= 2 and (WS_BLOCK_M // 2) % splits == 0,
            f"cluster_reduce: splits={splits} must divide the {WS_BLOCK_M // 2} rows of a consumer")
    require(epi_cols % _SUM_VEC == 0, f"cluster_reduce: epi_cols={epi_cols} must be a multiple of {_SUM_VEC}")
    n = reduce_vectors(splits, epi_cols)
    require(n % _SUM_THREADS == 0,
            f"cluster_reduce: {WS_BLOCK_M // 2 // splits} rows x {epi_cols} columns make {n} vectors of "
            f"{_SUM_VEC}, not a multiple of the {_SUM_THREADS} threads of a consumer (raise epi_cols)")


def reduce_slot(rank, v, tid, splits: int, epi_cols: int):
    """(row within the consumer's 64, first column within the chunk) that thread ``tid`` of a consumer
    sums in its ``v``-th step on the block of cluster rank ``rank`` (ints or TIR expressions)."""
    per_row = epi_cols // _SUM_VEC
    idx = v * _SUM_THREADS + tid
    return rank * (WS_BLOCK_M // 2 // splits) + idx // per_row, idx % per_row * _SUM_VEC


#: Device code of the cluster sum: 8 fp32 of the same position in the staging of every block of the
#: cluster (``mapa`` + ``ld.shared::cluster``, two 16-byte halves: the staging is swizzled in 16-byte
#: chunks), summed in rank order (deterministic), written as 8 halves with one 16-byte store.
_CLUSTER_SUM_SRC = r"""
namespace skq {
__device__ __forceinline__ void fence_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }
__device__ __forceinline__ float4 ld_cluster_f4(unsigned addr, int rank) {
  unsigned remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
  return v;
}
template <int S, typename Out>
__device__ __forceinline__ void cluster_sum8(Out* dst, float* lo, float* hi) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(lo));
  unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(hi));
  float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int r = 0; r < S; ++r) {
    float4 x = ld_cluster_f4(a, r);
    float4 y = ld_cluster_f4(b, r);
    s[0] += x.x; s[1] += x.y; s[2] += x.z; s[3] += x.w;
    s[4] += y.x; s[5] += y.y; s[6] += y.z; s[7] += y.w;
  }
  Out o[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) o[i] = Out(s[i]);
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<uint4*>(o);
}
}  // namespace skq
"""


#: Device code of the ``fixup`` epilogue.  The wgmma accumulator of one consumer (64 rows) holds, in
#: thread ``t``'s registers ``acc[4c + 2r + e]``, the element (row ``16 (t / 32) + (t % 32) / 4 + 8r``,
#: column ``8c + 2 (t % 4) + e``); both helpers walk one chunk of ``COLS`` columns in that order, two
#: adjacent columns per access (8-byte fp32 pairs, 4-byte 16-bit pairs).  ``sum_store`` adds the ``S``
#: slices left to right -- its own (``mine``) from the registers, the others read from the workspace at
#: the L2 (``ld.global.cg``, predicated rather than branched around, so the loads of a chunk overlap) --
#: and stores the sum as 16-bit pairs; ``add_slice`` / ``store_sum`` do the same for a number of slices
#: known only at run time (stream-K's tail tiles), one slice per call into a register sum.
_FIXUP_SRC = r"""
namespace skqf {
template <typename Out>
__device__ __forceinline__ void st2(Out* p, float a, float b) {
  Out v[2] = {Out(a), Out(b)};
  *reinterpret_cast<unsigned*>(p) = *reinterpret_cast<unsigned*>(v);
}
// an fp32 pair read at the L2 unless `keep` (then v keeps its value): volatile, so the compiler keeps it
// after the barrier that follows the acquiring count; no branch, so the loads of a chunk overlap
__device__ __forceinline__ void ld2_unless(float2& v, const float* p, int keep) {
  asm volatile("{\n .reg .pred q;\n setp.eq.s32 q, %2, 0;\n @q ld.global.cg.v2.f32 {%0, %1}, [%3];\n}"
               : "+f"(v.x), "+f"(v.y) : "r"(keep), "l"(p) : "memory");
}
template <int COLS>
__device__ __forceinline__ void store_partial(float* dst, int ld, const float* acc, int off, int tid) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      *reinterpret_cast<float2*>(dst + (row + 8 * r) * ld + 8 * c + col) =
          make_float2(acc[off + 4 * c + 2 * r], acc[off + 4 * c + 2 * r + 1]);
}
template <int COLS, int S, typename Out>
__device__ __forceinline__ void sum_store(Out* dst, int ld, const float* part, int slice, const float* acc, int off,
                                          int mine, int tid) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
  float2 sum[COLS / 8][2];
#pragma unroll
  for (int k = 0; k < S; ++k)
#pragma unroll
    for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float2 v = make_float2(acc[off + 4 * c + 2 * r], acc[off + 4 * c + 2 * r + 1]);
        ld2_unless(v, part + k * slice + (row + 8 * r) * ld + 8 * c + col, k == mine);
        if (k == 0) {
          sum[c][r] = v;
        } else {
          sum[c][r].x += v.x;
          sum[c][r].y += v.y;
        }
      }
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) st2(dst + (row + 8 * r) * ld + 8 * c + col, sum[c][r].x, sum[c][r].y);
}
template <int COLS>
__device__ __forceinline__ void add_slice(float* sum, const float* src, int ld, int tid, int first, const float* acc,
                                          int off, int mine) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
  float2 v[COLS / 8][2];
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      v[c][r] = make_float2(acc[off + 4 * c + 2 * r], acc[off + 4 * c + 2 * r + 1]);
      ld2_unless(v[c][r], src + (row + 8 * r) * ld + 8 * c + col, mine);
    }
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float* s = sum + 4 * c + 2 * r;
      if (first == 0) {
        s[0] = v[c][r].x;
        s[1] = v[c][r].y;
      } else {
        s[0] += v[c][r].x;
        s[1] += v[c][r].y;
      }
    }
}
template <int COLS, typename Out>
__device__ __forceinline__ void store_sum(Out* dst, int ld, const float* sum, int tid) {
  const int row = 16 * (tid >> 5) + ((tid & 31) >> 2), col = 2 * (tid & 3);
#pragma unroll
  for (int c = 0; c < COLS / 8; ++c)
#pragma unroll
    for (int r = 0; r < 2; ++r) st2(dst + (row + 8 * r) * ld + 8 * c + col, sum[4 * c + 2 * r], sum[4 * c + 2 * r + 1]);
}
}  // namespace skqf
"""


def fixup_slot(tid: int, c: int, r: int) -> tuple[int, int, int]:
    """(row within the consumer's 64, first of the two columns within the chunk, register index of the
    pair within the chunk) that thread ``tid`` of a consumer stores and sums for 8-column group ``c``,
    row half ``r`` -- the addressing of :data:`_FIXUP_SRC`, in Python for the emulation tests."""
    return 16 * (tid >> 5) + ((tid & 31) >> 2) + 8 * r, 8 * c + 2 * (tid & 3), 4 * c + 2 * r


def stages_ahead(stages: int, inflight: int) -> int:
    """Stages the producer can fill ahead of the consumers: each consumer holds the stage it
    computes on plus the ``inflight`` ones whose wgmma it has not waited for yet."""
    return stages - 1 - inflight


def ws_grid(M: int, N: int, block_N: int, cluster: int) -> tuple[int, int]:
    """(blocks along N, blocks along M): M is padded to whole clusters; a padding block loads
    zeros past the edge and its store is clipped by the TMA descriptor."""
    nm = -(-M // WS_BLOCK_M)
    return -(-N // block_N), -(-nm // cluster) * cluster


def fixup_counters(M: int, N: int, block_N: int, epi_cols: int) -> int:
    """Counters of a ``fixup`` split-K (int32, zero before the first launch, left zero by every
    complete launch): one per chunk of ``epi_cols`` columns of each consumer's 64 rows of each
    128 x ``block_N`` tile (M and N whole tiles)."""
    return (M // WS_BLOCK_M) * (N // block_N) * 2 * (block_N // epi_cols)


def fixup_counter(tile_m, tile_n, wg, h, grid_n: int, n_chunks: int):
    """Index of the counter of chunk ``h`` of consumer ``wg``'s rows of tile (``tile_m``, ``tile_n``)
    (ints or TIR expressions)."""
    return ((tile_m * grid_n + tile_n) * 2 + wg) * n_chunks + h


def _ws_program(M: int, N: int, K: int, *, fp8: bool, block_N: int, block_K: int, stages: int, panel: int,
                cluster: int, inflight: int, epi_cols: int, workers: int, dtype: str = "float16", batch: int = 1,
                groups: int = 0, splits: int = 1, store_bufs: int = 1, evict_first: bool = False,
                cluster_reduce: bool = False, fixup: bool = False, pdl: bool = False):
    """The hand-written pipeline as a TileLang program: fp16 -> fp16 (``fp8=False``) or fp8 e4m3
    with per-tensor scales -> bf16 with two-level accumulation (``fp8=True``: every K block's
    wgmma result is a fresh fp32 partial, promoted into the fp32 accumulator by ordinary adds,
    as ``lowp.fp8_gemm_promoted(promote=1)`` does).  Arguments: see :func:`rung4_ws` and
    :func:`fp8_ws`.  ``store_bufs`` / ``evict_first``: see :func:`rung4_ws`; ``cluster_reduce``: see
    :func:`splitk_ws`; ``pdl``: every thread signals at its start that the next kernel of the stream may
    be scheduled (``griddepcontrol.launch_dependents``, programmatic dependent launch): a second kernel
    that waits for this one with ``T.pdl_sync()`` is then launched while this one runs."""
    require(cluster in (1, 2), f"cluster must be 1 or 2 blocks, got {cluster}")
    require(inflight in (0, 1), f"inflight must be 0 or 1, got {inflight}")
    require(stages >= 2 + inflight, f"stages={stages}: need at least {2 + inflight} with inflight={inflight}")
    require(workers >= 0 and workers % cluster == 0, f"workers={workers} must be a non-negative multiple of cluster={cluster}")
    check_wgmma_n(block_N)
    epi_cols = epi_cols or block_N
    require(block_N % epi_cols == 0, f"epi_cols={epi_cols} must divide block_N={block_N}")
    require(dtype in ("float16", "bfloat16"), f"dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    # batch > 1: M counts the rows of all batches (A and C flattened to [batch * M_b, ...]) and B
    # holds batch stacked [N, K] matrices; a 128-row tile never crosses a batch
    require(batch >= 1 and M % batch == 0 and (batch == 1 or (M // batch) % (WS_BLOCK_M * cluster) == 0),
            f"batch={batch}: the {M} rows must split into batches of a multiple of {WS_BLOCK_M * cluster} rows "
            f"(a tile, or a cluster sharing one B tile, never crosses a batch)")
    rows_b = M // batch
    # groups > 0: a grouped GEMM, B holds `groups` stacked [N, K] weights and a table E gives the
    # group of every 128-row tile (each group's rows padded to whole tiles, or clusters of tiles)
    require(groups >= 0 and (groups == 0 or (batch == 1 and not fp8)),
            f"groups={groups}: the grouped form is fp16/bf16 and not batched")
    # splits > 1: split-K, work item = (tile, K slice); each item stores its fp32 partial into
    # P[split * M + row, col] and a separate reduction adds the slices
    require(splits >= 1 and (splits == 1 or (batch == 1 and groups == 0 and not fp8 and workers > 0)),
            f"splits={splits}: split-K is fp16/bf16, not batched or grouped, and persistent (workers > 0)")
    # store_bufs / evict_first: the epilogue's TMA store issued without a wait (T.tma_copy), waited on
    # only when its staging buffer is about to be reused, into `store_bufs` buffers used in turn
    require(store_bufs in (1, 2), f"store_bufs must be 1 or 2 staging buffers per consumer, got {store_bufs}")
    deferred = store_bufs > 1 or evict_first
    require(not (deferred and (fp8 or splits > 1)),
            "store_bufs/evict_first apply to the fp16/bf16 store of whole tiles (not fp8, not split-K)")
    # cluster_reduce: the `splits` blocks of one tile form a thread-block cluster and sum their fp32
    # partials through distributed shared memory; C is written once, in fp16 (no workspace, no second pass)
    require(not cluster_reduce or (splits > 1 and cluster == 1),
            f"cluster_reduce needs splits > 1 and cluster=1 (the cluster is the split), got splits={splits}, "
            f"cluster={cluster}")
    if cluster_reduce:
        require(splits <= MAX_CLUSTER, f"cluster_reduce: splits={splits} blocks form one cluster, at most {MAX_CLUSTER}")
        require(workers % splits == 0, f"cluster_reduce: workers={workers} must be a multiple of splits={splits}")
        require(M % WS_BLOCK_M == 0 and N % block_N == 0,
                f"cluster_reduce stores C without clipping: M={M} must be a multiple of {WS_BLOCK_M}, "
                f"N={N} of block_N={block_N}")
        check_cluster_reduce(splits, epi_cols or block_N)
    # fixup: "the last block reduces" -- see :func:`splitk_ws`
    require(not fixup or (splits > 1 and not cluster_reduce),
            f"fixup needs splits > 1 and no cluster_reduce, got splits={splits}, cluster_reduce={cluster_reduce}")
    if fixup:
        require(splits * M * N < 2 ** 31, f"fixup: the workspace of {splits} x {M} x {N} must have fewer than 2^31 elements")
        require(M % (WS_BLOCK_M * cluster) == 0 and N % block_N == 0,
                f"fixup stores from registers without clipping: M={M} must be a multiple of "
                f"{WS_BLOCK_M}*cluster = {WS_BLOCK_M * cluster}, "
                f"N={N} of block_N={block_N}")
    half_dtype = T.bfloat16 if dtype == "bfloat16" else T.float16  # 16-bit in and out (fp8: bf16 out)
    in_dtype = T.float8_e4m3fn if fp8 else half_dtype
    out_dtype = T.bfloat16 if fp8 else half_dtype
    half = WS_BLOCK_M // 2
    grid_n, grid_m = ws_grid(M, N, block_N, cluster)
    clusters_m = grid_m // cluster
    n_ctiles = clusters_m * grid_n  # tiles of a whole cluster (cluster x 128 rows, block_N columns)
    n_k = -(-K // block_K)
    require(n_k % splits == 0, f"splits={splits} must divide the {n_k} K blocks of {block_K}")
    n_ks = n_k // splits  # K blocks of one work item
    n_items = n_ctiles * splits
    c_dtype = out_dtype  # the dtype of C (cluster_reduce: fp16/bf16 while the staging is fp32)
    if splits > 1:
        out_dtype = T.float32
    if fp8 and inflight:
        require(n_k % 2 == 0, f"fp8 with inflight=1 alternates two partials: K={K} needs an even number of "
                              f"{block_K}-deep blocks, got {n_k}")
    acc_regs = half * block_N // 128
    persistent = workers > 0
    n_clusters = workers // cluster if persistent else n_ctiles
    if cluster_reduce:  # one cluster of `splits` blocks per tile, rank = K slice
        n_items = n_ctiles
        n_clusters = workers // splits
    rounds = -(-n_items // n_clusters)
    grid = (workers,) if persistent else (grid_n, grid_m)
    cdims = (cluster, 1, 1) if persistent else (1, cluster, 1)
    if cluster_reduce:
        cdims = (splits, 1, 1)
    n_chunks = block_N // epi_cols  # staged stores (or cluster sums) per tile and consumer

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
    def item_of(w, rank, tile):
        """Work item -> tile (and, for split-K, its K slice: item ``w`` is slice ``w // tiles`` of
        cluster tile ``w % tiles``, so the first wave holds every tile's first slice)."""
        if cluster_reduce:
            tile_of(w, 0, tile)
            tile[2] = rank
        elif splits > 1:
            tile_of(w % n_ctiles, rank, tile)
            tile[2] = w // n_ctiles
        else:
            tile_of(w, rank, tile)

    @T.macro
    def release(empty, s):
        if cluster > 1:
            for r in T.serial(cluster):
                T.mbarrier_arrive(empty[s], r)
        else:
            T.mbarrier_arrive(empty[s])

    @T.macro
    def produce(A, B, A0_s, A1_s, B_s, full, empty, tile, g0, E):
        m0 = tile[0] * WS_BLOCK_M
        n0 = tile[1] * block_N
        if batch > 1:
            n0 = n0 + m0 // rows_b * N  # the B rows of this tile's batch
        if groups > 0:
            n0 = n0 + E[tile[0]] * N  # the B rows of this tile's group
        for ko in T.serial(n_ks):
            g = g0 + ko
            s = g % stages
            T.barrier_wait(empty[s], g // stages % 2 ^ 1)
            if splits > 1:
                k0 = (tile[2] * n_ks + ko) * block_K  # this item's K slice
            else:
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
    def issue(A_s, B_s, part, full, g, clear):
        s = g % stages
        T.barrier_wait(full[s], g // stages % 2)
        T.wgmma_gemm(A_s[s, :, :], B_s[s, :, :], part, transpose_B=True,
                     policy=T.GemmWarpPolicy.FullRow, clear_accum=clear)

    @T.macro
    def promote(acc, part):
        for i, j in T.Parallel(half, block_N):
            acc[i, j] += part[i, j]

    @T.macro
    def mainloop_fp16(A_s, B_s, acc, full, empty, g0, lane):
        for ko in T.serial(n_ks):
            issue(A_s, B_s, acc, full, g0 + ko, ko == 0)
            T.wait_wgmma(inflight)
            # release the stage whose wgmma is known to be done (step ko - inflight)
            if ko >= inflight and lane == 0:
                release(empty, (g0 + ko - inflight) % stages)
        T.wait_wgmma(0)
        if inflight > 0 and lane == 0:
            release(empty, (g0 + n_ks - 1) % stages)

    @T.macro
    def mainloop_fp8(A_s, B_s, acc, p0, p1, full, empty, g0, lane):
        T.clear(acc)
        if inflight == 0:
            for ko in T.serial(n_k):
                issue(A_s, B_s, p0, full, g0 + ko, True)
                T.wait_wgmma(0)
                if lane == 0:
                    release(empty, (g0 + ko) % stages)
                promote(acc, p0)
        else:
            # two partials in turn: the adds of step ko - 1 run while step ko's wgmma does
            for kk in T.serial(n_k // 2):
                issue(A_s, B_s, p0, full, g0 + 2 * kk, True)
                T.wait_wgmma(1)
                if kk > 0:
                    if lane == 0:
                        release(empty, (g0 + 2 * kk - 1) % stages)
                    promote(acc, p1)
                issue(A_s, B_s, p1, full, g0 + 2 * kk + 1, True)
                T.wait_wgmma(1)
                if lane == 0:
                    release(empty, (g0 + 2 * kk) % stages)
                promote(acc, p0)
            T.wait_wgmma(0)
            if lane == 0:
                release(empty, (g0 + n_k - 1) % stages)
            promote(acc, p1)

    @T.macro
    def epilogue(acc, C_s, C, SA, SB, tile, wg):
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        if fp8:
            for i, j in T.Parallel(half, block_N):
                acc[i, j] = acc[i, j] * SA[0] * SB[0]
        r0 = tile[0] * WS_BLOCK_M + wg * half
        if splits > 1:
            r0 = r0 + tile[2] * M  # this K slice's partial
        for h in T.unroll(block_N // epi_cols):
            if h > 0 or persistent:  # the previous store has read C_s (its issuing thread waited)
                T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            T.copy(acc[:, h * epi_cols:(h + 1) * epi_cols], C_s)
            T.fence_proxy_async()
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            c0 = tile[1] * block_N + h * epi_cols
            T.copy(C_s, C[r0:r0 + half, c0:c0 + epi_cols])

    @T.macro
    def epilogue_deferred(acc, C_s, C, tile, wg, t):
        """The store of :func:`epilogue` issued by ``T.tma_copy`` (no wait), into ``store_bufs``
        staging buffers used in turn; before a buffer is written again the issuing thread waits until
        at most ``store_bufs - 1`` stores are still reading shared memory."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        r0 = tile[0] * WS_BLOCK_M + wg * half
        for h in T.unroll(n_chunks):
            b = (t * n_chunks + h) % store_bufs
            if h > 0 or persistent:
                T.tma_store_wait(store_bufs - 1)  # only the issuing thread has store groups to wait for
                T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            T.copy(acc[:, h * epi_cols:(h + 1) * epi_cols], C_s[b, :, :])
            T.fence_proxy_async()
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            c0 = tile[1] * block_N + h * epi_cols
            T.tma_copy(C_s[b, :, :], C[r0:r0 + half, c0:c0 + epi_cols],
                       eviction_policy="evict_first" if evict_first else None)

    @T.macro
    def epilogue_cluster(acc, C_s, C, bars, tile, wg, t):
        """Cluster sum of the ``splits`` partials, chunk by chunk: every block stages its fp32 chunk,
        announces it on every block's ``ready`` barrier, and once all have, sums its own
        ``64 / splits`` rows of the chunk from the staging of every block (``ld.shared::cluster``),
        writes them to C in fp16, and frees the peers' staging on their ``done`` barriers."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        tid = T.get_thread_binding() % 128
        r0 = tile[0] * WS_BLOCK_M + wg * half
        for h in T.unroll(n_chunks):
            q = t * n_chunks + h  # chunks staged so far by this consumer: the barriers' phase
            if h > 0:
                T.barrier_wait(bars[2 + wg], (q - 1) % 2)  # every peer has read the previous chunk
            else:
                if t > 0:
                    T.barrier_wait(bars[2 + wg], (q - 1) % 2)
            T.copy(acc[:, h * epi_cols:(h + 1) * epi_cols], C_s)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if tid == 0:  # the warpgroup's staging writes, released to the cluster, then announced
                T.call_extern("handle", "skq::fence_cluster")
                for r in T.serial(splits):
                    T.mbarrier_arrive(bars[wg], r)
            T.barrier_wait(bars[wg], q % 2)
            T.call_extern("handle", "skq::fence_cluster")
            c0 = tile[1] * block_N + h * epi_cols
            for v in T.serial(reduce_vectors(splits, epi_cols) // 128):
                i, j = reduce_slot(tile[2], v, tid, splits, epi_cols)
                T.call_extern("handle", f"skq::cluster_sum8<{splits}>", T.address_of(C[r0 + i, c0 + j]),
                              T.address_of(C_s[i, j]), T.address_of(C_s[i, j + 4]))
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if tid == 0:  # every thread's reads of the peers' staging are done: free it
                T.call_extern("handle", "skq::fence_cluster")
                for r in T.serial(splits):
                    T.mbarrier_arrive(bars[2 + wg], r)

    @T.macro
    def epilogue_fixup(acc, P, C, L, F, tile, wg):
        """The last block reduces, chunk by chunk of ``epi_cols`` columns: store this slice's fp32 chunk
        to ``P`` from registers, then one thread counts it on the chunk's counter in ``L`` (acq_rel:
        it releases the warpgroup's stores, ordered before it by the named barrier, and acquires the
        others'); the arrival that finds ``splits - 1`` earlier ones resets the counter to 0 and,
        after the barrier, adds the slices in index order (its own from registers) and writes C."""
        T.warpgroup_fence_operand(acc, num_regs=acc_regs)
        tid = T.get_thread_binding() % 128
        r0 = tile[0] * WS_BLOCK_M + wg * half
        for h in T.unroll(n_chunks):
            c0 = tile[1] * block_N + h * epi_cols
            T.call_extern("handle", f"skqf::store_partial<{epi_cols}>", T.address_of(P[tile[2] * M + r0, c0]), N,
                          acc.data, h * epi_cols // 2, tid)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if tid == 0:
                F[wg] = T.atomic_add(L[fixup_counter(tile[0], tile[1], wg, h, grid_n, n_chunks)], 1, memory_order="acq_rel", return_prev=True)
            T.sync_threads(barrier_id=_EPILOGUE_BARRIER[wg], arrive_count=128)
            if F[wg] == splits - 1:
                if tid == 0:
                    L[fixup_counter(tile[0], tile[1], wg, h, grid_n, n_chunks)] = 0  # every slice has arrived: ready for the next launch
                T.call_extern("handle", f"skqf::sum_store<{epi_cols}, {splits}>", T.address_of(C[r0, c0]), N,
                              T.address_of(P[r0, c0]), M * N, acc.data, h * epi_cols // 2, tile[2], tid)

    @T.macro
    def consume(A_s, B_s, acc, p0, p1, C_s, C, SA, SB, full, empty, tile, g0, wg, F=None):
        lane = T.get_thread_binding() % 32
        if fp8:
            mainloop_fp8(A_s, B_s, acc, p0, p1, full, empty, g0, lane)
        else:
            mainloop_fp16(A_s, B_s, acc, full, empty, g0, lane)
        if deferred:
            epilogue_deferred(acc, C_s, C, tile, wg, g0 // n_ks)
        elif cluster_reduce:
            epilogue_cluster(acc, C_s, C, SA, tile, wg, g0 // n_ks)
        elif fixup:
            epilogue_fixup(acc, C, SA, SB, F, tile, wg)
        else:
            epilogue(acc, C_s, C, SA, SB, tile, wg)

    @T.macro
    def body(A, B, C, SA, SB, E):
        with T.Kernel(*grid, threads=WS_THREADS, cluster_dims=cdims) as ids:
            A0_s = T.alloc_shared((stages, half, block_K), in_dtype)
            A1_s = T.alloc_shared((stages, half, block_K), in_dtype)
            B_s = T.alloc_shared((stages, block_N, block_K), in_dtype)
            if deferred:
                C0_s = T.alloc_shared((store_bufs, half, epi_cols), out_dtype)
                C1_s = T.alloc_shared((store_bufs, half, epi_cols), out_dtype)
            elif fixup:  # the fix-up stores from registers: no staging
                C0_s = C1_s = None
            else:
                C0_s = T.alloc_shared((half, epi_cols), out_dtype)
                C1_s = T.alloc_shared((half, epi_cols), out_dtype)
            C0_l = T.alloc_fragment((half, block_N), T.float32)
            C1_l = T.alloc_fragment((half, block_N), T.float32)
            if fp8:  # the partials of the two-level accumulation (the second one for inflight=1)
                P0a = T.alloc_fragment((half, block_N), T.float32)
                P1a = T.alloc_fragment((half, block_N), T.float32)
                if inflight:
                    P0b = T.alloc_fragment((half, block_N), T.float32)
                    P1b = T.alloc_fragment((half, block_N), T.float32)
                else:
                    P0b, P1b = P0a, P1a
            else:
                P0a = P1a = P0b = P1b = None
            tile = T.alloc_local((3,) if splits > 1 else (2,), T.int32)
            layouts = {
                A0_s: make_swizzled_layout(A0_s), A1_s: make_swizzled_layout(A1_s),
                B_s: make_swizzled_layout(B_s),
            }
            if not fixup:
                layouts.update({C0_s: make_swizzled_layout(C0_s), C1_s: make_swizzled_layout(C1_s)})
            T.annotate_layout(layouts)
            full = T.alloc_barrier([128] * stages)
            if cluster > 1:
                empty = T.alloc_cluster_barrier([empty_arrivals(cluster)] * stages)
            else:
                empty = T.alloc_barrier([empty_arrivals(1)] * stages)
            if cluster_reduce:  # ready[wg0], ready[wg1], done[wg0], done[wg1]: one arrival per block
                T.import_source(_CLUSTER_SUM_SRC)
                SA = T.alloc_cluster_barrier([splits] * 4)
            F = T.alloc_shared((2,), T.int32) if fixup else None  # each consumer's last count
            if fixup:
                T.import_source(_FIXUP_SRC)
            tx = T.get_thread_binding()
            if pdl:
                T.pdl_trigger()
            if cluster_reduce:
                first_ct = ids // splits
                rank = ids % splits
            elif persistent:
                first_ct = ids // cluster
                rank = ids % cluster
            else:
                bx, by = ids
                first_ct = by // cluster * grid_n + bx
                rank = by % cluster
            if tx < 128:
                T.dec_max_nreg(PRODUCER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_items:
                        item_of(first_ct + t * n_clusters, rank, tile)
                        produce(A, B, A0_s, A1_s, B_s, full, empty, tile, t * n_ks, E)
            elif tx < 256:
                T.inc_max_nreg(CONSUMER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_items:
                        item_of(first_ct + t * n_clusters, rank, tile)
                        consume(A0_s, B_s, C0_l, P0a, P0b, C0_s, C, SA, SB, full, empty, tile, t * n_ks, 0, F)
            else:
                T.inc_max_nreg(CONSUMER_REGS)
                for t in T.serial(rounds):
                    if first_ct + t * n_clusters < n_items:
                        item_of(first_ct + t * n_clusters, rank, tile)
                        consume(A1_s, B_s, C1_l, P1a, P1b, C1_s, C, SA, SB, full, empty, tile, t * n_ks, 1, F)
            if deferred:
                T.tma_store_wait(0)  # no block leaves while a store still reads its shared memory
            if cluster > 1 or cluster_reduce:
                T.cluster_sync()  # no block leaves while its peer may still arrive on its barriers

    if fp8:
        @T.prim_func
        def main_fp8(A: T.Tensor((M, K), T.float8_e4m3fn), B: T.Tensor((N, K), T.float8_e4m3fn),
                     SA: T.Tensor((1,), T.float32), SB: T.Tensor((1,), T.float32),
                     C: T.Tensor((M, N), T.bfloat16)):
            body(A, B, C, SA, SB, None)

        return main_fp8

    if cluster_reduce:
        @T.prim_func
        def main_split_cluster(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype),
                               C: T.Tensor((M, N), c_dtype)):
            body(A, B, C, None, None, None)

        return main_split_cluster

    if fixup:
        @T.prim_func
        def main_split_fixup(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype),
                             P: T.Tensor((splits * M, N), T.float32), C: T.Tensor((M, N), c_dtype),
                             L: T.Tensor((fixup_counters(M, N, block_N, epi_cols),), T.int32)):
            body(A, B, P, C, L, None)

        return main_split_fixup

    if splits > 1:
        @T.prim_func
        def main_split(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype),
                       P: T.Tensor((splits * M, N), T.float32)):
            body(A, B, P, None, None, None)

        return main_split

    if groups > 0:
        @T.prim_func
        def main_grouped(A: T.Tensor((M, K), in_dtype), B: T.Tensor((groups * N, K), in_dtype),
                         E: T.Tensor((grid_m,), T.int32), C: T.Tensor((M, N), out_dtype)):
            body(A, B, C, None, None, E)

        return main_grouped

    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((batch * N, K), in_dtype), C: T.Tensor((M, N), out_dtype)):
        body(A, B, C, None, None, None)

    return main


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
    dtype: str = "float16",
    batch: int = 1,
    store_bufs: int = 1,
    evict_first: bool = False,
):
    """Hand-written warp-specialized rung 4, fp16 (or ``dtype="bfloat16"``) in and out (see the module docstring).

    ``cluster`` = 1 or 2 blocks along M per cluster (2: the B tile is multicast);
    ``inflight`` = wgmma batches a consumer leaves running before it releases a stage
    (0 reproduces the automatic pipeline's ``warpgroup_wait<0>``, 1 keeps one in flight);
    ``panel`` = cluster rows per rasterization panel (0: plain row order);
    ``epi_cols`` = columns of C staged and stored at a time (0: all ``block_N``; half of it
    frees 32 KB of shared memory, room for a fourth stage);
    ``workers`` = 0: one block per tile; > 0: a persistent grid of ``workers`` blocks (one per
    SM) walking the tiles, the producer's ring running on across tile boundaries so the next
    tile's loads overlap the current tile's epilogue;
    ``batch`` > 1 = a batched product: ``M`` rows of all batches, B ``[batch * N, K]``, each
    tile's B rows taken from its batch (``M / batch`` a multiple of 128);
    ``store_bufs`` = staging buffers per consumer: with 2, chunk ``h + 1`` is written to shared
    memory while chunk ``h``'s TMA store still reads the other buffer (the store is issued by
    ``T.tma_copy`` without a wait, and waited on only when its buffer comes round again);
    ``evict_first`` = the store carries an L2 evict-first hint (the output is written once and not
    read back by the kernel; with ``store_bufs=1`` its wait is deferred in the same way).
    """
    extra = {}
    if store_bufs != 1 or evict_first:  # only then: the programs of earlier configurations stay the same
        extra = dict(store_bufs=store_bufs, evict_first=evict_first)
    return _ws_program(M, N, K, fp8=False, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                       cluster=cluster, inflight=inflight, epi_cols=epi_cols, workers=workers, dtype=dtype,
                       batch=batch, **extra)


@tilelang.jit(target=TARGET, pass_configs=WS_PASS_CONFIGS)
def grouped_ws(
    M: int,
    N: int,
    K: int,
    groups: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 4,
    panel: int = 8,
    cluster: int = 1,
    inflight: int = 0,
    epi_cols: int = 128,
    workers: int = 0,
):
    """Grouped GEMM on the hand-written pipeline: ``M`` rows of all groups (each group's rows
    padded to whole 128-row tiles, or ``128 * cluster`` with a cluster), B ``[groups * N, K]``,
    and a table ``E[M / 128]`` (int32) naming the group of every tile; tile ``i`` multiplies its
    rows by ``B[E[i] * N:(E[i] + 1) * N]``.  Other arguments as in :func:`rung4_ws`."""
    return _ws_program(M, N, K, fp8=False, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                       cluster=cluster, inflight=inflight, epi_cols=epi_cols, workers=workers, groups=groups)


@tilelang.jit(target=TARGET, pass_configs=WS_PASS_CONFIGS)
def splitk_ws(
    M: int,
    N: int,
    K: int,
    splits: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 4,
    panel: int = 8,
    cluster: int = 1,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = 132,
    cluster_reduce: bool = False,
    pdl: bool = False,
):
    """Split-K on the hand-written persistent pipeline: ``tiles * splits`` work items, item ``w``
    computing K slice ``w // tiles`` of tile ``w % tiles`` and storing its fp32 partial (TMA) into
    ``P[slice * M + row, col]``; :func:`kernels.gemm.splitk.splitk_reduce` adds the slices and
    casts to fp16.  Other arguments as in :func:`rung4_ws`.

    ``cluster_reduce=True``: the ``splits`` blocks of one tile form a thread-block cluster (block
    rank = K slice, ``workers / splits`` clusters walking the tiles) and, chunk by chunk of
    ``epi_cols`` columns, each sums ``64 / splits`` rows of every consumer's half from the fp32
    staging of all blocks of the cluster (distributed shared memory) and writes them to C ``[M, N]``
    in fp16: no workspace, no second kernel.  Needs ``cluster=1``, M and N whole tiles.

    ``pdl=True``: the kernel lets the reduction be launched while it runs (see :func:`_ws_program`);
    :func:`kernels.gemm.splitk.splitk_reduce` ``(pdl=True)`` waits for it."""
    extra = dict(cluster_reduce=True) if cluster_reduce else {}
    if pdl:
        require(not cluster_reduce, "pdl overlaps the launch of the reduction kernel: cluster_reduce has none")
        extra["pdl"] = True
    return _ws_program(M, N, K, fp8=False, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                       cluster=cluster, inflight=inflight, epi_cols=epi_cols, workers=workers, splits=splits,
                       **extra)


#: The fix-up's partial and C stores come from the accumulator's registers at run-time tile offsets that
#: tilelang cannot bound, so it would guard every element (and store them one by one); the fix-up
#: needs whole tiles (checked when the program is built), so the guards are off for it.
WS_FIXUP_PASS_CONFIGS = {**WS_PASS_CONFIGS, tilelang.PassConfigKey.TL_DISABLE_SAFE_MEMORY_ACCESS: True}


@tilelang.jit(target=TARGET, pass_configs=WS_FIXUP_PASS_CONFIGS)
def splitk_ws_fixup(
    M: int,
    N: int,
    K: int,
    splits: int,
    block_N: int = 256,
    block_K: int = 64,
    stages: int = 4,
    panel: int = 8,
    cluster: int = 1,
    inflight: int = 0,
    epi_cols: int = 64,
    workers: int = 132,
):
    """Split-K on the hand-written persistent pipeline with an in-kernel fix-up, "the last block
    reduces" (arguments as in :func:`splitk_ws`).

    "the last block reduces" -- the kernel takes ``(A, B, P, C, L)``: each item stores
    its fp32 partial chunk by chunk (``epi_cols`` columns of a consumer's 64 rows) from registers into
    the workspace ``P``, and one thread per consumer adds 1 to the chunk's int32 counter in ``L``
    (:func:`fixup_counters` of them) with an acq_rel atomic; the arrival that sees ``splits - 1``
    resets the counter to 0 and writes the chunk of C (fp16): the ``splits`` slices added in index order
    (its own from registers, the others read back from the workspace), so the result does not depend
    on which block comes last.  Nobody waits for
    another block (any number of items per worker is safe).  ``L`` must be zero before the first
    launch (the caller allocates it zeroed); every complete launch leaves it zero.  M a multiple of
    ``128 * cluster``, N of ``block_N``."""
    return _ws_program(M, N, K, fp8=False, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                       cluster=cluster, inflight=inflight, epi_cols=epi_cols, workers=workers, splits=splits,
                       fixup=True)


#: fp8 adds one pass configuration: tilelang's buffer-initialisation check does not see that a
#: ``clear_accum`` wgmma writes the partial it later reads (a false positive), so it is off.
WS_FP8_PASS_CONFIGS = {**WS_PASS_CONFIGS, tilelang.PassConfigKey.TL_DISABLE_BUFFER_INIT_CHECK: True}


@tilelang.jit(target=TARGET, pass_configs=WS_FP8_PASS_CONFIGS)
def fp8_ws(
    M: int,
    N: int,
    K: int,
    block_N: int = 192,
    block_K: int = 128,
    stages: int = 4,
    panel: int = 8,
    cluster: int = 1,
    inflight: int = 0,
    epi_cols: int = 0,
    workers: int = 0,
):
    """The same hand-written pipeline for fp8 e4m3 with per-tensor scales, bf16 out, two-level
    accumulation (the contract of ``torch._scaled_mm`` and of ``lowp.fp8_gemm_promoted``).

    ``inflight=0``: one fp32 partial per consumer, promoted after its wgmma completed (the
    adds of one warpgroup overlap the other warpgroup's wgmma at best); ``inflight=1``: two
    partials used in turn, so a warpgroup's adds of one K block run while its own wgmma of
    the next is in flight (three ``64 x block_N`` fp32 fragments per thread: block_N <= 128
    fits the consumer registers).  Other arguments as in :func:`rung4_ws`.
    """
    return _ws_program(M, N, K, fp8=True, block_N=block_N, block_K=block_K, stages=stages, panel=panel,
                       cluster=cluster, inflight=inflight, epi_cols=epi_cols, workers=workers)
