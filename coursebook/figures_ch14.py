"""Figures, tables and derived glue values of chapter 14 (book/ch_gemm.md).

Everything is computed at build time: analytic numbers from ``ledger`` (``gemm``,
``tiles``, ``protocol``, ``errata``), measured numbers from the recorded results
file through :func:`coursebook.gemm_report.load`.  Nothing here types a result.

* :func:`glue_page_values` glues the values the page needs that are neither
  registry figures nor a single record field: ``ch14p.*`` (ledger calls made for the
  exercises and the split-K prediction) and ``rec14.*`` (values derived from the
  records, e.g. cuBLAS TFLOP/s or the wave prediction stored with a record).
  Values a record lacks are glued as ``—`` so the page always builds.
* figures: :func:`gemm_roofline`, :func:`ladder_bars`, :func:`splitk_bars`;
* Markdown tables: :func:`splitk_table`, :func:`fp8_section`, :func:`audit_table`,
  :func:`errata_table`, :func:`verdict_table`, :func:`variant_summary`;
* :func:`lowered_evidence` compiles one ladder rung for sm_90a on the CPU and returns
  the lines of the generated CUDA that prove its instruction path.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from coursebook import style

__all__ = [
    "NO_RESULT", "load", "glue_page_values", "page_values", "gemm_roofline", "ladder_bars", "splitk_bars",
    "splitk_table", "splitk_l2_table", "streamk_table", "fp8_section", "audit_table", "errata_table", "verdict_table",
    "lowered_evidence", "ws_evidence", "glued_keys", "records",
]

NO_RESULT = "尚无记录结果 / no recorded result yet"
DASH = "—"
_C = style.COLORS


def load(device: str = "nvidia-h200") -> dict | None:
    from coursebook.gemm_report import load as _load

    return _load(device)


def records(results: dict | None, suite: str | None = None, prefix: str = "", kind: str | None = None) -> list[dict]:
    """Records of the GEMM suites (or one ``suite``) whose name starts with ``prefix``."""
    if not results:
        return []
    out = []
    for sname, s in (results.get("suites") or {}).items():
        if suite is not None and sname != suite:
            continue
        if suite is None and not sname.startswith("gemm."):
            continue
        for r in s.get("records", []) if isinstance(s, dict) else []:
            if str(r.get("name", "")).startswith(prefix) and (kind is None or r.get("kind") == kind):
                out.append(r)
    return out


def _bench(results: dict | None, name: str) -> dict | None:
    for r in records(results, kind="bench"):
        if r.get("name") == name:
            return r
    return None


def _figure(w: float = 7.2, h: float = 4.2):
    style.apply()
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")
    except Exception:
        pass
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h))


# ------------------------------------------------------------------ glue values
def page_values(results: dict | None) -> dict[str, str]:
    """Every ``ch14p.*`` / ``rec14.*`` value of the page as printed text."""
    from ledger.gemm import grid_waves, split_k_bytes
    from ledger.protocol import DEFAULT_PROTOCOL
    from ledger.tiles import accumulator_per_thread, smem_total, tile_decision

    v: dict[str, str] = {}
    from measure.suites.gemm import splitk, streamk
    from ledger.cost import dtype_bytes

    SM, SN, SK = splitk.SHAPE
    bm, bn = splitk.DEFAULT["block_M"], splitk.DEFAULT["block_N"]
    # split-K shape of the suite: 1024 x 1024 output, 128 x 128 tiles, 132 SMs
    for s in splitk.SPLITS:
        grid, w, fill = grid_waves(SM, SN, bm, bn, split=s)
        v[f"ch14p.splitk.s{s}.grid"] = str(grid)
        v[f"ch14p.splitk.s{s}.waves"] = str(w)
        v[f"ch14p.splitk.s{s}.fill_pct"] = f"{100 * fill:.1f}"
        v[f"ch14p.splitk.s{s}.out_mib"] = f"{split_k_bytes(SM, SN, split=s, separate_reduce=False) / 2**20:.0f}"
    # exercise values
    r = tile_decision(128, 256, 64, stages=4, threads=256)
    v["ch14p.ex.s4_smem_kb"] = f"{r.smem_total / 1024:.0f}"
    v["ch14p.ex.s4_blocks"] = str(r.blocks_per_sm)
    v["ch14p.ex.acc_256x128_t256"] = f"{accumulator_per_thread(256, 128, 256):.0f}"
    v["ch14p.ex.smem_fp8_128x256x128_s4_kb"] = f"{smem_total(128, 256, 128, 4, 1) / 1024:.0f}"
    g, w, fill = grid_waves(streamk.SHAPE[0], streamk.SHAPE[1], streamk.DEFAULT["block_M"], streamk.DEFAULT["block_N"])
    v["ch14p.streamk.grid"] = str(g)
    v["ch14p.streamk.waves"] = str(w)
    v["ch14p.streamk.fill_pct"] = f"{100 * fill:.1f}"
    g, w, fill = grid_waves(8192, 8192, 128, 256)
    v["ch14p.ex.w8192.grid"] = str(g)
    v["ch14p.ex.w8192.waves"] = str(w)
    v["ch14p.ex.w8192.fill_pct"] = f"{100 * fill:.1f}"
    nw, nr = DEFAULT_PROTOCOL.iterations(0.02)
    v["ch14p.ex.iters_20us_warm"] = str(nw)
    v["ch14p.ex.iters_20us_rep"] = str(nr)
    from measure.suites.gemm.common import BENCH_ROUNDS
    from ledger.tiles import HOPPER

    v["ch14p.bench.rounds"] = str(BENCH_ROUNDS)
    from kernels.gemm import ladder as _ladder
    from kernels.gemm import ws as _ws
    from measure.suites.gemm import ladder as _ladder_suite

    v["ch14p.tune.search_rounds"] = str(_ladder_suite.SEARCH_ROUNDS)
    v["ch14p.tune.n_ws"] = str(sum(1 for c in _ladder_suite.TUNE_CANDIDATES if c.get("ws")))
    v["ch14p.tune.n_auto"] = str(sum(1 for c in _ladder_suite.TUNE_CANDIDATES if not c.get("ws")))
    v["ch14p.ws.producer_regs"] = str(_ws.PRODUCER_REGS)
    v["ch14p.ws.consumer_regs"] = str(_ws.CONSUMER_REGS)
    v["ch14p.ws.cluster_arrivals"] = str(_ws.empty_arrivals(2))
    for st, inf in ((3, 1), (3, 0), (4, 0)):
        v[f"ch14p.ex.ws_ahead_s{st}_if{inf}"] = str(_ws.stages_ahead(st, inf))
    ws4 = next(c for c in _ladder_suite.TUNE_CANDIDATES if c.get("ws") and c["stages"] == 4 and c.get("epi_cols"))
    v["ch14p.ex.ws_s4_smem_kb"] = f"{_ladder.smem_budget(ws4) / 1024:.0f}"
    v["ch14p.ex.ws_s4_full_c_kb"] = f"{_ladder.smem_budget({**ws4, 'epi_cols': 0}) / 1024:.0f}"
    v["ch14p.ex.ws_smem_limit_kb"] = f"{HOPPER.smem_per_block / 1024:.0f}"
    # fp8 at 4096^3: the waves of the promoted kernel's tile shapes (one block per SM)
    for bn in (192, 128):
        g, w, fill = grid_waves(4096, 4096, 128, bn)
        v[f"ch14p.fp8.n{bn}.grid"] = str(g)
        v[f"ch14p.fp8.n{bn}.waves_exact"] = f"{g / HOPPER.sms:.2f}"
        v[f"ch14p.fp8.n{bn}.fill_pct"] = f"{100 * fill:.0f}"
    v["ch14p.fp8.n192.partial_cols"] = str(4096 - (4096 // 192) * 192)
    for side in (4096, 8192):
        rec = _bench(results, f"fp8 e4m3 {side}^3")
        v[f"rec14.fp8.s{side}.config"] = str(rec["config"]) if rec and rec.get("config") else DASH
        # the hand-written fp8 pipeline against tilelang's automatic two-level candidates, and the
        # two-partials form (inflight=1) against the one-partial form of the same 128x128 tile
        fs = next((r for r in records(results, "gemm.lowp", kind="search") if r.get("name") == f"fp8 promoted {side}^3"), None)
        fms = (fs or {}).get("ms") or {}
        hand = [t for k, t in fms.items() if "_ws" in k]
        auto = [t for k, t in fms.items() if "_ws" not in k]
        v[f"rec14.fp8.s{side}.ws_gain_pct"] = f"{100 * (min(auto) / min(hand) - 1):.0f}" if hand and auto else DASH
        t1 = fms.get("128x128x128_s6_t256_ws_if1_pers")
        t0 = fms.get("128x128x128_s6_t256_ws_if0_pers")
        v[f"rec14.fp8.s{side}.if1_loss_pct"] = f"{100 * (t1 / t0 - 1):.0f}" if t0 and t1 else DASH
    # derived from records
    for side in (4096, 8192):
        rec = _bench(results, f"tuned rung4 {side}^3")
        cub = ((rec or {}).get("baselines") or {}).get("cuBLAS")
        v[f"rec14.cublas.s{side}.tflops"] = f"{rec['flops'] / (cub * 1e-3) / 1e12:.1f}" if rec and cub else DASH
    for s_ in (2, 4):
        rec = _bench(results, f"split-K element 128x256 s={s_} 1024x1024x16384")
        p = (rec or {}).get("predicted_speedup_vs_no_split")
        v[f"rec14.splitk.wide.s{s_}.pred"] = f"{p:.2f}" if p else DASH
    l2 = _splitk_l2(results)
    full = [r["l2_tbps"] for r in l2 if (r["fill"] or 0) > 0.9]  # one nearly full wave: every SM pulling
    part = [r["l2_tbps"] for r in l2 if r["split"] == 1]
    v["rec14.splitk.l2_full_tbps"] = f"{min(full):.1f}–{max(full):.1f}" if full else DASH
    v["rec14.splitk.l2_nosplit_tbps"] = f"{min(part):.1f}–{max(part):.1f}" if part else DASH
    from ledger.gemm import tiled_traffic

    wm, wn = splitk.WIDE["block_M"], splitk.WIDE["block_N"]
    v["ch14p.splitk.l2_mb_128"] = f"{tiled_traffic(SM, SN, SK, bm, bn, 'fp16', 'fp32') / 1e6:.0f}"
    v["ch14p.splitk.l2_mb_256"] = f"{tiled_traffic(SM, SN, SK, wm, wn, 'fp16', 'fp32') / 1e6:.0f}"
    # staging one fp32 output tile of the wide blocks (why they use element-wise atomics)
    v["ch14p.splitk.wide.stage_kib"] = f"{wm * wn * dtype_bytes('fp32') / 1024:.0f}"
    for s_ in (1, 2, 4):
        g, w, fill = grid_waves(SM, SN, wm, wn, split=s_)
        v[f"ch14p.splitk.wide.s{s_}.grid"] = str(g)
        v[f"ch14p.splitk.wide.s{s_}.fill_pct"] = f"{100 * fill:.0f}"
    sk = _bench(results, "stream-K 1536x1536x8192")
    # the same L2 -> SM reading as for split-K: operand bytes of 128x128 blocks over the time
    l2_sk = tiled_traffic(*streamk.SHAPE, streamk.DEFAULT["block_M"], streamk.DEFAULT["block_N"], "fp16", "fp16")
    v["ch14p.streamk.l2_mb"] = f"{l2_sk / 1e6:.0f}"
    dp_ms = ((sk or {}).get("baselines") or {}).get("data-parallel")
    v["rec14.streamk.l2_tbps"] = f"{l2_sk / (sk['ms'] * 1e-3) / 1e12:.1f}" if sk and sk.get("ms") else DASH
    v["rec14.streamk.dp_l2_tbps"] = f"{l2_sk / (dp_ms * 1e-3) / 1e12:.1f}" if dp_ms else DASH
    v["rec14.streamk.pred"] = f"{sk['predicted_speedup_vs_dp']:.2f}" if sk and sk.get("predicted_speedup_vs_dp") else DASH
    for s in (2, 4, 8):
        rec = _bench(results, f"split-K tile s={s} 1024x1024x16384")
        p = (rec or {}).get("predicted_speedup_vs_no_split")
        v[f"rec14.splitk.s{s}.pred"] = f"{p:.2f}" if p else DASH
    # the tuned rung 4 in the search (timed one after another) and in the alternating rounds
    # against cuBLAS; the persistent candidates against the best one-block-per-tile candidate
    for side in (4096, 8192):
        srch = next((r for r in records(results, "gemm.ladder", kind="search") if r.get("name") == f"tuned rung4 {side}^3"), None)
        ms = (srch or {}).get("ms") or {}
        rec = _bench(results, f"tuned rung4 {side}^3")
        best = min(ms.values()) if ms else None
        v[f"rec14.tune.s{side}.search_us"] = f"{best * 1e3:.1f}" if best else DASH
        v[f"rec14.tune.s{side}.ratio"] = (floor3(rec["speedup"]["cuBLAS"]) if rec and (rec.get("speedup") or {}).get("cuBLAS")
                                          else DASH)
        rounds = (rec or {}).get("ms_per_round") or {}
        if rounds.get("kernel") and rounds.get("cuBLAS"):
            rr = [c / k for k, c in zip(rounds["kernel"], rounds["cuBLAS"])]
            v[f"rec14.tune.s{side}.round_ratios"] = f"{min(rr):.2f}–{max(rr):.2f}"
            v[f"rec14.tune.s{side}.rounds"] = str(len(rr))
            v[f"rec14.tune.s{side}.bench_over_search_pct"] = (f"{100 * (rec['ms'] / best - 1):.0f}" if best else DASH)
        else:
            for k in ("round_ratios", "rounds", "bench_over_search_pct"):
                v[f"rec14.tune.s{side}.{k}"] = DASH
        # tilelang's automatic persistent candidates against the best automatic one-block-per-tile one
        pers = [t for k, t in ms.items() if "_pers" in k and "_ws" not in k]
        plain = [t for k, t in ms.items() if "_pers" not in k and "_ws" not in k]
        v[f"rec14.tune.s{side}.pers_gap_pct"] = (f"{100 * (min(pers) / min(plain) - 1):.0f}" if pers and plain else DASH)
        v[f"rec14.tune.s{side}.best"] = (srch or {}).get("best") or DASH
        v[f"rec14.tune.s{side}.best_pipeline"] = ("手写" if "_ws" in v[f"rec14.tune.s{side}.best"] else "自动"
                                                  if srch else DASH)
        # what NVML saw while the winner and cuBLAS were timed (sampled by Harness.bench)
        for who, key in (("kernel", "kernel"), ("cuBLAS", "cublas")):
            mhz = ((rec or {}).get("mhz_per_round") or {}).get(who)
            w = ((rec or {}).get("watts_per_round") or {}).get(who)
            v[f"rec14.power.s{side}.{key}_mhz"] = f"{min(mhz):.0f}–{max(mhz):.0f}" if mhz else DASH
            v[f"rec14.power.s{side}.{key}_w"] = f"{min(w):.0f}–{max(w):.0f}" if w else DASH
        v[f"rec14.power.s{side}.limit_w"] = f"{rec['power_limit_w']:.0f}" if rec and rec.get("power_limit_w") else DASH
        v[f"rec14.power.s{side}.events"] = ", ".join((rec or {}).get("clock_events") or []) or DASH
        note = next((r for r in records(results, "gemm.ladder", kind="note") if r.get("name") == f"cuBLAS kernel {side}^3"), None)
        v[f"rec14.cublas.s{side}.kernel"] = ", ".join((note or {}).get("kernels") or []) or DASH
    _replicate_values(results, v)
    _ncu_values(v)
    # identical generated code, timed twice under different labels: the spread of the search's timings
    for side in (4096, 8192):
        srch = next((r for r in records(results, "gemm.ladder", kind="search") if r.get("name") == f"tuned rung4 {side}^3"), None)
        ms = (srch or {}).get("ms") or {}
        gaps = [abs(ms[k] / ms[k[: -len("_inferred")]] - 1) * 100 for k in ms
                if k.endswith("_inferred") and k[: -len("_inferred")] in ms]
        lo, hi = (f"{min(gaps):.1f}", f"{max(gaps):.1f}") if gaps else (DASH, DASH)
        v[f"rec14.tune.s{side}.twin_gap_pct"] = lo if lo == hi else f"{lo}–{hi}"
    g = _bench(results, "grouped concat G=8 N=4096 K=2048")
    v["rec14.grouped.tiles"] = str(g["tiles"]) if g and g.get("tiles") else DASH
    v["rec14.grouped.experts"] = str(len(g["sizes"])) if g and g.get("sizes") else DASH
    v["rec14.grouped.smallest"] = str(min(g["sizes"])) if g and g.get("sizes") else DASH
    v["rec14.grouped.largest"] = str(max(g["sizes"])) if g and g.get("sizes") else DASH
    return v


#: The hand-written candidates the prose compares, by what they change (kernels.gemm.ws).
WS_KEYS = {
    "s3_if1": dict(stages=3, inflight=1), "s3_if0": dict(stages=3, inflight=0),
    "s4_if0": dict(stages=4, inflight=0, persistent=False),
    "pers_if0": dict(stages=4, inflight=0, persistent=True, cluster=1),
    "pers_if1": dict(stages=4, inflight=1, persistent=True, cluster=1),
    "c2_if0": dict(stages=4, inflight=0, persistent=True, cluster=2),
    "c2_if1": dict(stages=4, inflight=1, persistent=True, cluster=2),
}


def ws_label(key: str) -> str:
    """Label of the hand-written candidate :data:`WS_KEYS` names."""
    from kernels.gemm.ladder import label
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    want = WS_KEYS[key]
    (cfg,) = [c for c in TUNE_CANDIDATES if c.get("ws") and all(
        (c.get(k) or (1 if k == "cluster" else False)) == x for k, x in want.items())]
    return label(cfg)


def _span(xs: list, spec: str) -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return DASH
    lo, hi = format(min(xs), spec), format(max(xs), spec)
    return lo if lo == hi else f"{lo}～{hi}"


def _ncu_values(v: dict[str, str]) -> None:
    """The Nsight Compute run of the 8192^3 GEMMs (``measure/results/ncu/ncu_gemm.json``) and the
    ledger's L2 -> SM bytes of the 128x256 tiles it is read against."""
    import json
    from pathlib import Path

    from measure.ncu import gemm as ncu_gemm
    from ledger.gemm import tiled_traffic

    side = ncu_gemm.SIDE
    v["ch14p.ncu.tiled_l2_mb"] = f"{tiled_traffic(side, side, side, 128, 256, 'fp16', 'fp16') / 1e6:.0f}"
    path = Path(ncu_gemm.RESULTS) / "ncu_gemm.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    keys = {"automatic": "auto", "hand-written": "ws", "hand-written multicast": "mc", "cuBLAS": "cublas"}
    for name, key in keys.items():
        k = (data.get("kernels") or {}).get(name) or {}
        for field, spec in (("l2_read_mb", ".0f"), ("dram_read_mb", ".0f"), ("time_us", ".0f"), ("sm_mhz", ".0f")):
            x = k.get(field)
            v[f"rec14.ncu.{key}.{field}"] = DASH if x is None else format(x, spec)
    v["rec14.ncu.date"] = ((data.get("provenance") or {}).get("date") or DASH)[:10]


