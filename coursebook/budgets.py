"""Budgets from the ledger drawn as bars: the time budget of a training step and of an
inference request by stage, the share of each stage against the sequence length, and the bytes
fusion saves (chapter 1's operator chains, the elementwise chapter's five scenarios); and the
numbers of the elementwise chapter's exercises."""
from __future__ import annotations

import re as _re
from typing import Iterable

from ledger.machines import DEFAULT_MACHINE

from coursebook.style import COLORS as _C
from coursebook.style import figure, machine_words

_NETWORK = _C["accent"]

__all__ = ["step_budget_bars", "step_share_sweep", "op_fusion_bars", "scenario_fusion_bars",
           "fusion_exercise_values", "decision_words", "decisions_table", "QUESTION_ZH", "case_onchip_values"]


_STAGE_ZH = {"forward": "前向", "backward": "反向", "optimizer": "优化器", "comm": "通信",
             "prefill": "prefill（整段 prompt）", "decode": "decode（每个 token）"}


def step_budget_bars():
    """Training-step and inference budgets: compute time vs memory time of every stage."""
    import numpy as np

    from ledger.step_budget import step_budget

    b = step_budget()
    m = b.machine
    fig = figure(9.6, 4.2)
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
    fig.suptitle(f"8B 级模型的两本账（{b.seq} token，{machine_words(m.name)}），较长的那根条决定下界", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def step_share_sweep(seq_lens: Iterable[int] | None = None):
    """Share of each stage of the training step against the sequence length (exercise E12)."""
    import numpy as np

    from ledger.step_budget import SWEEP_SEQ_LENS, seq_sweep

    if seq_lens is None:  # powers of two over the span the exercise sweeps (E12), and no wider
        lo, hi = min(SWEEP_SEQ_LENS), max(SWEEP_SEQ_LENS)
        seq_lens = [2 ** k for k in range(lo.bit_length() - 1, hi.bit_length()) if lo <= 2 ** k <= hi]
    lens = list(seq_lens)
    sweep = seq_sweep(lens)
    names = ["forward", "backward", "optimizer", "comm"]
    colors = [_C["compute"], "#f19c99", _C["memory"], _NETWORK]
    data = np.array([[sweep[s][n] for s in lens] for n in names])
    fig = figure(8.0, 4.4)
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


def op_fusion_bars():
    """Bytes before and after fusion for the chapter's three examples (log scale)."""
    import numpy as np

    from ledger import ops

    rows = [
        ("sin(cos(x))", ops.elementwise_chain(ops.N_ELEM, 2, fused=False),
         ops.elementwise_chain(ops.N_ELEM, 2, fused=True)),
        ("LayerNorm（三趟 → 一趟）", ops.layernorm(8192, 4096, passes=3), ops.layernorm(8192, 4096, passes=1)),
        ("attention prefill", ops.attention_prefill(), ops.attention_prefill(materialize_scores=False)),
    ]
    fig = figure(8.0, 3.8)
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


_SCENARIO_LABEL = {
    "scale_add": "scale+add",
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "rope": "RoPE",
    "rmsnorm_rope_fp8": "RMSNorm+RoPE+FP8",
}


def scenario_fusion_bars():
    """Bytes of the op-by-op plan against the fused kernel, for the five scenarios."""
    import numpy as np

    from ledger.fusion import scenarios

    scs = scenarios()
    fig = figure(8.2, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(scs))
    before = [s.unfused.bytes / 1e6 for s in scs]
    after = [s.fused.bytes / 1e6 for s in scs]
    ax.barh(y - 0.19, before, height=0.36, color=_C["eager"], label="逐算子（每步一个 kernel）")
    ax.barh(y + 0.19, after, height=0.36, color=_C["fused"], label="融合成一个 kernel")
    for i, s in enumerate(scs):
        ax.text(before[i] * 1.03, i - 0.19, f"{before[i]:.2f} MB，{s.unfused.kernels} 个 kernel",
                va="center", fontsize=8.5)
        ax.text(after[i] * 1.03, i + 0.19, f"{after[i]:.2f} MB（{s.ratio:.2f}×）", va="center", fontsize=8.5)
    ax.set_yticks(y)
    ax.set_yticklabels([_SCENARIO_LABEL.get(s.key, s.key) for s in scs])
    ax.invert_yaxis()
    ax.set_xlim(0, max(before) * 1.45)
    ax.set_xlabel("最少访存字节（MB）")
    ax.set_title("五个场景的融合账本：去掉的是中间张量的往返")
    ax.legend(loc="lower right", fontsize=8.5)
    fig.tight_layout()
    return fig


def fusion_exercise_values() -> dict[str, str]:
    """Numbers of the exercises' answers, computed by the ledger: ``calc.elementwise.*``."""
    from ledger import fusion as F
    from ledger.machines import get_machine

    m = get_machine(DEFAULT_MACHINE)
    s16 = F.scale_add(dtype="fp16")
    rms = F.rmsnorm_cost(16384, 4096, "float16")
    rf_tok, rf_g = F.rmsnorm_rope_fp8(), F.rmsnorm_rope_fp8(group=128)
    rope_half = F.rope_cost(16384, 32, 128, rope_dim=64, dtype="float16")
    rope_full = F.rope_cost(16384, 32, 128, rope_dim=128, dtype="float16")
    q = F.fp8_quant_cost(16384, 4096, "bfloat16", group=128)
    x, r, h, y = (F.Tensor(k, (4096, 4096), "fp16") for k in ("x", "r", "h", "y"))
    w = F.Tensor("w", (4096,), "fp16")
    add_norm_split = F.Plan("op by op", (F.Step("h = x + r", (x, r), (h,), x.elements),
                                         F.Step("rmsnorm", (h, w), (y,), 4 * x.elements)))
    add_norm_fused = F.Plan("fused", (F.Step("fused", (x, r, w), (h, y), 5 * x.elements),))
    return {
        "calc.elementwise.e8.unfused_mb": f"{add_norm_split.bytes / 1e6:.2f}",
        "calc.elementwise.e8.fused_mb": f"{add_norm_fused.bytes / 1e6:.2f}",
        "calc.elementwise.e8.ratio": f"{add_norm_split.bytes / add_norm_fused.bytes:.2f}",
        "calc.elementwise.e1.fp16_unfused_mb": f"{s16.unfused.bytes / 1e6:.2f}",
        "calc.elementwise.e1.fp16_fused_mb": f"{s16.fused.bytes / 1e6:.2f}",
        "calc.elementwise.e1.fp16_ratio": f"{s16.ratio:.2f}",
        "calc.elementwise.e2.rms_mb": f"{rms.bytes / 1e6:.1f}",
        "calc.elementwise.e2.rms_us": f"{rms.lower_bound(m) * 1e6:.1f}",
        "calc.elementwise.e3.frag2_kib": f"{F.fragment_kib((2, 4096), 'fp32'):.0f}",
        "calc.elementwise.e3.regs_per_thread": f"{2 * 4096 // 256}",
        "calc.elementwise.e4.half_mb": f"{rope_half.bytes / 1e6:.1f}",
        "calc.elementwise.e4.full_mb": f"{rope_full.bytes / 1e6:.1f}",
        "calc.elementwise.e5.tok_ratio": f"{rf_tok.ratio:.3f}",
        "calc.elementwise.e5.group_ratio": f"{rf_g.ratio:.3f}",
        "calc.elementwise.e5.group_scale_mb": f"{(rf_g.fused.bytes - rf_tok.fused.bytes) / 1e6:.2f}",
        "calc.elementwise.e6.quant_mb": f"{q.bytes / 1e6:.1f}",
        "calc.elementwise.e6.quant_ai": f"{q.intensity:.3f}",
    }


# ------------------------------------------------------------------ fusion and split: the ledger's trade-offs in words

#: The options of :func:`ledger.decisions.decisions` in Chinese (``split-K=8`` and the like stay as they are).
_OPTION_ZH = {"two kernels": "两个 kernel", "fused": "融合成一个", "separate epilogue": "收尾单独一个 kernel",
              "fused epilogue": "收尾融进 GEMM", "one row per block": "整行一个 block",
              "split row (partial sums)": "按行切开（部分和）", "no split": "不切分",
              "one block per head": "每个 head 一个 block"}
#: The trade-offs' names: (pattern, Chinese template filled with the pattern's groups).
_DECISION_ZH = (
    (r"sin\(cos\(x\)\), (\d+)x(\d+) (\w+)", "sin(cos(x))，{0}×{1} {2}"),
    (r"QK-norm\+RoPE \| FP8 quant \(case\)", "案例算子：QK-norm + RoPE 与 FP8 量化"),
    (r"GEMM (\d+)\^3 \+ bias \+ GELU epilogue", "GEMM {0}³ 的 bias + GELU 收尾"),
    (r"LayerNorm (\d+)x(\d+): whole row on chip vs split-row", "LayerNorm {0}×{1}：整行上片还是按行切开"),
    (r"skinny GEMM (\d+)x(\d+)x(\d+), (split-K=\d+)", "细长 GEMM {0}×{1}×{2}，{3}"),
    (r"decode attention, sq=1, skv=(\d+)k, (split-KV=\d+)", "decode attention：1 个 query，KV 长 {0}k，{1}"),
)


def decision_words(name: str) -> str:
    """A trade-off's or an option's name from :mod:`ledger.decisions` in Chinese; a name it does not
    know raises ``KeyError`` (a new trade-off needs its words here, never its English on the page)."""
    if name in _OPTION_ZH:
        return _OPTION_ZH[name]
    if _re.fullmatch(r"split-(?:K|KV)=\d+", name):
        return name
    for pat, zh in _DECISION_ZH:
        m = _re.fullmatch(pat, name)
        if m:
            return zh.format(*m.groups())
    raise KeyError(f"no Chinese words for the trade-off or option {name!r}")


#: The four questions of :data:`ledger.decisions.QUESTIONS`, in the words the fusion section numbers them with.
QUESTION_ZH = {1: "省多少字节", 2: "片上放不放得下", 3: "网格填不填得满", 4: "多出了哪些活"}


def decisions_table() -> str:
    """Markdown: the ledger's trade-offs (:func:`ledger.decisions.decisions`) -- each option's bytes and
    grid, the question that decides it and the winner, in Chinese."""
    from ledger import decisions as ldec

    from coursebook.records import md_table

    rows = [{"name": decision_words(d.name),
             "a": f"{decision_words(d.a.name)}：{d.a.bytes / 1e6:,.1f} MB / {d.a.grid} 块",
             "b": f"{decision_words(d.b.name)}：{d.b.bytes / 1e6:,.1f} MB / {d.b.grid} 块",
             "q": f"问题 {d.question}：{QUESTION_ZH[d.question]}", "win": decision_words(d.winner().name)} for d in ldec.decisions()]
    return md_table(rows, ["name", "a", "b", "q", "win"], ["取舍", "方案 A", "方案 B", "决定它的问题", "胜出"])


# ------------------------------------------------------------------ the case study: the ledger's on-chip bytes against the kernel's
def case_onchip_values(compiled_shared_bytes: int | None = None, design: str = "C") -> dict[str, str]:
    """Why the ledger's on-chip bytes of a case design (:func:`ledger.case_study.design`) differ from the
    shared memory its kernel (``kernels.case_study.qk_norm_rope_fp8``) declares: ``calc.perfmodel.case.onchip.*``.

    The ledger counts every byte of a row on chip -- its bf16 input, an fp32 working copy, the fp8
    output and the fp32 scale -- plus the token's cos/sin row, registers and shared memory alike.
    The kernel keeps in shared memory only the fp32 normalised rows (the rotate-half partner of an
    element lives in another thread), the cos/sin row and the two norm weights; the rest are register
    fragments.  ``compiled_shared_bytes`` (the kernel's declared shared memory): it must equal that
    layout, else ``ValueError``."""
    from ledger import case_study as cs
    from ledger.cost import dtype_bytes

    s = cs.CASE
    d = cs.book_designs(s)[design]
    tables = s.rope_row_bytes
    ledger_row = (d.onchip_bytes - tables) / d.rows_per_block
    smem_row = s.head_dim * dtype_bytes(s.work_dtype)
    smem = d.rows_per_block * smem_row + tables + s.weights_bytes
    if compiled_shared_bytes is not None and compiled_shared_bytes != smem:
        raise ValueError(f"design {design}: the kernel declares {compiled_shared_bytes} B of shared memory, "
                         f"the layout described here is {smem:.0f} B")
    k = "calc.perfmodel.case.onchip"
    return {f"{k}.ledger_row_bytes": f"{ledger_row:.0f}", f"{k}.smem_row_bytes": f"{smem_row:.0f}",
            f"{k}.smem_bytes": f"{smem:.0f}", f"{k}.smem_kb": f"{smem / 1024:.1f}",
            f"{k}.weights_bytes": f"{s.weights_bytes:.0f}", f"{k}.tables_bytes": f"{tables:.0f}"}
