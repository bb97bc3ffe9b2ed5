"""Rooflines: the H200's calibrated and datasheet ceilings with chapter 1's operators, square
GEMMs on the H200 and H100 rooflines, and one bandwidth line under three compute roofs.  Every
ceiling is a :mod:`ledger.machines` profile (the default one: :data:`ledger.machines.DEFAULT_MACHINE`);
every point a :mod:`ledger` cost."""
from __future__ import annotations

from ledger.machines import DEFAULT_MACHINE

from coursebook.style import COLORS as _C
from coursebook.style import figure, machine_words

__all__ = ["roofline_h200", "gemm_roofline", "roofline_three_roofs", "ROOFS", "BOUND_ZH", "bound_values",
           "ridge_gap_values"]


#: The ledger's verdicts (:meth:`ledger.cost.Cost.bound`) in Chinese.
BOUND_ZH = {"memory-bound": "受带宽限制", "compute-bound": "受算力限制", "balanced": "恰在平衡点上"}


def bound_values(prefix: str) -> dict[str, str]:
    """Every registry figure under ``prefix`` whose text is a verdict of the ledger (``memory-bound``…),
    in Chinese, keyed ``calc.<its key>`` -- so a page glues 受带宽限制 where the registry holds the
    English word."""
    from ledger.figures import collect

    return {f"calc.{k}": BOUND_ZH[str(f.text)] for k, f in collect().items()
            if k.startswith(prefix) and str(f.text) in BOUND_ZH}


def ridge_gap_values(machine: str = DEFAULT_MACHINE) -> dict[str, str]:
    """How far below the lowest of the machine's three roofs (:data:`ROOFS`) the bandwidth-bound
    operators of the book sit, as factors (that ridge divided by the operator's intensity):
    ``calc.perfmodel.ridge_gap.case`` for the case operator (the book's FLOP reading),
    ``calc.perfmodel.ridge_gap.elementwise`` for the most intense fused plan of the elementwise
    chapter (its registry figure ``elementwise.fusion.ai_max``), and the ridge itself."""
    from ledger import case_study as cs
    from ledger.figures import collect
    from ledger.machines import get_machine

    m = get_machine(machine)
    ridge = min(m.roof(u) for u in ROOFS) / m.bandwidth
    case_ai = cs.case_cost(cs.CASE, cs.BOOK_READING).intensity
    ew_ai = float(collect()["elementwise.fusion.ai_max"].value)
    return {"calc.perfmodel.ridge_gap.lowest_ridge": f"{ridge:.2f}",
            "calc.perfmodel.ridge_gap.case": f"{ridge / case_ai:.1f}",
            "calc.perfmodel.ridge_gap.elementwise": f"{ridge / ew_ai:.1f}"}


def _bound_color(bound: str) -> str:
    return _C["compute"] if bound == "compute-bound" else _C["memory"]


_SHORT = {
    "elementwise add": "逐元素加",
    "elementwise chain x2, eager": "sin(cos(x)) eager",
    "elementwise chain x2, fused": "sin(cos(x)) 融合",
    "fused": "LayerNorm 融合",
    "3 passes": "LayerNorm 三趟",
    "GEMM": "GEMM 4096³",
    "scores": "attention prefill（分数落显存）",
    "flash-style": "attention prefill（flash 风格）",
    "attention decode": "attention decode",
    "AdamW": "AdamW",
}


def _short_name(name: str) -> str:
    if name.startswith("LayerNorm"):
        return _SHORT["fused"] if "fused" in name else _SHORT["3 passes"]
    if name.startswith("attention prefill"):
        return _SHORT["flash-style"] if "flash" in name else _SHORT["scores"]
    for k, v in _SHORT.items():
        if name.startswith(k):
            return v
    return name


#: points closer than this in log10(AI) are drawn as one on top of the other (0.05: within 12 %)
_COINCIDENT = 0.05
#: where the label of such a point goes, in points from it (up and to the left, clear of the others)
_LEAD_OFF = (-24, 34)


