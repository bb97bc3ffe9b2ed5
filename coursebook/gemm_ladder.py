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

from coursebook.records import DASH, NO_RESULT, _fmt_err, bench, floor3, label_in_words, load, records, search
from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["ledger_words", "BOUND_WORDS", "pipeline_values", "tuned_values", "ladder_values", "ratio_text", "stage_claims", "twin_gaps", "bench_search_claim", "replicate_values", "fp8_values", "ladder_bars", "ladder_rows",
           "config_words", "tuning_table", "ws_table", "ladder_claims", "ws_claims", "fp8_claims", "lowp_claims",
           "fp8_words",
           "tuning_rows", "ws_rows", "power_rows", "lowp_rows", "audit_rows", "targets", "fp8_section",
           "audit_table", "lowered_evidence", "ws_evidence", "wgmma_descriptors", "ladder_replicates",
           "search_times", "vs_automatic", "ws_label", "WS_KEYS", "LADDER_REPEATS"]


#: The ledger's verdicts (:func:`ledger.cost.judge`) and the protocol's statistics (:data:`ledger.protocol.STATISTICS`)
#: as the book writes them.
BOUND_WORDS = {"memory-bound": "受带宽限制", "compute-bound": "受算力限制", "balanced": "恰在平衡点"}
STATISTIC_WORDS = {"median": "中位数", "mean": "平均值", "min": "最小值", "max": "最大值"}


def ledger_words() -> dict[str, str]:
    """The GEMM pages' ledger verdicts in words: ``calc.gemm.ledger.s<side>.bound_<machine>`` for every
    ``gemm.ledger.s<side>.bound_<machine>`` of the registry, and ``calc.gemm.bench.statistic`` for the
    protocol's statistic (the registry keeps the ledger's own English terms)."""
    from ledger.figures import collect

    reg = collect()
    v = {"calc." + k: BOUND_WORDS[f.text] for k, f in reg.items()
         if k.startswith("gemm.ledger.s") and ".bound_" in k}
    v["calc.gemm.bench.statistic"] = STATISTIC_WORDS[reg["gemm.bench.statistic"].text]
    return v


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
         "calc.gemm.tune.n_inferred": str(sum(1 for c in cands if c.get("annotate") is False)),
         "calc.gemm.tune.n_pers": str(sum(1 for c in cands if c.get("persistent") and not c.get("ws"))),
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
        v[f"derived.gemm.tune.s{side}.best_words"] = config_words(srch["best"]) if (srch or {}).get("best") else DASH
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
        gaps = twin_gaps(results, side)
        lo, hi = (f"{min(gaps):.1f}", f"{max(gaps):.1f}") if gaps else (DASH, DASH)
        v[f"derived.gemm.tune.s{side}.twin_gap_pct"] = lo if lo == hi else f"{lo}–{hi}"
    a, b = (v[f"derived.gemm.tune.s{side}.best_pipeline"] for side in (4096, 8192))
    v["derived.gemm.tune.best_pipelines"] = (DASH if DASH in (a, b) else f"在两个形状上都是{a}流水" if a == b else
                                             f"在 4096³ 上是{a}流水，在 8192³ 上是{b}流水")
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
        v[f"derived.gemm.fp8.s{side}.words"] = config_words(rec["config"]) if rec and rec.get("config") else DASH
        fms = (search(results, f"fp8 promoted {side}^3", "gemm.lowp") or {}).get("ms") or {}
        hand = [t for k, t in fms.items() if "_ws" in k]
        auto = [t for k, t in fms.items() if "_ws" not in k]
        v[f"derived.gemm.fp8.s{side}.ws_gain_pct"] = f"{100 * (min(auto) / min(hand) - 1):.0f}" if hand and auto else DASH
        t1 = fms.get("128x128x128_s6_t256_ws_if1_pers")
        t0 = fms.get("128x128x128_s6_t256_ws_if0_pers")
        v[f"derived.gemm.fp8.s{side}.if1_loss_pct"] = f"{100 * (t1 / t0 - 1):.0f}" if t0 and t1 else DASH
    v["derived.gemm.fp8.s8192.words_rel"] = _words_beside(v["derived.gemm.fp8.s4096.words"],
                                                          v["derived.gemm.fp8.s8192.words"])
    return v


def _words_beside(first: str, second: str) -> str:
    """"是 ``second``" (configuration words joined by 、) said beside ``first``: the same words, or the same with a
    few more, without repeating them; else ``second`` whole (a blank between 是 and a leading digit)."""
    pad = lambda t: (" " if t[:1].isascii() and t[:1].isalnum() else "") + t  # noqa: E731
    a, b = first.split("、"), second.split("、")
    if DASH in (first, second) or not first or b[:len(a)] != a:
        return "是" + pad(second)
    return "是同样的配置" + ("再加上" + pad("、".join(b[len(a):])) if b != a else "")


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


def _cublas_tflops(rec: dict | None) -> float | None:
    """TFLOP/s of the cuBLAS timed in a bench record's alternating rounds."""
    cub = ((rec or {}).get("baselines") or {}).get("cuBLAS")
    return rec["flops"] / (cub * 1e-3) / 1e12 if cub and rec.get("flops") else None


def ratio_text(x: float | None) -> str:
    """A time ratio as the page prints it: ``0.33×``; below 0.1 as a fraction (``约 1/771``), which two
    decimals would print as ``0.00×``."""
    if x is None or x <= 0:
        return DASH
    return f"{x:.2f}×" if x >= 0.1 else f"约 1/{1 / x:.0f}"


