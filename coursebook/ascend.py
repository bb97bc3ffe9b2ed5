"""The recorded Ascend lowering (``measure/results/ascend/``) as the values a page glues."""
from __future__ import annotations

__all__ = ["ascend_values", "asc_excerpt", "surface_table"]


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


_ZH = {"exists": "存在", "missing": "不存在", "no threads parameter": "没有 threads 参数",
       "ValueError (1-D core grid)": "ValueError（一维核网格）"}

#: The surface the elementwise chapter compares: trunk names, and the adapter's names that trunk lacks.
SURFACE = ("alloc_ub", "tile", "Scope", "TL_ASCEND_AUTO_SYNC", "SimtVF", "alloc_shared", "Pipelined", "reduce_sum")


def surface_table(names: tuple[str, ...] = SURFACE):
    """Which names the installed Ascend dialect has (no lowering): expected, observed, agree."""
    from IPython.display import Markdown

    from kernels.ascend import surface

    rows = [f for f in surface.audit(lower=False)
            if f.item.split(".")[-1].split("(")[0] in names or f.item.startswith("T.Kernel")]
    lines = ["| 条目 | 预期 | 实际 | 一致 |", "|---|---|---|---|"]
    lines += [f"| `{f.item}` | {_ZH.get(f.expected, f.expected)} | {_ZH.get(f.observed, f.observed)} | "
              f"{'是' if f.ok else '**否**'} |" for f in rows]
    return Markdown("\n".join(lines))
