"""Tile budgets: the four constraints a tile must pass before any code (chapters 14 and 28).

C1 shared capacity: ``S`` stages keep ``S`` copies of the A and B tiles on chip,
   ``S * (block_M*block_K + block_K*block_N) * b`` bytes, against 227 KB per block.
C2 registers: the fp32 accumulator ``block_M*block_N`` is spread over the threads;
   registers are allocated per warp in units of 256 and one thread may hold at most
   255.
C3 instruction shape: ``mma`` (m16n8k16, one warp) or Hopper ``wgmma`` (m64nNk16,
   N a multiple of 8 up to 256, one warpgroup = 128 threads).
C4 parallelism: tiles / (blocks per SM x SMs) = waves; the fill of the last wave.

``tile_decision(...)`` runs the four checks and names the binding limit; its
``format()`` prints the report the chapter shows.  The limits are a
:class:`TileLimits` (default :data:`HOPPER`, an H100/H200 SM, read from the
``resources`` of the default machine profile); counts are computed, never typed.  Only the accumulator is counted in C2: addresses, A/B fragments and
the epilogue add registers on top, so a tile that fails here fails for certain and
one that passes may still spill.

Public API: :class:`TileLimits`, :data:`HOPPER`, :data:`VOLTA_BEST_PRACTICES`,
:func:`smem_per_stage`, :func:`smem_total`, :func:`accumulator_per_thread`,
:func:`warp_rounded_regs`, :func:`full_occupancy_regs`, :func:`instruction_check`,
:func:`waves`, :func:`tile_decision`, :class:`TileReport`.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Optional

from ledger.cost import check_size
from ledger.figures import Figure, fig
from ledger.machines import DEFAULT_MACHINE, Machine, get_machine

__all__ = [
    "TileLimits",
    "HOPPER",
    "VOLTA_BEST_PRACTICES",
    "smem_per_stage",
    "smem_total",
    "accumulator_per_thread",
    "warp_rounded_regs",
    "full_occupancy_regs",
    "instruction_check",
    "swizzle_row_bits",
    "can_swizzle",
    "swizzle_bytes",
    "waves",
    "TileReport",
    "tile_decision",
    "figures",
]

KB = 1024


@dataclass(frozen=True)
class TileLimits:
    """Per-SM resources a tile competes for."""

    name: str
    sms: int
    smem_per_block: int  # bytes one block may allocate
    smem_per_sm: int  # bytes one SM holds for all resident blocks
    regs_per_sm: int
    max_threads_per_sm: int
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers, allocated per warp
    warp_size: int = 32
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    source: str = ""

    def __post_init__(self) -> None:
        for f in ("sms", "smem_per_block", "smem_per_sm", "regs_per_sm", "max_threads_per_sm",
                  "max_regs_per_thread", "reg_alloc_unit", "warp_size", "max_blocks_per_sm",
                  "max_threads_per_block"):
            check_size(f, getattr(self, f))

    @classmethod
    def from_machine(cls, machine: "Machine | str | None" = None, *, name: str | None = None,
                     cite: str = "") -> "TileLimits":
        """The limits held in a machine profile's ``resources`` (default :data:`DEFAULT_MACHINE`)."""
        m = get_machine(machine)
        r = {k: int(m.resource(k)) for k in ("sms", "smem_per_block_kb", "smem_per_sm_kb", "regs_per_sm",
                                              "max_threads_per_sm", "max_regs_per_thread", "max_threads_per_block")}
        held = (f"{r['smem_per_sm_kb']} KB shared per SM, {r['smem_per_block_kb']} KB per block; "
                f"{r['regs_per_sm'] // 1024}K 32-bit registers, {r['max_threads_per_sm']} threads, "
                f"{r['max_regs_per_thread']} registers per thread; {r['sms']} SMs")
        return cls(name=name or m.name, sms=r["sms"], smem_per_block=r["smem_per_block_kb"] * KB,
                   smem_per_sm=r["smem_per_sm_kb"] * KB, regs_per_sm=r["regs_per_sm"],
                   max_threads_per_sm=r["max_threads_per_sm"], max_regs_per_thread=r["max_regs_per_thread"],
                   max_threads_per_block=r["max_threads_per_block"],
                   source=f"{cite + ', as held by ' if cite else ''}machine profile {m.name}: {held}")


#: An H100/H200 SM: the resources of the default machine profile.
HOPPER = TileLimits.from_machine(DEFAULT_MACHINE, name="hopper-sm90 (H100/H200 SXM)",
                                 cite="NVIDIA Hopper tuning guide")

