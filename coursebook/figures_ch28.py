"""Figures and measured values of chapter 28 (性能模型与算子设计方法论), drawn at build time.

Every figure function returns a :class:`matplotlib.figure.Figure` created without pyplot
(a notebook cell shows it once when it is the cell's value).  Numbers come from
:mod:`ledger` or from the recorded Nsight Compute summary of the design case
(``measure/results/ncu/ncu_case.json``); nothing is typed here.

Figures: :func:`design_flow`, :func:`roofline_three_roofs`, :func:`case_traffic`.
Values: :func:`ncu_values` (texts the page glues as ``ch28.ncu.*``), :func:`misreading_rows`
(the M1-M8 table), :func:`erratum_rows`, :func:`glued_keys`.
"""
from __future__ import annotations

import re
from pathlib import Path

from coursebook import style

__all__ = ["design_flow", "roofline_three_roofs", "case_traffic", "ncu_values", "misreading_rows",
           "erratum_rows", "glued_keys", "NO_RESULT", "ROOFS"]

NO_RESULT = "尚无记录结果 / no recorded result yet"
ROOFS = ("tensor_core.fp8", "tensor_core.fp16", "cuda_core.fp32")
_C = style.COLORS
_ROOF_COLORS = {"tensor_core.fp8": _C["accent"], "tensor_core.fp16": _C["compute"], "cuda_core.fp32": _C["eager"]}
_ROOF_NAMES = {"tensor_core.fp8": "张量核 fp8", "tensor_core.fp16": "张量核 fp16", "cuda_core.fp32": "CUDA core fp32"}


def _figure(w: float = 7.2, h: float = 4.2):
    style.apply()
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")
    except Exception:  # outside IPython
        pass
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h))


# ------------------------------------------------------------------ the five steps
_STEPS = (
    ("① 记账", ["(flops, bytes)", "每个输入读一次", "每个输出写一次"]),
    ("② 定界", ["声明 roof", "算术强度 vs 平衡点", "时间下界"]),
    ("③ tile 约束", ["C1 片上容量  C2 寄存器", "C3 指令形状  C4 并行度", "先 M/N 后 block_K"]),
    ("④ 融合 / 拆分", ["省多少字节", "片上放得下吗", "网格够大吗  新增工作"]),
    ("⑤ 实测与回看", ["ncu 字节与时间", "和账本对账", "偏差落在哪一步"]),
)


def design_flow():
    """Five boxes left to right, with the look-back arrow from step 5."""
    from matplotlib.patches import FancyBboxPatch

    fig = _figure(9.6, 3.4)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.4)
    ax.axis("off")
    w, h, gap, y = 1.72, 1.55, 0.27, 1.05
    colors = [_C["memory"], _C["compute"], _C["calibrated"], _C["eager"], _C["accent"]]
    for i, ((title, lines), col) in enumerate(zip(_STEPS, colors)):
        x = 0.15 + i * (w + gap)
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.06",
                                    linewidth=1.6, edgecolor=col, facecolor="white"))
        ax.text(x + w / 2, y + h - 0.14, title, ha="center", va="top", fontsize=11.5, color=col)
        for j, line in enumerate(lines):
            ax.text(x + w / 2, y + h - 0.55 - j * 0.3, line, ha="center", va="top", fontsize=8.6)
        if i < len(_STEPS) - 1:
            ax.annotate("", xy=(x + w + gap - 0.02, y + h / 2), xytext=(x + w + 0.02, y + h / 2),
                        arrowprops=dict(arrowstyle="-|>", color="#555555", lw=1.5))
    x_last = 0.15 + 4 * (w + gap) + w / 2
    ax.annotate("", xy=(0.15 + w / 2, y - 0.04), xytext=(x_last, y - 0.04),
                arrowprops=dict(arrowstyle="-|>", color=_C["accent"], lw=1.4, connectionstyle="arc3,rad=-0.12"))
    ax.text(5.0, 0.22, "实测与账本不符：回到偏差所在的那一步，而不是去调参", ha="center", fontsize=9.5, color=_C["accent"])
    ax.text(5.0, 3.15, "代码只在第 ③、④ 步之后出现；每一步都有可以检验的判据", ha="center", fontsize=10)
    return fig


