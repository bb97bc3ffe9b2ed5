"""W4A16 for decode batches (M <= 16): a TMA ring of packed weights, word-wide expansion into mma.sync.

Same operands as :mod:`kernels.gemm.w4a16` (``C[M, N] = A[M, K] @ W[N, K]^T``; int4 two per byte,
low nibble = even k, offset-binary ``q = w + 8``, ``[N, K/2]`` uint8; one fp16 scale per 128 k of
each weight row).  It joins the two halves of the other kernels that worked:

* **The load path of** :mod:`kernels.gemm.w4a16`: one producer warp copies the packed weights by
  TMA into a ring of shared memory (``stages`` slots, each ``gps`` groups of 128 k of the block's
  ``rows`` weight rows), each slot completing on its mbarrier (expect-tx); the consumer warps
  release a slot (one arrival per warp) once they have read it.  The copy engine, not the LSU,
  moves the weights (the decode kernel's per-thread loads queue at the LSU).
* **The ALU path of** :mod:`kernels.gemm.w4a16_dec`: each consumer warp owns 16 weight rows (mma's
  M) and expands them word-wide straight from shared memory into the A fragments of
  ``mma.sync.m16n8k16``; the activations (``8 * nt`` rows, zeros past M) are the n8 operand.

**Shared-memory layout without swizzle.**  A slot holds one plane per 128-k group,
``W_s[slot, group, rows, 64 bytes]``, each filled by one 2-D TMA copy (box ``rows x 64`` bytes, no
swizzle).  Thread ``(g, t) = (lane / 4, lane % 4)`` reads with one 128-bit load the 16 bytes at row
``g`` (and ``g + 8``), offset ``16 t``: with a 64-byte row stride the 8 threads of a 128-bit phase
hit 8 distinct 16-byte bank groups.

**Expansion in natural k order.**  mma step ``i`` (``i = 0..7`` within a group) gives thread ``t``
the physical ``k = 32 t + 4 i + {0, 1, 2, 3}``: its bytes ``2 i`` (k ``32t+4i``, ``+1``) and ``2 i + 1``
(``+2``, ``+3``).  The m16n8k16 fragments pair logical ``k = 2t + {0, 1}`` (``a0``, ``a1``, ``b0``) and
``2t + 8 + {0, 1}`` (``a2``, ``a3``, ``b1``) of the thread that holds them; mapping them to the physical
``32t + 4i + {0, 1}`` and ``32t + 4i + {2, 3}`` is a bijection inside each mma and the same for A and B,
so every product pairs a weight and an activation of the same k (the sum only changes order).
One byte becomes the fp16 pair ``(q_lo - 8, q_hi - 8)`` in three instructions (:data:`EXPAND`):
``prmt`` copies it into byte lanes 0 and 2 and the byte 0x64 into lanes 1 and 3, one ``lop3``
(``& 0x64F0640F``) leaves ``(1024 + q_lo, 1024 + 16 q_hi)``, and one ``fma.rn.f16x2`` with ``(1, 1/16)``
and ``(-1032, -72)`` gives ``(q_lo - 8, q_hi - 8)``: small integers, exact in every step.  The three
constants the instructions take as registers are read from shared memory once per group (given as
literals, ptxas re-created the fma's constant before every use: ~25 more instructions a group).  The B fragment of step ``i`` is ``A[g][32t+4i .. +3]``, four
consecutive halves: the activation tile needs no pair permutation (the decode kernel's ``pair_up``).

**Activations resident, K split over a cluster.**  A block's activation slice (``8 nt`` rows of
``K / split``) is filled once from global memory (while the first weight slots are in flight) in
the decode kernel's padded layout: ``k = 32t + 8j + e`` of a group stored at ``32j + 8t + e``, so a
thread's 128-bit load ``j`` is the B fragments of steps ``2j`` and ``2j + 1`` and the 8 threads of a
phase hit 8 distinct bank groups.  ``split`` blocks along K of one weight tile form a cluster and
block 0 adds the others' fp32 partials through distributed shared memory (as the decode kernel).
The scales of the block (``rows x K/split/128``) are copied into shared memory with the fill;
``acc += s * sum((q - 8) * a)`` per group in fp32, rows ``g`` and ``g + 8`` with their own scale.

Knobs: ``rows`` (weight rows per block, 16 per consumer warp), ``split`` (blocks along K = cluster
size), ``stages`` (ring slots), ``gps`` (128-k groups per slot), ``nt`` (n8 tiles of activations:
1 for M <= 8, 2 for M <= 16).  Timing probe ``loadonly``: the same ring, waits and shared-memory
reads of the weights, no expansion and no mma (wrong results): the load path alone.
"""