def ladder_values(results: dict | None) -> dict[str, str]:
    """The ladder's cuBLAS: the range of its TFLOP/s over the rungs' alternating rounds at each shape
    (``derived.gemm.cublas.s*.span``), and each rung's time ratio to the cuBLAS of its own rounds as
    printed (``derived.gemm.ladder.<rung>.s*.x``: small ratios as a fraction)."""
    v: dict[str, str] = {}
    for side in (4096, 8192):
        recs = [r for r in records(results, "gemm.ladder", kind="bench") if r.get("rung") and (r.get("shape") or [0])[0] == side]
        tf = [t for t in (_cublas_tflops(r) for r in recs) if t]
        v[f"derived.gemm.cublas.s{side}.span"] = DASH if not tf else (
            f"{min(tf):.0f}" if f"{min(tf):.0f}" == f"{max(tf):.0f}" else f"{min(tf):.0f}–{max(tf):.0f}")
        by = {r["rung"]: r for r in recs}
        for rung in _RUNG_ZH:
            v[f"derived.gemm.ladder.{rung}.s{side}.x"] = ratio_text(((by.get(rung) or {}).get("speedup") or {}).get("cuBLAS"))
    return v


def ladder_bars(results: dict | None = None):
    """Recorded TFLOP/s of every rung at 4096^3 and 8192^3; beside them the cuBLAS timed in the tuned
    rung's alternating rounds (the cuBLAS the text quotes)."""
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
        tuned = by.get("rung4_tuned") or {}
        vals.append(_cublas_tflops(tuned) or 0.0)  # the cuBLAS timed in the tuned rung's rounds, as the text quotes
        bars = ax.bar(x + (i - (len(sides) - 1) / 2) * width, vals, width, color=colors[i % 2], label=f"{side}³")
        for b, val in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, val + 8, "未测" if val == 0 else f"{val:.0f}",
                    ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(x)
    ax.set_xticklabels([_RUNG_ZH[n] for n in order] + ["cuBLAS"], fontsize=9)
    ax.set_ylabel("TFLOP/s（记录结果）")
    ax.set_title("五级阶梯与调优后的第四级，对照与调优后第四级交替计时的 cuBLAS（fp16，H200）")
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


SUITES = ("gemm.ladder", "gemm.bf16", "gemm.splitk", "gemm.splitk_ws", "gemm.streamk", "gemm.streamk_ws", "gemm.grouped",
          "gemm.grouped_ws", "gemm.batched", "gemm.batched_ws", "gemm.lowp", "gemm.w4a16", "gemm.support")


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


def fp8_words(r: dict) -> str:
    """An fp8 record in words: accumulation and shape (``fp8 e4m3，两级累加，4096³``)."""
    import re

    acc = str(r.get("accumulation") or "")
    kind = "单级累加（教学版）" if "single" in acc or "single-level" in r.get("name", "") else "两级累加"
    m = re.search(r"(\d+)\^3", r.get("name", ""))
    return f"fp8 e4m3，{kind}，{m.group(1) + '³' if m else ''}".rstrip("，")


def _fp8_check(r: dict, checks: dict) -> dict:
    """The element-wise check of an fp8 bench: its check record, else the tolerance stats it carries
    (the single-level teaching variant is timed and measured against the fp8 tolerance, not checked)."""
    return checks.get(r["name"]) or r.get("tolerance") or {}


def fp8_section(results: dict | None = None) -> str:
    """The fp8 records (any name starting ``fp8``), speed and accuracy side by side, followed by
    sentences chosen by what the records say (no fixed verdict)."""
    results = load() if results is None else results
    lowp = records(results, "gemm.lowp")
    checks = {r["name"]: r for r in lowp if r.get("kind") == "check"}
    benches = [r for r in lowp if r.get("kind") == "bench" and str(r.get("name", "")).startswith("fp8")]
    if not benches:
        return f"**{NO_RESULT}**（记录里没有 fp8 kernel）"
    lines = ["| kernel | TFLOP/s | 相对 `torch._scaled_mm` 的加速比 | 逐元素检查 | 最大绝对误差 | 相对 Frobenius 误差 | "
             "同形状 `_scaled_mm`：最大绝对误差 / 相对 Frobenius 误差 |",
             "|---|---:|---:|---|---:|---:|---|"]
    worse, better, failed = [], [], []
    for r in benches:
        chk = _fp8_check(r, checks)
        side = (r.get("shape") or [None])[0]
        ref = checks.get(f"torch._scaled_mm {side}^3", {})
        ok = chk.get("ok")
        mark = {True: "通过", False: f"未通过（{chk.get('mismatched', '?')} 个元素超出容差）", None: DASH}[ok]
        sp = (r.get("speedup") or {}).get("torch._scaled_mm")
        lines.append(f"| {fp8_words(r)} | {r.get('tflops', 0):.0f} | {_fmt_err(sp, '.2f')}× | {mark} | "
                     f"{_fmt_err(chk.get('max_abs_err'), '.3g')} | {_fmt_err(chk.get('rel_fro_err', r.get('rel_fro_err')))} | "
                     f"{_fmt_err(ref.get('max_abs_err'), '.3g')} / {_fmt_err(ref.get('rel_fro_err'))} |")
        if ok is False:
            failed.append((r, chk.get("mismatched", "?")))
        e, e0 = chk.get("rel_fro_err", r.get("rel_fro_err")), ref.get("rel_fro_err")
        if e is not None and e0 is not None:
            (worse if e > 1.05 * e0 else better).append((r, None))
    text = ["\n".join(lines), ""]
    if failed:
        groups = _by_kind(failed)
        text.append("按记录，" + "；".join(
            f"{kind}在 {_and(sides)} 上{'都' if len(sides) > 1 else ''}没有通过逐元素检查"
            f"（{'分别' if len(sides) > 1 else ''}有 {_and(counts)} 个元素超出容差）"
            for kind, (sides, counts) in groups.items()) + "：跑得快，但有元素落在容差之外。")
    both = lambda sides: "都" if len(sides) > 1 else ""  # noqa: E731
    errs = [f"{kind}在 {_and(sides)} 上的误差{both(sides)}高于同形状的 `torch._scaled_mm`"
            for kind, (sides, _) in _by_kind(worse).items()]
    errs += [f"{kind}在 {_and(sides)} 上{both(sides)}与{'它' if worse else '同形状的 `torch._scaled_mm`'}相当或更低"
             for kind, (sides, _) in _by_kind(better).items()]
    if errs:
        text.append("按误差一栏，" + "；".join(errs) + "。")
    if not failed and not worse:
        text.append("按记录，所有 fp8 kernel 都通过了检查，误差不高于 `torch._scaled_mm`。")
    return text[0] + "\n\n" + "".join(text[2:])


