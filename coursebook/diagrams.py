"""Diagrams of the book: maps of a training step and of an inference request, the software
stack, the decision flow, the design method's five steps, RoPE's channel pairs and a two-stage
row reduction.  Each function returns a :class:`matplotlib.figure.Figure`; the boxes that carry
numbers read them from :mod:`ledger`."""
from __future__ import annotations

from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["training_step_map", "inference_request_map", "stack_diagram", "decision_flow", "design_flow",
           "rope_pairing", "reduction_two_stage"]

_NETWORK = _C["accent"]


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
    fig = figure(9.6, 4.6)
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
    fig = figure(9.6, 4.6)
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

    fig = figure(8.4, 4.8)
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
    fig = figure(9.6, 3.6)
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

    fig = figure(9.6, 3.4)
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


def rope_pairing(rope_dim: int = 8):
    """Which channels form a pair: NeoX half-split against interleaved."""
    fig = figure(8.2, 3.0)
    half = rope_dim // 2
    for row, (title, pairs) in enumerate((
        ("NeoX / half-split：p 与 p+R/2 成对", [(p, p + half) for p in range(half)]),
        ("interleaved（RoFormer / GPT-J）：2p 与 2p+1 成对", [(2 * p, 2 * p + 1) for p in range(half)]),
    )):
        ax = fig.add_subplot(1, 2, row + 1)
        ax.set_axis_off()
        ax.set_xlim(-0.6, rope_dim - 0.4)
        ax.set_ylim(-1.8, 1.2)
        colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
        owner = {}
        for k, (a, b) in enumerate(pairs):
            owner[a] = owner[b] = k
        for j in range(rope_dim):
            c = colors[owner[j] % len(colors)]
            ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
                (j - 0.42, 0), 0.84, 0.84, facecolor=c, alpha=0.25, edgecolor=c, lw=1.4))
            ax.text(j, 0.42, str(j), ha="center", va="center", fontsize=10)
        for k, (a, b) in enumerate(pairs):
            c = colors[k % len(colors)]
            depth = -0.25 - 0.28 * (k % half if row == 0 else 0)
            ax.plot([a, a, b, b], [0, depth, depth, 0], color=c, lw=1.4)
        ax.set_title(title, fontsize=9.5)
    fig.tight_layout()
    return fig


def reduction_two_stage(threads: int = 256, per_thread: int = 16):
    """A row reduction: each thread sums its own elements, then tl::AllReduce combines threads."""
    from matplotlib.patches import FancyBboxPatch

    fig = figure(8.2, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)

    def box(x, y, w, h, text, color):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", facecolor="white",
                                    edgecolor=color, lw=1.5))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)

    warps = threads // 32
    box(0.2, 2.9, 9.6, 0.9, f"一行数据分在 {threads} 个线程的寄存器里（fragment），每个线程 {per_thread} 个 fp32", _C["memory"])
    box(0.2, 1.65, 4.5, 0.95, f"第一段：线程内归约\n展开的 for (rv < {per_thread}) 循环，无同步", _C["calibrated"])
    box(5.3, 1.65, 4.5, 0.95, "第二段：tl::AllReduce\nwarp 内 shuffle 交换", _C["compute"])
    box(5.3, 0.25, 4.5, 1.05, f"跨 {warps} 个 warp：共享内存 workspace\n+ 同步（线程数 > 32 时才需要）", _C["accent"])
    box(0.2, 0.25, 4.5, 1.05, "结果：每行一个标量\n（例如 rsqrt(sum/N + eps)）", "#444444")
    for (x0, y0, x1, y1) in ((2.45, 2.9, 2.45, 2.6), (4.7, 2.12, 5.3, 2.12), (7.55, 1.65, 7.55, 1.3),
                             (5.3, 0.78, 4.7, 0.78)):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="-|>", color="#555555", lw=1.4))
    ax.set_title("归约分两段：先线程内，再跨线程", fontsize=11)
    return fig
