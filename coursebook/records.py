"""Tables of records: reading the recorded GPU results for a page, and the tables and values
drawn from them -- chapter 1's measured variants and Inductor's kernels, the elementwise
chapter's copy-bandwidth bars, targets and derived ratios, every suite's verdicts.

Measured numbers come only from the recorded results (:func:`measure.results.load_results`);
a table without records says so (:data:`NO_RESULT`) and shows no number.
"""
from __future__ import annotations

import math
import re
from typing import Any

from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["md_table", "label_in_words", "NO_RESULT", "DASH", "load", "records", "bench", "search", "floor3", "measured_table",
           "kernel_names_table", "measured_copy_fraction", "targets_table", "elementwise_values", "verdict_table", "flush_verdict_table",
           "variant_summary", "variant_words", "ELEMENTWISE_SUITES", "elementwise_claims", "elementwise_table", "kernel_words"]

#: What a measured cell shows when no GPU results are recorded yet.
NO_RESULT = "尚无记录结果 / no recorded result yet"
#: What a derived value reads when its record is missing.
DASH = "—"


def md_table(rows, cols, heads) -> str:
    """A Markdown table of ``rows`` (dicts or objects) with columns ``cols`` headed ``heads``; floats
    print with two decimals and thousands separators, None as "—"."""
    out = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c) if isinstance(r, dict) else getattr(r, c)
            if v is None:
                cells.append(DASH)
            elif isinstance(v, float):
                cells.append(f"{v:,.2f}")
            else:
                cells.append(str(v).replace("|", "\\|").replace("*", "\\*"))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def label_in_words(label: str, table, sep: str, joiner: str) -> str:
    """A configuration label in words: split at ``sep``; each token becomes the text of the first
    ``(pattern, text)`` of ``table`` that matches it whole (``text`` formatted with the groups);
    a token no pattern matches is kept as it is."""
    words = []
    for tok in str(label).split(sep):
        for pat, text in table:
            m = re.fullmatch(pat, tok)
            if m:
                words.append(text.format(*m.groups()))
                break
        else:
            words.append(tok)
    return joiner.join(words)


def _elementwise_suites() -> tuple[str, ...]:
    from measure.runner import TOPICS

    return tuple(TOPICS["elementwise"])


#: The suites of the elementwise topic (:data:`measure.runner.TOPICS`).
ELEMENTWISE_SUITES = _elementwise_suites()


def load(device: str = "nvidia-h200") -> dict | None:
    """The results this page reads: live ones when the page chose live (:func:`coursebook.live.use`),
    else the recorded results of ``device``; None when nothing is recorded yet."""
    from coursebook import live
    from measure.results import load_results

    src = live.current()
    if src is not None and src.results.get("suites"):
        return src.results
    try:
        return load_results(device)
    except FileNotFoundError:
        return None


def _suite_matches(sname: str, suite) -> bool:
    if suite is None:
        return True
    wanted = (suite,) if isinstance(suite, str) else tuple(suite)
    return any(sname == w or (w.endswith(".") and sname.startswith(w)) for w in wanted)


def records(results: dict | None, suite=None, prefix: str = "", kind: str | None = None) -> list[dict]:
    """Records whose name starts with ``prefix`` (and of ``kind``), from the suites ``suite`` names:
    a suite name, a package prefix ending in ``.`` (``"gemm."``), a tuple of those, or None for all.
    Each record carries its suite's name."""
    if not results:
        return []
    out = []
    for sname, s in (results.get("suites") or {}).items():
        if not _suite_matches(sname, suite):
            continue
        for r in s.get("records", []) if isinstance(s, dict) else []:
            if str(r.get("name", "")).startswith(prefix) and (kind is None or r.get("kind") == kind):
                out.append({**r, "suite": sname})
    return out


def bench(results: dict | None, name: str, suite=None) -> dict | None:
    """The bench record called ``name`` (None when not recorded)."""
    return next((r for r in records(results, suite, kind="bench") if r.get("name") == name), None)


def search(results: dict | None, name: str, suite=None) -> dict | None:
    """The search record called ``name`` (None when not recorded)."""
    return next((r for r in records(results, suite, kind="search") if r.get("name") == name), None)


def floor3(x: float) -> str:
    """``x`` cut (not rounded) to three decimals: a value just under a target never prints as the target."""
    import math

    return f"{math.floor(x * 1000 + 1e-9) / 1000:.3f}"


# ------------------------------------------------------------------ chapter 1's measured variants
def _provenance_line(results: dict, suite: str | None = None) -> str:
    """Device and versions of the results, and the date of the run that measured ``suite`` (a live
    suite says so: measured by this build)."""
    s = (results.get("suites") or {}).get(suite) or {}
    p = results.get("live_provenance") if s.get("live") else results.get("provenance") or {}
    p = p or {}
    date = s.get("date") or p.get("date", "日期未知")
    versions = "，".join(f"{k} {p[k]}" for k in ("torch", "tilelang", "triton", "cuda", "driver") if p.get(k))
    head = "本次构建现场实测（live）于" if s.get("live") else "记录于"
    return f"{head} {p.get('device', '未知设备')}，{str(date)[:10]}，{versions}"


#: Chinese names of chapter 1's measured variants (the part of the record name after the experiment).
VARIANT_ZH = {"eager": "eager：两个 ATen kernel", "compile": "torch.compile：Inductor 生成的 Triton kernel",
              "tilelang": "TileLang 融合 kernel", "three_pass": "手写三趟（eager）",
              "F.layer_norm": "F.layer_norm：一个 ATen kernel"}


def measured_table(prefix: str, device: str = "nvidia-h200") -> str:
    """Markdown: recorded time and bandwidth of every ``prefix.*`` variant, ledger floor beside it."""
    results = load(device)
    recs = records(results, prefix=prefix + ".", kind="bench")
    if not recs:
        skips = [r for r in records(results, prefix=prefix + ".") if r.get("kind") in ("skip", "error")]
        why = "" if not skips else "（记录里只有跳过或出错的条目：" + "；".join(
            f"{r['name']}: {r.get('reason') or r.get('error', '')}" for r in skips) + "）"
        return (f"**{NO_RESULT}**{why}\n\n这一章的测量还没有在 GPU 上运行过；运行之后，这里是实测时间、"
                "有效带宽与账本下界的对照。")
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
        suffix = r["name"][len(prefix) + 1:]
        label = VARIANT_ZH.get(suffix, suffix)
        lines.append(
            f"| {label} | {lb_b / 1e6:.1f} | {lb * 1e3:.1f} | {ms * 1e3:.1f} | "
            f"{r.get('gbps', 0):.0f} | {r.get('frac_copy_bw', 0):.0%} | {util} |"
            if lb_b and lb and ms else f"| {label} | — | — | "
            f"{(ms or 0) * 1e3:.1f} | — | — | — |")
    shape = recs[0].get("shape")
    bw = recs[0].get("copy_gbps")
    lines += ["", f"形状 {shape}，fp16；有效带宽一律按融合版本的最少字节计算；"
                  f"本次运行测得的设备拷贝带宽为 {bw:.0f} GB/s。账本下界用 H200 标定参数。"
              if bw else ""]
    return "\n".join(lines)


def kernel_names_table(device: str = "nvidia-h200") -> str:
    """Markdown: kernel names and counts of one training step, eager vs torch.compile (recorded):
    every kind of kernel the compiled step launched, so the counts add up to the launches above it."""
    results = load(device)
    recs = records(results, prefix="pytorch.inductor.kernels")
    if not recs:
        return (f"**{NO_RESULT}**\n\n这里要列的是"
                "在 GPU 上对一个小 MLP 块跑一次前向加反向，"
                "分别在 eager 与 `torch.compile`（`TORCHINDUCTOR_UNIQUE_KERNEL_NAMES=1`）下用 profiler "
                "数出每个 kernel 的名字和次数。在此之前不显示任何名字或数字。")
    r = recs[-1]
    eager = r.get("eager_kernels") or {}
    comp = r.get("compiled_kernels") or {}
    lines = [f"*{_provenance_line(results, r['suite'])}*", "", f"模型：`{r.get('model', '')}`", "",
             f"- eager：{sum(eager.values())} 次 kernel 发射，{len(eager)} 种 kernel；",
             f"- torch.compile：{sum(comp.values())} 次 kernel 发射，{len(comp)} 种 kernel。",
             "", "| torch.compile 下的 kernel（profiler 记录的名字） | 次数 |", "|---|---:|"]
    for name, n in sorted(comp.items(), key=lambda kv: (-kv[1], kv[0])):
        short = name if len(name) <= 90 else name[:87] + "…"
        lines.append(f"| `{short}` | {n} |")
    gen = r.get("generated_kernels") or []
    if gen:  # counted by kind (Inductor's name prefixes), the names themselves are in the table when listed there
        kinds = {"triton_poi": "逐点", "triton_red": "归约", "triton_per": "常驻式归约（persistent reduction）"}
        n = {w: sum(g.startswith(p) for g in gen) for p, w in kinds.items()}
        other = len(gen) - sum(n.values())
        parts = [f"{w} {k} 个" for w, k in n.items() if k] + ([f"其他 {other} 个"] if other else [])
        listed = all(any(g in name for name in comp) for g in gen)
        lines += ["", f"Inductor 生成代码里定义了 {len(gen)} 个 Triton kernel：" + "、".join(parts)
                  + ("，名字都在上表里。" if listed else "：" + "、".join(f"`{g}`" for g in gen) + "。")]
    sc = r.get("sincos_kernels") or []
    if sc:
        lines += ["", "单独编译 `torch.sin(torch.cos(x))` 得到的 kernel：" + "、".join(f"`{g}`" for g in sc) + "。"]
    return "\n".join(lines)