# ------------------------------------------------------------------ roofline
def roofline_three_roofs(machine: str = "h200-calibrated"):
    """Three compute roofs over one HBM roof; the case operator (both FLOP readings and its
    two-kernel split) and a 128^3 fp16 GEMM, whose verdict flips with the roof."""
    import math

    from ledger import case_study as cs
    from ledger import misreadings as mr
    from ledger.machines import get_machine
    from ledger.ops import gemm

    m = get_machine(machine)
    bw = m.bandwidth
    fig = _figure(7.6, 4.6)
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
    ax.set_title(f"{m.name}：一条带宽线（{bw / 1e9:.0f} GB/s），三块天花板")
    ax.legend(fontsize=7.6, loc="upper left")
    assert math.isfinite(ai_g)
    return fig


# ------------------------------------------------------------------ design case
def recorded_ncu(path=None) -> dict | None:
    """The committed Nsight Compute summary (``measure/results/ncu/ncu_case.json``), or None."""
    import json

    from measure.ncu.case import RESULTS

    p = Path(path) if path else Path(RESULTS) / "ncu_case.json"
    return json.loads(p.read_text()) if p.exists() else None


def recorded_benches(device: str = "nvidia-h200") -> dict:
    """Harness timings of the designs from the recorded results: {design: record}."""
    from kernels.case_study import DESIGNS, TOKENS
    from measure.results import load_results, records

    try:
        res = load_results(device)
    except FileNotFoundError:
        return {}
    out = {}
    for r in records(res, "bench"):
        if r.get("suite") == "case_study" and r.get("design") in DESIGNS and r.get("name", "").endswith(f"T={TOKENS}"):
            out[r["design"]] = r
    return out


def design_rows(ncu: dict | None = None, benches: dict | None = None) -> list[dict]:
    """One row per design: ledger budget next to what was measured (None where not measured)."""
    from kernels.case_study import DESIGNS
    from ledger import case_study as lc
    from measure.suites.case_study import ledger_design

    ncu = recorded_ncu() if ncu is None else ncu
    benches = recorded_benches() if benches is None else benches
    rows = []
    for d in DESIGNS:
        led = ledger_design(d)
        m = (ncu or {}).get("designs", {}).get(d, {})
        b = benches.get(d, {})
        rows.append({
            "design": d, "rows_per_block": led.rows_per_block, "grid": led.grid, "waves": led.waves,
            "ledger_mb": led.total_bytes / 1e6, "ledger_floor_us": lc.sol_seconds(led.total_bytes) * 1e6,
            "dram_mb": m.get("dram_mb"), "l2_mb": m.get("l2_mb"),
            "measured_over_ledger": m.get("measured_over_ledger"),
            "ncu_us": m.get("time_us"), "harness_us": None if not b.get("ms") else b["ms"] * 1e3,
        })
    return rows


def _ncu():
    return recorded_ncu()


def case_traffic(ncu: dict | None = None):
    """Left: ledger bytes of designs A/B/C (payload + lookup) against the measured DRAM and
    L2 bytes.  Right: ledger floor against the measured time.  Without a recorded
    Nsight Compute file only the ledger bars are drawn and the title says so."""
    from ledger import case_study as cs

    ncu = _ncu() if ncu is None else ncu
    ds = cs.book_designs()
    names = list(ds)
    fig = _figure(9.2, 4.0)
    ax, bx = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    xs = range(len(names))
    pay = [ds[k].payload_bytes / 1e6 for k in names]
    look = [ds[k].lookup_bytes / 1e6 for k in names]
    ax.bar([x - 0.2 for x in xs], pay, 0.38, color=_C["memory"], label="账本：payload")
    ax.bar([x - 0.2 for x in xs], look, 0.38, bottom=pay, color=_C["eager"], label="账本：查表")
    ax.axhline(cs.ideal_bytes() / 1e6, color="#333333", ls="--", lw=1, label="理想字节")
    floors = [ds[k].floor_seconds() * 1e6 for k in names]
    bx.bar([x - 0.2 for x in xs], floors, 0.38, color=_C["datasheet"], label="账本下界")
    if ncu:
        d = ncu["designs"]
        ax.bar([x + 0.2 for x in xs], [d[k]["dram_mb"] for k in names], 0.38, color=_C["calibrated"], label="实测 DRAM（ncu）")
        ax.plot([x + 0.2 for x in xs], [d[k]["l2_mb"] for k in names], "k^", ms=7, label="实测 L2 字节（ncu）")
        bx.bar([x + 0.2 for x in xs], [d[k]["time_us"] for k in names], 0.38, color=_C["compute"], label="实测时间（ncu）")
        p = ncu.get("provenance", {})
        fig.suptitle(f"记录于 {p.get('device', '?')}，{str(p.get('date', '?'))[:10]}，冷 L2 单次发射", fontsize=10)
    else:
        fig.suptitle(NO_RESULT, fontsize=10)
    for a in (ax, bx):
        a.set_xticks(list(xs))
        a.set_xticklabels([f"设计 {k}\n{ds[k].rows_per_block} 行/block" for k in names])
        a.legend(fontsize=8)
    ax.set_ylabel("MB")
    ax.set_title("搬运字节：账本与实测")
    bx.set_ylabel("µs")
    bx.set_title("时间：账本下界与实测")
    return fig