def roofline_h200():
    """H200 roofline: calibrated and datasheet ceilings, the chapter's operators placed on it."""
    import numpy as np

    from ledger.cost import judge
    from ledger.machines import get_machine
    from ledger.ops import op_table

    cal, spec = get_machine(DEFAULT_MACHINE), get_machine("h200-spec")
    fig = figure(8.4, 5.2)
    ax = fig.add_subplot(1, 1, 1)
    ai = np.logspace(-1.2, 4.0, 400)
    for m, color, ls, label in ((spec, _C["datasheet"], "--", "H200 规格"),
                                (cal, _C["calibrated"], "-", "H200 标定")):
        roof = np.minimum(m.peak_flops, ai * m.bandwidth) / 1e12
        ax.plot(ai, roof, ls, color=color, lw=2,
                label=f"{label}：{m.peak_flops / 1e12:.1f} TFLOP/s，{m.bandwidth / 1e9:.0f} GB/s，"
                      f"平衡点 {m.balance:.0f}")
        ax.axvline(m.balance, color=color, lw=0.8, ls=":")
    ax.axvspan(ai[0], cal.balance, color=_C["memory"], alpha=0.05)
    ax.axvspan(cal.balance, ai[-1], color=_C["compute"], alpha=0.05)
    ax.text(0.09, 3.0e3, "受带宽限制", color=_C["memory"], fontsize=10)
    ax.text(600, 3.0e3, "受算力限制", color=_C["compute"], fontsize=10)
    # label placement: alternate above-left / below-right of the diagonal
    place = {
        "逐元素加": ((8, -13), "left"), "sin(cos(x)) eager": ((-8, 6), "right"),
        "sin(cos(x)) 融合": ((8, -13), "left"), "AdamW": ((-8, 6), "right"),
        "LayerNorm 三趟": ((8, -13), "left"),
        "LayerNorm 融合": ((8, -13), "left"), "attention prefill（分数落显存）": ((8, -13), "left"),
        "GEMM 4096³": ((4, -16), "right"), "attention prefill（flash 风格）": ((0, 9), "center"),
    }
    drawn: list[float] = []
    for c in op_table():
        if c.flops == 0:
            continue
        v = judge(c, cal)
        y = min(cal.peak_flops, v.intensity * cal.bandwidth) / 1e12
        name = _short_name(c.name)
        ai_txt = f"{v.intensity:.0f}" if v.intensity >= 100 else f"{v.intensity:.3g}"
        if any(abs(np.log10(v.intensity / d)) < _COINCIDENT for d in drawn):
            # a point on top of one already drawn: a hollow diamond around it, its label led off by an arrow
            ax.scatter([v.intensity], [y], s=110, marker="D", facecolor="none", edgecolor=_bound_color(v.bound),
                       linewidth=1.4, zorder=6)
            ax.annotate(f"{name}（{ai_txt}）", (v.intensity, y), textcoords="offset points", xytext=_LEAD_OFF,
                        fontsize=8, ha="right", va="bottom",
                        arrowprops=dict(arrowstyle="-", color="#555555", lw=0.8, shrinkB=6))
        else:
            ax.scatter([v.intensity], [y], s=36, color=_bound_color(v.bound), zorder=5, edgecolor="white")
            (dx, dy), ha = place.get(name, ((8, -13), "left"))
            ax.annotate(f"{name}（{ai_txt}）", (v.intensity, y), textcoords="offset points",
                        xytext=(dx, dy), fontsize=8, ha=ha)
        drawn.append(v.intensity)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(ai[0], ai[-1])
    ax.set_ylim(0.1, 6e3)
    ax.set_xlabel("算术强度 (FLOP/Byte)")
    ax.set_ylabel("可达算力上限 (TFLOP/s)")
    ax.set_title("H200 roofline：fp16 张量核与 HBM，点为本章的算子（标定参数）")
    ax.legend(loc="lower right", fontsize=8.5)
    fig.tight_layout()
    return fig


