"""The recorded Ascend lowering (``measure/results/ascend/``) as the values a page glues."""
from __future__ import annotations

__all__ = ["ascend_values"]


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