from typing import Any

import tilelang
import tilelang.language as T

from kernels.common import SMEM_PER_BLOCK
from kernels.gemm.common import TARGET, require

#: The scale group this kernel is written for (one TMA plane = one 128-k group of every row).
GROUP = 128
#: Packed bytes of one group of one row: the plane's row stride.
PLANE_ROW = GROUP // 2
#: Largest portable thread-block cluster.
MAX_CLUSTER = 8
#: Shared memory one block may use on an H100/H200 SM (bytes, from the ledger's machine model), and one SM holds in all.
SMEM_LIMIT = SMEM_PER_BLOCK
SMEM_SM = 233472
#: halves of padding per activation row (64 bytes: consecutive rows start 4 bank groups apart).
A_PAD = 32
#: The TMA box is at most 256 rows.
MAX_ROWS = 256

TMA_PASS_CONFIGS = {
    "tl.disable_warp_specialized": True,
    tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
}

#: Device helpers (CUDA, inlined): the expansion of one byte, the work on one ring slot, the
#: epilogue into shared memory and the cluster sum.
_SRC = r"""
namespace w4t {
__device__ __forceinline__ float h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// byte B of w, two int4 (low nibble = even k) as the fp16 pair (q_lo - 8, q_hi - 8), exact: prmt takes the
// byte into lanes 0 and 2 and 0x64 (from `magic`) into lanes 1 and 3, one lop3 keeps (1024 + q_lo,
// 1024 + 16 q_hi), and fma.rn.f16x2 scales by (1, 1/16) and adds (-1032, -72)
template <int B>
__device__ __forceinline__ unsigned expand(unsigned w, unsigned magic, unsigned mul, unsigned add) {
  const unsigned x = __byte_perm(w, magic, @SEL@u | B | (B << 8)) & @MASK@u;
  unsigned d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(mul), "r"(add));
  return d;
}
// the expansion's constants (MAGIC, MUL, ADD), read from shared memory by the main loop: values the
// compiler cannot see stay in registers (as immediates, ptxas re-creates them before every fma)
__device__ __shared__ unsigned kconst[4];
// the fill of the activation slice (M rows of KS halves from A, row stride K; rows M..BM-1 zeros): the
// 8 halves k = 32t + 8j + 0..7 of each 128-k group go to 32j + 8t (rows of LDA halves); 16-byte loads,
// BATCH in flight per thread
template <int M, int BM, int KS, int K, int LDA, int NTHR>
__device__ __forceinline__ void fill(const void* src, void* dst) {
  const uint4* g = (const uint4*)src;
  unsigned short* a = (unsigned short*)dst;
  constexpr int QR = KS / 8, CH = M * QR, IT = (CH + NTHR - 1) / NTHR, BATCH = 8;
  if (threadIdx.x == 0) {
    kconst[0] = @MAGIC@u; kconst[1] = @MUL@u; kconst[2] = @ADD@u; kconst[3] = 0u;
  }
#pragma unroll
  for (int i0 = 0; i0 < IT; i0 += BATCH) {
    uint4 v[BATCH];
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int idx = threadIdx.x + (i0 + b) * NTHR;
      if (i0 + b < IT && idx < CH) v[b] = __ldg(g + (idx / QR) * (K / 8) + idx % QR);
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int idx = threadIdx.x + (i0 + b) * NTHR, q = idx % QR;
      if (i0 + b < IT && idx < CH)
        *(uint4*)(a + (idx / QR) * LDA + (q / 16) * 128 + (q % 4) * 32 + ((q / 4) % 4) * 8) = v[b];
    }
  }
  for (int idx = threadIdx.x; idx < (BM - M) * QR; idx += NTHR)
    *(uint4*)(a + (M + idx / QR) * LDA + (idx % QR) * 8) = make_uint4(0u, 0u, 0u, 0u);
}
__device__ __forceinline__ void mma(float* c, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// one ring slot for this warp's 16 rows: GPS planes of ROWS x 64 bytes (ws = plane 0, the warp's row 0),
// activations at a (group 0 of the slot, row 0; LDA halves a row), scales at sc (the warp's row 0, the
// slot's group 0; GB halves a row); acc[NT][4] accumulates.  PROBE = 1: the weight words are read from
// shared memory and folded into acc[0] (no expansion, no mma; wrong results): the load path alone.
template <int GPS, int NT, int LDA, int GB, int ROWS, int PROBE>
__device__ __forceinline__ void slot(const void* ws, const void* ab, const void* sb, float* acc) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned char* w = (const unsigned char*)ws;
  const unsigned short* a = (const unsigned short*)ab;
  const unsigned short* sc = (const unsigned short*)sb;
#pragma unroll
  for (int p = 0; p < GPS; ++p) {
    const uint4 w0 = *(const uint4*)(w + p * ROWS * 64 + g * 64 + 16 * t);
    const uint4 w1 = *(const uint4*)(w + p * ROWS * 64 + (g + 8) * 64 + 16 * t);
    if constexpr (PROBE == 1) {
      acc[0] += (float)((w0.x ^ w0.y ^ w0.z ^ w0.w ^ w1.x ^ w1.y ^ w1.z ^ w1.w) & 1u);
      continue;
    }
    const float s0 = h2f(sc[g * GB + p]), s1 = h2f(sc[(g + 8) * GB + p]);
    const unsigned r0[4] = {w0.x, w0.y, w0.z, w0.w}, r1[4] = {w1.x, w1.y, w1.z, w1.w};
    unsigned mg, ml, ad, k3;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(mg), "=r"(ml), "=r"(ad), "=r"(k3)
                 : "r"((unsigned)__cvta_generic_to_shared(kconst)));
    float tmp[NT][4], tmq[NT][4];  // two accumulator chains (steps 2j and 2j + 1): half the mma latency chain
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) tmp[n][c] = tmq[n][c] = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // word j = bytes 4j..4j+3: step 2j (bytes 0, 1 of the word) and step 2j+1 (bytes 2, 3)
      const unsigned e00 = expand<0>(r0[j], mg, ml, ad), e01 = expand<1>(r0[j], mg, ml, ad),
                     e02 = expand<2>(r0[j], mg, ml, ad), e03 = expand<3>(r0[j], mg, ml, ad);
      const unsigned e10 = expand<0>(r1[j], mg, ml, ad), e11 = expand<1>(r1[j], mg, ml, ad),
                     e12 = expand<2>(r1[j], mg, ml, ad), e13 = expand<3>(r1[j], mg, ml, ad);
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        // k = 32t + 8j + 0..7 of activation row 8n + g, stored at 32j + 8t of the group
        const uint4 x = *(const uint4*)(a + (8 * n + g) * LDA + p * 128 + 32 * j + 8 * t);
        mma(tmp[n], e00, e10, e01, e11, x.x, x.y);
        mma(tmq[n], e02, e12, e03, e13, x.z, x.w);
      }
    }
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      acc[4 * n + 0] += s0 * (tmp[n][0] + tmq[n][0]); acc[4 * n + 1] += s0 * (tmp[n][1] + tmq[n][1]);
      acc[4 * n + 2] += s1 * (tmp[n][2] + tmq[n][2]); acc[4 * n + 3] += s1 * (tmp[n][3] + tmq[n][3]);
    }
  }
  __syncwarp();  // every lane has read the slot before lane 0 releases it
}
// the warp's accumulators into its 16 rows of the partial tile (LDP floats a row)
template <int NT, int LDP>
__device__ __forceinline__ void put(const float* acc, float* pw) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    pw[g * LDP + 8 * n + 2 * t] = acc[4 * n + 0];
    pw[g * LDP + 8 * n + 2 * t + 1] = acc[4 * n + 1];
    pw[(g + 8) * LDP + 8 * n + 2 * t] = acc[4 * n + 2];
    pw[(g + 8) * LDP + 8 * n + 2 * t + 1] = acc[4 * n + 3];
  }
}
// block rank 0 of the cluster: q[i] += the same element of ranks 1..NR-1 (distributed shared memory)
template <int NR, int NE>
__device__ __forceinline__ void cluster_add(float* q) {
  const unsigned base = (unsigned)__cvta_generic_to_shared(q);
  for (int i = threadIdx.x; i < NE; i += blockDim.x) {
    float v = q[i];
#pragma unroll
    for (int r = 1; r < NR; ++r) {
      unsigned remote;
      float x;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(base + 4 * i), "r"(r));
      asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(remote));
      v += x;
    }
    q[i] = v;
  }
}
}  // namespace w4t
"""

