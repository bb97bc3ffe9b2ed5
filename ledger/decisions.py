"""Fusion and split decisions of chapter 28: four questions, six trade-offs.

A fusion saves the bytes of every intermediate that no longer crosses a kernel
boundary (written once, read once).  It can still lose, for four reasons, so every
decision answers four questions:

1. How many bytes does it save?
2. How much data must live on chip at once (and does it fit)?
3. Does it shrink the grid below what fills the device?
4. What new work does it add (extra outputs, reductions, synchronisation)?

Each :class:`Decision` compares two options by bytes moved, grid and on-chip need.
The winner is the feasible option with the smaller *fill-adjusted floor*
``(bytes + common) / (bandwidth * min(1, grid / SMs))``: a grid smaller than the SM
count can only draw on that share of the machine.  ``common`` are bytes both options
move (the operands of a split-K GEMM) and are left out of the printed columns, as the
chapter's table does.  The model is crude on purpose; it is enough to flip the answer
of the two split rows, which is the point of the table.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Optional

from ledger.case_study import CASE, two_kernel_bytes, ideal_bytes, design
from ledger.cost import check_size, dtype_bytes
from ledger.figures import Figure, fig
from ledger.gemm import split_k_bytes
from ledger.machines import DEFAULT_MACHINE, get_machine
from ledger.tiles import HOPPER

__all__ = ["QUESTIONS", "Option", "Decision", "decisions", "skinny_gemm_split_k", "decode_split_kv", "figures"]

QUESTIONS = (
    "bytes saved: how many intermediate bytes stop crossing a kernel boundary?",
    "on-chip: how much must stay live on chip at once, and does it fit?",
    "parallelism: does the grid stay above the number of SMs?",
    "new work: which extra outputs, reductions or synchronisation does it add?",
)


@dataclass(frozen=True)
class Option:
    name: str
    bytes: float
    grid: int
    onchip_bytes: float = 0.0
    feasible: bool = True


@dataclass(frozen=True)
class Decision:
    name: str
    question: int  # 1-4: the question that decides it
    a: Option
    b: Option
    common_bytes: float = 0.0

    def floor_seconds(self, o: Option, machine: str = DEFAULT_MACHINE, sms: int | None = None) -> float:
        """``(bytes + common) / (bandwidth * min(1, grid / SMs))``; SMs default to the machine's."""
        m = get_machine(machine)
        sms = int(m.resource("sms")) if sms is None else sms
        bw = m.bandwidth
        return (o.bytes + self.common_bytes) / (bw * min(1.0, o.grid / sms))

    @property
    def delta_bytes(self) -> float:
        """A minus B (negative: B moves more)."""
        return self.a.bytes - self.b.bytes

    def winner(self, machine: str = DEFAULT_MACHINE, sms: int | None = None) -> Option:
        opts = [o for o in (self.a, self.b) if o.feasible]
        if not opts:
            raise ValueError(f"decision {self.name!r}: neither option is feasible")
        return min(opts, key=lambda o: self.floor_seconds(o, machine, sms))


