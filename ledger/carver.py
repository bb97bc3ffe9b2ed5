"""The carver cost model of tilelang 0.1.15, re-computed on the CPU (chapter 28).

tilelang ships a tile recommender, ``tilelang.carver``.  Its ``DefaultPolicy``
(``tilelang/carver/roller/policy/default.py``) ranks output tiles of a GEMM with five
quantities and walks the candidates best-first.  This module re-implements that
arithmetic with the standard library only, so the ranking can be printed and tested
on a machine without a GPU (the installed ``tilelang.carver.arch.CUDA`` refuses to
start without CUDA device 0).

What is re-computed, step for step with ``DefaultPolicy``:

* **traffic** (``_compute_memory_traffic``): for one block, every input region is
  rounded up to whole read transactions (128 B) and the output region to whole write
  transactions (32 B) with ``coalesced_tensor_shape``; the sum is in bytes.  Carver's
  traffic is *per block*.  Multiplied by the grid it becomes the chapter's
  ``b*M*N*K*(1/block_M + 1/block_N) + b_out*M*N`` whenever the regions are coalesced
  (see :func:`total_traffic`).
* **shared memory** (``_compute_shared_memory_usage``): the footprint of the cached
  reduction inputs, each rounded to 32 bytes (``PrimFuncNode.footprint``), placed by
  a best-fit allocator with 32-byte alignment (``roller/bestfit.py``).
* **registers**: ``reg_usage = int(2 * prod(tile) * bits / 32)``.
* **residency**: ``block_per_SM = min(max_smem_usage // smem, reg_cap // reg_usage,
  sm_partition)`` with ``max_smem_usage = 2 * smem_cap``; a candidate with
  ``smem > smem_cap`` or ``reg_usage > reg_cap`` is rejected (shared memory is tested
  first).
* **waves**: ``num_wave = ceil(grid / (block_per_SM * compute_max_core))``.
* **priority**: ``(traffic + 1) * num_wave``; the walk starts from the base tile
  ``[1, 1]``, pops the best candidate from a priority queue and pushes, for every
  dimension from the last to the first, the tile with that dimension raised to its
  next factor; only valid tiles are expanded; it stops when the queue is empty or more
  than 2000 tiles were visited.  The reduction step (block_K) is fixed beforehand by
  ``_assign_reduce_step``: the smallest factor of K whose read of A fills a 128-byte
  transaction.

Assumptions of this re-computation (each is a parameter):

1. The operator is carver's ``MatmulTemplate`` (``C = A @ B``, B stored as ``(N, K)``
   when ``trans_b`` is true, the template's default) with one fused output cast.
2. ``reg_bits``: carver takes the bit width from ``node.get_dtype()``, which for the
   template is the *output* dtype (fp16 -> 16 bits).  The chapter reasons with the fp32
   accumulator (32 bits), which is the register cost the kernel really pays.  The
   book's figures use ``reg_bits=32`` and say so; ``reg_bits=16`` reproduces the
   installed carver exactly (the test runs both).
3. The device is an H200-like model: the SM count and the shared memory per block
   (``smem_cap``) are the ``resources`` of the default machine profile
   (:func:`CarverDevice.from_machine` takes another); ``reg_cap`` 65536,
   ``sm_partition`` 4 and transactions ``[32, 128]`` bytes are constants of carver's
   ``CUDA`` arch itself.
"""
from __future__ import annotations

import argparse
import heapq
import math
from dataclasses import dataclass, field
from typing import Optional

from ledger.figures import Figure, fig
from ledger.machines import DEFAULT_MACHINE, Machine, get_machine

__all__ = [
    "CarverDevice",
    "TileEval",
    "WalkResult",
    "get_all_factors",
    "coalesced_factor",
    "coalesced_tensor_shape",
    "BestFit",
    "assign_reduce_step",
    "evaluate_tile",
    "total_traffic",
    "walk",
    "grid3d_counts",
    "figures",
]