def _and(xs: list) -> str:
    """``a``, ``a 与 b``, ``a、b 与 c``."""
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else "、".join(xs[:-1]) + " 与 " + xs[-1]


def _by_kind(recs: list) -> dict[str, tuple[list[str], list]]:
    """fp8 records grouped by accumulation, in words: ``{"单级累加的教学版": (["4096³", "8192³"], [mismatches])}``."""
    out: dict[str, tuple[list[str], list]] = {}
    for r, n in recs:
        words = fp8_words(r).split("，")
        kind = "单级累加的教学版" if "单级" in words[1] else "两级累加的版本"
        sides, counts = out.setdefault(kind, ([], []))
        sides.append(words[-1])
        counts.append(n)
    return out


def fp8_claims(results: dict | None) -> list:
    """The fp8 sentences that conclude from the records (``claim.gemm.fp8.*``)."""
    from coursebook import claims as C

    lowp = records(results, "gemm.lowp")
    checks = {r["name"]: r for r in lowp if r.get("kind") == "check"}
    benches = [r for r in lowp if r.get("kind") == "bench" and str(r.get("name", "")).startswith("fp8")]
    single = [r for r in benches if "single" in str(r.get("accumulation", "")) or "single-level" in r["name"]]
    kept = [r for r in benches if r not in single]
    out = []
    s4 = next((r for r in single if (r.get("shape") or [0])[0] == 4096), None)
    sp = ((s4 or {}).get("speedup") or {}).get("torch._scaled_mm")
    tol = _fp8_check(s4, checks) if s4 else {}
    target = next((t.get("target") for r in kept for t in (r.get("targets") or {}).values()), None)
    kept_ok = [(_fp8_check(r, checks).get("ok")) for r in kept]
    case = None
    if s4 and sp is not None and tol.get("ok") is not None and target is not None and kept and None not in kept_ok:
        fast = sp >= target
        case = ("fast_fails" if fast and tol["ok"] is False else "fast_passes" if fast else "slow") + (
            "_kept_ok" if all(kept_ok) else "_kept_fail")
    tail = {"_kept_ok": "目标表里的 fp8 kernel 都是两级累加的版本，速度与逐元素检查都过了关。",
            "_kept_fail": "目标表里的两级累加版本，也有没过逐元素检查的（见 fp8 一节的表）。"}
    variants = {}
    for k, t in tail.items():
        variants["fast_fails" + k] = ("fp8 一节里只做单级累加的教学版就是这样：在 4096³ 上它是 torch._scaled_mm 的 "
                                      "{sp:.2f} 倍，够得上速度目标，却有 {n} 个元素落在 fp8 的容差之外。" + t)
        variants["fast_passes" + k] = ("fp8 一节里只做单级累加的教学版在 4096³ 上是 torch._scaled_mm 的 {sp:.2f} 倍，"
                                       "这一次也没有元素落在容差之外，但它的误差仍高于两级累加的版本。" + t)
        variants["slow" + k] = ("fp8 一节里只做单级累加的教学版在 4096³ 上只是 torch._scaled_mm 的 {sp:.2f} 倍。" + t)
    out.append(C.choose("claim.gemm.fp8.speed_vs_check", case, variants, sp=sp, n=tol.get("mismatched")))
    # the two-level kernels of record: error next to _scaled_mm's, time next to the single-level variant
    pairs = []
    for r in kept:
        side = (r.get("shape") or [None])[0]
        ref = checks.get(f"torch._scaled_mm {side}^3", {})
        one = next((x for x in single if (x.get("shape") or [None])[0] == side), None)
        e, e0 = _fp8_check(r, checks).get("rel_fro_err", r.get("rel_fro_err")), ref.get("rel_fro_err")
        if None in (e, e0) or not one or not one.get("ms") or not r.get("ms"):
            pairs = None
            break
        pairs.append((e / e0, r["ms"] / one["ms"]))
    case = None if not pairs else ("trade" if all(a <= 1.05 for a, _ in pairs) and all(b > 1 for _, b in pairs) else
                                   "close" if all(a <= 1.05 for a, _ in pairs) else "worse")
    out.append(C.choose("claim.gemm.fp8.two_level", case, {
        "trade": "记录里的两级累加版本正是这样：误差与 _scaled_mm 相当（不超过它的 {emax:.2f} 倍），代价是主循环里"
                 "每隔若干步多一次寄存器之间的加法，比单级版本慢 {smin:.0f}%～{smax:.0f}%——这正是 cuBLAS 替你做的那笔交易。",
        "close": "记录里的两级累加版本误差与 _scaled_mm 相当（不超过它的 {emax:.2f} 倍），速度也没有比单级版本慢。",
        "worse": "记录里的两级累加版本，误差仍比 _scaled_mm 高（最多是它的 {emax:.2f} 倍）：提升的间隔还可以再收紧。"},
        emax=max(a for a, _ in pairs) if pairs else None,
        smin=100 * (min(b for _, b in pairs) - 1) if pairs else None,
        smax=100 * (max(b for _, b in pairs) - 1) if pairs else None))
    gains = [fp8_values(results).get(f"derived.gemm.fp8.s{s}.ws_gain_pct") for s in (4096, 8192)]
    g = None if DASH in gains else [float(x) for x in gains]
    out.append(C.choose("claim.gemm.fp8.ws_wins", None if g is None else ("wins" if min(g) > 0 else "not"), {
        "wins": "持久化的手写候选比同一次搜索里最快的自动两级累加候选快 {a:.0f}%（4096³）与 {b:.0f}%（8192³），胜者就是它们。",
        "not": "持久化的手写候选与同一次搜索里最快的自动两级累加候选相比，快慢是 {a:+.0f}%（4096³）与 {b:+.0f}%（8192³），"
               "并没有在两个形状上都胜出。"}, a=g[0] if g else None, b=g[1] if g else None))
    loss = [fp8_values(results).get(f"derived.gemm.fp8.s{s}.if1_loss_pct") for s in (4096, 8192)]
    lv = None if DASH in loss else [float(x) for x in loss]
    same = lv is not None and f"{lv[0]:.0f}" == f"{lv[1]:.0f}"  # one figure for both shapes when they round alike
    out.append(C.choose("claim.gemm.fp8.two_partials", None if lv is None else (
        ("slower_same" if same else "slower") if min(lv) > 0 else "not"), {
        "slower_same": "实测它在 4096³ 与 8192³ 上都比同一块形状的单部分和版本慢了 {a:.0f}%。",
        "slower": "实测它比同一块形状的单部分和版本慢了 {a:.0f}%（4096³）与 {b:.0f}%（8192³）。",
        "not": "实测它与同一块形状的单部分和版本相比，快慢是 {a:+.0f}% 与 {b:+.0f}%，没有一致地变慢。"},
        a=lv[0] if lv else None, b=lv[1] if lv else None))
    return out