# ------------------------------------------------------------------ the elementwise topic
def _bench(results) -> list[dict]:
    return records(results, ELEMENTWISE_SUITES, kind="bench")


def _kernel_axis_labels(names: list[str]) -> list[str]:
    """Chinese axis labels of record names (:func:`kernel_words`): the kernel in words, with its
    shape and dtype added only where two records would otherwise read the same."""
    words = [kernel_words(n) for n in names]
    count = {}
    for w, _ in words:
        count[w] = count.get(w, 0) + 1
    return [w if count[w] == 1 else f"{w}（{shape}）" for w, shape in words]


def measured_copy_fraction(results: dict | None = None):
    """% of the same run's copy bandwidth reached by each chapter-13 kernel, with its target."""
    import numpy as np

    results = results if results is not None else load()
    fig = figure(8.2, 5.2)
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
    ax.set_yticklabels(_kernel_axis_labels([r["name"] for r in rows]), fontsize=7.5)
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
        base = key.split(":", 1)[1]
        words = _BASELINE_WORDS.get(base, base)
        wide = lambda c: ord(c) >= 0x2E80  # noqa: E731 -- CJK and full-width punctuation: no blank beside them
        return f"对{'' if wide(words[0]) else ' '}{words}{'' if wide(words[-1]) else ' '}的加速比"
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
    results = results if results is not None else load()
    if not results:
        return NO_RESULT
    lines = ["| kernel | 目标 | 要求 | 实测 | 结论 |", "|---|---|---:|---:|---|"]
    for name, key, t in _targets(results):
        lines.append(f"| {_named(name)} | {_target_label(key)} | ≥ {_target_value(key, t['target'])} | "
                     f"{_target_value(key, t['value'])} | {'达标' if t['met'] else '**未达标**'} |")
    return "\n".join(lines)


def _find(results, prefix: str) -> dict | None:
    for r in _bench(results):
        if r.get("name", "").startswith(prefix):
            return r
    return None


def _bench_copy_bandwidth(benches: list[dict]) -> str:
    """The copy bandwidth the timed kernels' "share of copy bandwidth" divides by, in Chinese:
    one figure when every kernel came from runs that measured the same (to 1 GB/s), else the range
    over those runs (each share is taken against the bandwidth of the run that timed it).  Printed
    by :func:`coursebook.measured.copy_bandwidth_range`, as the pages' source line."""
    from coursebook.measured import copy_bandwidth_range

    bw = copy_bandwidth_range(b.get("copy_gbps") for b in benches)
    if bw is None:
        return "设备拷贝带宽没有记录"
    if "–" not in bw:
        return f"测这些 kernel 的运行实测的设备拷贝带宽是 {bw} GB/s"
    return f"这些 kernel 来自几次运行，各次实测的设备拷贝带宽在 {bw} GB/s 之间"


def elementwise_values(results: dict | None = None) -> dict[str, str]:
    """Texts derived from the records (verdict lists, ratios between kernels): ``derived.elementwise.*``."""
    results = results if results is not None else load()
    out = {k: "—" for k in ("derived.elementwise.targets.total", "derived.elementwise.targets.met", "derived.elementwise.targets.missed",
                            "derived.elementwise.targets.met_list", "derived.elementwise.targets.missed_list",
                            "derived.elementwise.fused_fp8.byte_ratio", "derived.elementwise.fused_fp8.share",
                            "derived.elementwise.add.per_thread_over_parallel", "derived.elementwise.rope.neox_blocked_over_naive",
                            "derived.elementwise.rope.interleaved_blocked_over_naive", "derived.elementwise.splitk.second_read_pct",
                            "derived.elementwise.rms.copy_us", "derived.elementwise.rms.bound_compile", "derived.elementwise.rms.bound_f",
                            "derived.elementwise.rms.need_pct", "derived.elementwise.rms.target_compile", "derived.elementwise.ln.copy_us",
                            "derived.elementwise.ln.bound_compile", "derived.elementwise.rmsL.copy_us", "derived.elementwise.rmsL.bound_compile",
                            "derived.elementwise.rmsL.shape",
                            "derived.elementwise.fused_fp8.mb", "derived.elementwise.fused_fp8.mb_bf16_tables",
                            "derived.elementwise.fused_fp8.pct_bf16_tables", "derived.elementwise.copy_bw")}
    if not results:
        return out
    out["derived.elementwise.copy_bw"] = _bench_copy_bandwidth(_bench(results))
    ts = _targets(results)
    met = [f"{_named(n)}（{_target_label(k)}）" for n, k, t in ts if t["met"]]
    missed = [f"{_named(n)}（{_target_label(k)}：要求 ≥ {_target_value(k, t['target'])}，实测 {_target_value(k, t['value'])}）"
              for n, k, t in ts if not t["met"]]
    out.update({"derived.elementwise.targets.total": str(len(ts)), "derived.elementwise.targets.met": str(len(met)),
                "derived.elementwise.targets.missed": str(len(missed)),
                "derived.elementwise.targets.met_list": "；".join(met) or "无",
                "derived.elementwise.targets.missed_list": "；".join(missed) or "无"})
    f8 = _find(results, "fused rmsnorm+rope+fp8")
    if f8 and f8.get("ledger_byte_ratio"):
        out["derived.elementwise.fused_fp8.byte_ratio"] = f"{f8['ledger_byte_ratio']:.2f}"
        sp = (f8.get("speedup") or {}).get("3 TileLang kernels")
        if sp:
            out["derived.elementwise.fused_fp8.share"] = f"{100 * sp / f8['ledger_byte_ratio']:.0f}"

    def ratio(key, slow, fast):
        a, b = _find(results, slow), _find(results, fast)
        if a and b and a.get("ms") and b.get("ms"):
            out[key] = f"{a['ms'] / b['ms']:.2f}"

    ratio("derived.elementwise.add.per_thread_over_parallel", "add[parallel]", "add[per_thread]")
    ratio("derived.elementwise.rope.neox_blocked_over_naive", "rope[neox,naive]", "rope[neox,blocked]")
    ratio("derived.elementwise.rope.interleaved_blocked_over_naive", "rope[interleaved,naive]", "rope[interleaved,blocked]")
    # the same-bytes copy timed in the norm benches: the most any kernel of that shape can gain
    from measure.suites.norm import COPY

    norms = [r for r in _bench(results) if r.get("name", "").startswith("rmsnorm[rows]")]
    large = max(norms, key=lambda r: r.get("bytes") or 0) if len(norms) > 1 else None
    if large:
        out["derived.elementwise.rmsL.shape"] = large["name"].rsplit(" ", 1)[-1].replace("x", "×")
    small = min(norms, key=lambda r: r.get("bytes") or 0)["name"] if norms else "rmsnorm[rows]"
    for key, prefix, lib in (("rms", small, "F.rms_norm"), ("ln", "layernorm[rows]", "F.layer_norm"),
                             ("rmsL", large["name"] if large else "\0", "F.rms_norm")):
        r = _find(results, prefix)
        cms = ((r or {}).get("baselines") or {}).get(COPY)
        bound = (r or {}).get("speedup_bound") or {}
        if cms:
            out[f"derived.elementwise.{key}.copy_us"] = f"{cms * 1e3:.1f}"
        if "torch.compile" in bound:
            out[f"derived.elementwise.{key}.bound_compile"] = f"{bound['torch.compile']:.2f}"
        if key == "rms" and lib in bound:
            out["derived.elementwise.rms.bound_f"] = f"{bound[lib]:.2f}"
        tgt = ((r or {}).get("targets") or {}).get("speedup:torch.compile")
        comp = ((r or {}).get("baselines") or {}).get("torch.compile")
        if key == "rms" and tgt and comp and r.get("bytes") and r.get("copy_gbps"):
            # the copy-bandwidth share a kernel would need to be `target` times faster than compile
            need_ms = comp / tgt["target"]
            out["derived.elementwise.rms.target_compile"] = f"{tgt['target']:.2f}"
            out["derived.elementwise.rms.need_pct"] = f"{100 * r['bytes'] / (need_ms * 1e-3) / 1e9 / r['copy_gbps']:.1f}"
    if f8 and f8.get("bytes") and f8.get("ms") and f8.get("copy_gbps"):
        from ledger.fusion import rmsnorm_rope_fp8_cost

        cfg = f8.get("config") or {}
        old = rmsnorm_rope_fp8_cost(*(int(v) for v in re.findall(r"(\d+)x(\d+)", f8["name"])[0]), "bfloat16",
                                    cfg.get("rope_dim", 128), cfg.get("group"), cos_sin_dtype="bfloat16").bytes
        out["derived.elementwise.fused_fp8.mb"] = f"{f8['bytes'] / 1e6:.1f}"
        out["derived.elementwise.fused_fp8.mb_bf16_tables"] = f"{old / 1e6:.1f}"
        out["derived.elementwise.fused_fp8.pct_bf16_tables"] = f"{100 * old / (f8['ms'] * 1e-3) / 1e9 / f8['copy_gbps']:.1f}"
    second = _second_read_pct(results)
    if second is not None:
        out["derived.elementwise.splitk.second_read_pct"] = f"{second:.1f}"
    return out


