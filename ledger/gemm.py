"""The GEMM ledger of chapter 14: FLOPs, bytes, intensity, tiled traffic, split-K, waves.

For ``C[M,N] = A[M,K] @ B[K,N]`` with ``b`` bytes per input element:

* FLOPs ``2*M*N*K`` (one multiply-add = 2 FLOP), whatever the tiling;
* the minimum DRAM bytes ``b*(M*K + K*N) + b_out*M*N`` (each operand read once, C
  written once);
* intensity ``flops / bytes``; for a square problem with ``b_out = b`` it is ``2M/(3b)``,
  so the bound class flips at ``M = 3*b*balance/2``;
* with output tiles ``block_M x block_N`` and no cache reuse, A is read ``N/block_N``
  times and B ``M/block_M`` times: ``b*M*N*K*(1/block_M + 1/block_N) + b_out*M*N``;
* the naive rung (every output element walks K through global memory) reads
  ``2*M*N*K`` operand elements;
* split-K into ``s`` slices writes ``s`` fp32 partial tiles of C (and a separate
  reduction reads them back) instead of one C;
* a grid of ``T`` blocks on ``S`` SMs with ``r`` resident blocks each runs
  ``ceil(T/(r*S))`` waves; the last one is ``(T mod r*S)/(r*S)`` full.

Shared-memory and register budgets live in :mod:`ledger.tiles`; machine roofs in
:mod:`ledger.machines`.  ``python -m ledger.gemm`` prints the chapter's tables.
"""
from __future__ import annotations

import argparse
import math
from typing import Optional

from ledger.cost import Cost, check_size, dtype_bytes
from ledger.figures import Figure, fig
from ledger.machines import DEFAULT_MACHINE, get_machine
from ledger.tiles import HOPPER, waves

__all__ = [
    "gemm_flops",
    "gemm_min_bytes",
    "gemm_cost",
    "gemm_ai",
    "square_ai",
    "square_crossover",
    "tiled_traffic",
    "naive_traffic",
    "split_k_bytes",
    "split_k_cost",
    "dequant_gemm_cost",
    "grid_waves",
    "figures",
]


def _dims(m: int, n: int, k: int) -> None:
    check_size("m", m)
    check_size("n", n)
    check_size("k", k)


def gemm_flops(m: int, n: int, k: int) -> int:
    """``2*M*N*K``."""
    _dims(m, n, k)
    return 2 * m * n * k


def gemm_min_bytes(m: int, n: int, k: int, dtype: str = "fp16", out_dtype: Optional[str] = None) -> float:
    """Each operand read once, C written once."""
    _dims(m, n, k)
    b = dtype_bytes(dtype)
    bo = dtype_bytes(out_dtype if out_dtype is not None else dtype, arg="out_dtype")
    return b * (m * k + k * n) + bo * m * n


def gemm_cost(m: int, n: int, k: int, dtype: str = "fp16", out_dtype: Optional[str] = None) -> Cost:
    """The (flops, bytes) pair of one GEMM call (for ``kernels/`` harness rates)."""
    return Cost(gemm_flops(m, n, k), gemm_min_bytes(m, n, k, dtype, out_dtype), name=f"gemm {m}x{n}x{k} {dtype}")


def gemm_ai(m: int, n: int, k: int, dtype: str = "fp16", out_dtype: Optional[str] = None) -> float:
    return gemm_flops(m, n, k) / gemm_min_bytes(m, n, k, dtype, out_dtype)


def square_ai(side: int, dtype: str = "fp16") -> float:
    """``2M/(3b)``: the intensity of a square GEMM."""
    check_size("side", side)
    return 2 * side / (3 * dtype_bytes(dtype))


def square_crossover(balance: float, dtype: str = "fp16") -> float:
    """Side where a square GEMM's intensity reaches ``balance``: ``3*b*balance/2``."""
    check_size("balance", balance, integer=False)
    return 3 * dtype_bytes(dtype) * balance / 2


def tiled_traffic(m: int, n: int, k: int, block_m: int, block_n: int, dtype: str = "fp16",
                  out_dtype: Optional[str] = None) -> float:
    """DRAM bytes when every block re-reads its A rows and B columns (no cache reuse)."""
    _dims(m, n, k)
    check_size("block_m", block_m)
    check_size("block_n", block_n)
    b = dtype_bytes(dtype)
    bo = dtype_bytes(out_dtype if out_dtype is not None else dtype, arg="out_dtype")
    return b * m * n * k * (1 / block_m + 1 / block_n) + bo * m * n


def naive_traffic(m: int, n: int, k: int, dtype: str = "fp16") -> float:
    """Operand bytes of the naive rung: every output element reads K elements of A and of B."""
    _dims(m, n, k)
    return 2 * m * n * k * dtype_bytes(dtype)


