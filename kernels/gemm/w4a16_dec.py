"""W4A16 for decode batches (M <= 16): packed weights straight into registers, split K, cluster sum.

Same operands as :mod:`kernels.gemm.w4a16` (``C[M, N] = A[M, K] @ W[N, K]^T``; int4 two per byte,
low nibble = even k, offset-binary ``q = w + 8``, ``[N, K/2]`` uint8; one fp16 scale per 128 k of
each weight row).  That kernel is a TMA ring into shared memory with one block of 64 weight rows
per SM; at M = 1..16 it runs at about half the copy bandwidth, and its probes put the per-element
expansion from shared memory on the critical path.  This one is built for the byte floor:

* **Registers, not a ring.**  Each thread loads its weights with 128-bit loads
  (``ld.global.nc.L1::no_allocate``) straight into registers, ``depth`` groups of 128 k ahead of
  the group it computes (a software pipeline in registers; the first ``depth`` groups are issued
  before the block fills its activation tile, so the two latencies overlap).  Little's law:
  ~4.3 TB/s x ~1 us of loaded DRAM latency = ~4.3 MB in flight, ~33 KB per SM; a warp has
  ``depth`` x 1 KB in flight (16 rows x 64 bytes per group), so 16 warps per SM at depth 4 hold
  ~64 KB.
* **Split K over blocks, summed in the cluster.**  ``N / rows`` weight tiles alone give 64-128
  blocks (fewer than 132 SMs); ``split`` blocks per tile, each on ``K / split``, give 2-4 blocks
  per SM.  The ``split`` blocks of one tile form a thread-block cluster: each writes its fp32
  partial to its own shared memory, and block 0 adds the others' through distributed shared
  memory (``ld.shared::cluster``) and stores C: the partials never reach DRAM.
* **Word-wide expansion.**  One 32-bit word holds 8 nibbles ``k0..k7``; ``(w >> 4s) & 0x000F000F
  | 0x64006400`` puts ``(k_s, k_{s+4})`` into the two halves of an fp16 pair as ``1024 + q``, and one
  ``sub.f16x2`` of 1032 gives ``q - 8`` exactly: two shifts/logic ops and one subtraction per two
  weights, no shared memory.  The pair order ``(k_s, k_{s+4})`` is a permutation of K inside a
  word; the activation tile is rearranged into the same pairs once per block (``prmt`` in shared
  memory, after the fill), so the main loop reads its mma operands with one 128-bit load per
  16 k and no further shuffling; a dot product does not care about the order of its terms.
* **mma.sync m16n8k16, weights as the 16-row operand.**  A warp owns 16 weight rows; the
  activations (``8 * nt`` rows, zeros past M) are the n8 operand, read from shared memory where
  the block stored its K slice (permuted so that the four threads of a row pair read 64
  contiguous bytes; rows padded by 64 bytes, so the 8 threads of a phase hit 8 distinct 16-byte
  bank groups).  The scale is applied per group to the fp32 product of the integer weights:
  ``acc += s * sum((q - 8) * a)`` (the weights are not rounded to fp16 on the way; the reference
  rounds ``(q - 8) * s`` once, a difference far inside the GEMM tolerance).

Knobs: ``rows`` (weight rows per block, 16 per warp), ``wk`` (warps that split the block's K slice,
summed in shared memory), ``split`` (blocks along K = cluster size), ``depth`` (groups in flight per
warp), ``nt`` (n8 tiles of activations: 1 for M <= 8, 2 for M <= 16).
"""

from typing import Any

import tilelang
import tilelang.language as T

from kernels.common import SMEM_PER_BLOCK
from kernels.gemm.common import TARGET, require

#: The scale group this kernel is written for (one group = the 4 x 32 bits a thread loads per row).
GROUP = 128
#: Largest portable thread-block cluster.
MAX_CLUSTER = 8
#: Shared memory one block may use on an H100/H200 SM (bytes, from the ledger's machine model).
SMEM_LIMIT = SMEM_PER_BLOCK
#: halves of padding per activation row (64 bytes: consecutive rows start 4 bank groups apart).
A_PAD = 32

