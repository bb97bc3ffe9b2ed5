"""Tiles and waves: how many blocks a grid launches, how full its last wave is, what a tile asks
of shared memory and registers -- and what the split-K, stream-K, grouped and batched records
measured against those predictions.

Analytic values come from :mod:`ledger.gemm` and :mod:`ledger.tiles` with the suites' own shapes
and tiles (:mod:`measure.suites.gemm`); measured ones from the recorded results.  The value
functions return ``{glue key: printed text}``; a value whose record is missing reads ``—``.
"""
from __future__ import annotations

import re
from typing import Any

from coursebook.records import DASH, NO_RESULT, bench, floor3, load, records, search
from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["exercise_values", "splitk_values", "streamk_values", "variant_values", "splitk_bars", "splitk_table",
           "splitk_l2_table", "streamk_table", "variant_rows"]


def exercise_values() -> dict[str, str]:
    """The numbers of the GEMM chapter's tile exercises: a 4-stage 128x256x64 tile's shared memory
    and blocks per SM, an accumulator's registers, the fp8 tile's shared memory, the waves of 8192^3,
    the protocol's iterations for a 20 us kernel, the W4A16 expansion's instructions per word and over 8192 x 8192
    weights, with and without ``fuse`` (``calc.gemm.ex.*``)."""
    from ledger.gemm import grid_waves
    from ledger.protocol import DEFAULT_PROTOCOL
    from ledger.tiles import accumulator_per_thread, smem_total, tile_decision

    v: dict[str, str] = {}
    r = tile_decision(128, 256, 64, stages=4, threads=256)
    v["calc.gemm.ex.s4_smem_kb"] = f"{r.smem_total / 1024:.0f}"
    v["calc.gemm.ex.s4_blocks"] = str(r.blocks_per_sm)
    v["calc.gemm.ex.acc_256x128_t256"] = f"{accumulator_per_thread(256, 128, 256):.0f}"
    v["calc.gemm.ex.smem_fp8_128x256x128_s4_kb"] = f"{smem_total(128, 256, 128, 4, 1) / 1024:.0f}"
    g, w, fill = grid_waves(8192, 8192, 128, 256)
    v["calc.gemm.ex.w8192.grid"] = str(g)
    v["calc.gemm.ex.w8192.waves"] = str(w)
    v["calc.gemm.ex.w8192.fill_pct"] = f"{100 * fill:.1f}"
    nw, nr = DEFAULT_PROTOCOL.iterations(0.02)
    v["calc.gemm.ex.iters_20us_warm"] = str(nw)
    v["calc.gemm.ex.iters_20us_rep"] = str(nr)
    from ledger.w4a16 import expand_ops

    words = 8192 * 8192 // 8  # 32-bit words of 8192 x 8192 int4 weights
    for name, fused in (("plain", False), ("fused", True)):
        ops = expand_ops(fused=fused)["total"]
        v[f"calc.gemm.ex.w4_ops_{name}"] = str(ops)
        v[f"calc.gemm.ex.w4_warp_m_{name}"] = f"{words * ops / 32 / 1e6:.2f}"  # warp instructions, millions
    return v


def splitk_values(results: dict | None) -> dict[str, str]:
    """Split-K at the suite's shape: grid, waves, last-wave fill and partial-output bytes of every
    split (``calc.gemm.splitk.*``), the operand bytes the blocks pull from L2; from the records the
    wave predictions and the L2 -> SM rates they imply (``derived.gemm.splitk.*``)."""
    from ledger.cost import dtype_bytes
    from ledger.gemm import grid_waves, split_k_bytes, tiled_traffic

    from measure.suites.gemm import splitk

    v: dict[str, str] = {}
    SM, SN, SK = splitk.SHAPE
    bm, bn = splitk.DEFAULT["block_M"], splitk.DEFAULT["block_N"]
    for s in splitk.SPLITS:
        grid, w, fill = grid_waves(SM, SN, bm, bn, split=s)
        v[f"calc.gemm.splitk.s{s}.grid"] = str(grid)
        v[f"calc.gemm.splitk.s{s}.waves"] = str(w)
        v[f"calc.gemm.splitk.s{s}.fill_pct"] = f"{100 * fill:.1f}"
        v[f"calc.gemm.splitk.s{s}.out_mib"] = f"{split_k_bytes(SM, SN, split=s, separate_reduce=False) / 2**20:.0f}"
    wm, wn = splitk.WIDE["block_M"], splitk.WIDE["block_N"]
    v["calc.gemm.splitk.l2_mb_128"] = f"{tiled_traffic(SM, SN, SK, bm, bn, 'fp16', 'fp32') / 1e6:.0f}"
    v["calc.gemm.splitk.l2_mb_256"] = f"{tiled_traffic(SM, SN, SK, wm, wn, 'fp16', 'fp32') / 1e6:.0f}"
    # staging one fp32 output tile of the wide blocks (why they use element-wise atomics)
    v["calc.gemm.splitk.wide.stage_kib"] = f"{wm * wn * dtype_bytes('fp32') / 1024:.0f}"
    for s_ in (1, 2, 4):
        g, w, fill = grid_waves(SM, SN, wm, wn, split=s_)
        v[f"calc.gemm.splitk.wide.s{s_}.grid"] = str(g)
        v[f"calc.gemm.splitk.wide.s{s_}.fill_pct"] = f"{100 * fill:.0f}"
    for s_ in (2, 4):
        rec = bench(results, f"split-K element 128x256 s={s_} 1024x1024x16384")
        p = (rec or {}).get("predicted_speedup_vs_no_split")
        v[f"derived.gemm.splitk.wide.s{s_}.pred"] = f"{p:.2f}" if p else DASH
    for s in (2, 4, 8):
        rec = bench(results, f"split-K tile s={s} 1024x1024x16384")
        p = (rec or {}).get("predicted_speedup_vs_no_split")
        v[f"derived.gemm.splitk.s{s}.pred"] = f"{p:.2f}" if p else DASH
    l2 = _splitk_l2(results)
    full = [r["l2_tbps"] for r in l2 if (r["fill"] or 0) > 0.9]  # one nearly full wave: every SM pulling
    # the default 128 x 128 blocks unsplit (the sentence is about them: half the SMs reading)
    part = [r["l2_tbps"] for r in l2 if r["split"] == 1 and r["tile"] == f"{bm}×{bn}"]
    v["derived.gemm.splitk.l2_full_tbps"] = f"{min(full):.1f}–{max(full):.1f}" if full else DASH
    v["derived.gemm.splitk.l2_nosplit_tbps"] = _range(part, ".1f") if part else DASH
    return v


def streamk_values(results: dict | None) -> dict[str, str]:
    """Stream-K at the suite's shape: the data-parallel grid's waves (``calc.gemm.streamk.*``) and, from
    the record, the prediction and the L2 -> SM rates of both kernels (``derived.gemm.streamk.*``)."""
    from ledger.gemm import grid_waves, tiled_traffic

    from measure.suites.gemm import streamk

    v: dict[str, str] = {}
    g, w, fill = grid_waves(streamk.SHAPE[0], streamk.SHAPE[1], streamk.DEFAULT["block_M"], streamk.DEFAULT["block_N"])
    v["calc.gemm.streamk.grid"] = str(g)
    v["calc.gemm.streamk.waves"] = str(w)
    v["calc.gemm.streamk.fill_pct"] = f"{100 * fill:.1f}"
    sk = bench(results, "stream-K 1536x1536x8192")
    # the same L2 -> SM reading as for split-K: operand bytes of 128x128 blocks over the time
    l2_sk = tiled_traffic(*streamk.SHAPE, streamk.DEFAULT["block_M"], streamk.DEFAULT["block_N"], "fp16", "fp16")
    v["calc.gemm.streamk.l2_mb"] = f"{l2_sk / 1e6:.0f}"
    dp_ms = ((sk or {}).get("baselines") or {}).get("data-parallel")
    v["derived.gemm.streamk.l2_tbps"] = f"{l2_sk / (sk['ms'] * 1e-3) / 1e12:.1f}" if sk and sk.get("ms") else DASH
    v["derived.gemm.streamk.dp_l2_tbps"] = f"{l2_sk / (dp_ms * 1e-3) / 1e12:.1f}" if dp_ms else DASH
    v["derived.gemm.streamk.pred"] = f"{sk['predicted_speedup_vs_dp']:.2f}" if sk and sk.get("predicted_speedup_vs_dp") else DASH
    return v