def _second_read_pct(results) -> float | None:
    """The split-K RMSNorm's share of the copy bandwidth with its second read of x counted: the
    ledger counts one read; the schedule reads x twice, 3 passes of x-sized traffic instead of 2."""
    sk = _find(results, "rmsnorm[splitk]")
    return None if not sk or not sk.get("frac_copy_bw") else 100 * sk["frac_copy_bw"] * 3 / 2


#: A record name's kernel part (before the dtype) in words.
_KERNEL_WORDS = (
    (r"add\[parallel\]", "加法 ①：每线程一个元素"), (r"add\[per_thread\]", "加法 ②：每线程连续若干元素"),
    (r"add\[fragment\]", "加法 ③：先拷进 fragment"), (r"scale_cast", "缩放并转换"),
    (r"rmsnorm\[rows\]", "RMSNorm 按行调度"), (r"rmsnorm\[shared\]", "RMSNorm 共享内存调度"),
    (r"rmsnorm\[splitk\]", "RMSNorm 分段两趟"), (r"layernorm\[rows\]", "LayerNorm 按行调度"),
    (r"quant_fp8", "FP8 按组量化"), (r"rope\[neox,blocked\]", "RoPE NeoX 分块"),
    (r"rope\[neox,naive\]", "RoPE NeoX 朴素"), (r"rope\[interleaved,blocked\]", "RoPE interleaved 分块"),
    (r"rope\[interleaved,naive\]", "RoPE interleaved 朴素"),
    (r"fused rmsnorm\+rope\+fp8", "融合 RMSNorm + RoPE + FP8"), (r"fused rmsnorm\+rope", "融合 RMSNorm + RoPE"),
)
_BASE_WORDS = {"eager": "eager", "torch.compile": "compile", "F.rms_norm": "F.rms_norm", "F.layer_norm": "F.layer_norm",
               "3 TileLang kernels": "三个 TileLang kernel", "copy (same bytes)": "同字节拷贝"}


def kernel_words(name: str) -> tuple[str, str]:
    """(kernel in words, shape and dtype in words) of an elementwise record name."""
    for pat, words in _KERNEL_WORDS:
        m = re.match(pat + r"\s+", name)
        if m:
            toks = name[m.end():].split()
            out = [toks[0].replace("->", " → ")] if toks else []
            for t in toks[1:]:
                t = re.sub(r"^n=2\^(\d+)$", r"2^\1 个元素", t)
                t = re.sub(r"(\d+)x(?=\d)", r"\1×", t)
                t = re.sub(r"^group=(\d+)$", r"每组 \1 个通道", t)
                out.append(re.sub(r"^R=(\d+)$", r"旋转末尾 \1 个通道", t))
            return words, "，".join(out)
    return name, ""


def _named(name: str) -> str:
    words, shape = kernel_words(name)
    return f"{words}，{shape}" if shape else words


def elementwise_table(results: dict | None = None) -> str:
    """Markdown: every timed kernel of the elementwise topic -- time, share of the same run's copy
    bandwidth, time ratios to the baselines (baseline time / kernel time: above one, the kernel is
    faster), the targets -- with Chinese headers and the kernels in words."""
    results = results if results is not None else load()
    rows = _bench(results)
    if not rows:
        return f"**{NO_RESULT}**"
    lines = ["| kernel | 形状与 dtype | 时间 (µs) | 占拷贝带宽 | 时间比（基线 / 本 kernel） | 目标 |",
             "|---|---|---:|---:|---|---|"]
    for r in rows:
        words, shape = kernel_words(r.get("name", ""))
        sp = "，".join(f"{_BASE_WORDS.get(k, k)} {v:.2f}×" for k, v in (r.get("speedup") or {}).items() if v is not None)
        tg = [t for t in (r.get("targets") or {}).values() if isinstance(t, dict) and "met" in t]
        verdict = "" if not tg else ("全部达标" if all(t["met"] for t in tg) else
                                     f"{sum(not t['met'] for t in tg)} 项未达标")
        pct = "" if r.get("frac_copy_bw") is None else f"{100 * r['frac_copy_bw']:.1f}%"
        lines.append(f"| {words} | {shape} | {r['ms'] * 1e3:.1f} | {pct} | {sp or '—'} | {verdict or '—'} |")
    return "\n".join(lines)


def _ms(results, prefix: str) -> float | None:
    r = _find(results, prefix)
    return (r or {}).get("ms")


def _pct_copy(results, prefix: str) -> float | None:
    r = _find(results, prefix)
    return None if not r or r.get("frac_copy_bw") is None else 100 * r["frac_copy_bw"]


