"""Figures and tables of chapter 02 (从 PyTorch 到 kernel), drawn at build time.

Every function returns a :class:`matplotlib.figure.Figure` (created without pyplot, so a
notebook cell shows it exactly once when it is the cell's value) or, for the measured
results, a Markdown string.  All numbers come from :mod:`ledger` or from the recorded
GPU results of :mod:`measure.runner`; nothing is typed here.

Figures: :func:`training_step_map`, :func:`inference_request_map`,
:func:`stack_diagram`, :func:`roofline_h200`, :func:`step_budget_bars`,
:func:`step_share_sweep`, :func:`fusion_ledger_bars`, :func:`decision_flow`.
Tables: :func:`measured_table`, :func:`kernel_names_table`; :func:`glued_keys` lists the
figure keys a page glues (for the page's "where each number comes from" table).
"""
from __future__ import annotations

from typing import Iterable

from coursebook import style

__all__ = [
    "training_step_map",
    "inference_request_map",
    "stack_diagram",
    "roofline_h200",
    "step_budget_bars",
    "step_share_sweep",
    "fusion_ledger_bars",
    "decision_flow",
    "measured_table",
    "kernel_names_table",
    "glued_keys",
    "NO_RESULT",
]

#: What a measured cell shows when no GPU results are recorded yet.
NO_RESULT = "尚无记录结果 / no recorded result yet"

_C = style.COLORS
_NETWORK = _C["accent"]


def _show_in_notebooks() -> None:
    """Let IPython render a bare Figure (no pyplot) as PNG when a cell returns one."""
    try:
        from IPython import get_ipython

        if get_ipython() is None:
            return
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except Exception:  # outside IPython, or an IPython without matplotlib_inline
        pass


def _figure(w: float = 7.2, h: float = 4.2):
    style.apply()
    _show_in_notebooks()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h))
    return fig


# ------------------------------------------------------------------ diagrams
def _box(ax, x, y, w, h, title, lines=(), color="#444444", fill=None, fontsize=9.5):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.03",
                                linewidth=1.6, edgecolor=color, facecolor=fill or "white"))
    ax.text(x + w / 2, y + h - 0.05, title, ha="center", va="top", fontsize=fontsize + 1.5,
            color=color)
    for i, line in enumerate(lines):
        ax.text(x + w / 2, y + h - 0.2 - i * 0.105, line, ha="center", va="top", fontsize=fontsize)


def _arrow(ax, x0, y0, x1, y1, color="#555555", text=None, rad=0.0):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=1.5,
                                connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.04, text, ha="center", va="bottom", fontsize=8.5,
                color=color)


def _blank_axes(fig, xlim=(0, 1), ylim=(0, 1)):
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    return ax


def _bound_color(bound: str) -> str:
    return _C["compute"] if bound == "compute-bound" else _C["memory"]


def training_step_map():
    """Operator map of one training step: four stages, their operators and their bound."""
    from ledger.step_budget import step_budget

    b = step_budget()
    fig = _figure(9.6, 4.6)
    ax = _blank_axes(fig, (0, 4.2), (0, 1.15))
    stages = [
        ("forward", "前向", ["RMSNorm / LayerNorm", "QKV / O 投影 (GEMM)", "attention: QK^T→softmax→PV",
                             "RoPE、残差加、mask", "MLP: gate / up / down", "SiLU、lm_head、loss"],
         _C["compute"], "受算力限制"),
        ("backward", "反向", ["dX = dY·W^T (2MNK)", "dW = X^T·dY (2MNK)", "= 2 × 前向 GEMM",
                              "attention 反向", "(重算或保存 softmax)", "norm / 激活的反向"],
         _C["compute"], "受算力限制"),
        ("optimizer", "优化器", ["AdamW：逐元素", "读 grad、θ、m、v", "写回 θ、m、v",
                                 "bf16 梯度 + fp32 状态", "每参数十几 FLOP", ""],
         _C["memory"], "受显存带宽限制"),
        ("comm", "通信", ["ring all-reduce", "搬 2(N−1)/N 倍梯度", "0 FLOP", "", "", ""],
         _NETWORK, "受互连带宽限制"),
    ]
    for i, (key, title, ops, color, verdict) in enumerate(stages):
        x = 0.08 + i * 1.04
        _box(ax, x, 0.2, 0.9, 0.88, title, [o for o in ops if o], color=color)
        share = 100 * b.stage(key).share
        ax.text(x + 0.45, 0.13, f"{verdict}", ha="center", fontsize=9.5, color=color)
        ax.text(x + 0.45, 0.04, f"下界时间占比 {share:.1f}%", ha="center", fontsize=9, color="#333333")
        if i < 3:
            _arrow(ax, x + 0.9, 0.64, x + 1.04, 0.64)
    return fig