def grouped_grid(results: dict | None) -> dict[str, Any] | None:
    """The launch of the recorded grouped GEMM (both forms launch ``T.Kernel(ceil(N / block_N), total M tiles)``,
    :mod:`kernels.gemm.grouped`): M tiles summed over the experts, N tiles, blocks, the blocks one SM holds at once
    by the ledger's budget (:func:`ledger.tiles.tile_decision` of the kernel's tile), the waves and the last wave's
    fill, and the rows the per-expert padding to whole M tiles adds (a fraction of the real rows).
    None without the record."""
    from kernels.gemm.grouped import DEFAULT
    from ledger.tiles import tile_decision, waves

    g = bench(results, "grouped concat G=8 N=4096 K=2048")
    if not (g and g.get("tiles") and g.get("sizes") and g.get("N")):
        return None
    sms = ((results or {}).get("provenance") or {}).get("sm_count") or SMS_DEFAULT
    n_tiles = -(-g["N"] // DEFAULT["block_N"])
    blocks = n_tiles * g["tiles"]
    bps = tile_decision(DEFAULT["block_M"], DEFAULT["block_N"], DEFAULT["block_K"], stages=DEFAULT["stages"],
                        threads=DEFAULT["threads"]).blocks_per_sm
    w, fill = waves(blocks, bps, sms)
    rows = sum(g["sizes"])
    return {"m_tiles": g["tiles"], "n_tiles": n_tiles, "blocks": blocks, "sms": sms, "per_sm": bps, "waves": w,
            "fill": fill,
            "pad": (g["tiles"] * DEFAULT["block_M"] - rows) / rows}


#: The SM count the pages assume where a record does not name its device's (H100 and H200 alike).
SMS_DEFAULT = 132


def variant_values(results: dict | None) -> dict[str, str]:
    """The grouped GEMM's routing as recorded: tiles, experts, the smallest and largest, and its launch (blocks,
    waves, the last wave's fill, the padding; :func:`grouped_grid`) (``derived.gemm.grouped.*``)."""
    g = bench(results, "grouped concat G=8 N=4096 K=2048")
    grid = grouped_grid(results)
    return {
        "derived.gemm.grouped.tiles": str(g["tiles"]) if g and g.get("tiles") else DASH,
        "derived.gemm.grouped.experts": str(len(g["sizes"])) if g and g.get("sizes") else DASH,
        "derived.gemm.grouped.smallest": str(min(g["sizes"])) if g and g.get("sizes") else DASH,
        "derived.gemm.grouped.largest": str(max(g["sizes"])) if g and g.get("sizes") else DASH,
        "derived.gemm.grouped.n_tiles": str(grid["n_tiles"]) if grid else DASH,
        "derived.gemm.grouped.blocks": str(grid["blocks"]) if grid else DASH,
        "derived.gemm.grouped.per_sm": str(grid["per_sm"]) if grid else DASH,
        "derived.gemm.grouped.blocks_per_sm": f"{grid['blocks'] / grid['sms']:.0f}" if grid else DASH,
        "derived.gemm.grouped.waves": str(grid["waves"]) if grid else DASH,
        "derived.gemm.grouped.fill_pct": f"{100 * grid['fill']:.0f}" if grid else DASH,
        "derived.gemm.grouped.pad_pct": f"{100 * grid['pad']:.0f}" if grid else DASH,
        # time lost to the last wave's idle SMs: whole waves against the blocks spread evenly over the SMs
        "derived.gemm.grouped.tail_pct": (f"{100 * (grid['waves'] / (grid['waves'] - 1 + grid['fill']) - 1):.0f}"
                                          if grid else DASH),
        "derived.gemm.grouped.slower_pct": (f"{100 * (1 / g['speedup']['torch.matmul loop'] - 1):.0f}"
                                            if g and (g.get("speedup") or {}).get("torch.matmul loop") else DASH),
    }


def splitk_bars(results: dict | None = None):
    """Split-K at 1024x1024x16384: speedup over no split, predicted by waves vs measured."""
    import numpy as np

    results = load() if results is None else results
    fig = figure(7.6, 4.0)
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
    lines = ["| 段数 | 网格：块数（波数，末波填充） | 预测加速比 | 实测：整块 / 逐元素原子加 | "
             "输出侧 fp32 字节 (MiB) | 对 cuBLAS |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows["tile"]:
        e = el.get(r["split"], {})
        lines.append(f"| {r['split']} | {r['grid']}（{r['waves']} 波，{100 * (r['fill'] or 0):.0f}%） | "
                     f"{r['pred']:.2f}× | {r['meas']:.2f}× / {e.get('meas', 0):.2f}× | "
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
    lines = ["| 块 | 段数 | 块数（末波填充） | 实测 / 预测加速比 | 时间 (µs) | 折合 L2→SM (TB/s) | 对 cuBLAS |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = "—" if r["split"] == 1 or not r["meas"] else f"{r['meas']:.2f}× / {r['pred']:.2f}×"
        lines.append(f"| {r['tile']} | {r['split']} | {r['grid']}（{100 * (r['fill'] or 0):.0f}%） | {ratio} | "
                     f"{r['us']:.1f} | {r['l2_tbps']:.2f} | {r['cub']:.2f}× |")
    return "\n".join(lines)


def streamk_table(results: dict | None = None) -> str:
    results = load() if results is None else results
    recs = records(results, "gemm.streamk", kind="bench")
    if not recs:
        return f"**{NO_RESULT}**"
    from coursebook.records import variant_words

    lines = ["| kernel | 输出块 | 数据并行波数 | 末波填充 | 整块计算的块 / 切开的块 | 预测：对数据并行 | 实测：对数据并行 | 对 cuBLAS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        w, s, sp = r.get("waves") or {}, r.get("schedule") or {}, r.get("speedup") or {}
        lines.append(f"| {variant_words(r['name'])} | {w.get('tiles')} | {w.get('waves')} | {100 * (w.get('last_wave_fill') or 0):.0f}% | "
                     f"{s.get('dp_tiles')} / {s.get('sk_tiles')} | {r.get('predicted_speedup_vs_dp', 0):.2f}× | "
                     f"{sp.get('data-parallel', 0):.2f}× | {sp.get('cuBLAS', 0):.2f}× |")
    return "\n".join(lines)


def _f(x: Any, spec: str) -> str:
    return "" if x is None else format(x, spec)


def variant_rows(results: dict[str, Any] | None) -> list[dict[str, str]]:
    """Split-K, stream-K, grouped and batched rows with their baselines and wave predictions."""
    rows = []
    for suite in ("gemm.splitk", "gemm.splitk_ws", "gemm.streamk", "gemm.streamk_ws", "gemm.grouped", "gemm.grouped_ws",
                  "gemm.batched", "gemm.batched_ws"):
        for r in records(results, suite, kind="bench"):
            sp = r.get("speedup") or {}
            pred = r.get("predicted_speedup_vs_no_split", r.get("predicted_speedup_vs_dp"))
            rows.append({
                "kernel": r["name"],
                "TFLOP/s": _f(r.get("tflops"), ".1f"),
                "ms": _f(r.get("ms"), ".3f"),
                "speedups": ", ".join(f"{v:.2f}x vs {k}" for k, v in sp.items() if v is not None),
                "predicted (waves)": _f(pred, ".2f"),
                "rel. Frobenius err": _f(r.get("rel_fro_err"), ".1e"),
            })
    return rows


# ------------------------------------------------------------------ sentences chosen by the records
def variant_claims(results: dict | None) -> list:
    """The variants' sentences that conclude from the records (``claim.gemm.splitk.*``,
    ``claim.gemm.streamk.*``, ``claim.gemm.grouped.*``, ``claim.gemm.batched.*``)."""
    from coursebook import claims as C

    out = []
    sp = {}
    for s in (2, 4, 8):
        r = bench(results, f"split-K tile s={s} 1024x1024x16384") or {}
        sp[s] = ((r.get("speedup") or {}).get("no-split"), r.get("predicted_speedup_vs_no_split"))
    have = all(a is not None and b is not None for a, b in sp.values())
    if have:
        best2 = sp[2][0] >= max(sp[4][0], sp[8][0])
        short = all(a < b for a, b in sp.values())
        widening = (sp[2][1] - sp[2][0]) <= (sp[4][1] - sp[4][0]) <= (sp[8][1] - sp[8][0])
        case = "expected" if best2 and short and widening else ("short" if short else "other")
    else:
        case = None
    out.append(C.choose("claim.gemm.splitk.shape", case, {
        "expected": "方向和预测一致——切两段最好——但每一档都达不到预测，而且切得越多差距越大。波数模型漏掉了四样东西：",
        "short": "每一档都达不到预测，但差距并不随段数单调变大。波数模型漏掉了四样东西：",
        "other": "有的档位达到甚至超过了预测。即便如此，波数模型也漏掉了四样东西："}))
    l2 = _splitk_l2(results)
    full = [r["l2_tbps"] for r in l2 if (r["fill"] or 0) > 0.9]
    part = [r["l2_tbps"] for r in l2 if r["split"] == 1]
    out.append(C.choose("claim.gemm.splitk.ceiling", None if not (full and part) else (
        "ceiling" if min(full) > max(part) and max(full) / min(full) < 1.35 else "no"), {
        "ceiling": "一旦切到接近满满一波，所有 SM 一起读，折合的速率就停在 {lo:.1f}–{hi:.1f} TB/s 附近，不再随块数增长。",
        "no": "切到接近满满一波之后，折合的速率落在 {lo:.1f}–{hi:.1f} TB/s，并没有停在一个明确的天花板上。"},
        lo=min(full) if full else None, hi=max(full) if full else None))
    w = {s: bench(results, f"split-K element 128x256 s={s} 1024x1024x16384") or {} for s in (2, 4)}
    m2, p2 = (w[2].get("speedup") or {}).get("no-split"), w[2].get("predicted_speedup_vs_no_split")
    m4, p4 = (w[4].get("speedup") or {}).get("no-split"), w[4].get("predicted_speedup_vs_no_split")
    case = None if None in (m2, p2, m4, p4) else ("as_said" if m2 >= 0.85 * p2 and m4 < 0.8 * p4 else "other")
    out.append(C.choose("claim.gemm.splitk.wide", case, {
        "as_said": "实测 {m2:.2f} 倍，与预测的 {p2:.2f} 倍相当接近；切四段时块铺满一波，预测 {p4:.2f} 倍，实测只有 {m4:.2f} 倍——"
                   "又撞上了同一道 L2 天花板。",
        "other": "实测 {m2:.2f} 倍（预测 {p2:.2f} 倍）；切四段时块铺满一波，预测 {p4:.2f} 倍，实测 {m4:.2f} 倍。"},
        m2=m2, p2=p2, m4=m4, p4=p4))
    allsk = [(r.get("ms"), r) for r in records(results, "gemm.splitk", kind="bench") if r.get("ms")]
    if allsk:
        ms, best = min(allsk, key=lambda t: t[0])
        cfg = best.get("config") or {}
        words = f"{cfg.get('block_M', 128)}×{cfg.get('block_N', 128)} 的块切 {best.get('split_k') or 1} 段"
        x = (best.get("speedup") or {}).get("cuBLAS")
        out.append(C.choose("claim.gemm.splitk.best", None if x is None else ("behind" if x < 1 else "ahead"), {
            "behind": "所有切法里最快的是{w}（{form}），{us:.1f} µs，也只到 cuBLAS 的 {x:.2f} 倍。",
            "ahead": "所有切法里最快的是{w}（{form}），{us:.1f} µs，是 cuBLAS 的 {x:.2f} 倍，超过了它。"},
            w=words, form="逐元素原子加" if best.get("form") == "element" else "整块原子加", us=ms * 1e3,
            x=x))
    else:
        out.append(C.choose("claim.gemm.splitk.best", None, {}))
    sk = bench(results, "stream-K 1536x1536x8192", "gemm.streamk") or {}
    meas, pred = (sk.get("speedup") or {}).get("data-parallel"), sk.get("predicted_speedup_vs_dp")
    out.append(C.compare("claim.gemm.streamk.vs_pred", meas, pred, tol=0.05,
                         lower="实测达不到预测", tie="实测与预测相当", higher="实测超过了预测"))
    g = {k: bench(results, n, "gemm.grouped") or {} for k, n in
         (("concat", "grouped concat G=8 N=4096 K=2048"), ("ptr", "grouped ptr G=8 N=4096 K=2048"))}
    xs = [(r.get("speedup") or {}).get("torch.matmul loop") for r in g.values()]
    out.append(C.choose("claim.gemm.grouped.vs_loop", None if None in xs else (
        "lost" if max(xs) < 1 else ("won" if min(xs) >= 1 else "split")), {
        "lost": "两种写法都没有赢过循环", "won": "两种写法都赢过了循环", "split": "两种写法一胜一负"}))
    # the pointer form against the concatenated one: in this table and in the hand-written section's (both group mixes)
    pairs = [(g["ptr"].get("ms"), g["concat"].get("ms"))]
    for mix in GROUP_MIXES:
        ws = {form: bench(results, f"grouped {form} G=8 {mix} N=4096 K=2048", "gemm.grouped_ws") or {}
              for form in ("ptr", "concat")}
        if ws["ptr"].get("ms") and ws["concat"].get("ms"):
            pairs.append((ws["ptr"]["ms"], ws["concat"]["ms"]))
    rs = [a / b for a, b in pairs if a and b]
    case = None if len(rs) < len(pairs) or not rs else (
        "slower" if all(r > 1.02 for r in rs) else "faster" if all(r < 0.98 for r in rs) else
        "tie" if all(abs(r - 1) <= 0.02 for r in rs) else
        "mixed_" + ("slower" if rs[0] > 1.02 else "faster" if rs[0] < 0.98 else "tie"))  # how this page's own table reads
    out.append(C.choose("claim.gemm.grouped.ptr", case, {
        "slower": "指针式每一次都比拼接式慢一点，这可能与那条“不能流水”的限制有关。",
        "tie": "指针式与拼接式差不多快：那条“不能流水”的限制在这个规模上没有显出代价。",
        "faster": "指针式反而每一次都比拼接式快一点：那条“不能流水”的限制在这个规模上没有显出代价。",
        **{f"mixed_{k}": f"指针式在这张表里{w}，下一节的两组对比却不全是这样：那条“不能流水”的限制在这个规模上看不出稳定的代价。"
           for k, w in (("slower", "比拼接式慢一点"), ("faster", "比拼接式快一点"), ("tie", "与拼接式差不多快"))}}))
    b = {k: (bench(results, n, "gemm.batched") or {}).get("speedup", {}).get("torch.bmm") for k, n in
         (("scores", "batched scores Q@K^T 64x2048x2048x128"), ("context", "batched context P@V 64x2048x128x2048"))}
    out.append(C.choose("claim.gemm.batched.gap", None if None in b.values() else (
        "as_said" if b["scores"] < b["context"] < 1 else ("both_won" if min(b.values()) >= 1 else "other")), {
        "as_said": "差距也小得多。",
        "both_won": "两者都快过了 torch.bmm。",
        "other": "两者与 torch.bmm 的差距并不符合“K 短的那个吃亏更多”这条推理。"}))
    return out


# ------------------------------------------------------------------ the variants against the library
# The kernels a reader would take into a model, each timed in alternating rounds against what
# PyTorch already gives them (suites gemm.w4a16, gemm.batched_ws, gemm.grouped_ws, gemm.splitk_ws,
# gemm.bf16).  Numbers and sentences come from the records; where a target is missed the tables
# show the gap and, where the run measured one, the bound that holds for any kernel.
W4_BASE = "cuBLAS fp16 weights"
GRAPH_LOOP = "torch.matmul loop (CUDA graph)"
DENSE = "one dense GEMM, same rows"
WRITE = "write C (zero_)"
#: How close a measured speed-up must come to the wave model's prediction to count as "holds".
WAVE_TOL = 0.15
#: How far above 1 the wave model's prediction must be for it to say "faster" (a smaller predicted gain is
#: read as "no faster": the direction column counts it right when the kernel does not speed up).
WAVE_DIR_TOL = 0.05


def _target(r: dict, base: str) -> tuple[float | None, bool | None]:
    t = (r.get("targets") or {}).get(f"speedup:{base}") or {}
    return t.get("target"), t.get("met")


def _w4a16(results: dict | None) -> list[dict]:
    """The W4A16 bench records, fewest activation rows first."""
    recs = [r for r in records(results, "gemm.w4a16", kind="bench") if r.get("shape")]
    return sorted(recs, key=lambda r: (r["shape"][0], r["shape"][1]))


def _w4_shape(r: dict) -> str:
    m, n, k = r["shape"]
    return f"{m}×{n}×{k}"


def w4a16_table(results: dict | None = None) -> str:
    """W4A16 against cuBLAS on fp16 weights, with the ledger's floor of each side: which bound sets
    it, the fraction of its floor each kernel reaches, and the largest gain the count allows."""
    results = load() if results is None else results
    recs = _w4a16(results)
    if not recs:
        return f"**{NO_RESULT}**"
    # the decode shapes share N and K: the table names them once above it and keeps M in the rows
    nk = {tuple(r["shape"][1:]) for r in recs if r["shape"][0] < r["shape"][1]}
    head = (f"（前 {sum(r['shape'][0] < r['shape'][1] for r in recs)} 行是解码形状，N = K = {next(iter(nk))[0]}，"
            "只写 M；下界、比例与上限都按账本算。）\n\n") if len(nk) == 1 and next(iter(nk))[0] == next(iter(nk))[1] else ""
    lines = ["| 形状 | W4A16 (µs) | cuBLAS，fp16 权重 (µs) | 加速比（目标） | 账本下界 (µs)，由谁定 | "
             "达到各自下界：W4A16 / cuBLAS | 账本允许的最大加速比 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        base = (r.get("baselines") or {}).get(W4_BASE)
        x = (r.get("speedup") or {}).get(W4_BASE)
        tgt, _ = _target(r, W4_BASE)
        bound = {"memory": "字节", "compute": "算力"}.get(r.get("floor_bound"), DASH)
        m = r["shape"][0]
        shape = f"M = {m}" if head and tuple(r["shape"][1:]) in nk else (
            f"{m}³" if len(set(r["shape"])) == 1 else _w4_shape(r))
        lines.append(f"| {shape} | {r['ms'] * 1e3:.1f} | {DASH if base is None else f'{base * 1e3:.1f}'} | "
                     f"{DASH if x is None else f'{x:.2f}×'}（{DASH if tgt is None else f'≥ {tgt}×'}） | "
                     f"{r.get('floor_us', 0):.1f}，{bound} | {100 * (r.get('frac_floor') or 0):.0f}% / "
                     f"{100 * (r.get('cublas_frac_floor') or 0):.0f}% | {r.get('gain_bound', 0):.2f}× |")
    return head + "\n".join(lines)


#: The flush modes of suite ``gemm.flush`` (:data:`ledger.protocol.FLUSH_MODES`), in the order the pages name them.
FLUSHES = ("write", "clean")
#: The bounds the M = 16 rounds of suite ``gemm.flush`` time beside the kernel (baseline labels, by page key).
FLUSH_BOUNDS = {"load": "load path alone", "copy": "torch copy, same bytes moved", "add": "one-element add",
                "read": "plain read, same bytes"}


def _flush(results: dict | None) -> dict:
    """Per W4A16 shape that suite ``gemm.flush`` timed under both flushes: ``{"write": rec, "clean": rec}``."""
    out: dict = {}
    for key, shape in W4_SHAPES:
        pair = {m: bench(results, f"{m} flush: w4a16 {shape}", "gemm.flush") for m in FLUSHES}
        if all(pair.values()):
            out[key] = pair
    return out


def _same_bytes(rec: dict) -> tuple[str | None, float | None]:
    """The label and time (µs) of the cuBLAS baseline on fp16 weights of the int4 weights' byte count."""
    for k, t in (rec.get("baselines") or {}).items():
        if k.startswith("cuBLAS fp16, same bytes") and t:
            return k, t * 1e3
    return None, None


def flush_table(results: dict | None = None) -> str:
    """W4A16 against cuBLAS under the two L2 flushes of suite ``gemm.flush`` (same run, alternating rounds)."""
    results = load() if results is None else results
    fl = _flush(results)
    if not fl:
        return f"**{NO_RESULT}**"
    lines = ["| M×N×K | W4A16 (µs)，重写 / 重写后再读 | cuBLAS (µs)，重写 / 重写后再读 | 加速比，重写 / 重写后再读 | 事先定的目标 |",
             "|---|---:|---:|---:|---:|"]
    for key, pair in fl.items():
        w, c = pair["write"], pair["clean"]
        bw, bc = (w.get("baselines") or {}).get(W4_BASE), (c.get("baselines") or {}).get(W4_BASE)
        xw, xc = (w.get("speedup") or {}).get(W4_BASE), (c.get("speedup") or {}).get(W4_BASE)
        tgt, _ = _target(w, W4_BASE)
        cell = (lambda a, b, f: f"{DASH if a is None else f(a)} / {DASH if b is None else f(b)}")
        lines.append(f"| {_w4_shape(w)} | {cell(w['ms'], c['ms'], lambda t: f'{t * 1e3:.1f}')} | "
                     f"{cell(bw, bc, lambda t: f'{t * 1e3:.1f}')} | {cell(xw, xc, lambda x: f'{x:.2f}×')} | "
                     f"{DASH if tgt is None else f'≥ {tgt}×'} |")
    return "\n".join(lines)


def flush_values(results: dict | None) -> dict[str, str]:
    """The numbers the flush paragraph quotes (``derived.gemm.lib.w4.flush.*``); ``—`` where the record is missing."""
    v: dict[str, str] = {}
    d = DASH
    fl = _flush(results)
    dec = [p for k, p in fl.items() if k != "square"]
    extra = _flush_extra(dec)
    v["derived.gemm.lib.w4.flush.cublas_extra_lo"] = f"{min(c for c, _ in extra) * 1e3:.1f}" if extra else d
    v["derived.gemm.lib.w4.flush.cublas_extra_hi"] = f"{max(c for c, _ in extra) * 1e3:.1f}" if extra else d
    v["derived.gemm.lib.w4.flush.w4_extra_hi"] = f"{max(k for _, k in extra) * 1e3:.1f}" if extra else d
    for side, pcts in _copy_pcts(dec).items():
        v[f"derived.gemm.lib.w4.flush.{side}_copy_lo"] = f"{min(pcts):.0f}" if pcts else d
        v[f"derived.gemm.lib.w4.flush.{side}_copy_hi"] = f"{max(pcts):.0f}" if pcts else d
    p16 = fl.get("m16")
    for mode in FLUSHES:
        r = p16[mode] if p16 else {}
        base = r.get("baselines") or {}
        v[f"derived.gemm.lib.w4.flush.m16_{mode}_us"] = f"{r['ms'] * 1e3:.1f}" if r else d
        for key, lab in FLUSH_BOUNDS.items():
            v[f"derived.gemm.lib.w4.flush.m16_{key}_{mode}_us"] = f"{base[lab] * 1e3:.1f}" if base.get(lab) else d
        lab, t = _same_bytes(r)
        v[f"derived.gemm.lib.w4.flush.m16_same_{mode}_us"] = d if t is None else f"{t:.1f}"
    c16 = p16["clean"] if p16 else {}
    lab, _ = _same_bytes(c16)
    m = re.search(r"\((\d+)x(\d+)x(\d+)\)", lab or "")
    v["derived.gemm.lib.w4.flush.same_rows"] = m.group(2) if m else d
    v["derived.gemm.lib.w4.flush.same_shape"] = "×".join(m.groups()) if m else d
    b16 = (c16.get("baselines") or {}).get(W4_BASE)
    tgt, _ = _target(c16, W4_BASE) if c16 else (None, None)
    v["derived.gemm.lib.w4.flush.m16_need_us"] = f"{b16 * 1e3 / tgt:.1f}" if b16 and tgt else d
    for mode, gap in _load_gap(fl).items():
        v[f"derived.gemm.lib.w4.flush.m16_gap_{mode}_us"] = d if gap is None else f"{gap:.1f}"
    return v


#: How much more (ms) one side must pay for the write flush than the other, on every decode shape, for the
#: page to say that side pays more.
FLUSH_PAYS_MORE_MS = 1e-3


def _flush_extra(dec: list) -> list[tuple[float, float]]:
    """Per decode shape with both flushes and the library timed: (what the write flush adds to cuBLAS, what it
    adds to the W4A16 kernel), in ms, each the difference of the two times as the table prints them (0.1 µs), so
    that the page's differences are those of the numbers beside them."""
    out = []
    for p in dec:
        bw, bc = ((p[m].get("baselines") or {}).get(W4_BASE) for m in FLUSHES)
        if bw and bc:
            out.append((_shown_ms(bw) - _shown_ms(bc), _shown_ms(p["write"]["ms"]) - _shown_ms(p["clean"]["ms"])))
    return out


def _shown_ms(ms: float) -> float:
    """``ms`` rounded as the pages print times, to 0.1 µs (still in ms)."""
    return round(ms * 1e3, 1) / 1e3


def _copy_pcts(dec: list) -> dict[str, list[float]]:
    """Under the clean flush, the % of the run's copy bandwidth each side reaches at the decode shapes: the
    W4A16 kernel on its ledger bytes, cuBLAS on the ledger bytes of the fp16-weight GEMM."""
    from ledger.w4a16 import fp16_cost

    out: dict[str, list[float]] = {"w4": [], "cublas": []}
    for p in dec:
        r = p["clean"]
        base = (r.get("baselines") or {}).get(W4_BASE)
        if r.get("frac_copy_bw"):
            out["w4"].append(100 * r["frac_copy_bw"])
        if base and r.get("copy_gbps") and r.get("shape"):
            gbps = fp16_cost(*r["shape"]).bytes / (base * 1e-3) / 1e9
            out["cublas"].append(100 * gbps / r["copy_gbps"])
    return out


def _load_gap(fl: dict) -> dict[str, float | None]:
    """Per flush: how much longer (µs) the M = 16 kernel takes than its load path alone (of the times as printed)."""
    out: dict[str, float | None] = {}
    for mode in FLUSHES:
        r = (fl.get("m16") or {}).get(mode) or {}
        load_ms = (r.get("baselines") or {}).get(FLUSH_BOUNDS["load"])
        out[mode] = (_shown_ms(r["ms"]) - _shown_ms(load_ms)) * 1e3 if r and load_ms else None
    return out


#: The baselines of the products suite ``gemm.flush`` times again, in words (a product with two targets names them).
_RERUN_BASES = {"cuBLAS": "cuBLAS", "data-parallel": "数据并行切法", "cuBLAS fp16 weights": "cuBLAS（fp16 权重）"}


def flush_rerun(results: dict | None) -> list[dict]:
    """Every target of the products suite ``gemm.flush`` timed again under the write flush (the protocol of the
    verdict table, in a later run), beside the same target in the record the verdict table reads: the product in
    words, the baseline (words), the two values and the two verdicts."""
    from coursebook.records import variant_words

    out = []
    for r in records(results, "gemm.flush", kind="bench"):
        mode, sep, subject = str(r.get("name", "")).partition(" flush: ")
        if mode != "write" or not sep:
            continue
        main_name = subject
        for short in ("split-K ", "stream-K "):  # the flush suite's split-K and stream-K are the hand-written ones
            if subject.startswith(short) and not subject.startswith(short + "ws "):
                main_name = short + "ws " + subject[len(short):]
        main = next((x for x in records(results, None, kind="bench")
                     if x.get("name") == main_name and x.get("suite") != "gemm.flush"), None)
        for key, t in (r.get("targets") or {}).items():
            m = ((main or {}).get("targets") or {}).get(key)
            if not m:
                continue
            base = key.split(":", 1)[1] if key.startswith("speedup:") else key
            out.append({"product": variant_words(main_name), "base": _RERUN_BASES.get(base, base),
                        "n_targets": len(r.get("targets") or {}), "first": m.get("value"), "later": t.get("value"),
                        "first_met": m.get("met"), "later_met": t.get("met")})
    return out


def flush_rerun_claim(results: dict | None) -> Any:
    """``claim.gemm.lib.flush_rerun``: the write-flush column of the flush verdict table is the verdict table's protocol
    in another run -- whether its values and its verdicts are the same as the verdict table's, naming every product
    whose verdict differs (with both values)."""
    from coursebook import claims as C

    rows = flush_rerun(results)
    ok = rows and all(r["first"] is not None and r["later"] is not None and r["first_met"] is not None
                      and r["later_met"] is not None for r in rows)
    diff = [r for r in rows if ok and r["first_met"] != r["later_met"]]
    same_vals = ok and all(floor3(r["first"]) == floor3(r["later"]) for r in rows)
    verdict = {True: "达到", False: "未达到"}
    which = "；".join(
        f"{r['product']}" + (f"对{r['base']}的目标" if r["n_targets"] > 1 else "")
        + f"在前一张表{verdict[r['first_met']]}（{floor3(r['first'])}），在这一栏{verdict[r['later_met']]}（{floor3(r['later'])}）"
        for r in diff)
    lead = "“重写冲刷”一栏与前一张目标表用的是同一套协议，却是另一次运行"
    return C.choose("claim.gemm.lib.flush_rerun", None if not ok else (
        "identical" if same_vals else "differ" if diff else "same"), {
        "identical": lead + "；{n} 项目标的实测值与结论都和那张表相同",
        "same": lead + "，所以实测值与那张表不全相同；{n} 项目标的结论倒是两次都一样",
        "differ": lead + "，所以实测值与那张表不全相同，{n} 项目标里有 {k} 项结论也不同：{which}"},
        n=len(rows), k=len(diff), which=which)


def flush_claims(results: dict | None) -> list:
    """The sentences of the flush paragraph, chosen by suite ``gemm.flush``'s record (``claim.gemm.lib.w4.flush.*``)."""
    from coursebook import claims as C

    out = []
    fl = _flush(results)
    dec = [p for k, p in fl.items() if k != "square"]
    extra = _flush_extra(dec)
    k_lib = sum(c > k + FLUSH_PAYS_MORE_MS for c, k in extra)
    k_ker = sum(k > c + FLUSH_PAYS_MORE_MS for c, k in extra)
    span = lambda xs: f"{min(xs) * 1e3:.1f}–{max(xs) * 1e3:.1f}" if xs else ""  # noqa: E731
    out.append(C.choose("claim.gemm.lib.w4.flush.cost", None if not extra else (
        "library" if k_lib == len(extra) else "kernel" if k_ker == len(extra) else "none" if k_lib == k_ker == 0
        else "mixed"), {
        "library": "{n} 个解码形状上，重写冲刷都让 cuBLAS 多付得更多：cuBLAS 多用 {lib} µs，W4A16 kernel 至多多用 {ker_hi} µs",
        "kernel": "{n} 个解码形状上，重写冲刷都让 W4A16 kernel 多付得更多：它多用 {ker} µs，cuBLAS 至多多用 {lib_hi} µs",
        "none": "{n} 个解码形状上，两边多付的时间相差都不到 {us} µs（cuBLAS 多用 {lib} µs，W4A16 kernel 多用 {ker} µs）",
        "mixed": "{n} 个解码形状上，两边谁多付并不一致（cuBLAS 多用 {lib} µs，W4A16 kernel 多用 {ker} µs）"},
        n=len(extra), us=f"{FLUSH_PAYS_MORE_MS * 1e3:g}", lib=span([c for c, _ in extra]), ker=span([k for _, k in extra]),
        lib_hi=f"{max(c for c, _ in extra) * 1e3:.1f}" if extra else "",
        ker_hi=f"{max(k for _, k in extra) * 1e3:.1f}" if extra else ""))
    clean = [_target(p["clean"], W4_BASE)[1] for p in dec]
    met = "、".join(f"M = {k[1:]}" for k, ok in zip([k for k in fl if k != "square"], clean) if ok)  # fl keys: m1, m16, …
    out.append(C.every("claim.gemm.lib.w4.flush.targets", clean if dec else [],
                       all_="{n} 个解码形状仍然都到了目标", some="{n} 个解码形状里只有 {met} 还到目标",
                       none="{n} 个解码形状没有一个到目标", met=met))
    sq = (fl.get("square") or {}).get("clean") or {}
    tgt, _ = _target(sq, W4_BASE)
    out.append(C.threshold("claim.gemm.lib.w4.flush.square", (sq.get("speedup") or {}).get(W4_BASE), tgt or 0.0,
                           above="仍在目标 {limit}× 之上", below="落到了目标 {limit}× 之下"))
    c16 = (fl.get("m16") or {}).get("clean") or {}
    _, same = _same_bytes(c16)
    out.append(C.compare("claim.gemm.lib.w4.flush.same", c16["ms"] * 1e3 if c16 else None, same, tol=0.02,
                         lower="比它还快", higher="比它还慢", tie="和它一样快（相差不到 2%）"))
    base = c16.get("baselines") or {}
    tgt, _ = _target(c16, W4_BASE) if c16 else (None, None)
    need = base.get(W4_BASE) / tgt if base.get(W4_BASE) and tgt else None
    read = {m: ((fl.get("m16") or {}).get(m, {}).get("baselines") or {}).get(FLUSH_BOUNDS["read"]) for m in FLUSHES}
    out.append(C.choose("claim.gemm.lib.w4.flush.read", None if not c16 else "yes" if read["clean"] else "no", {
        "yes": "；这次拷贝只读了其中一半的字节，所以更贴切的参照是一个只把这些字节全部读一遍、把每个字相加的 TileLang "
               "kernel（不展开、不乘），它要 {clean} µs，重写冲刷下 {write} µs",
        "no": "；读一遍这些字节本身要多久，这次计时没有单独量"}, clean=f"{read['clean'] * 1e3:.1f}" if read["clean"] else "",
        write=f"{read['write'] * 1e3:.1f}" if read["write"] else DASH))
    ref = "read" if read["clean"] else "copy"
    words = {"read": "只把这些字节读一遍的 kernel ", "copy": "搬同样多字节的一次拷贝"}[ref]
    out.append(C.compare("claim.gemm.lib.w4.flush.reach", need, base.get(FLUSH_BOUNDS[ref]),
                         lower=f"比{words}还短：按这个参照，目标超出了读一遍权重所能做到的",
                         higher=f"比{words}长：读一遍权重的时间本身并不挡住这个目标",
                         tie=f"和{words}差不多：目标恰在读一遍权重所能做到的边上", tol=0.02))
    gap = _load_gap(fl)
    out.append(C.compare("claim.gemm.lib.w4.flush.gap", gap.get("clean"), gap.get("write"), tol=0.1,
                         higher="多出来的这一段在干净的冲刷下更长：展开与乘法没能藏进读权重的时间里，它们成了要缩短的部分",
                         lower="多出来的这一段在干净的冲刷下更短",
                         tie="两种冲刷下多出来的这一段差不多长"))
    return out


def _probes(results: dict | None) -> dict[str, float]:
    """The timing probes of the per-element wgmma pipeline at M=16: ``nomma``, ``noexpand`` and the complete
    kernel timed beside them, ``full`` (µs); the other kernels' ``loadonly``/``mmaonly`` probes are read elsewhere."""
    out: dict[str, float] = {}
    for r in records(results, "gemm.w4a16", kind="search"):
        m = re.match(r"w4a16 probe (nomma|noexpand) 16x8192x8192 (\S+)$", r.get("name", ""))
        if not m or "_x" in m.group(2) or m.group(2).endswith("_wd") or m.group(2).startswith(("dec_", "tma_")):
            continue
        ms = r.get("ms") or {}
        out[m.group(1)] = ms.get(m.group(1), 0) * 1e3
        out.setdefault("full", []).append(ms.get("full", 0) * 1e3)  # type: ignore[union-attr]
    if "full" in out:  # the complete kernel, timed beside each probe: their mean
        fulls = out["full"]
        out["full"] = sum(fulls) / len(fulls)  # type: ignore[arg-type]
    return out


def _probe_label(results: dict | None) -> str | None:
    """The configuration the per-element probes of :func:`_probes` measured (None when none ran)."""
    for r in records(results, "gemm.w4a16", kind="search"):
        m = re.match(r"w4a16 probe (nomma|noexpand) 16x8192x8192 (\S+)$", r.get("name", ""))
        if m and "_x" not in m.group(2) and not m.group(2).endswith("_wd") and not m.group(2).startswith(("dec_", "tma_")):
            return m.group(2)
    return None


def w4_kind_words(label: str) -> str:
    """A W4A16 configuration label (:func:`kernels.gemm.w4a16.label`) in a few words a reader of the W4A16
    pages knows: the instruction, the expansion, how the weights are stored, and the page's named options."""
    inst = "mma.sync" if "_mma" in label else "wgmma"
    expand = "按字展开" if "_wd" in label else "逐元素展开"
    weights = ("交错重排" if "_il" in label else "按块连续重排" if "_tl" in label else "原样存放")
    extras = [w for tok, w in (("_q4", "四个计算 warpgroup"), ("_po", "post"), ("_lg", "lag"), ("_kp", "kpair"),
                               ("_fu", "fuse")) if tok in label]
    if label.startswith("m8_"):
        extras.insert(0, "8 行的激活块")
    more = "" if not extras else "、带 " + (extras[0] if len(extras) == 1 else "、".join(extras[:-1]) + " 与 " + extras[-1])
    # a blank between a Latin word and a Chinese character, none between two Chinese characters
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", f"{expand}、权重{weights}{more} 的 {inst} 版本")


def _probe_claims(results: dict | None, key: str, label: str | None, again: bool = False) -> list:
    """Which kernel a set of M = 16 probes measured against the results table's M = 16 winner
    (``claim.gemm.lib.w4.<key>.which``), and whether that winner met its target (``….table``); ``again``: an
    earlier paragraph already described the winner, so the sentences only point back to it."""
    from coursebook import claims as C

    r16 = bench(results, "w4a16 16x8192x8192") or {}
    win = r16.get("label")
    _, met = _target(r16, W4_BASE)
    same = None if not (label and win) else label == win
    which = C.choose(f"claim.gemm.lib.w4.{key}.which", None if same is None else ("same" if same else "other"), {
        "same": "这些探针测的正是结果表里 M = 16 的胜者：{p}",
        "other": ("这些探针测的是{p}，也还不是结果表里 M = 16 的胜者" if again else
                  "这些探针测的是{p}，不是结果表里 M = 16 的胜者；胜者是{w}，这些写法见下文与下一页")},
        p=w4_kind_words(label) if label else "", w=w4_kind_words(win) if win else "")
    table = C.choose(f"claim.gemm.lib.w4.{key}.table", None if same is None or met is None else
                     f"{'same' if same else 'other'}_{'met' if met else 'missed'}", {
        "same_met": "结果表里它到了目标", "same_missed": "结果表里它也还没有到目标",
        "other_met": ("和上面一样，这笔账只属于探针测的版本，结果表里的胜者已经到了目标" if again else
                      "这笔账只属于探针测的这个版本：结果表里 M = 16 的胜者已经到了目标"),
        "other_missed": "结果表里 M = 16 的胜者也还没有到目标"})
    return [which, table]


def _decode_search(results: dict | None) -> dict:
    """The decode shapes' searches split by kernel: the best time (µs) of the register-load decode
    kernel (labels ``dec_…``) and of the wgmma kernel (weights as stored) at M = 1 and 16, the number of valid decode
    configurations, and the M = 1 ``loadonly`` probe (the decode kernel's register loads alone)."""
    out: dict = {"n": 0}
    for m in (1, 16):
        ms = _w4_ms(results, f"{m}x8192x8192")
        dec = [t for k, t in ms.items() if k.startswith("dec_") and t]
        tma = [t for k, t in ms.items() if k.startswith("tma_") and t]
        wg = [t for k, t in ms.items() if not k.startswith(("dec_", "tma_")) and not _repacked(k) and t]
        out[f"dec{m}"] = min(dec) * 1e3 if dec else None
        out[f"tma{m}"] = min(tma) * 1e3 if tma else None
        out[f"wg{m}"] = min(wg) * 1e3 if wg else None
        out["n"] = max(out["n"], len(dec))
        out["n_tma"] = max(out.get("n_tma", 0), len(tma))
        lo = [(r.get("ms") or {}).get("loadonly") for r in records(results, "gemm.w4a16", kind="search")
              if re.match(rf"w4a16 probe loadonly {m}x8192x8192 tma_", r.get("name", ""))]
        lo = [t for t in lo if t]
        out[f"tma_loadonly{m}"] = min(lo) * 1e3 if lo else None
    probes = [(r.get("ms") or {}).get("loadonly") for r in records(results, "gemm.w4a16", kind="search")
              if re.match(r"w4a16 probe loadonly 1x8192x8192 dec_", r.get("name", ""))]
    probes = [t for t in probes if t]
    out["loadonly"] = min(probes) * 1e3 if probes else None
    return out


#: The shapes of suite ``gemm.w4a16`` by the key the pages use.
W4_SHAPES = (("m1", "1x8192x8192"), ("m16", "16x8192x8192"), ("m64", "64x8192x8192"), ("m128", "128x8192x8192"),
             ("square", "4096x4096x4096"))


def _w4_ms(results: dict | None, shape: str, fused: bool = False) -> dict:
    """The W4A16 search at ``shape``: label -> time (s).  Without ``fused`` the ``fuse`` twins (``_fu``: one PTX
    lop3 per fp16 pair) are left out, so that every comparison before the page's paragraph on them is between
    kernels with the same expansion code."""
    ms = (search(results, f"w4a16 {shape}") or {}).get("ms") or {}
    return dict(ms) if fused else {k: t for k, t in ms.items() if "_fu" not in k}


def _repacked(label: str) -> bool:
    """Whether a W4A16 configuration reads weights repacked offline (``_tl`` tiled, ``_il`` interleaved)."""
    return "_tl" in label or "_il" in label


def _wide_search(results: dict | None) -> dict:
    """Per shape: the best time (µs) among the wgmma kernel's candidates with the word-wide
    expansion on weights as they are stored (labels ending ``_wd``, not repacked offline) and among
    those with the per-element one (the decode kernel's ``dec_`` candidates left out); ``None`` where
    the search has none."""
    out: dict = {}
    for key, shape in W4_SHAPES:
        ms = _w4_ms(results, shape)
        wide = [t for k, t in ms.items() if k.endswith("_wd") and not _repacked(k) and t]
        elem = [t for k, t in ms.items() if not k.endswith("_wd") and not k.startswith(("dec_", "tma_")) and t]
        out[key] = (min(wide) * 1e3 if wide else None, min(elem) * 1e3 if elem else None)
    return out


def _ring(results: dict | None, shape: str = "16x8192x8192") -> dict:
    """The word-wide kernel's ring probes at one decode shape: among the two-consumer configurations
    (labels ending ``_wd``, not ``_q4``, weights not repacked) with a ``loadonly`` probe (the TMA ring alone), the one whose
    ring is fastest (the page introduces the four-consumer form after these probes): its ``full``
    and ``loadonly`` times and, when recorded, its ``mmaonly`` time (the ring and the tensor-core work),
    in µs, among the configurations probed both ways (``loadonly`` and ``mmaonly``); an empty dict when
    no such pair of probes ran."""
    best: dict = {}
    for r in records(results, "gemm.w4a16", kind="search"):
        m = re.fullmatch(rf"w4a16 probe loadonly {shape} (\S+_wd)", r.get("name", ""))
        ms = r.get("ms") or {}
        if not m or "_q4" in m.group(1) or _repacked(m.group(1)) or not ms.get("loadonly") or not ms.get("full"):
            continue
        mo = ((search(results, f"w4a16 probe mmaonly {shape} {m.group(1)}") or {}).get("ms") or {}).get("mmaonly")
        if not mo or (best and ms["loadonly"] * 1e3 >= best["loadonly"]):  # probed both ways, fastest ring
            continue
        best = {"label": m.group(1), "full": ms["full"] * 1e3, "loadonly": ms["loadonly"] * 1e3,
                "mmaonly": mo * 1e3}
    return best


def _q4(results: dict | None) -> dict:
    """Per decode shape (M = 1, 16): the best time (µs) among the word-wide candidates with four
    consumer warpgroups (``_q4``) and among those with two, weights as stored (the repacked forms come
    later on the page); ``None`` where the search has none."""
    out: dict = {}
    for key, shape in W4_SHAPES[:2]:
        ms = _w4_ms(results, shape)
        four = [t for k, t in ms.items() if t and k.endswith("_q4_wd")]
        two = [t for k, t in ms.items() if t and k.endswith("_wd") and "_q4" not in k and not _repacked(k)]
        out[key] = (min(four) * 1e3 if four else None, min(two) * 1e3 if two else None)
    return out


def _repack(results: dict | None) -> dict:
    """Per shape: the best time (µs) of the word-wide candidates on interleaved weights (``_il``, the
    scale in the expansion: ``post`` is compared by :func:`_post`), on
    tiled weights only (``_tl`` without ``_il``) and on weights as stored, and the bench winner's label."""
    out: dict = {}
    stored = _wide_search(results)  # the word-wide best on weights as stored
    for key, shape in W4_SHAPES:
        ms = _w4_ms(results, shape)
        il = [t for k, t in ms.items() if t and "_il" in k and "_po" not in k]  # post: see _post()
        tl = [t for k, t in ms.items() if t and "_tl" in k and "_il" not in k]
        out[key] = {"il": min(il) * 1e3 if il else None, "tl": min(tl) * 1e3 if tl else None,
                    "plain": stored[key][0], "winner": (bench(results, f"w4a16 {shape}") or {}).get("label")}
    return out


def _post(results: dict | None) -> dict:
    """Per decode shape (M = 1, 16) whose search ran a ``post`` candidate (``_po``: the scale after the
    tensor-core work): its best time (µs), the best of the interleaved candidates with the scale in the
    expansion (``il``) and, for the fastest ``post`` candidate whose control ran (the same label without
    ``_po``: the same pipeline with the scale in the expansion), both times (``pair``)."""
    out: dict = {}
    for key, shape in W4_SHAPES[:2]:
        ms = _w4_ms(results, shape)
        po = {k: t for k, t in ms.items() if t and "_po" in k and not k.startswith("m8_")}  # 8 rows: see _m8()
        il = [t for k, t in ms.items() if t and "_il" in k and "_po" not in k]
        if not po or not il:
            continue
        ctl = sorted((t, k) for k, t in po.items() if ms.get(k.replace("_po", "")))
        out[key] = {"po": min(po.values()) * 1e3, "il": min(il) * 1e3,
                    "pair": (ctl[0][0] * 1e3, ms[ctl[0][1].replace("_po", "")] * 1e3) if ctl else None}
    return out


def _m8(results: dict | None) -> dict:
    """At M = 1: the best time (µs) among the candidates with an 8-row activation tile (labels ``m8_``, mma.sync's
    n8 operand), the best among those of the same kernel module with a 16-row tile (``m16_``), how many 8-row
    candidates ran, and whether the bench winner is one of them; an empty dict without both kinds."""
    ms = _w4_ms(results, "1x8192x8192")
    m8 = [t for k, t in ms.items() if t and k.startswith("m8_")]
    m16 = [t for k, t in ms.items() if t and k.startswith("m16_")]
    if not m8 or not m16:
        return {}
    winner = (bench(results, "w4a16 1x8192x8192") or {}).get("label") or ""
    return {"m8": min(m8) * 1e3, "m16": min(m16) * 1e3, "n": len(m8), "won": winner.startswith("m8_")}


def _kpair(results: dict | None) -> dict:
    """Per shape M = 64 and 128 whose search ran a ``kpair`` candidate on interleaved weights (``_kp`` and
    ``_il``: two blocks of a cluster split K for the same 128 weight rows): its best time (µs) and the best
    of the interleaved candidates with one block per 64 weight rows (``_il``, neither ``_kp`` nor ``_po``)."""
    out: dict = {}
    for key, shape in W4_SHAPES[2:4]:
        ms = _w4_ms(results, shape)
        kp = [t for k, t in ms.items() if t and "_kp" in k and "_il" in k]
        il = [t for k, t in ms.items() if t and "_il" in k and "_kp" not in k and "_po" not in k]
        if kp and il:
            out[key] = (min(kp) * 1e3, min(il) * 1e3)
    return out


def _lag(results: dict | None) -> dict:
    """At M = 64: the best time (µs) among the candidates with ``lag`` (labels with ``_lg``: the consumer expands
    its next stage while the last stage's wgmma runs), the best among the others, how many lag candidates ran,
    and whether the bench winner is one of them; an empty dict without both kinds."""
    ms = _w4_ms(results, "64x8192x8192")
    lag = [t for k, t in ms.items() if t and "_lg" in k]
    rest = [t for k, t in ms.items() if t and "_lg" not in k]
    if not lag or not rest:
        return {}
    winner = (bench(results, "w4a16 64x8192x8192") or {}).get("label") or ""
    return {"lag": min(lag) * 1e3, "rest": min(rest) * 1e3, "n": len(lag), "won": "_lg" in winner}


def _fuse(results: dict | None) -> dict:
    """Over the W4A16 searches of every shape: ``pairs``, the (fused, plain) times (µs) of each ``fuse`` twin
    (``_fu``: one PTX lop3 per fp16 pair) whose form without it ran in the same search; ``best``, by shape key,
    the best time with ``fuse`` and the best without (``None`` without both); ``won``/``n_won``, how many bench
    winners carry ``fuse`` out of the shapes benched."""
    out: dict = {"pairs": [], "best": {}, "won": 0, "n_won": 0}
    for key, shape in W4_SHAPES:
        ms = _w4_ms(results, shape, fused=True)
        out["pairs"] += [(t * 1e3, ms[k.replace("_fu", "")] * 1e3) for k, t in ms.items()
                         if t and "_fu" in k and ms.get(k.replace("_fu", ""))]
        fu = [t for k, t in ms.items() if t and "_fu" in k]
        plain = [t for k, t in ms.items() if t and "_fu" not in k]
        out["best"][key] = (min(fu) * 1e3, min(plain) * 1e3) if fu and plain else None
        winner = (bench(results, f"w4a16 {shape}") or {}).get("label")
        if winner:
            out["n_won"] += 1
            out["won"] += "_fu" in winner
    return out


def w4_forms_table(results: dict | None = None) -> str:
    """The best time (µs) of each W4A16 form the repacking section compares, per shape of one search: the word-wide
    expansion on weights as stored, tiled, interleaved, interleaved with ``post``, and the best with ``fuse`` and
    without it (:func:`_repack`, :func:`_post`, :func:`_fuse`); ``—`` where a shape's search had no such form."""
    results = load() if results is None else results
    rp, po, fz = _repack(results), _post(results), _fuse(results)
    if not any(r["plain"] for r in rp.values()):
        return f"**{NO_RESULT}**"
    f = lambda x: DASH if x is None else f"{x:.1f}"  # noqa: E731
    lines = ["| 形状 | 原样存放 | 按块连续 | 交错 | 交错 + post | 带 fuse 的最快 | 不带 fuse 的最快 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for key, _ in W4_SHAPES:
        r, best = rp[key], fz["best"].get(key) or (None, None)
        lines.append(f"| {W4_SHAPE_WORDS[key]} | {f(r['plain'])} | {f(r['tl'])} | {f(r['il'])} | "
                     f"{f((po.get(key) or {}).get('po'))} | {f(best[0])} | {f(best[1])} |")
    return "\n".join(lines)


def w4_wide_table(results: dict | None = None) -> str:
    """The best time (µs) of the element-wise and the word-wide expansion per shape of one search
    (:func:`_wide_search`), with how many times faster the word-wide one is; ``—`` where a shape's search had
    no such form."""
    results = load() if results is None else results
    ws = _wide_search(results)
    if not any(w is not None or e is not None for w, e in ws.values()):
        return f"**{NO_RESULT}**"
    f = lambda x: DASH if x is None else f"{x:.1f}"  # noqa: E731
    lines = ["| 形状 | 逐元素展开 (µs) | 按字展开 (µs) | 按字展开快几倍 |", "|---|---:|---:|---:|"]
    for key, _ in W4_SHAPES:
        wide, elem = ws[key]
        lines.append(f"| {W4_SHAPE_WORDS[key]} | {f(elem)} | {f(wide)} | "
                     f"{DASH if not (wide and elem) else f'{elem / wide:.2f}'} |")
    return "\n".join(lines)


def _faster_case(pairs: list) -> tuple[str | None, int]:
    """Over (new, old) time pairs: ``faster`` (the new one more than 2 % faster on every pair), ``slower``
    (more than 2 % slower on every pair), ``none`` (within 2 % on every pair) or ``some``; ``None`` without
    pairs.  Also the number of pairs where the new one is more than 2 % faster."""
    k_fast = sum(a < b * 0.98 for a, b in pairs)
    k_slow = sum(a > b * 1.02 for a, b in pairs)
    return (None if not pairs else "faster" if k_fast == len(pairs) else "slower" if k_slow == len(pairs)
            else "none" if k_fast == 0 and k_slow == 0 else "some"), k_fast


#: The W4A16 shapes by page key, as a sentence names them.
W4_SHAPE_WORDS = {"m1": "M = 1", "m16": "M = 16", "m64": "M = 64", "m128": "M = 128", "square": "4096³"}


def _faster_claim(key: str, pairs: list, names: list[str] | None = None) -> Any:
    """Whether the first time of each (new, old) pair is more than 2 % faster, on every shape measured
    (within 2 % both ways: no difference).  With ``names`` (one per pair) a mixed result names the shapes
    where it was not faster."""
    from coursebook import claims as C

    case, k_fast = _faster_case(pairs)
    rest = "其余的相差不到 2% 或更慢"
    if names and case == "some":
        ties = [nm for nm, (a, b) in zip(names, pairs) if b * 0.98 <= a <= b * 1.02]
        slow = [nm for nm, (a, b) in zip(names, pairs) if a > b * 1.02]
        only = "只有 " if len(ties) + len(slow) == 1 else "在 "
        rest = "，".join([f"{only}{'、'.join(ties)} 上两者相差不到 2%"] * bool(ties) +
                        [f"{only}{'、'.join(slow)} 上它更慢"] * bool(slow))
    return C.choose(key, case, {
        "faster": "测到的 {n} 个形状上它都快出 2% 以上",
        "none": "测到的 {n} 个形状上两者相差都不到 2%",
        "slower": "测到的 {n} 个形状上它都更慢",
        "some": "测到的 {n} 个形状里，它在 {k} 个上快出 2% 以上，{rest}"},
        n=len(pairs), k=k_fast, rest=rest)


def _qk_store(results: dict | None) -> tuple[float | None, float | None]:
    """The scores product's search: the best time (µs) with the overlapped store (two staging
    buffers in turn, ``_b2``, and/or the L2 evict-first hint, ``_ef``) and without either."""
    ms = (search(results, "batched ws scores 64x2048x2048x128") or {}).get("ms") or {}
    new = [t for k, t in ms.items() if t and re.search(r"_(b\d+|ef)(_|$)", k)]
    old = [t for k, t in ms.items() if t and not re.search(r"_(b\d+|ef)(_|$)", k)]
    return (min(new) * 1e3 if new else None, min(old) * 1e3 if old else None)


#: The searches where the in-kernel fix-up (labels ending ``last``) ran beside the separate one.
FIXUP_SEARCHES = {"skws": "split-K ws 1024x1024x16384", "skwsawk": "stream-K ws 1536x1536x8192"}


#: The searches where the spread in-kernel fix-up (labels ending ``spread``) ran beside the separate one.
SPREAD_SEARCHES = {"skwsawk": "stream-K ws 1536x1536x8192"}
#: Label endings of the fix-ups that are not a separate kernel: one reducer, the cluster sum, every contributor a band.
_IN_KERNEL = (" last", " dsmem", " spread", " spread tf")


def _separate(ms: dict) -> list[float]:
    return [t for k, t in ms.items() if t and not k.endswith(_IN_KERNEL)]


def _fixup(results: dict | None, key: str) -> tuple[float | None, float | None]:
    """Best time (µs) of the in-kernel fix-up ("the last block to arrive reduces", labels ending
    ``last``) and of the separate reduction/fix-up kernel (neither ``last`` nor the cluster sum
    ``dsmem`` nor ``spread``), in one search."""
    ms = (search(results, FIXUP_SEARCHES[key]) or {}).get("ms") or {}
    last = [t for k, t in ms.items() if t and k.endswith(" last")]
    sep = _separate(ms)
    return (min(last) * 1e3 if last else None, min(sep) * 1e3 if sep else None)


def _spread(results: dict | None, key: str) -> tuple[float | None, float | None]:
    """Best time (µs) of the spread in-kernel fix-up (every contributor of a tail tile reduces a band of its
    rows, labels ending ``spread``) and of the separate fix-up kernel, in one search."""
    ms = (search(results, SPREAD_SEARCHES[key]) or {}).get("ms") or {}
    spread = [t for k, t in ms.items() if t and k.endswith(" spread")]
    sep = _separate(ms)
    return (min(spread) * 1e3 if spread else None, min(sep) * 1e3 if sep else None)


def _pdl(results: dict | None, key: str) -> tuple[float | None, float | None]:
    """Best time (µs) of the separate reduction/fix-up kernel launched as a programmatic dependent
    (labels holding the word ``pdl``) and launched plainly (no ``pdl``, not a fix-up inside the kernel), in one
    search."""
    ms = (search(results, FIXUP_SEARCHES[key]) or {}).get("ms") or {}
    pdl = [t for k, t in ms.items() if t and _is_pdl(k)]
    plain = [t for k, t in ms.items() if t and not _is_pdl(k) and not k.endswith(_IN_KERNEL)]
    return (min(pdl) * 1e3 if pdl else None, min(plain) * 1e3 if plain else None)


def _is_pdl(label: str) -> bool:
    """Whether a search label names a form whose second kernel is launched as a programmatic dependent: the word
    ``pdl``, or ``pdl@tail`` / ``pdl@end`` (the stream-K kernel's signal moved, :func:`kernels.gemm.streamk.ws_label`)."""
    return any(w == "pdl" or w.startswith("pdl@") for w in label.split())


#: The searches where the separate fix-up with its sum written by hand (labels holding the word ``fv``) ran beside
#: the generated one.
FIXVEC_SEARCHES = {"skwsawk": "stream-K ws 1536x1536x8192"}


def _fixvec(results: dict | None, key: str) -> tuple[float | None, float | None]:
    """Best time (µs) of the separate fix-up kernel with its sum by hand (``fv``: every piece's load in flight at
    once) and with the generated sum (one piece after another), in one search; fix-ups inside the kernel are
    neither."""
    ms = (search(results, FIXVEC_SEARCHES[key]) or {}).get("ms") or {}
    sep = {k: t for k, t in ms.items() if t and not k.endswith(_IN_KERNEL)}
    fv = [t for k, t in sep.items() if "fv" in k.split()]
    gen = [t for k, t in sep.items() if "fv" not in k.split()]
    return (min(fv) * 1e3 if fv else None, min(gen) * 1e3 if gen else None)


def _bench_x(results: dict | None, name: str, base: str) -> float | None:
    return ((bench(results, name) or {}).get("speedup") or {}).get(base)


def library_values(results: dict | None) -> dict[str, str]:
    """The numbers the pages quote about the variants against their libraries
    (``derived.gemm.lib.*``); ``—`` where the record is missing."""
    from ledger.w4a16 import compute_bound_from

    v: dict[str, str] = {}
    d = DASH
    recs = _w4a16(results)
    dq = _decode_search(results)
    for k, name in (("dec1", "m1_us"), ("dec16", "m16_us"), ("wg1", "wg_m1_us"), ("wg16", "wg_m16_us"),
                    ("loadonly", "loadonly_us")):
        v[f"derived.gemm.lib.w4.dec.{name}"] = d if dq[k] is None else f"{dq[k]:.1f}"
    v["derived.gemm.lib.w4.dec.n"] = str(dq["n"]) if dq["n"] else d
    for k, name in (("tma1", "m1_us"), ("tma16", "m16_us"), ("tma_loadonly1", "loadonly_m1_us"),
                    ("tma_loadonly16", "loadonly_m16_us")):
        v[f"derived.gemm.lib.w4.tma.{name}"] = d if dq.get(k) is None else f"{dq[k]:.1f}"
    v["derived.gemm.lib.w4.tma.n"] = str(dq["n_tma"]) if dq.get("n_tma") else d
    r1 = bench(results, "w4a16 1x8192x8192") or {}
    floor1 = r1["ms"] * r1["frac_floor"] * 1e3 if r1.get("frac_floor") else None
    v["derived.gemm.lib.w4.dec.loadonly_floor_pct"] = (d if not (floor1 and dq["loadonly"])
                                                       else f"{100 * floor1 / dq['loadonly']:.0f}")
    for r in recs:
        m = r["shape"][0]
        key = f"derived.gemm.lib.w4.m{m}" if m <= 128 else "derived.gemm.lib.w4.square"
        tgt, _ = _target(r, W4_BASE)
        v[f"{key}.frac_pct"] = f"{100 * r['frac_floor']:.0f}" if r.get("frac_floor") else d
        v[f"{key}.cublas_frac_pct"] = f"{100 * r['cublas_frac_floor']:.0f}" if r.get("cublas_frac_floor") else d
        v[f"{key}.cap"] = f"{r['gain_bound']:.2f}" if r.get("gain_bound") else d
        v[f"{key}.target"] = f"{tgt}" if tgt is not None else d
    if recs:
        r0 = recs[0]
        v["derived.gemm.lib.w4.compute_from"] = f"{compute_bound_from(r0['shape'][1], r0['shape'][2], r0.get('group', 128), r0.get('machine')):.0f}"
    else:
        v["derived.gemm.lib.w4.compute_from"] = d
    ws = _wide_search(results)
    for key, _ in W4_SHAPES:
        wide, elem = ws[key]
        v[f"derived.gemm.lib.w4.wide.{key}_us"] = d if wide is None else f"{wide:.1f}"
        v[f"derived.gemm.lib.w4.elem.{key}_us"] = d if elem is None else f"{elem:.1f}"
    p = _probes(results)
    r16 = bench(results, "w4a16 16x8192x8192") or {}
    base16 = (r16.get("baselines") or {}).get(W4_BASE)
    tgt16, _ = _target(r16, W4_BASE)
    for k in ("full", "nomma", "noexpand"):
        v[f"derived.gemm.lib.w4.probe.{k}_us"] = f"{p[k]:.1f}" if p.get(k) else d
    v["derived.gemm.lib.w4.probe.need_us"] = f"{base16 * 1e3 / tgt16:.1f}" if base16 and tgt16 else d
    v["derived.gemm.lib.w4.probe.overlap_x"] = (f"{base16 * 1e3 / max(p['nomma'], p['noexpand']):.2f}"
                                                if base16 and p.get("nomma") and p.get("noexpand") else d)
    ring = _ring(results)
    for k in ("full", "loadonly", "mmaonly"):
        v[f"derived.gemm.lib.w4.ring.{k}_us"] = f"{ring[k]:.1f}" if ring.get(k) else d
    need = base16 * 1e3 / tgt16 if base16 and tgt16 else None
    v["derived.gemm.lib.w4.ring.need_pct"] = f"{100 * ring['loadonly'] / need:.0f}" if ring and need else d
    from ledger.w4a16 import WS_BLOCKS, setmaxnreg_split

    for k, x in setmaxnreg_split(*WS_BLOCKS[4]).items():  # the four-consumer block's register budget
        v[f"derived.gemm.lib.w4.q4.{k}"] = str(x)
    for key, (four, two) in _q4(results).items():
        v[f"derived.gemm.lib.w4.q4.{key}_us"] = d if four is None else f"{four:.1f}"
        v[f"derived.gemm.lib.w4.q4.{key}_two_us"] = d if two is None else f"{two:.1f}"
    for key, r in _repack(results).items():
        for form in ("il", "tl", "plain"):
            v[f"derived.gemm.lib.w4.repack.{key}_{form}_us"] = d if r[form] is None else f"{r[form]:.1f}"
    post = _post(results)
    for key, _ in W4_SHAPES[:2]:
        r = post.get(key) or {}
        for form in ("po", "il"):
            v[f"derived.gemm.lib.w4.post.{key}_{form}_us"] = f"{r[form]:.1f}" if r else d
        pair = r.get("pair")
        v[f"derived.gemm.lib.w4.post.{key}_pair_po_us"] = f"{pair[0]:.1f}" if pair else d
        v[f"derived.gemm.lib.w4.post.{key}_pair_ctl_us"] = f"{pair[1]:.1f}" if pair else d
    m8 = _m8(results)
    for k in ("m8", "m16"):
        v[f"derived.gemm.lib.w4.m8.{k}_us"] = f"{m8[k]:.1f}" if m8 else d
    v["derived.gemm.lib.w4.m8.n"] = str(m8["n"]) if m8 else d
    kp = _kpair(results)
    for key, _ in W4_SHAPES[2:4]:
        pair = kp.get(key)
        v[f"derived.gemm.lib.w4.kp.{key}_kp_us"] = f"{pair[0]:.1f}" if pair else d
        v[f"derived.gemm.lib.w4.kp.{key}_il_us"] = f"{pair[1]:.1f}" if pair else d
    lag = _lag(results)
    for k in ("lag", "rest"):
        v[f"derived.gemm.lib.w4.lag.{k}_us"] = f"{lag[k]:.1f}" if lag else d
    v["derived.gemm.lib.w4.lag.n"] = str(lag["n"]) if lag else d
    from ledger.w4a16 import expand_ops

    for name, kw in (("ops", {}), ("post_ops", {"scaled": False})):
        v[f"derived.gemm.lib.w4.fuse.{name}_plain"] = str(expand_ops(fused=False, **kw)["total"])
        v[f"derived.gemm.lib.w4.fuse.{name}_fused"] = str(expand_ops(**kw)["total"])
    v["derived.gemm.lib.w4.fuse.lop3_plain"] = str(expand_ops(fused=False)["lop3"])
    v["derived.gemm.lib.w4.fuse.lop3_fused"] = str(expand_ops()["lop3"])
    fz = _fuse(results)
    v["derived.gemm.lib.w4.fuse.n"] = str(len(fz["pairs"])) if fz["pairs"] else d
    for key, _ in W4_SHAPES:
        best = fz["best"].get(key)
        v[f"derived.gemm.lib.w4.fuse.{key}_fu_us"] = f"{best[0]:.1f}" if best else d
        v[f"derived.gemm.lib.w4.fuse.{key}_plain_us"] = f"{best[1]:.1f}" if best else d
    from kernels.gemm.w4a16 import WG_ROWS
    from ledger.w4a16 import post_fold

    fold = post_fold(16, rows=WG_ROWS)  # post at M = 16 (a 16-row activation tile), per thread and group
    v["derived.gemm.lib.w4.post.fold_ffma"] = str(fold["ffma"])
    v["derived.gemm.lib.w4.post.saved_hmul2"] = str(fold["hmul2"])
    v["derived.gemm.lib.w4.m8.fold_ffma"] = str(post_fold(8, rows=WG_ROWS)["ffma"])  # the 8-row tile's fold
    new, old = _qk_store(results)
    v["derived.gemm.lib.bmm.qk.store_new_us"] = d if new is None else f"{new:.1f}"
    v["derived.gemm.lib.bmm.qk.store_old_us"] = d if old is None else f"{old:.1f}"
    # batched: the zero_ write of the scores bounds any kernel that writes them
    for key, name in (("qk", "batched ws scores 64x2048x2048x128"), ("pv", "batched ws context 64x2048x128x2048")):
        r = bench(results, name) or {}
        w = (r.get("baselines") or {}).get(WRITE)
        v[f"derived.gemm.lib.bmm.{key}.write_us"] = f"{w * 1e3:.1f}" if w else d
        v[f"derived.gemm.lib.bmm.{key}.bound_x"] = f"{r['speedup_bound']:.2f}" if r.get("speedup_bound") else d
        v[f"derived.gemm.lib.bmm.{key}.write_frac_pct"] = f"{100 * w / r['ms']:.0f}" if w and r.get("ms") else d
        if r.get("shape"):
            b, m, n, _ = r["shape"]
            v[f"derived.gemm.lib.bmm.{key}.out_mib"] = f"{b * m * n * 2 / 2**20:.0f}"
        else:
            v[f"derived.gemm.lib.bmm.{key}.out_mib"] = d
        tgt, _ = _target(r, "torch.bmm")
        v[f"derived.gemm.lib.bmm.{key}.target"] = f"{tgt}" if tgt is not None else d
    # grouped: the padded hand-written form, the two table-driven forms, the graph loop's spread
    g = _grouped(results)
    pad = [x for (form, _), x in g["x"].items() if form == "padded"]
    tab = [x for (form, _), x in g["x"].items() if form != "padded"]
    v["derived.gemm.lib.grp.padded_x"] = _range(pad)
    v["derived.gemm.lib.grp.table_x"] = _range(tab)
    v["derived.gemm.lib.grp.bound_x"] = _range(list(g["bound"].values()))
    v["derived.gemm.lib.grp.loop_spread_pct"] = _range([100 * s for s in g["spread"].values()], ".1f")
    v["derived.gemm.lib.grp.loop_spread_all_pct"] = _range([100 * s for s in g["spread_all"]], ".1f")
    v["derived.gemm.lib.grp.target"] = f"{g['target']}" if g["target"] is not None else d
    v["derived.gemm.lib.grp.experts"] = str(len(g["sizes"])) if g["sizes"] else d
    v["derived.gemm.lib.grp.smallest"] = str(min(g["sizes"])) if g["sizes"] else d
    v["derived.gemm.lib.grp.largest"] = str(max(g["sizes"])) if g["sizes"] else d
    for key in FIXUP_SEARCHES:
        last, sep = _fixup(results, key)
        v[f"derived.gemm.lib.{key}.last_us"] = d if last is None else f"{last:.1f}"
        v[f"derived.gemm.lib.{key}.sep_us"] = d if sep is None else f"{sep:.1f}"
        pdl, plain = _pdl(results, key)
        v[f"derived.gemm.lib.{key}.pdl_us"] = d if pdl is None else f"{pdl:.1f}"
        v[f"derived.gemm.lib.{key}.plain_us"] = d if plain is None else f"{plain:.1f}"
    for key in SPREAD_SEARCHES:
        spread, _ = _spread(results, key)  # the separate kernel's best is sep_us of the same search
        v[f"derived.gemm.lib.{key}.spread_us"] = d if spread is None else f"{spread:.1f}"
    for key in FIXVEC_SEARCHES:
        fv, gen = _fixvec(results, key)
        v[f"derived.gemm.lib.{key}.fv_us"] = d if fv is None else f"{fv:.1f}"
        v[f"derived.gemm.lib.{key}.gen_us"] = d if gen is None else f"{gen:.1f}"
    # split-K in the hand-written pipeline
    r = bench(results, "split-K ws 1024x1024x16384") or {}
    v["derived.gemm.lib.skws.splits"] = str((r.get("config") or {}).get("splits") or d)
    tgt, _ = _target(r, "cuBLAS")
    v["derived.gemm.lib.skws.target"] = f"{tgt}" if tgt is not None else d
    v["derived.gemm.lib.skws.pred"] = f"{r['predicted_speedup_vs_no_split']:.2f}" if r.get("predicted_speedup_vs_no_split") else d
    r = bench(results, "split-K ws 2048x2048x8192") or {}
    v["derived.gemm.lib.skws.s2048.pred"] = f"{r['predicted_speedup_vs_no_split']:.2f}" if r.get("predicted_speedup_vs_no_split") else d
    v["derived.gemm.lib.skws.s2048.splits"] = str((r.get("config") or {}).get("splits") or d)
    # the tuned GEMM in bf16 and the fp16 repeats at 8192^3
    reps = _fp16_repeats(results)
    v["derived.gemm.lib.fp16_repeats"] = "、".join(floor3(x) for x in reps) if reps else d
    v["derived.gemm.lib.fp16_repeats_n"] = str(len(reps)) if reps else d
    v["derived.gemm.lib.wave_tol_pct"] = f"{100 * WAVE_TOL:.0f}"
    v["derived.gemm.lib.wave_dir_pct"] = f"{100 * WAVE_DIR_TOL:.0f}"
    return v


def _range(xs: list[float], spec: str = ".2f") -> str:
    if not xs:
        return DASH
    lo, hi = format(min(xs), spec), format(max(xs), spec)
    return lo if lo == hi else f"{lo}–{hi}"


def _fp16_repeats(results: dict | None) -> list[float]:
    out = []
    for r in records(results, "gemm.bf16", kind="bench"):
        if re.match(r"tuned rung4 fp16 8192\^3 repeat \d+$", r.get("name", "")):
            x = (r.get("speedup") or {}).get("cuBLAS")
            if x is not None:
                out.append(x)
    return out


#: The group-size mixes of suite ``gemm.grouped_ws`` (record names), in the order the pages name them, and in words.
GROUP_MIXES = ("uniform", "skewed")
GROUP_MIXES_ZH = {"uniform": "相同", "skewed": "悬殊"}


def _grouped(results: dict | None) -> dict:
    """The grouped_ws records: speedup over the graph loop per (form, mix), the dense bound and the
    graph loop's spread per mix (timed beside the padded form), the loop's spread beside every form (``spread_all``,
    the table's column), the target, the skewed routing's sizes."""
    out: dict[str, Any] = {"x": {}, "bound": {}, "spread": {}, "spread_all": [], "target": None, "sizes": []}
    for r in records(results, "gemm.grouped_ws", kind="bench"):
        m = re.match(r"grouped (ws padded|concat|ptr) G=\d+ (\w+) ", r.get("name", ""))
        if not m:
            continue
        form, mix = ("padded" if m.group(1) == "ws padded" else m.group(1)), m.group(2)
        x = (r.get("speedup") or {}).get(GRAPH_LOOP)
        if x is not None:
            out["x"][(form, mix)] = x
        sp_all = (r.get("baseline_spread") or {}).get(GRAPH_LOOP)
        if sp_all is not None:
            out["spread_all"].append(sp_all)  # the loop timed beside every form: the table's spread column
        if form == "padded":
            if r.get("speedup_bound"):
                out["bound"][mix] = r["speedup_bound"]
            sp = (r.get("baseline_spread") or {}).get(GRAPH_LOOP)
            if sp is not None:
                out["spread"][mix] = sp
            if mix == "skewed" and r.get("sizes"):
                out["sizes"] = list(r["sizes"])
        tgt, _ = _target(r, GRAPH_LOOP)
        out["target"] = tgt if tgt is not None else out["target"]
    return out


#: The grouped forms of suite ``gemm.grouped_ws`` (record names) in short words, as the page introduces them.
GROUP_FORMS_ZH = {"ws padded": "手写流水补齐式", "concat": "拼接式", "ptr": "指针式"}


def grouped_ws_table(results: dict | None = None) -> str:
    """The three grouped forms against the CUDA-graph loop, with one dense GEMM of the same rows.  What every row
    shares (experts, N, K) is said once above the table; a row names its form and group mix."""
    results = load() if results is None else results
    recs = [r for r in records(results, "gemm.grouped_ws", kind="bench")]
    if not recs:
        return f"**{NO_RESULT}**"
    from coursebook.records import variant_words

    pat = re.compile(r"grouped (ws padded|concat|ptr) G=(\d+) (\w+) N=(\d+) K=(\d+)$")
    parsed = [pat.match(r.get("name", "")) for r in recs]
    common = {m.group(2, 4, 5) for m in parsed if m}
    head = ""
    if all(parsed) and len(common) == 1 and all(m.group(3) in GROUP_MIXES_ZH for m in parsed):
        g, n, k = next(iter(common))
        head = f"（每一行都是 {g} 个专家，N = {n}，K = {k}。）\n\n"
    lines = ["| 写法，组大小 | 时间 (µs) | CUDA graph 里的循环 (µs) | 循环逐轮的离散 | 相对该循环 | "
             "同样行数的一个稠密 GEMM (µs) | 稠密 GEMM 相对该循环 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r, m in zip(recs, parsed):
        b, sp = r.get("baselines") or {}, r.get("speedup") or {}
        loop, dense = b.get(GRAPH_LOOP), b.get(DENSE)
        spread = (r.get("baseline_spread") or {}).get(GRAPH_LOOP)
        name = f"{GROUP_FORMS_ZH[m.group(1)]}，{GROUP_MIXES_ZH[m.group(3)]}" if head else variant_words(r["name"])
        lines.append(f"| {name} | {r['ms'] * 1e3:.1f} | {DASH if loop is None else f'{loop * 1e3:.1f}'} | "
                     f"{DASH if spread is None else f'{100 * spread:.1f}%'} | "
                     f"{DASH if sp.get(GRAPH_LOOP) is None else format(sp[GRAPH_LOOP], '.2f') + '×'} | "
                     f"{DASH if dense is None else f'{dense * 1e3:.1f}'} | "
                     f"{DASH if not (loop and dense) else f'{loop / dense:.2f}×'} |")
    return head + "\n".join(lines)


def batched_ws_table(results: dict | None = None) -> str:
    """The two attention products against torch.bmm, with the zero_ write of the same output."""
    results = load() if results is None else results
    recs = [r for r in records(results, "gemm.batched_ws", kind="bench")]
    if not recs:
        return f"**{NO_RESULT}**"
    from coursebook.records import variant_words

    lines = ["| kernel | 时间 (µs) | torch.bmm (µs) | 相对 torch.bmm | 只把输出写一遍 (µs) | "
             "torch.bmm ÷ 写一遍（任何 kernel 的上限） | 写一遍占本 kernel 时间 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        b, sp = r.get("baselines") or {}, r.get("speedup") or {}
        w = b.get(WRITE)
        lines.append(f"| {variant_words(r['name'])} | {r['ms'] * 1e3:.1f} | {b.get('torch.bmm', 0) * 1e3:.1f} | "
                     f"{sp.get('torch.bmm', 0):.2f}× | {DASH if w is None else f'{w * 1e3:.1f}'} | "
                     f"{DASH if not r.get('speedup_bound') else format(r['speedup_bound'], '.2f') + '×'} | "
                     + (DASH if w is None else f"{100 * w / r['ms']:.0f}%") + " |")
    return "\n".join(lines)


def _repeat_claim(results: dict | None, recs: list[dict]) -> Any:
    """``claim.gemm.lib.w4.repeat``: whether the decode shapes' verdicts on their targets (from the search run's
    bench) held when suite ``gemm.flush`` timed them again under the same protocol (its write flush), with the
    kernel that suite keeps for each shape.  A verdict that turned is named with the later ratio, and with whether
    that later kernel is the search's winner or another candidate (and how much slower than the winner it was in the
    search).  Without the later record the sentence is empty."""
    from coursebook import claims as C

    fl = _flush(results)
    turned: dict[str, list[tuple[str, str, float]]] = {"lost": [], "gained": []}
    n = 0
    for r in recs:
        key = f"m{r['shape'][0]}"
        w = (fl.get(key) or {}).get("write")
        met = _target(r, W4_BASE)[1]
        x2, (_, met2) = ((w or {}).get("speedup") or {}).get(W4_BASE), _target(w or {}, W4_BASE)
        if met is None or met2 is None or x2 is None:
            continue
        n += 1
        if met == met2:
            continue
        shape = _w4_shape(r).replace("×", "x")
        ms = _w4_ms(results, shape, fused=True)
        lab, win = w.get("label"), r.get("label")
        if lab and lab == win:
            who = "同一个 kernel"
        elif lab in ms and win in ms:
            who = f"搜索里比胜者慢 {(ms[lab] - ms[win]) * 1e3:.1f} µs 的另一个配置"
        else:
            who = "另一个配置"
        turned["lost" if met else "gained"].append((f"M = {r['shape'][0]}", who, x2))
    lost = "；".join(f"{m} 用的是{who}，只有 {x:.2f}×，没有到目标" for m, who, x in turned["lost"])
    gained = "；".join(f"{m} 用的是{who}，到了 {x:.2f}×" for m, who, x in turned["gained"])
    case = None if not recs else "absent" if not n else (
        "held" if not (lost or gained) else "both" if lost and gained else "lost" if lost else "gained")
    return C.choose("claim.gemm.lib.w4.repeat", case, {
        "absent": "",
        "held": "；下一页比较两种冲刷的那次运行按同一协议（重写冲刷）把这 {n} 个形状又测了一遍，到没到目标，结论都没有变",
        "lost": "。不过这个结论只来自一次运行：下一页比较两种冲刷的那次运行按同一协议（重写冲刷）又测了一遍，"
                "{lost}。所以 {lost_m} 的目标只能说在一次运行里够着了，还不能算稳稳达到",
        "gained": "；下一页比较两种冲刷的那次运行按同一协议（重写冲刷）又测了一遍，{gained}",
        "both": "。这个结论只来自一次运行：下一页比较两种冲刷的那次运行按同一协议（重写冲刷）又测了一遍，"
                "{lost}；{gained}"}, n=n, lost=lost, gained=gained, lost_m="、".join(m for m, _, _ in turned["lost"]))


def library_claims(results: dict | None) -> list:
    """The sentences about the variants against their libraries, chosen by the records
    (``claim.gemm.lib.*``)."""
    from coursebook import claims as C

    out = []
    recs = [r for r in _w4a16(results) if r["shape"][0] <= 128]
    xs = [(r.get("speedup") or {}).get(W4_BASE) for r in recs]
    caps = [r.get("gain_bound") for r in recs]
    ok = recs and None not in xs and None not in caps
    order = ok and all(a >= b for a, b in zip(xs, xs[1:])) and all(a >= b for a, b in zip(caps, caps[1:]))
    over = [(r, x, c) for r, x, c in zip(recs, xs, caps) if ok and x >= c]
    o = over[0] if over else None
    out.append(C.choose("claim.gemm.lib.w4.shrinks", None if not ok else (
        "not" if not order else "over" if over else "tracks"), {
        "tracks": "实测的加速比随 M 变大而缩小，与账本允许的上限同向，而且每一档都在那个上限之下。"
                  "这正是“先算账”想要的用法：账本事先说出了收益在哪里缩小",
        "over": "实测的加速比随 M 变大而缩小，与账本允许的上限同向；但 M = {m} 时实测的 {x}× 超过了账本的“上限” {c}×。"
                "这个上限是两条下界之比，只有两边都跑到自己的下界时才真的封顶：这一档 cuBLAS 只走到 fp16 下界的 {pct}%，"
                "它走到自己下界的 {own}%。账本说对的是收益在哪里缩小，不是缩到多少",
        "not": "实测的加速比并没有按账本预测的顺序随 M 缩小：账本说收益在哪里缩小，这次运行没有照着走"},
        m=o[0]["shape"][0] if o else "", x=f"{o[1]:.2f}" if o else "", c=f"{o[2]:.2f}" if o else "",
        pct=f"{100 * (o[0].get('cublas_frac_floor') or 0):.0f}" if o else "",
        own=f"{100 * (o[0].get('frac_floor') or 0):.0f}" if o else ""))
    mets = [_target(r, W4_BASE)[1] for r in recs]
    # a miss that reads as a hit once rounded to the page's two decimals is named with its exact value
    near = [(r["shape"][0], x, t) for r, x, (t, met) in zip(recs, xs, (_target(r, W4_BASE) for r in recs))
            if x is not None and t is not None and not met and round(x, 2) >= t]
    near_txt = "".join(f"（M = {m} 时是 {x:.4f}×，保留两位与目标 {t}× 相同，实际还差 {100 * (1 - x / t):.2f}%）"
                       for m, x, t in near)
    missed = [(r, x, _target(r, W4_BASE)[0]) for r, x, ok in zip(recs, xs, mets) if ok is False]
    every = C.every("claim.gemm.lib.w4.targets", mets if recs else [], all_="", some="", none="")
    one = len(missed) == 1 and every.case == "some"
    out.append(C.choose("claim.gemm.lib.w4.targets", every.case and ("one_missed" if one else every.case), {
        "all": "{n} 个解码形状都达到了",
        "one_missed": "{n} 个解码形状里，除 {miss}外都达到了",
        "some": "{n} 个解码形状里只有 {met} 达到了{near}",
        "none": "{n} 个解码形状一个也没有达到{near}"}, n=len(recs), near=near_txt,
        met="、".join(f"M = {r['shape'][0]}" for r, ok in zip(recs, mets) if ok),
        miss="" if not one else "M = {}（实测 {}×，目标 {}×）".format(
            missed[0][0]["shape"][0], f"{missed[0][1]:.4f}" if round(missed[0][1], 2) >= missed[0][2] else
            f"{missed[0][1]:.2f}", missed[0][2])))
    out.append(_repeat_claim(results, recs))
    sq = bench(results, "w4a16 4096x4096x4096") or {}
    tgt, _ = _target(sq, W4_BASE)
    out.append(C.threshold("claim.gemm.lib.w4.square", (sq.get("speedup") or {}).get(W4_BASE), tgt or 0.0,
                           above="在事先定的 {limit} 倍之上", below="还在事先定的 {limit} 倍之下"))
    r1 = bench(results, "w4a16 1x8192x8192") or {}
    out.append(C.compare("claim.gemm.lib.w4.vs_cublas_floor", r1.get("frac_floor"), r1.get("cublas_frac_floor"),
                         lower="离自己的下界比 cuBLAS 离它的下界远得多", higher="离自己的下界比 cuBLAS 离它的下界更近",
                         tie="离自己下界的远近与 cuBLAS 相当", tol=0.05))
    p = _probes(results)
    r16 = bench(results, "w4a16 16x8192x8192") or {}
    base16 = (r16.get("baselines") or {}).get(W4_BASE)
    tgt16, _ = _target(r16, W4_BASE)
    longer = max(p["nomma"], p["noexpand"]) if p.get("nomma") and p.get("noexpand") else None
    need = base16 * 1e3 / tgt16 if base16 and tgt16 else None
    out.append(C.compare("claim.gemm.lib.w4.overlap", longer, need,
                         lower="两者中较长的那个也短于目标要求的时间：只要把展开完全藏进张量核乘法的阴影里，这个版本就够得着目标",
                         higher="两者中较长的那个已经长于目标要求的时间：即使完全重叠，这个版本也够不着目标"))
    ring = _ring(results)
    frac = ring["loadonly"] / need if ring and need else None
    out.append(C.choose("claim.gemm.lib.w4.ring", None if frac is None else (
        "all" if frac >= 1 else "most" if frac >= 0.8 else "room"), {
        "all": "只留环形缓冲就已经超过了目标允许的时间：这个结构光是搬运就够不着目标",
        "most": "只留环形缓冲就用去了目标允许时间的 {pct}%：留给这个版本的展开和乘法的余地只剩 {rest}%，"
                "要让它够着目标，先得让搬运本身更快",
        "room": "只留环形缓冲只用去目标允许时间的 {pct}%：差距主要出在展开与乘法没有藏到搬运后面"},
        pct=f"{100 * frac:.0f}" if frac else "", rest=f"{100 - round(100 * frac)}" if frac else ""))
    out += _probe_claims(results, "probe", _probe_label(results))
    out += _probe_claims(results, "ring", ring.get("label"), again=True)  # after the per-element probes' paragraph
    q4_by = {k: (a, b) for k, (a, b) in _q4(results).items() if a is not None and b is not None}
    q4 = list(q4_by.values())
    k_q4 = sum(a < b * 0.98 for a, b in q4)
    k_tie = sum(abs(a / b - 1) <= 0.02 for a, b in q4)
    # the mixed case says what each shape did, so that the sentence matches the two times beside it
    q4_each = "，".join(f"{W4_SHAPE_WORDS[k]} 时" + ("相差不到 2%" if abs(a / b - 1) <= 0.02 else
                                                   f"快了 {100 * (1 - a / b):.0f}%" if a < b else
                                                   f"慢了 {100 * (a / b - 1):.0f}%") for k, (a, b) in q4_by.items())
    out.append(C.choose("claim.gemm.lib.w4.q4", None if not q4 else (
        "faster" if k_q4 == len(q4) else "tie" if k_tie == len(q4) else "slower" if k_q4 == 0 and k_tie == 0
        else "mixed"), {
        "faster": "两个形状上四个计算 warpgroup 都快出 2% 以上",
        "tie": "两个形状上两者相差都不到 2%：warp 多了一倍，时间却几乎没动，可见卡住它的已经不是展开的延迟",
        "slower": "两个形状上四个计算 warpgroup 都更慢",
        "mixed": "四个计算 warpgroup 在 {each}：{verdict}"}, each=q4_each,
        verdict="没有稳定地更快" if k_q4 else "哪个形状上都没有更快"))
    rp = _repack(results)
    for form in ("il", "tl"):
        have = [(k, r) for k, r in rp.items() if r[form] is not None and r["plain"] is not None]
        out.append(_faster_claim(f"claim.gemm.lib.w4.repack.{form}", [(r[form], r["plain"]) for _, r in have],
                                 [W4_SHAPE_WORDS[k] for k, _ in have]))
    post = _post(results)
    have = [(k, r) for k, r in post.items() if r["pair"]]
    out.append(_faster_claim("claim.gemm.lib.w4.post.ctl", [r["pair"] for _, r in have], [W4_SHAPE_WORDS[k] for k, _ in have]))
    out.append(_faster_claim("claim.gemm.lib.w4.post.best", [(r["po"], r["il"]) for r in post.values()],
                             [W4_SHAPE_WORDS[k] for k in post]))
    m8 = _m8(results)
    out.append(C.compare("claim.gemm.lib.w4.m8", m8.get("m8"), m8.get("m16"), tol=0.02,
                         lower="8 行的快了 {pct}%", higher="8 行的反而慢了 {pct}%", tie="两者相差不到 2%",
                         pct=f"{100 * abs(1 - m8['m8'] / m8['m16']):.0f}" if m8 else ""))
    out.append(C.choose("claim.gemm.lib.w4.m8.won", None if not m8 else "yes" if m8["won"] else "no", {
        "yes": "结果表里 M = 1 那一行的胜者就是一个 8 行的配置",
        "no": "结果表里 M = 1 那一行的胜者仍是 16 行的配置"}))
    lag = _lag(results)
    out.append(C.compare("claim.gemm.lib.w4.lag", lag.get("lag"), lag.get("rest"), tol=0.02,
                         lower="留一级的最快配置快了 {pct}%", higher="留一级的最快配置反而慢了 {pct}%",
                         tie="留一级的最快配置与其余配置里最快的相差不到 2%",
                         pct=f"{100 * abs(1 - lag['lag'] / lag['rest']):.0f}" if lag else ""))
    out.append(C.choose("claim.gemm.lib.w4.lag.won", None if not lag else "yes" if lag["won"] else "no", {
        "yes": "结果表里 M = 64 那一行的胜者就是留一级的配置",
        "no": "结果表里 M = 64 那一行的胜者不是留一级的配置"}))
    fz = _fuse(results)
    case, k_fast = _faster_case(fz["pairs"])
    k_slow = sum(a > b * 1.02 for a, b in fz["pairs"])
    out.append(C.choose("claim.gemm.lib.w4.fuse", "some_never_slower" if case == "some" and not k_slow else case, {
        "faster": "{n} 对里，加了 fuse 的每一对都快出 2% 以上",
        "some_never_slower": "{n} 对里，加了 fuse 的有 {k} 对快出 2% 以上，其余 {r} 对相差不到 2%，没有一对慢出 2%",
        "some": "{n} 对里，加了 fuse 的有 {k} 对快出 2% 以上、{s} 对慢了 2% 以上，其余 {r} 对相差不到 2%",
        "none": "{n} 对里，两者相差都不到 2%",
        "slower": "{n} 对里，加了 fuse 的每一对都慢了 2% 以上"}, n=len(fz["pairs"]), k=k_fast, s=k_slow,
        r=len(fz["pairs"]) - k_fast - k_slow))
    out.append(C.choose("claim.gemm.lib.w4.fuse.won", None if not fz["n_won"] else
                        "all" if fz["won"] == fz["n_won"] else "none" if not fz["won"] else "some", {
        "all": "结果表里 {n} 个形状的胜者都带 fuse",
        "some": "结果表的 {n} 个形状里，{k} 个的胜者带 fuse",
        "none": "结果表里没有一个形状的胜者带 fuse"}, n=fz["n_won"], k=fz["won"]))
    kp = list(_kpair(results).values())
    out.append(C.choose("claim.gemm.lib.w4.kp", _faster_case(kp)[0], {
        "faster": "测到的 {n} 个形状上它都快出 2% 以上：片上的激活流量减半，换来了时间",
        "slower": "测到的 {n} 个形状上它都慢了 2% 以上：片上的激活流量减了一半，时间反而更长，"
                  "可见从 L2 读激活不是卡住这几个形状的地方",
        "none": "测到的 {n} 个形状上两者相差都不到 2%：片上的激活流量减半，没有换来时间",
        "some": "测到的 {n} 个形状上结果不一：片上的激活流量减半，没有稳定地换来时间"}, n=len(kp)))
    wins = [r["winner"] for r in rp.values() if r["winner"]]
    k_rep = sum(_repacked(w) for w in wins)
    out.append(C.choose("claim.gemm.lib.w4.repack.winners", None if not wins else (
        "all" if k_rep == len(wins) else "none" if k_rep == 0 else "some"), {
        "all": "结果表里 {n} 个形状的胜者用的都是重排过的权重：表里的时间是在重排后的权重上测的，重排在加载时做一次，不在计时之内",
        "none": "结果表里 {n} 个形状的胜者用的都是原样存放的权重：重排没有进入结果表",
        "some": "结果表的 {n} 个形状里，有 {k} 个的胜者用的是重排过的权重：这几个形状的时间是在重排后的权重上测的，"
                "重排在加载时做一次，不在计时之内"}, n=len(wins), k=k_rep))
    ws = _wide_search(results)
    both = [(a, b) for a, b in (ws[k] for k, _ in W4_SHAPES) if a is not None and b is not None]
    k_fast = sum(a < b for a, b in both)
    out.append(C.choose("claim.gemm.lib.w4.wide.result", None if not both else (
        "faster" if k_fast == len(both) else "slower" if k_fast == 0 else "split"), {
        "faster": "测到的 {n} 个形状上，按字展开的配置都比逐元素展开的最快配置快",
        "slower": "测到的 {n} 个形状上，按字展开的配置都没有比逐元素展开的最快配置快",
        "split": "测到的 {n} 个形状里，按字展开只在 {k} 个上比逐元素展开的最快配置快"}, n=len(both), k=k_fast))
    dq = _decode_search(results)
    cases = {}
    for kind in ("dec", "tma"):  # each decode kernel's best against the wgmma kernel's, at M = 1 and 16
        pairs = [(dq[f"{kind}{m}"], dq[f"wg{m}"]) for m in (1, 16)]
        cases[kind] = None if any(a is None or b is None for a, b in pairs) else (
            "slower" if all(a > b for a, b in pairs) else ("faster" if all(a < b for a, b in pairs) else "split"))
        out.append(C.choose(f"claim.gemm.lib.w4.{kind}.result", cases[kind], {
            "slower": "两个形状上它都比 wgmma 版本慢",
            "faster": "两个形状上它都比 wgmma 版本快",
            "split": "它在一个形状上比 wgmma 版本快，在另一个形状上慢"}))
    case = cases["dec"]
    # the tie texts give the difference measured, not the tolerance that made it a tie
    pct = lambda a, b: "" if not (a and b) else "不到 1%" if abs(a / b - 1) < 0.005 else f" {100 * abs(a / b - 1):.0f}%"  # noqa: E731
    out.append(C.compare("claim.gemm.lib.w4.tma.loadonly", dq["tma_loadonly1"], dq["loadonly"], tol=0.1,
                         lower="明显短于寄存器直读的同一探针：这种读法本身更快",
                         tie="与寄存器直读的同一探针只差{pct}：换了读法，只读不算的时间并没有变",
                         higher="比寄存器直读的同一探针还长", pct=pct(dq["tma_loadonly1"], dq["loadonly"])))
    out.append(C.compare("claim.gemm.lib.w4.dec.loadonly", dq["loadonly"], dq["wg1"], tol=0.15,
                         lower="明显短于 wgmma 版本整个 kernel 的时间：读之后的展开、乘法与归并占了不少",
                         tie="与 wgmma 版本整个 kernel 的时间只差{pct}：这种读法本身就跑不满带宽",
                         higher="比 wgmma 版本的整个 kernel 还长：慢在读的方式本身", pct=pct(dq["loadonly"], dq["wg1"])))
    out.append(C.choose("claim.gemm.lib.w4.dec.lesson", case, {
        "slower": "在途字节的账算够了，带宽却没有跟上：利特尔定律给出的只是必要条件，在途的字节还得由足够少的指令发出。"
                  "这个 kernel 留在课程包里，作为一个账算对了、速度却没有跟上的例子",
        "faster": "在途字节的账算够了，带宽也跟上了：解码形状改用这个 kernel",
        "split": "在途字节的账只在一个形状上换来了速度；另一个形状上还有别的瓶颈"}))
    # batched
    # both attention products against their targets in one sentence (the page names PV first, then QK^T)
    met, tgts = {}, {}
    for key, name in (("pv", "batched ws context 64x2048x128x2048"), ("qk", "batched ws scores 64x2048x2048x128")):
        r = bench(results, name) or {}
        tgts[key], _ = _target(r, "torch.bmm")
        x = (r.get("speedup") or {}).get("torch.bmm")
        met[key] = None if x is None or tgts[key] is None else x >= tgts[key]
    same = tgts["pv"] == tgts["qk"]
    out.append(C.choose("claim.gemm.lib.bmm.targets", None if None in met.values() else (
        ("both" if met["pv"] else "neither") if met["pv"] == met["qk"] else ("pv" if met["pv"] else "qk")), {
        "both": "两者都到了" + ("事先定的 {tp} 倍" if same else "各自事先定的 {tp} 倍与 {tq} 倍"),
        "neither": "两者都还没有到" + ("事先定的 {tp} 倍" if same else "各自事先定的 {tp} 倍与 {tq} 倍"),
        "pv": "前者到了事先定的 {tp} 倍，后者还没有到" + ("这个目标" if same else "它的 {tq} 倍"),
        "qk": "后者到了事先定的 {tq} 倍，前者还没有到" + ("这个目标" if same else "它的 {tp} 倍")},
        tp=tgts["pv"], tq=tgts["qk"]))
    new, old = _qk_store(results)
    out.append(C.compare("claim.gemm.lib.bmm.qk_store", new, old, tol=0.01,
                         lower="前者快约 {pct}%", tie="两者相差不到 1%", higher="前者反而慢约 {pct}%",
                         pct=f"{100 * abs(1 - new / old):.0f}" if new and old else ""))
    # grouped
    g = _grouped(results)
    pad = [x for (form, _), x in g["x"].items() if form == "padded"]
    tab = [x for (form, _), x in g["x"].items() if form != "padded"]
    # the padded form against the graph loop, per group mix, read against that loop's own spread over the rounds
    cases, pcts = {}, {}
    for mix in GROUP_MIXES:
        x, sp = g["x"].get(("padded", mix)), g["spread"].get(mix)
        cases[mix] = None if x is None or sp is None else (
            "tie" if abs(x - 1) <= sp else "faster" if x > 1 else "slower")
        pcts[mix] = "" if x is None else f"{100 * abs(x - 1):.0f}"
    words = {"faster": "组大小{m}时快约 {p}%", "slower": "组大小{m}时慢约 {p}%",
             "tie": "组大小{m}时与循环持平（差距在离散范围以内）"}
    padded_case = None if None in cases.values() else "_".join(cases[m] for m in GROUP_MIXES)
    out.append(C.choose("claim.gemm.lib.grp.padded", padded_case, {
        f"{a}_{b}": (words[a].format(m=GROUP_MIXES_ZH[GROUP_MIXES[0]], p="{p0}") + "，"
                     + words[b].format(m=GROUP_MIXES_ZH[GROUP_MIXES[1]], p="{p1}"))
        for a in words for b in words}, p0=pcts[GROUP_MIXES[0]], p1=pcts[GROUP_MIXES[1]]))
    out.append(C.choose("claim.gemm.lib.grp.tables", None if not tab else (
        "lost" if max(tab) < 1 else ("won" if min(tab) >= 1 else "split")), {
        "lost": "都比循环慢", "won": "都比循环快", "split": "有快有慢"}))
    bounds = list(g["bound"].values())
    out.append(C.choose("claim.gemm.lib.grp.bound", None if not bounds or g["target"] is None else (
        "below" if max(bounds) < g["target"] else ("straddles" if min(bounds) < g["target"] else "above")), {
        "below": "两种组大小下都低于事先定的目标：在这个形状上，目标本身就超出了这道上限",
        "straddles": "至少一种组大小下低于事先定的目标：在那里，目标本身就超出了这道上限",
        "above": "两种组大小下都高于事先定的目标：目标在这道上限之内，差距出在 kernel 本身"}))
    # split-K in the hand-written pipeline against cuBLAS
    r = bench(results, "split-K ws 1024x1024x16384") or {}
    tgt, _ = _target(r, "cuBLAS")
    out.append(C.threshold("claim.gemm.lib.skws", (r.get("speedup") or {}).get("cuBLAS"), tgt or 0.0,
                           above="到了 cuBLAS 的水平", below="离 cuBLAS 还差一点"))
    lab = str(r.get("label") or "")
    out.append(C.choose("claim.gemm.lib.skws.form", None if not r else ("pdl" if lab.endswith(" pdl") else "plain"), {
        "pdl": "（归并 kernel 用下文的程序化依赖启动）", "plain": "（归并 kernel 普通启动）"}))
    out.append(C.threshold("claim.gemm.lib.skws.gap", (r.get("speedup") or {}).get("cuBLAS"), tgt or 0.0,
                           above="这一次运行达到了目标",
                           below="这一次运行没有测出一个对任何 kernel 都成立的上限，所以这里只能如实写出差距"))
    for key in FIXUP_SEARCHES:
        out.append(C.compare(f"claim.gemm.lib.{key}.pdl", *_pdl(results, key), tol=0.01,
                             lower="比普通启动快", tie="与普通启动相差不到 1%", higher="反而比普通启动慢"))
    for key in FIXUP_SEARCHES:
        out.append(C.compare(f"claim.gemm.lib.{key}.last", *_fixup(results, key), tol=0.02,
                             lower="比单独的 kernel 快", tie="与单独的 kernel 相差不到 2%",
                             higher="反而比单独的 kernel 慢"))
    for key in SPREAD_SEARCHES:
        out.append(C.compare(f"claim.gemm.lib.{key}.spread", *_spread(results, key), tol=0.02,
                             lower="比单独的 kernel 快", tie="与单独的 kernel 相差不到 2%",
                             higher="比单独的 kernel 慢"))
    for key in FIXVEC_SEARCHES:
        out.append(C.compare(f"claim.gemm.lib.{key}.fv", *_fixvec(results, key), tol=0.02,
                             lower="比逐段读的写法快", tie="与逐段读的写法相差不到 2%",
                             higher="反而比逐段读的写法慢"))
    # the tuned GEMM: fp16 repeats at 8192^3 and bf16
    out.append(C.every("claim.gemm.lib.fp16_repeats", [x >= 1.0 for x in _fp16_repeats(results)],
                       all_="每一次都不低于 1", some="{n} 次里有 {k} 次不低于 1", none="{n} 次里没有一次达到 1"))
    bf = [bench(results, f"tuned bf16 {s}^3") or {} for s in (4096, 8192)]
    out.append(C.every("claim.gemm.lib.bf16", [abs(r["speedup"]["cuBLAS bf16"] - 1) <= 0.03
                                                if (r.get("speedup") or {}).get("cuBLAS bf16") else None for r in bf],
                       all_="两个形状都与 cuBLAS 相差不到 3%", some="两个形状里只有一个与 cuBLAS 相差不到 3%",
                       none="两个形状都与 cuBLAS 差出 3% 以上"))
    out.append(flush_rerun_claim(results))
    return out


# ------------------------------------------------------------------ the wave model beside the records
def wave_rows(results: dict | None) -> list[dict]:
    """Every split-K and stream-K record that carries a wave prediction: the prediction against its
    own baseline (the same kernel unsplit, or the data-parallel tiling), the measurement, and cuBLAS.
    ``base_tile`` is the baseline's tile and ``waves`` its waves against the kernel's, both counted in
    the baseline's tiles (stream-K on the hand-written pipeline: 128 x 256 data-parallel tiles, its own
    tiles weighed by their area, :func:`measure.suites.gemm.streamk_ws.predicted_speedup`)."""
    rows = []
    for suite, base in (("gemm.splitk", "no-split"), ("gemm.splitk_ws", "no-split"), ("gemm.streamk", "data-parallel"),
                        ("gemm.streamk_ws", "data-parallel")):
        for r in records(results, suite, kind="bench"):
            pred = r.get("predicted_speedup_vs_no_split", r.get("predicted_speedup_vs_dp"))
            full_wave = suite == "gemm.streamk_ws" and r.get("name", "").startswith("full-wave")
            if full_wave:  # the record carries no prediction: the page's (one wave each, weighed by tile area)
                fw = _full_wave_prediction(r)
                pred = fw and fw[0]
            meas = (r.get("speedup") or {}).get(base)
            if pred is None or meas is None:
                continue
            m = re.search(r"(\d+)x(\d+)x(\d+)", r["name"])
            w = r.get("waves") if isinstance(r.get("waves"), dict) else {"last_wave_fill": r.get("last_wave_fill")}
            cfg = r.get("config") or {}
            if full_wave:
                from measure.suites.gemm.streamk_ws import NO_SPLIT

                kind, split = "换块宽、一波正好满，手写流水", "—"
                tile, base_tile = f"{cfg.get('block_M', 128)}×{cfg.get('block_N')}", f"128×{NO_SPLIT['block_N']}"
                grid, waves = r.get("tiles"), f"{fw[1]} → {fw[2]:.2f}"
            elif suite == "gemm.streamk":
                kind, tile, split = "stream-K", f"{cfg.get('block_M', 128)}×{cfg.get('block_N', 128)}", "—"
                ideal = w.get("ideal_waves")  # the tiles spread evenly over the SMs
                base_tile, grid = tile, w.get("tiles")
                waves = f"{w.get('waves')} → {DASH if ideal is None else f'{ideal:.2f}'}"
            elif suite == "gemm.streamk_ws":
                from measure.suites.gemm.streamk_ws import NO_SPLIT

                kind, tile, split = "stream-K，手写流水", f"128×{cfg.get('block_N', 256)}", "—"
                base_tile = f"128×{NO_SPLIT['block_N']}"
                grid, waves = w.get("tiles"), f"{w.get('waves_data_parallel')} → {w.get('ideal_waves', 0):.2f}"
            else:
                ws = suite == "gemm.splitk_ws"
                kind = "split-K，手写流水" if ws else ("split-K，整块原子加" if r.get("form") == "tile" else "split-K，逐元素原子加")
                tile = f"{cfg.get('block_M', 128)}×{cfg.get('block_N', 128)}"
                base_tile = tile
                split = str(cfg.get("splits") if ws else r.get("split_k") or 1)
                grid, waves = w.get("grid"), f"{w.get('waves_no_split', 1)} → {w.get('waves')}"
                if split == "1":
                    continue
            rows.append(dict(kind=kind, shape="×".join(m.groups()) if m else r["name"], tile=tile, base_tile=base_tile,
                             split=split, grid=grid, waves=waves,
                             fill=w.get("last_wave_fill", w.get("last_wave_fill_data_parallel")),
                             pred=pred, meas=meas,
                             cub=(r.get("speedup") or {}).get("cuBLAS"),
                             holds_dir=(pred > 1 + WAVE_DIR_TOL) == (meas > 1.0), holds_size=abs(meas / pred - 1) <= WAVE_TOL))
    return rows


def _full_wave_prediction(r: dict) -> tuple[float, int, float] | None:
    """The wave model on a full-wave record (its own tile, one block per SM): the predicted speedup over the
    128 x 256 data-parallel tiling, that tiling's waves, and the record's waves counted in 128 x 256 tiles (weighed
    by the tile's area) -- as :func:`_skws_full_wave_values` words it."""
    from kernels.common import SMS
    from ledger.gemm import grid_waves
    from measure.suites.gemm.streamk_ws import NO_SPLIT

    cfg, shape = r.get("config") or {}, r.get("shape")
    if not (shape and cfg.get("block_N")):
        return None
    sms = r.get("sms") or SMS
    bn = NO_SPLIT["block_N"]
    _, w, _ = grid_waves(shape[0], shape[1], cfg.get("block_M", 128), cfg["block_N"], sms=sms)
    _, w_dp, _ = grid_waves(shape[0], shape[1], 128, bn, sms=sms)
    return (w_dp * bn) / (w * cfg["block_N"]), w_dp, w * cfg["block_N"] / bn


def wave_table(results: dict | None = None) -> str:
    """The wave model's prediction beside each record: does it say the right direction, and how close.  Rows are
    grouped by shape (named on the first row of each group); the blocks and waves go from the baseline's tiling to
    the kernel's; cuBLAS and the grids are in the variants' own tables."""
    results = load() if results is None else results
    rows = wave_rows(results)
    if not rows:
        return f"**{NO_RESULT}**"
    lines = ["| 形状 | 写法 | 块 | 波数：基线 → 切分后 | 预测加速比 | 实测加速比 | "
             f"实测 ÷ 预测（差在 {100 * WAVE_TOL:.0f}% 内吗） | 方向对吗 |",
             "|---|---|---|---|---:|---:|---:|---|"]
    yn = {True: "是", False: "否"}
    order = list(dict.fromkeys(r["shape"] for r in rows))
    for shape in order:
        for i, r in enumerate(x for x in rows if x["shape"] == shape):
            kind = r["kind"] + ("" if r["split"] == "—" else f"，{r['split']} 段")
            tile = r["tile"] if r["tile"] == r["base_tile"] else f"{r['base_tile']} → {r['tile']}"
            lines.append(f"| {shape if i == 0 else ''} | {kind} | {tile} | {r['waves']} | {r['pred']:.2f}× | "
                         f"{r['meas']:.2f}× | {r['meas'] / r['pred']:.2f}（{yn[r['holds_size']]}） | {yn[r['holds_dir']]} |")
    return "\n".join(lines)


def wave_claims(results: dict | None) -> list:
    """How often the wave model holds (``claim.gemm.waves.*``)."""
    from coursebook import claims as C

    rows = wave_rows(results)
    return [
        C.every("claim.gemm.waves.direction", [r["holds_dir"] for r in rows],
                all_="全部 {n} 条记录里方向都对：该切的时候切、不该切的时候不切，波数模型的判断可靠",
                some="{n} 条记录里只有 {k} 条方向对：连该不该切，波数模型也不总说得对",
                none="{n} 条记录里没有一条方向对：波数模型连该不该切都说错了"),
        C.every("claim.gemm.waves.size", [r["holds_size"] for r in rows],
                all_="全部 {n} 条都在预测的 {tol}% 以内", some="只有 {k} 条在预测的 {tol}% 以内",
                none="没有一条在预测的 {tol}% 以内", tol=f"{100 * WAVE_TOL:.0f}"),
    ]


# ------------------------------------------------------------------ stream-K on the hand-written pipeline
#: bench names of suite gemm.streamk_ws by shape key
SKWS = {"awk": "stream-K ws 1536x1536x8192", "skinny": "stream-K ws 1024x1024x16384", "full": "stream-K ws 2048x2048x8192"}


def streamk_ws_values(results: dict | None) -> dict[str, str]:
    """Stream-K on the hand-written pipeline: the wave count of each shape and the model's
    prediction (analytic, ``calc.gemm.skws.*``), and from the records the ratios to cuBLAS, to
    the data-parallel tiling and (skinny shape) to split-K (``derived.gemm.skws.*``; ``—`` when
    the suite has not been recorded)."""
    from kernels.common import SMS
    from ledger.gemm import grid_waves
    from measure.suites.gemm import streamk_ws as S

    v: dict[str, str] = {}
    sk = S.SPLITK_BEST  # split-K's K blocks per work item at the skinny shape
    v["calc.gemm.skws.skinny.split_steps"] = str(S.SHAPES[1][2] // sk["block_K"] // sk["splits"])
    for key, shape in (("awk", S.SHAPES[0]), ("skinny", S.SHAPES[1]), ("full", S.SHAPES[2])):
        pred, w = S.predicted_speedup(*shape, S.candidates(shape)[0], SMS)
        # the tiles of the pipeline's own 128 x 256 tiling (the data-parallel baseline), whatever the first candidate
        v[f"calc.gemm.skws.{key}.tiles"] = str(grid_waves(*shape[:2], 128, S.NO_SPLIT["block_N"], sms=SMS)[0])
        v[f"calc.gemm.skws.{key}.fill_pct"] = f"{100 * w['last_wave_fill_data_parallel']:.0f}"
        v[f"calc.gemm.skws.{key}.pred"] = f"{pred:.2f}"
        sched = S.ws_schedule(*shape, S.candidates(shape)[0]["block_N"], 64, SMS, S.candidates(shape)[0]["dp_waves"])
        v[f"calc.gemm.skws.{key}.steps"] = str(sched.dp_rounds * sched.iters_per_tile + sched.iters_per_worker
                                               + (1 if sched.extra else 0))
        r = bench(results, SKWS[key], "gemm.streamk_ws") or {}
        sp = r.get("speedup") or {}
        for base, tag in (("cuBLAS", "cublas"), ("data-parallel", "dp"), ("split-K ws", "splitk")):
            v[f"derived.gemm.skws.{key}.{tag}"] = f"{sp[base]:.2f}" if sp.get(base) else DASH
        v[f"derived.gemm.skws.{key}.tflops"] = f"{r['tflops']:.0f}" if r.get("tflops") else DASH
        cfg = r.get("config") or {}
        v[f"derived.gemm.skws.{key}.form"] = "，".join(skws_form_parts(cfg)) if cfg else DASH
    v.update(_skws_order_values(results))
    v.update(_skws_full_wave_values(results))
    v.update(_skws_timeline_values(results))
    return v


def skws_form_parts(cfg: dict) -> list[str]:
    """A stream-K configuration of the hand-written pipeline (:func:`kernels.gemm.streamk.ws_config`) in words,
    one setting per item."""
    parts = ["整网格流式切分" if cfg.get("dp_waves") == 0 else "整波之后只切尾部", f"128×{cfg['block_N']} 的块"]
    if cfg.get("panel") == 0:
        parts.append("切开的块按行排队")
    if cfg.get("aligned"):
        parts.append("每个尾部块只分给它自己的几个 block（没有 block 跨两块）")
    if cfg.get("share"):
        parts.append(f"整块和尾部段先后用同一块暂存区，省下的共享内存让流水有 {cfg['stages']} 级")
    if cfg.get("fixup") or cfg.get("spread"):
        parts.append("拼合并进 kernel")
    if cfg.get("pdl"):
        parts.append("拼合 kernel 以 PDL 启动" if cfg.get("pdl_at", "start") == "start"
                     else "拼合 kernel 以 PDL 启动、各段写完即放行")
    return parts


def skws_form_list(results: dict | None = None) -> str:
    """The settings of the awkward shape's stream-K bench winner as a Markdown list (one per line)."""
    results = load() if results is None else results
    cfg = (bench(results, SKWS["awk"], "gemm.streamk_ws") or {}).get("config") or {}
    if not cfg.get("block_N"):
        return f"**{NO_RESULT}**"
    return "\n".join(f"- {p}；" if i < len(parts) - 1 else f"- {p}。"
                     for parts in [skws_form_parts(cfg)] for i, p in enumerate(parts))


#: The streamed 128 x 256 tiles of the awkward shape in panels of eight rows and in row order (search labels).
SKWS_ORDER = {"panel": "sk 128x256 st4 e64", "row": "sk 128x256 st4 e64 p0"}


def _skws_order_us(results: dict | None) -> dict[str, float | None]:
    """Search times (us) of the streamed 128 x 256 tiles in panels and in row order (None: not searched)."""
    ms = (search(results, SKWS["awk"], "gemm.streamk_ws") or {}).get("ms") or {}
    return {k: (1e3 * ms[lab] if ms.get(lab) else None) for k, lab in SKWS_ORDER.items()}


def _skws_order_values(results: dict | None) -> dict[str, str]:
    us = _skws_order_us(results)
    return {f"derived.gemm.skws.awk.{k}_us": (f"{t:.1f}" if t else DASH) for k, t in us.items()}


def _library_tile(results: dict | None, shape: str) -> str:
    """The tile in the name of the library's kernel at ``shape`` (``nvjet_..._144x128_...`` -> ``144×128``)."""
    rec = next((r for r in records(results, "gemm.streamk_ws", f"cuBLAS kernel {shape}", kind="note")), None)
    m = re.search(r"_(\d+)x(\d+)_\d+x\d+_", " ".join((rec or {}).get("kernels") or []))
    return f"{m.group(1)}×{m.group(2)}" if m else DASH


def _skws_full_wave_values(results: dict | None) -> dict[str, str]:
    """The full-wave tiling of the awkward shape: its tile count (analytic) and wave-model prediction over the
    128 x 256 data-parallel tiling (one wave each: the time of a wave taken as proportional to the tile's area),
    and from its bench record the ratios and time."""
    from kernels.common import SMS
    from ledger.gemm import grid_waves
    from measure.suites.gemm import streamk_ws as S

    M, N, K = S.FULL_WAVE_SHAPES[0]
    fw = S.FULL_WAVE
    g, w, fill = grid_waves(M, N, fw["block_M"], fw["block_N"], sms=SMS)
    bn = S.NO_SPLIT["block_N"]  # the 128 x 256 data-parallel tiling
    _, w_dp, _ = grid_waves(M, N, 128, bn, sms=SMS)
    sched = S.ws_schedule(M, N, K, bn, 64, SMS, 0)  # its tiles streamed whole
    v = {"calc.gemm.skws.awk.row_tiles": str(sched.grid_n),
         "calc.gemm.skws.awk.row_workers": f"{SMS / sched.grid_m:.0f}",  # the workers of one tile row
         "calc.gemm.skws.fw.tiles": str(g), "calc.gemm.skws.fw.cols": str(-(-N // fw["block_N"])),
         "calc.gemm.skws.fw.rows": str(-(-M // fw["block_M"])), "calc.gemm.skws.fw.block_n": str(fw["block_N"]),
         "calc.gemm.skws.fw.pred": f"{(w_dp * bn) / (w * fw['block_N']):.2f}"}
    r = bench(results, f"full-wave 128x144 {M}x{N}x{K}", "gemm.streamk_ws") or {}
    sp = r.get("speedup") or {}
    for base, tag in (("cuBLAS", "cublas"), ("data-parallel", "dp")):
        v[f"derived.gemm.skws.fw.{tag}"] = f"{sp[base]:.2f}" if sp.get(base) else DASH
    v["derived.gemm.skws.fw.us"] = f"{1e3 * r['ms']:.1f}" if r.get("ms") else DASH
    sk = bench(results, SKWS["awk"], "gemm.streamk_ws") or {}
    v["derived.gemm.skws.awk.us"] = f"{1e3 * sk['ms']:.1f}" if sk.get("ms") else DASH
    v["derived.gemm.skws.awk.lib_tile"] = _library_tile(results, f"{M}x{N}x{K}")
    return v


def _skws_timeline(results: dict | None) -> dict[str, float | int | None]:
    """Where one call of the awkward shape's stream-K bench winner spends its time on the GPU's clock (the suite's
    profiler note): the stream-K kernel, the gap before the fix-up, the fix-up (us, medians over the calls); cuBLAS's
    call from its first kernel's start to its last one's end; the calls profiled.  None where the note is missing or
    the winner launched other than two kernels (a fix-up inside the kernel)."""
    rec = next(iter(records(results, "gemm.streamk_ws", f"{SKWS['awk']} timeline", kind="note")), None)
    tl = (rec or {}).get("timeline") or {}
    sk, lib = tl.get("stream-K") or {}, tl.get("cuBLAS") or {}
    two = len(sk.get("dur_us") or []) == 2 and len(sk.get("gaps_us") or []) == 1
    wave, tail = tl.get("wave alone") or {}, tl.get("tail alone") or {}
    return {"sk_us": sk["dur_us"][0] if two else None, "gap_us": sk["gaps_us"][0] if two else None,
            "fix_us": sk["dur_us"][1] if two else None, "lib_us": lib.get("span_us"), "calls": sk.get("calls"),
            # the wave alone is one kernel (nothing to fix up); the tail alone is a stream-K kernel and its fix-up
            "wave_us": wave["dur_us"][0] if len(wave.get("dur_us") or []) == 1 else None,
            "tail_alone_us": tail["dur_us"][0] if len(tail.get("dur_us") or []) == 2 else None}


def _skws_steps(results: dict | None) -> tuple[int | None, int, int | None]:
    """K steps of 64 the busiest worker of the awkward shape's stream-K bench winner runs (its schedule: whole tiles,
    then its piece of the tail), the steps of one tile of the full-wave tiling (one tile per SM: all of K), and the
    winner's tile width."""
    from kernels.common import SMS
    from measure.suites.gemm import streamk_ws as S

    M, N, K = S.SHAPES[0]
    cfg = (bench(results, SKWS["awk"], "gemm.streamk_ws") or {}).get("config") or {}
    if not cfg.get("block_N"):
        return None, K // 64, None
    s = S.ws_schedule(M, N, K, cfg["block_N"], cfg.get("block_K", 64), SMS, cfg.get("dp_waves", -1))
    return s.dp_rounds * s.iters_per_tile + s.iters_per_worker + (1 if s.extra else 0), K // 64, cfg["block_N"]


def _skws_tail(results: dict | None) -> dict[str, float | int | None]:
    """The stream-K kernel taken apart (the suite's wave and tail run alone, :func:`measure.suites.gemm.streamk_ws.
    wave_tail_rows`): what the tail adds to the kernel (the kernel less its wave alone, us), the busiest worker's K
    steps in the tail, and what those steps would take at the wave's own rate (the wave alone over its K steps);
    None where the note has no wave alone."""
    from kernels.common import SMS
    from measure.suites.gemm import streamk_ws as S

    t = _skws_timeline(results)
    cfg = (bench(results, SKWS["awk"], "gemm.streamk_ws") or {}).get("config") or {}
    none = {"tail_us": None, "tail_steps": None, "rate_us": None}
    if None in (t["sk_us"], t["wave_us"]) or not cfg.get("block_N") or cfg.get("pdl"):  # pdl: the fix-up runs beside it
        return none
    s = S.ws_schedule(*S.SHAPES[0], cfg["block_N"], cfg.get("block_K", 64), SMS, cfg.get("dp_waves", -1))
    if not s.dp_rounds or not s.sk_tiles:  # no wave or no tail: nothing to take apart
        return none
    steps = s.iters_per_worker + (1 if s.extra else 0)
    return {"tail_us": t["sk_us"] - t["wave_us"], "tail_steps": steps,
            "rate_us": t["wave_us"] / (s.dp_rounds * s.iters_per_tile) * steps}


def _skws_timeline_values(results: dict | None) -> dict[str, str]:
    t = _skws_timeline(results)
    f = lambda x: DASH if x is None else f"{x:.1f}"  # noqa: E731
    fixgap = None if t["fix_us"] is None else t["fix_us"] + t["gap_us"]
    steps, fw_steps, _ = _skws_steps(results)
    return {"derived.gemm.skws.tl.sk_us": f(t["sk_us"]), "derived.gemm.skws.tl.gap_us": f(t["gap_us"]),
            "derived.gemm.skws.tl.fix_us": f(t["fix_us"]), "derived.gemm.skws.tl.lib_us": f(t["lib_us"]),
            "derived.gemm.skws.tl.fixgap_us": f(fixgap), "derived.gemm.skws.tl.calls": str(t["calls"] or DASH),
            "calc.gemm.skws.tl.steps": str(steps or DASH), "calc.gemm.skws.tl.fw_steps": str(fw_steps)}


def _skws_timeline_claim(results: dict | None):
    """Is the stream-K kernel alone (no gap, no fix-up) already slower than cuBLAS's whole call on the GPU's clock?"""
    from coursebook import claims as C

    t = _skws_timeline(results)
    steps, fw_steps, block_n = _skws_steps(results)
    excess = None if None in (t["sk_us"], t["lib_us"]) else t["sk_us"] - t["lib_us"]
    slower = "就算把这段全部省掉，stream-K 的 kernel 本身也比 cuBLAS 慢 {excess:.1f} µs"
    if steps is not None and steps > fw_steps:  # the step count explains it only when the busiest SM runs more steps
        slower += "：128×{block_n} 的块让最忙的 SM 走 {steps} 个 K 步，下文那种一个 SM 正好一块的切法每个 SM 只走 {fw_steps} 步"
    return C.compare("claim.gemm.skws.tl.kernel", t["sk_us"], t["lib_us"], tol=0.01, higher=slower,
                     tie="省掉这段，stream-K 就与 cuBLAS 相差不到 1%",
                     lower="省掉这段，stream-K 的 kernel 本身比 cuBLAS 还快",
                     excess=excess, steps=steps, fw_steps=fw_steps, block_n=block_n)


def _skws_fix_claim(results: dict | None):
    """How the fix-up follows the stream-K kernel on the GPU's clock: after a gap, or launched early (a programmatic
    dependent: a negative gap, its duration includes its wait)."""
    from coursebook import claims as C

    t = _skws_timeline(results)
    return C.threshold("claim.gemm.skws.tl.fix", t["gap_us"], 0.0,
                       above="它结束后隔 {gap:.1f} µs 拼合 kernel 才开始，再跑 {fix:.1f} µs",
                       below="拼合 kernel 以 PDL 提前启动，在它结束前 {lead:.1f} µs 就已上了 GPU，先等它结束",
                       gap=t["gap_us"], fix=t["fix_us"], lead=None if t["gap_us"] is None else -t["gap_us"])


def _skws_tail_claim(results: dict | None):
    """Does the tail add more to the stream-K kernel than its K steps take at the wave's rate?"""
    from coursebook import claims as C

    tail = _skws_tail(results)
    excess = None if tail["tail_us"] is None else tail["tail_us"] - tail["rate_us"]
    return C.compare("claim.gemm.skws.tl.tail", tail["tail_us"], tail["rate_us"], tol=0.05,
                     higher="实际多了 {excess:.1f} µs：这段时间里，kernel 还要从整块换到尾段，再把 fp32 部分和写出去",
                     tie="实际差不多正是这么多：换段和写出部分和几乎没有多花时间",
                     lower="实际比这还少", excess=excess)


def _skws_alone_claim(results: dict | None):
    """The tail run alone against what it adds to the whole kernel."""
    from coursebook import claims as C

    return C.compare("claim.gemm.skws.tl.alone", _skws_timeline(results)["tail_alone_us"],
                     _skws_tail(results)["tail_us"], tol=0.1,
                     higher="是它在完整 kernel 里多出来那段的 {ratio:.1f} 倍：单独跑的时候，尾部的 A 和 B 都要从 HBM 读进来；"
                            "接在整波后面，它要读的 B 整波刚刚读过一遍",
                     tie="和它在完整 kernel 里多出来的那段差不多", lower="比它在完整 kernel 里多出来的那段还短")


#: The paragraph that takes the stream-K kernel apart (:func:`_skws_parts_claim`).
SKWS_PARTS = ("再把 stream-K 的 kernel 本身拆开。让同一个 kernel 只算整块所在的那些行（同样的块、同样的 worker，一段也不切），"
              "这一波要 {wave:.1f} µs；所以尾部让 kernel 长了 {tail:.1f} µs。照整波每个 K 步的速度，最忙的 SM 在尾部走的 "
              "{steps} 步只该花 {rate:.1f} µs，{tail_clause}。反过来只算尾部那一行块，每块照样切开分给全部 worker，那个 kernel "
              "要 {alone:.1f} µs，{alone_clause}。")


def _skws_parts_claim(results: dict | None):
    """The stream-K kernel taken apart (its wave alone, what the tail adds against its steps at the wave's rate, the
    tail alone), sentences that close the timeline paragraph; case ``"whole"`` (nothing) when the record has the
    timeline but not the parts (a winner the suite does not take apart,
    :func:`measure.suites.gemm.streamk_ws.wave_tail_rows`)."""
    from coursebook import claims as C

    t, tail = _skws_timeline(results), _skws_tail(results)
    tc, ac = _skws_tail_claim(results), _skws_alone_claim(results)
    if t["sk_us"] is None:
        case = None
    elif tail["tail_us"] is None or t["tail_alone_us"] is None:
        case = "whole"
    else:
        case = "parts"
    # "whole": the winner was not taken apart; the page says nothing about a breakdown it does not show
    return C.choose("claim.gemm.skws.tl.parts", case, {"parts": SKWS_PARTS, "whole": ""},
                    wave=t["wave_us"], tail=tail["tail_us"], steps=tail["tail_steps"], rate=tail["rate_us"],
                    alone=t["tail_alone_us"], tail_clause=tc.text, alone_clause=ac.text)


def streamk_ws_claims(results: dict | None) -> list:
    """Comparative sentences about stream-K on the hand-written pipeline, chosen by its records
    (``claim.gemm.skws.*``; :data:`coursebook.claims.UNKNOWN` until the suite is recorded)."""
    from coursebook import claims as C
    from measure.suites.gemm import streamk_ws as S

    def sp(key: str, base: str) -> float | None:
        return ((bench(results, SKWS[key], "gemm.streamk_ws") or {}).get("speedup") or {}).get(base)

    def full_wave(base: str) -> float | None:
        name = "full-wave 128x144 {}x{}x{}".format(*S.FULL_WAVE_SHAPES[0])
        return ((bench(results, name, "gemm.streamk_ws") or {}).get("speedup") or {}).get(base)

    return [
        C.threshold("claim.gemm.skws.awk.cublas", sp("awk", "cuBLAS"), S.TARGETS[S.SHAPES[0]]["speedup:cuBLAS"],
                    above="达到了事先定下的 {limit} 倍", below="还没有达到事先定下的 {limit} 倍"),
        C.threshold("claim.gemm.skws.awk.dp", sp("awk", "data-parallel"), 1.0,
                    above="比同一条流水的数据并行切法快", below="反而比同一条流水的数据并行切法慢"),
        C.threshold("claim.gemm.skws.skinny.cublas", sp("skinny", "cuBLAS"), 1.0,
                    above="追上了 cuBLAS", below="仍落后于 cuBLAS"),
        C.threshold("claim.gemm.skws.skinny.splitk", sp("skinny", "split-K ws"), 1.0,
                    above="不比同一次运行里的 split-K 慢", below="比同一次运行里的 split-K 慢"),
        C.threshold("claim.gemm.skws.full.dp", sp("full", "data-parallel"), 1.0,
                    above="也没有因此变慢", below="比数据并行慢：修正步骤在这里是纯开销"),
        C.compare("claim.gemm.skws.awk.order", _skws_order_us(results)["row"], _skws_order_us(results)["panel"],
                  lower="按行排队快得多", higher="按行排队反而更慢", tie="两种顺序差不多快", tol=0.02),
        C.threshold("claim.gemm.skws.fw.cublas", full_wave("cuBLAS"), S.TARGETS[S.SHAPES[0]]["speedup:cuBLAS"],
                    above="达到了事先定下的 {limit} 倍", below="也没有达到事先定下的 {limit} 倍"),
        # stream-K's bench over the full-wave tiling: below 1, stream-K is the slower one
        C.threshold("claim.gemm.skws.fw.vs_sk", sp("awk", "full-wave 128x144"), 1.0,
                    above="stream-K 并不比它慢", below="比最快的 stream-K 还快"),
        _skws_timeline_claim(results),
        _skws_fix_claim(results),
        _skws_parts_claim(results),
    ]