def _pos_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _resource(name: str, machine: "Machine | str | None" = None) -> int:
    return int(get_machine(DEFAULT_MACHINE if machine is None else machine).resource(name))


@dataclass(frozen=True)
class CarverDevice:
    """The fields of ``tilelang.carver.arch.TileDevice`` that the policy reads.

    ``smem_cap`` and ``compute_max_core`` default to the default machine profile's
    shared memory per block and SM count; the rest are carver's own constants.
    """

    smem_cap: int = field(default_factory=lambda: _resource("smem_per_block_kb") * 1024)
    compute_max_core: int = field(default_factory=lambda: _resource("sms"))
    reg_cap: int = 65536
    sm_partition: int = 4
    transaction_size: tuple[int, int] = (32, 128)
    warp_size: int = 32
    bandwidth: tuple[int, int] = (750, 12080)  # MB/s; carver says only the ratio means anything
    max_smem_usage: Optional[int] = None  # carver: 2 * smem_cap

    def __post_init__(self) -> None:
        for name in ("smem_cap", "compute_max_core", "reg_cap", "sm_partition", "warp_size"):
            _pos_int(name, getattr(self, name))
        if len(self.transaction_size) != 2 or any(int(t) <= 0 for t in self.transaction_size):
            raise ValueError(f"transaction_size must be two positive byte counts, got {self.transaction_size!r}")

    @classmethod
    def from_machine(cls, machine: "Machine | str | None" = None, **kw) -> "CarverDevice":
        """The device of a machine profile: its SM count and shared memory per block."""
        return cls(smem_cap=_resource("smem_per_block_kb", machine) * 1024,
                   compute_max_core=_resource("sms", machine), **kw)

    def describe(self) -> str:
        return (f"device: {self.compute_max_core} SMs, smem_cap {self.smem_cap // 1024} KB, "
                f"reg_cap {self.reg_cap}, sm_partition {self.sm_partition}")

    @property
    def max_smem(self) -> int:
        return self.max_smem_usage if self.max_smem_usage is not None else 2 * self.smem_cap


# --- carver helpers, re-written without numpy -------------------------------------


