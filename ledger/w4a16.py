"""The W4A16 ledger: what int4 weights can buy over fp16 weights, shape by shape.

A weight-only quantised GEMM ``C[M,N] = A[M,K] @ W[N,K]^T`` (A fp16, W int4 two per byte,
one fp16 scale per ``group`` consecutive k of each row, C fp16) does the same ``2*M*N*K``
FLOPs as the fp16 GEMM it replaces and moves fewer bytes:

* int4 kernel: ``2*M*K + N*K/2 + 2*N*K/group + 2*M*N`` bytes
  (:func:`ledger.gemm.dequant_gemm_cost`);
* fp16 kernel: ``2*M*K + 2*N*K + 2*M*N`` bytes (:func:`ledger.gemm.gemm_cost`).

Each kernel's floor is its roofline time ``max(bytes / bandwidth, FLOPs / tensor rate)``
(:meth:`ledger.cost.Cost.lower_bound`), and the largest speed-up the int4 weights can show is
the ratio of the two floors, :func:`gain_bound`.  While both are memory-bound (decode, small
M) the ratio is close to the ratio of the weight bytes, almost 4; the int4 kernel turns
compute-bound first, at :func:`compute_bound_from` rows (a few dozen for 8192 x 8192
weights on an H200), and from there the ratio falls like ``1/M`` until the fp16 kernel is
compute-bound too (:func:`fp16_compute_bound_from`, near the machine balance) and it is 1:
the same FLOPs on the same tensor cores.  The count says where the gain shrinks before
any kernel is written.

The FLOPs of expanding the weights (a few integer and fp16 operations per weight, on the
CUDA cores, once per weight tile and activation tile) are not in the count: they are the
kernel's own overhead, visible as the distance between the measured time and the floor.

``python -m ledger.w4a16`` prints the table.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Optional

from ledger.cost import Cost, check_size, dtype_bytes
from ledger.figures import Figure, fig
from ledger.gemm import dequant_gemm_cost, gemm_cost
from ledger.machines import DEFAULT_MACHINE, Machine, get_machine

__all__ = [
    "Roofline",
    "w4a16_cost",
    "weight_bytes",
    "fp16_cost",
    "roofline",
    "gain_bound",
    "compute_bound_from",
    "fp16_compute_bound_from",
    "smem_bytes",
    "dec_smem_bytes",
    "dec_onchip_bytes",
    "dec_plan",
    "tma_smem_bytes",
    "tma_plan",
    "tma_resident",
    "DEC_DESIGN",
    "DECODE_SHAPES",
    "SQUARE_SHAPE",
    "figures",
]

#: The shapes the course measures: one 8192 x 8192 weight matrix at four batch sizes ...
DECODE_SHAPES: tuple[tuple[int, int, int], ...] = ((1, 8192, 8192), (16, 8192, 8192), (64, 8192, 8192),
                                                  (128, 8192, 8192))
#: ... and one compute-bound square product.
SQUARE_SHAPE: tuple[int, int, int] = (4096, 4096, 4096)


@dataclass(frozen=True)
class Roofline:
    """One kernel's floor on one machine."""

    cost: Cost
    machine: str
    memory_s: float
    compute_s: float

    @property
    def bound_s(self) -> float:
        """``max(memory_s, compute_s)``: no kernel of this cost is faster."""
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


def w4a16_cost(m: int, n: int, k: int, group: int = 128) -> Cost:
    """int4 weights (two per byte), fp16 per-group scales, fp16 activations and output."""
    return dequant_gemm_cost(m, n, k, weight_dtype="int4", group=group)


def weight_bytes(n: int, k: int, group: int = 128) -> int:
    """The int4 weights and fp16 scales alone: the bytes every W4A16 kernel of an ``n x k`` weight reads once,
    whatever M.  :func:`w4a16_cost` is linear in M, so this is its value at M = 0: ``2 cost(1) - cost(2)``."""
    return int(2 * w4a16_cost(1, n, k, group).bytes - w4a16_cost(2, n, k, group).bytes)


def fp16_cost(m: int, n: int, k: int) -> Cost:
    """The fp16 GEMM the int4 kernel replaces (cuBLAS on fp16 weights)."""
    return gemm_cost(m, n, k, "fp16")


def roofline(cost: Cost, machine: "Machine | str | None" = None) -> Roofline:
    """Byte time and FLOP time of ``cost`` on ``machine`` (default profile: tensor_core.fp16, hbm)."""
    mach = get_machine(machine)
    return Roofline(cost, mach.name, cost.memory_time(mach), cost.compute_time(mach))