def elementwise_claims(results: dict | None = None) -> list:
    """The elementwise chapter's sentences that conclude from the records, each chosen by the
    values (:mod:`coursebook.claims`; keys ``claim.elementwise.*``)."""
    from coursebook import claims as C

    results = results if results is not None else load()
    out = []
    # level 1 (one scalar element per thread) against level 2 (8 contiguous elements per thread)
    out.append(C.compare(
        "claim.elementwise.add.level1", _ms(results, "add[parallel]"), _ms(results, "add[per_thread]"), tol=0.05,
        higher="它的代价在记录里一目了然：这一级只用到拷贝带宽的 {pct:.1f}%，下一级快约 {ratio:.1f} 倍。",
        tie="不过在记录里，它与下一级的耗时相差不到百分之五（拷贝带宽的 {pct:.1f}%）：这台机器掩盖了标量访存的代价。",
        lower="可记录里它反而比下一级快（拷贝带宽的 {pct:.1f}%），与标量访存的预期相反，值得重测。",
        pct=_pct_copy(results, "add[parallel]")))
    out.append(C.compare(
        "claim.elementwise.add.fragment", _ms(results, "add[fragment]"), _ms(results, "add[per_thread]"), tol=0.02,
        tie="与第二级一样快（耗时相差不到百分之二）", lower="比第二级还快一点（耗时是它的 {ratio:.2f} 倍）",
        higher="比第二级慢一点（耗时是它的 {ratio:.2f} 倍）"))
    out.append(C.threshold(
        "claim.elementwise.cast.narrow", _pct_copy(results, "scale_cast"), 95.0,
        above="写得窄一些并没有拖慢它：记录里这个 kernel 达到了拷贝带宽的 {value:.1f}%，瓶颈在显存而不在指令数。",
        below="记录里这个 kernel 只达到拷贝带宽的 {value:.1f}%，窄一半的写可能是原因之一；"
              "要确认，得看剖析数据里写事务的数量。"))
    # the measured page: the level-2/3 adds against the copy, beyond 100 %, against eager / compile
    p2, p3, pc = _pct_copy(results, "add[per_thread]"), _pct_copy(results, "add[fragment]"), _pct_copy(results, "scale_cast")
    low = None if None in (p2, p3) else min(p2, p3)
    out.append(C.threshold("claim.elementwise.measured.add_copy", low, 95.0,
                           above="已经与拷贝 kernel 不相上下。", below="离拷贝 kernel 还差一截。"))
    top = None if None in (p2, p3, pc) else max(p2, p3, pc)
    out.append(C.choose(
        "claim.elementwise.measured.over100", None if top is None else ("over" if top > 100 else "under"),
        {"over": "占比略高于百分之百并不矛盾：拷贝是一读一写，加法是两读一写，读多写少的混合在 HBM 上往往比纯拷贝"
                 "跑得稍快，所以“拷贝带宽”是一把好用的尺子，却不是不可逾越的上限。",
         "under": "拷贝带宽在这里是一把好用的尺子：同一次运行、同一种访存模式，读写的字节数一样算。"}))
    add = _find(results, "add[per_thread]") or {}
    sp = [(add.get("speedup") or {}).get(k) for k in ("eager", "torch.compile")]
    near = None if None in sp else all(abs(x - 1) <= 0.05 for x in sp)
    out.append(C.choose(
        "claim.elementwise.measured.add_vs_torch", None if near is None else ("near" if near else "apart"),
        {"near": "两个时间比都在一的百分之五以内：手写 kernel 在这里不会带来收益，它的意义在于确认“写对了就能顶到带宽”。",
         "apart": "两个时间比离一超过百分之五，这么简单的算子出现这样的差别，值得到剖析数据里看看原因。"}))
    out.append(C.threshold(
        "claim.elementwise.measured.splitk", _second_read_pct(results), 95.0,
        above="折算值接近甚至超过百分之百，说明第二遍读有相当一部分命中了 L2，倒序遍历起了作用。",
        below="折算值离百分之百还远，第二遍读大多又回到了显存，倒序遍历没能帮上多少。"))
    rms = _find(results, "rmsnorm[rows]") or {}
    out.append(C.threshold(
        "claim.elementwise.measured.rms_vs_copy", (rms.get("speedup") or {}).get("copy (same bytes)"), 0.95,
        above="几乎贴着它。", below="离它还有一段距离。"))
    # RoPE: the blocked schedules against the naive ones, and interleaved against NeoX
    nb, nn = _ms(results, "rope[neox,blocked]"), _ms(results, "rope[neox,naive]")
    ib, inv = _ms(results, "rope[interleaved,blocked]"), _ms(results, "rope[interleaved,naive]")
    both = None if None in (nb, nn, ib, inv) else ("faster" if nb < nn and ib < inv else "not")
    out.append(C.choose(
        "claim.elementwise.rope.blocked", both,
        {"faster": "记录里，NeoX 分块版比朴素版快约 {neox:.2f} 倍，interleaved 约 {inter:.2f} 倍；",
         "not": "记录里，分块版并没有全都快过朴素版（NeoX 的时间比 {neox:.2f}，interleaved {inter:.2f}，"
                "大于一才是分块版快）；"},
        neox=(nn / nb) if both else None, inter=(inv / ib) if both else None))
    out.append(C.compare(
        "claim.elementwise.rope.interleaved", ib, nb, tol=0.02,
        tie="interleaved 的片上运算是标量的，速度却与 NeoX 不相上下（时间相差不到百分之二）："
            "对一个受带宽限制的 kernel，片上多几条指令被显存延迟掩盖了，决定速度的是显存一侧的访存是否整块、对齐。",
        lower="interleaved 的片上运算是标量的，却比 NeoX 还快一点（时间比 {ratio:.2f}）："
              "对一个受带宽限制的 kernel，片上多几条指令被显存延迟掩盖了，决定速度的是显存一侧的访存是否整块、对齐。",
        higher="interleaved 的片上运算是标量的，记录里它也确实比 NeoX 慢（时间比 {ratio:.2f}）："
               "片上的标量运算没能完全藏进显存延迟里。"))
    # the targets table in one sentence: how many of how many were met, naming only the misses
    ts = _targets(results)
    missed = [f"{_named(n)}（{_target_label(k)}：要求 ≥ {_target_value(k, t['target'])}，实测 {_target_value(k, t['value'])}）"
              for n, k, t in ts if not t["met"]]
    case = None if not ts else ("all" if not missed else ("none" if len(missed) == len(ts) else "some"))
    out.append(C.choose(
        "claim.elementwise.measured.targets", case,
        {"all": "表中 {n} 项目标全部达标。",
         "some": "表中 {n} 项目标达标 {met} 项，没有达标的 {k} 项：{missed}。",
         "none": "表中 {n} 项目标一项也没有达标：{missed}。"},
        n=len(ts), met=len(ts) - len(missed), k=len(missed), missed="；".join(missed)))
    return out


# ------------------------------------------------------------------ every suite's verdicts
_VERDICT = {True: "达到", False: "未达到", None: "无法判断"}
#: The suite that times the variants' products again under both L2 flushes (its records are named
#: ``"<mode> flush: <product>"``; :func:`flush_verdict_table`).
FLUSH_SUITE = "gemm.flush"
#: The flush modes of :data:`FLUSH_SUITE` in the order its table shows them, with their headers.
FLUSH_HEADS = {"write": "重写冲刷", "clean": "重写后再读"}


def verdict_table(results: dict | None = None) -> str:
    """Targets set by the suites and whether the record met them (read, never asserted); the products timed
    again under both L2 flushes are :func:`flush_verdict_table`'s."""
    results = load() if results is None else results
    lines = ["| kernel | 指标 | 目标 | 实测 | 结论 |", "|---|---|---:|---:|---|"]
    for r in records(results, "gemm.", kind="bench"):
        if r.get("suite") == FLUSH_SUITE:
            continue
        for key, t in (r.get("targets") or {}).items():
            val = t.get("value")
            lines.append(f"| {_gemm_words(r['name'])} | {_target_label(key)} | ≥ {t.get('target')} | "
                         f"{DASH if val is None else floor3(val)} | {_VERDICT[t.get('met')]} |")
    if len(lines) == 2:
        return f"**{NO_RESULT}**"
    return "\n".join(lines)


def _flush_subject(name: str) -> str:
    """A product of :data:`FLUSH_SUITE` in words (its split-K and stream-K are the hand-written ones)."""
    for short, full in (("split-K ", "split-K ws "), ("stream-K ", "stream-K ws ")):
        if name.startswith(short) and not name.startswith(full):
            name = full + name[len(short):]
    return _gemm_words(name)


