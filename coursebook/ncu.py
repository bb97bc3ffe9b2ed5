"""Nsight Compute summaries drawn for the book: the case study's DRAM and L2 bytes next to the
ledger's, the row kernels' instructions and issue slots, the 8192^3 GEMMs' L2 and DRAM reads.

Everything reads the committed summaries of :mod:`measure.ncu` (``measure/results/ncu/``); a
missing summary gives ``—`` and a figure that says so.  The value functions return
``{glue key: printed text}``.
"""
from __future__ import annotations

import json
from pathlib import Path

from coursebook.records import DASH, NO_RESULT, label_in_words, load, records, search
from coursebook.style import COLORS as _C
from coursebook.style import figure

__all__ = ["recorded", "case_values", "case_traffic", "design_label", "design_rows", "recorded_benches", "rows_values",
           "gemm_values", "fused_words", "rows_claims", "w4a16_values", "w4a16_claims"]


def recorded(name: str) -> dict | None:
    """The committed summary ``measure/results/ncu/<name>.json`` (``ncu_case``, ``ncu_rows``,
    ``ncu_gemm``), or None."""
    from measure.ncu.driver import RESULTS

    p = Path(RESULTS) / f"{name}.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def recorded_benches(device: str = "nvidia-h200") -> dict:
    """Harness timings of the designs from the recorded results: {design: record}."""
    from kernels.case_study import DESIGNS, TOKENS

    res = load(device)
    out = {}
    for r in records(res, "case_study", kind="bench"):
        if r.get("suite") == "case_study" and r.get("design") in DESIGNS and r.get("name", "").endswith(f"T={TOKENS}"):
            out[r["design"]] = r
    return out


def design_label(key: str) -> str:
    """The case study's design ``key`` (``A``, ``B``, ``C``) in Chinese: how many rows one block takes."""
    from ledger import case_study as lc

    rows = lc.DESIGNS[key]
    if rows == 1:
        return f"{key}：一行一个 block"
    if rows == lc.CASE.rows_per_token:
        return f"{key}：一个 token（{rows} 行）一个 block"
    return f"{key}：一个 block {rows} 行"


def design_rows(ncu: dict | None = None, benches: dict | None = None) -> list[dict]:
    """One row per design: ledger budget next to what was measured (None where not measured)."""
    from kernels.case_study import DESIGNS
    from ledger import case_study as lc
    from measure.suites.case_study import ledger_design

    ncu = recorded("ncu_case") if ncu is None else ncu
    benches = recorded_benches() if benches is None else benches
    rows = []
    for d in DESIGNS:
        led = ledger_design(d)
        m = (ncu or {}).get("designs", {}).get(d, {})
        b = benches.get(d, {})
        rows.append({
            "design": d, "rows_per_block": led.rows_per_block, "grid": led.grid, "waves": led.waves,
            "ledger_mb": led.total_bytes / 1e6, "ledger_floor_us": lc.sol_seconds(led.total_bytes) * 1e6,
            "dram_mb": m.get("dram_mb"), "l2_mb": m.get("l2_mb"),
            "measured_over_ledger": m.get("measured_over_ledger"),
            "ncu_us": m.get("time_us"), "harness_us": None if not b.get("ms") else b["ms"] * 1e3,
        })
    return rows