#: The constants of the expansion (``w4t::expand``), one source for the CUDA text and the CPU
#: emulation test: ``prmt(w, MAGIC, SEL | b | b << 8)`` puts byte ``b`` into lanes 0 and 2 and 0x64 into
#: lanes 1 and 3; ``& MASK`` keeps ``(1024 + q_lo, 1024 + 16 q_hi)`` as fp16; ``fma`` with ``MUL`` =
#: fp16 ``(1, 1/16)`` and ``ADD`` = fp16 ``(-1032, -72)`` (low half first) gives ``(q_lo - 8, q_hi - 8)``.
EXPAND = {"SEL": 0x7050, "MAGIC": 0x64006400, "MASK": 0x64F0640F, "MUL": 0x2C003C00, "ADD": 0xD480E408}
for _k, _v in EXPAND.items():
    _SRC = _SRC.replace(f"@{_k}@", f"0x{_v:08X}")


def grid(N: int, *, rows: int, split: int) -> tuple[int, int]:
    """(blocks along K = the cluster, blocks along N)."""
    return split, N // rows


def threads(rows: int) -> int:
    """One consumer warp per 16 weight rows and one producer warp."""
    return 32 * (rows // 16 + 1)


def smem_bytes(K: int, *, nt: int, rows: int, split: int, stages: int, gps: int) -> int:
    """Shared memory of one block, from the ledger (:func:`ledger.w4a16.tma_smem_bytes`)."""
    from ledger.w4a16 import tma_smem_bytes

    return tma_smem_bytes(K, nt=nt, rows=rows, split=split, stages=stages, gps=gps, pad=A_PAD)


def blocks_per_sm(K: int, *, nt: int, rows: int, split: int, stages: int, gps: int) -> int:
    """Blocks one SM holds (:func:`ledger.w4a16.tma_resident`: shared memory, and registers at the design's
    budget a thread); the kernel asks ptxas for registers to match (``__launch_bounds__``)."""
    from ledger.w4a16 import tma_resident

    return tma_resident(smem_bytes(K, nt=nt, rows=rows, split=split, stages=stages, gps=gps), threads(rows))


def check_config(M: int, N: int, K: int, *, group: int, rows: int, split: int, stages: int, gps: int,
                 nt: int) -> None:
    """Every constraint of one configuration, each failure naming it (ValueError)."""
    for name, v in (("M", M), ("N", N), ("K", K), ("rows", rows), ("split", split), ("stages", stages),
                    ("gps", gps), ("nt", nt)):
        require(isinstance(v, int) and not isinstance(v, bool) and v > 0, f"{name}={v} must be a positive integer")
    require(group == GROUP, f"the TMA decode kernel is written for scale group {GROUP} (one TMA plane per 128-k "
                            f"group), got group={group}")
    require(nt in (1, 2), f"nt={nt}: 1 (M <= 8) or 2 (M <= 16) n8 tiles of activations")
    require(M <= 8 * nt, f"M={M} exceeds the {8 * nt} activation rows of nt={nt} (the TMA decode kernel is for "
                         f"M <= 16)")
    require(rows % 16 == 0 and rows <= MAX_ROWS,
            f"rows={rows} must be a multiple of 16 (one consumer warp each) and <= {MAX_ROWS} (the TMA box)")
    require(N % rows == 0, f"N={N} must be a multiple of the {rows} weight rows of a block")
    require(split <= MAX_CLUSTER, f"split={split}: the blocks of one weight tile form a cluster of at most "
                                  f"{MAX_CLUSTER}")
    require(stages >= 2, f"stages={stages}: the ring needs >= 2 slots")
    require(K % (GROUP * split * gps) == 0,
            f"K={K} must be a multiple of {GROUP} x split={split} x gps={gps} = {GROUP * split * gps} "
            f"(every ring slot holds gps whole 128-k groups of the block's K slice)")
    sm = smem_bytes(K, nt=nt, rows=rows, split=split, stages=stages, gps=gps)
    require(sm <= SMEM_LIMIT, f"{sm} bytes of shared memory exceed the {SMEM_LIMIT} a block may use "
                              f"(lower stages, gps or raise split)")


PROBES = ("", "loadonly")


def _program(M: int, N: int, K: int, *, group: int, rows: int, split: int, stages: int, gps: int, nt: int,
             probe: str = ""):
    check_config(M, N, K, group=group, rows=rows, split=split, stages=stages, gps=gps, nt=nt)
    require(probe in PROBES, f"probe must be one of {PROBES}, got {probe!r}")
    KP = K // 2
    BM = 8 * nt
    KS = K // split  # K of one block
    GB = KS // GROUP  # groups (scales) of one block's row
    n_slot = GB // gps  # ring slots the block consumes
    LDA = KS + A_PAD
    LDP = BM + 1
    WN = rows // 16
    nthr = threads(rows)
    gs, gn = grid(N, rows=rows, split=split)
    bps = blocks_per_sm(K, nt=nt, rows=rows, split=split, stages=stages, gps=gps)
    slot = f"w4t::slot<{gps}, {nt}, {LDA}, {GB}, {rows}" + (", 1>" if probe else ", 0>")
    put = f"w4t::put<{nt}, {LDP}>"
    fillf = f"w4t::fill<{M}, {BM}, {KS}, {K}, {LDA}, {nthr}>"
    csum = f"w4t::cluster_add<{split}, {rows * LDP}>"
    first = min(stages, n_slot)  # slots the producer fills before the activation tile

    @T.macro
    def store(P_s, C, n0):
        for m, r in T.Parallel(BM, rows):
            if m < M:
                C[m, n0 + r] = T.cast(P_s[r, m], T.float16)

    @T.macro
    def fill_slot(Bq, W_s, full, n0, k0, u):
        s = u % stages
        for p in T.unroll(gps):
            kb = (k0 + (u * gps + p) * GROUP) // 2
            T.tma_copy(Bq[n0:n0 + rows, kb:kb + PLANE_ROW], W_s[s, p, :, :], barrier=full[s])
        T.barrier_arrive(full[s])

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        Bq: T.Tensor((N, KP), T.uint8),
        S: T.Tensor((N, K // GROUP), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(gs, gn, threads=nthr, cluster_dims=(split, 1, 1)) as (bz, bx):
            T.import_source(_SRC)
            if bps > 1:
                T.annotate_min_blocks_per_sm(bps)
            W_s = T.alloc_shared((stages, gps, rows, PLANE_ROW), T.uint8)
            A_s = T.alloc_shared((BM, LDA), T.float16)
            S_s = T.alloc_shared((rows, GB), T.float16)
            P_s = T.alloc_shared((rows, LDP), T.float32)
            full = T.alloc_barrier([32] * stages)  # the producer warp's 32 arrivals + the bytes
            empty = T.alloc_barrier([WN] * stages)  # lane 0 of every consumer warp
            acc = T.alloc_local((4 * nt,), T.float32)
            tx = T.get_thread_binding()
            cw = tx // 32 - 1  # consumer warp cw (1..WN are consumers) owns rows 16 cw .. 16 cw + 15
            n0 = bx * rows
            k0 = bz * KS
            # the producer is warp 0 (tx < 32): tilelang's elected TMA issuer is lane 0 of a warp whose index
            # is a multiple of the thread extent it infers for the branch (the whole block for a test of
            # tx // 32 against another warp, so a last-warp producer would never issue its copies)
            if tx < 32:  # the producer warp: the first slots are in flight while the tile is filled
                for u in T.serial(first):
                    fill_slot(Bq, W_s, full, n0, k0, u)
            # activation rows (zeros past M), each 128-k group stored with k = 32t + 8j + e at 32j + 8t + e
            T.evaluate(T.call_extern("handle", fillf, T.access_ptr(A[0, k0], "r"), T.access_ptr(A_s[0, 0], "w")))
            for r, c in T.Parallel(rows, GB):
                S_s[r, c] = S[n0 + r, bz * GB + c]
            T.sync_threads()
            if tx < 32:
                for u in T.serial(first, n_slot):
                    s = u % stages
                    T.barrier_wait(empty[s], u // stages % 2 ^ 1)
                    fill_slot(Bq, W_s, full, n0, k0, u)
            else:
                for c in T.unroll(4 * nt):
                    acc[c] = T.float32(0)
                for u in T.serial(n_slot):
                    s = u % stages
                    T.barrier_wait(full[s], u // stages % 2)
                    T.evaluate(T.call_extern("handle", slot, T.access_ptr(W_s[s, 0, 16 * cw, 0], "r"),
                                             T.access_ptr(A_s[0, u * gps * GROUP], "r"),
                                             T.access_ptr(S_s[16 * cw, u * gps], "r"), acc.data))
                    if tx % 32 == 0:
                        T.mbarrier_arrive(empty[s])
                T.evaluate(T.call_extern("handle", put, acc.data, T.access_ptr(P_s[16 * cw, 0], "w")))
            T.sync_threads()
            if split > 1:
                T.cluster_sync()  # every partial of the tile is in its block's shared memory
                if bz == 0:
                    T.evaluate(T.call_extern("handle", csum, T.access_ptr(P_s[0, 0], "rw")))
                    T.sync_threads()
                    store(P_s, C, n0)
                T.cluster_sync()  # no block leaves while block 0 may still read its shared memory
            else:
                store(P_s, C, n0)

    return main


@tilelang.jit(target=TARGET, pass_configs=TMA_PASS_CONFIGS)
def w4a16_tma(M: int, N: int, K: int, group: int = GROUP, rows: int = 128, split: int = 2, stages: int = 4,
              gps: int = 2, nt: int = 2, probe: str = ""):
    """W4A16 for M <= 16 (see the module docstring); ``probe="loadonly"``: the timing probe."""
    return _program(M, N, K, group=group, rows=rows, split=split, stages=stages, gps=gps, nt=nt, probe=probe)


def config(rows: int, split: int, stages: int, gps: int, nt: int = 0) -> dict[str, Any]:
    """One configuration as the suite's tables take it (``inst="tma"`` routes it here); ``nt=0``:
    one n8 tile of activations for M <= 8, two for M <= 16."""
    return dict(inst="tma", rows=rows, split=split, stages=stages, gps=gps, nt=nt)


def label(cfg: dict[str, Any]) -> str:
    """Short printable name: ``tma`` then ``r`` rows, ``sk`` blocks along K (the cluster), ``st`` ring
    slots, ``g`` groups per slot, ``nt`` n8 tiles when fixed (tokens distinct from those of
    :func:`kernels.gemm.w4a16.label` and :func:`kernels.gemm.w4a16_dec.label`)."""
    return (f"tma_r{cfg['rows']}_sk{cfg['split']}_st{cfg['stages']}_g{cfg['gps']}"
            + (f"_nt{cfg['nt']}" if cfg.get("nt") else ""))


def auto_nt(M: int) -> int:
    return 1 if M <= 8 else 2


def build(M: int, N: int, K: int, group: int, cfg: dict[str, Any], probe: str = "") -> Any:
    """Compile one configuration (checked first: a ValueError names the constraint)."""
    kw = {k: v for k, v in cfg.items() if k != "inst"}
    kw["nt"] = kw.get("nt") or auto_nt(M)
    check_config(M, N, K, group=group, **kw)
    require(probe in PROBES, f"the TMA decode kernel's timing probes are {PROBES[1:]}, got {probe!r}")
    if probe:
        kw["probe"] = probe
    return w4a16_tma(M, N, K, group, **kw)