def flush_verdict_table(results: dict | None = None) -> str:
    """The targets of the products :data:`FLUSH_SUITE` timed under both L2 flushes: one row per product and
    target, the measured value and verdict under each flush side by side."""
    results = load() if results is None else results
    rows: dict = {}
    for r in records(results, FLUSH_SUITE, kind="bench"):
        mode, sep, subject = str(r.get("name", "")).partition(" flush: ")
        if not sep or mode not in FLUSH_HEADS:
            continue
        for key, t in (r.get("targets") or {}).items():
            rows.setdefault((subject, key), {"target": t.get("target")})[mode] = t
    if not rows:
        return f"**{NO_RESULT}**"
    heads = " | ".join(f"{h}：实测（结论）" for h in FLUSH_HEADS.values())
    lines = [f"| kernel | 指标 | 目标 | {heads} |", "|---|---|---:|" + "---:|" * len(FLUSH_HEADS)]
    for (subject, key), row in rows.items():
        cells = []
        for mode in FLUSH_HEADS:
            t = row.get(mode) or {}
            val = t.get("value")
            cells.append(DASH if val is None else f"{floor3(val)}（{_VERDICT[t.get('met')]}）")
        lines.append(f"| {_flush_subject(subject)} | {_target_label(key)} | ≥ {row['target']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _gemm_words(name: str) -> str:
    """``tuned rung4 8192^3`` -> ``调优后的第四级，8192³``; ``fp8 e4m3 4096^3`` -> ``fp8 e4m3 两级累加，4096³``."""
    m = re.match(r"(.*?)\s*(\d+)\^3(?: repeat (\d+))?$", name)
    if not m:
        return variant_words(name)
    head = {"tuned rung4": "调优后的第四级", "fp8 e4m3": "fp8 e4m3 两级累加",
            "fp8 e4m3 single-level": "fp8 e4m3 单级累加（教学版）", "tuned rung4 fp16": "调优后的第四级（fp16）",
            "tuned bf16": "调优后的第四级（bf16）"}.get(m.group(1), m.group(1))
    return f"{head}，{m.group(2)}³" + (f"，交替再测第 {m.group(3)} 遍" if m.group(3) else "")


def _fmt_err(x: Any, spec: str = ".2e") -> str:
    return DASH if x is None else format(x, spec)


#: Words for the parts of a GEMM variant's record name (``grouped concat G=8 N=4096 K=2048``).
_VARIANT_WORDS = (("grouped concat", "grouped，拼接式"), ("grouped ptr", "grouped，指针式"),
                  ("grouped ws padded", "grouped，手写流水、各组补齐到整块"),
                  ("batched scores Q@K^T", "batched，注意力分数 QKᵀ"), ("batched context P@V", "batched，注意力输出 PV"),
                  ("batched ws scores", "batched 手写流水，注意力分数 QKᵀ"),
                  ("batched ws context", "batched 手写流水，注意力输出 PV"),
                  ("split-K ws", "split-K 手写流水"), ("w4a16", "W4A16 反量化 GEMM"),
                  ("stream-K ws", "stream-K 手写流水"), ("full-wave 128x144", "128×144 块的整波切法，手写流水"),
                  ("stream-K", "stream-K"))
_BASELINE_WORDS = {"torch.matmul loop": "逐个专家调用 torch.matmul", "torch.bmm": "torch.bmm", "cuBLAS": "cuBLAS",
                   "torch.matmul loop (CUDA graph)": "CUDA graph 捕获的 torch.matmul 循环",
                   "cuBLAS fp16 weights": "cuBLAS（fp16 权重）", "cuBLAS bf16": "cuBLAS（bf16）",
                   "write C (zero_)": "只写输出（zero_）", "no-split": "同一 kernel 不切分",
                   "one dense GEMM, same rows": "同样行数的一个稠密 GEMM", "data-parallel": "数据并行切法"}


def variant_words(name: str) -> str:
    """A GEMM variant's record name in words: its kind, then the shape (``64×2048×2048×128``)."""
    for key, words in _VARIANT_WORDS:
        if name.startswith(key):
            rest = name[len(key):].strip()
            rest = re.sub(r"(\d+)x(?=\d)", r"\1×", rest)
            rest = re.sub(r"\bG=(\d+)", r"\1 个专家", rest).replace(" N=", "，N=").replace(" K=", "，K=")
            rest = rest.replace(" skewed", "，组大小悬殊").replace(" uniform", "，组大小相同")
            return f"{words}（{rest}）" if rest else words
    return re.sub(r"(\d+)x(?=\d)", r"\1×", name)


def variant_summary(results: dict | None, prefix: str, suite: str) -> str:
    """Grouped / batched rows: TFLOP/s and every speedup."""
    recs = [r for r in records(results, suite, prefix, kind="bench")]
    if not recs:
        return f"**{NO_RESULT}**"
    lines = ["| kernel | TFLOP/s | 时间 (µs) | 基线时间 (µs) | 相对基线 | 相对 Frobenius 误差 |", "|---|---:|---:|---:|---:|---:|"]
    for r in recs:
        for base, ms in (r.get("baselines") or {}).items():
            lines.append(f"| {variant_words(r['name'])} | {r.get('tflops', 0):.0f} | {r['ms'] * 1e3:.1f} | "
                         f"{ms * 1e3:.1f}（{_BASELINE_WORDS.get(base, base)}） | "
                         f"{(r.get('speedup') or {}).get(base, 0):.2f}× | {_fmt_err(r.get('rel_fro_err'))} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ chapter 1: what the records say
def _bench_by(results: dict | None, name: str) -> dict | None:
    return next((r for r in records(results, prefix=name, kind="bench") if r.get("name") == name), None)


def _instruction_record() -> dict | None:
    import json

    from measure.instructions import RECORD

    return json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.is_file() else None


def _pct(x: float) -> str:
    return f"{x:.0f}"


def sincos_values(results: dict | None = None) -> dict[str, str]:
    """Chapter 1's explanation of the fused ``sin(cos(x))``: instructions an element (CPU record of
    the generated code), the issue bound they imply on the ledger's machine, the copy time of the
    same bytes in the same run, and the claims these numbers choose (keys ``calc.pytorch.sincos.*``,
    ``derived.pytorch.sincos.*``, ``claim.pytorch.sincos.*``)."""
    from ledger import issue

    from coursebook import claims

    results = load() if results is None else results
    out: dict[str, str] = {}
    ins = _instruction_record()
    tl = _bench_by(results, "pytorch.sincos.tilelang")
    comp = _bench_by(results, "pytorch.sincos.compile")
    eager = _bench_by(results, "pytorch.sincos.eager")
    n = (ins or {}).get("shape", [4096, 4096])
    n = n[0] * n[1]
    per = issue_us = mufu_us = fast_us = None
    if ins:
        acc, fast = ins["accurate"]["sass"], ins["fast_math"]["sass"]
        per = acc["per_element"]
        cls = acc["by_class_per_element"]
        issue_us = issue.issue_bound_s(per, n) * 1e6
        fast_us = issue.issue_bound_s(fast["per_element"], n) * 1e6
        mufu = fast["by_class_per_element"].get("special function (MUFU)", 0)
        mufu_us = issue.unit_bound_s(mufu, n) * 1e6
        out.update({
            "calc.pytorch.sincos.sass_per_elem": f"{per:.1f}",
            "calc.pytorch.sincos.sass_per_thread": str(acc["per_thread"]),
            "calc.pytorch.sincos.ptx_per_elem": f"{ins['accurate']['ptx']['per_element']:.0f}",
            "calc.pytorch.sincos.fp32_per_elem": f"{cls.get('fp32 arithmetic', 0):.0f}",
            "calc.pytorch.sincos.int_per_elem": f"{cls.get('integer and logic', 0):.0f}",
            "calc.pytorch.sincos.conv_per_elem": f"{cls.get('conversion', 0):.1f}",
            "calc.pytorch.sincos.ctrl_per_elem": f"{cls.get('control', 0):.1f}",
            "calc.pytorch.sincos.ffma_per_elem": f"{acc['opcodes_per_thread'].get('FFMA', 0) / ins['elements_per_thread']:.0f}",
            "calc.pytorch.sincos.elems_per_thread": str(ins["elements_per_thread"]),
            "calc.pytorch.sincos.fast_sass_per_elem": f"{fast['per_element']:.1f}",
            "calc.pytorch.sincos.mufu_per_elem": f"{mufu:.0f}",
            "calc.pytorch.sincos.issue_us": f"{issue_us:.1f}",
            "calc.pytorch.sincos.fast_issue_us": f"{fast_us:.1f}",
            "calc.pytorch.sincos.mufu_us": f"{mufu_us:.1f}",
            "calc.pytorch.sincos.issue_tinst": f"{issue.issue_rate() / 1e12:.1f}",
            "calc.pytorch.sincos.clock_ghz": f"{issue.sm_clock_hz() / 1e9:.2f}",
            "calc.pytorch.sincos.nvcc": str(ins.get("nvcc")),
        })
    copy_us = None
    if tl and tl.get("copy_gbps") and tl.get("bytes"):
        copy_us = tl["bytes"] / (tl["copy_gbps"] * 1e9) * 1e6
        out["derived.pytorch.sincos.copy_us"] = f"{copy_us:.1f}"
    if copy_us and issue_us:
        out["derived.pytorch.sincos.max_pct"] = _pct(100 * copy_us / issue_us)
    if tl and issue_us:
        out["derived.pytorch.sincos.issue_share"] = _pct(100 * issue_us / (tl["ms"] * 1e3))
    if eager and tl:
        out["derived.pytorch.sincos.eager_over_fused"] = f"{eager['ms'] / tl['ms']:.2f}"
    if eager and eager.get("ledger_bytes") and tl and tl.get("ledger_bytes"):
        out["derived.pytorch.sincos.ledger_ratio"] = f"{eager['ledger_bytes'] / tl['ledger_bytes']:.0f}"
    out.update(claims.claim_values(
        claims.compare("claim.pytorch.sincos.bound", copy_us, issue_us,
                       lower="发射指令的时间比搬字节的时间还长：它受指令发射限制，而不是受带宽限制",
                       higher="搬字节的时间仍比发射指令长：它仍受带宽限制"),
        claims.compare("claim.pytorch.sincos.tl_vs_compile", (tl or {}).get("ms"), (comp or {}).get("ms"),
                       lower="比 torch.compile 生成的 kernel 略快", higher="比 torch.compile 生成的 kernel 略慢",
                       tie="与 torch.compile 生成的 kernel 相差不到百分之五", tol=0.05),
        claims.compare("claim.pytorch.sincos.eager_gain", (eager or {}).get("ms", 0) / (tl or {}).get("ms", 1)
                       if eager and tl else None, 2.0 * 0.9,
                       lower="远不到账本预言的两倍", higher="接近账本预言的两倍"),
        claims.compare("claim.pytorch.sincos.fast_math", mufu_us, copy_us,
                       lower="短于同样字节的拷贝时间，换成快速版本之后，这个 kernel 按推算会重新受带宽限制",
                       higher="仍长于同样字节的拷贝时间，换成快速版本也摆脱不了指令的限制"),
    ))
    return out


def layernorm_values(results: dict | None = None) -> dict[str, str]:
    """Chapter 1's LayerNorm comparison: each variant's share of copy bandwidth, the fastest one and
    how far the three-pass code sits from its own (three-pass) floor."""
    from coursebook import claims

    results = load() if results is None else results
    names = {"three_pass": "手写三趟", "F.layer_norm": "F.layer_norm", "compile": "torch.compile",
             "tilelang": "TileLang 融合版"}
    recs = {k: _bench_by(results, f"pytorch.layernorm.{k}") for k in names}
    out: dict[str, str] = {}
    timed = {k: r for k, r in recs.items() if r and r.get("ms")}
    if timed:
        order = sorted(timed, key=lambda k: timed[k]["ms"])
        out["derived.pytorch.ln.ranking"] = " < ".join(names[k] for k in order)
        out["derived.pytorch.ln.fastest"] = names[order[0]]
    tp = recs.get("three_pass")
    if tp and tp.get("ms"):
        from ledger import ops

        three = ops.layernorm(8192, 4096, dtype="fp16", passes=3) if "passes" in ops.layernorm.__code__.co_varnames \
            else None
        if three is not None:
            from ledger.cost import judge

            lb = judge(three, "h200-calibrated").lower_bound
            out["derived.pytorch.ln.three_pass_over_floor"] = f"{tp['ms'] * 1e-3 / lb:.1f}"
    f, t = recs.get("F.layer_norm"), recs.get("tilelang")
    out.update(claims.claim_values(
        claims.compare("claim.pytorch.ln.tl_vs_f", (t or {}).get("ms"), (f or {}).get("ms"),
                       lower="比 F.layer_norm 快", higher="比 F.layer_norm 慢", tie="与 F.layer_norm 相当", tol=0.03),
        claims.threshold("claim.pytorch.ln.f_near_floor", (f or {}).get("frac_copy_bw"), 0.8,
                         above="已经接近拷贝带宽", below="离拷贝带宽还远"),
    ))
    return out


def _launch_category(name: str) -> str:
    if name.startswith("nvjet") or "gemm" in name.lower() or "cutlass" in name.lower():
        return "gemm"
    if name.startswith(("Memset", "Memcpy")):
        return "mem"
    if name.startswith("triton_"):
        return "triton"
    return "aten"


def launch_breakdown(results: dict | None = None) -> dict | None:
    """Kernel launches of the recorded training step, eager vs compiled, by kind: cuBLAS GEMMs,
    memsets and copies, ATen kernels both runs share (the loss, outside the compiled module), the
    block's own ATen kernels (eager) and Inductor's Triton kernels (compiled); and the reductions
    Inductor split in two (a ``red`` and a ``per`` kernel over the same fused operators)."""
    results = load() if results is None else results
    recs = records(results, prefix="pytorch.inductor.kernels")
    if not recs:
        return None
    r = recs[-1]
    eager, comp = r.get("eager_kernels") or {}, r.get("compiled_kernels") or {}

    def tally(d):
        out = {"gemm": 0, "mem": 0, "shared": 0, "block": 0}
        for k, v in d.items():
            c = _launch_category(k)
            if c in ("gemm", "mem"):
                out[c] += v
            elif c == "aten" and k in eager and k in comp:
                out["shared"] += v
            else:
                out["block"] += v
        return out

    gen = [re.sub(r"^triton_(red|per|poi)_fused_(.*)_\d+$", r"\1 \2", g) for g in comp if g.startswith("triton_")]
    reds = {g.split(" ", 1)[1] for g in gen if g.startswith("red ")}
    pers = {g.split(" ", 1)[1] for g in gen if g.startswith("per ")}
    return {"eager": tally(eager), "compiled": tally(comp), "eager_total": sum(eager.values()),
            "compiled_total": sum(comp.values()), "split_reductions": sorted(reds & pers),
            "triton_kinds": len([g for g in comp if g.startswith("triton_")])}


def launch_table(results: dict | None = None) -> str:
    """Markdown: the launch breakdown of :func:`launch_breakdown` as a table."""
    b = launch_breakdown(results)
    if not b:
        return f"**{NO_RESULT}**"
    rows = (("cuBLAS 矩阵乘", "gemm"), ("显存清零与拷贝", "mem"), ("损失函数及其反向（在编译的模块之外，两边相同）", "shared"),
            ("模型块自身的逐元素与归约 kernel", "block"))
    lines = ["| kernel 种类 | eager | torch.compile |", "|---|---:|---:|"]
    for label, k in rows:
        lines.append(f"| {label} | {b['eager'][k]} | {b['compiled'][k]} |")
    lines.append(f"| 合计 | {b['eager_total']} | {b['compiled_total']} |")
    return "\n".join(lines)


def launch_values(results: dict | None = None) -> dict[str, str]:
    """Texts and claims of the launch breakdown (``derived.pytorch.launch.*``, ``claim.pytorch.launch.*``)."""
    from coursebook import claims

    b = launch_breakdown(results)
    out = {}
    if b:
        out.update({
            "derived.pytorch.launch.eager": str(b["eager_total"]),
            "derived.pytorch.launch.compiled": str(b["compiled_total"]),
            "derived.pytorch.launch.block_eager": str(b["eager"]["block"]),
            "derived.pytorch.launch.block_compiled": str(b["compiled"]["block"]),
            "derived.pytorch.launch.split": str(len(b["split_reductions"])),
            "derived.pytorch.launch.split_example": (b["split_reductions"] or ["—"])[0],
        })
    tot = (b["compiled_total"], b["eager_total"]) if b else (None, None)
    blk = (b["compiled"]["block"], b["eager"]["block"]) if b else (None, None)
    out.update(claims.claim_values(
        claims.compare("claim.pytorch.launch.total", *tot,
                       lower="比 eager 的 {b} 次少，与常见说法“编译就是把 kernel 合并成更少的 kernel”相符；"
                             "不过按种类分开数就会看到，少掉的未必都来自合并",
                       higher="反而比 eager 的 {b} 次多。常见说法是“编译就是把 kernel 合并成更少的 kernel”，"
                              "在这里并不成立",
                       tie="与 eager 的 {b} 次一样多，并没有因为编译而减少", tol=1e-9),
        claims.compare("claim.pytorch.launch.block", *blk, lower="少于", higher="多于", tie="等于", tol=1e-9),
    ))
    return out


def sincos_bounds_figure(results: dict | None = None):
    """Horizontal bars: the copy time of the fused kernel's bytes (same run), the issue bound of its
    instructions, and the measured times of the fused and eager variants."""
    vals = sincos_values(results)
    results = load() if results is None else results
    fig = figure(8.2, 3.4)
    ax = fig.add_subplot(1, 1, 1)
    rows = []
    if "derived.pytorch.sincos.copy_us" in vals:
        rows.append(("拷贝同样字节（同一次运行）", float(vals["derived.pytorch.sincos.copy_us"]), _C["memory"]))
    if "calc.pytorch.sincos.issue_us" in vals:
        rows.append(("发射全部指令（标定的发射速率）", float(vals["calc.pytorch.sincos.issue_us"]), _C["compute"]))
    for name, label in (("pytorch.sincos.tilelang", "实测：TileLang 融合 kernel"),
                        ("pytorch.sincos.compile", "实测：torch.compile 融合 kernel"),
                        ("pytorch.sincos.eager", "实测：eager 两个 kernel")):
        r = _bench_by(results, name)
        if r and r.get("ms"):
            rows.append((label, r["ms"] * 1e3, _C["datasheet"]))
    if not rows:
        ax.set_axis_off()
        ax.text(0.5, 0.5, NO_RESULT, ha="center", va="center")
        return fig
    y = list(range(len(rows)))
    ax.barh(y, [r[1] for r in rows], color=[r[2] for r in rows], height=0.6)
    for i, (_, v, _c) in enumerate(rows):
        ax.text(v * 1.01, i, f"{v:.1f} µs", va="center", fontsize=8.5)
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, max(r[1] for r in rows) * 1.18)
    ax.set_xlabel("时间 (µs)，4096×4096 fp16")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ the performance-model chapter: carver on the GPU
def _tile(t) -> str:
    return "×".join(map(str, t))


def _carver_record(results: dict | None) -> tuple[dict, list[dict], dict]:
    """(the recorded notes by name, the timed hints with TFLOP/s, the device model's fields)."""
    notes = {r["name"]: r for r in records(results, "carver", kind="note")}
    bench = [r for r in records(results, "carver", kind="bench") if r.get("tflops")]
    dev = (notes.get("carver device model") or {}).get("fields") or {}
    return notes, bench, dev


def _first_difference(a: list, b: list) -> int | None:
    """1-based rank where two rankings first differ over their common length (None: they agree)."""
    return next((i for i, (x, y) in enumerate(zip(a, b), 1) if list(x) != list(y)), None)


def carver_live_comparison(results: dict | None = None) -> dict:
    """Run carver on the CPU (:mod:`measure.carver`, no GPU, no compile) and lay its rankings beside
    the recorded GPU run's.

    Returns the tiles of: the recorded GPU hints (``record``) with the recorded device model's shared
    memory per block (``record_smem``); the hand-built model's hints on the default path (``plain``)
    and on the tensor-core path (``cpu``) with its shared memory (``cpu_smem``); ``ledger.carver``'s
    walk for the hand-built model, read as the installed carver reads registers (``cpu_ledger``);
    and, when a record exists, carver and the ledger again with the hand-built model's shared memory
    set to the recorded one (``at_record_smem``, ``ledger_at_record_smem``) with the ledger's priority
    of each recorded hint (``record_priorities``)."""
    from measure import carver as cr

    results = load() if results is None else results
    notes, _bench_recs, dev = _carver_record(results)
    arch = cr.hand_built_arch()
    hints = (notes.get("carver hints") or {}).get("hints") or []
    plain, tc = cr.recommend(arch), cr.recommend(arch, tensor_core_path=True)
    walk = cr.ledger_view(arch)
    cmp = cr.compare(tc, walk)
    out = {"record": [list(h["block"]) for h in hints], "record_smem": dev.get("smem_cap"),
           "plain": [h["block"] for h in plain], "cpu": [h["block"] for h in tc],
           "plain_hints": plain, "cpu_hints": tc, "cpu_priorities": cmp["ledger_priority"],
           "cpu_tie_groups": cmp["tie_groups"], "cpu_smem": int(arch.smem_cap),
           "cpu_ledger": [list(e.tile) for e in walk.ranked],
           "at_record_smem": None, "ledger_at_record_smem": None, "record_priorities": None}
    if hints and dev.get("smem_cap"):
        rec_arch = cr.hand_built_arch(smem_cap=int(dev["smem_cap"]), sms=int(dev.get("compute_max_core") or arch.compute_max_core))
        walk = cr.ledger_view(rec_arch)
        prio = {tuple(e.tile): e.priority for e in walk.ranked}
        out.update({"at_record_smem": [h["block"] for h in cr.recommend(rec_arch, tensor_core_path=True)],
                    "ledger_at_record_smem": [list(e.tile) for e in walk.ranked],
                    "record_priorities": [prio.get(tuple(t)) for t in out["record"]]})
    return out


def carver_ranking_values(comparison: dict | None, results: dict | None = None) -> dict[str, str]:
    """What the comparison of :func:`carver_live_comparison` says, as glue texts
    (``perfmodel.hw.carver.*``) and claims chosen by it (``claim.perfmodel.carver.*``): whether the
    CPU's two paths and the ledger give carver's order; whether the recorded GPU ranking is the CPU
    table's, and if not whether the recorded shared-memory limit alone explains it; how close the
    timed hints' priorities are and how far apart their speeds.  ``None``: every value unknown."""
    from coursebook import claims

    results = load() if results is None else results
    c = comparison or {}
    _notes, bench, _dev = _carver_record(results)
    keys = ("cpu_smem_kb", "cpu_top", "book_top_rank", "rec_top", "rec_smem_kb", "n_compared",
            "prio_spread_pct", "speed_spread", "best_pct_cublas", "tie_pairs", "plain_uses_tc")
    out = {f"perfmodel.hw.carver.{k}": DASH for k in keys}
    if c.get("cpu_tie_groups") is not None:
        out["perfmodel.hw.carver.tie_pairs"] = str(len(c["cpu_tie_groups"]))
    if c.get("plain_hints"):
        out["perfmodel.hw.carver.plain_uses_tc"] = "是" if any(h["use_tc"] for h in c["plain_hints"]) else "否"
    cpu, rec, plain, led = c.get("cpu") or [], c.get("record") or [], c.get("plain") or [], c.get("cpu_ledger") or []
    at_cap = c.get("at_record_smem") or []
    if c.get("cpu_smem"):
        out["perfmodel.hw.carver.cpu_smem_kb"] = str(c["cpu_smem"] // 1024)
    if c.get("record_smem"):
        out["perfmodel.hw.carver.rec_smem_kb"] = str(c["record_smem"] // 1024)
    if cpu:
        out["perfmodel.hw.carver.cpu_top"] = _tile(cpu[0])
    if rec:
        out["perfmodel.hw.carver.rec_top"] = _tile(rec[0])
        out["perfmodel.hw.carver.n_compared"] = str(min(len(rec), len(cpu)) if cpu else len(rec))
    from ledger.carver import book_walk

    book_top = list(book_walk().ranked[0].tile)
    if cpu and book_top in [list(t) for t in cpu]:
        out["perfmodel.hw.carver.book_top_rank"] = str([list(t) for t in cpu].index(book_top) + 1)
    prios = [p for p in (c.get("record_priorities") or [])[:len(bench)] if p]
    timed = sorted(bench, key=lambda b: b.get("carver_rank", 99))
    if len(prios) == len(timed) >= 2:
        out["perfmodel.hw.carver.prio_spread_pct"] = f"{100 * (max(prios) / min(prios) - 1):.0f}"
        tf = [b["tflops"] for b in timed]
        out["perfmodel.hw.carver.speed_spread"] = f"{max(tf) / min(tf):.1f}"
    if bench:
        cublas_ms = min((b.get("baselines") or {}).get("cuBLAS", float("inf")) for b in bench)
        if math.isfinite(cublas_ms):
            cublas_tf = bench[0]["flops"] / (cublas_ms * 1e-3) / 1e12
            out["perfmodel.hw.carver.best_pct_cublas"] = f"{100 * max(b['tflops'] for b in bench) / cublas_tf:.0f}"

    def diff(a, b):
        return None if not a or not b else ("same" if _first_difference(a, b) is None else "differ")

    # where the CPU model's first hint (the very same hint: tile, warps, block_K, stages, rasterization) was timed
    cpu_first = (c.get("cpu_hints") or [None])[0]
    timed_same = next((b for b in timed if cpu_first is not None and b.get("hint") == cpu_first), None)
    best_b = max(timed, key=lambda b: b["tflops"]) if timed else None
    first_case = (None if cpu_first is None or not timed else
                  "same_first" if rec and list(cpu_first["block"]) == list(rec[0]) else
                  "untimed" if timed_same is None else "best" if timed_same is best_b else "timed")
    ctf = DASH if timed_same is None else f"{timed_same['tflops']:.0f}"
    n = out["perfmodel.hw.carver.n_compared"]
    book_case = None if not cpu else ("absent" if out["perfmodel.hw.carver.book_top_rank"] == DASH else
                                      "same" if out["perfmodel.hw.carver.book_top_rank"] == "1" else "moved")
    paths = diff(plain, cpu)
    vs_led = diff(cpu, led)
    vs_rec = diff(rec, cpu)
    if vs_rec == "differ":
        vs_rec = "differ_smem" if at_cap and _first_difference(rec, at_cap) is None else "differ_other"
    rec_led = diff(rec, c.get("ledger_at_record_smem") or [])
    fd = {"paths": _first_difference(plain, cpu), "led": _first_difference(cpu, led),
          "rec_led": _first_difference(rec, c.get("ledger_at_record_smem") or [])}
    out.update(claims.claim_values(
        claims.choose("claim.perfmodel.carver.paths", paths,
                      {"same": "两条路给出的 block 顺序完全一样，差别只在 block_K 和附带的 warp 分块、流水级数、"
                               "光栅化这些“排序之后再填”的字段上",
                       "differ": "两条路给出的 block 顺序从第 {r} 名起就不同了"}, r=fd["paths"]),
        claims.choose("claim.perfmodel.carver.book_top", book_case,
                      {"moved": "前面按 fp32 累加器复算的榜首 {tile} 在这里排第 {rank} 名：这正是前面说的第二件事，"
                                "寄存器按哪种位宽算，排序就跟着变",
                       "same": "前面按 fp32 累加器复算的榜首 {tile} 在这里同样排第一：对这个问题，"
                               "寄存器按哪种位宽算没有改变榜首",
                       "absent": "前面按 fp32 累加器复算的榜首 {tile} 不在这里的前 {n} 名里：寄存器按哪种位宽算，"
                                 "排序就跟着变"},
                      tile=_tile(book_top), rank=out["perfmodel.hw.carver.book_top_rank"], n=len(cpu)),
        claims.choose("claim.perfmodel.carver.cpu_vs_ledger", vs_led,
                      {"same": "逐名次一致", "differ": "从第 {r} 名起不同"}, r=fd["led"]),
        claims.choose(
            "claim.perfmodel.carver.record_vs_cpu", vs_rec,
            {"same": "记录里的前 {n} 名与上面 CPU 表的排序逐名次一致：这个上限对这组候选没有影响",
             "differ_smem": "这个上限改变了排序：上面按 {cpu_kb} KB 填写的 CPU 模型把 {cpu_top} 排在第一，"
                            "记录里排第一的是 {rec_top}；在 CPU 上把上限改成记录里的 "
                            "{rec_kb} KB 重跑 carver，前 {n} 名与记录逐名次一致，可见差别全部来自这一个字段",
             "differ_other": "记录里的排序与上面 CPU 表从第 {r} 名起不同，而且把 CPU 模型的上限改成记录里的 "
                             "{rec_kb} KB 重跑也对不上：这份记录出自较早版本的 carver 或设备模型，"
                             "下面的名次只能当作那一版的结果来读"},
            n=n, r=_first_difference(rec, cpu), cpu_kb=out["perfmodel.hw.carver.cpu_smem_kb"], rec_kb=out["perfmodel.hw.carver.rec_smem_kb"],
            cpu_top=out["perfmodel.hw.carver.cpu_top"], rec_top=out["perfmodel.hw.carver.rec_top"]),
        claims.choose(
            "claim.perfmodel.carver.cpu_first", first_case,
            {"same_first": "上面按 {cpu_kb} KB 填写的模型排第一的也是 {ctile}。",
             "best": "换成上面按 {cpu_kb} KB 填写的模型，排第一的提示（{ctile}，block_K、warp 分块、流水级数都相同）"
                     "正是记录里计时最快的第 {crank} 名；可即便是它，也只有同形状 cuBLAS 的 {pct}%。",
             "timed": "换成上面按 {cpu_kb} KB 填写的模型，排第一的提示（{ctile}）就是记录里计时的第 {crank} 名，"
                      "{ctf} TFLOP/s，也不是计时里最快的。",
             "untimed": "换成上面按 {cpu_kb} KB 填写的模型，排第一的提示（{ctile}）在记录里没有计时，"
                        "它跑多快要等重新记录才知道。"},
            cpu_kb=out["perfmodel.hw.carver.cpu_smem_kb"], ctile=DASH if cpu_first is None else _tile(cpu_first["block"]),
            crank=DASH if timed_same is None else timed_same.get("carver_rank"), ctf=ctf,
            pct=out["perfmodel.hw.carver.best_pct_cublas"]),
        claims.choose("claim.perfmodel.carver.record_vs_ledger", rec_led,
                      {"same": "逐名次一致", "differ": "从第 {r} 名起不同"}, r=fd["rec_led"]),
    ))
    return out


def carver_cpu_table(comparison: dict, top: int = 8) -> str:
    """Markdown: carver's first ``top`` hints on the CPU's hand-built model -- the tile, warp tiling,
    block_K on the tensor-core path and on the default path carver silently falls back to, stages,
    rasterization and the ledger's priority of the tile -- from :func:`carver_live_comparison`."""
    rows = []
    for i, (p_, t_, pr) in enumerate(zip(comparison["plain_hints"], comparison["cpu_hints"],
                                         comparison["cpu_priorities"]), 1):
        if i > top:
            break
        rows.append({"rank": i, "block": _tile(t_["block"]), "warp": _tile(t_["warp"] or []),
                     "rstep_tc": t_["rstep"][0], "rstep_plain": p_["rstep"][0], "stages": t_["pipeline_stage"],
                     "raster": f"{'按列' if t_['raster_order'] == 'column' else '按行'} / {t_['raster_panel']}",
                     "prio": DASH if pr is None else f"{pr:.0f}"})
    return md_table(rows, ["rank", "block", "warp", "rstep_tc", "rstep_plain", "stages", "raster", "prio"],
                    ["名次", "block", "warp 分块", "block_K（张量核策略）", "block_K（退回的默认策略）",
                     "流水级数", "光栅化（方向 / 面板宽）", "账本复算的优先级"])


def carver_values(results: dict | None = None) -> dict[str, str]:
    """The recorded carver run (``perfmodel.hw.carver.*``): the device model's shared memory, how many
    hints were timed, the first hint's and the fastest hint's tile and TFLOP/s, the slowest, cuBLAS;
    claims chosen by them (is the first hint the fastest; the anti-pattern of the summary)."""
    from coursebook import claims

    results = load() if results is None else results
    keys = ("gpu_smem_kb", "n_timed", "first_tile", "first_tflops", "best_rank", "best_tile", "best_tflops",
            "worst_tflops", "cublas_tflops")
    out = {f"perfmodel.hw.carver.{k}": DASH for k in keys}
    _notes, bench, dev = _carver_record(results)
    if dev.get("smem_cap"):
        out["perfmodel.hw.carver.gpu_smem_kb"] = str(dev["smem_cap"] // 1024)
    first = best = None
    pct = DASH
    if bench:
        by_rank = sorted(bench, key=lambda b: b.get("carver_rank", 99))
        first, best = by_rank[0], max(bench, key=lambda b: b["tflops"])
        cublas_ms = min((b.get("baselines") or {}).get("cuBLAS", float("inf")) for b in bench)
        cublas_tf = first["flops"] / (cublas_ms * 1e-3) / 1e12
        out.update({
            "perfmodel.hw.carver.n_timed": str(len(bench)),
            "perfmodel.hw.carver.first_tile": _tile(first["hint"]["block"]),
            "perfmodel.hw.carver.first_tflops": f"{first['tflops']:.0f}",
            "perfmodel.hw.carver.best_rank": str(best.get("carver_rank")),
            "perfmodel.hw.carver.best_tile": _tile(best["hint"]["block"]),
            "perfmodel.hw.carver.best_tflops": f"{best['tflops']:.0f}",
            "perfmodel.hw.carver.worst_tflops": f"{min(b['tflops'] for b in bench):.0f}",
            "perfmodel.hw.carver.cublas_tflops": f"{cublas_tf:.0f}",
        })
        pct = f"{100 * best['tflops'] / cublas_tf:.0f}"
    case = None if not bench else ("first_best" if first is best else "other_best")
    lose = None if not bench else ("lose" if first["tflops"] < 0.8 * best["tflops"] else "close")
    v = dict(tile=out["perfmodel.hw.carver.first_tile"], tf=out["perfmodel.hw.carver.first_tflops"],
             rank=out["perfmodel.hw.carver.best_rank"], btile=out["perfmodel.hw.carver.best_tile"],
             btf=out["perfmodel.hw.carver.best_tflops"], n=out["perfmodel.hw.carver.n_timed"],
             kb=out["perfmodel.hw.carver.gpu_smem_kb"], cublas=out["perfmodel.hw.carver.cublas_tflops"], pct=pct)
    out.update(claims.claim_values(
        claims.choose(
            "claim.perfmodel.carver.first", case,
            {"first_best": "排第一的 {tile} 同时也是实测最快的一名，{tf} TFLOP/s",
             "other_best": "排第一的 {tile} 只跑到 {tf} TFLOP/s；最快的反而是第 {rank} 名 {btile}，{btf} TFLOP/s"}, **v),
        claims.choose(
            "claim.perfmodel.carver.verdict", lose,
            {"lose": "把它的第一名直接当答案，会在这个例子里丢掉一大截性能。",
             "close": "这一次它的第一名与计时里最快的一名相差不大，可两者离 cuBLAS 都还远。"}, **v),
        claims.choose(
            "claim.perfmodel.carver.antipattern", case,
            {"other_best": "按记录时的设备模型（单 block shared memory 上限 {kb} KB），carver 排第一的 {tile} 在 H200 上"
                           "只有 {tf} TFLOP/s，计时的 {n} 名里最快的是第 {rank} 名 {btile}，{btf} TFLOP/s；"
                           "就连它也只有同形状 cuBLAS 的 {pct}%。",
             "first_best": "carver 排第一的 {tile} 在计时的 {n} 名里最快，{tf} TFLOP/s，也只有同形状 cuBLAS"
                           "（{cublas} TFLOP/s）的 {pct}%：第一名是测量的起点，不是答案。"}, **v),
    ))
    return out


def carver_table(results: dict | None = None, comparison: dict | None = None) -> str:
    """Markdown: the recorded carver run -- the device model it was made with (its shared memory per
    block beside the CPU model's), how its ranking compares with the CPU's and the ledger's today
    (``comparison``: :func:`carver_live_comparison`; without it no comparison is shown), and each
    timed hint (rank, tile, time, TFLOP/s, cuBLAS on the same shape), in Chinese."""
    results = load() if results is None else results
    notes, _b, dev = _carver_record(results)
    bench = sorted((r for r in records(results, "carver", kind="bench")), key=lambda b: b.get("carver_rank", 99))
    if not notes and not bench:
        return f"**{NO_RESULT}**：H200 上的 carver 运行还没有记录。"
    v = carver_ranking_values(comparison, results) if comparison else {}
    lines = [f"*{_provenance_line(results, 'carver')}*", ""]
    if dev:
        cpu_kb = v.get("perfmodel.hw.carver.cpu_smem_kb", DASH)
        also = "" if cpu_kb == DASH else f"（上面的 CPU 表按 {cpu_kb} KB 填写）"
        lines.append(f"- 记录所用的设备模型：{dev.get('name', '?')}，{dev.get('compute_max_core', '?')} 个 SM，计算能力 "
                     f"{dev.get('compute_capability', '?')}，单 block shared memory 上限 {dev.get('smem_cap', 0) // 1024} KB{also}。")
    if v:
        lines.append(f"- 与账本按同一设备模型复算的排序：{v['claim.perfmodel.carver.record_vs_ledger']}。")
        lines.append(f"- 与上面 CPU 表的排序：{_first_diff_words(comparison.get('record'), comparison.get('cpu'))}；"
                     f"在 CPU 上按记录的上限重跑：{_first_diff_words(comparison.get('record'), comparison.get('at_record_smem'))}。")
    if bench:
        lines += ["", md_table([{"rank": b.get("carver_rank"), "tile": _tile(b["hint"]["block"]),
                                 "us": b["ms"] * 1e3, "tf": b.get("tflops"),
                                 "cublas": (b.get("baselines") or {}).get("cuBLAS", 0) * 1e3} for b in bench],
                               ["rank", "tile", "us", "tf", "cublas"],
                               ["carver 名次（记录时）", "输出分块", "时间 (µs)", "TFLOP/s", "同形状 cuBLAS (µs)"])]
    return "\n".join(lines)


def _first_diff_words(a: list | None, b: list | None) -> str:
    if not a or not b:
        return "无从比较"
    r = _first_difference(a, b)
    return f"前 {min(len(a), len(b))} 名逐名次一致" if r is None else f"从第 {r} 名起不同"