def lowp_claims(results: dict | None) -> list:
    """The W4A16 sentences chosen by the records (``claim.gemm.w4a16.*``)."""
    from coursebook import claims as C

    x = {}
    for key, name in (("square", "dequant W4A16 g128 4096x4096x4096"), ("decode", "dequant W4A16 g128 128x8192x8192")):
        r = bench(results, name, "gemm.lowp") or {}
        x[key] = (r.get("speedup") or {}).get("cuBLAS fp16 weights")
    square = C.threshold("claim.gemm.w4a16.square", x["square"], 1.0, above="记录里它仍比基线快",
                         below="记录里它比基线慢")
    # the decode shape is read against the square one: "also slower", "slower after all", or faster
    case = None if x["decode"] is None or square.case is None else (
        "won" if x["decode"] >= 1.0 else "also_lost" if square.case == "below" else "lost")
    decode = C.choose("claim.gemm.w4a16.decode", case, {
        "won": "记录里它比基线快", "also_lost": "记录里它也比基线慢", "lost": "记录里它却比基线慢"})
    return [square, decode]


#: The probes of the sm_90a audit (:func:`kernels.gemm.support.audit`) in words, as the list below the table names them.
AUDIT_WORDS = {"int8_gemm": "int8", "int4_gemm": "int4 操作数直接送进 `T.gemm`", "fp8_gemm": "fp8 e4m3",
               "mx_blockscaled": "MX 块缩放（`T.gemm_blockscaled`）", "wgmma_n24": "`block_N` 除以 16 余 8（24）"}
#: The GPU checks of suite ``gemm.support`` in words.
AUDIT_CHECK_WORDS = {"int8 wgmma 256^3 (exact)": "int8 GEMM，256³，要求与 float64 参考逐位一致",
                     "wgmma block_N=24 (8 mod 16)": "fp16 GEMM，`block_N = 24`"}