def gemm_roofline():
    """Square fp16 GEMMs on the H200 (calibrated) and H100 (datasheet) rooflines."""
    import numpy as np

    from ledger.gemm import LADDER_SIDES, gemm_cost, square_crossover
    from ledger.machines import get_machine

    cal, h100 = get_machine(DEFAULT_MACHINE), get_machine("h100-spec")
    fig = figure(8.2, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    ai = np.logspace(0.5, 3.8, 300)
    for m, color, ls, label in ((h100, _C["datasheet"], "--", "H100 SXM5 规格"),
                                (cal, _C["calibrated"], "-", "H200 标定")):
        ax.plot(ai, np.minimum(m.peak_flops, ai * m.bandwidth) / 1e12, ls, color=color, lw=2,
                label=f"{label}（平衡点 {m.balance:.0f} FLOP/B，方阵交点边长 {square_crossover(m.balance):.0f}）")
        ax.axvline(m.balance, color=color, lw=0.8, ls=":")
    for i, side in enumerate(LADDER_SIDES):
        c = gemm_cost(side, side, side)
        y = min(cal.peak_flops, c.intensity * cal.bandwidth) / 1e12
        color = _C["compute"] if c.bound(cal) == "compute-bound" else _C["memory"]
        ax.scatter([c.intensity], [y], color=color, s=40, zorder=5, edgecolor="white")
        ax.annotate(f"{side}³（{c.intensity:.0f}）", (c.intensity, y), textcoords="offset points",
                    xytext=(0, 8 if i % 2 else -16), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("算术强度 (FLOP/Byte)，fp16 输入输出")
    ax.set_ylabel("可达算力上限 (TFLOP/s)")
    ax.set_title("方阵 GEMM 在 roofline 上的位置：AI = 2M/(3b) 随边长线性增长")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


ROOFS = ("tensor_core.fp8", "tensor_core.fp16", "cuda_core.fp32")


_ROOF_COLORS = {"tensor_core.fp8": _C["accent"], "tensor_core.fp16": _C["compute"], "cuda_core.fp32": _C["eager"]}


_ROOF_NAMES = {"tensor_core.fp8": "张量核 fp8", "tensor_core.fp16": "张量核 fp16", "cuda_core.fp32": "CUDA 核 fp32"}


def roofline_three_roofs(machine: str = DEFAULT_MACHINE):
    """Three compute roofs over one HBM roof; the case operator (both FLOP readings and its
    two-kernel split) and a 128^3 fp16 GEMM, whose verdict flips with the roof."""
    import math

    from ledger import case_study as cs
    from ledger import misreadings as mr
    from ledger.machines import get_machine
    from ledger.ops import gemm

    m = get_machine(machine)
    bw = m.bandwidth
    fig = figure(7.6, 4.6)
    ax = fig.add_subplot(1, 1, 1)
    lo, hi = 0.5, 2000.0
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for u in ROOFS:
        peak = m.roof(u)
        ridge = peak / bw
        ys = [min(x * bw, peak) / 1e12 for x in xs]
        ax.plot(xs, ys, color=_ROOF_COLORS[u], lw=1.8, label=f"{_ROOF_NAMES[u]}：{peak / 1e12:.0f} TFLOP/s，平衡点 {ridge:.1f}")
        ax.plot([ridge], [peak / 1e12], "o", color=_ROOF_COLORS[u], ms=4)
    book = cs.case_cost(cs.CASE, cs.BOOK_READING)
    alt = cs.case_cost(cs.CASE, "fused_absmax")
    two, _ = mr.m4_split_vs_fused()
    pts = [(book.intensity, "案例算子（本书口径）", _C["memory"], "o"),
           (alt.intensity, "案例算子（另一种 FLOP 口径）", _C["datasheet"], "s"),
           (two.intensity, "同一算子拆成两个 kernel", _C["eager"], "v")]
    for ai, lab, col, mk in pts:
        ax.plot([ai], [ai * bw / 1e12], mk, color=col, ms=7, label=f"{lab}：AI {ai:.2f}")
    g = gemm(128, 128, 128, dtype="fp16")
    ai_g = g.flops / g.bytes
    ax.plot([ai_g], [min(ai_g * bw, m.roof("tensor_core.fp16")) / 1e12], "D", color="#333333", ms=6,
            label=f"GEMM 128³ fp16：AI {ai_g:.1f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bw * lo / 1e12 * 0.8, m.roof("tensor_core.fp8") / 1e12 * 2.5)
    ax.set_xlabel("算术强度（FLOP/Byte，对数）")
    ax.set_ylabel("可达到的算力上限（TFLOP/s，对数）")
    ax.set_title(f"{machine_words(m.name)}：一条带宽线（{bw / 1e9:.0f} GB/s），三块天花板")
    ax.legend(fontsize=7.6, loc="upper left")
    assert math.isfinite(ai_g)
    return fig


_UNIT_ZH = {"tensor_core.fp16": "张量核 fp16", "tensor_core.bf16": "张量核 bf16", "tensor_core.tf32": "张量核 tf32",
            "tensor_core.fp8": "张量核 fp8", "cuda_core.fp32": "CUDA core fp32"}
_MEM_ZH = {"hbm": "显存（最好的访问模式）", "hbm.copy": "显存（拷贝）", "hbm.triad": "显存（triad）", "hbm.write": "显存（只写）"}


def machines_table() -> str:
    """Markdown: every machine profile the ledger knows -- one row per roof (effective rate, the
    theoretical rate and the calibration factor behind it), with the default roofs' balance."""
    from ledger.machines import DEFAULT_MACHINE, machines

    lines = ["| 机器 | 天花板 | 可达值 | 规格值 × 标定系数 |", "|---|---|---:|---|"]
    for name, m in machines().items():
        first = True
        for unit, r in m.compute.items():
            head = f"**{name}**" + ("（正文默认）" if name == DEFAULT_MACHINE else "")
            lines.append(f"| {head if first else ''} | {_UNIT_ZH.get(unit, unit)} | "
                         f"{r.effective / 1e12:,.1f} TFLOP/s | {r.theoretical / 1e12:,.1f} × {r.calibration:g} |")
            first = False
        for path, r in m.memory.items():
            lines.append(f"|  | {_MEM_ZH.get(path, path)} | {r.effective / 1e9:,.0f} GB/s | "
                         f"{r.theoretical / 1e9:,.0f} × {r.calibration:g} |")
        lines.append(f"|  | 平衡点（{_UNIT_ZH.get(m.default_compute, m.default_compute)} ÷ "
                     f"{_MEM_ZH.get(m.default_memory, m.default_memory)}） | {m.balance:,.1f} FLOP/B | |")
        res = _resources_text(m.resources)
        if res:
            lines.append(f"|  | 片上资源 |  | {res} |")
    return "\n".join(lines)


#: On-chip resources of a profile (``ledger.machines.Machine.resources``), in Chinese: ``{}`` takes the number.
_RES_ZH = (("sms", "{} 个 SM"), ("smem_per_sm_kb", "每 SM 共享内存 {} KiB"), ("smem_per_block_kb", "每块共享内存上限 {} KiB"),
           ("regs_per_sm", "每 SM {} 个 32 位寄存器"), ("max_regs_per_thread", "每线程至多 {} 个寄存器"),
           ("max_threads_per_sm", "每 SM 至多 {} 个线程"), ("max_threads_per_block", "每块至多 {} 个线程"))


def _resources_text(res) -> str:
    """The on-chip resources a profile declares (the tile ledgers read them), in one cell; unknown keys as they are."""
    known = {k for k, _ in _RES_ZH}
    parts = [text.format(f"{res[k]:g}") for k, text in _RES_ZH if k in res]
    parts += [f"{k} {v:g}" for k, v in res.items() if k not in known]
    return "，".join(parts)


def machines_sources() -> str:
    """Markdown table: for each machine profile what it describes, its source and its conditions,
    quoted from the profile (written in English there)."""
    from ledger.machines import machines

    def cell(x: str) -> str:
        return str(x).replace("|", "\\|")

    lines = ["| 机器 | 项目 | 原文 |", "|---|---|---|"]
    for name, m in machines().items():
        rows = [("说明", m.description), ("出处", m.source)]
        rows += [("条件" if i == 0 else "", c) for i, c in enumerate(_clauses(m.conditions))]
        lines += [f"| {f'**{name}**' if i == 0 else ''} | {what} | {cell(text)} |" for i, (what, text) in enumerate(rows)]
    return "\n".join(lines)


def _clauses(text: str) -> list[str]:
    """``text`` split at the semicolons outside parentheses (one condition a row), stripped."""
    out, depth, cur = [], 0, ""
    for ch in str(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return [c for c in out if c]
