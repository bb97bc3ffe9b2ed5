"""The recorded Ascend lowering (``measure/results/ascend/``) as the values a page glues."""
from __future__ import annotations

__all__ = ["ascend_values", "asc_excerpt", "surface_table", "surface_words", "kind_words", "lowering_table",
           "probe_table", "PROBES"]


def ascend_values() -> dict[str, str]:
    """Facts of the recorded Ascend RMSNorm lowering (measure/results/ascend/index.json): ``derived.elementwise.ascend.*``."""
    import json

    from measure.ascend import RESULTS_DIR

    idx = RESULTS_DIR / "index.json"
    d = json.loads(idx.read_text(encoding="utf-8"))
    r = d["kernels"]["rmsnorm"]
    sh = r["shape"]
    return {
        "derived.elementwise.ascend.label": d["label"],
        "derived.elementwise.ascend.date": d["date"],
        "derived.elementwise.ascend.tilelang": d["tilelang_version"],
        "derived.elementwise.ascend.rows": str(sh["rows_per_tile"]),
        "derived.elementwise.ascend.budget_kib": f"{sh['ub_budget_bytes'] / 1024:.0f}",
        "derived.elementwise.ascend.used_kib": f"{sh['ub_used_bytes'] / 1024:.0f}",
        "derived.elementwise.ascend.x_versions": str(r["buffer_versions"]["x_ub"]),
        "derived.elementwise.ascend.notify": str(r["sync"]["asc_sync_notify"]),
        "derived.elementwise.ascend.syncthreads": str(r["sync"]["asc_syncthreads"]),
        "derived.elementwise.ascend.passes": str(len(r["pass_order"])),
        "derived.elementwise.ascend.kind": r["kernel_kind"],
        "derived.elementwise.ascend.stopped": r["stopped_at"],
    }


#: The lines of the recorded AscendC that carry the page's claims (the DMA, the reduction, the loop).
ASC_LINES = ("lowered on the CPU", "AscendAllReduce", "asc_copy_gm2ub_align", "asc_vf_call", "asc_copy_ub2gm_align",
             "for (int32_t step")


def asc_excerpt(kernel: str = "rmsnorm", tokens: tuple[str, ...] = ASC_LINES, width: int = 160):
    """The lines of the recorded AscendC of ``kernel`` that hold one of ``tokens``, as a C++ block."""
    from IPython.display import Markdown

    from measure.ascend import RESULTS_DIR

    src = (RESULTS_DIR / f"{kernel}.asc").read_text(encoding="utf-8").splitlines()
    keep = [ln.strip()[:width] for ln in src if any(t in ln for t in tokens)]
    return Markdown("```cpp\n" + "\n".join(keep) + "\n```")


#: The audit's expected and observed values (:mod:`kernels.ascend.surface`, English there) in Chinese;
#: an exception's class name stays, since it is the evidence.
_ZH = {"exists": "存在", "missing": "不存在", "no threads parameter": "没有 threads 参数", "has threads": "有 threads 参数",
       "ValueError (1-D core grid)": "报 ValueError：核网格只能是一维", "ValueError": "报 ValueError",
       "accepted": "接受", "normalises to an Ascend Target": "规范化为昇腾目标", "yes": "是", "no": "否",
       "shared.dyn": "`shared.dyn`", "__ubuf__ (UB)": "`__ubuf__`（落在 UB 上）", "__ubuf__": "`__ubuf__`",
       "other": "别的存储", "asc_copy_gm2ub*": "`asc_copy_gm2ub*` 一类", "asc_copy_gm2ub": "`asc_copy_gm2ub`",
       "?": "没找到"}


def surface_words(value: str) -> str:
    """One expected or observed value of the surface audit in Chinese (an unknown one as it is, in code font)."""
    return _ZH.get(value, f"`{value}`")

#: The surface the elementwise chapter compares: trunk names, and the adapter's names that trunk lacks.
SURFACE = ("alloc_ub", "tile", "Scope", "TL_ASCEND_AUTO_SYNC", "SimtVF", "alloc_shared", "Pipelined", "reduce_sum")


def surface_table(names: tuple[str, ...] = SURFACE):
    """Which names the installed Ascend dialect has (no lowering): expected, observed, agree."""
    from IPython.display import Markdown

    from kernels.ascend import surface

    rows = [f for f in surface.audit(lower=False)
            if f.item.split(".")[-1].split("(")[0] in names or f.item.startswith("T.Kernel")]
    lines = ["| 条目 | 预期 | 实际 | 一致 |", "|---|---|---|---|"]
    lines += [f"| `{f.item}` | {surface_words(f.expected)} | {surface_words(f.observed)} | "
              f"{'是' if f.ok else '**否**'} |" for f in rows]
    return Markdown("\n".join(lines))


#: The audit's rows that lower a kernel (the elementwise chapter's table checks names only).
PROBES = ("alloc_shared in AscendC", "T.copy GM->shared in AscendC")
_PROBE_ZH = {"alloc_shared in AscendC": "`T.alloc_shared` 在生成的 AscendC 里的存储限定符",
             "T.copy GM->shared in AscendC": "`T.copy` 从 GM 到 `alloc_shared` 缓冲区生成的搬运调用"}


def probe_table(findings) -> str:
    """Markdown: the rows of :func:`kernels.ascend.surface.audit` that lower a probe kernel
    (:data:`PROBES`), in Chinese; the name-only rows are the elementwise chapter's table."""
    lines = ["| 检查 | 预期 | 实际 | 一致 |", "|---|---|---|---|"]
    rows = [f for f in findings if f.item in PROBES]
    if len(rows) != len(PROBES):
        raise ValueError(f"the audit has no lowering probe rows {PROBES}: was it run with lower=False?")
    lines += [f"| {_PROBE_ZH[f.item]} | {surface_words(f.expected)} | {surface_words(f.observed)} | "
              f"{'是' if f.ok else '**否**'} |" for f in rows]
    return "\n".join(lines)


def kind_words(kind: str) -> str:
    """The ``__global__`` qualifier of a lowered kernel (:func:`measure.ascend.kernel_kind`) in Chinese."""
    import re

    if kind == "cube":
        return "只用 Cube"
    if kind == "vector":
        return "只用 Vector"
    m = re.fullmatch(r"mix\((\d+), (\d+)\)", kind)
    if m:
        return f"Cube 与 Vector 混合（{m.group(1)}:{m.group(2)}）"
    raise KeyError(f"no Chinese words for the kernel kind {kind!r}")


def lowering_table(caps) -> str:
    """Markdown: what the compiler decided for each captured kernel (``measure.ascend.capture_all()``),
    in Chinese: kind, tasks with an estimate, buffer versions, InsertSync flags, notifies, and whether
    the capture stopped at the bisheng compile step."""
    from coursebook.records import md_table

    rows = [{"kernel": f"`{name}`", "kind": kind_words(c.kernel_kind), "tasks": len(c.tasks),
             "versions": "，".join(f"`{b}`×{n}" for b, n in c.buffer_versions.items()),
             "flags": len(c.flags), "notify": c.sync["asc_sync_notify"],
             "stop": "是" if "bisheng" in c.stopped_at else "**否**"} for name, c in caps.items()]
    return md_table(rows, ["kernel", "kind", "tasks", "versions", "flags", "notify", "stop"],
                    ["kernel", "核类型", "带估计的任务数", "多缓冲（AutoSchedule）", "InsertSync 的 flag 种类",
                     "源码里的 notify 次数", "停在毕昇编译（`compile_ascend`）"])