DEC_PASS_CONFIGS: dict[str, Any] = {}

#: Device helpers (CUDA, inlined): the register prefetch, the expansion + mma main loop, the
#: cluster sum.  ``KP`` = bytes per weight row, ``G`` = scales per row, ``LDA`` = halves per row
#: of the activation tile, ``LDP`` = floats per row of the partial tile.
_SRC = r"""
namespace w4d {
__device__ __forceinline__ void ldg128(const void* p, unsigned* d) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "l"(p));
}
__device__ __forceinline__ unsigned short ldg16(const void* p) {
  unsigned short v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ float h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// nibbles s and s+4 of w as the fp16 pair (q_s - 8, q_{s+4} - 8), exact
__device__ __forceinline__ unsigned expand(unsigned w, int s) {
  unsigned x = ((w >> (4 * s)) & 0x000F000Fu) | 0x64006400u, d;
  asm("sub.f16x2 %0, %1, %2;" : "=r"(d) : "r"(x), "r"(0x64086408u));
  return d;
}
__device__ __forceinline__ void mma(float* c, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// group p of this warp's 16 rows into register slot `slot`: rows g and g+8, bytes 16t..16t+15
template <int KP, int G>
__device__ __forceinline__ void load_group(unsigned* wb, unsigned short* sb, int slot, const void* wbase,
                                           const void* sbase, int p) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned char* wp = (const unsigned char*)wbase + g * KP + 16 * t + p * 64;
  const unsigned short* sp = (const unsigned short*)sbase + g * G + p;
  ldg128(wp, wb + slot * 8);
  ldg128(wp + 8 * KP, wb + slot * 8 + 4);
  sb[slot * 2] = ldg16(sp);
  sb[slot * 2 + 1] = ldg16(sp + 8 * G);
}
template <int D, int NG, int KP, int G>
__device__ __forceinline__ void prefetch(unsigned* wb, unsigned short* sb, const void* wbase, const void* sbase) {
#pragma unroll
  for (int p = 0; p < D && p < NG; ++p) load_group<KP, G>(wb, sb, p, wbase, sbase, p);
}
// PROBE = 1: a timing probe, the register loads alone (no expansion, no mma; wrong results)
template <int D, int NG, int KP, int G, int NT, int LDA, int LDP, int PROBE = 0>
__device__ __forceinline__ void main_loop(unsigned* wb, unsigned short* sb, const void* wbase, const void* sbase,
                                          const void* abase, float* pw) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned short* a = (const unsigned short*)abase;
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[j][c] = 0.f;
#pragma unroll
  for (int gi = 0; gi < NG; ++gi) {
    const int sl = gi % D;
    unsigned w0[4], w1[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) { w0[i] = wb[sl * 8 + i]; w1[i] = wb[sl * 8 + 4 + i]; }
    const float s0 = h2f(sb[sl * 2]), s1 = h2f(sb[sl * 2 + 1]);
    if (gi + D < NG) load_group<KP, G>(wb, sb, sl, wbase, sbase, gi + D);
    if constexpr (PROBE == 1) {  // keep every loaded word alive, do nothing else with it
      unsigned x = __float_as_uint(s0) ^ __float_as_uint(s1);
#pragma unroll
      for (int i = 0; i < 4; ++i) x ^= w0[i] ^ w1[i];
      acc[0][0] += (float)(x & 1u);
      continue;
    }
    float tmp[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) tmp[j][c] = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      unsigned qa[4], qb[4];
#pragma unroll
      for (int s = 0; s < 4; ++s) { qa[s] = expand(w0[i], s); qb[s] = expand(w1[i], s); }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        // physical k = 32t + 8i + 0..7 of activation row 8j + g (stored at 32i + 8t of the group)
        const uint4 x = *(const uint4*)(a + (8 * j + g) * LDA + gi * 128 + 32 * i + 8 * t);
        // pair_up stored them as (a0, a4), (a1, a5), (a2, a6), (a3, a7): the pairs of the expansion
        mma(tmp[j], qa[0], qb[0], qa[1], qb[1], x.x, x.y);
        mma(tmp[j], qa[2], qb[2], qa[3], qb[3], x.z, x.w);
      }
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      acc[j][0] += s0 * tmp[j][0]; acc[j][1] += s0 * tmp[j][1];
      acc[j][2] += s1 * tmp[j][2]; acc[j][3] += s1 * tmp[j][3];
    }
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    pw[g * LDP + 8 * j + 2 * t] = acc[j][0];
    pw[g * LDP + 8 * j + 2 * t + 1] = acc[j][1];
    pw[(g + 8) * LDP + 8 * j + 2 * t] = acc[j][2];
    pw[(g + 8) * LDP + 8 * j + 2 * t + 1] = acc[j][3];
  }
}
// the activation tile in place: each 8 halves a0..a7 become (a0, a4), (a1, a5), (a2, a6), (a3, a7),
// the k pairs of expand(); CH = 16-byte chunks of BM rows x KS, rows of LDA halves
template <int BM, int KS, int LDA, int NTHR>
__device__ __forceinline__ void pair_up(void* as) {
  unsigned short* a = (unsigned short*)as;
  constexpr int CH = BM * KS / 8, B = 4;
#pragma unroll
  for (int j0 = 0; j0 < (CH + NTHR - 1) / NTHR; j0 += B) {
    uint4 v[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int idx = threadIdx.x + (j0 + b) * NTHR;
      if (j0 + b < (CH + NTHR - 1) / NTHR && idx < CH)
        v[b] = *(const uint4*)(a + (idx / (KS / 8)) * LDA + (idx % (KS / 8)) * 8);
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int idx = threadIdx.x + (j0 + b) * NTHR;
      if (j0 + b < (CH + NTHR - 1) / NTHR && idx < CH) {
        uint4 o;
        o.x = __byte_perm(v[b].x, v[b].z, 0x5410);
        o.y = __byte_perm(v[b].x, v[b].z, 0x7632);
        o.z = __byte_perm(v[b].y, v[b].w, 0x5410);
        o.w = __byte_perm(v[b].y, v[b].w, 0x7632);
        *(uint4*)(a + (idx / (KS / 8)) * LDA + (idx % (KS / 8)) * 8) = o;
      }
    }
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
}  // namespace w4d
"""