def get_all_factors(n: int) -> list[int]:
    """All divisors of ``n`` in ascending order (``roller/policy/common.py``)."""
    _pos_int("n", n)
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    large = [n // d for d in reversed(small) if d * d != n]
    return small + large


def coalesced_factor(subtensor: list[int], tensor: list[int]) -> int:
    """Contiguous elements of a sub-region (``common.coalesced_factor``)."""
    if subtensor[-1] != tensor[-1] or len(subtensor) == 1:
        return subtensor[-1]
    return subtensor[-1] * coalesced_factor(subtensor[:-1], tensor[:-1])


def coalesced_tensor_shape(subtensor: list[int], tensor: list[int], transaction_size: int) -> float:
    """Elements moved for a region, rounded to whole transactions."""
    elements = math.prod(subtensor)
    if elements == 0:
        return 0
    factor = coalesced_factor(subtensor, tensor)
    return transaction_size * elements / min(transaction_size, factor)


class BestFit:
    """Best-fit allocator with 32-byte alignment (``roller/bestfit.py``); ``limit`` is the peak."""

    def __init__(self, align: int = 32) -> None:
        self.limit = 0
        self.align = _pos_int("align", align)
        self.blocks: list[list] = []  # [start, end, free]

    def malloc(self, size: int) -> list:
        size = (size + self.align - 1) // self.align * self.align
        found = None
        for blk in self.blocks:
            if blk[2] and blk[1] - blk[0] >= size and (found is None or found[1] - found[0] > blk[1] - blk[0]):
                found = blk
        if found is not None:
            found[2] = False
            remain = found[1] - found[0] - size
            if remain:
                found[1] -= remain
                self.blocks.insert(self.blocks.index(found) + 1, [found[1], found[1] + remain, True])
            return found
        if self.blocks and self.blocks[-1][2]:
            last = self.blocks[-1]
            last[1] += size - (last[1] - last[0])
            self.limit = last[1]
            last[2] = False
            return last
        blk = [self.limit, self.limit + size, False]
        self.blocks.append(blk)
        self.limit += size
        return blk

    def free(self, blk: list) -> None:
        idx = next(i for i, b in enumerate(self.blocks) if b is blk)
        new = [blk[0], blk[1], True]
        self.blocks[idx] = new
        if idx + 1 < len(self.blocks) and self.blocks[idx + 1][2]:
            new[1] = self.blocks[idx + 1][1]
            self.blocks.pop(idx + 1)
        if idx - 1 >= 0 and self.blocks[idx - 1][2]:
            new[0] = self.blocks[idx - 1][0]
            self.blocks.pop(idx - 1)


# --- the GEMM node ------------------------------------------------------------------


@dataclass(frozen=True)
class _Gemm:
    m: int
    n: int
    k: int
    in_bytes: int
    out_bytes: int
    trans_b: bool

    def a_region(self, bm: int, rk: int) -> tuple[list[int], list[int]]:
        return [bm, rk], [self.m, self.k]

    def b_region(self, bn: int, rk: int) -> tuple[list[int], list[int]]:
        if self.trans_b:
            return [bn, rk], [self.n, self.k]
        return [rk, bn], [self.k, self.n]


def assign_reduce_step(k: int, in_bytes: int = 2, trans_b: bool = True, device: CarverDevice = CarverDevice()) -> int:
    """Carver's ``_assign_reduce_step`` for a GEMM: the block_K it fixes before the walk."""
    _pos_int("k", k)
    _pos_int("in_bytes", in_bytes)
    steps = get_all_factors(k)
    if len(steps) == 2 and k > 64:  # a large prime: powers of two instead
        steps = [1]
        while steps[-1] * 2 < k:
            steps.append(steps[-1] * 2)
    g = _Gemm(1, 1, k, in_bytes, in_bytes, trans_b)
    read_elems = device.transaction_size[1] // in_bytes

    def sim(a: int, b: int) -> float:
        return (2 * a * b) / (a * a + b * b)

    def score(i: int) -> float:
        rk = steps[i]
        a_sub, a_full = g.a_region(1, rk)
        b_sub, b_full = g.b_region(1, rk)
        return sim(coalesced_factor(a_sub, a_full), read_elems) + sim(coalesced_factor(b_sub, b_full), read_elems)

    cur, cur_score = 0, score(0)
    while cur_score != 0:
        cands = [(cur, cur_score)]
        if cur + 1 < len(steps):
            cands.append((cur + 1, score(cur + 1)))
        best = max(cands, key=lambda c: c[1])
        if best[1] <= cur_score:
            break
        cur, cur_score = best
    return steps[cur]


@dataclass(frozen=True)
class TileEval:
    tile: tuple[int, int]
    rstep: int
    traffic: float  # bytes per block, as carver computes it
    smem: int
    valid: bool
    reject: str  # "", "smem" or "regs"
    grid: int = 0
    reg_usage: int = 0
    block_per_sm: int = 0
    num_wave: int = 0

    @property
    def priority(self) -> float:
        return (self.traffic + 1) * self.num_wave


def evaluate_tile(
    tile: tuple[int, int],
    m: int,
    n: int,
    k: int,
    *,
    rstep: int,
    in_bytes: int = 2,
    out_bytes: int = 2,
    reg_bits: int = 32,
    trans_b: bool = True,
    device: CarverDevice = CarverDevice(),
) -> TileEval:
    """Carver's ``compute_tile_dict`` for one output tile (block_M, block_N)."""
    for name, v in (("m", m), ("n", n), ("k", k), ("rstep", rstep), ("in_bytes", in_bytes),
                    ("out_bytes", out_bytes), ("reg_bits", reg_bits)):
        _pos_int(name, v)
    if len(tile) != 2:
        raise ValueError(f"tile must be (block_M, block_N), got {tile!r}")
    bm, bn = (_pos_int("tile", int(t)) for t in tile)
    g = _Gemm(m, n, k, in_bytes, out_bytes, trans_b)
    # traffic: inputs over the whole K, output tile
    a_sub, a_full = g.a_region(min(bm, m), k)
    b_sub, b_full = g.b_region(min(bn, n), k)
    rd = device.transaction_size[1] // in_bytes
    wr = device.transaction_size[0] // out_bytes
    traffic = (coalesced_tensor_shape(a_sub, a_full, rd) * in_bytes
               + coalesced_tensor_shape(b_sub, b_full, rd) * in_bytes
               + coalesced_tensor_shape([min(bm, m), min(bn, n)], [m, n], wr) * out_bytes)
    # shared memory: cached reduction inputs, each 32-byte aligned, through best fit
    def al(x: int) -> int:
        return (x + 31) // 32 * 32
    a_rs, _ = g.a_region(bm, rstep)
    b_rs, _ = g.b_region(bn, rstep)
    internal = al(math.prod(a_rs) * in_bytes) + al(math.prod(b_rs) * in_bytes)
    alloc = BestFit()
    alloc.free(alloc.malloc(internal))
    smem = alloc.limit
    t = (bm, bn)
    if smem > device.smem_cap:
        return TileEval(t, rstep, traffic, smem, False, "smem")
    grid = math.ceil(m / bm) * math.ceil(n / bn)
    reg = int(2 * bm * bn * reg_bits / 32)
    if reg > device.reg_cap:
        return TileEval(t, rstep, traffic, smem, False, "regs", grid, reg)
    bps = min(device.max_smem // max(smem, 1), device.reg_cap // max(reg, 1), device.sm_partition)
    waves = math.ceil(grid / int(bps * device.compute_max_core)) if bps > 0 else 0
    return TileEval(t, rstep, traffic, smem, True, "", grid, reg, bps, waves)


def total_traffic(e: TileEval) -> float:
    """Carver's per-block traffic times the grid: the whole kernel's bytes."""
    return e.traffic * math.ceil(e.grid)


@dataclass
class WalkResult:
    visited: list[TileEval] = field(default_factory=list)
    ranked: list[TileEval] = field(default_factory=list)  # valid, best first (carver's order)

    @property
    def n_visited(self) -> int:
        return len(self.visited)

    @property
    def n_valid(self) -> int:
        return len(self.ranked)

    def n_rejected(self, why: str) -> int:
        return sum(1 for e in self.visited if e.reject == why)

    @property
    def distinct_priorities(self) -> int:
        return len({e.priority for e in self.ranked})

    @property
    def ties_at_top(self) -> int:
        if not self.ranked:
            return 0
        top = self.ranked[0].priority
        return sum(1 for e in self.ranked if e.priority == top)


def walk(
    m: int = 4096,
    n: int = 4096,
    k: int = 4096,
    *,
    in_bytes: int = 2,
    out_bytes: int = 2,
    reg_bits: int = 32,
    trans_b: bool = True,
    device: CarverDevice = CarverDevice(),
    max_visited: int = 2000,
) -> WalkResult:
    """Carver's ``dfs_smem_tile`` best-first walk over (block_M, block_N)."""
    rstep = assign_reduce_step(k, in_bytes, trans_b, device)
    steps = [get_all_factors(_pos_int("m", m)), get_all_factors(_pos_int("n", n))]
    for s in steps:  # carver adds small powers of two that are not factors
        s.extend(x for x in (2, 4, 8, 16, 32) if s[0] < x < s[-1] and x not in s)
        s.sort()
    res = WalkResult()
    seen: dict[tuple[int, int], TileEval] = {}
    queue: list = []

    def add(tile: list[int]) -> None:
        key = tuple(tile)
        if key in seen:
            return
        e = evaluate_tile(key, m, n, k, rstep=rstep, in_bytes=in_bytes, out_bytes=out_bytes,
                          reg_bits=reg_bits, trans_b=trans_b, device=device)
        seen[key] = e
        if e.valid:
            heapq.heappush(queue, (e.priority, list(tile)))

    add([1, 1])
    while queue and len(seen) <= max_visited:
        _, tile = heapq.heappop(queue)
        ids = [s.index(t) for s, t in zip(steps, tile)]
        for i in reversed(range(2)):
            if ids[i] + 1 < len(steps[i]):
                nt = tile.copy()
                nt[i] = steps[i][ids[i] + 1]
                add(nt)
    res.visited = list(seen.values())
    res.ranked = sorted((e for e in res.visited if e.valid), key=lambda e: e.priority)
    return res


def grid3d_counts(m: int = 4096, n: int = 4096, k: int = 4096, *, lo: int = 16, in_bytes: int = 2,
                  reg_bits: int = 32, device: CarverDevice = CarverDevice()) -> dict[str, int]:
    """The draft's reading: every (block_M, block_N, block_K) power of two from ``lo``, no walk.

    Shared memory is carver's footprint with ``rstep = block_K``; registers as carver.
    Used only to explain the draft's counts (see the ``perfmodel.erratum.carver_*`` figures).
    """
    _pos_int("lo", lo)
    def pows(x: int) -> list[int]:
        return [v for v in get_all_factors(x) if v >= lo and v & (v - 1) == 0]
    out = {"visited": 0, "valid": 0, "regs": 0, "smem": 0}
    for bm in pows(m):
        for bn in pows(n):
            for bk in pows(k):
                e = evaluate_tile((bm, bn), m, n, k, rstep=bk, in_bytes=in_bytes, reg_bits=reg_bits, device=device)
                out["visited"] += 1
                out[e.reject or "valid"] += 1
    return out


# --- figures ------------------------------------------------------------------------

_COND = "4096^3 GEMM, fp16 in/out, fp32 accumulator (reg_bits=32), B as (N,K); " + CarverDevice().describe()

_DRAFT = {"visited": 729, "valid": 154, "rejected_regs": 122, "rejected_smem": 453,
          "distinct_priorities": 48, "ties_at_top": 8}


def book_walk() -> WalkResult:
    return walk(4096, 4096, 4096, reg_bits=32)


def figures() -> list[Figure]:
    w = book_walk()
    src = "ledger.carver.walk"
    ours = {"visited": w.n_visited, "valid": w.n_valid, "rejected_regs": w.n_rejected("regs"),
            "rejected_smem": w.n_rejected("smem"), "distinct_priorities": w.distinct_priorities,
            "ties_at_top": w.ties_at_top}
    out = [fig(f"perfmodel.carver.{name}", v, "tiles", source=src, conditions=_COND) for name, v in ours.items()]
    top = w.ranked[0]
    out += [
        fig("perfmodel.carver.rstep", top.rstep, "elements", source="ledger.carver.assign_reduce_step",
            conditions=_COND + "; block_K fixed before the walk"),
        fig("perfmodel.carver.top_tile", f"{top.tile[0]}x{top.tile[1]}", "", source=src, conditions=_COND),
        fig("perfmodel.carver.top_waves", top.num_wave, "waves", source=src, conditions=_COND),
        fig("perfmodel.carver.top_block_per_sm", top.block_per_sm, "blocks", source=src, conditions=_COND),
        fig("perfmodel.carver.device_bandwidth_gbps", CarverDevice().bandwidth[1] / 1000, "GB/s",
            digits=2, source="tilelang/carver/arch/cuda.py bandwidth[1]=12080 MB/s",
            conditions="carver's relative bandwidth, meaningful only as a ratio between devices"),
    ]
    # block_K has no resolution: same tile, two reduction steps
    a = evaluate_tile((128, 256), 4096, 4096, 4096, rstep=16)
    b = evaluate_tile((128, 256), 4096, 4096, 4096, rstep=128)
    out += [
        fig("perfmodel.carver.bk16_priority_equals_bk128", "yes" if a.priority == b.priority else "no", "",
            source="ledger.carver.evaluate_tile", conditions=_COND + "; tile 128x256, rstep 16 vs 128"),
        fig("perfmodel.carver.tile128x256_total_traffic_mb", total_traffic(a) / 1e6, "MB", digits=1,
            source="ledger.carver.total_traffic", conditions=_COND),
        fig("perfmodel.carver.tile128x256_smem_bk16_kb", a.smem / 1024, "KB", digits=0,
            source="ledger.carver.evaluate_tile", conditions=_COND),
        fig("perfmodel.carver.tile128x256_smem_bk128_kb", b.smem / 1024, "KB", digits=0,
            source="ledger.carver.evaluate_tile", conditions=_COND),
    ]
    # the installed carver's own reading (reg bits = output dtype)
    w16 = walk(4096, 4096, 4096, reg_bits=16)
    c16 = _COND.replace("fp32 accumulator (reg_bits=32)", "reg bits of the fp16 output, as installed carver reads them")
    out += [
        fig("perfmodel.carver.installed.visited", w16.n_visited, "tiles", source=src, conditions=c16),
        fig("perfmodel.carver.installed.valid", w16.n_valid, "tiles", source=src, conditions=c16),
        fig("perfmodel.carver.installed.top_tile", f"{w16.ranked[0].tile[0]}x{w16.ranked[0].tile[1]}", "",
            source=src, conditions=c16),
    ]
    g3 = grid3d_counts()
    for name, draft in _DRAFT.items():
        if draft != ours[name]:
            out.append(fig(
                f"perfmodel.erratum.carver_{name}", ours[name], "tiles", source=src,
                conditions=(f"draft printed {draft}; ours {ours[name]} (the installed carver's walk, checked "
                            "against tilelang 0.1.15 itself). The installed carver walks only (block_M, block_N) "
                            "from [1, 1] and fixes block_K beforehand. The draft's 729 = 9^3 and 453 match a full "
                            f"3-D grid of powers of two 16..4096 (ledger.carver.grid3d_counts: {g3}), whose "
                            "other counts still differ from the draft's 154 valid / 122 on registers. " + _COND)))
    return out


def _table(w: WalkResult, top: int) -> str:
    lines = [f"candidates visited : {w.n_visited}   valid : {w.n_valid}",
             f"rejected on regs   : {w.n_rejected('regs')}",
             f"rejected on smem   : {w.n_rejected('smem')}",
             f"distinct priorities: {w.distinct_priorities}",
             f"ties at the top    : {w.ties_at_top}",
             "",
             f"{'tile':>11} {'rstep':>5} {'traffic/blk B':>14} {'smem B':>8} {'regs':>6} {'blk/SM':>6} {'waves':>5} {'priority':>14}"]
    for e in w.ranked[:top]:
        lines.append(f"{e.tile[0]:>5}x{e.tile[1]:<5} {e.rstep:>5} {e.traffic:>14.0f} {e.smem:>8} {e.reg_usage:>6} "
                     f"{e.block_per_sm:>6} {e.num_wave:>5} {e.priority:>14.0f}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.carver", description="Re-compute tilelang 0.1.15 carver's GEMM walk.")
    p.add_argument("--shape", type=int, nargs=3, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    p.add_argument("--reg-bits", type=int, default=32, help="bits per accumulator element (carver itself uses the output dtype)")
    p.add_argument("--machine", default=DEFAULT_MACHINE, help="machine profile for SMs and shared memory")
    p.add_argument("--sms", type=int, help="SM count (default: the machine profile's)")
    p.add_argument("--smem-kb", type=int, help="shared memory per block, KB (default: the machine profile's)")
    p.add_argument("--top", type=int, default=10)
    a = p.parse_args(argv)
    try:
        base = CarverDevice.from_machine(a.machine)
        dev = CarverDevice(smem_cap=base.smem_cap if a.smem_kb is None else a.smem_kb * 1024,
                           compute_max_core=base.compute_max_core if a.sms is None else a.sms)
    except ValueError as exc:
        p.error(str(exc))
    w = walk(*a.shape, reg_bits=a.reg_bits, device=dev)
    print(_table(w, a.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