def _ideal_read_bytes() -> float:
    """What the case must read at least: the bf16 input once and the lookup data once."""
    from ledger import case_study as cs
    from ledger.cost import dtype_bytes

    return cs.CASE.elements * dtype_bytes(cs.CASE.in_dtype) + cs.lookup_bytes()


NCU_KEYS = ("device", "date", "version", "ideal_mb", "a.dram_mb", "a.read_mb", "a.l2_mb", "a.l2_hit_pct",
            "a.over_ideal", "a.over_ledger", "a.ledger_mb", "a.time_us", "a.gbps", "a.warps_pct", "c.dram_mb",
            "c.time_us", "c.gbps", "b.time_us", "time_a_over_c", "dram_a_over_c", "ledger_a_over_c", "cal.read_mb",
            "cal.write_mb", "cal.expected_mb", "cal.write_pct", "cal.gbps", "a.ns_per_block", "c.warps_pct",
            "c.read_mb", "ideal_read_mb", "harness_a_over_c")


def ncu_values(ncu: dict | None = None) -> dict[str, str]:
    """Printed texts of the recorded Nsight Compute summary, keyed ``ch28.ncu.*``.

    Without a recorded file every key reads "—" (the page's measured cell says why)."""
    ncu = _ncu() if ncu is None else ncu
    if not ncu:
        return {f"ch28.ncu.{k}": "—" for k in NCU_KEYS}
    d, cal, p = ncu["designs"], ncu["calibration"], ncu.get("provenance", {})
    a, b, c = d["A"], d["B"], d["C"]
    benches = recorded_benches()
    out = {
        "ch28.ncu.device": str(p.get("device", "?")),
        "ch28.ncu.date": str(p.get("date", "?"))[:10],
        "ch28.ncu.version": str(p.get("ncu_version", "ncu")).split(" (")[0],
        "ch28.ncu.ideal_mb": f"{ncu['ideal_mb']:.1f}",
        "ch28.ncu.a.dram_mb": f"{a['dram_mb']:.1f}",
        "ch28.ncu.a.read_mb": f"{a['dram_read_mb']:.1f}",
        "ch28.ncu.a.l2_mb": f"{a['l2_mb']:.1f}",
        "ch28.ncu.a.l2_hit_pct": f"{a['l2_hit_pct']:.0f}",
        "ch28.ncu.a.over_ideal": f"{a['measured_over_ideal']:.2f}",
        "ch28.ncu.a.over_ledger": f"{a['measured_over_ledger']:.2f}",
        "ch28.ncu.a.ledger_mb": f"{a['ledger_mb']:.0f}",
        "ch28.ncu.a.time_us": f"{a['time_us']:.1f}",
        "ch28.ncu.a.gbps": f"{a['dram_gbps']:.0f}",
        "ch28.ncu.a.warps_pct": f"{a['warps_active_pct']:.0f}",
        "ch28.ncu.c.dram_mb": f"{c['dram_mb']:.1f}",
        "ch28.ncu.c.time_us": f"{c['time_us']:.1f}",
        "ch28.ncu.c.gbps": f"{c['dram_gbps']:.0f}",
        "ch28.ncu.b.time_us": f"{b['time_us']:.1f}",
        "ch28.ncu.time_a_over_c": f"{ncu['time_ratio_A_over_C']:.2f}",
        "ch28.ncu.dram_a_over_c": f"{ncu['dram_ratio_A_over_C']:.2f}",
        "ch28.ncu.ledger_a_over_c": f"{ncu['ledger_ratio_A_over_C']:.2f}",
        "ch28.ncu.cal.read_mb": f"{cal['dram_read_mb']:.1f}",
        "ch28.ncu.cal.write_mb": f"{cal['dram_write_mb']:.1f}",
        "ch28.ncu.cal.expected_mb": f"{cal['expected_mb_each_way']:.1f}",
        "ch28.ncu.cal.write_pct": f"{100 * cal['dram_write_mb'] / cal['expected_mb_each_way']:.0f}",
        "ch28.ncu.cal.gbps": f"{cal['dram_gbps']:.0f}",
        "ch28.ncu.a.ns_per_block": f"{1e3 * a['time_us'] / int(str(a['grid']).strip('()').split(',')[0]):.2f}",
        "ch28.ncu.a.warps_pct": f"{a['warps_active_pct']:.0f}",
        "ch28.ncu.c.warps_pct": f"{c['warps_active_pct']:.0f}",
        "ch28.ncu.c.read_mb": f"{c['dram_read_mb']:.1f}",
        "ch28.ncu.ideal_read_mb": f"{_ideal_read_bytes() / 1e6:.1f}",
    }
    if "A" in benches and "C" in benches:
        out["ch28.ncu.harness_a_over_c"] = f"{benches['A']['ms'] / benches['C']['ms']:.1f}"
    out.setdefault("ch28.ncu.harness_a_over_c", "—")
    return out