def grid(N: int, *, rows: int, split: int) -> tuple[int, int]:
    """(blocks along K = the cluster, blocks along N)."""
    return split, N // rows


def threads(rows: int, wk: int) -> int:
    return 32 * (rows // 16) * wk


#: Registers a thread may use: two 256-thread blocks (four of 128) per SM share the 64 K registers.
MAX_REGS = 128


def min_blocks(rows: int, wk: int) -> int:
    """Blocks per SM the compiler must fit (``__launch_bounds__``), so a thread keeps <= MAX_REGS."""
    return max(1, 65536 // (threads(rows, wk) * MAX_REGS))


def smem_bytes(K: int, *, nt: int, rows: int, wk: int, split: int) -> int:
    """Shared memory of one block, from the ledger (:func:`ledger.w4a16.dec_smem_bytes`)."""
    from ledger.w4a16 import dec_smem_bytes

    return dec_smem_bytes(K, nt=nt, rows=rows, wk=wk, split=split, pad=A_PAD)


def check_config(M: int, N: int, K: int, *, group: int, rows: int, wk: int, split: int, depth: int,
                 nt: int) -> None:
    """Every constraint of one configuration, each failure naming it (ValueError)."""
    for name, v in (("M", M), ("N", N), ("K", K), ("rows", rows), ("wk", wk), ("split", split), ("depth", depth),
                    ("nt", nt)):
        require(isinstance(v, int) and v > 0, f"{name}={v} must be a positive integer")
    require(group == GROUP, f"the decode kernel is written for scale group {GROUP} (one 128-k group per register "
                            f"load), got group={group}")
    require(nt in (1, 2), f"nt={nt}: 1 (M <= 8) or 2 (M <= 16) n8 tiles of activations")
    require(M <= 8 * nt, f"M={M} exceeds the {8 * nt} activation rows of nt={nt} (the decode kernel is for M <= 16)")
    require(rows % 16 == 0 and 16 <= rows <= 256, f"rows={rows} must be a multiple of 16 (one warp each), <= 256")
    require(N % rows == 0, f"N={N} must be a multiple of the {rows} weight rows of a block")
    require(split <= MAX_CLUSTER, f"split={split}: the blocks of one weight tile form a cluster of at most "
                                  f"{MAX_CLUSTER}")
    require(threads(rows, wk) <= 1024, f"rows={rows} x wk={wk} gives {threads(rows, wk)} threads (max 1024)")
    require(K % (GROUP * split * wk) == 0,
            f"K={K} must be a multiple of {GROUP} x split={split} x wk={wk} = {GROUP * split * wk} "
            f"(every warp takes whole 128-k groups)")
    ng = K // (GROUP * split * wk)
    require(ng <= 64, f"{ng} groups per warp: the main loop is fully unrolled, keep it <= 64 (raise split or wk)")
    require(depth <= ng, f"depth={depth} exceeds the {ng} groups a warp computes")
    sm = smem_bytes(K, nt=nt, rows=rows, wk=wk, split=split)
    require(sm <= SMEM_LIMIT, f"{sm} bytes of shared memory exceed the {SMEM_LIMIT} a block may use")


#: Timing probes: ``loadonly`` = the same kernel whose main loop only loads the weights and scales
#: into registers (no expansion, no activation reads, no mma; wrong results): the memory pipeline alone.
PROBES = ("", "loadonly")


def _program(M: int, N: int, K: int, *, group: int, rows: int, wk: int, split: int, depth: int, nt: int,
             probe: str = ""):
    check_config(M, N, K, group=group, rows=rows, wk=wk, split=split, depth=depth, nt=nt)
    require(probe in PROBES, f"probe must be one of {PROBES}, got {probe!r}")
    KP, G = K // 2, K // group
    BM = 8 * nt
    KS = K // split  # K of one block
    KW = KS // wk  # K of one warp
    NG = KW // GROUP
    LDA = KS + A_PAD
    LDP = BM + 1
    WN = rows // 16
    nthr = threads(rows, wk)
    gs, gn = grid(N, rows=rows, split=split)
    prefetch = f"w4d::prefetch<{depth}, {NG}, {KP}, {G}>"
    loop = f"w4d::main_loop<{depth}, {NG}, {KP}, {G}, {nt}, {LDA}, {LDP}" + (", 1>" if probe else ">")
    pairs = f"w4d::pair_up<{BM}, {KS}, {LDA}, {nthr}>"
    csum = f"w4d::cluster_add<{split}, {rows * LDP}>"

    @T.macro
    def store(P_s, C, n0):
        for m, r in T.Parallel(BM, rows):
            if m < M:
                C[m, n0 + r] = T.cast(P_s[0, r, m], T.float16)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        Bq: T.Tensor((N, KP), T.uint8),
        S: T.Tensor((N, G), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(gs, gn, threads=nthr, cluster_dims=(split, 1, 1)) as (bz, bx):
            T.import_source(_SRC)
            T.annotate_min_blocks_per_sm(min_blocks(rows, wk))  # <= 128 registers a thread at 256 threads
            A_s = T.alloc_shared((BM, LDA), T.float16)
            P_s = T.alloc_shared((wk, rows, LDP), T.float32)
            wb = T.alloc_local((depth * 8,), T.uint32)
            sb = T.alloc_local((depth * 2,), T.uint16)
            tx = T.get_thread_binding()
            warp = tx // 32
            wn = warp % WN
            wkk = warp // WN
            n0 = bx * rows
            k0 = bz * KS
            kw = k0 + wkk * KW
            # the first `depth` weight groups are in flight while the activation tile is filled
            T.evaluate(T.call_extern("handle", prefetch, wb.data, sb.data, T.access_ptr(Bq[n0 + 16 * wn, kw // 2], "r"),
                                     T.access_ptr(S[n0 + 16 * wn, kw // GROUP], "r")))
            # activation rows (zeros past M), each 128-k group stored with k = 32t + 8i + e at 32i + 8t + e
            for m, c, t, i, e in T.Parallel(BM, KS // GROUP, 4, 4, 8):
                A_s[m, c * GROUP + 32 * i + 8 * t + e] = T.if_then_else(
                    m < M, A[T.min(m, M - 1), k0 + c * GROUP + 32 * t + 8 * i + e], T.float16(0))
            T.sync_threads()
            T.evaluate(T.call_extern("handle", pairs, T.access_ptr(A_s[0, 0], "rw")))
            T.sync_threads()
            T.evaluate(T.call_extern("handle", loop, wb.data, sb.data, T.access_ptr(Bq[n0 + 16 * wn, kw // 2], "r"),
                                     T.access_ptr(S[n0 + 16 * wn, kw // GROUP], "r"),
                                     T.access_ptr(A_s[0, wkk * KW], "r"), T.access_ptr(P_s[wkk, 16 * wn, 0], "w")))
            T.sync_threads()
            if wk > 1:
                for r, m in T.Parallel(rows, BM):
                    for w in T.unroll(1, wk):
                        P_s[0, r, m] = P_s[0, r, m] + P_s[w, r, m]
                T.sync_threads()
            if split > 1:
                T.cluster_sync()  # every partial of the tile is in its block's shared memory
                if bz == 0:
                    T.evaluate(T.call_extern("handle", csum, T.access_ptr(P_s[0, 0, 0], "rw")))
                    T.sync_threads()
                    store(P_s, C, n0)
                T.cluster_sync()  # no block leaves while block 0 may still read its shared memory
            else:
                store(P_s, C, n0)

    return main


@tilelang.jit(target=TARGET, pass_configs=DEC_PASS_CONFIGS)
def w4a16_dec(M: int, N: int, K: int, group: int = GROUP, rows: int = 128, wk: int = 1, split: int = 4,
              depth: int = 4, nt: int = 2, probe: str = ""):
    """W4A16 for M <= 16 (see the module docstring); ``probe="loadonly"``: the timing probe."""
    return _program(M, N, K, group=group, rows=rows, wk=wk, split=split, depth=depth, nt=nt, probe=probe)


def config(rows: int, wk: int, split: int, depth: int, nt: int = 0) -> dict[str, Any]:
    """One configuration as the suite's tables take it (``inst="dec"`` routes it here); ``nt=0``:
    one n8 tile of activations for M <= 8, two for M <= 16."""
    return dict(inst="dec", rows=rows, wk=wk, split=split, depth=depth, nt=nt)


def label(cfg: dict[str, Any]) -> str:
    """Short printable name (the record's ``label``): ``r`` rows, ``kw`` K warps, ``sk`` blocks along K
    (the cluster), ``d`` depth, ``nt`` n8 tiles when fixed (tokens distinct from those of
    :func:`kernels.gemm.w4a16.label`)."""
    return (f"dec_r{cfg['rows']}_kw{cfg['wk']}_sk{cfg['split']}_d{cfg['depth']}"
            + (f"_nt{cfg['nt']}" if cfg.get("nt") else ""))


def auto_nt(M: int) -> int:
    return 1 if M <= 8 else 2


def build(M: int, N: int, K: int, group: int, cfg: dict[str, Any], probe: str = "") -> Any:
    """Compile one configuration (checked first: a ValueError names the constraint)."""
    kw = {k: v for k, v in cfg.items() if k != "inst"}
    kw["nt"] = kw.get("nt") or auto_nt(M)
    check_config(M, N, K, group=group, **kw)
    require(probe in PROBES, f"the decode kernel's timing probes are {PROBES[1:]}, got {probe!r}")
    if probe:
        kw["probe"] = probe
    return w4a16_dec(M, N, K, group, **kw)
