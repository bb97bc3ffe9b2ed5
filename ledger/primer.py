"""The TileLang primer's ledger: memory scopes of one H200, and the three primer kernels.

Memory scopes
    :func:`memory_scopes` lists the four places a TileLang program keeps data --
    registers (``T.alloc_fragment`` / ``T.alloc_local``), shared memory
    (``T.alloc_shared``), HBM (the ``T.Tensor`` arguments) -- with who sees them,
    how much one SM and the whole chip hold, and the rate at which they deliver
    bytes.  Capacities come from the machine profile's ``resources``; HBM rates
    from its memory roofs.  The shared-memory rate is derived, not measured:
    32 banks of 4 bytes answer one request per clock per SM (CUDA C++ Programming
    Guide, shared memory), and the clock is the one implied by the *calibrated*
    profile's CUDA-core fp32 rate with 128 fp32 lanes per SM (Hopper architecture
    whitepaper): ``clock = fp32 FLOP/s / (SMs x 128 lanes x 2 FLOP per FMA)`` --
    :func:`ledger.issue.sm_clock_hz`, the clock of the instruction-issue bound.  The
    HBM rate it is compared with is calibrated too: both sides of the comparison come
    from one profile, never a datasheet clock against a measured bandwidth.

The primer's kernels
    :func:`copy_cost`, :func:`scale_cost` and :func:`row_sum_cost` price the copy,
    the vectorised scale and the row reduction of :mod:`kernels.primer`;
    :func:`row_sum_tile` is the on-chip budget of one row-sum block (shared
    memory per stage and in all, fp32 values per thread of the tile fragment);
    :func:`launch_shape` counts blocks, resident blocks and waves of a 1-D launch;
    :func:`grid_fill` says how many SMs a grid of a few blocks keeps busy.

``python -m ledger.primer`` prints the tables.  Standard library only.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Optional

from ledger.cost import Cost, check_size, dtype_bytes, judge
from ledger import issue
from ledger.figures import Figure, fig
from ledger.machines import DEFAULT_MACHINE, get_machine

__all__ = [
    "BANKS", "BANK_BYTES", "FP32_LANES_PER_SM", "Scope", "sm_clock_hz", "smem_bytes_per_clock",
    "memory_scopes", "copy_cost", "scale_cost", "row_sum_cost", "RowSumTile", "row_sum_tile",
    "LaunchShape", "launch_shape", "grid_fill", "split_for", "figures",
]

#: Shared memory: 32 banks, 4 bytes each, one request per clock (CUDA C++ Programming Guide).
BANKS = 32
BANK_BYTES = 4
#: fp32 lanes per Hopper SM (NVIDIA H100 architecture whitepaper: 128 FP32 cores per SM).
FP32_LANES_PER_SM = issue.FP32_LANES_PER_SM
KIB = 1024
MIB = 1024 * 1024

SPEC = "h200-spec"
CAL = DEFAULT_MACHINE


def sm_clock_hz(machine: str = CAL) -> float:
    """SM clock implied by the profile's (calibrated) CUDA-core fp32 rate: FLOP/s / (SMs x 128 x 2),
    the same clock as :func:`ledger.issue.sm_clock_hz`."""
    return issue.sm_clock_hz(machine)


def smem_bytes_per_clock() -> int:
    """Bytes one SM's shared memory can deliver per clock (no bank conflicts)."""
    return BANKS * BANK_BYTES


@dataclass(frozen=True)
class Scope:
    """One memory scope as TileLang names it."""

    name: str  #: e.g. "registers"
    tilelang: str  #: how a program allocates it
    visible_to: str  #: thread / block / grid
    per_sm_bytes: Optional[float]  #: capacity of one SM (None for HBM)
    total_bytes: Optional[float]  #: the whole chip
    rate_bytes_s: Optional[float]  #: bytes per second the chip can move from it (None: not modelled)
    rate_note: str = ""


def memory_scopes(machine: str = SPEC, calibrated: str = CAL) -> list[Scope]:
    """Registers, shared memory, HBM of ``machine`` (capacities) with rates of ``calibrated``."""
    m = get_machine(machine)
    c = get_machine(calibrated)
    sms = m.resource("sms")
    regs = m.resource("regs_per_sm") * 4
    smem = m.resource("smem_per_sm_kb") * KIB
    clock = sm_clock_hz(calibrated)
    return [
        Scope("registers", "T.alloc_fragment / T.alloc_local", "one thread", regs, regs * sms, None,
              "operands of every instruction; not a bandwidth limit in this model"),
        Scope("shared memory", "T.alloc_shared", "one block", smem, smem * sms,
              sms * smem_bytes_per_clock() * clock,
              f"{BANKS} banks x {BANK_BYTES} B per clock per SM at {clock / 1e9:.2f} GHz (derived)"),
        Scope("HBM (global)", "T.Tensor arguments", "every block", None, None, c.memory_rate("hbm"),
              f"{calibrated}: best measured access mix"),
        Scope("HBM, pure copy", "T.Tensor arguments", "every block", None, None, c.memory_rate("hbm.copy"),
              f"{calibrated}: 1 read : 1 write"),
    ]