def case_traffic(ncu: dict | None = None):
    """Left: ledger bytes of designs A/B/C (payload + lookup) against the measured DRAM and
    L2 bytes.  Right: ledger floor against the measured time.  Without a recorded
    Nsight Compute file only the ledger bars are drawn and the title says so."""
    from ledger import case_study as cs

    ncu = recorded("ncu_case") if ncu is None else ncu
    ds = cs.book_designs()
    names = list(ds)
    fig = figure(9.2, 4.0)
    ax, bx = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    xs = range(len(names))
    pay = [ds[k].payload_bytes / 1e6 for k in names]
    look = [ds[k].lookup_bytes / 1e6 for k in names]
    ax.bar([x - 0.2 for x in xs], pay, 0.38, color=_C["memory"], label="账本：有效载荷")
    ax.bar([x - 0.2 for x in xs], look, 0.38, bottom=pay, color=_C["eager"], label="账本：查表")
    ax.axhline(cs.ideal_bytes() / 1e6, color="#333333", ls="--", lw=1, label="理想字节")
    floors = [ds[k].floor_seconds() * 1e6 for k in names]
    bx.bar([x - 0.2 for x in xs], floors, 0.38, color=_C["datasheet"], label="账本下界")
    if ncu:
        d = ncu["designs"]
        ax.bar([x + 0.2 for x in xs], [d[k]["dram_mb"] for k in names], 0.38, color=_C["calibrated"], label="实测 DRAM（ncu）")
        ax.plot([x + 0.2 for x in xs], [d[k]["l2_mb"] for k in names], "k^", ms=7, label="实测 L2 字节（ncu）")
        bx.bar([x + 0.2 for x in xs], [d[k]["time_us"] for k in names], 0.38, color=_C["compute"], label="实测时间（ncu）")
        p = ncu.get("provenance", {})
        fig.suptitle(f"记录于 {p.get('device', '?')}，{str(p.get('date', '?'))[:10]}，冷 L2 单次发射", fontsize=10)
    else:
        fig.suptitle(NO_RESULT, fontsize=10)
    for a in (ax, bx):
        a.set_xticks(list(xs))
        a.set_xticklabels([f"设计 {k}\n{ds[k].rows_per_block} 行/block" for k in names])
        a.legend(fontsize=8)
    ax.set_ylabel("MB")
    ax.set_title("搬运字节：账本与实测")
    bx.set_ylabel("µs")
    bx.set_title("时间：账本下界与实测")
    return fig


def _ideal_read_bytes() -> float:
    """What the case must read at least: the bf16 input once and the lookup data once."""
    from ledger import case_study as cs
    from ledger.cost import dtype_bytes

    return cs.CASE.elements * dtype_bytes(cs.CASE.in_dtype) + cs.lookup_bytes()


NCU_KEYS = ("device", "date", "version", "ideal_mb", "a.dram_mb", "a.read_mb", "a.l2_mb", "a.l2_hit_pct",
            "a.over_ideal", "a.over_ledger", "a.ledger_mb", "a.time_us", "a.gbps", "a.warps_pct", "c.dram_mb",
            "c.time_us", "c.gbps", "b.time_us", "time_a_over_c", "dram_a_over_c", "ledger_a_over_c", "cal.read_mb",
            "cal.write_mb", "cal.expected_mb", "cal.write_pct", "cal.gbps", "a.ns_per_block", "c.warps_pct",
            "c.read_mb", "ideal_read_mb", "harness_a_over_c")