#: The ruler of the CUDA C++ Best Practices Guide (compute capability 7.0).
VOLTA_BEST_PRACTICES = TileLimits(
    name="cc7.0 (CUDA Best Practices Guide)", sms=80, smem_per_block=96 * KB, smem_per_sm=96 * KB,
    regs_per_sm=65536, max_threads_per_sm=2048,
    source="CUDA C++ Best Practices Guide, occupancy section (65536 registers, 2048 threads, 256 per warp)",
)


def _b(name: str, value: float) -> float:
    return check_size(name, value, integer=False)


def smem_per_stage(block_m: int, block_n: int, block_k: int, in_bytes: float = 2) -> float:
    """Bytes of one A tile plus one B tile: ``(block_M*block_K + block_K*block_N) * b``."""
    for n, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k)):
        check_size(n, v)
    return (block_m * block_k + block_k * block_n) * _b("in_bytes", in_bytes)


def smem_total(block_m: int, block_n: int, block_k: int, stages: int, in_bytes: float = 2) -> float:
    """C1: shared memory of an ``stages``-deep pipeline."""
    check_size("stages", stages)
    return stages * smem_per_stage(block_m, block_n, block_k, in_bytes)


def accumulator_per_thread(block_m: int, block_n: int, threads: int, accum_bytes: float = 4) -> float:
    """C2: 32-bit registers per thread held by the accumulator tile."""
    check_size("block_m", block_m)
    check_size("block_n", block_n)
    check_size("threads", threads)
    return block_m * block_n * _b("accum_bytes", accum_bytes) / 4 / threads


def warp_rounded_regs(regs_per_thread: float, limits: TileLimits = HOPPER) -> int:
    """Registers per thread after the per-warp allocation unit (256 per warp) rounds up."""
    _b("regs_per_thread", regs_per_thread)
    per_warp = math.ceil(regs_per_thread * limits.warp_size / limits.reg_alloc_unit) * limits.reg_alloc_unit
    return per_warp // limits.warp_size


def full_occupancy_regs(limits: TileLimits = VOLTA_BEST_PRACTICES) -> int:
    """Registers per thread that still allow every thread slot of an SM: 65536 / 2048."""
    return limits.regs_per_sm // limits.max_threads_per_sm


INSTRUCTIONS = {
    # name: (m granularity, n granularity, k granularity, threads granularity, max n)
    "mma": (16, 8, 16, 32, None),
    "wgmma": (64, 8, 16, 128, 256),
}


def instruction_check(block_m: int, block_n: int, block_k: int, threads: int, instr: str = "wgmma") -> list[str]:
    """C3: why the tile does not tile the instruction shape (empty list = it does)."""
    if instr not in INSTRUCTIONS:
        raise ValueError(f"instr must be one of {sorted(INSTRUCTIONS)}, got {instr!r}")
    gm, gn, gk, gt, _nmax = INSTRUCTIONS[instr]  # a wider N issues several instructions
    out = []
    if block_m % gm:
        out.append(f"block_M {block_m} is not a multiple of {gm} ({instr})")
    if block_n % gn:
        out.append(f"block_N {block_n} is not a multiple of {gn} ({instr})")
    if block_k % gk:
        out.append(f"block_K {block_k} is not a multiple of {gk} ({instr})")
    if threads % gt:
        out.append(f"threads {threads} is not a multiple of {gt} ({instr})")
    return out


def swizzle_row_bits(cols: int, dtype_bits: int) -> int:
    """Bits in one shared-memory row of ``cols`` elements of ``dtype_bits`` bits."""
    check_size("cols", cols)
    check_size("dtype_bits", dtype_bits)
    return cols * dtype_bits


def can_swizzle(cols: int, dtype_bits: int) -> bool:
    """The criterion of tilelang's ``make_mma_swizzle_layout`` (cuda/intrinsics/layout/mma_layout.py):
    ``cols * bits % 512 == 0``.  No course kernel calls it; they use ``make_swizzled_layout``
    (:func:`swizzle_bytes`)."""
    return swizzle_row_bits(cols, dtype_bits) % 512 == 0