def _replicate_values(results: dict | None, v: dict[str, str]) -> None:
    """Values over every recorded repeat of the same tuned search (``report.ladder_replicates``):
    the winner's ratio to cuBLAS per run, and the hand-written candidates' gains as ranges."""
    from coursebook import gemm_report as report

    runs = report.ladder_replicates(results) if results else []
    v["rec14.tune.runs"] = "、".join(n.replace("run ", "") for n, _ in runs) or DASH
    v["rec14.tune.n_runs"] = str(len(runs)) if runs else DASH
    for side in (4096, 8192):
        ratios = []
        for _, res in runs:
            b = _bench(res, f"tuned rung4 {side}^3")
            ratios.append((b.get("speedup") or {}).get("cuBLAS") if b else None)
        v[f"rec14.tune.s{side}.ratio_runs"] = ("、".join(floor3(r) for r in ratios if r is not None) or DASH)
        v[f"rec14.tune.s{side}.ratio_min"] = floor3(min(r for r in ratios if r is not None)) if any(
            r is not None for r in ratios) else DASH
        labels = {k: ws_label(k) for k in WS_KEYS}
        for k, lab in labels.items():
            v[f"rec14.ws.s{side}.{k}_pct"] = _span([report.vs_automatic(res, side, lab) for _, res in runs], "+.1f")

        def gain(a: str, b: str, spec: str = "+.1f") -> str:
            """How much faster ``b`` ran than ``a`` in each run, in percent, as a range."""
            out = []
            for _, res in runs:
                ms = report.search_times(res, side)
                if labels[a] in ms and labels[b] in ms:
                    out.append(100 * (ms[labels[a]] / ms[labels[b]] - 1))
            return _span(out, spec)

        v[f"rec14.ws.s{side}.pers_gain_pct"] = gain("s4_if0", "pers_if0")
        v[f"rec14.ws.s{side}.mc_gain_pct"] = gain("pers_if0", "c2_if0")
        v[f"rec14.ws.s{side}.stage_gain_pct"] = gain("s3_if0", "s4_if0")
        v[f"rec14.ws.s{side}.if1_loss_pct"] = gain("s3_if1", "s3_if0", ".1f")  # how much slower inflight=1 ran