# ------------------------------------------------------------------ the kernels
def copy_cost(n: int, dtype: str = "float16") -> Cost:
    """y = x over ``n`` elements: one read and one write of each, no arithmetic."""
    n = check_size("n", n)
    b = dtype_bytes(dtype)
    return Cost(0, 2 * n * b, f"copy ({n}, {dtype})", "read x once, write y once")


def scale_cost(n: int, dtype: str = "float16") -> Cost:
    """y = x * s: the bytes of a copy (the scalar is a kernel argument), 1 FLOP per element."""
    n = check_size("n", n)
    b = dtype_bytes(dtype)
    return Cost(n, 2 * n * b, f"scale ({n}, {dtype})", "read x once, write y once; s is an argument")


def row_sum_cost(m: int, n: int, dtype: str = "float16", out_dtype: str = "float32") -> Cost:
    """y[i] = sum_j x[i, j]: read x once, write m sums; n - 1 additions per row."""
    m, n = check_size("m", m), check_size("n", n)
    return Cost(m * (n - 1), m * n * dtype_bytes(dtype) + m * dtype_bytes(out_dtype, arg="out_dtype"),
                f"row sum ({m}x{n}, {dtype} -> {out_dtype})", "read x once, write one value per row")


@dataclass(frozen=True)
class RowSumTile:
    """The on-chip budget of one row-sum block."""

    blk_m: int
    blk_n: int
    threads: int
    stages: int
    stage_bytes: int  #: one (blk_m, blk_n) tile of x in shared memory
    smem_bytes: int  #: all stages
    values_per_thread: float  #: fp32 values of the (blk_m, blk_n) fragment each thread holds
    blocks_by_smem: int  #: blocks of this size that fit one SM's shared memory


