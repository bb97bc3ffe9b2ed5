"""W4A16 GEMM with the weights as wgmma's register operand ("swap AB").

``C[M, N] = A[M, K] @ W[N, K]^T`` with A fp16 and W stored as in :mod:`kernels.gemm.lowp`:
int4 two per byte (low nibble = even k), offset-binary ``q = w + 8``, ``[N, K/2]`` uint8,
one fp16 scale per ``group`` consecutive k of each weight row (``scales[N, K/group]``).

:func:`kernels.gemm.lowp.dequant_gemm` expands every packed tile into fp16 *shared memory*
and then runs an ordinary ``T.gemm``: each weight byte crosses shared memory three times
(TMA in, expanded out, wgmma in).  Hopper's ``wgmma`` can take its A operand from
registers (``wgmma ... A in registers``, lowered by tilelang as ``wgmma_rs``), and only its
A operand, whose rows are the instruction's M = 64.  So this kernel computes the
transposed product ``C^T[N, M] = W[N, K] @ A[M, K]^T``: the weights are A, expanded from
the packed tile straight into the register fragment wgmma reads, and the activations are
B, read from shared memory by descriptor.  The instruction's N is then the number of
activation rows a block handles (``block_M``): 16 for a decode step with M = 1..16 (the
rows past M are zeros loaded by the TMA unit and clipped on the store), up to 256 for a
square product.

Expansion of one packed byte (two weights of one row, the pair a register holds): OR each
nibble into the mantissa of the fp16 constant 0x6400 (1024.0), which gives ``1024 + q``
exactly; subtract 1032 (exact) and multiply by the row's scale: one rounding, the same
fp16 value as ``(q - 8) * s`` rounded once, which is what the reference expands.

Block layout (384 threads, written out with tilelang's explicit primitives like
:mod:`kernels.gemm.ws`): warpgroup 0 is the producer (TMA of the activation tile, of the
packed weight tile and, once, of the block's scales), warpgroups 1 and 2 consume.
``split`` says how the two consumers share the work:

* ``"k"``: the block owns 64 weight rows; consumer ``c`` takes the K blocks ``ko = c, c+2,
  ...`` and the two accumulators are added through shared memory at the end.  One block
  per 64 rows keeps ``N/64`` blocks (128 for N = 8192, on 132 SMs), and while one consumer
  expands its tile the other one's wgmma runs.
* ``"n"``: the block owns 128 weight rows, each consumer 64, both read every K block
  (the usual two-consumer tile, for large M).

``cluster`` > 1: that many neighbouring blocks along N form a cluster and share the
activation tile through a TMA multicast (each block still loads its own weights); a stage
is released by the consumers of every block in the cluster.  The activations are read by
every weight tile: without the multicast a 128-row decode batch moves ``N/64`` times 2 MB
through L2, more than the weights themselves.

Further knobs, each a candidate of the H200 search (:data:`CANDIDATES`):

* ``stages_w`` > 0: the weight tiles get a ring of their own, fed by producer warp 0 while
  warp 1 feeds the activations; a weight slot is freed as soon as it is expanded into
  registers, an activation slot once the wgmma that reads it has completed.
* ``kpair``: two blocks of a cluster split K for the same 128 weight rows, so each SM reads
  half of the activations; the upper block hands each consumer's fp32 partial to the lower
  one by one SM-to-SM bulk copy, and the lower block adds and stores.
* ``kglob``: the same split of K without a cluster.  Each consumer stores its fp32 partial into its block's slot
  of a global workspace and counts on its tile's counter (acq_rel); the second of the pair to count resets the
  counter, adds the other's partial and stores.  No block waits for another; the kernel takes the workspace and
  the counters as two more arguments (:func:`kglob_workspace`), which :func:`build`'s wrapper supplies.
* ``inst="mma"`` (:func:`w4a16_gemm_mma`): the warp-level ``mma.sync`` m16n8k16 instead of
  wgmma, each warp on its 16 weight rows; with it the activation tile may be 8 rows (``block_M=8``, for
  M <= 8): one n8 tile per k16 step instead of two, half the activation ring, the tensor-core work and
  the fold of a 16-row tile whose rows past M are zeros;
* ``chunk``: a stage is expanded in pieces of ``chunk`` of K into two register buffers used in
  turn; a piece's wgmma is left running while the next piece is expanded, and a buffer is
  written again only once the wgmma that read it has completed (``wait_wgmma<1>``), so inside
  one consumer the expansion overlaps the tensor-core work, and a stage can be longer (more
  of each weight row per TMA copy) without more registers.

* ``wide``: the expansion word by word instead of element by element (:data:`_WIDE_SRC`, inline
  CUDA).  A thread's fragment for two steps of 16 k holds byte lane ``t`` (its index in the
  quad) of the four 32-bit words of a 16-byte run of one weight row: one 128-bit shared-memory
  read gives them (the four threads of a quad read the same run, a broadcast), and each byte
  becomes an fp16 pair by ``prmt`` (the byte into both halves under the exponent byte of 1024),
  one ``lop3`` (keep the low nibble in the lower half, the high nibble in the upper) and one
  ``fma.f16x2`` with (1, 1/16) and (-1032, -72), which leaves ``q - 8`` exactly in both halves,
  then one ``mul.f16x2`` by the scale: the same single rounding as the reference's.  One 128-bit
  shared-memory read per 8 weights instead of one byte read per 2 (the per-element form, which
  nvcc already packs into ``f16x2`` arithmetic).  It reproduces the swizzle tilelang gives the
  packed tile (:func:`wide_offset`), for stages of 128, 256 or 512 k.  ``mma.sync`` m16n8k16 reads
  the same fragment (each warp's 16 rows, in the same register order), so ``inst="mma"`` takes it too.

* ``post`` (with ``perm`` and ``inst="mma"``, ``chunk`` = ``group``): the scale after the tensor-core
  work.  Each scale group is expanded as one piece without its scale (``w4u::expand``: ``q - 8``, exact),
  its ``mma.sync`` partial starts at zero in fp32, and the partial times the row's scale is added to the
  accumulator; the expansion loses its ``mul.f16x2`` and its scale reads, each group gains a fold of
  fp32 multiply-adds (:func:`ledger.w4a16.post_fold` counts both per thread).  Not bit-identical to the reference (the weights
  are not rounded to fp16 first); two or four consumers.

* ``lag`` (with ``stages_w``, wgmma): each consumer keeps one stage's wgmma running while it expands its next
  stage into a second register buffer, the two buffers used in turn.  After issuing a stage's wgmma it waits
  only until the *previous* one has completed (``wait_wgmma<1>``), then frees that stage's activation slot: the
  slot is held one stage longer, so with ``split="k"`` each consumer needs two (``stages`` >= 4); with
  ``split="n"`` (both consumers read every stage, also with ``kpair``) ``stages`` >= 3.  Without it a
  consumer's expansion and its tensor-core work alternate, and only the other consumer fills the gap.
  ``lag=2`` (``split="k"`` only): two stages' wgmma left running, three register buffers used in turn; after each
  issue a consumer waits until only its last two are in flight (``wait_wgmma<2>``) and frees the slot of the one
  before them, so each consumer holds three slots (``stages`` >= 6).

* ``fuse`` (with ``perm``, also with ``post``): each fp16 pair is picked from its word by one ``lop3`` written in
  PTX, the mask and the exponent bits of 1024 together (:data:`_FUSE_HELPER`).  From the same expression in C,
  nvcc emits an AND and an OR (a ``lop3`` takes one immediate): four ``lop3`` fewer per 8 weights, the same bits.

* ``accs=2`` (with ``lag``, ``split="k"``): the two stages a consumer has in flight accumulate into two fp32
  accumulators (the first stage of each pair into one, the second into the other), added at the end; with one
  accumulator the stage left running and the one issued after it write the same registers.

With ``split="k"`` every ring must have an even number of slots, so that a slot always serves
the same consumer: an mbarrier is waited on by phase parity, and with an odd ring one
consumer could pass over a phase the other one has not consumed yet (on the H200 such a
kernel ran correctly in one launch and faulted after many; :func:`check_config` refuses it).

The search over these knobs, the checks and the timing against cuBLAS are the suite
:mod:`measure.suites.gemm.w4a16`; the ledger's floor is :mod:`ledger.w4a16`.
"""


from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.common import SMEM_PER_BLOCK
from kernels.gemm.common import TARGET, check_cuda, check_matrix, require
from ledger.w4a16 import WS_BLOCKS, setmaxnreg_split

#: Pass configuration: the kernel places every barrier itself (as :mod:`kernels.gemm.ws`).
W4_PASS_CONFIGS = {
    "tl.disable_warp_specialized": True,
    tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
}