# ------------------------------------------------------------------ tables
def misreading_rows() -> list[dict]:
    """M1-M8, each with its two readings and the factor between them (all from the registry)."""
    from ledger.figures import collect

    f = {k: v.text for k, v in collect().items() if k.startswith("ch28.")}
    return [
        {"m": "M1", "what": "把规格峰值当成能达到的峰值", "wrong": f"{f['ch28.m1.datasheet_tflops']} TFLOP/s",
         "right": f"{f['ch28.m1.calibrated_tflops']} TFLOP/s", "gap": f"{f['ch28.m1.factor']}×"},
        {"m": "M2", "what": "用张量核的 roof 给逐元素算子定价", "wrong": f"平衡点 {f['ch28.m2.tensor_balance']}",
         "right": f"平衡点 {f['ch28.m2.cuda_balance']}", "gap": f"{f['ch28.m2.ratio']}×"},
        {"m": "M3", "what": "按输入 dtype 声明 roof", "wrong": f"fp8 平衡点 {f['ch28.m3.tensor_core_fp8']}",
         "right": f"fp16 {f['ch28.m3.tensor_core_fp16']} / fp32 {f['ch28.m3.cuda_core_fp32']}", "gap": "三块天花板"},
        {"m": "M4", "what": "拿拆分版的 AI 评判融合版", "wrong": f"{f['ch28.m4.split_mb']} MB，AI {f['ch28.m4.split_ai']}",
         "right": f"{f['ch28.m4.fused_mb']} MB，AI {f['ch28.m4.fused_ai']}", "gap": f"{f['ch28.m4.ratio']}×"},
        {"m": "M5", "what": "超越函数按 1 FLOP 计成本", "wrong": f"{f['ch28.m5.softmax_flat_kcycles']} k cycle",
         "right": f"{f['ch28.m5.softmax_weighted_kcycles']} k cycle", "gap": f"{f['ch28.m5.softmax_ratio']}×"},
        {"m": "M6", "what": "只数 payload，不数查表", "wrong": f"查表 {f['ch28.m6.ideal_lookup_mb']} MB（{f['ch28.m6.ideal_share_pct']}%）",
         "right": f"设计 A 查表 {f['ch28.m6.a_lookup_mb']} MB（{f['ch28.m6.a_share_pct']}%）", "gap": "被反复读"},
        {"m": "M7", "what": "在延迟主导的尺度上读效率", "wrong": f"decode 下界 {f['ch28.m7.decode_sol_ns']} ns",
         "right": f"prefill 下界 {f['ch28.m7.prefill_sol_us']} µs", "gap": "模型失去抓手"},
        {"m": "M8", "what": "把超过 100% 的效率当成好 kernel", "wrong": f"漏掉 scale {f['ch28.m8.scale_mb']} MB",
         "right": f"＞{f['ch28.m8.anomaly_pct']}% 即公式错误", "gap": f"{f['ch28.m8.scale_share_pct']}%"},
    ]


def erratum_rows() -> list[dict]:
    """Every ``ch28.erratum.*`` figure: the ledger's value and the recorded reason."""
    from ledger.figures import collect

    out = []
    for k, v in collect().items():
        if not k.startswith("ch28.erratum."):
            continue
        why = v.conditions.split(" (the installed carver")[0]  # carver rows: keep "draft printed N; ours M"
        out.append({"key": k, "ours": f"{v.text} {v.unit}".strip(), "why": why})
    return out


_GLUE = re.compile(r"\{glue:text\}`([^`]+)`")


def glued_keys(page: str = "ch_perf_model.md") -> list[str]:
    """Registry keys the page glues, in order of first appearance (for the numbers table)."""
    from ledger.figures import collect

    reg = collect()
    text = (Path(__file__).resolve().parents[1] / "book" / page).read_text(encoding="utf-8")
    seen: list[str] = []
    for k in _GLUE.findall(text):
        if k in reg and k not in seen:
            seen.append(k)
    return seen