def glue_page_values(results: dict | None, measured: dict[str, str] | None = None,
                     page: str = "ch_gemm.md") -> dict[str, str]:
    """Glue :func:`page_values`; and every ``rec.*`` key the page uses that the measured values lack
    (no results file, or a record renamed by a later run) as ``—``, so the page says "no value"
    instead of failing the strict build.  ``tests/book/test_page_ch14.py`` checks that, with the
    results in the repository, no key falls back."""
    from pathlib import Path

    from myst_nb import glue

    from coursebook.glue import GluedText

    vals = page_values(results)
    text = (Path(__file__).resolve().parent.parent / "book" / page).read_text(encoding="utf-8")
    used = dict.fromkeys(re.findall(r"\{glue:text\}`(rec\.[^`]+)`", text))
    for k in used:
        if k not in (measured or {}):
            vals[k] = DASH
    for k, t in vals.items():
        glue(k, GluedText(t), display=False)
    return vals


# ------------------------------------------------------------------ figures
def gemm_roofline():
    """Square fp16 GEMMs on the H200 (calibrated) and H100 (datasheet) rooflines."""
    import numpy as np

    from ledger.gemm import LADDER_SIDES, gemm_cost, square_crossover
    from ledger.machines import get_machine

    cal, h100 = get_machine("h200-calibrated"), get_machine("h100-spec")
    fig = _figure(8.2, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    ai = np.logspace(0.5, 3.8, 300)
    for m, color, ls, label in ((h100, _C["datasheet"], "--", "H100 SXM5 规格"),
                                (cal, _C["calibrated"], "-", "H200 标定")):
        ax.plot(ai, np.minimum(m.peak_flops, ai * m.bandwidth) / 1e12, ls, color=color, lw=2,
                label=f"{label}（平衡点 {m.balance:.0f} FLOP/B，方阵交点边长 {square_crossover(m.balance):.0f}）")
        ax.axvline(m.balance, color=color, lw=0.8, ls=":")
    for i, side in enumerate(LADDER_SIDES):
        c = gemm_cost(side, side, side)
        y = min(cal.peak_flops, c.intensity * cal.bandwidth) / 1e12
        color = _C["compute"] if c.bound(cal) == "compute-bound" else _C["memory"]
        ax.scatter([c.intensity], [y], color=color, s=40, zorder=5, edgecolor="white")
        ax.annotate(f"{side}³（{c.intensity:.0f}）", (c.intensity, y), textcoords="offset points",
                    xytext=(0, 8 if i % 2 else -16), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("算术强度 (FLOP/Byte)，fp16 输入输出")
    ax.set_ylabel("可达算力上限 (TFLOP/s)")
    ax.set_title("方阵 GEMM 在 roofline 上的位置：AI = 2M/(3b) 随边长线性增长")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


_RUNG_ZH = {"rung1_naive": "① 朴素", "rung2_shared": "② shared+T.gemm", "rung3_pipelined": "③ 流水",
            "rung4_annotated": "④ 注解", "rung5_mma": "⑤ mma.sync", "rung4_tuned": "④ 调优"}


def ladder_bars(results: dict | None = None):
    """Recorded TFLOP/s of every rung at 4096^3 and 8192^3, cuBLAS on the same run beside them."""
    import numpy as np

    results = load() if results is None else results
    fig = _figure(8.6, 4.4)
    ax = fig.add_subplot(1, 1, 1)
    recs = [r for r in records(results, "gemm.ladder", kind="bench") if r.get("rung")]
    if not recs:
        ax.text(0.5, 0.5, NO_RESULT, ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return fig
    order = ["rung1_naive", "rung2_shared", "rung3_pipelined", "rung4_annotated", "rung5_mma", "rung4_tuned"]
    sides = sorted({r["shape"][0] for r in recs})
    x = np.arange(len(order) + 1)
    width = 0.8 / len(sides)
    colors = [_C["fused"], _C["eager"]]
    for i, side in enumerate(sides):
        by = {r["rung"]: r for r in recs if r["shape"][0] == side}
        vals = [by[n]["tflops"] if n in by else 0.0 for n in order]
        cub = [r["flops"] / (r["baselines"]["cuBLAS"] * 1e-3) / 1e12 for r in by.values()
               if (r.get("baselines") or {}).get("cuBLAS")]
        vals.append(float(np.median(cub)) if cub else 0.0)
        bars = ax.bar(x + (i - (len(sides) - 1) / 2) * width, vals, width, color=colors[i % 2], label=f"{side}³")
        for b, val in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, val + 8, "未测" if val == 0 else f"{val:.0f}",
                    ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(x)
    ax.set_xticklabels([_RUNG_ZH[n] for n in order] + ["cuBLAS"], fontsize=9)
    ax.set_ylabel("TFLOP/s（记录结果）")
    ax.set_title("五级阶梯与调优后的第四级，对照同一次运行里的 cuBLAS（fp16，H200）")
    ax.legend()
    fig.tight_layout()
    return fig


def splitk_bars(results: dict | None = None):
    """Split-K at 1024x1024x16384: speedup over no split, predicted by waves vs measured."""
    import numpy as np

    results = load() if results is None else results
    fig = _figure(7.6, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    rows = _splitk_rows(results)
    if not rows:
        ax.text(0.5, 0.5, NO_RESULT, ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return fig
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["pred"] for r in rows], 0.4, color=_C["datasheet"], label="波数模型预测")
    ax.bar(x + 0.2, [r["meas"] for r in rows], 0.4, color=_C["compute"], label="实测（tile 级原子加）")
    for i, r in enumerate(rows):
        ax.text(i + 0.2, r["meas"] + 0.03, f"{r['meas']:.2f}", ha="center", fontsize=8)
        ax.text(i - 0.2, r["pred"] + 0.03, f"{r['pred']:.2f}", ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([f"split={r['split']}\n{r['grid']} 块，{r['waves']} 波" for r in rows], fontsize=8.5)
    ax.set_ylabel("相对不切分的加速比")
    ax.set_ylim(0, 1.3 * max(max(r["pred"], r["meas"]) for r in rows))
    ax.set_title("split-K：1024×1024×16384，预测与实测并排")
    ax.legend(loc="upper center", ncol=2)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ tables
def _splitk_rows(results: dict | None, form: str = "tile", block_n: int = 128) -> list[dict]:
    rows = []
    for r in records(results, "gemm.splitk", kind="bench"):
        if r.get("form") != form or (r.get("split_k") or 1) == 1:
            continue
        if (r.get("config") or {}).get("block_N", 128) != block_n:
            continue
        sp = r.get("speedup") or {}
        w = r.get("waves") or {}
        rows.append(dict(split=r["split_k"], grid=w.get("grid"), waves=w.get("waves"),
                         fill=w.get("last_wave_fill"), pred=r.get("predicted_speedup_vs_no_split") or 0.0,
                         meas=sp.get("no-split") or 0.0, cub=sp.get("cuBLAS"), part=r.get("partial_bytes"),
                         tflops=r.get("tflops")))
    return sorted(rows, key=lambda d: d["split"])


def splitk_table(results: dict | None = None) -> str:
    results = load() if results is None else results
    rows = {f: _splitk_rows(results, f) for f in ("tile", "element")}
    if not rows["tile"]:
        return f"**{NO_RESULT}**"
    el = {r["split"]: r for r in rows["element"]}
    lines = ["| split | 网格（块） | 波数 | 末波填充 | 预测加速比 | 实测：tile 原子加 | 实测：逐元素原子加 | "
             "输出侧 fp32 字节 (MiB) | 对 cuBLAS |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows["tile"]:
        e = el.get(r["split"], {})
        lines.append(f"| {r['split']} | {r['grid']} | {r['waves']} | {100 * (r['fill'] or 0):.0f}% | "
                     f"{r['pred']:.2f}× | {r['meas']:.2f}× | {e.get('meas', 0):.2f}× | "
                     f"{(r['part'] or 0) / 2**20:.0f} | {r['cub']:.2f}× |")
    return "\n".join(lines)


def _splitk_l2(results: dict | None) -> list[dict]:
    """Every split-K record with the bytes its blocks pull from L2 (``ledger.gemm.tiled_traffic``:
    each block reads its A rows and B columns, no reuse between blocks) and the rate that implies."""
    from ledger.gemm import tiled_traffic

    rows = []
    for r in records(results, "gemm.splitk", kind="bench"):
        cfg = r.get("config") or {}
        bm, bn = cfg.get("block_M", 128), cfg.get("block_N", 128)
        if r.get("form") != ("tile" if bn == 128 else "element") or not r.get("ms"):
            continue
        m, n, k = (int(v) for v in re.findall(r"(\d+)x(\d+)x(\d+)", r["name"])[0])
        l2 = tiled_traffic(m, n, k, bm, bn, "fp16", "fp32")
        w = r.get("waves") or {}
        rows.append(dict(tile=f"{bm}×{bn}", split=r.get("split_k") or 1, grid=w.get("grid"),
                         fill=w.get("last_wave_fill"), us=r["ms"] * 1e3, l2_mb=l2 / 1e6,
                         l2_tbps=l2 / (r["ms"] * 1e-3) / 1e12, pred=r.get("predicted_speedup_vs_no_split"),
                         meas=(r.get("speedup") or {}).get("no-split"), cub=(r.get("speedup") or {}).get("cuBLAS")))
    return sorted(rows, key=lambda d: (d["tile"], d["split"]))


def splitk_l2_table(results: dict | None = None) -> str:
    """Both tile shapes: waves, predicted and measured speedup, and the implied L2 -> SM rate."""
    results = load() if results is None else results
    rows = _splitk_l2(results)
    if not rows:
        return f"**{NO_RESULT}**"
    lines = ["| 块 | split | 网格（块） | 末波填充 | 预测加速比 | 实测加速比 | 时间 (µs) | 从 L2 读的操作数 (MB) | 折合 L2→SM (TB/s) | 对 cuBLAS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        pred = "—" if r["split"] == 1 else f"{r['pred']:.2f}×"
        meas = "—" if r["split"] == 1 or not r["meas"] else f"{r['meas']:.2f}×"
        lines.append(f"| {r['tile']} | {r['split']} | {r['grid']} | {100 * (r['fill'] or 0):.0f}% | {pred} | {meas} | "
                     f"{r['us']:.1f} | {r['l2_mb']:.0f} | {r['l2_tbps']:.2f} | {r['cub']:.2f}× |")
    return "\n".join(lines)


def streamk_table(results: dict | None = None) -> str:
    results = load() if results is None else results
    recs = records(results, "gemm.streamk", kind="bench")
    if not recs:
        return f"**{NO_RESULT}**"
    lines = ["| kernel | 输出块 | 数据并行波数 | 末波填充 | stream-K 块 / 切开的块 | 预测 vs 数据并行 | 实测 vs 数据并行 | 对 cuBLAS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        w, s, sp = r.get("waves") or {}, r.get("schedule") or {}, r.get("speedup") or {}
        lines.append(f"| {r['name']} | {w.get('tiles')} | {w.get('waves')} | {100 * (w.get('last_wave_fill') or 0):.0f}% | "
                     f"{s.get('dp_tiles')} / {s.get('sk_tiles')} | {r.get('predicted_speedup_vs_dp', 0):.2f}× | "
                     f"{sp.get('data-parallel', 0):.2f}× | {sp.get('cuBLAS', 0):.2f}× |")
    return "\n".join(lines)


def _fmt_err(x: Any, spec: str = ".2e") -> str:
    return DASH if x is None else format(x, spec)


def fp8_section(results: dict | None = None) -> str:
    """The fp8 records (any name starting ``fp8`` or ``torch._scaled_mm``), speed and accuracy side by side,
    followed by sentences chosen by what the records say (no fixed verdict)."""
    results = load() if results is None else results
    lowp = records(results, "gemm.lowp")
    checks = {r["name"]: r for r in lowp if r.get("kind") == "check"}
    benches = [r for r in lowp if r.get("kind") == "bench" and str(r.get("name", "")).startswith("fp8")]
    if not benches:
        return f"**{NO_RESULT}**（`gemm.lowp` 里没有 fp8 记录）"
    lines = ["| kernel | TFLOP/s | 对 `torch._scaled_mm` | 检查 | 最大绝对误差 | 相对 Frobenius 误差 | "
             "同形状 `_scaled_mm` 的最大绝对误差 / 相对 Frobenius 误差 |",
             "|---|---:|---:|---|---:|---:|---|"]
    worse, better, failed = [], [], []
    for r in benches:
        chk = checks.get(r["name"], {})
        side = (r.get("shape") or [None])[0]
        ref = checks.get(f"torch._scaled_mm {side}^3", {})
        ok = chk.get("ok")
        mark = {True: "通过", False: f"未通过（{chk.get('mismatched', '?')} 个元素超出容差）", None: DASH}[ok]
        sp = (r.get("speedup") or {}).get("torch._scaled_mm")
        lines.append(f"| {r['name']} | {r.get('tflops', 0):.0f} | {_fmt_err(sp, '.2f')}× | {mark} | "
                     f"{_fmt_err(chk.get('max_abs_err'), '.3g')} | {_fmt_err(chk.get('rel_fro_err', r.get('rel_fro_err')))} | "
                     f"{_fmt_err(ref.get('max_abs_err'), '.3g')} / {_fmt_err(ref.get('rel_fro_err'))} |")
        if ok is False:
            failed.append(r["name"])
        e, e0 = chk.get("rel_fro_err", r.get("rel_fro_err")), ref.get("rel_fro_err")
        if e is not None and e0 is not None:
            (worse if e > 1.05 * e0 else better).append(r["name"])
    text = ["\n".join(lines), ""]
    if failed:
        text.append("按记录，" + "、".join(f"`{n}`" for n in failed) +
                    " 的逐元素检查没有通过：它跑得快，但有元素落在容差之外。")
    if worse:
        text.append("误差高于同形状 `torch._scaled_mm` 的有：" + "、".join(f"`{n}`" for n in worse) + "。")
    if better:
        text.append("误差与 `torch._scaled_mm` 相当或更低的有：" + "、".join(f"`{n}`" for n in better) + "。")
    if not failed and not worse:
        text.append("按记录，所有 fp8 kernel 都通过了检查，误差不高于 `torch._scaled_mm`。")
    return "\n".join(text)


def audit_table(results: dict | None = None, live_if_missing: bool = True) -> str:
    """The sm_90a support audit: the one recorded with the GPU run, or compiled now when none is recorded."""
    from coursebook import gemm_report as report
    from measure.render import markdown_table

    rows = report.audit_rows(results)
    head = "审计结果取自 GPU 运行时一并写下的记录（同一 tilelang 版本的编译器）。"
    if not rows and live_if_missing:
        rows = report.audit_rows(None, live=True)
        head = "记录里没有审计结果，下表是构建本页时在 CPU 上为 sm_90a 现场编译得到的（lowered on CPU）。"
    if not rows:
        return f"**{NO_RESULT}**"
    for r in rows:
        r["compiler says"] = r["compiler says"][:160] + ("…" if len(r["compiler says"]) > 160 else "")
    checks = [r for r in records(results, "gemm.support", kind="check")]
    tail = ""
    if checks:
        tail = "\n\nGPU 上对能编译的两个探针做的检查：\n\n" + "\n".join(
            f"- `{c['name']}`：{'通过' if c.get('ok') else '未通过'}，最大绝对误差 {_fmt_err(c.get('max_abs_err'), '.3g')}"
            + (f"，wgmma 形状 {c['wgmma_shapes']}" if c.get("wgmma_shapes") else "") for c in checks)
    return head + "\n\n" + markdown_table(rows) + tail


def errata_table(prefix: str = "ch14.") -> str:
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


def floor3(x: float) -> str:
    """``x`` cut (not rounded) to three decimals: a value just under a target never prints as the target."""
    import math

    return f"{math.floor(x * 1000 + 1e-9) / 1000:.3f}"


def verdict_table(results: dict | None = None) -> str:
    """Targets set by the suites and whether the record met them (read, never asserted)."""
    results = load() if results is None else results
    zh = {True: "达到", False: "未达到", None: "无法判断"}
    lines = ["| kernel | 指标 | 目标 | 实测 | 结论 |", "|---|---|---:|---:|---|"]
    for r in records(results, kind="bench"):
        for key, t in (r.get("targets") or {}).items():
            val = t.get("value")
            lines.append(f"| {r['name']} | {key} | ≥ {t.get('target')} | {DASH if val is None else floor3(val)} | "
                         f"{zh[t.get('met')]} |")
    if len(lines) == 2:
        return f"**{NO_RESULT}**"
    return "\n".join(lines)


def variant_summary(results: dict | None, prefix: str, suite: str) -> str:
    """Grouped / batched rows: TFLOP/s and every speedup."""
    recs = [r for r in records(results, suite, prefix, kind="bench")]
    if not recs:
        return f"**{NO_RESULT}**"
    lines = ["| kernel | TFLOP/s | 时间 (µs) | 基线时间 (µs) | 相对基线 | 相对 Frobenius 误差 |", "|---|---:|---:|---:|---:|---:|"]
    for r in recs:
        for base, ms in (r.get("baselines") or {}).items():
            lines.append(f"| {r['name']} | {r.get('tflops', 0):.0f} | {r['ms'] * 1e3:.1f} | {ms * 1e3:.1f} ({base}) | "
                         f"{(r.get('speedup') or {}).get(base, 0):.2f}× | {_fmt_err(r.get('rel_fro_err'))} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ lowered on CPU
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


def lowered_evidence(name: str, shape: tuple[int, int, int] = (1024, 1024, 1024), per_key: int = 1,
                     width: int = 110) -> tuple[str, str]:
    """Compile ladder rung ``name`` for sm_90a (on the CPU) and return (report, CUDA source)."""
    from kernels.gemm import ladder
    from kernels.gemm.lowered import instruction_path, wgmma_shapes

    src = ladder.build(name, *shape).get_kernel_source()
    path = instruction_path(src)
    out = [f"== {name} {shape[0]}x{shape[1]}x{shape[2]}, sm_90a, lowered on CPU ==",
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


def ws_evidence(shape: tuple[int, int, int] = (1024, 1024, 1024)) -> str:
    """Compile the hand-written pipeline (persistent, clusters of two) for sm_90a on this machine
    and list the lines of its CUDA that carry the claims of the text, then the stage-release
    reading (``support.multicast_release``) of it and of tilelang's automatic multicast pipeline."""
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
    return "\n".join(out)


def wgmma_descriptors(src: str) -> list[str]:
    return re.findall(r"initialize_wgmma_descriptor<[^>]*>", src)


def glued_keys(page: str = "ch_gemm.md", prefixes: Iterable[str] = ("ch14", "ch28", "machines")) -> list[str]:
    """Registry keys glued in ``book/<page>``, in order of first use."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "book" / page
    keys = re.findall(r"\{glue:text\}`([^`]+)`", path.read_text(encoding="utf-8"))
    return [k for k in dict.fromkeys(keys) if k.startswith(tuple(p + "." for p in prefixes))]