def split_k_bytes(m: int, n: int, *, split: int, partial_dtype: str = "fp32",
                  separate_reduce: bool = True) -> float:
    """Bytes on the output side of split-K.

    ``split == 1`` writes C once.  With ``split > 1`` every slice writes an fp32 partial
    tile (``split * M*N * b_p``); a separate reduction reads them back and writes C
    (``separate_reduce``); with atomics the partials land on C directly and there is no
    read-back.
    """
    check_size("m", m)
    check_size("n", n)
    check_size("split", split)
    bp = dtype_bytes(partial_dtype, arg="partial_dtype")
    if split == 1:
        return m * n * bp
    partial = split * m * n * bp
    if not separate_reduce:
        return partial
    return 2 * partial + m * n * bp


def split_k_cost(m: int, n: int, k: int, *, split: int, dtype: str = "fp16", partial_dtype: str = "fp32",
                 separate_reduce: bool = False) -> Cost:
    """A split-K GEMM: operands read once, output side from :func:`split_k_bytes` (atomics by default)."""
    _dims(m, n, k)
    operands = dtype_bytes(dtype) * (m * k + k * n)
    out = split_k_bytes(m, n, split=split, partial_dtype=partial_dtype, separate_reduce=separate_reduce)
    return Cost(gemm_flops(m, n, k), operands + out, name=f"split-K={split} gemm {m}x{n}x{k}")


def dequant_gemm_cost(m: int, n: int, k: int, *, weight_dtype: str = "int4", group: int = 128,
                      act_dtype: str = "fp16", scale_dtype: str = "fp16", out_dtype: str = "fp16") -> Cost:
    """Weight-only quantised GEMM: activations (M,K), packed weights (N,K), one scale per group of K per row
    of the weights, output (M,N).  FLOPs stay ``2MNK`` (the dequantisation is not counted)."""
    _dims(m, n, k)
    check_size("group", group)
    nbytes = (dtype_bytes(act_dtype, arg="act_dtype") * m * k + dtype_bytes(weight_dtype, arg="weight_dtype") * n * k
              + dtype_bytes(scale_dtype, arg="scale_dtype") * n * math.ceil(k / group)
              + dtype_bytes(out_dtype, arg="out_dtype") * m * n)
    return Cost(gemm_flops(m, n, k), nbytes, name=f"dequant gemm {m}x{n}x{k} {weight_dtype}/g{group}")


def grid_waves(m: int, n: int, block_m: int, block_n: int, *, split: int = 1, blocks_per_sm: int = 1,
               sms: int = HOPPER.sms) -> tuple[int, int, float]:
    """(grid size, waves, fill of the last wave)."""
    check_size("split", split)
    grid = math.ceil(check_size("m", m) / check_size("block_m", block_m)) * \
        math.ceil(check_size("n", n) / check_size("block_n", block_n)) * split
    w, fill = waves(grid, blocks_per_sm, sms)
    return grid, w, fill


# --- figures ------------------------------------------------------------------------

LADDER_SIDES = (256, 512, 1024, 2048, 4096, 8192)