def gain_bound(m: int, n: int, k: int, group: int = 128, machine: "Machine | str | None" = None) -> float:
    """fp16 floor / int4 floor: the largest speed-up over an fp16 GEMM *at its own floor*."""
    return roofline(fp16_cost(m, n, k), machine).bound_s / roofline(w4a16_cost(m, n, k, group), machine).bound_s


def _crossover(weight_bytes_per_elem: float, n: int, k: int, machine: "Machine | str | None") -> float:
    """Smallest M (real) at which ``2MNK/F >= (2MK + w*N*K + 2MN)/B`` for weight bytes ``w``."""
    check_size("n", n)
    check_size("k", k)
    mach = get_machine(machine)
    flop_rate, byte_rate = mach.roof(None), mach.memory_rate(None)
    per_row = 2 * n * k / flop_rate - 2 * (k + n) / byte_rate  # seconds of (compute - activation bytes) per row of M
    if per_row <= 0:
        raise ValueError(f"an {n}x{k} weight matrix never turns compute-bound on {mach.name}")
    return weight_bytes_per_elem * n * k / byte_rate / per_row


def compute_bound_from(n: int, k: int, group: int = 128, machine: "Machine | str | None" = None) -> float:
    """Rows M from which the int4 kernel is compute-bound (the gain starts to shrink)."""
    check_size("group", group)
    return _crossover(0.5 + 2 / group, n, k, machine)


def fp16_compute_bound_from(n: int, k: int, machine: "Machine | str | None" = None) -> float:
    """Rows M from which the fp16 GEMM is compute-bound too (the gain bound is 1 from there)."""
    return _crossover(2.0, n, k, machine)


def smem_bytes(k: int, *, group: int, block_m: int, block_k: int, stages: int, rows: int, consumers: int = 2,
               split_k: bool = True, stages_w: int = 0, k_pair: bool = False, segments: int = 1) -> int:
    """Shared memory of one block of the swap-AB W4A16 kernel (:mod:`kernels.gemm.w4a16`).

    ``stages`` copies of the activation tile (``block_m x block_k`` fp16) and of the packed
    weight tile (``rows x block_k/2`` bytes); the block's scales for the whole K (``rows x
    k/group`` fp16); one ``block_m x 64`` fp16 C staging tile per consumer that stores
    (``split_k``: one, else ``consumers``); with ``split_k`` the ``64 x block_m`` fp32 tile
    each consumer but the first hands to the first.  ``stages_w`` > 0: the weight tiles have a ring of
    their own, ``stages_w`` deep, and ``stages`` counts the activation ring only.  ``k_pair``:
    two blocks split K and every consumer of the upper block hands its ``64 x block_m`` fp32
    partial to the lower one (one such tile per consumer in each block).  ``segments`` (the stream-K decode kernel,
    :mod:`kernels.gemm.w4a16_sk`): a block's range may cover parts of that many weight tiles, each with its own scales
    and its own hand-over tile.
    """
    for name, v in (("k", k), ("group", group), ("block_m", block_m), ("block_k", block_k), ("stages", stages),
                    ("rows", rows), ("consumers", consumers), ("segments", segments)):
        check_size(name, v)
    fp16, fp32, i4 = dtype_bytes("fp16"), dtype_bytes("fp32"), dtype_bytes("int4")
    wg_rows = rows if split_k else rows // consumers
    ring = stages * block_m * block_k * fp16 + (stages_w or stages) * rows * block_k * i4
    scales = segments * rows * math.ceil(k / group) * fp16
    c_stage = (1 if split_k else consumers) * block_m * wg_rows * fp16
    reduce = segments * wg_rows * block_m * fp32 * ((consumers - 1) if split_k else (consumers if k_pair else 0))
    return int(ring + scales + c_stage + reduce)


#: 32-bit registers of one SM's register file (Hopper), the pool a block's warps share.
REGISTER_FILE = 65536
#: The swap-AB kernel's warp-specialised blocks: (threads, registers the producer warpgroup keeps) for
#: two consumer warpgroups and for four (``consumers=4``).
WS_BLOCKS = {2: (384, 40), 4: (640, 32)}


