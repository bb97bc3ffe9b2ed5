"""The GEMM ladder: rungs 1-5 and the tuned rung 4 (automatic and hand-written pipelines), the
low-precision GEMMs and the sm_90a audit -- their bars, tables and the values a page glues.

Measured values come from the recorded results (the tuned search's declared repeats included,
:func:`ladder_replicates`); configurations from :mod:`kernels.gemm` and the suites' tables
(:mod:`measure.suites.gemm`).  What the compiler emits for the rungs and the hand-written pipeline
is read from the committed lowering record (:mod:`measure.lowered`): the book build compiles
nothing.  The value functions return ``{glue key: printed text}``; a value whose record is
missing reads ``—``.
"""
from __future__ import annotations

from typing import Any

from coursebook.records import DASH, NO_RESULT, _fmt_err, bench, floor3, load, records, search
from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["pipeline_values", "tuned_values", "replicate_values", "fp8_values", "ladder_bars", "ladder_rows",
           "tuning_rows", "ws_rows", "power_rows", "lowp_rows", "audit_rows", "targets", "fp8_section",
           "audit_table", "lowered_evidence", "ws_evidence", "wgmma_descriptors", "ladder_replicates",
           "search_times", "vs_automatic", "ws_label", "WS_KEYS", "LADDER_REPEATS"]


def pipeline_values() -> dict[str, str]:
    """The tuned search and the hand-written pipeline as configured: rounds, candidate counts,
    register budgets, arrivals per stage, stages ahead and shared memory (``calc.gemm.bench.*``,
    ``calc.gemm.tune.*``, ``calc.gemm.ws.*``, ``calc.gemm.ex.ws_*``)."""
    from ledger.tiles import HOPPER

    from kernels.gemm import ladder, ws
    from measure.suites.gemm import ladder as suite
    from measure.suites.gemm.common import BENCH_ROUNDS

    cands = suite.TUNE_CANDIDATES
    v = {"calc.gemm.bench.rounds": str(BENCH_ROUNDS), "calc.gemm.tune.search_rounds": str(suite.SEARCH_ROUNDS),
         "calc.gemm.tune.n_ws": str(sum(1 for c in cands if c.get("ws"))),
         "calc.gemm.tune.n_auto": str(sum(1 for c in cands if not c.get("ws"))),
         "calc.gemm.ws.producer_regs": str(ws.PRODUCER_REGS), "calc.gemm.ws.consumer_regs": str(ws.CONSUMER_REGS),
         "calc.gemm.ws.cluster_arrivals": str(ws.empty_arrivals(2))}
    for st, inf in ((3, 1), (3, 0), (4, 0)):
        v[f"calc.gemm.ex.ws_ahead_s{st}_if{inf}"] = str(ws.stages_ahead(st, inf))
    ws4 = next(c for c in cands if c.get("ws") and c["stages"] == 4 and c.get("epi_cols"))
    v["calc.gemm.ex.ws_s4_smem_kb"] = f"{ladder.smem_budget(ws4) / 1024:.0f}"
    v["calc.gemm.ex.ws_s4_full_c_kb"] = f"{ladder.smem_budget({**ws4, 'epi_cols': 0}) / 1024:.0f}"
    v["calc.gemm.ex.ws_smem_limit_kb"] = f"{HOPPER.smem_per_block / 1024:.0f}"
    return v