def case_values(ncu: dict | None = None) -> dict[str, str]:
    """Printed texts of the recorded Nsight Compute summary, keyed ``perfmodel.ncu.*``.

    Without a recorded file every key reads "—" (the page's measured cell says why)."""
    ncu = recorded("ncu_case") if ncu is None else ncu
    if not ncu:
        return {f"perfmodel.ncu.{k}": "—" for k in NCU_KEYS}
    d, cal, p = ncu["designs"], ncu["calibration"], ncu.get("provenance", {})
    a, b, c = d["A"], d["B"], d["C"]
    benches = recorded_benches()
    out = {
        "perfmodel.ncu.device": str(p.get("device", "?")),
        "perfmodel.ncu.date": str(p.get("date", "?"))[:10],
        "perfmodel.ncu.version": str(p.get("ncu_version", "ncu")).split(" (")[0],
        "perfmodel.ncu.ideal_mb": f"{ncu['ideal_mb']:.1f}",
        "perfmodel.ncu.a.dram_mb": f"{a['dram_mb']:.1f}",
        "perfmodel.ncu.a.read_mb": f"{a['dram_read_mb']:.1f}",
        "perfmodel.ncu.a.l2_mb": f"{a['l2_mb']:.1f}",
        "perfmodel.ncu.a.l2_hit_pct": f"{a['l2_hit_pct']:.0f}",
        "perfmodel.ncu.a.over_ideal": f"{a['measured_over_ideal']:.2f}",
        "perfmodel.ncu.a.over_ledger": f"{a['measured_over_ledger']:.2f}",
        "perfmodel.ncu.a.ledger_mb": f"{a['ledger_mb']:.0f}",
        "perfmodel.ncu.a.time_us": f"{a['time_us']:.1f}",
        "perfmodel.ncu.a.gbps": f"{a['dram_gbps']:.0f}",
        "perfmodel.ncu.a.warps_pct": f"{a['warps_active_pct']:.0f}",
        "perfmodel.ncu.c.dram_mb": f"{c['dram_mb']:.1f}",
        "perfmodel.ncu.c.time_us": f"{c['time_us']:.1f}",
        "perfmodel.ncu.c.gbps": f"{c['dram_gbps']:.0f}",
        "perfmodel.ncu.b.time_us": f"{b['time_us']:.1f}",
        "perfmodel.ncu.time_a_over_c": f"{ncu['time_ratio_A_over_C']:.2f}",
        "perfmodel.ncu.dram_a_over_c": f"{ncu['dram_ratio_A_over_C']:.2f}",
        "perfmodel.ncu.ledger_a_over_c": f"{ncu['ledger_ratio_A_over_C']:.2f}",
        "perfmodel.ncu.cal.read_mb": f"{cal['dram_read_mb']:.1f}",
        "perfmodel.ncu.cal.write_mb": f"{cal['dram_write_mb']:.1f}",
        "perfmodel.ncu.cal.expected_mb": f"{cal['expected_mb_each_way']:.1f}",
        "perfmodel.ncu.cal.write_pct": f"{100 * cal['dram_write_mb'] / cal['expected_mb_each_way']:.0f}",
        "perfmodel.ncu.cal.gbps": f"{cal['dram_gbps']:.0f}",
        "perfmodel.ncu.a.ns_per_block": f"{1e3 * a['time_us'] / int(str(a['grid']).strip('()').split(',')[0]):.2f}",
        "perfmodel.ncu.c.warps_pct": f"{c['warps_active_pct']:.0f}",
        "perfmodel.ncu.c.read_mb": f"{c['dram_read_mb']:.1f}",
        "perfmodel.ncu.ideal_read_mb": f"{_ideal_read_bytes() / 1e6:.1f}",
    }
    if "A" in benches and "C" in benches:
        out["perfmodel.ncu.harness_a_over_c"] = f"{benches['A']['ms'] / benches['C']['ms']:.1f}"
    out.setdefault("perfmodel.ncu.harness_a_over_c", "—")
    return out


#: One token of a label of the fused kernel's search (``vec,tpr=128,rows=1,seg=8,min_blocks=9,prefetch``), in words.
_FUSED_WORDS = (
    (r"blk_m=(\d+)", "每块 {0} 行"), (r"rows=(\d+)", "每块 {0} 行"), (r"rpb=(\d+)", "每块 {0} 行"),
    (r"min_blocks=(\d+)", "每 SM 至少驻留 {0} 块"), (r"max_regs=(\d+)", "每线程至多 {0} 个寄存器"),
    (r"tpr=(\d+)", "每行 {0} 个线程"), (r"seg=(\d+)", "每线程 {0} 个连续通道"), (r"stages=(\d+)", "{0} 级缓冲"),
    (r"lean", "精简写法"), (r"pipe", "持久化流水"), (r"warp", "一个 warp 一行"), (r"vecp", "vecp 调度"),
    (r"vec", "vec 调度"), (r"prefetch", "提前取 cos/sin 进 L1"),
)


def fused_words(label: str) -> str:
    """A configuration of the fused kernel's search in words (``"vec 调度，每行 128 个线程，…"``)."""
    return label_in_words(label, _FUSED_WORDS, ",", "，")