def swizzle_bytes(cols: int, dtype_bits: int) -> int:
    """Width in bytes of the swizzle tilelang 0.1.15's ``make_swizzled_layout`` gives a K-major
    shared-memory tile whose rows hold ``cols`` elements of ``dtype_bits`` bits (8 to 32), as
    ``MakeGemmABLayout`` in src/layout/gemm_layouts.cc chooses it: the full-bank (128-byte)
    swizzle when a row is a multiple of 128 bytes, the half-bank (64-byte) one for a multiple
    of 64, the quarter-bank (32-byte) one for a multiple of 32; 0 otherwise (a padded layout)."""
    check_size("cols", cols)
    if dtype_bits not in (8, 16, 32):
        raise ValueError(f"dtype_bits must be 8, 16 or 32, got {dtype_bits}")
    row = cols * dtype_bits // 8
    for width in (128, 64, 32):
        if row % width == 0:
            return width
    return 0


def waves(tiles: int, blocks_per_sm: int, sms: int) -> tuple[int, float]:
    """C4: (number of waves, fill of the last wave in [0, 1])."""
    check_size("tiles", tiles)
    check_size("blocks_per_sm", blocks_per_sm)
    check_size("sms", sms)
    per_wave = blocks_per_sm * sms
    w = math.ceil(tiles / per_wave)
    last = tiles - (w - 1) * per_wave
    return w, last / per_wave


@dataclass
class TileReport:
    block: tuple[int, int, int]
    stages: int
    threads: int
    instr: str
    smem_stage: float
    smem_total: float
    acc_per_thread: float
    regs_per_thread: int
    regs_per_block: int
    blocks_by_regs: int
    blocks_by_smem: int
    blocks_by_threads: int
    blocks_per_sm: int
    binding: str
    tiles: int
    waves: int
    last_wave_fill: float
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def format(self) -> str:
        bm, bn, bk = self.block
        warps = self.threads // 32
        lines = [
            f"block=({bm:4d},{bn:4d},{bk:4d})  stages={self.stages}  threads={self.threads}  instr={self.instr}",
            f"  C1 shared/stage {self.smem_stage / KB:8.1f} KB -> total {self.smem_total / KB:8.1f} KB",
            f"  C2 accumulators {self.acc_per_thread:5.0f}/thread -> {self.regs_per_thread:4d} regs/thread "
            f"(warp-rounded), {self.regs_per_block:6d} regs/block",
            f"     occupancy: regs -> {self.blocks_by_regs} blk/SM, smem -> {self.blocks_by_smem}, "
            f"threads -> {self.blocks_by_threads}  => {self.blocks_per_sm} blk/SM, binding={self.binding}",
        ]
        if self.waves:
            lines.append(f"  C4 grid {self.tiles:6d} tiles over {warps:3d}-warp blocks -> {self.waves} wave(s), "
                         f"last wave {100 * self.last_wave_fill:5.1f}% full")
        for f in self.failures:
            lines.append(f"  FAIL {f}")
        return "\n".join(lines)


