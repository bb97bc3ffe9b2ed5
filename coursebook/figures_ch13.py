"""Figures, tables and derived values of chapter 13 (逐元素、归一化与 RoPE), built at page build time.

Analytic numbers come from :mod:`ledger.fusion`; measured numbers from the recorded GPU
results read by :func:`measure.results.load_results`.  Nothing here types a number.

Figures: :func:`fusion_ledger_bars`, :func:`rope_pairing`, :func:`reduction_two_stage`,
:func:`measured_copy_fraction`.
Tables / values: :func:`targets_table`, :func:`measured_extras` (the ``rec13.*`` texts a
page glues), :func:`exercise_values` (the ``ch13x.*`` texts of the exercises),
:func:`errata_table`, :func:`glued_keys`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from coursebook import style

__all__ = [
    "fusion_ledger_bars",
    "rope_pairing",
    "reduction_two_stage",
    "measured_copy_fraction",
    "targets_table",
    "measured_extras",
    "fused_diagnosis",
    "exercise_values",
    "errata_table",
    "ascend_values",
    "glued_keys",
    "CH13_SUITES",
    "NO_RESULT",
]

NO_RESULT = "尚无记录结果 / no recorded result yet"
CH13_SUITES = ("elementwise", "quant", "norm", "rope", "fused")
_C = style.COLORS


def _figure(w: float = 7.2, h: float = 4.2):
    style.apply()
    try:  # let IPython show a bare Figure once when a cell returns it
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")
    except Exception:
        pass
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h))


# ------------------------------------------------------------------ ledger figures
_SCENARIO_LABEL = {
    "scale_add": "scale+add",
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "rope": "RoPE",
    "rmsnorm_rope_fp8": "RMSNorm+RoPE+FP8",
}


def fusion_ledger_bars():
    """Bytes of the op-by-op plan against the fused kernel, for the five scenarios."""
    import numpy as np

    from ledger.fusion import scenarios

    scs = scenarios()
    fig = _figure(8.2, 4.2)
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


def rope_pairing(rope_dim: int = 8):
    """Which channels form a pair: NeoX half-split against interleaved."""
    fig = _figure(8.2, 3.0)
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

    fig = _figure(8.2, 3.6)
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


# ------------------------------------------------------------------ measured results
def _load(device: str = "nvidia-h200"):
    try:
        from measure.results import load_results

        return load_results(device)
    except Exception:
        return None


def _bench(results) -> list[dict]:
    from measure.results import records

    return [r for r in records(results, "bench") if r.get("suite") in CH13_SUITES]


def measured_copy_fraction(results: dict | None = None):
    """% of the same run's copy bandwidth reached by each chapter-13 kernel, with its target."""
    import numpy as np

    results = results if results is not None else _load()
    fig = _figure(8.2, 5.2)
    ax = fig.add_subplot(1, 1, 1)
    rows = [r for r in _bench(results)] if results else []
    if not rows:
        ax.set_axis_off()
        ax.text(0.5, 0.5, NO_RESULT, ha="center", va="center")
        return fig
    y = np.arange(len(rows))
    vals = [100 * (r.get("frac_copy_bw") or 0) for r in rows]
    cols = []
    for r in rows:
        t = (r.get("targets") or {}).get("frac_copy_bw")
        cols.append(_C["datasheet"] if not t else (_C["calibrated"] if t.get("met") else _C["compute"]))
    ax.barh(y, vals, color=cols, height=0.6)
    for i, r in enumerate(rows):
        t = (r.get("targets") or {}).get("frac_copy_bw")
        x_label = vals[i]
        if t:
            ax.plot([100 * t["target"]] * 2, [i - 0.38, i + 0.38], color="black", lw=1.6, zorder=3)
            x_label = max(x_label, 100 * t["target"])
        ax.text(x_label + 1, i, f"{vals[i]:.1f}%", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([r["name"] for r in rows], fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlim(0, max(115, max(vals) + 12))
    ax.set_xlabel("账本字节 / 实测时间，占同一次运行拷贝带宽的百分比")
    ax.set_title("记录结果：每个 kernel 离拷贝带宽有多远（黑线 = 目标；绿 = 达标，红 = 未达标，灰 = 无目标）",
                 fontsize=9)
    fig.tight_layout()
    return fig


_TARGET_NAME = {"frac_copy_bw": "拷贝带宽占比", "speedup_vs_byte_ratio": "融合加速比 / 账本字节比"}


def _target_label(key: str) -> str:
    if key.startswith("speedup:"):
        return f"对 {key.split(':', 1)[1]} 的加速比"
    return _TARGET_NAME.get(key, key)


def _target_value(key: str, v: float) -> str:
    return f"{100 * v:.1f}%" if key in _TARGET_NAME else f"{v:.2f}×"


def _targets(results) -> list[tuple[str, str, dict]]:
    out = []
    for r in _bench(results):
        for key, t in (r.get("targets") or {}).items():
            if isinstance(t, dict) and "met" in t:
                out.append((r["name"], key, t))
    return out


def targets_table(results: dict | None = None) -> str:
    """Markdown: every target a chapter-13 record carries, the measured value and met / missed."""
    results = results if results is not None else _load()
    if not results:
        return NO_RESULT
    lines = ["| kernel | 目标 | 要求 | 实测 | 结论 |", "|---|---|---:|---:|---|"]
    for name, key, t in _targets(results):
        lines.append(f"| `{name}` | {_target_label(key)} | ≥ {_target_value(key, t['target'])} | "
                     f"{_target_value(key, t['value'])} | {'达标' if t['met'] else '**未达标**'} |")
    return "\n".join(lines)


def _find(results, prefix: str) -> dict | None:
    for r in _bench(results):
        if r.get("name", "").startswith(prefix):
            return r
    return None


def measured_extras(results: dict | None = None) -> dict[str, str]:
    """Texts derived from the records (verdict lists, ratios between kernels): ``rec13.*``."""
    results = results if results is not None else _load()
    out = {k: "—" for k in ("rec13.targets.total", "rec13.targets.met", "rec13.targets.missed",
                            "rec13.targets.met_list", "rec13.targets.missed_list",
                            "rec13.fused_fp8.byte_ratio", "rec13.fused_fp8.share",
                            "rec13.add.per_thread_over_parallel", "rec13.rope.neox_blocked_over_naive",
                            "rec13.rope.interleaved_blocked_over_naive", "rec13.splitk.second_read_pct",
                            "rec13.rms.copy_us", "rec13.rms.bound_compile", "rec13.rms.bound_f",
                            "rec13.rms.need_pct", "rec13.rms.target_compile", "rec13.ln.copy_us",
                            "rec13.ln.bound_compile", "rec13.rmsL.copy_us", "rec13.rmsL.bound_compile",
                            "rec13.rmsL.shape",
                            "rec13.fused_fp8.mb", "rec13.fused_fp8.mb_bf16_tables",
                            "rec13.fused_fp8.pct_bf16_tables")}
    if not results:
        return out
    ts = _targets(results)
    met = [f"{n}（{_target_label(k)}）" for n, k, t in ts if t["met"]]
    missed = [f"{n}（{_target_label(k)}：要求 ≥ {_target_value(k, t['target'])}，实测 {_target_value(k, t['value'])}）"
              for n, k, t in ts if not t["met"]]
    out.update({"rec13.targets.total": str(len(ts)), "rec13.targets.met": str(len(met)),
                "rec13.targets.missed": str(len(missed)),
                "rec13.targets.met_list": "；".join(met) or "无",
                "rec13.targets.missed_list": "；".join(missed) or "无"})
    f8 = _find(results, "fused rmsnorm+rope+fp8")
    if f8 and f8.get("ledger_byte_ratio"):
        out["rec13.fused_fp8.byte_ratio"] = f"{f8['ledger_byte_ratio']:.2f}"
        sp = (f8.get("speedup") or {}).get("3 TileLang kernels")
        if sp:
            out["rec13.fused_fp8.share"] = f"{100 * sp / f8['ledger_byte_ratio']:.0f}"

    def ratio(key, slow, fast):
        a, b = _find(results, slow), _find(results, fast)
        if a and b and a.get("ms") and b.get("ms"):
            out[key] = f"{a['ms'] / b['ms']:.2f}"

    ratio("rec13.add.per_thread_over_parallel", "add[parallel]", "add[per_thread]")
    ratio("rec13.rope.neox_blocked_over_naive", "rope[neox,naive]", "rope[neox,blocked]")
    ratio("rec13.rope.interleaved_blocked_over_naive", "rope[interleaved,naive]", "rope[interleaved,blocked]")
    # the same-bytes copy timed in the norm benches: the most any kernel of that shape can gain
    from measure.suites.norm import COPY

    norms = [r for r in _bench(results) if r.get("name", "").startswith("rmsnorm[rows]")]
    large = max(norms, key=lambda r: r.get("bytes") or 0) if len(norms) > 1 else None
    if large:
        out["rec13.rmsL.shape"] = large["name"].rsplit(" ", 1)[-1].replace("x", "×")
    small = min(norms, key=lambda r: r.get("bytes") or 0)["name"] if norms else "rmsnorm[rows]"
    for key, prefix, lib in (("rms", small, "F.rms_norm"), ("ln", "layernorm[rows]", "F.layer_norm"),
                             ("rmsL", large["name"] if large else "\0", "F.rms_norm")):
        r = _find(results, prefix)
        cms = ((r or {}).get("baselines") or {}).get(COPY)
        bound = (r or {}).get("speedup_bound") or {}
        if cms:
            out[f"rec13.{key}.copy_us"] = f"{cms * 1e3:.1f}"
        if "torch.compile" in bound:
            out[f"rec13.{key}.bound_compile"] = f"{bound['torch.compile']:.2f}"
        if key == "rms" and lib in bound:
            out["rec13.rms.bound_f"] = f"{bound[lib]:.2f}"
        tgt = ((r or {}).get("targets") or {}).get("speedup:torch.compile")
        comp = ((r or {}).get("baselines") or {}).get("torch.compile")
        if key == "rms" and tgt and comp and r.get("bytes") and r.get("copy_gbps"):
            # the copy-bandwidth share a kernel would need to be `target` times faster than compile
            need_ms = comp / tgt["target"]
            out["rec13.rms.target_compile"] = f"{tgt['target']:.2f}"
            out["rec13.rms.need_pct"] = f"{100 * r['bytes'] / (need_ms * 1e-3) / 1e9 / r['copy_gbps']:.1f}"
    if f8 and f8.get("bytes") and f8.get("ms") and f8.get("copy_gbps"):
        from ledger.fusion import rmsnorm_rope_fp8_cost

        cfg = f8.get("config") or {}
        old = rmsnorm_rope_fp8_cost(*(int(v) for v in re.findall(r"(\d+)x(\d+)", f8["name"])[0]), "bfloat16",
                                    cfg.get("rope_dim", 128), cfg.get("group"), cos_sin_dtype="bfloat16").bytes
        out["rec13.fused_fp8.mb"] = f"{f8['bytes'] / 1e6:.1f}"
        out["rec13.fused_fp8.mb_bf16_tables"] = f"{old / 1e6:.1f}"
        out["rec13.fused_fp8.pct_bf16_tables"] = f"{100 * old / (f8['ms'] * 1e-3) / 1e9 / f8['copy_gbps']:.1f}"
    sk = _find(results, "rmsnorm[splitk]")
    if sk and sk.get("frac_copy_bw"):
        # the ledger counts one read of x; split-K reads it twice: 3 passes of x-sized traffic instead of 2
        out["rec13.splitk.second_read_pct"] = f"{100 * sk['frac_copy_bw'] * 3 / 2:.1f}"
    return out


def _search(results, name: str) -> dict | None:
    for suite in (results or {}).get("suites", {}).values():
        for r in suite.get("records", []):
            if r.get("kind") == "search" and r.get("name") == name:
                return r
    return None


def _recorded_ncu_rows() -> dict | None:
    from measure.ncu import rows as ncu_rows

    path = Path(ncu_rows.RESULTS) / "ncu_rows.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def fused_diagnosis(results: dict | None = None, ncu: dict | None = None) -> dict[str, str]:
    """Texts of the "where the fused FP8 kernel stalls" passage: ``rec13.diag.*`` from the
    recorded search of the fused kernel's schedules, ``rec13.ncu.*`` from the recorded
    Nsight Compute run (``measure/results/ncu/ncu_rows.json``).  Missing data -> "—"."""
    results = results if results is not None else _load()
    ncu = ncu if ncu is not None else _recorded_ncu_rows()
    out: dict[str, str] = {}
    srch = _search(results, "fused rmsnorm+rope+fp8 blk_m") or {}
    ms = srch.get("ms") or {}

    def best(pred):
        hits = {k: v for k, v in ms.items() if pred(k)}
        return min(hits.items(), key=lambda kv: kv[1]) if hits else (None, None)

    groups = {
        "orig": lambda k: k == "blk_m=2",
        "capped": lambda k: k.startswith("blk_m=") and "min_blocks" in k,
        "lean": lambda k: k.startswith("lean,"),
        "pipe": lambda k: k.startswith("pipe,"),
        "warp": lambda k: k.startswith("warp,"),
        "vec": lambda k: k.startswith("vec,") and not k.endswith(",prefetch"),
        "vecpf": lambda k: k.startswith("vec,") and k.endswith(",prefetch"),
        "vecp": lambda k: k.startswith("vecp,"),
    }
    for g, pred in groups.items():
        lab, t = best(pred)
        out[f"rec13.diag.{g}_us"] = "—" if t is None else f"{t * 1e3:.1f}"
        out[f"rec13.diag.{g}_cfg"] = lab or "—"
    out["rec13.diag.best"] = srch.get("best") or "—"
    from measure.suites.fused import PIPE_THREADS
    from measure.ncu.rows import FUSED_CFG, LEAN_CFG, VEC_CFG, VECP_CFG
    from measure.ncu.rows import N as ROW

    out["rec13.diag.warp_elems"] = str(ROW // 32)  # the warp schedule: one row over 32 lanes
    out["rec13.diag.pipe_consumers"] = str(PIPE_THREADS)
    out["rec13.diag.vec_elems"] = str(ROW // VEC_CFG[0])  # the vec schedule: one row over tpr lanes

    for key, (bm, mb) in (("fused", FUSED_CFG), ("lean", LEAN_CFG)):
        out[f"rec13.ncu.{key}.cfg"] = f"blk_m={bm}，每 SM {mb} 块"
    out["rec13.ncu.vec.cfg"] = f"每行 {VEC_CFG[0]} 线程，每 SM {VEC_CFG[3]} 块"
    out["rec13.ncu.vecp.cfg"] = f"每块 {VECP_CFG[2]} 行，预取 {VECP_CFG[3] - 1} 行"
    names = {"rms": "rmsnorm rows", "quant": "quant_fp8", "fused": "fused fp8", "lean": "fused fp8 lean",
             "vec": "fused fp8 vec", "vecp": "fused fp8 vecp"}
    ks = (ncu or {}).get("kernels", {})
    for key, name in names.items():
        k = ks.get(name) or {}
        for field, fmt in (("issue_pct_of_peak", "{:.0f}"), ("dram_pct_of_peak", "{:.0f}"),
                           ("instructions_per_element", "{:.1f}"), ("time_us", "{:.1f}"),
                           ("registers_per_thread", "{:.0f}")):
            v = k.get(field)
            out[f"rec13.ncu.{key}.{field.split('_')[0]}"] = "—" if v is None else fmt.format(v)
    return out


# ------------------------------------------------------------------ exercises, errata
def exercise_values() -> dict[str, str]:
    """Numbers of the exercises' answers, computed by the ledger: ``ch13x.*``."""
    from ledger import fusion as F
    from ledger.machines import get_machine

    m = get_machine("h200-calibrated")
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
        "ch13x.e8.unfused_mb": f"{add_norm_split.bytes / 1e6:.2f}",
        "ch13x.e8.fused_mb": f"{add_norm_fused.bytes / 1e6:.2f}",
        "ch13x.e8.ratio": f"{add_norm_split.bytes / add_norm_fused.bytes:.2f}",
        "ch13x.e1.fp16_unfused_mb": f"{s16.unfused.bytes / 1e6:.2f}",
        "ch13x.e1.fp16_fused_mb": f"{s16.fused.bytes / 1e6:.2f}",
        "ch13x.e1.fp16_ratio": f"{s16.ratio:.2f}",
        "ch13x.e2.rms_mb": f"{rms.bytes / 1e6:.1f}",
        "ch13x.e2.rms_us": f"{rms.lower_bound(m) * 1e6:.1f}",
        "ch13x.e3.frag2_kib": f"{F.fragment_kib((2, 4096), 'fp32'):.0f}",
        "ch13x.e3.regs_per_thread": f"{2 * 4096 // 256}",
        "ch13x.e4.half_mb": f"{rope_half.bytes / 1e6:.1f}",
        "ch13x.e4.full_mb": f"{rope_full.bytes / 1e6:.1f}",
        "ch13x.e5.tok_ratio": f"{rf_tok.ratio:.3f}",
        "ch13x.e5.group_ratio": f"{rf_g.ratio:.3f}",
        "ch13x.e5.group_scale_mb": f"{(rf_g.fused.bytes - rf_tok.fused.bytes) / 1e6:.2f}",
        "ch13x.e6.quant_mb": f"{q.bytes / 1e6:.1f}",
        "ch13x.e6.quant_ai": f"{q.intensity:.3f}",
    }


def errata_table(prefix: str = "ch13") -> str:
    """Markdown table of the ledger's errata for a chapter (draft value, ours, reading)."""
    from ledger.errata import errata

    rows = [e for e in errata() if e.key.startswith(prefix + ".")]
    if not rows:
        return "（账本没有登记本章的勘误。）"
    lines = ["| 键 | 草稿值 | 账本值 | 按草稿假设复算 | 单位 |", "|---|---:|---:|---:|---|"]
    for e in rows:
        lines.append(f"| `{e.figure}` | {e.draft} | {e.ours} | {e.draft_reading} | {e.unit} |")
    return "\n".join(lines)


def glued_keys(page: str = "ch_elementwise_norm_rope.md", prefix: str = "ch13.") -> list[str]:
    """Keys glued on ``book/<page>`` that start with ``prefix``, in order of first use."""
    import re
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "book" / page
    keys = re.findall(r"\{glue:text\}`([^`]+)`", path.read_text(encoding="utf-8"))
    return [k for k in dict.fromkeys(keys) if k.startswith(prefix)]


def ascend_values() -> dict[str, str]:
    """Facts of the recorded Ascend RMSNorm lowering (measure/results/ascend/index.json): ``asc13.*``."""
    import json
    from pathlib import Path

    from measure.ascend import RESULTS_DIR

    idx = RESULTS_DIR / "index.json"
    d = json.loads(idx.read_text(encoding="utf-8"))
    r = d["kernels"]["rmsnorm"]
    sh = r["shape"]
    return {
        "asc13.label": d["label"],
        "asc13.date": d["date"],
        "asc13.tilelang": d["tilelang_version"],
        "asc13.rows": str(sh["rows_per_tile"]),
        "asc13.budget_kib": f"{sh['ub_budget_bytes'] / 1024:.0f}",
        "asc13.used_kib": f"{sh['ub_used_bytes'] / 1024:.0f}",
        "asc13.x_versions": str(r["buffer_versions"]["x_ub"]),
        "asc13.notify": str(r["sync"]["asc_sync_notify"]),
        "asc13.syncthreads": str(r["sync"]["asc_syncthreads"]),
        "asc13.passes": str(len(r["pass_order"])),
        "asc13.kind": r["kernel_kind"],
        "asc13.stopped": r["stopped_at"],
    }