def audit_table(results: dict | None = None) -> str:
    """The sm_90a support audit recorded with the GPU run (nothing is compiled to fill a gap), probes and
    checks named in words."""
    from measure.render import markdown_table

    rows = audit_rows(results)
    head = "审计结果取自 GPU 运行时一并写下的记录（同一 tilelang 版本的编译器）。"
    if not rows:
        return f"**{NO_RESULT}**"
    zh = {"construct": "探针", "sm_90a": "sm_90a", "instruction path": "指令路径", "compiler says": "编译器的报错（节选）"}
    for r in rows:
        r["compiler says"] = r["compiler says"][:120] + ("…" if len(r["compiler says"]) > 120 else "")
        r["sm_90a"] = {"compiles": "能编译", "refused": "被拒绝"}.get(r["sm_90a"], r["sm_90a"])
        r["construct"] = AUDIT_WORDS.get(r["construct"], r["construct"])
    rows = [{zh[k]: v for k, v in r.items()} for r in rows]
    checks = [r for r in records(results, "gemm.support", kind="check")]
    tail = ""
    if checks:
        tail = "\n\nGPU 上对能编译的两个探针做的检查：\n\n" + "\n".join(
            f"- {AUDIT_CHECK_WORDS.get(c['name'], c['name'])}：{'通过' if c.get('ok') else '未通过'}，"
            f"最大绝对误差 {_fmt_err(c.get('max_abs_err'), '.3g')}"
            + (f"，wgmma 形状 {'、'.join('m{}n{}k{}'.format(*w) for w in c['wgmma_shapes'])}" if c.get("wgmma_shapes") else "")
            for c in checks)
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


# ------------------------------------------------------------------ words instead of labels
_LABEL_WORDS = (
    (r"(\d+)x(\d+)x(\d+)", "{0}×{1}×{2} 的块"), (r"s(\d+)", "{0} 级流水"), (r"t128", "一个计算 warpgroup"),
    (r"t256", "两个计算 warpgroup"), (r"p0", "不做光栅化"), (r"p(\d+)", "光栅化分组宽 {0}"),
    (r"inferred", "布局交给编译器推断"), (r"row", "按整行给 warpgroup 分工"), (r"col", "按整列给 warpgroup 分工"),
    (r"ws", "手写流水"), (r"e(\d+)", "每次写回 {0} 列"), (r"if0", "等 wgmma 全部完成再还缓冲"),
    (r"if(\d+)", "留 {0} 批 wgmma 在飞"), (r"pers", "持久化"), (r"nfast", "先沿 N 方向走"),
    (r"c(\d+)", "{0} 块一簇、多播 B"), (r"prom(\d+)", "每 {0} 个 K 分块提升一次"),
)


def config_words(label: str) -> str:
    """A GEMM configuration label (``128x256x64_s4_t256_p8_ws_e128_if0_pers``) in words."""
    return label_in_words(label, _LABEL_WORDS, "_", "、")


def tuning_table(results: dict | None, top: int = 8) -> str:
    """The automatic candidates of the tuned search, fastest first (at 4096^3), in words, with the
    time at both shapes; the full lists with their labels are in the appendix of records."""
    a, b = search_times(results, 4096), search_times(results, 8192)
    auto = sorted((t, k) for k, t in a.items() if "_ws" not in k)
    if not auto:
        return f"**{NO_RESULT}**"
    lines = ["| 自动流水的候选（按 4096³ 上的耗时排序） | 4096³ (µs) | 8192³ (µs) |", "|---|---:|---:|"]
    for t, k in auto[:top]:
        t8 = b.get(k)
        lines.append(f"| {config_words(k)} | {t * 1e3:.1f} | {'—' if t8 is None else f'{t8 * 1e3:.1f}'} |")
    return "\n".join(lines)


def ws_table(results: dict | None, runs: list | None = None) -> str:
    """The hand-written candidates: what each changes, and how much faster than the fastest automatic
    candidate of the same search it ran, as the range over the declared repeats (``+``: faster)."""
    from kernels.gemm.ladder import label
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    runs = runs or ([("", results)] if results else [])
    rows = []
    for cfg in TUNE_CANDIDATES:
        if not cfg.get("ws"):
            continue
        lab = label(cfg)
        cells = [str(cfg["stages"]), "0（等全部完成）" if not cfg.get("inflight", 1) else str(cfg.get("inflight", 1)),
                 str(cfg.get("epi_cols") or cfg["block_N"]), "是" if cfg.get("persistent") else "否",
                 "两块一簇" if cfg.get("cluster", 1) > 1 else "否"]
        for side in (4096, 8192):
            cells.append(_span([vs_automatic(res, side, lab) for _, res in runs], "+.1f") + "%")
        rows.append(cells)
    if not rows or all(c[-1] == DASH + "%" for c in rows):
        return f"**{NO_RESULT}**"
    head = ("| 流水级数 | 在飞的 wgmma 批数 | 每次写回的列数 | 持久化 | 多播 B | "
            "4096³ 比最快的自动候选快 | 8192³ 比最快的自动候选快 |")
    return "\n".join([head, "|---:|---|---:|---|---|---:|---:|"] + ["| " + " | ".join(c) + " |" for c in rows])


# ------------------------------------------------------------------ sentences chosen by the records
def _r(results, name: str, suite: str = "gemm.ladder") -> dict:
    return bench(results, name, suite) or {}


def twin_gaps(results: dict | None, side: int) -> list[float]:
    """The tuned search's resolution at ``side``^3: how far apart (percent) each candidate with the layout
    annotation off ran from its annotated twin (the same generated code)."""
    ms = search_times(results, side)
    return [abs(ms[k] / ms[k[: -len("_inferred")]] - 1) * 100 for k in ms
            if k.endswith("_inferred") and k[: -len("_inferred")] in ms]