def figures() -> list[Figure]:
    out: list[Figure] = []
    h100 = get_machine("h100-spec")
    c_h100 = f"{h100.name}: {h100.source}"
    out += [
        fig("gemm.machine.h100_tflops", h100.peak_flops / 1e12, "TFLOPS", digits=0, source="ledger.machines", conditions=c_h100),
        fig("gemm.machine.h100_tbps", h100.bandwidth / 1e12, "TB/s", digits=0, source="ledger.machines", conditions=c_h100),
        fig("gemm.machine.h100_balance", h100.balance, "FLOP/B", digits=0, source="ledger.machines", conditions=c_h100),
        fig("gemm.ledger.crossover_side_h100", square_crossover(h100.balance), "elements", digits=0,
            source="ledger.gemm.square_crossover", conditions="square fp16 GEMM, " + c_h100),
    ]
    cal = get_machine(DEFAULT_MACHINE)
    out.append(fig("gemm.ledger.crossover_side_h200", square_crossover(cal.balance), "elements", digits=0,
                   source="ledger.gemm.square_crossover", conditions=f"square fp16 GEMM, {cal.name}"))
    # the ledger table: square fp16 GEMMs on H100 spec and H200 calibrated
    for side in LADDER_SIDES:
        c = gemm_cost(side, side, side)
        cond = f"{side}^3 fp16 in/out"
        out += [
            fig(f"gemm.ledger.s{side}.gflop", c.flops / 1e9, "GFLOP", digits=2, source="ledger.gemm.gemm_flops", conditions=cond),
            fig(f"gemm.ledger.s{side}.mb", c.bytes / 1e6, "MB", digits=1, source="ledger.gemm.gemm_min_bytes", conditions=cond),
            fig(f"gemm.ledger.s{side}.ai", c.intensity, "FLOP/B", digits=1, source="ledger.gemm.gemm_ai", conditions=cond),
            fig(f"gemm.ledger.s{side}.bound_h100", c.bound(h100), "", source="ledger.cost.judge", conditions=cond + ", " + h100.name),
            fig(f"gemm.ledger.s{side}.bound_h200", c.bound(cal), "", source="ledger.cost.judge", conditions=cond + ", " + cal.name),
        ]
    m = 4096
    c4 = "4096^3 fp16 in/out, no cache reuse between blocks"
    out += [
        fig("gemm.naive.min_mib", gemm_min_bytes(m, m, m) / 2 ** 20, "MiB", digits=0, source="ledger.gemm.gemm_min_bytes", conditions=c4),
        fig("gemm.naive.traffic_gb", naive_traffic(m, m, m) / 1e9, "GB", digits=0, source="ledger.gemm.naive_traffic", conditions=c4),
        fig("gemm.naive.ratio", naive_traffic(m, m, m) / gemm_min_bytes(m, m, m), "x", digits=0,
            source="ledger.gemm.naive_traffic", conditions=c4),
    ]
    for bm, bn in ((128, 128), (128, 256), (256, 256)):
        t = tiled_traffic(m, m, m, bm, bn)
        out.append(fig(f"perfmodel.tile.traffic_{bm}x{bn}_mb", t / 1e6, "MB", digits=1, source="ledger.gemm.tiled_traffic", conditions=c4))
        out.append(fig(f"gemm.tiled.traffic_{bm}x{bn}_mb", t / 1e6, "MB", digits=1, source="ledger.gemm.tiled_traffic", conditions=c4))
    # gemm 128^3 flips between roofs (chapter 28 sweep)
    small = gemm_cost(128, 128, 128)
    out += [
        fig("perfmodel.sweep.gemm128_ai", small.intensity, "FLOP/B", digits=2, source="ledger.gemm.gemm_ai", conditions="128^3 fp16"),
        fig("perfmodel.sweep.gemm128_bound_tensor", small.bound(cal, roof="tensor_core.fp16"), "", source="ledger.cost.judge",
            conditions=f"128^3 fp16, {cal.name} tensor_core.fp16"),
        fig("perfmodel.sweep.gemm128_bound_cuda", small.bound(cal, roof="cuda_core.fp32"), "", source="ledger.cost.judge",
            conditions=f"128^3 fp16, {cal.name} cuda_core.fp32"),
    ]
    # waves of the 128x256 tile on the SMs of an H200 (chapter 14 stream-K motivation)
    grid, w, fill = grid_waves(m, m, 128, 256, blocks_per_sm=1)
    cw = f"4096x4096 output, 128x256 tiles, 1 block/SM, {HOPPER.sms} SMs"
    out += [
        fig("gemm.waves.grid", grid, "blocks", source="ledger.gemm.grid_waves", conditions=cw),
        fig("gemm.waves.waves", w, "waves", source="ledger.gemm.grid_waves", conditions=cw),
        fig("gemm.waves.last_fill_pct", 100 * fill, "%", digits=1, source="ledger.gemm.grid_waves", conditions=cw),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.gemm", description="The chapter 14 GEMM ledger.")
    p.add_argument("--machine", default="h100-spec")
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--shape", type=int, nargs=3, metavar=("M", "N", "K"))
    a = p.parse_args(argv)
    mach = get_machine(a.machine)
    print(mach.summary())
    print(f"square crossover side: {square_crossover(mach.balance, a.dtype):.0f}")
    print(f"{'M=N=K':>8} {'GFLOP':>10} {'min MB':>10} {'AI':>9}  bound")
    shapes = [tuple(a.shape)] if a.shape else [(s, s, s) for s in LADDER_SIDES]
    for mm, nn, kk in shapes:
        c = gemm_cost(mm, nn, kk, a.dtype)
        print(f"{mm:>8} {c.flops / 1e9:>10.2f} {c.bytes / 1e6:>10.1f} {c.intensity:>9.1f}  {c.bound(mach)}")
    mm, nn, kk = tuple(a.shape) if a.shape else (4096, 4096, 4096)
    print()
    print(f"tiled traffic at {mm}x{nn}x{kk} (no cache reuse):")
    for bm, bn in ((64, 64), (128, 128), (128, 256), (256, 256)):
        print(f"  {bm:>4}x{bn:<4} {tiled_traffic(mm, nn, kk, bm, bn, a.dtype) / 1e6:>10.1f} MB")
    print(f"  naive    {naive_traffic(mm, nn, kk, a.dtype) / 1e9:>10.1f} GB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