def rows_values(results: dict | None = None, ncu: dict | None = None) -> dict[str, str]:
    """Texts of the "where the fused FP8 kernel stalls" passage: ``derived.elementwise.diag.*`` from the
    recorded search of the fused kernel's schedules, ``derived.elementwise.ncu.*`` from the recorded
    Nsight Compute run (``measure/results/ncu/ncu_rows.json``).  Missing data -> "—"."""
    results = results if results is not None else load()
    ncu = ncu if ncu is not None else recorded("ncu_rows")
    out: dict[str, str] = {}
    srch = search(results, "fused rmsnorm+rope+fp8 blk_m") or {}
    ms = srch.get("ms") or {}

    def best(pred):
        hits = {k: v for k, v in ms.items() if pred(k)}
        return min(hits.items(), key=lambda kv: kv[1]) if hits else (None, None)

    groups = {
        "orig": lambda k: k == "blk_m=2",
        "capped": lambda k: k.startswith("blk_m=") and "min_blocks" in k,
        "lean": lambda k: k.startswith("lean,"),
        "pipe": lambda k: k.startswith("pipe,"),
        "warp": lambda k: k.startswith("warp,"),
        "vec": lambda k: k.startswith("vec,") and not k.endswith(",prefetch"),
        "vecpf": lambda k: k.startswith("vec,") and k.endswith(",prefetch"),
        "vecp": lambda k: k.startswith("vecp,"),
    }
    for g, pred in groups.items():
        lab, t = best(pred)
        out[f"derived.elementwise.diag.{g}_us"] = "—" if t is None else f"{t * 1e3:.1f}"
        out[f"derived.elementwise.diag.{g}_cfg"] = lab or "—"
        out[f"derived.elementwise.diag.{g}_words"] = fused_words(lab) if lab else "—"
    out["derived.elementwise.diag.best"] = srch.get("best") or "—"
    out["derived.elementwise.diag.best_words"] = fused_words(srch["best"]) if srch.get("best") else "—"
    # the winner's time in the search (each candidate timed once there); the timing table times it again
    out["derived.elementwise.diag.best_us"] = f"{ms[srch['best']] * 1e3:.1f}" if srch.get("best") in ms else "—"
    from measure.suites.fused import PIPE_THREADS
    from measure.ncu.rows import FUSED_CFG, LEAN_CFG, VEC_CFG, VECP_CFG
    from measure.ncu.rows import N as ROW

    out["derived.elementwise.diag.warp_elems"] = str(ROW // 32)  # the warp schedule: one row over 32 lanes
    out["derived.elementwise.diag.pipe_consumers"] = str(PIPE_THREADS)
    out["derived.elementwise.diag.vec_elems"] = str(ROW // VEC_CFG[0])  # the vec schedule: one row over tpr lanes

    for key, (bm, mb) in (("fused", FUSED_CFG), ("lean", LEAN_CFG)):
        out[f"derived.elementwise.ncu.{key}.cfg"] = f"每块 {bm} 行，每 SM {mb} 块"
    out["derived.elementwise.ncu.vec.cfg"] = f"每行 {VEC_CFG[0]} 线程，每 SM {VEC_CFG[3]} 块"
    out["derived.elementwise.ncu.vecp.cfg"] = f"每块 {VECP_CFG[2]} 行，预取 {VECP_CFG[3] - 1} 行"
    names = {"rms": "rmsnorm rows", "quant": "quant_fp8", "fused": "fused fp8", "lean": "fused fp8 lean",
             "vec": "fused fp8 vec", "vecp": "fused fp8 vecp"}
    ks = (ncu or {}).get("kernels", {})
    for key, name in names.items():
        k = ks.get(name) or {}
        for field, fmt in (("issue_pct_of_peak", "{:.0f}"), ("dram_pct_of_peak", "{:.0f}"),
                           ("instructions_per_element", "{:.1f}"), ("time_us", "{:.1f}"),
                           ("registers_per_thread", "{:.0f}")):
            v = k.get(field)
            out[f"derived.elementwise.ncu.{key}.{field.split('_')[0]}"] = "—" if v is None else fmt.format(v)
    return out


def rows_claims(results: dict | None = None) -> list:
    """The sentences of the fused kernel's diagnosis that conclude from the records, chosen by them
    (:mod:`coursebook.claims`; keys ``claim.elementwise.fused.*``)."""
    from coursebook import claims as C
    from coursebook.records import records as _records

    results = results if results is not None else load()
    benches = {r["name"]: r for r in _records(results, ("fused",), kind="bench")}
    f8 = next((r for n, r in benches.items() if n.startswith("fused rmsnorm+rope+fp8")), None)
    bf = next((r for n, r in benches.items() if n.startswith("fused rmsnorm+rope bf16")), None)
    ms = (search(results, "fused rmsnorm+rope+fp8 blk_m") or {}).get("ms") or {}
    out = []
    have = f8 and bf and f8.get("ms") and bf.get("ms") and f8.get("bytes") and bf.get("bytes")
    tr = bf["ms"] / f8["ms"] if have else None
    br = bf["bytes"] / f8["bytes"] if have else None
    case = None if not have else ("kept" if tr >= 0.9 * br else ("some" if tr > 1.02 else "none"))
    out.append(C.choose(
        "claim.elementwise.fused.now", case,
        {"kept": "记录里的融合 FP8 kernel 按字节兑现了收益：它只读一遍 x、每个元素写出一字节的编码，"
                 "要 {a:.1f} µs；写回 bf16 的 RMSNorm+RoPE 要 {b:.1f} µs。两者的时间比 {t:.2f}，"
                 "账本给的字节比 {r:.2f}。",
         "some": "融合 FP8 kernel 只读一遍 x、每个元素写出一字节的编码，记录里要 {a:.1f} µs，写回 bf16 的 "
                 "RMSNorm+RoPE 要 {b:.1f} µs：快了，但时间比 {t:.2f} 远不到账本给的字节比 {r:.2f}。",
         "none": "融合 FP8 kernel 只读一遍 x、每个元素写出一字节的编码，本该比写回 bf16 的 RMSNorm+RoPE "
                 "快得多，记录里它却要 {a:.1f} µs，后者是 {b:.1f} µs（字节比 {r:.2f}）。"},
        a=(f8 or {}).get("ms", 0) * 1e3, b=(bf or {}).get("ms", 0) * 1e3, t=tr, r=br))
    orig = ms.get("blk_m=2")
    out.append(C.compare(
        "claim.elementwise.fused.first", orig * 1e3 if orig else None, bf["ms"] * 1e3 if bf else None, tol=0.02,
        higher="比写回 bf16 的版本还慢", tie="与写回 bf16 的版本差不多快", lower="只比写回 bf16 的版本快一点"))

    def vec(mb: int, pf: bool = False):
        t = ms.get(f"vec,tpr=128,rows=1,seg=8,min_blocks={mb}" + (",prefetch" if pf else ""))
        return None if t is None else t * 1e3

    out.append(C.compare(
        "claim.elementwise.fused.spill", vec(10), vec(9), tol=0.02,
        higher="再多压一个块（每 SM 至少 10 块），寄存器开始溢出到本地内存，反而变慢：{a:.1f} µs",
        tie="再多压一个块（每 SM 至少 10 块），时间几乎不变：{a:.1f} µs",
        lower="再多压一个块（每 SM 至少 10 块）还能再快一点：{a:.1f} µs"))
    out.append(C.compare(
        "claim.elementwise.fused.prefetch", vec(9, True), vec(9), tol=0.02,
        tie="{a:.1f} µs，与不预取的版本没有可分辨的差别（相差不到百分之二，在这次搜索的测量分辨率以内）",
        lower="{a:.1f} µs，比不预取的版本快了 {pct:.1f}%", higher="{a:.1f} µs，比不预取的版本慢了 {pct:.1f}%",
        pct=None if not (vec(9, True) and vec(9)) else abs(vec(9, True) / vec(9) - 1) * 100))
    return out


def gemm_values(data: dict | None = None) -> dict[str, str]:
    """The Nsight Compute run of the 8192^3 GEMMs (``measure/results/ncu/ncu_gemm.json``) and the
    ledger's L2 -> SM bytes of the 128x256 tiles it is read against."""
    from ledger.gemm import tiled_traffic

    from measure.ncu import gemm as ncu_gemm

    v: dict[str, str] = {}
    side = ncu_gemm.SIDE
    v["calc.gemm.ncu.tiled_l2_mb"] = f"{tiled_traffic(side, side, side, 128, 256, 'fp16', 'fp16') / 1e6:.0f}"
    data = (recorded("ncu_gemm") if data is None else data) or {}
    keys = {"automatic": "auto", "hand-written": "ws", "hand-written multicast": "mc", "cuBLAS": "cublas"}
    for name, key in keys.items():
        k = (data.get("kernels") or {}).get(name) or {}
        for field, spec in (("l2_read_mb", ".0f"), ("dram_read_mb", ".0f"), ("time_us", ".0f"), ("sm_mhz", ".0f")):
            x = k.get(field)
            v[f"derived.gemm.ncu.{key}.{field}"] = DASH if x is None else format(x, spec)
    v["derived.gemm.ncu.date"] = ((data.get("provenance") or {}).get("date") or DASH)[:10]
    return v


# ------------------------------------------------------------------ W4A16 at decode shapes
W4_KERNELS = {"wg16": "wgmma M=16", "nomma": "wgmma nomma M=16", "noexpand": "wgmma noexpand M=16",
              "cublas16": "cuBLAS fp16 M=16", "loadonly": "decode r128 sk4 loadonly M=1"}


def _w4_rows(data: dict | None) -> dict:
    data = (recorded("ncu_w4a16") if data is None else data) or {}
    return {k: (data.get("kernels") or {}).get(name) for k, name in W4_KERNELS.items()}


def w4a16_values(data: dict | None = None) -> dict[str, str]:
    """``derived.gemm.w4.ncu.*``: the Nsight Compute profile of the W4A16 decode kernels
    (``measure/results/ncu/ncu_w4a16.json``): times and DRAM read throughput (% of peak)."""
    rows = _w4_rows(data)
    out = {}
    for k, r in rows.items():
        out[f"derived.gemm.w4.ncu.{k}_us"] = DASH if not r else f"{r['duration_us']:.1f}"
        out[f"derived.gemm.w4.ncu.{k}_dram_pct"] = DASH if not r else f"{r['dram_throughput_pct_of_peak']:.0f}"
    prov = ((recorded("ncu_w4a16") if data is None else data) or {}).get("provenance") or {}
    ncu_ver = (str(prov.get("ncu_version") or "").split() + [DASH, DASH])[1]  # "Version 2025.3.1.0 (build …)"
    out["derived.gemm.w4.ncu.provenance"] = (DASH if not prov else
                                             f"{prov.get('device', DASH)}，{str(prov.get('date', DASH))[:10]}，"
                                             f"Nsight Compute {ncu_ver}，tilelang {prov.get('tilelang', DASH)}，"
                                             f"torch {prov.get('torch', DASH)}")
    r = rows["loadonly"]
    stall = next((s for s in (r or {}).get("top_stalls", []) if s["reason"] == "lg_throttle"), None)
    out["derived.gemm.w4.ncu.loadonly_lg_pct"] = DASH if not stall else f"{stall['pct']:.0f}"
    return out


def w4a16_claims(data: dict | None = None) -> list:
    """The sentences the profile decides: how much the wgmma kernel's two halves overlap (its time
    against the probes' times), and whether the decode kernel's loads queue at the LSU."""
    from coursebook import claims as C

    rows = _w4_rows(data)
    full, a, b = (rows[k] and rows[k]["duration_us"] for k in ("wg16", "nomma", "noexpand"))
    case = None
    if full and a and b:
        case = "serial" if full >= 0.85 * (a + b) else ("overlapped" if full <= 1.15 * max(a, b) else "partial")
    out = [C.choose("claim.gemm.w4.ncu.overlap", case, {
        "serial": "整个 kernel 的时间接近两半之和：展开与张量核乘法几乎是一前一后做的",
        "partial": "整个 kernel 的时间介于两半中较长的那个与两半之和之间：两者只重叠了一部分",
        "overlapped": "整个 kernel 的时间接近两半中较长的那个：两者已经基本重叠"})]
    lo = rows["loadonly"]
    top2 = [s["reason"] for s in (lo or {}).get("top_stalls", [])[:2]]
    out.append(C.choose("claim.gemm.w4.ncu.dec_stall", None if not lo else ("lg" if "lg_throttle" in top2 else "other"), {
        "lg": "停顿最多的两项里有 lg_throttle（占全部 warp 状态周期的 {lg}%）：访存指令在 LSU（load/store unit，访存单元）的队列前排队，"
              "每个线程各自发出的加载指令太多，队列先满了，带宽还没满",
        "other": "停顿最多的是 {top}，不是访存指令排队"}, top=top2[0] if top2 else "",
        lg=next((f"{s['pct']:.0f}" for s in (lo or {}).get("top_stalls", []) if s["reason"] == "lg_throttle"), "")))
    return out