#: The automatic candidates that differ only in the number of stages (the stage comparison of the tuning table).
STAGE_PAIR = ("128x256x64_s3_t256_p8", "128x256x64_s4_t256_p8")


def stage_claims(results: dict | None) -> list:
    """Four stages against three (the automatic candidates of :data:`STAGE_PAIR`), per shape, against the
    search's resolution (the widest gap between byte-identical twins, :func:`twin_gaps`): the tuning
    section's sentence and exercise E4's (``claim.gemm.tune.stages``, ``claim.gemm.ex.e4``)."""
    from coursebook import claims as C

    gaps, cases = {}, []
    for side in (4096, 8192):
        ms, res = search_times(results, side), twin_gaps(results, side)
        if not res or not all(k in ms for k in STAGE_PAIR):
            cases.append(None)
            continue
        g = 100 * (ms[STAGE_PAIR[1]] / ms[STAGE_PAIR[0]] - 1)  # > 0: four stages slower
        gaps[side] = g
        cases.append("within" if abs(g) <= max(res) else ("slower" if g > 0 else "faster"))
    case = None if None in cases else (cases[0] if cases[0] == cases[1] else "mixed" if "within" in cases else "opposite")

    def d(side: int) -> str:
        g = gaps.get(side)
        return "" if g is None else (f"慢 {g:.1f}%" if g > 0 else f"快 {-g:.1f}%")

    vals = dict(a=d(4096), b=d(8192))
    return [
        C.choose("claim.gemm.tune.stages", case, {
            "within": "其三，四级流水与三级（其余参数相同）的差别落在测量分辨率以内：四级在 4096³ 上{a}，在 8192³ 上{b}。"
                      "多一级没有带来可测的收益，却多占了一份共享内存。",
            "slower": "其三，四级流水比三级（其余参数相同）慢，差距超出了测量分辨率：4096³ 上{a}，8192³ 上{b}。"
                      "多一级多占了一份共享内存，流水却已经够深。",
            "faster": "其三，四级流水比三级（其余参数相同）快，差距超出了测量分辨率：4096³ 上{a}，8192³ 上{b}。",
            "mixed": "其三，四级流水与三级（其余参数相同）相比，4096³ 上{a}，8192³ 上{b}：只在一个形状上超出了测量分辨率，"
                     "多一级的得失并不一致。",
            "opposite": "其三，四级流水与三级（其余参数相同）相比，4096³ 上{a}，8192³ 上{b}：两个形状上的差距都超出了测量分辨率，"
                        "方向却相反。"}, **vals),
        C.choose("claim.gemm.ex.e4", case, {
            "within": "调优表里自动流水的四级候选与三级的差别落在测量分辨率以内：共享内存多了一份，驻留数却没有因此增加，"
                      "多这一级没有带来可测的收益。",
            "slower": "调优表里自动流水的四级候选比三级慢，超出了测量分辨率：共享内存多了一份，驻留数却没有因此增加。",
            "faster": "调优表里自动流水的四级候选比三级快，超出了测量分辨率：驻留数没有变，收益来自更深的流水。",
            "mixed": "调优表里自动流水的四级候选与三级相比，只在一个形状上超出了测量分辨率：驻留数没有变，多一级的得失并不一致。",
            "opposite": "调优表里自动流水的四级候选与三级相比，两个形状上的差距方向相反：驻留数没有变，多一级的得失并不一致。"},
            **vals),
    ]