#: Weight rows per consumer warpgroup: wgmma's M.
WG_ROWS = 64
#: One producer and two consumer warpgroups; the registers the producer keeps and each consumer takes
#: (:func:`ledger.w4a16.setmaxnreg_split`: 168 per thread at launch, the producer frees 128 * 128).
THREADS, PRODUCER_REGS = WS_BLOCKS[2]
CONSUMER_REGS = setmaxnreg_split(THREADS, PRODUCER_REGS)["take"]
#: ``consumers=4``: threads, and the registers the producer keeps and each consumer takes.  A block
#: of 640 threads is launched with 96 registers per thread; ``setmaxnreg`` only moves registers inside
#: that allocation, so the producer warpgroup's 128 * (96 - 32) = 8192 released registers are what the
#: four consumers can take: 16 each, 112.  Asking for more leaves a consumer waiting in
#: ``setmaxnreg.inc`` for ever (120 each hung on the H200).
Q4_REGS = (*WS_BLOCKS[4], setmaxnreg_split(*WS_BLOCKS[4])["take"])
#: Shared memory one block may use on an H100/H200 SM (bytes, from the ledger's machine model).
SMEM_LIMIT = SMEM_PER_BLOCK
#: The word-wide expansion (``wide``): one 16-byte run of each of a thread's two weight rows per
#: two steps of 16 k, into the wgmma register fragment ``frag`` (four 32-bit registers per step:
#: rows g / g+8 at k 2t..2t+1, then at k 2t+8..2t+9).  ``ws`` = the stage's packed tile (128-byte
#: rows, 128-byte swizzle), ``ss`` = the block's scales (``G`` per row), ``row0`` = the consumer's
#: first weight row in the tile, ``cb0`` = first byte of the piece in the row, ``kg`` = its first k.
#: The opening both word-wide expansions share (namespace ``{ns}``): the signature, the operands and the
#: thread's first weight row ``rb`` (rows g and g+8 of its warp's 16).
_EXPAND_HEAD = r"""
#include <cuda_fp16.h>
namespace {ns} {{
template <int NKI, int G, int GROUP, int RB, int PLANE>
__device__ __forceinline__ void expand(const void* wsp, const void* ssp, int row0, int cb0, int kg, void* fragp) {{
  const unsigned char* ws = (const unsigned char*)wsp;
  const unsigned short* ss = (const unsigned short*)ssp;
  unsigned* frag = (unsigned*)fragp;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int rb = row0 + 16 * ((threadIdx.x >> 5) & 3) + g;
"""
_WIDE_SRC = _EXPAND_HEAD.format(ns="w4w") + r"""  // byte t into bytes 0 and 2, the exponent byte 0x64 of 1024 into bytes 1 and 3
  const unsigned sel = 0x7050u | (0x0101u * t);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = rb + 8 * h;
#pragma unroll
    for (int c = 0; c < NKI / 2; ++c) {
      const int b = cb0 + 16 * c;
      // tilelang's swizzle of the packed tile: 128-byte planes of the rows (chunk ^ row % 8), or
      // 64-byte rows (chunk ^ (row / 2) % 4); see wide_offset()
      const int off = RB == 128 ? (b >> 7) * PLANE + r * 128 + ((((b >> 4) & 7) ^ (r & 7)) << 4)
                                : r * 64 + ((((b >> 4) & 3) ^ ((r >> 1) & 3)) << 4);
      const uint4 v = *(const uint4*)(ws + off);
      const unsigned s1 = ss[r * G + (kg + 32 * c) / GROUP];
      const unsigned s2 = s1 | (s1 << 16);
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // (1024 + q_lo, 1024 + 16 q_hi): the low nibble of the lower half, the high one of the upper
        const unsigned x = __byte_perm(w[j], 0x64006400u, sel) & 0xFFF0FF0Fu;
        const __half2 q = __hfma2(*(const __half2*)&x, __halves2half2(__ushort_as_half(0x3C00), __ushort_as_half(0x2C00)),
                                  __halves2half2(__ushort_as_half(0xE408), __ushort_as_half(0xD480)));
        const __half2 z = __hmul2(q, *(const __half2*)&s2);
        frag[(2 * c + (j >> 1)) * 4 + h + 2 * (j & 1)] = *(const unsigned*)&z;
      }
    }
  }
}
}  // namespace w4w
"""

#: The interleaved expansion (``perm``): the weights are repacked once, offline (:func:`interleave_weights`),
#: so that the 8 weights a thread's fragment needs from 32 k of a row are the 8 nibbles of one 32-bit
#: word, in the order two masks pick pairs from: nibbles (0, 4) are k (2t, 2t+1), (1, 5) are k
#: (2t+8, 2t+9), then, after a shift by 8, (16+2t, 17+2t) and (24+2t, 25+2t).  Each thread's four such
#: words for 128 k of a row are one 16-byte unit (a thread of the quad reads its own unit, no byte
#: lanes to select), and one ``lop3`` per pair replaces ``prmt`` + ``lop3``; the arithmetic after it is
#: the word-wide expansion's (a pair at 16 times its value is brought back by (1/16, -72) instead of
#: (1, -1032)), so the fragment holds the same fp16 values bit for bit.
_PERM_BODY = r"""  const __half2 one = __halves2half2(__ushort_as_half(0x3C00), __ushort_as_half(0x3C00));
  const __half2 m1032 = __halves2half2(__ushort_as_half(0xE408), __ushort_as_half(0xE408));
  const __half2 sixteenth = __halves2half2(__ushort_as_half(0x2C00), __ushort_as_half(0x2C00));
  const __half2 m72 = __halves2half2(__ushort_as_half(0xD480), __ushort_as_half(0xD480));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = rb + 8 * h;
#pragma unroll
    for (int u = 0; u < NKI / 8; ++u) {
      // this thread's 16-byte unit of the 64-byte run of 128 k, where tilelang's swizzle put it
      const int b = cb0 + 64 * u + 16 * t;
      const int off = RB == 128 ? (b >> 7) * PLANE + r * 128 + ((((b >> 4) & 7) ^ (r & 7)) << 4)
                                : r * 64 + ((((b >> 4) & 3) ^ ((r >> 1) & 3)) << 4);
      const uint4 v = *(const uint4*)(ws + off);
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
      // one scale for the whole run (GROUP and kg are multiples of 128: check_config)
      const unsigned s1 = ss[r * G + (kg + 128 * u) / GROUP];
      const unsigned s2 = s1 | (s1 << 16);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const unsigned x[4] = {(w[c] & 0x000F000Fu) | 0x64006400u, (w[c] & 0x00F000F0u) | 0x64006400u,
                               ((w[c] >> 8) & 0x000F000Fu) | 0x64006400u, ((w[c] >> 8) & 0x00F000F0u) | 0x64006400u};
        const int st = 2 * (4 * u + c);  // the chunk's first 16-k step in the piece
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const __half2 q = (j & 1) ? __hfma2(*(const __half2*)&x[j], sixteenth, m72)
                                    : __hfma2(*(const __half2*)&x[j], one, m1032);
          const __half2 z = __hmul2(q, *(const __half2*)&s2);
          frag[(st + (j >> 1)) * 4 + h + 2 * (j & 1)] = *(const unsigned*)&z;
        }
      }
    }
  }
}
}  // namespace {ns}
"""


#: ``fuse``: each pair's mask and its exponent bits in one ``lop3`` written in PTX.  A ``lop3`` takes one
#: immediate; from ``(w & mask) | 0x64006400`` in C, nvcc 13.0 emits two (an AND, then an OR, each with its
#: constant as the immediate), eight per word instead of four.  In PTX both constants are operands and ptxas
#: keeps one of them in a register.  The same bits come out (the fragment is unchanged).
_FUSE_HELPER = r"""
template <unsigned MASK>
__device__ __forceinline__ unsigned and_or_exp(unsigned a) {
  unsigned d;  // (a & MASK) | 0x64006400: lut 0xEA = (0xF0 & 0xCC) | 0xAA
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "n"(MASK), "n"(0x64006400u));
  return d;
}
"""
_PAIRS_C = ("const unsigned x[4] = {(w[c] & 0x000F000Fu) | 0x64006400u, (w[c] & 0x00F000F0u) | 0x64006400u,\n"
            "                               ((w[c] >> 8) & 0x000F000Fu) | 0x64006400u, ((w[c] >> 8) & 0x00F000F0u) | 0x64006400u};")
_PAIRS_PTX = ("const unsigned x[4] = {and_or_exp<0x000F000Fu>(w[c]), and_or_exp<0x00F000F0u>(w[c]),\n"
              "                               and_or_exp<0x000F000Fu>(w[c] >> 8), and_or_exp<0x00F000F0u>(w[c] >> 8)};")


def _perm_src(ns: str, scaled: bool = True, fuse: bool = False) -> str:
    """The interleaved expansion in namespace ``ns``; ``scaled=False`` (``post``) leaves ``q - 8`` in the
    fragment, exactly, and reads no scale: the kernel multiplies each group's fp32 partial by it instead;
    ``fuse`` picks each pair by one PTX ``lop3`` (:data:`_FUSE_HELPER`)."""
    src = _EXPAND_HEAD.format(ns=ns) + _PERM_BODY.replace("{ns}", ns)
    if fuse:
        require(src.count(_PAIRS_C) == 1, "the fused expansion's edit no longer matches the pair masks")
        head = f"namespace {ns} {{\n"
        src = src.replace(_PAIRS_C, _PAIRS_PTX).replace(head, head + _FUSE_HELPER, 1)
    if not scaled:
        for old, new in (("      const unsigned s1 = ss[r * G + (kg + 128 * u) / GROUP];\n"
                          "      const unsigned s2 = s1 | (s1 << 16);\n", ""),
                         ("          const __half2 z = __hmul2(q, *(const __half2*)&s2);\n",
                          "          const __half2 z = q;  // post: the scale multiplies the group's partial\n"),
                         ("      // one scale for the whole run (GROUP and kg are multiples of 128: check_config)\n", "")):
            require(src.count(old) == 1, f"the unscaled expansion's edit no longer matches: {old!r}")
            src = src.replace(old, new)
    return src


_PERM_SRC = _perm_src("w4p")
#: ``post``: the same expansion without the scale (namespace ``w4u``).
_POST_SRC = _perm_src("w4u", scaled=False)
#: ``fuse``: both, each pair by one ``lop3`` (namespaces ``w4pf`` and ``w4uf``).
_PERM_FUSED_SRC = _perm_src("w4pf", fuse=True)
_POST_FUSED_SRC = _perm_src("w4uf", scaled=False, fuse=True)