def inference_request_map():
    """Operator map of one inference request: prefill once, then the decode loop over the KV cache."""
    from ledger.step_budget import step_budget

    b = step_budget()
    pre, dec = b.stage("prefill").cost, b.stage("decode").cost
    fig = _figure(9.6, 4.6)
    ax = _blank_axes(fig, (0, 4.2), (0, 1.3))
    _box(ax, 0.05, 0.22, 1.5, 0.86, "prefill（整段 prompt，一次）",
         ["embedding", "每层：norm → QKV GEMM → attention", "→ O GEMM → MLP（3 个 GEMM）",
          "写入每层的 K、V", "最后位置：norm → lm_head", "→ 采样第一个 token"], color=_C["compute"])
    ax.text(0.8, 0.13, f"{pre.flops / 1e12:.1f} TFLOP / {pre.bytes / 1e9:.1f} GB：受算力限制",
            ha="center", fontsize=9, color=_C["compute"])
    _box(ax, 1.75, 0.42, 0.7, 0.5, "KV cache", ["每层的 K、V", "随 token 增长"], color="#555555",
         fill="#f3f3f3")
    _box(ax, 2.65, 0.22, 1.5, 0.86, "decode（每个 token 一轮）",
         ["输入：上一个 token", "每层：GEMV（读全部权重）", "attention：1 个 query",
          "× 整段 KV cache", "lm_head → 采样", "直到结束符"], color=_C["memory"])
    ax.text(3.4, 0.13, f"每 token {dec.flops / 1e9:.1f} GFLOP / {dec.bytes / 1e9:.1f} GB：受带宽限制",
            ha="center", fontsize=9, color=_C["memory"])
    _arrow(ax, 1.55, 0.67, 1.75, 0.67, text="写")
    _arrow(ax, 2.45, 0.67, 2.65, 0.67, text="读")
    _arrow(ax, 4.08, 1.08, 2.75, 1.08, color=_C["memory"], rad=0.35)
    ax.text(3.42, 1.2, "循环：新 token 回到下一轮", ha="center", fontsize=8.5, color=_C["memory"])
    return fig


def stack_diagram():
    """The layers from an nn.Module to the hardware, with TileLang's place marked."""
    from matplotlib.patches import FancyBboxPatch

    fig = _figure(8.4, 4.8)
    ax = _blank_axes(fig, (0, 1), (0, 1))
    layers = [
        ("你的模型：nn.Module / Python", "y = model(x); loss.backward(); opt.step()", False),
        ("算子图：ATen 算子", "eager 逐个执行；torch.compile 由 TorchDynamo 捕获，AOTAutograd 连同反向", False),
        ("把图切成 kernel，并实现每个 kernel", "TorchInductor（生成 Triton）、cuBLAS / cuDNN、CANN 算子库……", False),
        ("单个算子内部：tile、存储层级、流水", "TileLang：tilelang.jit / tilelang.compile → JITKernel", True),
        ("目标代码与硬件", "CUDA C / PTX / SASS → GPU；Ascend C → NPU", False),
    ]
    h, gap = 0.15, 0.045
    for i, (title, sub, mine) in enumerate(layers):
        y = 1 - (i + 1) * h - i * gap - 0.01
        color = _C["compute"] if mine else "#444444"
        ax.add_patch(FancyBboxPatch((0.05, y), 0.86, h, boxstyle="round,pad=0.005,rounding_size=0.02",
                                    linewidth=1.6, edgecolor=color,
                                    facecolor="#fdecec" if mine else "white"))
        ax.text(0.48, y + h * 0.68, title, ha="center", va="center", fontsize=11, color=color)
        ax.text(0.48, y + h * 0.28, sub, ha="center", va="center", fontsize=9, color="#333333")
        if i < len(layers) - 1:
            _arrow(ax, 0.48, y, 0.48, y - gap)
        if mine:
            ax.text(0.95, y + h / 2, "本书", ha="center", va="center", fontsize=10, color=color)
    return fig