def ladder_claims(results: dict | None) -> list:
    """The ladder's and the tuned rung 4's sentences that conclude from the records, chosen by them
    (:mod:`coursebook.claims`; keys ``claim.gemm.*``)."""
    from coursebook import claims as C

    out = []
    tf = {(n, s): _r(results, f"{n} {s}^3").get("tflops") for n in
          ("rung1_naive", "rung2_shared", "rung3_pipelined", "rung4_annotated", "rung5_mma") for s in (4096, 8192)}
    x1 = (_r(results, "rung1_naive 4096^3").get("speedup") or {}).get("cuBLAS")  # the rung's own rounds
    out.append(C.threshold(
        "claim.gemm.ladder.naive", None if not x1 else 1 / x1,
        100.0, above="账本预言的数量级差距原样出现：cuBLAS 是它的 {value:.0f} 倍。",
        below="与 cuBLAS 差 {value:.0f} 倍，没有账本预言的那么悬殊。"))
    r1, r2 = tf[("rung1_naive", 4096)], tf[("rung2_shared", 4096)]
    out.append(C.threshold(
        "claim.gemm.ladder.shared", None if not (r1 and r2) else r2 / r1, 100.0,
        above="张量核上场，一步跨过两个数量级（{value:.0f} 倍）；", below="张量核上场，快了 {value:.0f} 倍；"))
    r3 = tf[("rung3_pipelined", 4096)]
    out.append(C.threshold(
        "claim.gemm.ladder.pipelined", None if not (r2 and r3) else r3 / r2, 1.8,
        above="一行改动，换来 TMA、异步流水与 warp 专门化，吞吐是第二级的 {value:.1f} 倍，大约翻了一倍。",
        below="一行改动，换来 TMA、异步流水与 warp 专门化，吞吐是第二级的 {value:.1f} 倍。"))
    r4, r5 = tf[("rung4_annotated", 4096)], tf[("rung5_mma", 4096)]
    out.append(C.compare(
        "claim.gemm.ladder.annotated", r4, r3, tol=0.02,
        higher="比第三级快 {pct:.0f}%，增益来自光栅化与 TMA 写回；前面说过，swizzle 注解本身在 Hopper 上不改变生成代码。",
        tie="与第三级相当：光栅化与 TMA 写回在这个形状上没有带来可分辨的增益。",
        lower="反而比第三级慢 {pct:.0f}%：光栅化与 TMA 写回在这个形状上没有带来增益。",
        pct=None if not (r3 and r4) else abs(r4 / r3 - 1) * 100))
    out.append(C.compare("claim.gemm.ladder.mma", r5, r4, tol=0.02, lower="比第四级慢。", tie="与第四级相当。",
                         higher="比第四级还快。"))
    order = {}
    for s in (4096, 8192):
        v = [tf[(n, s)] for n in ("rung2_shared", "rung3_pipelined", "rung4_annotated")]
        order[s] = None if None in v or tf[("rung5_mma", s)] is None else (
            v[0] < v[1] < v[2] and tf[("rung5_mma", s)] < v[2])
    same = None if None in order.values() else ("same" if all(order.values()) else "differs")
    out.append(C.choose("claim.gemm.ladder.8192", same, {
        "same": "8192³ 上的格局相同：", "differs": "8192³ 上的排序与 4096³ 不完全相同："}))
    out.append(C.choose("claim.gemm.ladder.why5", None if r4 is None or r5 is None else ("slower" if r5 < r4 else "not"),
                        {"slower": "第五级在 Hopper 上反而比第四级慢，原因在指令路径。", "not": "第五级在 Hopper 上没有比第四级慢，但它走的仍是上一代的指令路径。"}))
    # the automatic persistent candidates against the best one-block-per-tile one, in every repeat
    runs = ladder_replicates(results) if results else []
    flags = []
    for _, res in runs:
        for side in (4096, 8192):
            ms = search_times(res, side)
            pers = [t for k, t in ms.items() if "_pers" in k and "_ws" not in k]
            plain = [t for k, t in ms.items() if "_pers" not in k and "_ws" not in k]
            flags.append(None if not (pers and plain) else min(pers) > min(plain))
    out.append(C.every("claim.gemm.tune.pers_slower", flags,
                       all_="记录里它却在每一次搜索、两个形状上都慢于最好的非持久化自动候选",
                       some="记录里它在 {r} 次重复、两个形状共 {n} 次搜索中有 {k} 次慢于最好的非持久化自动候选",
                       none="记录里它在每一次搜索里都不比最好的非持久化自动候选慢", r=len(runs)))
    return out


def bench_search_claim(results: dict | None):
    """The tuned winner timed against cuBLAS (its bench) against its time in the search, per shape: "几乎不变"
    within half a percent, else how much slower or faster (``claim.gemm.tune.bench_vs_search``)."""
    from coursebook import claims as C

    # the winner timed against cuBLAS (bench) against its time in the search, per shape
    words = {"same": "几乎不变", "slower": "慢了 {p}%", "faster": "快了 {p}%"}
    parts, pcts = [], {}
    for side in (4096, 8192):
        rec, best = bench(results, f"tuned rung4 {side}^3", "gemm.ladder"), min(search_times(results, side).values(), default=None)
        pct = 100 * (rec["ms"] / best - 1) if rec and rec.get("ms") and best else None
        parts.append(None if pct is None else "same" if abs(pct) < 0.5 else "slower" if pct > 0 else "faster")
        pcts[side] = f"{abs(pct):.0f}" if pct is not None else ""
    return C.choose("claim.gemm.tune.bench_vs_search", None if None in parts else "_".join(parts), {
        f"{a}_{b}": "4096³ 上" + words[a].replace("{p}", "{a}") + "，8192³ 上" + words[b].replace("{p}", "{b}")
        for a in words for b in words}, a=pcts[4096], b=pcts[8192])


