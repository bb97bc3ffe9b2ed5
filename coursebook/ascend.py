"""The recorded Ascend lowering (``measure/results/ascend/``) as the values a page glues."""
from __future__ import annotations

__all__ = ["ascend_values"]


def ascend_values() -> dict[str, str]:
    """Facts of the recorded Ascend RMSNorm lowering (measure/results/ascend/index.json): ``asc13.*``."""
    import json

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