def tile_decision(block_m: int, block_n: int, block_k: int, *, stages: int, threads: int,
                  m: int = 4096, n: int = 4096, instr: str = "wgmma", in_bytes: float = 2,
                  accum_bytes: float = 4, limits: TileLimits = HOPPER) -> TileReport:
    """Run C1-C4 for one configuration of an M x N output."""
    check_size("m", m)
    check_size("n", n)
    st = smem_per_stage(block_m, block_n, block_k, in_bytes)
    tot = smem_total(block_m, block_n, block_k, stages, in_bytes)
    acc = accumulator_per_thread(block_m, block_n, threads, accum_bytes)
    regs = warp_rounded_regs(acc, limits)
    per_block = regs * threads
    fails = []
    if tot > limits.smem_per_block:
        fails.append(f"C1 shared {tot / KB:.0f} KB > {limits.smem_per_block / KB:.0f} KB per block")
    if acc > limits.max_regs_per_thread:
        fails.append(f"C2 accumulator {acc:.0f} regs/thread > {limits.max_regs_per_thread}")
    fails += ["C3 " + f for f in instruction_check(block_m, block_n, block_k, threads, instr)]
    if threads > limits.max_threads_per_block:
        fails.append(f"threads {threads} > {limits.max_threads_per_block} per block")
    by_regs = limits.regs_per_sm // per_block
    by_smem = int(limits.smem_per_sm // tot)
    by_threads = limits.max_threads_per_sm // threads
    bps = min(by_regs, by_smem, by_threads, limits.max_blocks_per_sm)
    binding = min((("regs", by_regs), ("smem", by_smem), ("threads", by_threads)), key=lambda x: x[1])[0]
    tiles = math.ceil(m / block_m) * math.ceil(n / block_n)
    if bps > 0 and not fails:
        w, fill = waves(tiles, bps, limits.sms)
    else:
        w, fill = 0, 0.0
    return TileReport((block_m, block_n, block_k), stages, threads, instr, st, tot, acc, regs, per_block,
                      by_regs, by_smem, by_threads, bps, binding, tiles, w, fill, fails)


# --- figures ------------------------------------------------------------------------

def figures() -> list[Figure]:
    src = "ledger.tiles.tile_decision"
    out: list[Figure] = []
    c = (f"4096x4096 output, fp16 inputs, fp32 accumulator, {HOPPER.name}: {HOPPER.sms} SMs, "
         f"{HOPPER.smem_per_block // KB} KB/block, {HOPPER.smem_per_sm // KB} KB/SM")
    r = tile_decision(128, 256, 64, stages=3, threads=256)
    out += [
        fig("perfmodel.tile.good.smem_stage_kb", r.smem_stage / KB, "KB", digits=1, source=src, conditions=c),
        fig("perfmodel.tile.good.smem_total_kb", r.smem_total / KB, "KB", digits=1, source=src, conditions=c),
        fig("perfmodel.tile.good.regs_per_thread", r.regs_per_thread, "regs", source=src, conditions=c),
        fig("perfmodel.tile.good.regs_per_block", r.regs_per_block, "regs", source=src, conditions=c),
        fig("perfmodel.tile.good.blocks_by_regs", r.blocks_by_regs, "blocks", source=src, conditions=c),
        fig("perfmodel.tile.good.blocks_by_smem", r.blocks_by_smem, "blocks", source=src, conditions=c),
        fig("perfmodel.tile.good.blocks_by_threads", r.blocks_by_threads, "blocks", source=src, conditions=c),
        fig("perfmodel.tile.good.blocks_per_sm", r.blocks_per_sm, "blocks", source=src, conditions=c),
        fig("perfmodel.tile.good.binding", r.binding, "", source=src, conditions=c),
        fig("perfmodel.tile.good.tiles", r.tiles, "tiles", source=src, conditions=c),
        fig("perfmodel.tile.good.waves", r.waves, "waves", source=src, conditions=c),
        fig("perfmodel.tile.good.last_wave_pct", 100 * r.last_wave_fill, "%", digits=1, source=src, conditions=c),
    ]
    bad = tile_decision(256, 256, 64, stages=4, threads=256)
    out += [
        fig("perfmodel.tile.bad.smem_total_kb", bad.smem_total / KB, "KB", digits=0, source=src, conditions=c),
        fig("perfmodel.tile.bad.regs_per_thread", bad.acc_per_thread, "regs", digits=0, source=src, conditions=c),
        fig("perfmodel.tile.smem_per_block_kb", HOPPER.smem_per_block // KB, "KB", source="ledger.tiles.HOPPER",
            conditions=HOPPER.source),
        fig("perfmodel.tile.smem_per_sm_kb", HOPPER.smem_per_sm // KB, "KB", source="ledger.tiles.HOPPER",
            conditions=HOPPER.source),
        fig("perfmodel.tile.max_regs_per_thread", HOPPER.max_regs_per_thread, "regs", source="ledger.tiles.HOPPER",
            conditions=HOPPER.source),
    ]
    big = tile_decision(256, 256, 64, stages=1, threads=512)
    out += [
        fig("perfmodel.tile.256x256_512t.regs_per_thread", big.regs_per_thread, "regs", source=src, conditions=c),
        fig("perfmodel.tile.256x256_512t.blocks_by_regs", big.blocks_by_regs, "blocks", source=src, conditions=c),
    ]
    # the chapter 14 budget example: 128x128x32, three stages, 128 threads
    c14 = "block 128x128x32, fp16 operands, fp32 accumulator, 128 threads"
    s1 = smem_per_stage(128, 128, 32)
    s3 = smem_total(128, 128, 32, 3)
    out += [
        fig("gemm.budget.smem_stage_kb", s1 / KB, "KB", digits=0, source="ledger.tiles.smem_per_stage", conditions=c14),
        fig("gemm.budget.smem_3stage_kb", s3 / KB, "KB", digits=0, source="ledger.tiles.smem_total", conditions=c14),
        fig("gemm.budget.smem_per_sm_kb", HOPPER.smem_per_sm // KB, "KB", source="ledger.tiles.HOPPER",
            conditions=HOPPER.source),
        fig("gemm.budget.blocks_by_smem", int(HOPPER.smem_per_sm // s3), "blocks", source="ledger.tiles.smem_total",
            conditions=c14 + f"; shared memory alone, {HOPPER.smem_per_sm // KB} KB per SM"),
        fig("gemm.budget.acc_elements", 128 * 128, "elements", source="ledger.tiles.accumulator_per_thread",
            conditions=c14),
        fig("gemm.budget.acc_regs_per_thread", accumulator_per_thread(128, 128, 128), "regs", digits=0,
            source="ledger.tiles.accumulator_per_thread", conditions=c14),
        fig("gemm.budget.cc70_regs_per_sm", VOLTA_BEST_PRACTICES.regs_per_sm, "regs",
            source="ledger.tiles.VOLTA_BEST_PRACTICES", conditions=VOLTA_BEST_PRACTICES.source),
        fig("gemm.budget.cc70_threads_per_sm", VOLTA_BEST_PRACTICES.max_threads_per_sm, "threads",
            source="ledger.tiles.VOLTA_BEST_PRACTICES", conditions=VOLTA_BEST_PRACTICES.source),
        fig("gemm.budget.full_occupancy_regs", full_occupancy_regs(), "regs", source="ledger.tiles.full_occupancy_regs",
            conditions=VOLTA_BEST_PRACTICES.source),
        *(f for bk, bits, used in ((64, 16, "rungs 3 and 4"), (32, 16, "rung 5"), (128, 8, "the fp8 GEMM"))
          for f in (fig(f"gemm.swizzle.row_bytes_fp{bits}_bk{bk}", swizzle_row_bits(bk, bits) // 8, "B",
                        source="ledger.tiles.swizzle_row_bits",
                        conditions=f"A tile row of block_K={bk} fp{bits} elements ({used})"),
                    fig(f"gemm.swizzle.bytes_fp{bits}_bk{bk}", swizzle_bytes(bk, bits), "B",
                        source="ledger.tiles.swizzle_bytes",
                        conditions=f"make_swizzled_layout (MakeGemmABLayout) on rows of block_K={bk} fp{bits} elements"))),
        fig("gemm.swizzle.bytes_fp16_bk16", swizzle_bytes(16, 16), "B", source="ledger.tiles.swizzle_bytes",
            conditions="make_swizzled_layout (MakeGemmABLayout) on rows of block_K=16 fp16 elements"),
        fig("perfmodel.tile.wgmma_m", INSTRUCTIONS["wgmma"][0], "rows", source="ledger.tiles.INSTRUCTIONS",
            conditions="PTX ISA: wgmma dense f16 is m64nNk16"),
        fig("perfmodel.tile.wgmma_n_max", INSTRUCTIONS["wgmma"][4], "columns", source="ledger.tiles.INSTRUCTIONS",
            conditions="PTX ISA: N from 8 to 256 in steps of 8"),
        fig("perfmodel.tile.warpgroup_threads", INSTRUCTIONS["wgmma"][3], "threads", source="ledger.tiles.INSTRUCTIONS",
            conditions="PTX ISA: a warpgroup is 4 consecutive warps"),
        fig("gemm.budget.reg_alloc_unit", VOLTA_BEST_PRACTICES.reg_alloc_unit, "regs/warp",
            source="ledger.tiles.VOLTA_BEST_PRACTICES", conditions=VOLTA_BEST_PRACTICES.source),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.tiles", description="Check a GEMM tile against C1-C4.")
    p.add_argument("--block", type=int, nargs=3, metavar=("BM", "BN", "BK"))
    p.add_argument("--stages", type=int, default=3)
    p.add_argument("--threads", type=int, default=256)
    p.add_argument("--instr", default="wgmma", choices=sorted(INSTRUCTIONS))
    p.add_argument("--shape", type=int, nargs=2, default=[4096, 4096], metavar=("M", "N"))
    a = p.parse_args(argv)
    configs = ([(tuple(a.block), a.stages, a.threads)] if a.block else
               [((128, 256, 64), 3, 256), ((256, 256, 64), 4, 256), ((256, 256, 64), 1, 512), ((128, 128, 32), 3, 128)])
    for (bm, bn, bk), st, th in configs:
        print(tile_decision(bm, bn, bk, stages=st, threads=th, m=a.shape[0], n=a.shape[1], instr=a.instr).format())
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