def tuned_values(results: dict | None) -> dict[str, str]:
    """The tuned rung 4 in its search and in the alternating rounds against cuBLAS, the persistent
    candidates against the best one-block-per-tile one, what NVML saw, the cuBLAS kernel, and the
    spread between byte-identical twins (``derived.gemm.tune.*``, ``derived.gemm.power.*``, ``derived.gemm.cublas.*``)."""
    v: dict[str, str] = {}
    for side in (4096, 8192):
        srch = search(results, f"tuned rung4 {side}^3", "gemm.ladder")
        ms = (srch or {}).get("ms") or {}
        rec = bench(results, f"tuned rung4 {side}^3", "gemm.ladder")
        cub = ((rec or {}).get("baselines") or {}).get("cuBLAS")
        v[f"derived.gemm.cublas.s{side}.tflops"] = f"{rec['flops'] / (cub * 1e-3) / 1e12:.1f}" if rec and cub else DASH
        best = min(ms.values()) if ms else None
        v[f"derived.gemm.tune.s{side}.search_us"] = f"{best * 1e3:.1f}" if best else DASH
        v[f"derived.gemm.tune.s{side}.ratio"] = (floor3(rec["speedup"]["cuBLAS"]) if rec and (rec.get("speedup") or {}).get("cuBLAS")
                                          else DASH)
        rounds = (rec or {}).get("ms_per_round") or {}
        if rounds.get("kernel") and rounds.get("cuBLAS"):
            rr = [c / k for k, c in zip(rounds["kernel"], rounds["cuBLAS"])]
            v[f"derived.gemm.tune.s{side}.round_ratios"] = f"{min(rr):.2f}–{max(rr):.2f}"
            v[f"derived.gemm.tune.s{side}.rounds"] = str(len(rr))
            v[f"derived.gemm.tune.s{side}.bench_over_search_pct"] = (f"{100 * (rec['ms'] / best - 1):.0f}" if best else DASH)
        else:
            for k in ("round_ratios", "rounds", "bench_over_search_pct"):
                v[f"derived.gemm.tune.s{side}.{k}"] = DASH
        # tilelang's automatic persistent candidates against the best automatic one-block-per-tile one
        pers = [t for k, t in ms.items() if "_pers" in k and "_ws" not in k]
        plain = [t for k, t in ms.items() if "_pers" not in k and "_ws" not in k]
        v[f"derived.gemm.tune.s{side}.pers_gap_pct"] = (f"{100 * (min(pers) / min(plain) - 1):.0f}" if pers and plain else DASH)
        v[f"derived.gemm.tune.s{side}.best"] = (srch or {}).get("best") or DASH
        v[f"derived.gemm.tune.s{side}.best_pipeline"] = ("手写" if "_ws" in v[f"derived.gemm.tune.s{side}.best"] else "自动"
                                                  if srch else DASH)
        # what NVML saw while the winner and cuBLAS were timed (sampled by Harness.bench)
        for who, key in (("kernel", "kernel"), ("cuBLAS", "cublas")):
            mhz = ((rec or {}).get("mhz_per_round") or {}).get(who)
            w = ((rec or {}).get("watts_per_round") or {}).get(who)
            v[f"derived.gemm.power.s{side}.{key}_mhz"] = f"{min(mhz):.0f}–{max(mhz):.0f}" if mhz else DASH
            v[f"derived.gemm.power.s{side}.{key}_w"] = f"{min(w):.0f}–{max(w):.0f}" if w else DASH
        v[f"derived.gemm.power.s{side}.limit_w"] = f"{rec['power_limit_w']:.0f}" if rec and rec.get("power_limit_w") else DASH
        v[f"derived.gemm.power.s{side}.events"] = ", ".join((rec or {}).get("clock_events") or []) or DASH
        note = next((r for r in records(results, "gemm.ladder", kind="note") if r.get("name") == f"cuBLAS kernel {side}^3"), None)
        v[f"derived.gemm.cublas.s{side}.kernel"] = ", ".join((note or {}).get("kernels") or []) or DASH
        # identical generated code, timed twice under different labels: the spread of the search's timings
        gaps = [abs(ms[k] / ms[k[: -len("_inferred")]] - 1) * 100 for k in ms
                if k.endswith("_inferred") and k[: -len("_inferred")] in ms]
        lo, hi = (f"{min(gaps):.1f}", f"{max(gaps):.1f}") if gaps else (DASH, DASH)
        v[f"derived.gemm.tune.s{side}.twin_gap_pct"] = lo if lo == hi else f"{lo}–{hi}"
    return v