def setmaxnreg_split(threads: int, keep: int, warpgroup: int = 128) -> dict:
    """The register budget of a warp-specialised block whose first warpgroup (the producer) lowers its
    registers with ``setmaxnreg.dec`` to ``keep`` and whose other warpgroups raise theirs with
    ``setmaxnreg.inc``.  A block is launched with ``launch`` registers per thread (the register file
    over the threads, rounded down to a multiple of 8, which is what ptxas allocates under
    ``__launch_bounds__(threads, 1)``); ``setmaxnreg`` only moves registers inside that allocation, so
    the consumers can take exactly what the producer frees: ``take`` each.  Asking for more leaves a
    consumer waiting in ``setmaxnreg.inc`` for ever."""
    for name, v in (("threads", threads), ("keep", keep), ("warpgroup", warpgroup)):
        check_size(name, v)
    if threads % warpgroup or threads <= warpgroup:
        raise ValueError(f"threads={threads} must be a multiple of {warpgroup}, more than one warpgroup")
    launch = REGISTER_FILE // threads // 8 * 8
    if not 24 <= keep <= launch or keep % 8:
        raise ValueError(f"keep={keep} must be a multiple of 8 from 24 to the launch allocation {launch}")
    freed = warpgroup * (launch - keep)
    extra = freed // (threads - warpgroup) // 8 * 8
    return {"threads": threads, "launch": launch, "keep": keep, "freed": freed, "extra": extra, "take": launch + extra}