#: For :func:`interleave_weights`: the k (inside its 32-k chunk) of nibble ``n`` of thread ``t``'s word.
PERM_NIBBLE_K = tuple(tuple((2 * t, 2 * t + 8, 16 + 2 * t, 24 + 2 * t, 2 * t + 1, 2 * t + 9, 17 + 2 * t, 25 + 2 * t)[n]
                            for n in range(8)) for t in range(4))

#: Named barriers: 1 = both consumers (split-K reduction), 2/3 = one consumer's epilogue.
_BAR_BOTH, _BAR_EPI = 1, (2, 3)


def wide_offset(row: int, byte: int, *, rows: int, row_bytes: int) -> int:
    """Where tilelang's swizzled layout puts byte ``byte`` of weight row ``row`` of one stage of the
    packed tile (``rows`` x ``row_bytes``), as the ``wide`` expansion computes it: rows of 64 bytes
    swap 16-byte chunks by ``(row / 2) % 4``; longer rows are stored as 128-byte planes of all the
    rows, each swapping chunks by ``row % 8``."""
    if row_bytes == 64:
        return row * 64 + ((((byte >> 4) & 3) ^ ((row >> 1) & 3)) << 4) + (byte & 15)
    return (byte >> 7) * rows * 128 + row * 128 + ((((byte >> 4) & 7) ^ (row & 7)) << 4) + (byte & 15)


def block_rows(split: str) -> int:
    """Weight rows (columns of C) one block owns."""
    require(split in ("k", "n"), f"split must be 'k' or 'n', got {split!r}")
    return WG_ROWS if split == "k" else 2 * WG_ROWS


def smem_bytes(K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str, stages_w: int = 0,
               kpair: bool = False, consumers: int = 2) -> int:
    """Shared memory of one block, from the ledger (:func:`ledger.w4a16.smem_bytes`): the ring
    (activation tile fp16 + packed weight tile), the block's scales for the whole K, the C
    staging tile(s) and, for ``split="k"``, the fp32 tile each other consumer hands to the first."""
    from ledger.w4a16 import smem_bytes as ledger_smem

    return ledger_smem(K, group=group, block_m=block_M, block_k=block_K, stages=stages, rows=block_rows(split),
                       split_k=split == "k", stages_w=stages_w, k_pair=kpair, consumers=consumers)


def grid(M: int, N: int, *, block_M: int, split: str, kpair: bool = False, kglob: bool = False) -> tuple[int, int]:
    """(blocks along N, blocks along M); with ``kpair`` (a cluster) or ``kglob`` two blocks per weight tile."""
    return N // block_rows(split) * (2 if kpair or kglob else 1), -(-M // block_M)


def kglob_workspace(M: int, N: int, *, block_M: int) -> tuple[tuple[int, int], tuple[int]]:
    """``kglob``: the shapes of the fp32 partials (one slot of 128 rows x ``block_M`` per block) and of the int32
    counters (one per weight tile and consumer), both allocated zeroed once; every complete launch leaves the
    counters zero."""
    gn, gm = grid(M, N, block_M=block_M, split="n", kglob=True)
    return (gm * gn * block_rows("n"), block_M), (gm * gn,)


def serves(block_M: int, M: int) -> bool:
    """Whether an activation tile of ``block_M`` rows serves ``M`` rows: the 8-row tile (``inst="mma"``) is for
    decode steps of at most 8 rows; a larger M would read every weight once per 8 rows."""
    return block_M != 8 or M <= 8