def fp8_values(results: dict | None) -> dict[str, str]:
    """The fp8 GEMM: the waves of the promoted kernel's tiles at 4096^3 (``calc.gemm.fp8.*``); from the
    records the winning configuration, the hand-written pipeline's gain over tilelang's automatic
    two-level candidates, and what two partials used in turn cost (``derived.gemm.fp8.*``)."""
    from ledger.gemm import grid_waves
    from ledger.tiles import HOPPER

    v: dict[str, str] = {}
    for bn in (192, 128):  # one block per SM
        g, w, fill = grid_waves(4096, 4096, 128, bn)
        v[f"calc.gemm.fp8.n{bn}.grid"] = str(g)
        v[f"calc.gemm.fp8.n{bn}.waves_exact"] = f"{g / HOPPER.sms:.2f}"
        v[f"calc.gemm.fp8.n{bn}.fill_pct"] = f"{100 * fill:.0f}"
    v["calc.gemm.fp8.n192.partial_cols"] = str(4096 - (4096 // 192) * 192)
    for side in (4096, 8192):
        rec = bench(results, f"fp8 e4m3 {side}^3", "gemm.lowp")
        v[f"derived.gemm.fp8.s{side}.config"] = str(rec["config"]) if rec and rec.get("config") else DASH
        fms = (search(results, f"fp8 promoted {side}^3", "gemm.lowp") or {}).get("ms") or {}
        hand = [t for k, t in fms.items() if "_ws" in k]
        auto = [t for k, t in fms.items() if "_ws" not in k]
        v[f"derived.gemm.fp8.s{side}.ws_gain_pct"] = f"{100 * (min(auto) / min(hand) - 1):.0f}" if hand and auto else DASH
        t1 = fms.get("128x128x128_s6_t256_ws_if1_pers")
        t0 = fms.get("128x128x128_s6_t256_ws_if0_pers")
        v[f"derived.gemm.fp8.s{side}.if1_loss_pct"] = f"{100 * (t1 / t0 - 1):.0f}" if t0 and t1 else DASH
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


def replicate_values(results: dict | None) -> dict[str, str]:
    """Values over the declared repeats of the tuned search (:func:`ladder_replicates`): the
    winner's ratio to cuBLAS per run, and the hand-written candidates' gains as ranges
    (``derived.gemm.tune.runs``, ``derived.gemm.tune.s*.ratio_*``, ``derived.gemm.ws.*``)."""
    v: dict[str, str] = {}
    runs = ladder_replicates(results) if results else []
    v["derived.gemm.tune.runs"] = "、".join(n.replace("run ", "") for n, _ in runs) or DASH
    v["derived.gemm.tune.n_runs"] = str(len(runs)) if runs else DASH
    for side in (4096, 8192):
        ratios = []
        for _, res in runs:
            b = bench(res, f"tuned rung4 {side}^3", "gemm.ladder")
            ratios.append((b.get("speedup") or {}).get("cuBLAS") if b else None)
        v[f"derived.gemm.tune.s{side}.ratio_runs"] = ("、".join(floor3(r) for r in ratios if r is not None) or DASH)
        v[f"derived.gemm.tune.s{side}.ratio_min"] = floor3(min(r for r in ratios if r is not None)) if any(
            r is not None for r in ratios) else DASH
        labels = {k: ws_label(k) for k in WS_KEYS}
        for k, lab in labels.items():
            v[f"derived.gemm.ws.s{side}.{k}_pct"] = _span([vs_automatic(res, side, lab) for _, res in runs], "+.1f")

        def gain(a: str, b: str, spec: str = "+.1f") -> str:
            """How much faster ``b`` ran than ``a`` in each run, in percent, as a range."""
            out = []
            for _, res in runs:
                ms = search_times(res, side)
                if labels[a] in ms and labels[b] in ms:
                    out.append(100 * (ms[labels[a]] / ms[labels[b]] - 1))
            return _span(out, spec)

        v[f"derived.gemm.ws.s{side}.pers_gain_pct"] = gain("s4_if0", "pers_if0")
        v[f"derived.gemm.ws.s{side}.mc_gain_pct"] = gain("pers_if0", "c2_if0")
        v[f"derived.gemm.ws.s{side}.stage_gain_pct"] = gain("s3_if0", "s4_if0")
        v[f"derived.gemm.ws.s{side}.if1_loss_pct"] = gain("s3_if1", "s3_if0", ".1f")  # how much slower inflight=1 ran
    return v


_RUNG_ZH = {"rung1_naive": "① 朴素", "rung2_shared": "② shared+T.gemm", "rung3_pipelined": "③ 流水",
            "rung4_annotated": "④ 注解", "rung5_mma": "⑤ mma.sync", "rung4_tuned": "④ 调优"}


def ladder_bars(results: dict | None = None):
    """Recorded TFLOP/s of every rung at 4096^3 and 8192^3, cuBLAS on the same run beside them."""
    import numpy as np

    results = load() if results is None else results
    fig = figure(8.6, 4.4)
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


def _f(x: Any, spec: str) -> str:
    return "" if x is None else format(x, spec)


def _checks(results: dict[str, Any] | None, suite: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in records(results, suite, kind="check")}


def ladder_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """One row per rung and shape: TFLOP/s, time, cuBLAS time, ratio, relative Frobenius error."""
    checks = _checks(results, "gemm.ladder")
    rows = []
    for r in records(results, "gemm.ladder", kind="bench"):
        chk = checks.get(r["name"], {})
        cub = (r.get("baselines") or {}).get("cuBLAS")
        rows.append({
            "kernel": r["name"],
            "TFLOP/s": _f(r.get("tflops"), ".1f"),
            "ms": _f(r.get("ms"), ".3f"),
            "cuBLAS ms": _f(cub, ".3f"),
            "vs cuBLAS": _f((r.get("speedup") or {}).get("cuBLAS"), ".2f"),
            "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            "check": "ok" if chk.get("ok") else ("FAIL" if chk else ""),
        })
    return rows


def _pipeline(label: str) -> str:
    return "hand-written" if "_ws" in label else "automatic"


def tuning_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Every candidate of the tuned rung 4 with its time at each shape, the winner marked;
    ``pipeline`` says who wrote the warp-specialized pipeline (tilelang or :mod:`kernels.gemm.ws`)."""
    rows = []
    for r in records(results, "gemm.ladder", kind="search"):
        for label, ms in sorted((r.get("ms") or {}).items(), key=lambda kv: kv[1]):
            rows.append({"search": r["name"], "candidate": label, "pipeline": _pipeline(label), "ms": _f(ms, ".3f"),
                         "winner": "yes" if label == r.get("best") else ""})
        for label, err in (r.get("errors") or {}).items():
            rows.append({"search": r["name"], "candidate": label, "pipeline": _pipeline(label), "ms": "",
                         "winner": f"failed: {err}"[:80]})
    return rows


def search_times(results: dict[str, Any] | None, side: int) -> dict[str, float]:
    """label -> ms of the tuned search at ``side``^3 (empty when not recorded)."""
    for r in records(results, "gemm.ladder", kind="search"):
        if r.get("name") == f"tuned rung4 {side}^3":
            return dict(r.get("ms") or {})
    return {}


def vs_automatic(results: dict[str, Any] | None, side: int, label: str) -> float | None:
    """How much faster candidate ``label`` ran than the fastest automatic candidate of the same
    search, in percent (negative: slower); None when either is missing."""
    ms = search_times(results, side)
    auto = [t for k, t in ms.items() if "_ws" not in k]
    if label not in ms or not auto:
        return None
    return 100.0 * (min(auto) / ms[label] - 1.0)


def _candidates(results: dict[str, Any] | None) -> tuple[frozenset[str], int]:
    """(candidate labels, rounds) of the tuned searches: what makes two runs repeats."""
    out: set[str] = set()
    rounds = 0
    for r in records(results, "gemm.ladder", kind="search"):
        out |= set(r.get("ms") or {}) | set(r.get("errors") or {})
        rounds = max(rounds, int(r.get("rounds", 1)))
    return frozenset(out), rounds


#: The experiment name under which the manifest declares the tuned search's repeats.
LADDER_REPEATS = "gemm.ladder tuned search"


def ladder_replicates(results: dict[str, Any] | None, device: str = "nvidia-h200",
                      results_dir: Any = None) -> list[tuple[str, dict[str, Any]]]:
    """The repeats of the tuned search that ``measure/results/manifest.json`` declares for
    ``device`` (independent runs of the same experiment), as ``(run name, results)`` in the
    declared order.  ``ValueError`` when a declared run searched other candidates or rounds than
    ``results``: a repeat that is not one must not be quoted as one."""
    import re

    from measure.results import repeat_runs

    want = _candidates(results)
    if not want[0]:
        return []
    out = []
    for fname, data in repeat_runs(device, LADDER_REPEATS, results_dir):
        if _candidates(data) != want:
            raise ValueError(f"{fname} is declared a repeat of the tuned search but searched other candidates "
                             f"or rounds")
        m = re.search(r"\.run(\d+)\.json$", fname)
        out.append((f"run {m.group(1)}" if m else fname, data))
    return out


def ws_rows(results: dict[str, Any] | None, sides: tuple[int, ...] = (4096, 8192),
            runs: list[tuple[str, dict[str, Any]]] | None = None) -> list[dict[str, str]]:
    """The hand-written candidates (:mod:`kernels.gemm.ws`) with what each one changes, the time
    in ``results`` and, for each run of ``runs`` (default: just ``results``), the time against
    the fastest automatic candidate of the same search (``+``: faster)."""
    from kernels.gemm.ladder import label
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    runs = runs or [("", results)]
    rows = []
    for cfg in TUNE_CANDIDATES:
        if not cfg.get("ws"):
            continue
        lab = label(cfg)
        row = {"candidate": lab, "stages": str(cfg["stages"]), "wgmma in flight": str(cfg.get("inflight", 1)),
               "C columns per store": str(cfg.get("epi_cols") or cfg["block_N"]),
               "persistent": "yes" if cfg.get("persistent") else "", "cluster": str(cfg.get("cluster", 1))}
        for side in sides:
            t = search_times(results, side).get(lab)
            gains = [vs_automatic(res, side, lab) for _, res in runs]
            row[f"{side}^3 us"] = _f(None if t is None else t * 1e3, ".1f")
            row[f"{side}^3 vs automatic"] = " / ".join("" if g is None else f"{g:+.1f}%" for g in gains)
        rows.append(row)
    return rows if any(r[f"{sides[0]}^3 us"] for r in rows) else []


def power_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Board power and SM clock sampled (NVML) while the tuned rung 4 and cuBLAS were timed, per
    shape and side, with the power limit and the clock-event reasons NVML reported."""
    rows = []
    for r in records(results, "gemm.ladder", kind="bench"):
        mhz, w = r.get("mhz_per_round") or {}, r.get("watts_per_round") or {}
        for who in mhz:
            rows.append({
                "bench": r["name"], "timed": "cuBLAS" if who == "cuBLAS" else "kernel",
                "SM MHz (per-round medians)": f"{min(mhz[who]):.0f}-{max(mhz[who]):.0f}",
                "board W": f"{min(w[who]):.0f}-{max(w[who]):.0f}",
                "power limit W": _f(r.get("power_limit_w"), ".0f"),
                "clock events": ", ".join(r.get("clock_events") or []),
            })
    return rows


def lowp_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """fp8 and dequantize GEMM rows against torch._scaled_mm / fp16 cuBLAS, with the element-wise check
    (a fast low-precision kernel can fail it: speed and accuracy are reported side by side)."""
    checks = _checks(results, "gemm.lowp")
    rows = []
    for r in records(results, "gemm.lowp", kind="bench"):
        sp = r.get("speedup") or {}
        chk = checks.get(r["name"], {})
        rows.append({
            "kernel": r["name"],
            "TFLOP/s": _f(r.get("tflops"), ".1f"),
            "ms": _f(r.get("ms"), ".3f"),
            "speedups": ", ".join(f"{v:.2f}x vs {k}" for k, v in sp.items() if v is not None),
            "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            "max abs err": _f(chk.get("max_abs_err"), ".3g"),
            "check": "ok" if chk.get("ok") else (f"FAIL ({chk.get('mismatched')} elements)" if chk else ""),
        })
    return rows


def audit_rows(results: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The sm_90a support audit recorded with the GPU run (suite ``gemm.support``)."""
    audit = None
    for r in records(results, "gemm.support", kind="note"):
        if r.get("name") == "hopper lowp audit":
            audit = r.get("audit")
    rows = []
    for name, a in (audit or {}).items():
        rows.append({
            "construct": name,
            "sm_90a": "compiles" if a.get("supported") else "refused",
            "instruction path": ", ".join(k for k, v in (a.get("path") or {}).items() if v),
            "compiler says": a.get("error") or "",
        })
    return rows


SUITES = ("gemm.ladder", "gemm.bf16", "gemm.splitk", "gemm.splitk_ws", "gemm.streamk", "gemm.grouped", "gemm.grouped_ws",
          "gemm.batched", "gemm.batched_ws", "gemm.lowp", "gemm.w4a16", "gemm.support")


def targets(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Every target the GEMM suites set, with the measured value and whether it was met."""
    rows = []
    for suite in SUITES:
        for r in records(results, suite, kind="bench"):
            for key, t in (r.get("targets") or {}).items():
                rows.append({"kernel": r["name"], "target": f"{key} >= {t.get('target')}",
                             "value": _f(t.get("value"), ".2f"),
                             "met": {True: "yes", False: "no", None: "n/a"}[t.get("met")]})
    return rows


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


def audit_table(results: dict | None = None) -> str:
    """The sm_90a support audit recorded with the GPU run (nothing is compiled to fill a gap)."""
    from measure.render import markdown_table

    rows = audit_rows(results)
    head = "审计结果取自 GPU 运行时一并写下的记录（同一 tilelang 版本的编译器）。"
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


def lowered_evidence(name: str) -> str:
    """The recorded lowering of rung ``name`` (:mod:`measure.lowered`): which instruction paths
    its CUDA reaches, the first line that proves each, its wgmma shapes -- headed by the label,
    tilelang version and date of the record."""
    from measure.lowered import load

    rec = load()
    return (f"({rec['label']}: tilelang {rec['tilelang']}, {rec['date']})\n" + rec["rungs"][name]["report"])


def wgmma_descriptors(name: str) -> list[str]:
    """The wgmma descriptor templates of rung ``name``'s recorded lowering."""
    from measure.lowered import load

    return list(load()["rungs"][name]["wgmma_descriptors"])


def ws_evidence() -> str:
    """The recorded lowering of the hand-written pipeline (persistent, clusters of two): the lines
    of its CUDA that carry the claims of the text, and how it and tilelang's automatic multicast
    pipeline release a stage."""
    from measure.lowered import load

    rec = load()
    return f"({rec['label']}: tilelang {rec['tilelang']}, {rec['date']})\n" + rec["ws"]["report"]