def post_fold(block_m: int, *, rows: int = 64, group: int = 128, warpgroup: int = 128) -> dict:
    """``post`` (the scale after the tensor-core work), per thread of a consumer warpgroup and per scale
    group: the fp32 multiply-adds of the fold (its share of the ``rows x block_m`` partial) against the
    ``mul.f16x2`` the expansion no longer issues (its share of the ``rows x group`` weights, two a pair)."""
    for name, v in (("block_m", block_m), ("rows", rows), ("group", group), ("warpgroup", warpgroup)):
        check_size(name, v)
    if (rows * block_m) % warpgroup or (rows * group) % (2 * warpgroup):
        raise ValueError(f"a {rows} x {block_m} partial and {rows} x {group} weights must split evenly over "
                         f"{warpgroup} threads")
    return {"ffma": rows * block_m // warpgroup, "hmul2": rows * group // warpgroup // 2}


def expand_ops(*, scaled: bool = True, fused: bool = True) -> dict:
    """Instructions of the interleaved expansion per 32-bit word of weights (8 int4, four fp16 pairs), by kind
    (:mod:`kernels.gemm.w4a16`, ``perm``): each pair is masked into the mantissa of 1024 by ``lop3`` -- one with
    ``fuse`` (mask and exponent bits together, written in PTX), two from the C expression (nvcc emits an AND and
    an OR, one immediate each) -- one shift brings the upper half-word's nibbles down, one ``fma.f16x2`` per pair
    leaves ``q - 8``, and with ``scaled`` (not ``post``) one ``mul.f16x2`` per pair applies the scale.  The
    shared-memory reads and their addresses are left out (one 128-bit read per four words)."""
    ops = {"lop3": 4 if fused else 8, "shf": 1, "hfma2": 4, "hmul2": 4 if scaled else 0}
    return {**ops, "total": sum(ops.values())}


def dec_smem_bytes(k: int, *, nt: int, rows: int, wk: int, split: int, pad: int = 32) -> int:
    """Shared memory of one block of the decode kernel (:mod:`kernels.gemm.w4a16_dec`): the block's
    activation slice (``8*nt`` rows of ``k/split`` fp16, each row padded by ``pad`` halves) and the
    fp32 partial tile of each of its ``wk`` K warps (``rows x (8*nt + 1)``, one float of padding)."""
    for name, v in (("k", k), ("nt", nt), ("rows", rows), ("wk", wk), ("split", split)):
        check_size(name, v)
    fp16, fp32 = dtype_bytes("fp16"), dtype_bytes("fp32")
    bm = 8 * nt
    return int(bm * (k // split + pad) * fp16 + wk * rows * (bm + 1) * fp32)


def dec_onchip_bytes(m: int, n: int, k: int, *, rows: int, split: int) -> dict[str, int]:
    """Bytes the decode kernel moves on chip besides its DRAM floor (:func:`w4a16_cost` counts each
    operand once): ``activations_l2``: every one of the ``n/rows`` weight tiles reads the whole
    ``m x k`` activation matrix from L2 (after the first, L2 hits); ``partials_dsmem``: ``split - 1``
    blocks of each tile hand their fp32 ``m x rows`` partial to block 0 through distributed shared
    memory (no DRAM traffic).  Neither is in the roofline: both stay off DRAM."""
    for name, v in (("m", m), ("n", n), ("k", k), ("rows", rows), ("split", split)):
        check_size(name, v)
    fp16, fp32 = dtype_bytes("fp16"), dtype_bytes("fp32")
    tiles = -(-n // rows)
    return {"activations_l2": int(tiles * m * k * fp16), "partials_dsmem": int(tiles * (split - 1) * m * rows * fp32)}


#: The decode kernel's design point the course reasons with (M = 16 on 8192 x 8192 weights):
#: 128 weight rows a block (8 warps of 16), K split over a cluster of 4 blocks, 4 groups of 128 k
#: in flight per warp, 128 registers a thread.  (The search on the GPU may pick another point.)
DEC_DESIGN = dict(m=16, n=8192, k=8192, rows=128, wk=1, split=4, depth=4, regs=128)


def dec_plan(m: int, n: int, k: int, *, rows: int, wk: int, split: int, depth: int, regs: int = 128,
             group: int = 128, machine: "Machine | str | None" = None) -> dict[str, float]:
    """Little's law for the decode kernel: how many bytes it keeps in flight and what latency they cover.

    ``n/rows * split`` blocks of ``rows/16 * wk`` warps; the register file (``regs_per_sm``) holds
    ``regs_per_sm // (threads * regs)`` blocks per SM.  Each warp keeps ``depth`` groups in flight:
    16 rows x ``group/2`` packed bytes each.  ``latency_covered_s`` = bytes in flight on all SMs /
    bandwidth: the DRAM latency up to which the loads alone can keep the bandwidth busy."""
    for name, v in (("m", m), ("n", n), ("k", k), ("rows", rows), ("wk", wk), ("split", split), ("depth", depth),
                    ("regs", regs), ("group", group)):
        check_size(name, v)
    mach = get_machine(machine)
    sms = int(mach.resource("sms"))
    threads = 32 * (rows // 16) * wk
    blocks = (n // rows) * split
    resident = max(1, int(mach.resource("regs_per_sm")) // (threads * regs))
    per_sm = min(resident, math.ceil(blocks / sms))
    warps = per_sm * threads // 32
    inflight = warps * depth * 16 * (group // 2)
    return {"blocks": blocks, "blocks_per_sm": per_sm, "warps_per_sm": warps, "inflight_bytes_per_sm": inflight,
            "latency_covered_s": inflight * sms / mach.memory_rate(None), "sms": sms}


def tma_smem_bytes(k: int, *, nt: int, rows: int, split: int, stages: int, gps: int, group: int = 128,
                   pad: int = 32) -> int:
    """Shared memory of one block of the TMA decode kernel (:mod:`kernels.gemm.w4a16_tma`): the weight
    ring (``stages`` slots of ``gps`` planes, each ``rows`` x ``group/2`` packed bytes), the block's
    activation slice (``8*nt`` rows of ``k/split`` fp16, each row padded by ``pad`` halves), its scales
    (``rows`` x ``k/split/group`` fp16) and the fp32 partial tile (``rows x (8*nt + 1)``)."""
    for name, v in (("k", k), ("nt", nt), ("rows", rows), ("split", split), ("stages", stages), ("gps", gps),
                    ("group", group)):
        check_size(name, v)
    fp16, fp32 = dtype_bytes("fp16"), dtype_bytes("fp32")
    bm, ks = 8 * nt, k // split
    ring = stages * gps * rows * (group // 2)
    return int(ring + bm * (ks + pad) * fp16 + rows * (ks // group) * fp16 + rows * (bm + 1) * fp32)


#: Registers a thread of the TMA decode kernel is budgeted (ptxas is asked for them by the launch bounds).
TMA_REGS = 96


def tma_resident(smem: int, threads: int, *, regs: int = TMA_REGS, static: int = 3072,
                 machine: "Machine | str | None" = None) -> int:
    """Blocks of the TMA decode kernel one SM holds, at most 2: by shared memory (``smem`` dynamic bytes a
    block, plus ``static``: its barriers and the 1 KB the runtime reserves a block) and by registers
    (``threads x regs`` a block)."""
    for name, v in (("smem", smem), ("threads", threads), ("regs", regs)):
        check_size(name, v)
    mach = get_machine(machine)
    by_smem = int(mach.resource("smem_per_sm_kb")) * 1024 // (smem + static)
    by_regs = int(mach.resource("regs_per_sm")) // (threads * regs)
    return max(1, min(2, by_smem, by_regs))


def tma_plan(m: int, n: int, k: int, *, rows: int, split: int, stages: int, gps: int, group: int = 128,
             pad: int = 32, machine: "Machine | str | None" = None) -> dict[str, float]:
    """Little's law for the TMA decode kernel: ``n/rows * split`` blocks; each block
    keeps up to ``stages`` slots of ``gps * rows * group/2`` weight bytes in flight
    (:func:`tma_resident` says how many blocks an SM holds).
    ``latency_covered_s`` = bytes in flight on all SMs / bandwidth."""
    for name, v in (("m", m), ("n", n), ("k", k), ("rows", rows), ("split", split), ("stages", stages),
                    ("gps", gps), ("group", group)):
        check_size(name, v)
    mach = get_machine(machine)
    sms = int(mach.resource("sms"))
    nt = 1 if m <= 8 else 2
    smem = tma_smem_bytes(k, nt=nt, rows=rows, split=split, stages=stages, gps=gps, group=group, pad=pad)
    blocks = (n // rows) * split
    resident = tma_resident(smem, 32 * (rows // 16 + 1), machine=mach)
    per_sm = min(resident, math.ceil(blocks / sms))
    inflight = per_sm * stages * gps * rows * (group // 2)
    return {"blocks": blocks, "blocks_per_sm": per_sm, "waves": blocks / (resident * sms), "smem_bytes": smem,
            "inflight_bytes_per_sm": inflight, "latency_covered_s": inflight * sms / mach.memory_rate(None),
            "sms": sms}


# --- figures ------------------------------------------------------------------------


def figures() -> list[Figure]:
    mach = get_machine(DEFAULT_MACHINE)
    out: list[Figure] = []
    for (m, n, k) in DECODE_SHAPES + (SQUARE_SHAPE,):
        tag = f"m{m}" if n == 8192 else f"s{m}"
        cond = f"{m}x{n}x{k}, int4 weights group 128 vs fp16 weights, {mach.name}"
        w4 = roofline(w4a16_cost(m, n, k), mach)
        f16 = roofline(fp16_cost(m, n, k), mach)
        out += [
            fig(f"gemm.w4a16.{tag}.w4_mb", w4.cost.bytes / 1e6, "MB", digits=1, source="ledger.w4a16.w4a16_cost",
                conditions=cond),
            fig(f"gemm.w4a16.{tag}.fp16_mb", f16.cost.bytes / 1e6, "MB", digits=1, source="ledger.w4a16.fp16_cost",
                conditions=cond),
            fig(f"gemm.w4a16.{tag}.gflop", w4.cost.flops / 1e9, "GFLOP", digits=1, source="ledger.gemm.gemm_flops",
                conditions=cond),
            fig(f"gemm.w4a16.{tag}.w4_floor_us", w4.bound_s * 1e6, "us", digits=1, source="ledger.w4a16.roofline",
                conditions=cond),
            fig(f"gemm.w4a16.{tag}.w4_bound", w4.bound, "", source="ledger.w4a16.roofline", conditions=cond),
            fig(f"gemm.w4a16.{tag}.fp16_floor_us", f16.bound_s * 1e6, "us", digits=1, source="ledger.w4a16.roofline",
                conditions=cond),
            fig(f"gemm.w4a16.{tag}.gain_bound", gain_bound(m, n, k, machine=mach), "x", digits=2,
                source="ledger.w4a16.gain_bound", conditions=cond),
        ]
    d = DEC_DESIGN
    plan = dec_plan(d["m"], d["n"], d["k"], rows=d["rows"], wk=d["wk"], split=d["split"], depth=d["depth"],
                    regs=d["regs"], machine=mach)
    onchip = dec_onchip_bytes(d["m"], d["n"], d["k"], rows=d["rows"], split=d["split"])
    cd = (f"decode kernel design point: M={d['m']}, {d['n']}x{d['k']} weights, {d['rows']} rows a block, "
          f"split {d['split']}, depth {d['depth']}, {d['regs']} registers, {mach.name}")
    out += [
        fig("gemm.w4a16.dec.blocks", plan["blocks"], "blocks", digits=0, source="ledger.w4a16.dec_plan",
            conditions=cd),
        fig("gemm.w4a16.dec.blocks_per_sm", plan["blocks_per_sm"], "blocks", digits=0,
            source="ledger.w4a16.dec_plan", conditions=cd),
        fig("gemm.w4a16.dec.warps_per_sm", plan["warps_per_sm"], "warps", digits=0, source="ledger.w4a16.dec_plan",
            conditions=cd),
        fig("gemm.w4a16.dec.inflight_kb_per_sm", plan["inflight_bytes_per_sm"] / 1024, "KiB", digits=0,
            source="ledger.w4a16.dec_plan", conditions=cd),
        fig("gemm.w4a16.dec.latency_covered_us", plan["latency_covered_s"] * 1e6, "us", digits=1,
            source="ledger.w4a16.dec_plan", conditions=cd),
        fig("gemm.w4a16.dec.act_l2_mb", onchip["activations_l2"] / 1e6, "MB", digits=1,
            source="ledger.w4a16.dec_onchip_bytes", conditions=cd),
        fig("gemm.w4a16.dec.partials_mb", onchip["partials_dsmem"] / 1e6, "MB", digits=1,
            source="ledger.w4a16.dec_onchip_bytes", conditions=cd),
    ]
    # the swap-AB kernel at M = 64: every block of 64 weight rows reads the whole activation matrix from L2;
    # kpair (two blocks of a cluster split K for the same 128 rows) reads it once per 128 rows
    ca = "M=64 on 8192x8192 weights, activations read from L2 once per weight tile"
    act = {rows: dec_onchip_bytes(64, 8192, 8192, rows=rows, split=1)["activations_l2"] for rows in (64, 128)}
    out += [
        fig("gemm.w4a16.m64.tiles", 8192 // 64, "blocks", digits=0, source="ledger.w4a16.dec_onchip_bytes",
            conditions=f"{ca}, 64-row tiles"),
        fig("gemm.w4a16.m64.act_l2_mb", act[64] / 1e6, "MB", digits=1, source="ledger.w4a16.dec_onchip_bytes",
            conditions=f"{ca}, 64-row tiles"),
        fig("gemm.w4a16.m64.act_l2_kp_mb", act[128] / 1e6, "MB", digits=1, source="ledger.w4a16.dec_onchip_bytes",
            conditions=f"{ca}, 128-row tiles (kpair)"),
        fig("gemm.w4a16.m64.act_l2_x", act[64] / w4a16_cost(64, 8192, 8192).bytes, "x", digits=1,
            source="ledger.w4a16.dec_onchip_bytes",
            conditions=f"{ca}, 64-row tiles, against the DRAM bytes of ledger.w4a16.w4a16_cost"),
    ]
    c8 = f"8192x8192 weights, group 128, {mach.name}"
    out += [
        fig("gemm.w4a16.w4_compute_bound_from_m", compute_bound_from(8192, 8192, machine=mach), "rows", digits=0,
            source="ledger.w4a16.compute_bound_from", conditions=c8),
        fig("gemm.w4a16.fp16_compute_bound_from_m", fp16_compute_bound_from(8192, 8192, machine=mach), "rows",
            digits=0, source="ledger.w4a16.fp16_compute_bound_from", conditions=c8),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.w4a16", description="What int4 weights buy over fp16 weights.")
    p.add_argument("--machine", default=DEFAULT_MACHINE)
    p.add_argument("--group", type=int, default=128)
    a = p.parse_args(argv)
    mach = get_machine(a.machine)
    print(mach.summary())
    print(f"{'M x N x K':>18} {'int4 MB':>9} {'fp16 MB':>9} {'int4 floor':>11} {'fp16 floor':>11} {'gain bound':>11}")
    for (m, n, k) in DECODE_SHAPES + (SQUARE_SHAPE,):
        w4 = roofline(w4a16_cost(m, n, k, a.group), mach)
        f16 = roofline(fp16_cost(m, n, k), mach)
        print(f"{f'{m}x{n}x{k}':>18} {w4.cost.bytes / 1e6:>9.1f} {f16.cost.bytes / 1e6:>9.1f} "
              f"{w4.bound_s * 1e6:>8.1f} us {f16.bound_s * 1e6:>8.1f} us {f16.bound_s / w4.bound_s:>10.2f}x"
              f"  ({w4.bound} / {f16.bound})")
    print(f"int4 kernel compute-bound from M = {compute_bound_from(8192, 8192, a.group, mach):.0f}; "
          f"fp16 from M = {fp16_compute_bound_from(8192, 8192, mach):.0f} (8192 x 8192 weights)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