def ws_claims(results: dict | None) -> list:
    """The hand-written pipeline's sentences, chosen by the declared repeats of the tuned search."""
    from coursebook import claims as C

    runs = ladder_replicates(results) if results else []
    out = []
    lab = {k: ws_label(k) for k in WS_KEYS}

    def gains(side: int, a: str, b: str) -> list:
        """Per repeat: how much faster ``b`` ran than ``a`` (percent)."""
        g = []
        for _, res in runs:
            ms = search_times(res, side)
            g.append(100 * (ms[lab[a]] / ms[lab[b]] - 1) if lab[a] in ms and lab[b] in ms else None)
        return g

    def within(xs: list, tol: float = 2.5) -> str | None:
        if not xs or any(x is None for x in xs):
            return None
        return "within" if all(abs(x) <= tol for x in xs) else ("faster" if all(x > 0 for x in xs) else
                                                                ("slower" if all(x < 0 for x in xs) else "mixed"))

    auto = {s: [vs_automatic(res, s, lab["s3_if0"]) for _, res in runs] for s in (4096, 8192)}
    c = [within(auto[s]) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.plain", None if None in c else ("same" if c == ["within", "within"] else "not"), {
        "same": "原样写出来，速度不变。", "not": "原样写出来，速度已经不同。"}))
    s3 = [within(gains(s, "s3_if1", "s3_if0"), 0.0) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.inflight3", None if None in s3 else (
        "slower" if s3 == ["faster", "faster"] else "not"), {
        "slower": "三级流水时，让一批 wgmma 留在飞行中反而变慢。",
        "not": "三级流水时，让一批 wgmma 留在飞行中并没有一致地变慢。"}))
    p = [within([-x if x is not None else None for x in gains(s, "pers_if0", "pers_if1")]) for s in (4096, 8192)]
    p += [within([-x if x is not None else None for x in gains(s, "c2_if0", "c2_if1")]) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.inflight4", None if None in p else (
        "tie" if all(x in ("within", "mixed") for x in p) else "differs"), {
        "tie": "到了四级流水、持久化之后，留不留这一批在各次重复里互有胜负，差别落在测量分辨率附近",
        "differs": "到了四级流水、持久化之后，留不留这一批的差别依然一致"}))
    st = [within(gains(s, "s3_if0", "s4_if0")) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.stage", None if None in st else (
        "edge" if all(x in ("within",) for x in st) else "clear"), {
        "edge": "多一级流水，收益在分辨率边缘。", "clear": "多一级流水，收益超出了测量分辨率。"}))
    pg = [within(gains(s, "s4_if0", "pers_if0"), 0.0) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.pers", None if None in pg else ("paid" if pg == ["faster", "faster"] else "not"), {
        "paid": "持久化这一次兑现了。", "not": "持久化并没有在每次重复里都更快。"}))
    import statistics

    med = [gains(s, "s4_if0", "pers_if0") for s in (4096, 8192)]
    med = None if any(not g or None in g for g in med) else [statistics.median(g) for g in med]
    out.append(C.choose("claim.gemm.ws.pers_where", None if med is None else (
        "small" if med[0] > med[1] + 0.5 else "same"), {
        "small": "4096³ 上收益更大（各次重复的中位数 {a:+.1f}% 对 {b:+.1f}%），与这样一笔账一致：那里每个输出块的 "
                 "K 循环只有 8192³ 的一半长，每块开头的流水填充与结尾的写回在总时间里占得更多，而持久化的生产者"
                 "在消费者写回时已经在搬下一块的操作数。",
        "same": "两个形状上的收益相近（各次重复的中位数 {a:+.1f}% 对 {b:+.1f}%）：持久化的生产者在消费者写回时已经在搬"
                "下一块的操作数，省下的是每块开头的流水填充与结尾的写回。"},
        a=med[0] if med else None, b=med[1] if med else None))
    mc = [within(gains(s, "pers_if0", "c2_if0"), 0.0) for s in (4096, 8192)]
    out.append(C.choose("claim.gemm.ws.multicast", None if None in mc else (
        "large" if mc[1] == "faster" and mc[0] != "faster" else ("both" if mc == ["faster", "faster"] else "neither")), {
        "large": "多播只在大形状上有用。", "both": "多播在两个形状上都有用。", "neither": "多播没有一致的收益。"}))
    # exercise E12: the three-stage candidate with a batch in flight is the slowest hand-written one,
    # the four-stage one the fastest of those that are not persistent -- in every repeat, both shapes
    slow, fast = [], []
    non_pers = [lab[k] for k in ("s3_if1", "s3_if0", "s4_if0")]
    every_ws = list(lab.values())
    for _, res in runs:
        for side in (4096, 8192):
            ms = search_times(res, side)
            if not all(k in ms for k in every_ws):
                slow.append(None)
                fast.append(None)
                continue
            slow.append(max(every_ws, key=ms.get) == lab["s3_if1"])
            fast.append(min(non_pers, key=ms.get) == lab["s4_if0"])
    flags = [None if a is None else (a and b) for a, b in zip(slow, fast)]
    out.append(C.every("claim.gemm.ex.e12", flags,
                       all_="记录里，每一次搜索、两个形状上，它都是手写候选中最慢的；四级、等全部完成的那个领先最多，"
                            "它也都是不持久化的手写候选里最快的。",
                       some="记录里，{r} 次重复、两个形状共 {n} 次搜索中有 {k} 次是这样的排序：它最慢，四级、等全部完成的那个"
                            "在不持久化的手写候选里最快；另外 {rest} 次，噪声盖过了领先一级的差别。",
                       none="记录里的排序并不如此：领先几级只是一个因素，在这台功耗封顶的卡上，它没有决定名次。",
                       r=len(runs), rest=len(flags) - sum(bool(f) for f in flags)))
    out.append(bench_search_claim(results))
    ratios = {s: [] for s in (4096, 8192)}
    for _, res in runs:
        for s in (4096, 8192):
            b = bench(res, f"tuned rung4 {s}^3", "gemm.ladder")
            ratios[s].append(((b or {}).get("speedup") or {}).get("cuBLAS"))
    out.append(C.every("claim.gemm.vs_cublas.s8192", [None if x is None else x > 1.0 for x in ratios[8192]],
                       all_="每一次运行都略快于 cuBLAS", some="{n} 次运行中有 {k} 次快于 cuBLAS",
                       none="{n} 次运行都没有快过 cuBLAS"))
    lo = None if not ratios[4096] or None in ratios[4096] else min(ratios[4096])
    out.append(C.threshold("claim.gemm.vs_cublas.s4096", lo, 0.95,  # cut like the list of runs (floor3), never rounded
                           above="与它相差几个百分点以内（最慢的一次是它的 {cut} 倍）",
                           below="最慢的一次只有它的 {cut} 倍", cut=None if lo is None else floor3(lo)))
    return out