def row_sum_tile(blk_m: int = 64, blk_n: int = 128, threads: int = 128, stages: int = 2,
                 dtype: str = "float16", machine: str = SPEC) -> RowSumTile:
    """Shared memory and registers one block of the row reduction needs."""
    for name, v in (("blk_m", blk_m), ("blk_n", blk_n), ("threads", threads), ("stages", stages)):
        check_size(name, v)
    stage = int(blk_m * blk_n * dtype_bytes(dtype))
    total = stage * stages
    per_sm = get_machine(machine).resource("smem_per_sm_kb") * KIB
    return RowSumTile(blk_m, blk_n, threads, stages, stage, total, blk_m * blk_n / threads, int(per_sm // total))


@dataclass(frozen=True)
class LaunchShape:
    """A 1-D launch of ``blocks`` blocks, ``threads`` threads each."""

    n: int
    threads: int
    per_thread: int
    blocks: int
    idle_threads_last_block: int  #: threads of the last block with no element
    resident_blocks_per_sm: int  #: by the thread limit of one SM
    waves: float  #: blocks / (resident blocks per SM x SMs)


def launch_shape(n: int, threads: int = 256, per_thread: int = 1, machine: str = SPEC) -> LaunchShape:
    """Blocks of a grid that gives each thread ``per_thread`` of ``n`` elements."""
    n, threads, per_thread = check_size("n", n), check_size("threads", threads), check_size("per_thread", per_thread)
    m = get_machine(machine)
    blk = threads * per_thread
    blocks = (n + blk - 1) // blk
    idle = (blocks * blk - n) // per_thread
    resident = int(m.resource("max_threads_per_sm") // threads)
    return LaunchShape(n, threads, per_thread, blocks, idle, resident, blocks / (resident * m.resource("sms")))


def grid_fill(blocks: int, machine: str = SPEC) -> float:
    """Fraction of the SMs that get at least one block (one block per SM at most counted)."""
    blocks = check_size("blocks", blocks)
    sms = get_machine(machine).resource("sms")
    return min(blocks, sms) / sms


def split_for(m: int, blk_m: int, tiles: int, machine: str = SPEC) -> int:
    """The split of the columns that gives the row reduction about one block per SM.

    The smallest power of two ``s`` with ``ceil(m / blk_m) * s`` >= the SM count minus
    one tenth of it, no larger than the number of column tiles, dividing them evenly.
    """
    m, blk_m, tiles = check_size("m", m), check_size("blk_m", blk_m), check_size("tiles", tiles)
    sms = get_machine(machine).resource("sms")
    rows = (m + blk_m - 1) // blk_m
    s = 1
    while rows * s < 0.9 * sms and s * 2 <= tiles and tiles % (s * 2) == 0:
        s *= 2
    return s


# --------------------------------------------------------------- the bench shapes
#: The shapes the primer's GPU suite times (kernels.primer.gpu_suite reads them here).
COPY_N = 1 << 28
ROW_SUM_SHAPE = (16384, 4096)
LONG_ROWS_SHAPE = (256, 262144)
ROW_SUM_CONFIG = dict(blk_m=64, blk_n=128, threads=128, stages=2)


def figures() -> list[Figure]:
    out: list[Figure] = []
    m = get_machine(SPEC)
    sms = int(m.resource("sms"))
    clock = sm_clock_hz(CAL)
    scopes = {s.name: s for s in memory_scopes()}
    cm = f"{SPEC} resources ({m.source}); compute capability 9.0 limits"
    src_s = "ledger.primer.memory_scopes"
    reg, sh = scopes["registers"], scopes["shared memory"]
    hbm, hbm_copy = scopes["HBM (global)"], scopes["HBM, pure copy"]
    out += [
        fig("primer.mem.sms", sms, "SMs", source=src_s, conditions=cm),
        fig("primer.mem.regs_per_sm", int(m.resource("regs_per_sm")), "32-bit registers", source=src_s, conditions=cm),
        fig("primer.mem.reg_kib_per_sm", reg.per_sm_bytes / KIB, "KiB", digits=0, source=src_s, conditions=cm),
        fig("primer.mem.reg_mib_total", reg.total_bytes / MIB, "MiB", digits=1, source=src_s, conditions=cm),
        fig("primer.mem.smem_kib_per_sm", sh.per_sm_bytes / KIB, "KiB", digits=0, source=src_s, conditions=cm),
        fig("primer.mem.smem_kib_per_block", int(m.resource("smem_per_block_kb")), "KiB", source=src_s,
            conditions=cm),
        fig("primer.mem.smem_mib_total", sh.total_bytes / MIB, "MiB", digits=1, source=src_s, conditions=cm),
        fig("primer.mem.max_threads_per_sm", int(m.resource("max_threads_per_sm")), "threads", source=src_s,
            conditions=cm),
        fig("primer.mem.max_threads_per_block", int(m.resource("max_threads_per_block")), "threads",
            source=src_s, conditions=cm),
        fig("primer.mem.max_regs_per_thread", int(m.resource("max_regs_per_thread")), "registers",
            source=src_s, conditions=cm),
        fig("primer.mem.full_occupancy_regs", int(m.resource("regs_per_sm") // m.resource("max_threads_per_sm")),
            "registers/thread", source=src_s, conditions=cm + "; all 2048 threads resident"),
        fig("primer.mem.clock_ghz", clock / 1e9, "GHz", digits=2, source="ledger.primer.sm_clock_hz",
            conditions=f"{CAL} cuda_core.fp32 calibrated rate / ({sms} SMs x {FP32_LANES_PER_SM} lanes x 2)"),
        fig("primer.mem.smem_bytes_per_clk", smem_bytes_per_clock(), "B/clock/SM",
            source="ledger.primer.smem_bytes_per_clock", conditions=f"{BANKS} banks x {BANK_BYTES} B, no conflicts"),
        fig("primer.mem.smem_tbs", sh.rate_bytes_s / 1e12, "TB/s", digits=1, source=src_s,
            conditions=sh.rate_note + "; derived, not measured"),
        fig("primer.mem.hbm_bytes_per_clk", hbm.rate_bytes_s / (sms * clock), "B/clock/SM", digits=0,
            source=src_s, conditions=f"{CAL} HBM envelope shared by {sms} SMs at the derived clock"),
        fig("primer.mem.smem_over_hbm", sh.rate_bytes_s / hbm.rate_bytes_s, "x", digits=1, source=src_s,
            conditions="derived shared-memory rate (calibrated clock) over the calibrated HBM envelope"),
        fig("primer.mem.hbm_copy_gbs", hbm_copy.rate_bytes_s / 1e9, "GB/s", digits=0, source=src_s,
            conditions=hbm_copy.rate_note),
    ]

    # the three kernels at the shapes the GPU suite times
    n = COPY_N
    cc = f"n = 2^{n.bit_length() - 1} fp16 elements, {CAL} (HBM envelope)"
    for key, cost in (("copy", copy_cost(n)), ("scale", scale_cost(n))):
        v = judge(cost, CAL)
        out += [
            fig(f"primer.{key}.mb", cost.bytes / 1e6, "MB", digits=1, source=f"ledger.primer.{key}_cost",
                conditions=cc),
            fig(f"primer.{key}.t_us", v.lower_bound * 1e6, "us", digits=1, source="ledger.cost.judge",
                conditions=cc),
        ]
    out.append(fig("primer.scale.ai", scale_cost(n).intensity, "FLOP/B", digits=2, source="ledger.primer.scale_cost",
                   conditions=cc))
    ls = launch_shape(n, 256, 1)
    lc = f"n = 2^{n.bit_length() - 1}, 256 threads per block, {SPEC}"
    out += [
        fig("primer.copy.blocks", ls.blocks, "blocks", source="ledger.primer.launch_shape", conditions=lc,
            text=f"{ls.blocks:,}"),
        fig("primer.copy.resident", ls.resident_blocks_per_sm, "blocks/SM", source="ledger.primer.launch_shape",
            conditions=lc + "; thread limit only"),
        fig("primer.copy.waves", ls.waves, "waves", digits=0, source="ledger.primer.launch_shape", conditions=lc),
    ]
    ls8 = launch_shape(n, 256, 8)
    out.append(fig("primer.scale.blocks", ls8.blocks, "blocks", source="ledger.primer.launch_shape",
                   conditions=f"n = 2^{n.bit_length() - 1}, 256 threads x 8 elements", text=f"{ls8.blocks:,}"))
    rag = launch_shape(1_000_003, 256, 1)
    out += [
        fig("primer.ragged.blocks", rag.blocks, "blocks", source="ledger.primer.launch_shape",
            conditions="n = 1000003, 256 threads per block"),
        fig("primer.ragged.idle", rag.idle_threads_last_block, "threads", source="ledger.primer.launch_shape",
            conditions="n = 1000003, 256 threads per block: threads of the last block past the end"),
    ]

    rm, rn = ROW_SUM_SHAPE
    rc = f"{rm}x{rn} fp16 -> fp32 sums, {CAL}"
    rs = row_sum_cost(rm, rn)
    v = judge(rs, CAL)
    out += [
        fig("primer.rowsum.mb", rs.bytes / 1e6, "MB", digits=1, source="ledger.primer.row_sum_cost", conditions=rc),
        fig("primer.rowsum.ai", rs.intensity, "FLOP/B", digits=2, source="ledger.primer.row_sum_cost", conditions=rc),
        fig("primer.rowsum.t_us", v.lower_bound * 1e6, "us", digits=1, source="ledger.cost.judge", conditions=rc),
        fig("primer.rowsum.out_kib", rm * 4 / KIB, "KiB", digits=0, source="ledger.primer.row_sum_cost",
            conditions=rc),
    ]
    t = row_sum_tile(**ROW_SUM_CONFIG)
    tc = "blk_m=64, blk_n=128, 128 threads, 2 stages, fp16 tiles, fp32 fragment"
    out += [
        fig("primer.rowsum.stage_kib", t.stage_bytes / KIB, "KiB", digits=0, source="ledger.primer.row_sum_tile",
            conditions=tc),
        fig("primer.rowsum.smem_kib", t.smem_bytes / KIB, "KiB", digits=0, source="ledger.primer.row_sum_tile",
            conditions=tc),
        fig("primer.rowsum.values_per_thread", t.values_per_thread, "fp32 values", digits=0,
            source="ledger.primer.row_sum_tile", conditions=tc),
        fig("primer.rowsum.blocks_by_smem", t.blocks_by_smem, "blocks/SM", source="ledger.primer.row_sum_tile",
            conditions=tc + f"; {SPEC}: {int(m.resource('smem_per_sm_kb'))} KiB per SM"),
        fig("primer.rowsum.blocks", (rm + t.blk_m - 1) // t.blk_m, "blocks", source="ledger.primer.row_sum_tile",
            conditions=rc + "; blk_m=64"),
    ]

    lm, ln = LONG_ROWS_SHAPE
    lr = row_sum_cost(lm, ln)
    lcnd = f"{lm}x{ln} fp16, blk_m=64, blk_n=128, {SPEC}"
    rows = (lm + 63) // 64
    split = split_for(lm, 64, ln // 128)
    out += [
        fig("primer.long.mb", lr.bytes / 1e6, "MB", digits=1, source="ledger.primer.row_sum_cost", conditions=lcnd),
        fig("primer.long.blocks", rows, "blocks", source="ledger.primer.grid_fill", conditions=lcnd),
        fig("primer.long.fill_pct", 100 * grid_fill(rows), "%", digits=0, source="ledger.primer.grid_fill",
            conditions=lcnd + "; share of SMs with a block"),
        fig("primer.long.split", split, "", source="ledger.primer.split_for", conditions=lcnd),
        fig("primer.long.split_blocks", rows * split, "blocks", source="ledger.primer.split_for", conditions=lcnd),
        fig("primer.long.split_fill_pct", 100 * grid_fill(rows * split), "%", digits=0,
            source="ledger.primer.grid_fill", conditions=lcnd + f"; split={split}"),
        fig("primer.long.atomics", lm * split, "atomic adds", source="ledger.primer.split_for",
            conditions=lcnd + f"; split={split}: one fp32 atomic per row and split"),
    ]

    # the timing protocol every recorded number of the course follows
    from ledger.protocol import DEFAULT_PROTOCOL as P

    pc = f"ledger.protocol.DEFAULT_PROTOCOL: {P.describe()}"
    warm, rep = P.iterations(0.5)
    out += [
        fig("primer.protocol.warmup_ms", P.warmup_ms, "ms", digits=0, source="ledger.protocol.BenchProtocol",
            conditions=pc),
        fig("primer.protocol.rep_ms", P.rep_ms, "ms", digits=0, source="ledger.protocol.BenchProtocol", conditions=pc),
        fig("primer.protocol.flush_mb", P.flush_mb, "MB", source="ledger.protocol.BenchProtocol", conditions=pc),
        fig("primer.protocol.estimate_runs", P.estimate_runs, "runs", source="ledger.protocol.BenchProtocol",
            conditions=pc),
        fig("primer.protocol.warm_iters_500us", warm, "iterations", source="ledger.protocol.iterations",
            conditions="a kernel estimated at 0.5 ms"),
        fig("primer.protocol.rep_iters_500us", rep, "iterations", source="ledger.protocol.iterations",
            conditions="a kernel estimated at 0.5 ms"),
    ]

    # exercises
    e = row_sum_cost(rm, rn, "float32")
    out += [
        fig("primer.ex.rowsum_fp32_mb", e.bytes / 1e6, "MB", digits=1, source="ledger.primer.row_sum_cost",
            conditions=f"{rm}x{rn} fp32 input"),
        fig("primer.ex.rowsum_fp32_t_us", judge(e, CAL).lower_bound * 1e6, "us", digits=1,
            source="ledger.cost.judge", conditions=f"{rm}x{rn} fp32 input, {CAL}"),
    ]
    t4 = row_sum_tile(64, 256, 128, 3)
    out += [
        fig("primer.ex.tile256_smem_kib", t4.smem_bytes / KIB, "KiB", digits=0, source="ledger.primer.row_sum_tile",
            conditions="blk_m=64, blk_n=256, 3 stages, fp16"),
        fig("primer.ex.tile256_values", t4.values_per_thread, "fp32 values", digits=0,
            source="ledger.primer.row_sum_tile", conditions="blk_m=64, blk_n=256, 128 threads"),
        fig("primer.ex.tile256_blocks_by_smem", t4.blocks_by_smem, "blocks/SM", source="ledger.primer.row_sum_tile",
            conditions="blk_m=64, blk_n=256, 3 stages, fp16"),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.primer", description="Memory scopes and the primer kernels.")
    p.add_argument("--machine", default=SPEC)
    p.add_argument("--calibrated", default=CAL)
    a = p.parse_args(argv)
    print(f"{'scope':<16s} {'TileLang':<34s} {'visible to':<12s} {'per SM':>10s} {'chip':>10s} {'rate':>12s}")
    for s in memory_scopes(a.machine, a.calibrated):
        per = "" if s.per_sm_bytes is None else f"{s.per_sm_bytes / KIB:.0f} KiB"
        tot = "" if s.total_bytes is None else f"{s.total_bytes / MIB:.1f} MiB"
        rate = "" if s.rate_bytes_s is None else f"{s.rate_bytes_s / 1e9:.0f} GB/s"
        print(f"{s.name:<16s} {s.tilelang:<34s} {s.visible_to:<12s} {per:>10s} {tot:>10s} {rate:>12s}")
    for c in (copy_cost(COPY_N), scale_cost(COPY_N), row_sum_cost(*ROW_SUM_SHAPE), row_sum_cost(*LONG_ROWS_SHAPE)):
        print(judge(c, a.calibrated).row())
    if not math.isfinite(sm_clock_hz(a.machine)):  # pragma: no cover - profiles are validated
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