def decision_flow():
    """Measure -> count -> try torch.compile and libraries -> write, accepted by roofline utilisation."""
    fig = _figure(9.6, 3.6)
    ax = _blank_axes(fig, (0, 5.0), (0, 1.0))
    steps = [
        ("① 测量", ["profiler 找出", "最耗时的算子"]),
        ("② 算账", ["flops、bytes", "下界与判断"]),
        ("③ 先试现成的", ["torch.compile", "厂商库融合算子"]),
        ("④ 仍要写？", ["四条判据：", "融合缺失 / 库里没有", "精度与布局 / 跨算子流水"]),
        ("⑤ 写并验收", ["roofline 利用率", "相对库的效率"]),
    ]
    for i, (title, lines) in enumerate(steps):
        x = 0.06 + i * 1.0
        color = _C["compute"] if i == 4 else "#444444"
        _box(ax, x, 0.3, 0.84, 0.6, title, lines, color=color, fontsize=8.8)
        if i < len(steps) - 1:
            _arrow(ax, x + 0.84, 0.6, x + 1.0, 0.6)
    ax.text(2.5, 0.12, "③ 已经够快就停下；⑤ 离下界还远就回到 ② 找原因（\"正确但慢\"的风险）",
            ha="center", fontsize=9, color="#333333")
    return fig


# ------------------------------------------------------------------ roofline
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


def roofline_h200():
    """H200 roofline: calibrated and datasheet ceilings, the chapter's operators placed on it."""
    import numpy as np

    from ledger.cost import judge
    from ledger.machines import get_machine
    from ledger.ops import op_table

    cal, spec = get_machine("h200-calibrated"), get_machine("h200-spec")
    fig = _figure(8.4, 5.2)
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
        "LayerNorm 三趟": ((8, -13), "left"), "attention decode": ((-8, 6), "right"),
        "LayerNorm 融合": ((8, -13), "left"), "attention prefill（分数落显存）": ((8, -13), "left"),
        "GEMM 4096³": ((4, -16), "right"), "attention prefill（flash 风格）": ((0, 9), "center"),
    }
    for c in op_table():
        if c.flops == 0:
            continue
        v = judge(c, cal)
        y = min(cal.peak_flops, v.intensity * cal.bandwidth) / 1e12
        name = _short_name(c.name)
        ax.scatter([v.intensity], [y], s=36, color=_bound_color(v.bound), zorder=5, edgecolor="white")
        ai_txt = f"{v.intensity:.0f}" if v.intensity >= 100 else f"{v.intensity:.3g}"
        (dx, dy), ha = place.get(name, ((8, -13), "left"))
        ax.annotate(f"{name}（{ai_txt}）", (v.intensity, y), textcoords="offset points",
                    xytext=(dx, dy), fontsize=8, ha=ha)
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


# ------------------------------------------------------------------ budgets
_STAGE_ZH = {"forward": "前向", "backward": "反向", "optimizer": "优化器", "comm": "通信",
             "prefill": "prefill（整段 prompt）", "decode": "decode（每个 token）"}


