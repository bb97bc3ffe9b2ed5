"""What the compiler emits for the GEMM ladder on this CPU, recorded for the book.

``python -m measure.lowered`` compiles rungs 3, 4 and 5 and the hand-written pipeline for
``sm_90a`` (lowered on the CPU, never run), keeps the lines of the generated CUDA that prove
each instruction path (TMA, wgmma, warp specialization, the cluster-scope stage release...) and
writes them to ``measure/results/lowered/gemm.json`` with the tilelang version, the date and
the sha256 of every source.  The GEMM page prints that record, so the book build compiles
nothing; ``python -m measure.lowered --check`` (and a slow test) lowers again and fails when the
record no longer matches the code.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import re
import sys

from measure.results import RESULTS_DIR

__all__ = ["RECORD", "RUNGS", "SHAPE", "rung_report", "ws_report", "wgmma_descriptors", "record", "load"]

RECORD = RESULTS_DIR / "lowered" / "gemm.json"
#: The rungs whose lowering the page shows, and the shape they are compiled for.
RUNGS = ("rung3_pipelined", "rung4_annotated", "rung5_mma")
SHAPE = (1024, 1024, 1024)
LABEL = "lowered on the CPU for sm_90a, not run"


_EVIDENCE = {
    "wgmma": r"wgmma_(?:ss|rs)<",
    "tma_load": r"tma_load",
    "tma_store": r"tma_store",
    "warp_specialized": r"warpgroup_reg_(?:alloc|dealloc)",
    "mma_sync": r"mma_sync|mma\.sync",
    "ldmatrix": r"ldmatrix",
    "cp_async": r"cp_async|cp\.async",
    "rasterization": r"rasterization2D",
}


def rung_report(name: str, shape: tuple[int, int, int] = SHAPE, per_key: int = 1,
                width: int = 110) -> tuple[str, str]:
    """Compile ladder rung ``name`` for sm_90a (on the CPU) and return (report, CUDA source)."""
    from kernels.gemm import ladder
    from kernels.gemm.lowered import instruction_path, wgmma_shapes

    src = ladder.build(name, *shape).get_kernel_source()
    path = instruction_path(src)
    out = [f"== {name} {shape[0]}x{shape[1]}x{shape[2]}, sm_90a ==",
           "reaches: " + ", ".join(k for k in _EVIDENCE if path.get(k)),
           "absent:  " + ", ".join(k for k in _EVIDENCE if not path.get(k))]
    if path.get("wgmma"):
        out.append(f"wgmma shapes (M, N, K): {sorted(set(wgmma_shapes(src)))}")
    lines = src.splitlines()
    for key, pat in _EVIDENCE.items():
        if not path.get(key):
            continue
        hits = [ln.strip() for ln in lines if re.search(pat, ln) and not ln.lstrip().startswith("#")][:per_key]
        if not hits:  # the path is reached, but not through the call form the pattern names
            hits = [ln.strip() for ln in lines if key.split("_")[0] in ln and not ln.lstrip().startswith("#")][:per_key]
        for h in hits:
            out.append(f"  [{key}] " + (h if len(h) <= width else h[: width - 1] + "…"))
    return "\n".join(out), src


#: What :func:`ws_evidence` pulls out of the hand-written kernel's CUDA, in this order.
WS_EVIDENCE = (
    ("barriers", r"\w+\[\d\]\.init\(\d+\)"),
    ("registers", r"warpgroup_reg_(?:alloc|dealloc)<\d+>"),
    ("multicast", r"tma_load_multicast\([^;]*"),
    ("release", r"\w+\[[^\]]*\]\.arrive\(\w+\)"),
    ("wgmma wait", r"wait_wgmma<\d>"),
    ("cluster", r"tl::cluster_sync\(\)"),
)


def ws_report(shape: tuple[int, int, int] = SHAPE) -> tuple[str, str]:
    """Compile the hand-written pipeline (persistent, clusters of two) for sm_90a on this machine
    and list the lines of its CUDA that carry the claims of the text, then the stage-release
    reading (``support.multicast_release``) of it and of tilelang's automatic multicast pipeline;
    returns (report, CUDA source)."""
    from kernels.gemm import support, ws

    import logging

    logs = [logging.getLogger(n) for n in ("tilelang", "tilelang.jit.kernel")]
    levels = [lg.level for lg in logs]
    for lg in logs:  # the page shows the evidence, not the compiler's progress lines
        lg.setLevel(logging.WARNING)
    try:
        src = ws.rung4_ws(*shape, stages=4, epi_cols=128, inflight=0, cluster=2, workers=8).get_kernel_source()
        auto_src = support.probe_multicast().get_kernel_source()
    finally:
        for lg, lv in zip(logs, levels):
            lg.setLevel(lv)
    out = [f"rung4_ws{shape}, cluster=2, 8 persistent blocks, lowered for sm_90a on this machine:"]
    for what, pat in WS_EVIDENCE:
        hits = list(dict.fromkeys(m.group(0) for m in re.finditer(pat, src)))
        if what == "barriers":  # full[0..3].init(128) -> "full[4 stages].init(128)"
            per: dict[str, int] = {}
            for h in hits:
                key = re.sub(r"\[\d\]", "[s]", h)
                per[key] = per.get(key, 0) + 1
            hits = [f"{k} x{n}" for k, n in per.items()]
        out.append(f"  {what:<11s}" + ("; ".join(hits[:4]) if hits else "(absent)"))
    auto = support.multicast_release(auto_src)
    mine = support.multicast_release(src)
    for name, r in (("automatic pipeline (T.copy_cluster)", auto), ("hand-written (kernels.gemm.ws)", mine)):
        out.append(f"{name}: multicast={r['multicast']}, barrier counts={r['barrier_counts']}, "
                   f"arrives on the peer's barriers={r['cluster_release']}")
    return "\n".join(out), src


def wgmma_descriptors(src: str) -> list[str]:
    return re.findall(r"initialize_wgmma_descriptor<[^>]*>", src)


def record() -> dict:
    """Lower every rung of :data:`RUNGS` and the hand-written pipeline now; the record to commit."""
    import tilelang

    rungs = {}
    for name in RUNGS:
        text, src = rung_report(name)
        rungs[name] = {"report": text, "wgmma_descriptors": wgmma_descriptors(src),
                       "source_sha256": hashlib.sha256(src.encode()).hexdigest()}
    text, src = ws_report()
    return {"label": LABEL, "tilelang": tilelang.__version__, "target": "sm_90a", "shape": list(SHAPE),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"), "command": "python -m measure.lowered",
            "rungs": rungs, "ws": {"report": text, "source_sha256": hashlib.sha256(src.encode()).hexdigest()}}


def load() -> dict:
    """The committed record (``FileNotFoundError`` naming the command that writes it)."""
    if not RECORD.exists():
        raise FileNotFoundError(f"{RECORD} missing: run python -m measure.lowered")
    return json.loads(RECORD.read_text(encoding="utf-8"))


def _comparable(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "date"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="lower again and compare with the committed record")
    args = ap.parse_args(argv)
    from measure.ascend import quiet_tilelang

    with quiet_tilelang():
        now = record()
    if args.check:
        same = _comparable(now) == _comparable(load())
        print("the committed record matches the code" if same else f"{RECORD} is stale: python -m measure.lowered")
        return 0 if same else 1
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(now, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", RECORD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
