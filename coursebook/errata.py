"""Errata and misreadings from the ledger's registry, as tables: what the draft printed, what
the ledger computes, and why they differ (never typed here)."""
from __future__ import annotations

__all__ = ["errata_table", "errata_reasons_table", "misreading_rows", "erratum_rows", "departures_table",
           "sources_table"]


def errata_table(prefix: str = "elementwise") -> str:
    """Markdown table of the ledger's errata for a chapter (draft value, ours, reading)."""
    from ledger.errata import errata

    rows = [e for e in errata() if e.key.startswith(prefix + ".")]
    if not rows:
        return "（账本没有登记本章的勘误。）"
    lines = ["| 键 | 草稿值 | 账本值 | 按草稿假设复算 | 单位 |", "|---|---:|---:|---:|---|"]
    for e in rows:
        lines.append(f"| `{e.figure}` | {e.draft} | {e.ours} | {e.draft_reading} | {e.unit} |")
    return "\n".join(lines)


def errata_reasons_table(prefix: str = "gemm.") -> str:
    """Errata the ledger records for this chapter's draft figures (computed, never typed)."""
    from ledger.errata import errata

    mine = [e for e in errata() if e.key.startswith(prefix)]
    if not mine:
        return ("账本目前没有登记本章的勘误：草稿里出现的 GEMM 数字（字节下界、朴素版读量、片上预算、"
                "平衡点与交点边长）都能由 `ledger.gemm` 与 `ledger.tiles` 按同一套记账规则复现。"
                "一旦某个数复现不了，它会出现在这里，连同草稿的值、账本的值和原因。")
    lines = ["| 键 | 草稿的值 | 账本的值 | 原因 |", "|---|---:|---:|---|"]
    for e in mine:
        lines.append(f"| `{e.figure}` | {e.draft} {e.unit} | {e.ours} {e.unit} | {e.why} |")
    return "\n".join(lines)


def misreading_rows() -> list[dict]:
    """M1-M8, each with its two readings and the factor between them (all from the registry)."""
    from ledger.figures import collect

    f = {k: v.text for k, v in collect().items() if k.startswith("perfmodel.")}
    return [
        {"m": "M1", "what": "把规格峰值当成能达到的峰值", "wrong": f"{f['perfmodel.m1.datasheet_tflops']} TFLOP/s",
         "right": f"{f['perfmodel.m1.calibrated_tflops']} TFLOP/s", "gap": f"{f['perfmodel.m1.factor']}×"},
        {"m": "M2", "what": "用张量核的天花板给逐元素算子定价", "wrong": f"平衡点 {f['perfmodel.m2.tensor_balance']}",
         "right": f"平衡点 {f['perfmodel.m2.cuda_balance']}", "gap": f"{f['perfmodel.m2.ratio']}×"},
        {"m": "M3", "what": "按输入 dtype 声明天花板", "wrong": f"fp8 平衡点 {f['perfmodel.m3.tensor_core_fp8']}",
         "right": f"fp16 {f['perfmodel.m3.tensor_core_fp16']} / fp32 {f['perfmodel.m3.cuda_core_fp32']}", "gap": "三块天花板"},
        {"m": "M4", "what": "拿拆分版的算术强度评判融合版", "wrong": f"{f['perfmodel.m4.split_mb']} MB，算术强度 {f['perfmodel.m4.split_ai']}",
         "right": f"{f['perfmodel.m4.fused_mb']} MB，算术强度 {f['perfmodel.m4.fused_ai']}", "gap": f"{f['perfmodel.m4.ratio']}×"},
        {"m": "M5", "what": "超越函数按 1 FLOP 计成本", "wrong": f"{f['perfmodel.m5.softmax_flat_kcycles']} k cycle",
         "right": f"{f['perfmodel.m5.softmax_weighted_kcycles']} k cycle", "gap": f"{f['perfmodel.m5.softmax_ratio']}×"},
        {"m": "M6", "what": "只数 payload，不数查表", "wrong": f"查表 {f['perfmodel.m6.ideal_lookup_mb']} MB（{f['perfmodel.m6.ideal_share_pct']}%）",
         "right": f"设计 A 查表 {f['perfmodel.m6.a_lookup_mb']} MB（{f['perfmodel.m6.a_share_pct']}%）", "gap": "被反复读"},
        {"m": "M7", "what": "在延迟主导的尺度上读效率", "wrong": f"decode 下界 {f['perfmodel.m7.decode_sol_ns']} ns",
         "right": f"prefill 下界 {f['perfmodel.m7.prefill_sol_us']} µs", "gap": "模型失去抓手"},
        {"m": "M8", "what": "把超过 100% 的效率当成好 kernel", "wrong": f"漏掉 scale {f['perfmodel.m8.scale_mb']} MB",
         "right": f"＞{f['perfmodel.m8.anomaly_pct']}% 即公式错误", "gap": f"{f['perfmodel.m8.scale_share_pct']}%"},
    ]


def erratum_rows() -> list[dict]:
    """Every ``perfmodel.erratum.*`` figure: the ledger's value and the recorded reason."""
    from ledger.figures import collect

    out = []
    for k, v in collect().items():
        if not k.startswith("perfmodel.erratum."):
            continue
        why = v.conditions.split(" (the installed carver")[0]  # carver rows: keep "draft printed N; ours M"
        out.append({"key": k, "ours": f"{v.text} {v.unit}".strip(), "why": why})
    return out


def departures_table() -> str:
    """Markdown: every erratum the registry holds (``ledger.errata.listed``) -- where the course
    departs from its source material: the key, the source's value, the ledger's, and why."""
    from ledger.errata import listed

    lines = ["| 勘误 | 素材里的值 | 账本的值 | 原因 |", "|---|---:|---:|---|"]
    for e in listed():
        draft = "—" if e.draft is None else f"{e.draft} {e.unit}".strip()
        why = str(e.why).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{e.key}` | {draft} | {e.text} {e.unit} | {why} |")
    return "\n".join(lines)


def sources_table(landing: str, prefixes: tuple[str, ...]) -> str:
    """Markdown: every registry figure the pages of a chapter glue, grouped by where it comes from
    (the function that computes it, or the cited source), in order of first use; each group lists
    its keys with value and unit, and the distinct conditions they hold under."""
    from ledger.figures import collect

    from coursebook.glue import glued_keys
    from coursebook.pagecheck import chapter_pages

    keys: list[str] = []
    for page in chapter_pages(landing):
        keys += [k for k in glued_keys(page, prefixes) if k not in keys]
    if not keys:
        return "（本章没有粘贴账本数字。）"
    figs = collect()
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for k in keys:
        f = figs[k]
        items, conds = groups.setdefault(f.source, ([], []))
        items.append(f"`{k}` = {f.text} {f.unit}".rstrip())
        if (f.conditions or "—") not in conds:
            conds.append(f.conditions or "—")
    lines = ["| 出处 source | 键 = 数值 | 条件 conditions |", "|---|---|---|"]
    for src, (items, conds) in groups.items():
        lines.append(f"| `{src}` | {'；'.join(items)} | {'；'.join(conds).replace('|', chr(92) + '|')} |")
    return "\n".join(lines)