def step_budget_bars():
    """Training-step and inference budgets: compute time vs memory time of every stage."""
    import numpy as np

    from ledger.step_budget import step_budget

    b = step_budget()
    m = b.machine
    fig = _figure(9.6, 4.2)
    axes = [fig.add_subplot(1, 2, i + 1) for i in range(2)]
    for ax, stages, title in ((axes[0], b.train, "训练一步（8 卡数据并行，每卡）"),
                              (axes[1], b.infer, "一次推理请求")):
        names = [_STAGE_ZH[s.name] for s in stages]
        comp = [s.cost.compute_time(m) * 1e3 for s in stages]
        mem = [s.time * 1e3 if s.name == "comm" else s.cost.memory_time(m) * 1e3 for s in stages]
        y = np.arange(len(stages))
        ax.barh(y - 0.18, comp, height=0.34, color=_C["compute"], label="算力时间 flops/峰值")
        ax.barh(y + 0.18, mem, height=0.34, color=_C["memory"], label="访存时间 bytes/带宽")
        for i, s in enumerate(stages):
            txt = f"{s.time * 1e3:.3g} ms"
            if s.share:
                txt += f"（{100 * s.share:.1f}%）"
            ax.text(max(comp[i], mem[i]) * 1.15, i, txt, va="center", fontsize=8.5)
        ax.set_yticks(y)
        ax.set_yticklabels(names)
        ax.invert_yaxis()
        ax.set_xscale("log")
        lo = min(v for v in comp + mem if v > 0)
        ax.set_xlim(lo / 3, max(comp + mem) * 12)
        ax.set_xlabel("下界时间 (ms，对数)")
        ax.set_title(title, fontsize=10.5)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8.5)
    fig.suptitle(f"8B 级模型的两本账（{b.seq} token，{m.name}），较长的那根条决定下界", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def step_share_sweep(seq_lens: Iterable[int] | None = None):
    """Share of each stage of the training step against the sequence length (exercise E12)."""
    import numpy as np

    from ledger.step_budget import SWEEP_SEQ_LENS, seq_sweep

    lens = list(seq_lens) if seq_lens is not None else [2 ** k for k in range(8, 18)]
    sweep = seq_sweep(lens)
    names = ["forward", "backward", "optimizer", "comm"]
    colors = [_C["compute"], "#f19c99", _C["memory"], _NETWORK]
    data = np.array([[sweep[s][n] for s in lens] for n in names])
    fig = _figure(8.0, 4.4)
    ax = fig.add_subplot(1, 1, 1)
    ax.stackplot(lens, data, labels=[_STAGE_ZH[n] for n in names], colors=colors, alpha=0.85)
    for s in SWEEP_SEQ_LENS:
        if lens[0] <= s <= lens[-1]:
            ax.axvline(s, color="black", lw=0.7, ls=":")
            ax.text(s, 101, f"{s}", ha="center", va="bottom", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlim(lens[0], lens[-1])
    ax.set_ylim(0, 100)
    ax.set_xlabel("序列长度（token，对数）")
    ax.set_ylabel("占训练一步下界时间 (%)")
    ax.set_title("序列变短时，优化器与通信在一步里的份额迅速上升", pad=16)
    ax.legend(loc="center right", fontsize=8.5)
    fig.tight_layout()
    return fig


def fusion_ledger_bars():
    """Bytes before and after fusion for the chapter's three examples (log scale)."""
    import numpy as np

    from ledger import ops

    rows = [
        ("sin(cos(x))", ops.elementwise_chain(ops.N_ELEM, 2, fused=False),
         ops.elementwise_chain(ops.N_ELEM, 2, fused=True)),
        ("LayerNorm（三趟 → 一趟）", ops.layernorm(8192, 4096, passes=3), ops.layernorm(8192, 4096, passes=1)),
        ("attention prefill", ops.attention_prefill(), ops.attention_prefill(materialize_scores=False)),
    ]
    fig = _figure(8.0, 3.8)
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(rows))
    before = [r[1].bytes / 1e6 for r in rows]
    after = [r[2].bytes / 1e6 for r in rows]
    ax.barh(y - 0.18, before, height=0.34, color=_C["eager"], label="融合前（中间量往返显存）")
    ax.barh(y + 0.18, after, height=0.34, color=_C["fused"], label="融合后（只读输入、写输出）")
    for i, (b0, a0) in enumerate(zip(before, after)):
        ax.text(b0 * 1.1, i - 0.18, f"{b0:,.1f} MB", va="center", fontsize=8.5)
        ax.text(a0 * 1.1, i + 0.18, f"{a0:,.1f} MB（{b0 / a0:.1f}×）", va="center", fontsize=8.5)
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(min(after) / 2, max(before) * 8)
    ax.set_xlabel("最少访存字节 (MB，对数)")
    ax.set_title("融合账本：省下的是中间张量的一写一读")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ measured results
def _load(device: str = "nvidia-h200"):
    """The recorded results dict of ``device``, or None when there is none."""
    try:
        from measure.results import load_results
    except Exception:
        return None
    try:
        return load_results(device)
    except (FileNotFoundError, OSError, ValueError):
        return None


def _records(results: dict, prefix: str) -> list[dict]:
    out = []
    for sname, suite in (results.get("suites") or {}).items():
        for r in suite.get("records", []) if isinstance(suite, dict) else []:
            if str(r.get("name", "")).startswith(prefix):
                out.append({**r, "suite": sname})
    return out


def _provenance_line(results: dict, suite: str | None = None) -> str:
    """Device and versions of the results, and the date of the run that measured ``suite``."""
    p = results.get("provenance") or {}
    date = ((results.get("suites") or {}).get(suite) or {}).get("date") or p.get("date", "日期未知")
    versions = "，".join(f"{k} {p[k]}" for k in ("torch", "tilelang", "triton", "cuda", "driver") if p.get(k))
    return f"记录于 {p.get('device', '未知设备')}，{date}，{versions}"


def measured_table(prefix: str, device: str = "nvidia-h200") -> str:
    """Markdown: recorded time and bandwidth of every ``prefix.*`` variant, ledger floor beside it."""
    results = _load(device)
    recs = [r for r in _records(results, prefix + ".") if r.get("kind") == "bench"] if results else []
    if not recs:
        skips = [r for r in _records(results, prefix + ".") if r.get("kind") in ("skip", "error")] if results else []
        why = "" if not skips else "（记录里只有跳过或出错的条目：" + "；".join(
            f"{r['name']}: {r.get('reason') or r.get('error', '')}" for r in skips) + "）"
        return (f"**{NO_RESULT}**{why}\n\n这个单元在构建时读取 `measure/results/{device}.json`。"
                "课程维护者在 H200 上运行 `python -m measure.runner --suite pytorch` 之后，"
                "这里会出现实测时间、有效带宽与账本下界的对照；在此之前不显示任何数字。")
    lines = [
        f"*{_provenance_line(results, recs[0]['suite'])}*",
        "",
        "| 写法 | 账本字节 (MB) | 账本下界 (µs) | 实测 (µs) | 有效带宽 (GB/s) | 占拷贝带宽 | 下界 / 实测 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in recs:
        ms = r.get("ms")
        lb = r.get("lower_bound_ms")
        lb_b = r.get("ledger_bytes")
        util = f"{lb / ms:.0%}" if ms and lb else "—"
        lines.append(
            f"| {r.get('variant', r['name'])} | {lb_b / 1e6:.1f} | {lb * 1e3:.1f} | {ms * 1e3:.1f} | "
            f"{r.get('gbps', 0):.0f} | {r.get('frac_copy_bw', 0):.0%} | {util} |"
            if lb_b and lb and ms else f"| {r.get('variant', r['name'])} | — | — | "
            f"{(ms or 0) * 1e3:.1f} | — | — | — |")
    shape = recs[0].get("shape")
    bw = recs[0].get("copy_gbps")
    lines += ["", f"形状 {shape}，fp16；有效带宽一律按融合版本的最少字节计算；"
                  f"本次运行测得的设备拷贝带宽为 {bw:.0f} GB/s。账本下界用 H200 标定参数。"
              if bw else ""]
    return "\n".join(lines)


def kernel_names_table(device: str = "nvidia-h200", top: int = 12) -> str:
    """Markdown: kernel names and counts of one training step, eager vs torch.compile (recorded)."""
    results = _load(device)
    recs = [r for r in _records(results, "pytorch.inductor.kernels")] if results else []
    if not recs:
        return (f"**{NO_RESULT}**\n\n这个单元在构建时读取 `measure/results/{device}.json` 中 "
                "`pytorch.inductor.kernels` 这条记录：在 H200 上对一个小 MLP 块跑一次前向加反向，"
                "分别在 eager 与 `torch.compile`（`TORCHINDUCTOR_UNIQUE_KERNEL_NAMES=1`）下用 profiler "
                "数出每个 kernel 的名字和次数。在此之前不显示任何名字或数字。")
    r = recs[-1]
    eager = r.get("eager_kernels") or {}
    comp = r.get("compiled_kernels") or {}
    lines = [f"*{_provenance_line(results, r['suite'])}*", "", f"模型：{r.get('model', '')}", "",
             f"- eager：{sum(eager.values())} 次 kernel 发射，{len(eager)} 种 kernel；",
             f"- torch.compile：{sum(comp.values())} 次 kernel 发射，{len(comp)} 种 kernel。",
             "", "| torch.compile 下的 kernel（profiler 记录的名字） | 次数 |", "|---|---:|"]
    for name, n in sorted(comp.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
        short = name if len(name) <= 90 else name[:87] + "…"
        lines.append(f"| `{short}` | {n} |")
    gen = r.get("generated_kernels") or []
    if gen:
        lines += ["", "Inductor 生成代码里定义的 kernel：" + "、".join(f"`{g}`" for g in gen) + "。"]
    sc = r.get("sincos_kernels") or []
    if sc:
        lines += ["", "单独编译 `torch.sin(torch.cos(x))` 得到的 kernel：" + "、".join(f"`{g}`" for g in sc) + "。"]
    return "\n".join(lines)


# ------------------------------------------------------------------ the numbers table
def glued_keys(page: str = "ch_pytorch_to_kernel.md") -> list[str]:
    """Figure keys glued by ``{glue:text}`key``` in ``book/<page>``, in order of first use."""
    import re
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "book" / page
    keys = re.findall(r"\{glue:text\}`([^`]+)`", path.read_text(encoding="utf-8"))
    return list(dict.fromkeys(keys))