def check_config(M: int, N: int, K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str,
                 cluster: int, stages_w: int = 0, kpair: bool = False, chunk: int = 0, wide: bool = False,
                 inst: str = "wgmma", consumers: int = 2, tiled: bool = False, perm: bool = False,
                 post: bool = False, lag: bool = False, fuse: bool = False, accs: int = 1, kglob: bool = False) -> None:
    """Every constraint of one configuration, each failure naming it (ValueError)."""
    rows = block_rows(split)
    for name, v in (("M", M), ("N", N), ("K", K), ("group", group), ("block_K", block_K), ("stages", stages)):
        require(isinstance(v, int) and v > 0, f"{name}={v} must be a positive integer")
    require((block_M % 16 == 0 and 16 <= block_M <= 256) or (block_M == 8 and inst == "mma"),
            f"block_M={block_M} is the tensor-core instruction's N here: a multiple of 16 from 16 to 256 "
            f"(N = 8 mod 16 hits the 0.1.x wgmma bug, see common.check_wgmma_n), or 8 with inst='mma' (one n8 "
            f"tile of mma.sync)")
    require(serves(block_M, M), f"block_M=8 is the activation tile of a decode step of at most 8 rows: M={M} "
                                f"would read every weight once per 8 rows")
    require(group % 2 == 0 and K % group == 0, f"K={K} must be a multiple of the (even) scale group {group}")
    require(K % block_K == 0 and block_K % 16 == 0, f"K={K} must be a multiple of block_K={block_K} (itself of 16)")
    require(group % block_K == 0 or block_K % group == 0, f"group={group} and block_K={block_K} must nest")
    require(N % rows == 0, f"N={N} must be a multiple of the {rows} weight rows of a block (split={split!r})")
    require(cluster in (1, 2, 4), f"cluster must be 1, 2 or 4 blocks, got {cluster}")
    require((N // rows) % cluster == 0, f"the {N // rows} blocks along N must fill clusters of {cluster}")
    n_k = K // block_K
    require(consumers in (2, 4), f"consumers must be 2 or 4 warpgroups, got {consumers}")
    if tiled:
        require(stages_w == 0 and not kpair, "tiled weights are read by the one-ring producer: no stages_w or kpair")
    if consumers == 4:
        require(split == "k" and stages_w == 0 and (not chunk or post) and not kpair,
                "consumers=4 takes K blocks in turn on one ring: split='k', no stages_w, chunk (but post's) or kpair")
        require(n_k % 4 == 0 and stages % 4 == 0,
                f"four consumers take the K blocks in turn and each ring slot must serve one of them: "
                f"K/block_K={n_k} and stages={stages} must be multiples of 4")
    if split == "k":
        require(n_k % 2 == 0, f"split='k' alternates K blocks between two consumers: K/block_K={n_k} must be even")
        # a ring slot must always go to the same consumer: with an odd ring the two consumers share
        # a slot's barrier, and one of them can pass a phase of the other's (parity waits alias)
        require(stages % 2 == 0 and stages_w % 2 == 0,
                f"split='k' needs even rings (stages={stages}, stages_w={stages_w}): each slot serves one consumer")
    require(stages >= 2, f"stages={stages} must be >= 2")
    require(stages_w == 0 or stages_w >= 2, f"stages_w={stages_w}: 0 (one ring) or a weight ring of >= 2 stages")
    if kpair:
        require(split == "n" and cluster == 1 and stages_w > 0,
                "kpair (two blocks of a cluster split K, 128 rows each) needs split='n', cluster=1 and a weight ring")
        require(n_k % 2 == 0, f"kpair halves the {n_k} K blocks: their number must be even")
    if kglob:
        require(not kpair and split == "n" and cluster == 1 and stages_w > 0 and inst == "wgmma" and consumers == 2,
                "kglob (two blocks split K for 128 rows and meet in global memory) needs split='n', cluster=1, a "
                "weight ring, inst='wgmma', two consumers and no kpair")
        require(n_k % 2 == 0, f"kglob halves the {n_k} K blocks: their number must be even")
    if chunk:
        require(chunk % 16 == 0 and block_K % chunk == 0 and (block_K // chunk) % 2 == 0,
                f"chunk={chunk} must be a multiple of 16 that splits block_K={block_K} into an even number of "
                f"pieces (two register buffers used in turn)")
        require(stages_w == 0, "chunk (expansion in pieces) is written for one ring: stages_w must be 0")
    if wide:
        require(inst in ("wgmma", "mma"), f"wide (the word-wide expansion) fills the tensor-core instruction's "
                                          f"register fragment: inst must be 'wgmma' or 'mma', got {inst!r}")
        require(block_K in (128, 256, 512), f"wide reproduces the swizzle of 64-, 128- and 256-byte weight rows: "
                                            f"block_K must be 128, 256 or 512, got {block_K}")
        require(group % 32 == 0, f"wide reads 32 k of a row at a time under one scale: group={group} must be a "
                                 f"multiple of 32")
    if perm:
        require(wide, "perm (the interleaved weights) is a form of the word-wide expansion: it needs wide=True")
        require((chunk or block_K) % 128 == 0 and group % 128 == 0,
                f"perm reads 128 k of a row, under one scale, per 16-byte unit: the expanded piece (chunk or "
                f"block_K = {chunk or block_K}) and group={group} must be multiples of 128")
    if post:
        require(perm and inst == "mma",
                f"post (the scale after the tensor-core work) takes the interleaved expansion without its scale and "
                f"the synchronous mma.sync: it needs perm=True and inst='mma', got perm={perm}, inst={inst!r}")
        require(chunk == group,
                f"post multiplies one scale group's fp32 partial at a time: chunk={chunk} must equal group={group}")
    if fuse:
        require(perm, "fuse (one lop3 per fp16 pair) is a form of the interleaved expansion: it needs perm=True")
    require(lag in (False, True, 0, 1, 2), f"lag is the number of stages' wgmma left running, 0, 1 or 2: got {lag!r}")
    if lag == 2:
        require(split == "k", "lag=2 (two stages' wgmma left running, three register buffers) is written for "
                              "split='k' (two consumers on alternate K blocks)")
        require(n_k % 2 == 0 and n_k // 2 >= 3, f"lag=2 turns three register buffers over each consumer's K blocks: "
                                                f"K/block_K={n_k} must be even and give each consumer at least 3")
        require(stages >= 6, f"lag=2 keeps a consumer's activation slot until two more of its stages are issued: "
                             f"each of the two consumers needs three slots, stages={stages} must be >= 6")
    if lag:
        require(stages_w > 0 and inst == "wgmma" and consumers == 2 and not chunk,
                "lag (one stage's wgmma left running while the next is expanded) is written for the decoupled rings: "
                "it needs stages_w > 0, inst='wgmma', two consumers and no chunk")
        if split == "k" and lag != 2:
            require(n_k % 4 == 0, f"lag alternates two register buffers over each consumer's K blocks: "
                                  f"K/block_K={n_k} must be a multiple of 4")
            require(stages >= 4, f"lag keeps a consumer's activation slot until its next stage is issued: each of "
                                 f"the two consumers needs two slots, stages={stages} must be >= 4")
        else:
            n_loc = n_k // 2 if kpair or kglob else n_k
            require(n_loc % 2 == 0, f"lag alternates two register buffers over a block's K blocks: "
                                    f"{n_loc} K blocks per block must be even")
            require(stages >= 3, f"lag keeps the consumers' activation slot until the next stage is issued: "
                                 f"stages={stages} must be >= 3 so the producer can fill one more")
    require(accs in (1, 2), f"accs is the number of fp32 accumulators a consumer alternates over, 1 or 2: got {accs!r}")
    if accs == 2:
        require(lag == 1, f"accs=2 alternates the accumulator of the stages lag leaves running (one at a time): "
                          f"it needs lag=True, got lag={lag!r}")
        require(split == "k", "accs=2 is written for split='k' (two consumers on alternate K blocks)")
    g = K // group
    require(g % 8 == 0, f"K/group={g} must be a multiple of 8: the block's scale rows are copied by TMA, "
                        f"whole 16-byte rows")
    sm = smem_bytes(K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split, stages_w=stages_w,
                    kpair=kpair, consumers=consumers)
    require(sm <= SMEM_LIMIT, f"{sm} bytes of shared memory exceed the {SMEM_LIMIT} a block may use")


def _program(M: int, N: int, K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str,
             cluster: int, probe: str = "", stages_w: int = 0, kpair: bool = False, inst: str = "wgmma",
             chunk: int = 0, wide: bool = False, consumers: int = 2, tiled: bool = False, perm: bool = False,
             post: bool = False, lag: bool = False, fuse: bool = False, accs: int = 1, kglob: bool = False):
    check_config(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split,
                 cluster=cluster, stages_w=stages_w, kpair=kpair, chunk=chunk, wide=wide, inst=inst,
                 consumers=consumers, tiled=tiled, perm=perm, post=post, lag=lag, fuse=fuse, accs=accs, kglob=kglob)
    nc = consumers
    threads, producer_regs, consumer_regs = (THREADS, PRODUCER_REGS, CONSUMER_REGS) if nc == 2 else Q4_REGS
    kc = chunk or block_K  # K expanded into one register buffer
    wide_rb, wide_plane = min(block_K // 2, 128), block_rows(split) * 128  # wide: swizzle row bytes, plane bytes
    n_c = block_K // kc
    # the interleaved (post: without its scale) or the byte-lane word-wide expansion
    wide_ns = (("w4u" if post else "w4p") + ("f" if fuse else "")) if perm else "w4w"
    decoupled = stages_w > 0
    rows = block_rows(split)
    KP, G = K // 2, K // group
    n_k = K // block_K
    grid_n, grid_m = grid(M, N, block_M=block_M, split=split, kpair=kpair, kglob=kglob)
    n_loc = n_k // 2 if kpair or kglob else n_k  # K blocks of one block (kpair, kglob: its half of K)
    cdim = 2 if kpair else cluster
    lag_d = 2 if split == "k" else 1  # lag: the stage whose activation slot a consumer frees is t - lag_d * depth
    depth = int(lag)  # stages' wgmma left running after each issue (lag: 1, lag=2: 2)
    turned, left = n_k // 6 * 6, n_k // 2 % 3  # lag=2: the K blocks of whole turns of three, each consumer's rest
    arrivals = 4 * cluster * (1 if split == "k" else 2)  # lane 0 of each warp that read a stage

    @T.macro
    def release(empty, s):
        if cluster > 1:
            for r in T.serial(cluster):
                T.mbarrier_arrive(empty[s], r)
        else:
            T.mbarrier_arrive(empty[s])

    require(probe in ("", "noexpand", "nomma", "loadonly", "mmaonly"),
            f"probe must be '', 'noexpand', 'nomma', 'loadonly' or 'mmaonly', got {probe!r}")
    require(inst in ("wgmma", "mma"), f"inst must be 'wgmma' or 'mma', got {inst!r}")
    require(not (wide and probe == "nomma"), "wide fills the register fragment that only the tensor-core work "
                                             "gives a layout: the nomma probe is for the per-element expansion")
    require(not (lag and probe in ("nomma", "loadonly")),
            f"lag leaves each stage's wgmma running: the {probe!r} probe, which has no tensor-core work, is for the "
            f"configurations without lag")
    if probe in ("nomma", "loadonly"):
        inst = "none"

    @T.macro
    def expand(W_s, S_s, Wf, s, ko, r0):
        if probe in ("loadonly", "mmaonly"):  # timing probes: the ring alone, or the ring and the tensor-core
            pass                               # work on registers left as they are (no expansion at all)
        elif wide and probe != "noexpand":
            T.evaluate(T.call_extern("handle", f"{wide_ns}::expand<{block_K // 16}, {G}, {group}, {wide_rb}, {wide_plane}>",
                                     T.access_ptr(W_s[s, 0, 0], "r"), T.access_ptr(S_s[0, 0], "r"), r0, 0,
                                     ko * block_K, Wf.data))
        elif probe == "noexpand":  # timing probe: the scale in every register, the packed tile unread
            for j, k in T.Parallel(WG_ROWS, block_K):
                Wf[j, k] = S_s[r0 + j, (ko * block_K + k) // group]
        else:
            # two weights of one row per byte: 1024 + q by the 0x6400 mantissa trick, minus 1032, times the scale
            for j, k in T.Parallel(WG_ROWS, block_K):
                byte = T.cast(W_s[s, r0 + j, k // 2], T.uint16)
                q = T.if_then_else(k % 2 == 0, byte & T.uint16(15), byte >> T.uint16(4))
                Wf[j, k] = ((T.reinterpret(T.float16, q | T.uint16(0x6400)) - T.float16(1032.0))
                            * S_s[r0 + j, (ko * block_K + k) // group])

    @T.macro
    def mma(Wf, A_t, acc):
        if inst == "wgmma":  # one warpgroup-wide m64 x block_M x 16 instruction per 16 of K, then wait
            T.wgmma_gemm(Wf, A_t, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.wait_wgmma(0)
        elif inst == "mma":  # the warp-level m16n8k16 path (pass config tl.disable_wgmma): 16 rows per warp
            T.gemm(Wf, A_t, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
        # inst == "none": a timing probe without the tensor-core work (wrong results)

    @T.macro
    def step(A_s, W_s, S_s, Wf, acc, full, empty, ko, r0, lane):
        s = ko % stages
        T.barrier_wait(full[s], ko // stages % 2)
        expand(W_s, S_s, Wf, s, ko, r0)
        mma(Wf, A_s[s, :, :], acc)
        if lane == 0:
            release(empty, s)

    @T.macro
    def expand_c(W_s, S_s, Wf, s, ko, r0, c0):
        """:func:`expand` of the K piece ``[c0, c0 + kc)`` of stage ``s`` (``chunk``)."""
        if probe in ("loadonly", "mmaonly"):
            pass
        elif wide and probe != "noexpand":
            T.evaluate(T.call_extern("handle", f"{wide_ns}::expand<{kc // 16}, {G}, {group}, {wide_rb}, {wide_plane}>",
                                     T.access_ptr(W_s[s, 0, 0], "r"), T.access_ptr(S_s[0, 0], "r"), r0, c0 // 2,
                                     ko * block_K + c0, Wf.data))
        elif probe == "noexpand":
            for j, k in T.Parallel(WG_ROWS, kc):
                Wf[j, k] = S_s[r0 + j, (ko * block_K + c0 + k) // group]
        else:
            for j, k in T.Parallel(WG_ROWS, kc):
                byte = T.cast(W_s[s, r0 + j, (c0 + k) // 2], T.uint16)
                q = T.if_then_else(k % 2 == 0, byte & T.uint16(15), byte >> T.uint16(4))
                Wf[j, k] = ((T.reinterpret(T.float16, q | T.uint16(0x6400)) - T.float16(1032.0))
                            * S_s[r0 + j, (ko * block_K + c0 + k) // group])

    @T.macro
    def mma_c(Wf, A_t, acc):
        """One piece's tensor-core work, left running (wgmma) or done (mma.sync)."""
        if inst == "wgmma":
            T.wgmma_gemm(Wf, A_t, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
        elif inst == "mma":
            T.gemm(Wf, A_t, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def mma_post(Wf, A_t, acc, accg, S_s, r0, grp):
        """``post``: one scale group's tensor-core work into its own fp32 partial (the fragment holds
        ``q - 8`` exactly), then the partial times the row's scale added to the accumulator."""
        if inst == "mma":  # (inst "none": the loadonly probe)
            T.gemm(Wf, A_t, accg, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
        if probe not in ("mmaonly", "loadonly"):
            for j, m in T.Parallel(WG_ROWS, block_M):
                acc[j, m] = acc[j, m] + accg[j, m] * T.cast(S_s[r0 + j, grp], T.float32)

    @T.macro
    def step_c(A_s, W_s, S_s, Wa, Wb, acc, full, empty, ko, r0, lane, accg=None):
        """``chunk``: the stage in pieces of ``kc``, expanded into two register buffers in turn, so
        a piece's expansion overlaps the previous piece's wgmma; a buffer is written again only
        after the wgmma that read it has completed (at most one group left in flight).  ``post``:
        each piece is one scale group, its partial in ``accg`` (:func:`mma_post`)."""
        s = ko % stages
        T.barrier_wait(full[s], ko // stages % 2)
        for cc in T.serial(n_c // 2):
            if inst == "wgmma":
                T.wait_wgmma(1)
            expand_c(W_s, S_s, Wa, s, ko, r0, 2 * cc * kc)
            if post:
                mma_post(Wa, A_s[s, :, 2 * cc * kc:2 * cc * kc + kc], acc, accg, S_s, r0,
                         (ko * block_K + 2 * cc * kc) // group)
            else:
                mma_c(Wa, A_s[s, :, 2 * cc * kc:2 * cc * kc + kc], acc)
            if inst == "wgmma":
                T.wait_wgmma(1)
            expand_c(W_s, S_s, Wb, s, ko, r0, 2 * cc * kc + kc)
            if post:
                mma_post(Wb, A_s[s, :, 2 * cc * kc + kc:2 * cc * kc + 2 * kc], acc, accg, S_s, r0,
                         (ko * block_K + 2 * cc * kc + kc) // group)
            else:
                mma_c(Wb, A_s[s, :, 2 * cc * kc + kc:2 * cc * kc + 2 * kc], acc)
        if inst == "wgmma":
            T.wait_wgmma(0)
        if lane == 0:
            release(empty, s)

    sw = stages_w if decoupled else stages

    @T.macro
    def step2(A_s, W_s, S_s, Wf, acc, wfull, wempty, afull, aempty, t, ko, r0, lane, lagged=False):
        """Decoupled rings: the weight stage is free as soon as it is expanded into registers;
        the activation stage once the wgmma that reads it has completed.  ``t`` counts the
        block's own K steps (ring slot and phase), ``ko`` is the K block it reads.

        ``lagged`` (``lag``): the stage's wgmma is left running.  Its expansion went into ``Wf``, the one
        of the consumer's two register buffers that its previous stage did not use; after the issue,
        ``wait_wgmma<1>`` leaves only this stage's wgmma in flight, so the previous stage's activation
        slot (``t - 2``: the consumers alternate) is released, and the next stage's expansion into the
        other buffer overlaps this stage's tensor-core work.  With ``split='n'`` both consumers read every stage
        and the slot released is that of ``t - 1``."""
        s = t % sw
        T.barrier_wait(wfull[s], t // sw % 2)
        expand(W_s, S_s, Wf, s, ko, r0)
        if lane == 0:
            T.mbarrier_arrive(wempty[s])
        sa = t % stages
        T.barrier_wait(afull[sa], t // stages % 2)
        if lagged:
            T.wgmma_gemm(Wf, A_s[sa, :, :], acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.wait_wgmma(depth)
            if lane == 0 and t >= lag_d * depth:
                release(aempty, (t - lag_d * depth) % stages)
        else:
            mma(Wf, A_s[sa, :, :], acc)
            if lane == 0:
                release(aempty, sa)

    @T.macro
    def consume_lag(A_s, W_s, S_s, Wa, Wb, acc, wfull, wempty, afull, aempty, c, lane, Wc=None, accb=None):
        """``lag``: consumer ``c``'s K blocks ``c, c + 2, ...`` with the two buffers in turn (``lag=2``: the three,
        ``Wc`` the third, and the one or two K blocks left over after whole turns in ``Wa``, ``Wb``); the last
        wgmmas are waited for before the accumulator is read, and their slots released.  ``accb`` (``accs=2``): the
        second stage of each pair accumulates into it, so the two stages in flight write different registers; it is
        added into ``acc`` at the end."""
        if depth == 1:
            for j in T.serial(n_k // 4):
                step2(A_s, W_s, S_s, Wa, acc, wfull, wempty, afull, aempty, 4 * j + c, 4 * j + c, 0, lane, True)
                step2(A_s, W_s, S_s, Wb, acc if accb is None else accb, wfull, wempty, afull, aempty, 4 * j + 2 + c,
                      4 * j + 2 + c, 0, lane, True)
            T.wait_wgmma(0)
            if lane == 0:
                release(aempty, (n_k - 2 + c) % stages)
            if accb is not None:
                for j, m in T.Parallel(WG_ROWS, block_M):
                    acc[j, m] = acc[j, m] + accb[j, m]
        else:
            for j in T.serial(n_k // 6):
                step2(A_s, W_s, S_s, Wa, acc, wfull, wempty, afull, aempty, 6 * j + c, 6 * j + c, 0, lane, True)
                step2(A_s, W_s, S_s, Wb, acc, wfull, wempty, afull, aempty, 6 * j + 2 + c, 6 * j + 2 + c, 0, lane,
                      True)
                step2(A_s, W_s, S_s, Wc, acc, wfull, wempty, afull, aempty, 6 * j + 4 + c, 6 * j + 4 + c, 0, lane,
                      True)
            if left >= 1:
                step2(A_s, W_s, S_s, Wa, acc, wfull, wempty, afull, aempty, turned + c, turned + c, 0, lane, True)
            if left >= 2:
                step2(A_s, W_s, S_s, Wb, acc, wfull, wempty, afull, aempty, turned + 2 + c, turned + 2 + c, 0, lane,
                      True)
            T.wait_wgmma(0)
            if lane == 0:
                release(aempty, (n_k - 4 + c) % stages)
                release(aempty, (n_k - 2 + c) % stages)

    @T.macro
    def consume_lag_n(A_s, W_s, S_s, Wa, Wb, acc, wfull, wempty, afull, aempty, kbase, r0, lane):
        """``lag`` with ``split='n'``: this consumer's 64 weight rows (from ``r0``) over all of the block's K
        blocks, the two buffers in turn; the last wgmma is waited for and its slot released."""
        for j in T.serial(n_loc // 2):
            step2(A_s, W_s, S_s, Wa, acc, wfull, wempty, afull, aempty, 2 * j, kbase + 2 * j, r0, lane, True)
            step2(A_s, W_s, S_s, Wb, acc, wfull, wempty, afull, aempty, 2 * j + 1, kbase + 2 * j + 1, r0, lane, True)
        T.wait_wgmma(0)
        if lane == 0:
            release(aempty, (n_loc - 1) % stages)

    @T.macro
    def hand_over(acc, R_s, rbar, tx, wg):
        """kpair, upper block: this consumer's K-half partial into shared memory, then one bulk
        copy into the same buffer of the lower block, completing on the lower block's barrier."""
        T.copy(acc, R_s)
        T.fence_proxy_async()
        T.sync_threads(barrier_id=_BAR_EPI[wg], arrive_count=128)
        if tx % 128 == 0:
            T.copy_cluster(R_s, R_s, dst_block=0, remote_barrier=rbar[wg])

    @T.macro
    def take_over(acc, R_s, rbar, wg):
        """kpair, lower block: wait for the upper block's partial and add it."""
        T.barrier_wait(rbar[wg], 0)
        for j, m in T.Parallel(WG_ROWS, block_M):
            acc[j, m] = acc[j, m] + R_s[j, m]

    @T.macro
    def store(acc, C_s, C, m0, c0, wg):
        for j, m in T.Parallel(WG_ROWS, block_M):
            C_s[m, j] = T.cast(acc[j, m], T.float16)
        T.fence_proxy_async()
        T.sync_threads(barrier_id=_BAR_EPI[wg], arrive_count=128)
        T.copy(C_s, C[m0:m0 + block_M, c0:c0 + WG_ROWS])

    @T.macro
    def meet(acc, Wk, L, F, C_s, C, m0, n0, tx, wg, slot, tile):
        """kglob: this consumer's K-half partial into the block's workspace slot, counted on the tile's counter of
        these rows (one thread, acq_rel, between two barriers of the warpgroup); the second of the pair to count
        resets the counter, adds the other's partial (two terms: the same sum whichever comes second) and stores."""
        for j, m in T.Parallel(WG_ROWS, block_M):
            Wk[slot * (2 * WG_ROWS) + wg * WG_ROWS + j, m] = acc[j, m]
        T.sync_threads(barrier_id=_BAR_EPI[wg], arrive_count=128)
        if tx % 128 == 0:
            F[wg] = T.atomic_add(L[tile * 2 + wg], 1, memory_order="acq_rel", return_prev=True)
        T.sync_threads(barrier_id=_BAR_EPI[wg], arrive_count=128)
        if F[wg] == 1:
            if tx % 128 == 0:
                L[tile * 2 + wg] = 0  # both halves have met: ready for the next launch
            for j, m in T.Parallel(WG_ROWS, block_M):
                acc[j, m] = acc[j, m] + Wk[(slot ^ 1) * (2 * WG_ROWS) + wg * WG_ROWS + j, m]
            store(acc, C_s, C, m0, n0 + wg * WG_ROWS, wg)

    @T.macro
    def produce(A, Bq, S, A_s, W_s, S_s, full, empty, sbar, m0, n0):
        """The one-ring producer (the block's scales, then per K block the activation tile and the
        packed weight tile into one slot)."""
        T.tma_copy(S[n0:n0 + rows, 0:G], S_s, barrier=sbar)
        T.barrier_arrive(sbar)
        for ko in T.serial(n_k):
            s = ko % stages
            T.barrier_wait(empty[s], ko // stages % 2 ^ 1)
            k0 = ko * block_K
            if cluster > 1:
                T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s],
                           cluster_mask=(1 << cluster) - 1)
            else:
                T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s])
            if tiled:  # the block's K block ko is one contiguous run of rows * block_K / 2 bytes
                t0 = (n0 // rows * n_k + ko) * rows
                T.tma_copy(Bq[t0:t0 + rows, 0:block_K // 2], W_s[s, :, :], barrier=full[s])
            else:
                T.tma_copy(Bq[n0:n0 + rows, k0 // 2:(k0 + block_K) // 2], W_s[s, :, :], barrier=full[s])
            T.barrier_arrive(full[s])

    @T.macro
    def consume_q(A_s, W_s, S_s, Wf, acc, R_s, C_s, C, full, empty, sbar, tx, m0, n0, c, Wfb=None, accg=None):
        """``consumers=4``: consumer ``c`` takes the K blocks ``c, c+4, ...``; consumers 1..3 hand their
        partials to consumer 0 through shared memory, which adds them (in that order) and stores.
        ``post``: each K block in pieces of one scale group (:func:`step_c`)."""
        T.inc_max_nreg(consumer_regs)
        lane = tx % 32
        T.barrier_wait(sbar, 0)
        T.clear(acc)
        for i in T.serial(n_k // nc):
            if post:
                step_c(A_s, W_s, S_s, Wf, Wfb, acc, full, empty, nc * i + c, 0, lane, accg)
            else:
                step(A_s, W_s, S_s, Wf, acc, full, empty, nc * i + c, 0, lane)
        if c > 0:
            T.copy(acc, R_s[c - 1, :, :])
            T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=128 * nc)
        else:
            T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=128 * nc)
            for q in T.serial(nc - 1):
                for j, m in T.Parallel(WG_ROWS, block_M):
                    acc[j, m] = acc[j, m] + R_s[q, j, m]
            store(acc, C_s, C, m0, n0, 0)

    @T.macro
    def body(A, Bq, S, C, Wk, L):
        with T.Kernel(grid_n, grid_m, threads=threads, cluster_dims=(cdim, 1, 1)) as (bx, by):
            if wide:
                T.import_source({(False, False): _PERM_SRC, (True, False): _POST_SRC, (False, True): _PERM_FUSED_SRC,
                                 (True, True): _POST_FUSED_SRC}[(post, fuse)] if perm else _WIDE_SRC)
            A_s = T.alloc_shared((stages, block_M, block_K), T.float16)
            W_s = T.alloc_shared((sw, rows, block_K // 2), T.uint8)
            S_s = T.alloc_shared((rows, G), T.float16)
            C0_s = T.alloc_shared((block_M, WG_ROWS), T.float16)
            W0 = T.alloc_fragment((WG_ROWS, kc), T.float16)
            W1 = T.alloc_fragment((WG_ROWS, kc), T.float16)
            if n_c > 1 or lag:  # the second register buffer of each consumer
                W0b = T.alloc_fragment((WG_ROWS, kc), T.float16)
                W1b = T.alloc_fragment((WG_ROWS, kc), T.float16)
            if depth == 2:  # lag=2: the third
                W0c = T.alloc_fragment((WG_ROWS, kc), T.float16)
                W1c = T.alloc_fragment((WG_ROWS, kc), T.float16)
            else:
                W0c = W1c = None
            acc0 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            acc1 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            acc0b = T.alloc_fragment((WG_ROWS, block_M), T.float32) if accs == 2 else None  # accs=2: the second
            acc1b = T.alloc_fragment((WG_ROWS, block_M), T.float32) if accs == 2 else None
            g0 = T.alloc_fragment((WG_ROWS, block_M), T.float32) if post else None  # post: a group's partial
            g1 = T.alloc_fragment((WG_ROWS, block_M), T.float32) if post else None
            if nc == 4:  # the third and fourth consumers' register buffers and accumulators
                W2 = T.alloc_fragment((WG_ROWS, kc), T.float16)
                W3 = T.alloc_fragment((WG_ROWS, kc), T.float16)
                acc2 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
                acc3 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
                if n_c > 1:
                    W2b = T.alloc_fragment((WG_ROWS, kc), T.float16)
                    W3b = T.alloc_fragment((WG_ROWS, kc), T.float16)
                else:
                    W0b = W1b = W2b = W3b = None
                g2 = T.alloc_fragment((WG_ROWS, block_M), T.float32) if post else None
                g3 = T.alloc_fragment((WG_ROWS, block_M), T.float32) if post else None
            if nc == 4:  # the partials of consumers 1..3, added by consumer 0
                R_s = T.alloc_shared((nc - 1, WG_ROWS, block_M), T.float32)
                C1_s = C0_s
            elif split == "k":
                R_s = T.alloc_shared((WG_ROWS, block_M), T.float32)
                C1_s = C0_s
            else:
                R_s = None
                C1_s = T.alloc_shared((block_M, WG_ROWS), T.float16)
            if kglob:  # what each consumer's atomic count returned
                F = T.alloc_shared((2,), T.int32)
            if kpair:  # the K-half partials of the upper block, copied into the lower one
                R0_s = T.alloc_shared((WG_ROWS, block_M), T.float32)
                R1_s = T.alloc_shared((WG_ROWS, block_M), T.float32)
                rbar = T.alloc_cluster_barrier([1, 1])
            T.annotate_layout({A_s: make_swizzled_layout(A_s), W_s: make_swizzled_layout(W_s),
                               C0_s: make_swizzled_layout(C0_s)})
            if decoupled:  # one producer warp per ring: 32 arrivals + the bytes
                full = T.alloc_barrier([32] * stages)
                wfull = T.alloc_barrier([32] * sw)
                wempty = T.alloc_barrier([arrivals // cluster] * sw)
                sbar = T.alloc_barrier([32])
            else:
                full = T.alloc_barrier([128] * stages)
                wfull = wempty = None
                sbar = T.alloc_barrier([128])
            if cluster > 1:
                empty = T.alloc_cluster_barrier([arrivals] * stages)
            else:
                empty = T.alloc_barrier([arrivals] * stages)
            tx = T.get_thread_binding()
            if kpair or kglob:
                n0 = bx // 2 * rows
                krank = bx % 2
                kbase = krank * n_loc
            else:
                n0 = bx * rows
                krank = 0
                kbase = 0
            m0 = by * block_M
            if nc == 2:
                if decoupled and tx < 128:
                    T.dec_max_nreg(PRODUCER_REGS)  # the whole warpgroup, before its warps part ways
                    if tx < 32:  # producer warp 0: the block's scales, then the weight ring
                        T.tma_copy(S[n0:n0 + rows, 0:G], S_s, barrier=sbar)
                        T.barrier_arrive(sbar)
                        for t in T.serial(n_loc):
                            s = t % sw
                            T.barrier_wait(wempty[s], t // sw % 2 ^ 1)
                            kw = (kbase + t) * (block_K // 2)
                            T.tma_copy(Bq[n0:n0 + rows, kw:kw + block_K // 2], W_s[s, :, :], barrier=wfull[s])
                            T.barrier_arrive(wfull[s])
                    elif tx < 64:  # producer warp 1: the activation ring (multicast in a cluster)
                        for t in T.serial(n_loc):
                            s = t % stages
                            T.barrier_wait(empty[s], t // stages % 2 ^ 1)
                            k0 = (kbase + t) * block_K
                            if cluster > 1:
                                T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s],
                                           cluster_mask=(1 << cluster) - 1)
                            else:
                                T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s])
                            T.barrier_arrive(full[s])
                elif tx < 128:
                    T.dec_max_nreg(PRODUCER_REGS)
                    produce(A, Bq, S, A_s, W_s, S_s, full, empty, sbar, m0, n0)
                elif tx < 256:
                    T.inc_max_nreg(CONSUMER_REGS)
                    lane = tx % 32
                    T.barrier_wait(sbar, 0)
                    T.clear(acc0)
                    if accs == 2:
                        T.clear(acc0b)
                    if split == "k" and lag:
                        consume_lag(A_s, W_s, S_s, W0, W0b, acc0, wfull, wempty, full, empty, 0, lane, W0c, acc0b)
                        T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                        for j, m in T.Parallel(WG_ROWS, block_M):
                            acc0[j, m] = acc0[j, m] + R_s[j, m]
                    elif split == "k":
                        for i in T.serial(n_k // 2):
                            if decoupled:
                                step2(A_s, W_s, S_s, W0, acc0, wfull, wempty, full, empty, 2 * i, 2 * i, 0, lane)
                            else:
                                if n_c > 1:
                                    step_c(A_s, W_s, S_s, W0, W0b, acc0, full, empty, 2 * i, 0, lane, g0)
                                else:
                                    step(A_s, W_s, S_s, W0, acc0, full, empty, 2 * i, 0, lane)
                        T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                        for j, m in T.Parallel(WG_ROWS, block_M):
                            acc0[j, m] = acc0[j, m] + R_s[j, m]
                    elif lag:
                        consume_lag_n(A_s, W_s, S_s, W0, W0b, acc0, wfull, wempty, full, empty, kbase, 0, lane)
                    else:
                        for ko in T.serial(n_loc):
                            if decoupled:
                                step2(A_s, W_s, S_s, W0, acc0, wfull, wempty, full, empty, ko, kbase + ko, 0, lane)
                            else:
                                if n_c > 1:
                                    step_c(A_s, W_s, S_s, W0, W0b, acc0, full, empty, ko, 0, lane, g0)
                                else:
                                    step(A_s, W_s, S_s, W0, acc0, full, empty, ko, 0, lane)
                    if kpair:
                        if krank == 1:
                            hand_over(acc0, R0_s, rbar, tx, 0)
                        else:
                            take_over(acc0, R0_s, rbar, 0)
                            store(acc0, C0_s, C, m0, n0, 0)
                    elif kglob:
                        meet(acc0, Wk, L, F, C0_s, C, m0, n0, tx, 0, by * grid_n + bx, by * (grid_n // 2) + bx // 2)
                    else:
                        store(acc0, C0_s, C, m0, n0, 0)
                else:
                    T.inc_max_nreg(CONSUMER_REGS)
                    lane = tx % 32
                    T.barrier_wait(sbar, 0)
                    T.clear(acc1)
                    if accs == 2:
                        T.clear(acc1b)
                    if split == "k" and lag:
                        consume_lag(A_s, W_s, S_s, W1, W1b, acc1, wfull, wempty, full, empty, 1, lane, W1c, acc1b)
                        T.copy(acc1, R_s)
                        T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                    elif split == "k":
                        for i in T.serial(n_k // 2):
                            if decoupled:
                                step2(A_s, W_s, S_s, W1, acc1, wfull, wempty, full, empty, 2 * i + 1, 2 * i + 1, 0, lane)
                            else:
                                if n_c > 1:
                                    step_c(A_s, W_s, S_s, W1, W1b, acc1, full, empty, 2 * i + 1, 0, lane, g1)
                                else:
                                    step(A_s, W_s, S_s, W1, acc1, full, empty, 2 * i + 1, 0, lane)
                        T.copy(acc1, R_s)
                        T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                    else:
                        if lag:
                            consume_lag_n(A_s, W_s, S_s, W1, W1b, acc1, wfull, wempty, full, empty, kbase, WG_ROWS,
                                          lane)
                        else:
                            for ko in T.serial(n_loc):
                                if decoupled:
                                    step2(A_s, W_s, S_s, W1, acc1, wfull, wempty, full, empty, ko, kbase + ko,
                                          WG_ROWS, lane)
                                else:
                                    if n_c > 1:
                                        step_c(A_s, W_s, S_s, W1, W1b, acc1, full, empty, ko, WG_ROWS, lane, g1)
                                    else:
                                        step(A_s, W_s, S_s, W1, acc1, full, empty, ko, WG_ROWS, lane)
                        if kpair:
                            if krank == 1:
                                hand_over(acc1, R1_s, rbar, tx, 1)
                            else:
                                take_over(acc1, R1_s, rbar, 1)
                                store(acc1, C1_s, C, m0, n0 + WG_ROWS, 1)
                        elif kglob:
                            meet(acc1, Wk, L, F, C1_s, C, m0, n0, tx, 1, by * grid_n + bx,
                                 by * (grid_n // 2) + bx // 2)
                        else:
                            store(acc1, C1_s, C, m0, n0 + WG_ROWS, 1)
            else:  # four consumers take the K blocks in turn on the one ring (split="k")
                if tx < 128:
                    T.dec_max_nreg(producer_regs)
                    produce(A, Bq, S, A_s, W_s, S_s, full, empty, sbar, m0, n0)
                elif tx < 256:
                    consume_q(A_s, W_s, S_s, W0, acc0, R_s, C0_s, C, full, empty, sbar, tx, m0, n0, 0, W0b, g0)
                elif tx < 384:
                    consume_q(A_s, W_s, S_s, W1, acc1, R_s, C0_s, C, full, empty, sbar, tx, m0, n0, 1, W1b, g1)
                elif tx < 512:
                    consume_q(A_s, W_s, S_s, W2, acc2, R_s, C0_s, C, full, empty, sbar, tx, m0, n0, 2, W2b, g2)
                else:
                    consume_q(A_s, W_s, S_s, W3, acc3, R_s, C0_s, C, full, empty, sbar, tx, m0, n0, 3, W3b, g3)
            if cdim > 1:
                T.cluster_sync()  # no block leaves while a peer may still arrive on (or copy into) it

    a_shape, bq_shape = (M, K), ((N, KP) if not tiled else (N * n_k, block_K // 2))
    if kglob:
        ws_shape, l_shape = kglob_workspace(M, N, block_M=block_M)

        @T.prim_func
        def main_kglob(
            A: T.Tensor(a_shape, T.float16),
            Bq: T.Tensor(bq_shape, T.uint8),
            S: T.Tensor((N, G), T.float16),
            C: T.Tensor((M, N), T.float16),
            Wk: T.Tensor(ws_shape, T.float32),
            L: T.Tensor(l_shape, T.int32),
        ):
            body(A, Bq, S, C, Wk, L)

        return main_kglob

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, T.float16),
        Bq: T.Tensor(bq_shape, T.uint8),
        S: T.Tensor((N, G), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        body(A, Bq, S, C, None, None)

    return main


@tilelang.jit(target=TARGET, pass_configs=W4_PASS_CONFIGS)
def w4a16_gemm(
    M: int,
    N: int,
    K: int,
    group: int = 128,
    block_M: int = 16,
    block_K: int = 256,
    stages: int = 4,
    split: str = "k",
    cluster: int = 1,
    probe: str = "",
    stages_w: int = 0,
    kpair: bool = False,
    chunk: int = 0,
    wide: bool = False,
    consumers: int = 2,
    tiled: bool = False,
    perm: bool = False,
    post: bool = False,
    lag: bool = False,
    fuse: bool = False,
    accs: int = 1,
    kglob: bool = False,
):
    """W4A16 with the weights expanded into wgmma's register operand (see the module docstring).

    ``block_M`` = activation rows per block (wgmma's N, 16..256); ``block_K`` = K per stage;
    ``split`` = ``"k"`` (two consumers on alternate K blocks of 64 weight rows) or ``"n"``
    (each consumer its own 64 rows); ``cluster`` = blocks along N sharing the activation
    tile by TMA multicast; ``probe="noexpand"`` = a timing probe that skips the expansion
    (wrong results: the time of the same pipeline without the ALU work), ``"nomma"`` one without
    the tensor-core work, ``"loadonly"`` one whose consumers only wait for each stage and release
    it (the TMA ring alone), ``"mmaonly"`` the ring and the tensor-core work on registers that are
    never filled (no expansion, not even the scale reads of ``noexpand``); ``wide`` = the word-wide
    expansion; ``consumers`` = consumer warpgroups (2, or 4 taking the K blocks in turn); ``lag`` = each
    consumer's next stage expanded while its current wgmma runs (decoupled rings); ``accs=2`` = with ``lag``, each
    consumer's stages alternate between two fp32 accumulators; ``kglob`` = ``kpair``'s split of K without the cluster:
    the kernel takes ``(A, Bq, S, C, Wk, L)`` (:func:`kglob_workspace`; :func:`build` allocates them) and the two
    halves meet in global memory.
    """
    return _program(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split,
                    cluster=cluster, probe=probe, stages_w=stages_w, kpair=kpair, chunk=chunk, wide=wide,
                    consumers=consumers, tiled=tiled, perm=perm, post=post, lag=lag, fuse=fuse, accs=accs,
                    kglob=kglob)


#: The warp-level tensor-core path: tilelang's wgmma lowering switched off, T.gemm on m16n8k16.
W4_MMA_PASS_CONFIGS = {**W4_PASS_CONFIGS, tilelang.PassConfigKey.TL_DISABLE_WGMMA: True}


@tilelang.jit(target=TARGET, pass_configs=W4_MMA_PASS_CONFIGS)
def w4a16_gemm_mma(
    M: int,
    N: int,
    K: int,
    group: int = 128,
    block_M: int = 16,
    block_K: int = 256,
    stages: int = 4,
    split: str = "k",
    cluster: int = 1,
    probe: str = "",
    stages_w: int = 0,
    kpair: bool = False,
    chunk: int = 0,
    wide: bool = False,
    consumers: int = 2,
    tiled: bool = False,
    perm: bool = False,
    post: bool = False,
    lag: bool = False,
    fuse: bool = False,
    accs: int = 1,
    kglob: bool = False,
):
    """:func:`w4a16_gemm` on the warp-level ``mma.sync`` m16n8k16 instruction instead of wgmma:
    each warp multiplies its 16 weight rows, the tensor-core work is issued in m16 x n8 x k16
    pieces (for a decode batch of 16 rows, two per 16 of K) instead of one m64 x 16 x 16 per
    warpgroup."""
    return _program(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split,
                    cluster=cluster, probe=probe, stages_w=stages_w, kpair=kpair, inst="mma", chunk=chunk,
                    wide=wide, consumers=consumers, tiled=tiled, perm=perm, post=post, lag=lag, fuse=fuse,
                    accs=accs, kglob=kglob)


def config(block_M: int, block_K: int, stages: int, split: str = "k", cluster: int = 1, stages_w: int = 0,
           kpair: bool = False, inst: str = "wgmma", chunk: int = 0, wide: bool = False,
           consumers: int = 2, tiled: bool = False, perm: bool = False, post: bool = False,
           lag: bool | int = False, fuse: bool = False, accs: int = 1, kglob: bool = False) -> dict[str, Any]:
    """One configuration as the suite's tables and :func:`build` take it (``chunk``, ``wide`` and
    ``consumers`` only when set, so the configurations of the recorded runs keep their form; ``lag`` kept as
    ``True`` for one stage left running, as ``2`` for two)."""
    cfg = dict(block_M=block_M, block_K=block_K, stages=stages, split=split, cluster=cluster, stages_w=stages_w,
               kpair=kpair, inst=inst)
    if chunk:
        cfg["chunk"] = chunk
    if wide:
        cfg["wide"] = True
    if consumers != 2:
        cfg["consumers"] = consumers
    if tiled:
        cfg["tiled"] = True
    if perm:
        cfg["perm"] = True
    if post:
        cfg["post"] = True
    require(lag in (False, True, 0, 1, 2), f"lag is the number of stages' wgmma left running, 0, 1 or 2: got {lag!r}")
    if lag:
        cfg["lag"] = 2 if lag == 2 else True
    if fuse:
        cfg["fuse"] = True
    if accs != 1:
        cfg["accs"] = accs
    if kglob:
        cfg["kglob"] = True
    return cfg


def tile_weights(packed: Any, cfg: dict[str, Any]) -> Any:
    """The packed weights ``[N, K/2]`` repacked once, offline, for a ``tiled`` configuration: every
    (block, K block) tile of ``rows x block_K/2`` bytes contiguous, tiles of one block in K order
    (``[N/rows * K/block_K * rows, block_K/2]``); the same bytes, so the ledger's count is unchanged.
    Other configurations take ``packed`` as it is."""
    if not cfg.get("tiled"):
        return packed
    rows, bk = block_rows(cfg["split"]), cfg["block_K"]
    N, KP = packed.shape
    require(N % rows == 0 and (2 * KP) % bk == 0, f"[{N}, {KP}] packed weights do not split into {rows} x {bk // 2} tiles")
    n_k = 2 * KP // bk
    return packed.reshape(N // rows, rows, n_k, bk // 2).permute(0, 2, 1, 3).contiguous().reshape(N * n_k, bk // 2)


def perm_source_k() -> list[int]:
    """For :func:`interleave_weights`: the k (inside a run of 128) whose nibble lands at nibble position
    ``j`` of the run's 64 repacked bytes (byte ``j // 2``, low nibble for even ``j``).  Byte ``16 t + 4 c
    + i`` is byte ``i`` of thread ``t``'s word for the chunk ``[32 c, 32 c + 32)``."""
    out = []
    for j in range(128):
        p, hi = divmod(j, 2)
        t, rest = divmod(p, 16)
        c, i = divmod(rest, 4)
        out.append(32 * c + PERM_NIBBLE_K[t][2 * i + hi])
    return out


def interleave_weights(packed: Any) -> Any:
    """The packed weights ``[N, K/2]`` (two int4 per byte, low nibble = even k) repacked once, offline,
    for a ``perm`` configuration: inside every run of 128 k of a row the nibbles are reordered as
    :data:`PERM_NIBBLE_K` says, so that each thread of the expansion reads one 16-byte unit and picks
    fp16 pairs with one mask each.  The same bytes of the same row in the same 64-byte run: the
    ledger's count, the tiling and the TMA boxes are unchanged."""
    import torch

    N, KP = packed.shape
    require(packed.dtype == torch.uint8 and (2 * KP) % 128 == 0,
            f"interleave_weights takes [N, K/2] uint8 with K a multiple of 128, got {list(packed.shape)} {packed.dtype}")
    q = torch.stack((packed & 15, packed >> 4), dim=-1).reshape(N, 2 * KP // 128, 128)
    idx = torch.tensor(perm_source_k(), dtype=torch.long, device=packed.device)
    q = q[:, :, idx].reshape(N, KP, 2)
    return (q[..., 0] | (q[..., 1] << 4)).contiguous()


def kernel_weights(packed: Any, cfg: dict[str, Any]) -> Any:
    """The weights as configuration ``cfg`` reads them: ``packed`` itself, or repacked once, offline
    (``perm``: :func:`interleave_weights`, then ``tiled``: :func:`tile_weights`)."""
    w = interleave_weights(packed) if cfg.get("perm") else packed
    return tile_weights(w, cfg)


def label(cfg: dict[str, Any]) -> str:
    """Short printable name of a configuration (the record's ``label``)."""
    if cfg.get("inst") == "dec":
        from kernels.gemm import w4a16_dec

        return w4a16_dec.label(cfg)
    if cfg.get("inst") == "tma":
        from kernels.gemm import w4a16_tma

        return w4a16_tma.label(cfg)
    if cfg.get("inst") == "sk":
        from kernels.gemm import w4a16_sk

        return w4a16_sk.label(cfg)
    return (f"m{cfg['block_M']}_k{cfg['block_K']}_s{cfg['stages']}"
            + (f"_w{cfg['stages_w']}" if cfg.get("stages_w") else "") + f"_{cfg['split']}"
            + (f"_c{cfg['cluster']}" if cfg.get("cluster", 1) > 1 else "") + ("_kp" if cfg.get("kpair") else "")
            + ("_mma" if cfg.get("inst") == "mma" else "") + (f"_x{cfg['chunk']}" if cfg.get("chunk") else "")
            + (f"_q{cfg['consumers']}" if cfg.get("consumers", 2) != 2 else "") + ("_tl" if cfg.get("tiled") else "")
            + ("_il" if cfg.get("perm") else "") + ("_po" if cfg.get("post") else "")
            + ("_lg" if cfg.get("lag") else "") + ("2" if cfg.get("lag") == 2 else "") + ("_fu" if cfg.get("fuse") else "")
            + (f"_a{cfg['accs']}" if cfg.get("accs", 1) != 1 else "") + ("_kg" if cfg.get("kglob") else "")
            + ("_wd" if cfg.get("wide") else ""))


def build(M: int, N: int, K: int, group: int, cfg: dict[str, Any], probe: str = "") -> Any:
    """Compile one configuration (``cfg["inst"]`` picks wgmma, mma.sync or one of the decode kernels
    :mod:`kernels.gemm.w4a16_dec` (``"dec"``) and :mod:`kernels.gemm.w4a16_tma` (``"tma"``), whose one
    timing probe is ``loadonly``, or the stream-K decode kernel :mod:`kernels.gemm.w4a16_sk` (``"sk"``, no
    probes))."""
    if cfg.get("inst") == "dec":
        from kernels.gemm import w4a16_dec

        return w4a16_dec.build(M, N, K, group, cfg, probe=probe)
    if cfg.get("inst") == "tma":
        from kernels.gemm import w4a16_tma

        return w4a16_tma.build(M, N, K, group, cfg, probe=probe)
    if cfg.get("inst") == "sk":
        from kernels.gemm import w4a16_sk

        return w4a16_sk.build(M, N, K, group, cfg, probe=probe)
    kw = {k: v for k, v in cfg.items() if k != "inst"}
    if probe:
        kw["probe"] = probe
    if cfg.get("inst", "wgmma") == "mma":
        return w4a16_gemm_mma(M, N, K, group, **kw)
    kern = w4a16_gemm(M, N, K, group, **kw)
    return WithWorkspace(kern, *kglob_workspace(M, N, block_M=cfg["block_M"])) if cfg.get("kglob") else kern


class WithWorkspace:
    """A ``kglob`` kernel called as every W4A16 kernel is, ``(A, Bq, S, C)``: its fp32 partials and int32 counters
    are allocated zeroed on C's device at the first call and kept (every complete launch leaves the counters zero).
    Other attributes (``get_kernel_source``, ...) are the kernel's."""

    def __init__(self, kernel: Any, ws_shape: tuple[int, int], l_shape: tuple[int]) -> None:
        self.kernel, self.ws_shape, self.l_shape = kernel, ws_shape, l_shape
        self._buffers: dict[Any, tuple[Any, Any]] = {}

    def buffers(self, device: Any) -> tuple[Any, Any]:
        import torch

        if device not in self._buffers:
            self._buffers[device] = (torch.zeros(self.ws_shape, dtype=torch.float32, device=device),
                                     torch.zeros(self.l_shape, dtype=torch.int32, device=device))
        return self._buffers[device]

    def __call__(self, a: Any, bq: Any, s: Any, c: Any) -> Any:
        return self.kernel(a, bq, s, c, *self.buffers(c.device))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)


def w4a16_ref(a: Any, packed: Any, scales: Any, group: int) -> Any:
    """fp32 reference on the weights the kernel expands: ``(q - 8) * s`` rounded to fp16 once."""
    import torch

    from kernels.gemm.lowp import dequant_weight

    w16 = dequant_weight(packed, scales, group).to(torch.float16)
    return torch.matmul(a.to(torch.float32), w16.to(torch.float32).t())


def check_w4a16_inputs(a: Any, packed: Any, scales: Any, group: int = 128) -> tuple[int, int, int]:
    """Validate the operands (shapes, dtypes, contiguity, one CUDA device); returns (M, N, K)."""
    import torch

    require(isinstance(a, torch.Tensor) and a.dim() == 2, "a must be a [M, K] tensor")
    require(isinstance(packed, torch.Tensor) and packed.dim() == 2, "packed weights must be a [N, K/2] uint8 tensor")
    M, K = a.shape
    N, KP = packed.shape
    require(KP * 2 == K, f"packed weights hold two int4 per byte: [N, K/2] = [N, {K // 2}], got [N, {KP}]")
    require(group > 0 and K % group == 0, f"K={K} must be a multiple of the scale group {group}")
    check_matrix(a, "a", (M, K), torch.float16)
    check_matrix(packed, "packed", (N, KP), torch.uint8)
    check_matrix(scales, "scales", (N, K // group), torch.float16)
    check_cuda(a=a, packed=packed, scales=scales)
    return M, N, K


def pick_config(M: int) -> dict[str, Any]:
    """The configuration of record for M activation rows: the winners of the recorded H200 search
    (suite ``gemm.w4a16``, run ``gemmvar4``; margins of 1-5 % between the first candidates)."""
    if M <= 16:
        return config(16, 512, 4, inst="mma")
    if M <= 64:
        return config(64, 256, 4, chunk=128)
    if M <= 128:
        return config(128, 128, 4, chunk=64)
    return config(256, 64, 4, "n")


def run_w4a16(a: Any, packed: Any, scales: Any, group: int = 128, out: Any = None, **cfg: Any) -> Any:
    """Check the operands, compile (or load) the kernel for their shape and run it."""
    import torch

    M, N, K = check_w4a16_inputs(a, packed, scales, group)
    cfg = cfg if cfg.get("inst") in ("dec", "tma") else {**pick_config(M), **cfg}
    if cfg.get("inst") not in ("dec", "tma"):  # the decode kernels' builds check their own configuration
        check_config(M, N, K, group=group, **cfg)
    if out is None:
        out = torch.empty((M, N), dtype=torch.float16, device=a.device)
    check_matrix(out, "out", (M, N), torch.float16)
    build(M, N, K, group, cfg)(a, packed, scales, out)
    return out