def skinny_gemm_split_k(m: int = 1024, n: int = 1024, k: int = 16384, split: int = 8,
                        block: int = 128, dtype: str = "fp16") -> Decision:
    """No split (one fp32 C) against split-K (fp32 partials written, reduced, C written)."""
    for name, v in (("m", m), ("n", n), ("k", k), ("split", split), ("block", block)):
        check_size(name, v)
    grid = -(-m // block) * -(-n // block)
    operands = dtype_bytes(dtype) * (m * k + k * n)
    return Decision(
        f"skinny GEMM {m}x{n}x{k}, split-K={split}", 3,
        Option("no split", split_k_bytes(m, n, split=1), grid),
        Option(f"split-K={split}", split_k_bytes(m, n, split=split), grid * split),
        common_bytes=operands)


def decode_split_kv(heads: int = 32, head_dim: int = 128, kv_len: int = 131072, split: int = 64,
                    batch: int = 1, dtype: str = "bf16") -> Decision:
    """One block per (batch, head) against split-KV with fp32 partial outputs and LSE merged after."""
    for name, v in (("heads", heads), ("head_dim", head_dim), ("kv_len", kv_len), ("split", split), ("batch", batch)):
        check_size(name, v)
    b = dtype_bytes(dtype)
    kv = 2 * batch * heads * kv_len * head_dim * b
    q_o = 2 * batch * heads * head_dim * b
    partials = 2 * split * batch * heads * (head_dim + 1) * 4  # written and read back: O and LSE in fp32
    grid = batch * heads
    return Decision(
        f"decode attention, sq=1, skv={kv_len // 1024}k, split-KV={split}", 3,
        Option("one block per head", kv + q_o, grid),
        Option(f"split-KV={split}", kv + q_o + partials, grid * split))


def decisions() -> list[Decision]:
    """The six trade-offs of the chapter, in its order."""
    out = []
    # 1. elementwise chain sin(cos(x)): fusing saves the whole intermediate
    n, b = 4096 * 4096, dtype_bytes("fp16")
    blocks = n // 256
    out.append(Decision("sin(cos(x)), 4096x4096 fp16", 1,
                        Option("two kernels", 4 * n * b, blocks), Option("fused", 2 * n * b, blocks)))
    # 2. the case operator: norm+RoPE, then quantisation vs all in one
    c = design(CASE.rows_per_token)
    out.append(Decision("QK-norm+RoPE | FP8 quant (case)", 1,
                        Option("two kernels", two_kernel_bytes(CASE), c.grid),
                        Option("fused", ideal_bytes(CASE), c.grid, c.onchip_bytes)))
    # 3. GEMM epilogue (bias + GELU) fused vs a separate elementwise kernel
    m = 4096
    epi = 2 * m * m * b + m * b  # C written and read back once more, bias read
    out.append(Decision("GEMM 4096^3 + bias + GELU epilogue", 4,
                        Option("separate epilogue", epi, m * m // 256), Option("fused epilogue", m * b, 512),
                        common_bytes=b * 3 * m * m))
    # 4. one-pass LayerNorm over a 65536-wide fp32 row: the row does not fit on chip
    rows, width = 64, 65536
    row_bytes = width * 4
    ln = rows * width * 2 * b
    out.append(Decision(f"LayerNorm {rows}x{width}: whole row on chip vs split-row", 2,
                        Option("one row per block", ln, rows, row_bytes, feasible=row_bytes <= HOPPER.smem_per_block),
                        Option("split row (partial sums)", ln + rows * 32 * 2 * 4 * 2, rows * 32, row_bytes / 32)))
    out.append(skinny_gemm_split_k())
    out.append(decode_split_kv())
    return out


# --- figures ------------------------------------------------------------------------

def figures() -> list[Figure]:
    mach = get_machine(DEFAULT_MACHINE)
    out: list[Figure] = [fig("perfmodel.fusion.questions", len(QUESTIONS), "questions", source="ledger.decisions.QUESTIONS")]
    c0 = f"{mach.name}, {mach.resource('sms')} SMs; winner = feasible option with the smaller fill-adjusted floor"
    keys = {4: "skinny", 5: "decode"}
    ds = decisions()
    out.append(fig("perfmodel.fusion.tradeoffs", len(ds), "decisions", source="ledger.decisions.decisions", conditions=c0))
    for i, d in enumerate(ds):
        tag = keys.get(i, f"d{i + 1}")
        c = f"{d.name}; {c0}"
        out += [
            fig(f"perfmodel.fusion.{tag}.a_mb", d.a.bytes / 1e6, "MB", digits=1, source="ledger.decisions.decisions", conditions=c),
            fig(f"perfmodel.fusion.{tag}.b_mb", d.b.bytes / 1e6, "MB", digits=1, source="ledger.decisions.decisions", conditions=c),
            fig(f"perfmodel.fusion.{tag}.delta_mb", d.delta_bytes / 1e6, "MB", digits=1, source="ledger.decisions.decisions", conditions=c),
            fig(f"perfmodel.fusion.{tag}.a_grid", d.a.grid, "blocks", source="ledger.decisions.decisions", conditions=c),
            fig(f"perfmodel.fusion.{tag}.b_grid", d.b.grid, "blocks", source="ledger.decisions.decisions", conditions=c),
            fig(f"perfmodel.fusion.{tag}.winner", d.winner().name, "", source="ledger.decisions.Decision.winner", conditions=c),
        ]
    return out


def _table() -> str:
    lines = [f"{'decision':<52} {'A MB':>9} {'B MB':>9} {'delta MB':>9} {'A grid':>7} {'B grid':>7}  winner"]
    for d in decisions():
        delta = d.delta_bytes / 1e6 + 0.0 if round(d.delta_bytes / 1e6, 1) else 0.0
        lines.append(f"{d.name:<52} {d.a.bytes / 1e6:>9.1f} {d.b.bytes / 1e6:>9.1f} {delta:>9.1f} "
                     f"{d.a.grid:>7} {d.b.grid:>7}  {d.winner().name}  (Q{d.question})")
    lines += ["", "the four questions:"] + [f"  {i}. {q}" for i, q in enumerate(QUESTIONS, 1)]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    argparse.ArgumentParser(prog="python -m ledger.decisions", description="Fusion / split trade-offs.").parse_args(argv)
    print(_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
