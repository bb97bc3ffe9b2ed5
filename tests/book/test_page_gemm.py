"""Checks on the GEMM chapter (landing book/ch_gemm.md and its section pages under book/gemm/) and its
helpers (coursebook.gemm_ladder, .tiles, ...).

* every glued key exists: registry figures (gemm/perfmodel/machines), measured values of the
  recorded results (rec.*), the pages' derived values (calc.gemm.*, derived.gemm.*) and the claims
  chosen by the records (claim.gemm.*); each page glues what it uses in its own setup cell;
* the prose types no decimal and no registry number (numbers are glued), is long enough; every
  section is there, each page short enough; exercises have collapsible answers; references carry
  URLs; kernel code is read from the package, not retyped;
* the helpers: figures draw, tables say "no recorded result" without results and name
  configurations in words, the fp8 section reads whatever fp8 records exist (verdicts not fixed in
  the text), the lowered evidence of a rung names its instruction path;
* the sentences that conclude from the records are glued variants (checked here on fabricated
  records) or guarded by the tests marked ``@claims.guards`` below.
"""

import re
from pathlib import Path

import pytest

from coursebook import claims
from coursebook.pagecheck import (CJK, GLUE, chapter_pages, chapter_text, labelled_block, page_text, typed_decimals,
                                  typed_numbers)
from coursebook.pagecheck import prose_of as _prose

ROOT = Path(__file__).resolve().parents[2]
LANDING = "ch_gemm.md"
PREFIXES = ("gemm", "perfmodel", "machines")


def _pages() -> list[str]:
    return chapter_pages(LANDING)


def _text() -> str:
    return chapter_text(LANDING)


def _block(start: str, end: str | None = None) -> str:
    return labelled_block(_text(), start, end)


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(PREFIXES)}


@pytest.fixture(scope="module")
def results():
    from coursebook import records

    return records.load()


def _page_values(results):
    """Every value the pages' setup cells glue besides the registry and the measured values."""
    from coursebook import claims as C
    from coursebook import gemm_ladder, ncu, tiles

    return {**tiles.exercise_values(), **tiles.splitk_values(results), **tiles.streamk_values(results),
            **tiles.variant_values(results), **tiles.library_values(results), **tiles.streamk_ws_values(results),
            **tiles.flush_values(results), **gemm_ladder.pipeline_values(),
            **gemm_ladder.tuned_values(results), **gemm_ladder.replicate_values(results),
            **gemm_ladder.fp8_values(results), **ncu.gemm_values(), **ncu.w4a16_values(),
            **gemm_ladder.ladder_values(results), **gemm_ladder.ledger_words(),
            **C.claim_values(gemm_ladder.ladder_claims(results), gemm_ladder.ws_claims(results),
                             gemm_ladder.stage_claims(results),
                             gemm_ladder.fp8_claims(results), gemm_ladder.lowp_claims(results),
                             tiles.variant_claims(results), tiles.library_claims(results), tiles.wave_claims(results),
                             tiles.streamk_ws_claims(results), tiles.flush_claims(results),
                             ncu.w4a16_claims({} if results is None else None))}


def test_the_chapter_is_split_into_pages():
    pages = _pages()
    assert pages[0] == LANDING and len(pages) >= 10
    assert all(p.startswith("gemm/") for p in pages[1:])
    assert "{tableofcontents}" in page_text(LANDING)
    assert not re.search(r"^##\s", page_text(LANDING), flags=re.M)


def test_every_glue_key_exists(registry, results):
    from coursebook.measured import measured_values

    used = set(GLUE.findall(_text()))
    assert used, "the chapter glues nothing"
    known = set(registry) | set(_page_values(results)) | {"rec.header"}
    if results is not None:
        known |= set(measured_values(results))
    rec_used = {k for k in used if k.startswith("rec.")}
    missing = sorted(k for k in used - known if not (results is None and k in rec_used))
    assert not missing, f"glued keys nobody provides: {missing}"


_PROVIDERS = {
    "calc.gemm.ledger.": "gemm_ladder.ledger_words(", "calc.gemm.bench.statistic": "gemm_ladder.ledger_words(",
    "claim.gemm.tune.stages": "gemm_ladder.stage_claims(", "claim.gemm.ex.e4": "gemm_ladder.stage_claims(",
    "claim.gemm.tune.bench_vs_search": "gemm_ladder.ws_claims(",
    "derived.gemm.cublas.s4096.span": "gemm_ladder.ladder_values(", "derived.gemm.cublas.s8192.span": "gemm_ladder.ladder_values(",
    "derived.gemm.ladder.": "gemm_ladder.ladder_values(",
    "gemm.": "glue_figures(", "perfmodel.": "glue_figures(", "machines.": "glue_figures(", "rec.": "glue_measured(",
    "calc.gemm.ex.ws_": "gemm_ladder.pipeline_values(", "calc.gemm.ex.": "tiles.exercise_values(",
    "calc.gemm.splitk.": "tiles.splitk_values(", "calc.gemm.streamk.": "tiles.streamk_values(",
    "calc.gemm.skws.": "tiles.streamk_ws_values(", "derived.gemm.skws.": "tiles.streamk_ws_values(",
    "claim.gemm.skws.": "tiles.streamk_ws_claims(",
    "calc.gemm.fp8.": "gemm_ladder.fp8_values(", "calc.gemm.ncu.": "ncu.gemm_values(",
    "calc.gemm.": "gemm_ladder.pipeline_values(",
    "derived.gemm.splitk.": "tiles.splitk_values(", "derived.gemm.streamk.": "tiles.streamk_values(",
    "derived.gemm.lib.": "tiles.library_values(", "claim.gemm.lib.": "tiles.library_claims(",
    "claim.gemm.waves.": "tiles.wave_claims(",
    "derived.gemm.grouped.": "tiles.variant_values(", "derived.gemm.fp8.": "gemm_ladder.fp8_values(",
    "derived.gemm.ncu.": "ncu.gemm_values(", "derived.gemm.w4.ncu.": "ncu.w4a16_values(",
    "claim.gemm.w4.ncu.": "ncu.w4a16_claims(", "derived.gemm.ws.": "gemm_ladder.replicate_values(",
    "derived.gemm.tune.runs": "gemm_ladder.replicate_values(", "derived.gemm.tune.n_runs": "gemm_ladder.replicate_values(",
    "derived.gemm.tune.s4096.ratio_": "gemm_ladder.replicate_values(",
    "derived.gemm.tune.s8192.ratio_": "gemm_ladder.replicate_values(",
    "derived.gemm.": "gemm_ladder.tuned_values(",
    "claim.gemm.ladder.": "gemm_ladder.ladder_claims(", "claim.gemm.tune.": "gemm_ladder.ladder_claims(",
    "claim.gemm.ws.": "gemm_ladder.ws_claims(", "claim.gemm.vs_cublas.": "gemm_ladder.ws_claims(",
    "claim.gemm.ex.": "gemm_ladder.ws_claims(", "claim.gemm.fp8.": "gemm_ladder.fp8_claims(",
    "claim.gemm.w4a16.": "gemm_ladder.lowp_claims(", "claim.gemm.": "tiles.variant_claims(",
}


@pytest.mark.parametrize("page", chapter_pages(LANDING))
def test_each_page_glues_what_it_uses(page):
    """Glue is per page: a key used on a page must be glued by that page's own setup cell."""
    text = page_text(page)
    for key in set(GLUE.findall(text)):
        need = next(v for k, v in _PROVIDERS.items() if key.startswith(k))
        assert need in text, f"{page} uses {key} but does not call {need}"
    if any(k.startswith("rec.") and k != "rec.header" for k in GLUE.findall(text)):
        assert "glue_missing(" in text, f"{page}: a live run may lack a kernel; glue_missing keeps the build strict"


_SHAPES = {"0", "1", "2", "3", "4", "5", "8", "16", "24", "32", "64", "128", "192", "256", "512", "1024", "1536",
           "2048", "4096", "8192", "16384", "2009", "2026",
           "20"}  # E10 states a kernel of 20 us (a problem input)


def test_prose_types_no_registry_number(registry):
    prose = _prose(_text())
    texts = {str(f.text) for f in registry.values() if re.fullmatch(r"[0-9.]+", str(f.text))}
    typed = typed_numbers(prose, texts, _SHAPES)
    assert not typed, f"numbers typed into the prose that the registry holds (glue them): {typed}"


def test_prose_has_no_decimal_number():
    decimals = typed_decimals(_prose(_text()))
    # the tilelang version is a name, not a measurement
    decimals = [d for d in decimals if d not in ("0.1", "0.1.15")]
    assert not decimals, f"decimal numbers typed into the prose: {decimals}"


def test_prose_is_long_enough():
    n = len(CJK.findall(_prose(_text())))
    assert n >= 8000, f"chapter prose has {n} Chinese characters outside code, want >= 8000"


@pytest.mark.parametrize("page", chapter_pages(LANDING))
def test_no_page_is_too_long(page):
    n = len(CJK.findall(_prose(page_text(page))))
    assert n <= 6500, f"{page}: {n} Chinese characters of prose; split it"


def test_no_hard_coded_chapter_numbers():
    prose = _prose(_text())
    assert not re.search(r"第\s*\d+\s*章", prose), "cross-reference chapters by label, not by number"


def test_every_section_is_there():
    t = _text()
    for label in ("ch-gemm", "gemm-ledger", "gemm-tiled", "gemm-budget", "gemm-waves",
                  "gemm-ladder", "gemm-rung1", "gemm-rung2", "gemm-rung3", "gemm-rung4", "gemm-rung5",
                  "gemm-lowered", "gemm-ladder-measured", "gemm-tuning", "gemm-ws", "gemm-variants", "gemm-splitk",
                  "gemm-streamk", "gemm-grouped", "gemm-batched", "gemm-lowp", "gemm-fp8", "gemm-w4a16",
                  "gemm-support", "gemm-ascend", "gemm-protocol", "gemm-pitfalls",
                  "gemm-summary", "gemm-exercises", "gemm-references"):
        assert t.count(f"({label})=") == 1, label
    for ref in ("ch-pytorch-to-kernel", "ch-elementwise-norm-rope", "ch-perf-model", "records-gemm",
                "records-gemm-searches"):
        assert "{ref}`" + ref + "`" in t or f"<{ref}>`" in t, ref


def test_kernel_code_on_the_page_is_read_from_the_package():
    """The rungs the page lists are the ladder's factories, read back by ``inspect`` (a rung the
    package no longer has fails here), and no kernel body is retyped into the prose."""
    import inspect

    from kernels.gemm import ladder

    t = _text()
    shown = re.findall(r"inspect\.getsource\(ladder\.(\w+)\.func\)", t)
    assert set(shown) == set(ladder.RUNGS), shown
    for name in shown:
        assert "@T.prim_func" in inspect.getsource(getattr(ladder, name).func), name
    assert "T.Pipelined(" not in _prose(t).replace("`T.Pipelined(...", "")


def test_exercises_have_collapsible_answers():
    body = _block("gemm-exercises", "gemm-references")
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    blocks = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    assert len(blocks) >= 8
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), name
    numeric = [n for n, b in blocks.items() if "{glue:text}`" in b]
    assert len(numeric) >= len(blocks) - 2, f"answers without a glued number: {sorted(set(blocks) - set(numeric))}"


def test_references_carry_urls():
    refs = _block("gemm-references")
    items = [ln for ln in refs.splitlines() if ln.startswith("- ")]
    assert len([ln for ln in items if "<http" in ln]) >= 15


def test_cited_tests_exist():
    names = set(re.findall(r"(test_[a-z0-9_]+)", _text()))
    have = set()
    for f in (ROOT / "tests").rglob("test_*.py"):
        have.add(f.stem)
        have |= set(re.findall(r"^def (test_\w+)", f.read_text(encoding="utf-8"), flags=re.M))
    missing = sorted(n for n in names if n not in have)
    assert names and not missing, f"the chapter cites tests that do not exist: {missing}"


def test_figures_are_numbered_with_chinese_captions():
    t = _text()
    names = re.findall(r"^\s+name: (fig-gemm-[\w-]+)$", t, flags=re.M)
    assert len(names) >= 3 and len(set(names)) == len(names), names
    captions = re.findall(r"^\s+caption: (.+)$", t, flags=re.M)
    assert len(captions) >= len(names) and all(CJK.search(c) for c in captions)
    for name in names:
        assert "{numref}`" + name + "`" in t, f"figure {name} is never referred to"


# ----------------------------------------------------------------- helpers
@pytest.mark.parametrize("name", ["roofline.gemm_roofline", "gemm_ladder.ladder_bars", "tiles.splitk_bars"])
def test_figure_draws(name, results):
    import importlib

    from matplotlib.figure import Figure

    mod, fn = name.split(".")
    f = getattr(importlib.import_module(f"coursebook.{mod}"), fn)
    fig = f() if fn == "gemm_roofline" else f(results)
    assert isinstance(fig, Figure) and fig.axes


def test_tables_without_results_say_so():
    from coursebook import gemm_ladder, records, tiles

    empty = {"suites": {}}
    for md in (tiles.splitk_table(empty), tiles.streamk_table(empty), gemm_ladder.fp8_section(empty),
               tiles.w4a16_table(empty), tiles.grouped_ws_table(empty), tiles.batched_ws_table(empty),
               tiles.wave_table(empty),
               records.verdict_table(empty), records.flush_verdict_table(empty),
               records.variant_summary(empty, "grouped", "gemm.grouped"),
               gemm_ladder.audit_table(empty), gemm_ladder.tuning_table(empty), gemm_ladder.ws_table(empty)):
        assert records.NO_RESULT in md
        assert not re.search(r"\d+\.\d+", md)
    vals = _page_values(None)
    assert vals["derived.gemm.cublas.s4096.tflops"] == records.DASH and vals["calc.gemm.splitk.s1.grid"].isdigit()
    assert all(v == claims.UNKNOWN for k, v in vals.items() if k.startswith("claim.")), \
        [k for k, v in vals.items() if k.startswith("claim.") and v != claims.UNKNOWN]


def test_tables_name_configurations_in_words(results):
    from coursebook import gemm_ladder, records

    runs = gemm_ladder.ladder_replicates(results)
    from coursebook import tiles

    for md in (gemm_ladder.tuning_table(results), gemm_ladder.ws_table(results, runs), records.verdict_table(results),
               records.flush_verdict_table(results),
               gemm_ladder.fp8_section(results), tiles.w4a16_table(results), tiles.grouped_ws_table(results),
               tiles.batched_ws_table(results), tiles.wave_table(results)):
        assert not re.search(r"\d+x\d+x\d+_", md), "configuration labels belong to the appendix"
        assert not re.search(r"\^3", md)
        assert not re.search(r"flush:|\bws \d|full-wave|data-parallel|\d+x\d+", md), "record names belong to the appendix"
    assert gemm_ladder.config_words("128x256x64_s4_t256_p8_ws_e128_if0_pers_c2") == \
        "128×256×64 的块、4 级流水、两个计算 warpgroup、光栅化分组宽 8、手写流水、每次写回 128 列、" \
        "等 wgmma 全部完成再还缓冲、持久化、2 块一簇、多播 B"


def test_fp8_section_reads_any_fp8_record():
    """A later run may add another fp8 kernel: it must show up without a page edit; the teaching
    variant's tolerance statistics count as its element-wise check."""
    from coursebook import gemm_ladder as G

    def rec(name, ok, err, **kw):
        return [{"kind": "check", "name": name, "ok": ok, "max_abs_err": 1.0, "rel_fro_err": err, "mismatched": 0 if ok else 7},
                {"kind": "bench", "name": name, "tflops": 1000.0, "shape": [4096, 4096, 4096],
                 "speedup": {"torch._scaled_mm": 1.0}, "rel_fro_err": err, **kw}]

    single = {"kind": "bench", "name": "fp8 e4m3 single-level 4096^3", "tflops": 1100.0, "shape": [4096, 4096, 4096],
              "speedup": {"torch._scaled_mm": 1.04}, "rel_fro_err": 2.1e-3, "accumulation": "single-level (teaching variant)",
              "tolerance": {"ok": False, "mismatched": 280, "max_abs_err": 2.4, "rel_fro_err": 2.1e-3}}
    fake = {"suites": {"gemm.lowp": {"records": [
        {"kind": "check", "name": "torch._scaled_mm 4096^3", "ok": True, "max_abs_err": 1.0, "rel_fro_err": 1.6e-3},
        *rec("fp8 e4m3 4096^3", True, 1.6e-3, accumulation="two-level", ms=0.12,
             targets={"speedup:torch._scaled_mm": {"target": 0.9, "value": 0.93, "met": True}}),
        {**single, "ms": 0.11},
    ]}}}
    md = G.fp8_section(fake)
    assert "单级累加（教学版），4096³" in md and "未通过（280" in md
    assert "单级累加的教学版在 4096³ 上没有通过逐元素检查（有 7 个元素超出容差）" not in md  # the teaching variant's own count
    assert "单级累加的教学版在 4096³ 上没有通过逐元素检查（有 280 个元素超出容差）" in md
    assert "单级累加的教学版在 4096³ 上的误差高于同形状的 `torch._scaled_mm`；两级累加的版本在 4096³ 上与它相当或更低" in md
    c = {x.key: x for x in G.fp8_claims(fake)}
    assert c["claim.gemm.fp8.speed_vs_check"].case == "fast_fails_kept_ok"
    assert c["claim.gemm.fp8.two_level"].case == "trade"
    # the teaching variant within tolerance: the sentence turns
    fake["suites"]["gemm.lowp"]["records"][-1]["tolerance"] = {"ok": True, "mismatched": 0}
    assert {x.key: x for x in G.fp8_claims(fake)}["claim.gemm.fp8.speed_vs_check"].case == "fast_passes_kept_ok"


def test_verdicts_come_from_the_records():
    from coursebook import records as R

    fake = {"suites": {"gemm.ladder": {"records": [
        {"kind": "bench", "name": "tuned rung4 8192^3", "targets": {"speedup:cuBLAS": {"target": 1.0, "value": 0.99, "met": False}}},
    ]}}}
    md = R.verdict_table(fake)
    assert "未达到" in md and "0.990" in md and "调优后的第四级，8192³" in md
    fake["suites"]["gemm.ladder"]["records"][0]["targets"]["speedup:cuBLAS"].update(value=1.01, met=True)
    assert "| 达到 |" in R.verdict_table(fake)
    # the products timed again under both flushes: one row each, the two flushes side by side, not in the main table
    t = {"speedup:cuBLAS": {"target": 1.0, "value": 1.01, "met": True}}
    fake["suites"]["gemm.flush"] = {"records": [
        {"kind": "bench", "name": "write flush: split-K 1024x1024x16384", "targets": t},
        {"kind": "bench", "name": "clean flush: split-K 1024x1024x16384",
         "targets": {"speedup:cuBLAS": {"target": 1.0, "value": 0.99, "met": False}}}]}
    assert "flush" not in R.verdict_table(fake) and "split-K" not in R.verdict_table(fake)
    rows = [ln for ln in R.flush_verdict_table(fake).splitlines() if ln.startswith("| split-K")]
    assert rows == ["| split-K 手写流水（1024×1024×16384） | 对 cuBLAS 的加速比 | ≥ 1.0 | 1.010（达到） | 0.990（未达到） |"]
    # the prose never states a verdict itself
    prose = _prose(_text())
    assert "未达到目标" not in prose and "达到了目标" not in prose


def _ladder(t: dict) -> dict:
    recs = []
    for (name, side), tf in t.items():
        recs.append({"kind": "bench", "name": f"{name} {side}^3", "rung": name, "tflops": tf, "flops": 1.0,
                     "baselines": {"cuBLAS": 1e-3}, "speedup": {}})
    return {"suites": {"gemm.ladder": {"records": recs}}}


def test_ladder_claims_follow_the_records():
    from coursebook import gemm_ladder as G

    base = {("rung1_naive", 4096): 1.0, ("rung2_shared", 4096): 230.0, ("rung3_pipelined", 4096): 495.0,
            ("rung4_annotated", 4096): 533.0, ("rung5_mma", 4096): 356.0, ("tuned rung4", 4096): 650.0,
            ("rung2_shared", 8192): 233.0, ("rung3_pipelined", 8192): 484.0, ("rung4_annotated", 8192): 547.0,
            ("rung5_mma", 8192): 341.0, ("tuned rung4", 8192): 650.0}
    c = {x.key: x for x in G.ladder_claims(_ladder(base))}
    assert c["claim.gemm.ladder.mma"].case == "lower" and c["claim.gemm.ladder.8192"].case == "same"
    assert c["claim.gemm.ladder.annotated"].case == "higher"
    c = {x.key: x for x in G.ladder_claims(_ladder({**base, ("rung5_mma", 4096): 600.0}))}
    assert c["claim.gemm.ladder.mma"].case == "higher" and c["claim.gemm.ladder.why5"].case == "not"


def test_variant_claims_follow_the_records():
    from coursebook import tiles

    def res(concat, ptr):
        return {"suites": {"gemm.grouped": {"records": [
            {"kind": "bench", "name": "grouped concat G=8 N=4096 K=2048", "ms": 1.0, "speedup": {"torch.matmul loop": concat}},
            {"kind": "bench", "name": "grouped ptr G=8 N=4096 K=2048", "ms": 1.05, "speedup": {"torch.matmul loop": ptr}}]}}}

    pick = lambda r, k: next(c for c in tiles.variant_claims(r) if c.key == k)  # noqa: E731
    assert pick(res(0.77, 0.73), "claim.gemm.grouped.vs_loop").case == "lost"
    assert pick(res(1.2, 1.1), "claim.gemm.grouped.vs_loop").case == "won"
    assert pick(res(1.2, 0.9), "claim.gemm.grouped.vs_loop").case == "split"
    assert pick(res(0.77, 0.73), "claim.gemm.grouped.ptr").case == "slower"
    # the hand-written section's table compares the two forms again at both group mixes: one reversal is "mixed"
    def both(ptr_ws: dict) -> dict:
        r = res(0.77, 0.73)
        r["suites"]["gemm.grouped_ws"] = {"records": [
            {"kind": "bench", "name": f"grouped {form} G=8 {mix} N=4096 K=2048", "ms": ms}
            for mix, t in ptr_ws.items() for form, ms in (("concat", 1.0), ("ptr", t))]}
        return r

    assert pick(both({"skewed": 1.05, "uniform": 1.06}), "claim.gemm.grouped.ptr").case == "slower"
    c = pick(both({"skewed": 1.04, "uniform": 0.97}), "claim.gemm.grouped.ptr")
    assert c.case == "mixed_slower" and "正是" not in c.text  # no cause asserted when the records disagree
    assert pick(both({"skewed": 0.97, "uniform": 0.97}), "claim.gemm.grouped.ptr").case == "mixed_slower"
    assert pick(both({"skewed": 1.04}), "claim.gemm.grouped.ptr").case == "slower"  # a mix not recorded is left out


def test_library_claims_follow_the_records():
    """The #21 sentences turn with the records: W4A16 gains against the count, the probes against
    the target's time, the grouped dense bound against the target, the wave model's direction."""
    from coursebook import tiles

    def w4(m, x, cap, frac=0.3, cfrac=0.6):
        t = {1: 2.5, 16: 2.5, 64: 2.0, 128: 1.3}[m]  # the issue's targets
        return {"kind": "bench", "name": f"w4a16 {m}x8192x8192", "shape": [m, 8192, 8192], "ms": 0.02,
                "baselines": {tiles.W4_BASE: 0.044}, "speedup": {tiles.W4_BASE: x}, "gain_bound": cap,
                "frac_floor": frac, "cublas_frac_floor": cfrac,
                "targets": {f"speedup:{tiles.W4_BASE}": {"target": t, "value": x, "met": x >= t}}}

    def probe(which, us):
        return {"kind": "search", "name": f"w4a16 probe {which} 16x8192x8192 m16_k512_s4_k",
                "ms": {which: us / 1e3, "full": 0.0226}}

    def grouped(bound):
        return {"kind": "bench", "name": "grouped ws padded G=8 skewed N=4096 K=2048", "ms": 0.19,
                "speedup": {tiles.GRAPH_LOOP: 1.01}, "speedup_bound": bound, "sizes": [1, 2],
                "baseline_spread": {tiles.GRAPH_LOOP: 0.03},
                "targets": {f"speedup:{tiles.GRAPH_LOOP}": {"target": 1.2, "value": 1.01, "met": False}}}

    def res(xs, probes, bound):
        w = [w4(m, x, c) for m, x, c in xs]
        return {"suites": {"gemm.w4a16": {"records": [*w, probe("nomma", probes[0]), probe("noexpand", probes[1])]},
                           "gemm.grouped_ws": {"records": [grouped(bound)]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k)  # noqa: E731
    good = res([(1, 2.2, 3.9), (16, 1.9, 3.8), (64, 1.6, 2.6), (128, 1.2, 1.3)], (16.6, 17.4), 1.19)
    assert pick(good, "claim.gemm.lib.w4.shrinks").case == "tracks"
    assert pick(good, "claim.gemm.lib.w4.targets").case == "none"
    assert pick(good, "claim.gemm.lib.w4.overlap").case == "lower"
    assert pick(good, "claim.gemm.lib.w4.vs_cublas_floor").case == "lower"
    assert pick(good, "claim.gemm.lib.grp.bound").case == "below"
    bad = res([(1, 2.6, 3.9), (16, 2.7, 3.8), (64, 1.6, 2.6), (128, 1.2, 1.3)], (16.6, 19.0), 1.3)
    assert pick(bad, "claim.gemm.lib.w4.shrinks").case == "not"
    assert pick(bad, "claim.gemm.lib.w4.targets").case == "some"
    assert "只有 M = 1、M = 16 达到了" in pick(bad, "claim.gemm.lib.w4.targets").text  # the shapes that met, by name
    one = res([(1, 2.6, 3.9), (16, 2.7, 3.8), (64, 1.6, 2.6), (128, 1.4, 1.3)], (16.6, 19.0), 1.3)
    c = pick(one, "claim.gemm.lib.w4.targets")  # a single miss is named, with its value and target
    assert c.case == "one_missed" and "除 M = 64（实测 1.60×，目标 2.0×）外都达到了" in c.text
    every = res([(1, 2.6, 3.9), (16, 2.7, 3.8), (64, 2.1, 2.6), (128, 1.4, 1.3)], (16.6, 19.0), 1.3)
    assert pick(every, "claim.gemm.lib.w4.targets").case == "all"
    assert pick(bad, "claim.gemm.lib.w4.overlap").case == "higher"
    assert pick(bad, "claim.gemm.lib.grp.bound").case == "above"
    over = res([(1, 2.6, 3.9), (16, 2.3, 3.8), (64, 1.8, 2.6), (128, 1.31, 1.30)], (16.6, 17.4), 1.19)
    c = pick(over, "claim.gemm.lib.w4.shrinks")  # the order holds, one shape passes the ratio of the floors
    assert c.case == "over" and "M = 128" in c.text and "1.31×" in c.text and "1.30×" in c.text
    near = res([(1, 2.4, 3.9), (16, 2.3, 3.8), (64, 1.8, 2.6), (128, 1.2998, 1.31)], (16.6, 17.4), 1.19)
    c = pick(near, "claim.gemm.lib.w4.targets")  # 1.2998 prints as 1.30: the sentence gives the exact value
    assert c.case == "none" and "1.2998×" in c.text and "0.02%" in c.text
    assert "（" not in pick(good, "claim.gemm.lib.w4.targets").text

    sk = {"suites": {"gemm.splitk_ws": {"records": [
        {"kind": "bench", "name": "split-K ws 2048x2048x8192", "ms": 0.1, "predicted_speedup_vs_no_split": 1.0,
         "speedup": {"no-split": 1.3, "cuBLAS": 0.9}, "config": {"splits": 2, "block_N": 256}, "waves": {"grid": 256}}]}}}
    c = {x.key: x for x in tiles.wave_claims(sk)}
    assert c["claim.gemm.waves.direction"].case == "none" and c["claim.gemm.waves.size"].case == "none"


def test_w4a16_repeat_claim_follows_the_flush_record():
    """The verdicts of the search run's bench on the decode targets, against suite gemm.flush's write-flush record
    of the same shapes: a verdict that turned is named with the later ratio and which kernel gave it."""
    from coursebook import tiles

    T = {1: 2.5, 16: 2.5, 64: 2.0, 128: 1.3}

    def tgt(m, x):
        return {f"speedup:{tiles.W4_BASE}": {"target": T[m], "value": x, "met": x >= T[m]}}

    def res(search_x, flush_x, flush_label="m16_b"):
        w4 = [{"kind": "bench", "name": f"w4a16 {m}x8192x8192", "shape": [m, 8192, 8192], "ms": 0.02,
               "label": f"m{m}_a", "speedup": {tiles.W4_BASE: x}, "targets": tgt(m, x)} for m, x in search_x.items()]
        w4.append({"kind": "search", "name": "w4a16 16x8192x8192", "ms": {"m16_a": 0.0177, "m16_b": 0.0180}})
        fl = [{"kind": "bench", "name": f"{mode} flush: w4a16 {m}x8192x8192", "ms": 0.02, "label": flush_label
               if m == 16 else f"m{m}_a", "speedup": {tiles.W4_BASE: x}, "targets": tgt(m, x)}
              for m, x in flush_x.items() for mode in tiles.FLUSHES]
        return {"suites": {"gemm.w4a16": {"records": w4}, "gemm.flush": {"records": fl}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.w4.repeat")  # noqa: E731
    search = {1: 2.7, 16: 2.5, 64: 1.86, 128: 1.33}
    c = pick(res(search, {1: 2.7, 16: 2.43, 64: 1.87, 128: 1.39}))
    assert c.case == "lost" and "M = 16 用的是搜索里比胜者慢 0.3 µs 的另一个配置，只有 2.43×" in c.text
    assert "M = 64" not in c.text and "M = 128" not in c.text  # verdicts that held are not named
    assert "同一个 kernel" in pick(res(search, {16: 2.43}, flush_label="m16_a")).text
    assert "另一个配置" in pick(res(search, {16: 2.43}, flush_label="m16_z")).text  # not in the search: no time
    assert pick(res(search, {1: 2.6, 16: 2.51, 64: 1.9, 128: 1.3})).case == "held"
    c = pick(res(search, {16: 2.6, 64: 2.05}))
    assert c.case == "gained" and "M = 64" in c.text and "2.05×" in c.text
    assert pick(res(search, {16: 2.4, 64: 2.05})).case == "both"
    c = pick({"suites": {"gemm.w4a16": res(search, {})["suites"]["gemm.w4a16"]}})
    assert c.case == "absent" and c.text == ""


def test_the_recorded_claims(results):
    """With the recorded results every claim picks a variant (none reads 'no data')."""
    vals = _page_values(results)
    # stream-K on the hand-written pipeline (suite gemm.streamk_ws) may still be unrecorded; once
    # it is, its claims must pick a variant like every other
    from coursebook.records import records as recorded

    pending = "claim.gemm.skws." if not recorded(results, "gemm.streamk_ws") else None
    unknown = [k for k, v in vals.items() if k.startswith("claim.") and v == claims.UNKNOWN
               and not (pending and k.startswith(pending))]
    assert not unknown, unknown


def test_errata_are_not_in_the_chapter():
    assert "errata" not in _text() and "勘误" not in _prose(_text())


def test_lowered_evidence_names_the_instruction_path():
    """The recorded lowering the page prints (no compile at build time): rung 5 reaches the
    pre-Hopper path and no wgmma; rungs 3 and 4 share their wgmma descriptors."""
    from coursebook import gemm_ladder

    text = gemm_ladder.lowered_evidence("rung5_mma")
    assert text.startswith("(lowered on the CPU for sm_90a, not run: tilelang 0.1.15")
    assert "reaches: mma_sync, ldmatrix, cp_async" in text and "[mma_sync]" in text
    assert "wgmma" in text.split("absent:")[1].splitlines()[0]
    assert not gemm_ladder.wgmma_descriptors("rung5_mma")
    assert gemm_ladder.wgmma_descriptors("rung3_pipelined") == gemm_ladder.wgmma_descriptors("rung4_annotated")


@pytest.mark.slow
def test_the_lowering_record_matches_the_code():
    """The committed record (measure/results/lowered/gemm.json) is what the compiler emits now."""
    pytest.importorskip("tilelang")
    from measure import lowered

    assert lowered.main(["--check"]) == 0


@pytest.mark.slow
def test_inferred_twin_of_the_tuned_winner_is_the_same_code():
    """The page says the candidates without layout annotation compile to the same CUDA as their
    annotated twins."""
    pytest.importorskip("tilelang")
    from kernels.gemm import ladder
    from measure.suites.gemm.ladder import TUNE_CANDIDATES

    ann = next(c for c in TUNE_CANDIDATES if ladder.label(c) == "128x256x64_s3_t256_p8")
    inf = next(c for c in TUNE_CANDIDATES if ladder.label(c) == "128x256x64_s3_t256_p8_inferred")
    a = ladder.rung4_annotated(4096, 4096, 4096, **ann).get_kernel_source()
    b = ladder.rung4_annotated(4096, 4096, 4096, **inf).get_kernel_source()
    assert a == b


def test_ws_evidence_shows_the_cluster_scope_release():
    """The hand-written section's cell: the lines it prints carry the claims of the text."""
    from coursebook import gemm_ladder

    text = gemm_ladder.ws_evidence()
    assert "empty[s].init(16) x4" in text and "full[s].init(128) x4" in text
    assert "tma_load_multicast(B_desc" in text and "warpgroup_reg_alloc<232>" in text
    assert "].arrive(r)" in text and "tl::cluster_sync()" in text
    auto, mine = text.splitlines()[-2:]
    assert auto.startswith("automatic") and auto.endswith("arrives on the peer's barriers=False")
    assert mine.startswith("hand-written") and mine.endswith("arrives on the peer's barriers=True")


# ----------------------------------------------------------------- guards of the marked sentences
@claims.guards("gemm.landing.naive-gap")
def test_cublas_is_two_orders_above_the_naive_rung(results):
    from coursebook.records import bench

    assert bench(results, "rung1_naive 4096^3")["speedup"]["cuBLAS"] < 0.01


@claims.guards("gemm.ledger.side-512-flips")
def test_side_512_is_memory_bound_on_h100_and_compute_bound_on_h200(registry):
    assert registry["gemm.ledger.s512.bound_h100"].text == "memory-bound"
    assert registry["gemm.ledger.s512.bound_h200"].text == "compute-bound"


@claims.guards("gemm.ledger.tile-of-the-winners")
def test_the_winning_tiles_are_128x256x64(results):
    from coursebook import gemm_ladder as G

    auto_s3 = 0
    for _, res in G.ladder_replicates(results):
        for side in (4096, 8192):
            ms = G.search_times(res, side)
            auto = min((t, k) for k, t in ms.items() if "_ws" not in k)[1]
            best = min((t, k) for k, t in ms.items())[1]
            assert auto.startswith("128x256x64_"), auto
            assert best.startswith("128x256x64_s4_") and "_ws" in best, best
            auto_s3 += "_s3_" in auto
    assert auto_s3 > len(G.ladder_replicates(results))  # "most often": three stages in most searches


@claims.guards("gemm.tune.big-tiles-first")
def test_big_tiles_lead_the_automatic_candidates(results):
    from coursebook import gemm_ladder as G

    for side in (4096, 8192):
        ms = G.search_times(results, side)
        top = [k for _, k in sorted((t, k) for k, t in ms.items() if "_ws" not in k)[:4]]
        assert all(k.split("_")[0] in ("128x256x64", "256x128x64") for k in top), top


def test_four_stages_against_three_are_read_against_the_resolution(results):
    """The stage sentence compares the gap between the three- and four-stage candidates with the spread of
    byte-identical twins at each shape: within it, beyond it either way, or split."""
    from coursebook import gemm_ladder as G

    def res(s3: float, s4: float, twin: float = 0.2) -> dict:
        recs = [{"kind": "search", "name": f"tuned rung4 {side}^3",
                 "ms": {G.STAGE_PAIR[0]: s3, G.STAGE_PAIR[1]: s4, "128x256x64_s3_t256_p8_row": 1.0,
                        "128x256x64_s3_t256_p8_row_inferred": 1.0 + twin / 100}} for side in (4096, 8192)]
        return {"suites": {"gemm.ladder": {"records": recs}}}

    def cases(r):
        return {c.key: c.case for c in G.stage_claims(r)}

    assert set(cases(res(1.0, 1.001)).values()) == {"within"}
    assert set(cases(res(1.0, 1.05)).values()) == {"slower"}
    assert set(cases(res(1.0, 0.95)).values()) == {"faster"}
    c = {x.key: x for x in G.stage_claims(res(1.0, 1.05, twin=6.0))}
    assert c["claim.gemm.tune.stages"].case == "within" and "慢 5.0%" in c["claim.gemm.tune.stages"].text
    assert set(cases({"suites": {}}).values()) == {None}
    # the record: what the page says
    c = {x.key: x for x in G.stage_claims(results)}
    gaps = {s: 100 * abs(G.search_times(results, s)[G.STAGE_PAIR[1]] / G.search_times(results, s)[G.STAGE_PAIR[0]] - 1)
            for s in (4096, 8192)}
    within = all(gaps[s] <= max(G.twin_gaps(results, s)) for s in (4096, 8192))
    assert (c["claim.gemm.tune.stages"].case == "within") == within


@claims.guards("gemm.power.capped")
def test_the_board_ran_at_its_power_cap(results):
    from coursebook.records import bench

    for side in (4096, 8192):
        r = bench(results, f"tuned rung4 {side}^3")
        assert "sw_power_cap" in r["clock_events"]
        assert min(r["watts_per_round"]["kernel"]) > 0.95 * r["power_limit_w"]


@claims.guards("gemm.ncu.multicast-not-l2")
def test_multicast_reads_no_less_from_l2(results):
    from coursebook import ncu

    v = ncu.gemm_values()
    f = {k: float(x) for k, x in v.items() if re.fullmatch(r"[0-9.]+", x)}
    assert f["derived.gemm.ncu.mc.l2_read_mb"] >= f["derived.gemm.ncu.ws.l2_read_mb"]
    assert f["derived.gemm.ncu.mc.dram_read_mb"] < f["derived.gemm.ncu.ws.dram_read_mb"]
    for k in ("auto", "ws", "mc", "cublas"):  # "about half" of the ledger's L2 -> SM bytes
        assert 0.3 < f[f"derived.gemm.ncu.{k}.l2_read_mb"] / f["calc.gemm.ncu.tiled_l2_mb"] < 0.7, k
        assert f[f"derived.gemm.ncu.{k}.time_us"] < 2000, k  # "a launch of under two milliseconds"
    # ...too short to push the board to its power cap: clocks above those of the capped timed rounds
    from coursebook import gemm_ladder as G

    capped = G.tuned_values(results)["derived.gemm.power.s8192.kernel_mhz"]
    assert f["derived.gemm.ncu.ws.sm_mhz"] > float(capped.split("–")[-1])


@claims.guards("gemm.streamk.l2-ceiling")
def test_stream_k_reaches_the_split_k_ceiling(results):
    from coursebook import tiles

    v = {**tiles.splitk_values(results), **tiles.streamk_values(results)}
    lo, hi = (float(x) for x in v["derived.gemm.splitk.l2_full_tbps"].split("–"))
    assert 0.9 * lo <= float(v["derived.gemm.streamk.l2_tbps"]) <= 1.1 * hi
    assert float(v["derived.gemm.streamk.dp_l2_tbps"]) < lo


@claims.guards("gemm.skws.fw")
def test_the_full_wave_tile_beats_stream_k_in_every_recorded_run(results):
    """The advice "change the tile width first, stream-K only where no width fills the wave": in every recorded
    run of the suite the full-wave tiling is faster than the best stream-K on the awkward shape, and fills the
    wave exactly (one tile per SM)."""
    import json
    from pathlib import Path

    from coursebook import tiles

    res = Path(__file__).resolve().parents[2] / "measure" / "results"
    inputs = json.loads((res / "manifest.json").read_text(encoding="utf-8"))["nvidia-h200"]["inputs"]
    runs = []
    for f in inputs:
        suite = json.loads((res / f).read_text(encoding="utf-8"))["suites"].get("gemm.streamk_ws") or {}
        recs = suite.get("records") or []
        if any(x.get("name", "").startswith("full-wave") for x in recs):
            runs.append(recs)
    assert len(runs) >= 2, "the full-wave tiling is recorded in fewer than two runs"
    for recs in runs:
        sk = next(x for x in recs if x.get("kind") == "bench" and x["name"] == tiles.SKWS["awk"])
        assert sk["speedup"]["full-wave 128x144"] < 1
    v = tiles.streamk_ws_values(results)
    assert v["calc.gemm.skws.fw.tiles"] == str(results["provenance"].get("sm_count") or 132)


@claims.guards("gemm.grouped.lost-to-loop")
def test_both_grouped_forms_lost_to_the_loop_with_a_grid_of_many_waves(results):
    """The sentence: both forms lost, and not for want of blocks -- the grid the kernels launch
    (``T.Kernel(ceil(N / block_N), total M tiles)``) is more than one full wave of the SMs."""
    import inspect

    from coursebook import tiles
    from coursebook.records import bench
    from kernels.gemm import grouped

    for name in ("grouped concat G=8 N=4096 K=2048", "grouped ptr G=8 N=4096 K=2048"):
        assert bench(results, name)["speedup"]["torch.matmul loop"] < 1
    for factory in (grouped.grouped_concat, grouped.grouped_ptr):
        assert "T.Kernel(T.ceildiv(N, block_N), total_tiles" in inspect.getsource(factory.func)
    rec = bench(results, "grouped concat G=8 N=4096 K=2048")
    g = tiles.grouped_grid(results)
    assert g["m_tiles"] == grouped.tables(rec["sizes"], grouped.DEFAULT["block_M"])[3] == rec["tiles"]
    assert g["blocks"] == -(-rec["N"] // grouped.DEFAULT["block_N"]) * rec["tiles"]
    assert g["blocks"] > g["per_sm"] * g["sms"] and g["waves"] >= 2


@claims.guards("gemm.grouped.block-efficiency")
def test_the_tail_wave_and_padding_do_not_explain_the_loss(results):
    """The sentence: the last wave's idle SMs (wave model) and the padded rows together come to less than the
    extra time the concatenated form took over the loop."""
    from coursebook import tiles
    from coursebook.records import bench

    g = tiles.grouped_grid(results)
    x = bench(results, "grouped concat G=8 N=4096 K=2048")["speedup"]["torch.matmul loop"]
    tail = g["waves"] / (g["waves"] - 1 + g["fill"]) - 1
    assert tail + g["pad"] < 1 / x - 1


def test_grouped_grid_counts_the_kernels_blocks_and_waves():
    from coursebook import tiles

    def res(sizes, n=4096):
        tiles_m = sum(-(-s // 128) for s in sizes)
        return {"provenance": {"sm_count": 132}, "suites": {"gemm.grouped": {"records": [
            {"kind": "bench", "name": "grouped concat G=8 N=4096 K=2048", "ms": 1.0, "sizes": list(sizes), "N": n,
             "tiles": tiles_m, "speedup": {"torch.matmul loop": 0.5}}]}}}

    g = tiles.grouped_grid(res([128] * 4, n=512))  # 4 M tiles x 4 N tiles: less than one wave
    assert (g["blocks"], g["waves"], g["pad"]) == (16, 1, 0)
    g = tiles.grouped_grid(res([100, 300]))  # (1 + 3) M tiles x 32 N tiles; 512 rows for 400
    assert g["blocks"] == 128 and abs(g["pad"] - (512 - 400) / 400) < 1e-12
    v = tiles.variant_values(res([100, 300]))
    assert v["derived.gemm.grouped.blocks"] == "128" and v["derived.gemm.grouped.slower_pct"] == "100"
    assert tiles.grouped_grid({}) is None and tiles.variant_values({})["derived.gemm.grouped.blocks"] == "—"


@claims.guards("gemm.batched.short-k-worse")
def test_the_short_k_batch_trails_more(results):
    from coursebook.records import bench

    qk = bench(results, "batched scores Q@K^T 64x2048x2048x128")["speedup"]["torch.bmm"]
    pv = bench(results, "batched context P@V 64x2048x128x2048")["speedup"]["torch.bmm"]
    assert qk < pv < 1


@claims.guards("gemm.waves.closest-when-half-empty")
def test_the_wave_model_is_closest_where_half_the_sms_idle(results):
    from coursebook import tiles

    """The sentence: of the rows the model says gain, the one closest to its prediction launches
    the fewest blocks and leaves at least half the SMs idle. Stream-K launches one persistent
    block per SM whatever its tile count, so its rows count as a full wave of blocks."""
    rows = [r for r in tiles.wave_rows(results) if r["pred"] > 1 + tiles.WAVE_DIR_TOL]
    sms = results["provenance"].get("sm_count") or 132
    blocks = lambda r: sms if "stream-K" in r["kind"] else r["grid"]  # noqa: E731
    best = max(rows, key=lambda r: r["meas"] / r["pred"])
    assert blocks(best) <= sms / 2, best
    assert blocks(best) == min(blocks(r) for r in rows)


def test_decode_kernel_sentences_follow_the_search_records():
    """The decode-shaped W4A16 kernel's sentences are chosen by its searches against the wgmma
    kernel's candidates in the same searches, and by its register-load probe."""
    from coursebook import tiles

    def res(dec1, dec16, wg=22.8, loadonly=20.1):
        recs = [{"kind": "search", "name": f"w4a16 {m}x8192x8192",
                 "ms": {"m16_k512_s4_k": wg / 1e3, "dec_r64_kw1_sk8_d4": d / 1e3, "dec_r128_kw1_sk4_d4": 0.04}}
                for m, d in ((1, dec1), (16, dec16))]
        recs.append({"kind": "search", "name": "w4a16 probe loadonly 1x8192x8192 dec_r128_kw1_sk4_d4",
                     "ms": {"full": 0.0286, "loadonly": loadonly / 1e3}})
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    slow = res(24.6, 33.2)
    assert pick(slow, "claim.gemm.lib.w4.dec.result") == "slower" == pick(slow, "claim.gemm.lib.w4.dec.lesson")
    assert pick(slow, "claim.gemm.lib.w4.dec.loadonly") == "tie"
    text = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.w4.dec.loadonly").text  # noqa: E731
    assert "只差 12%" in text(res(24.6, 33.2, loadonly=20.1, wg=22.8))  # the tie gives the difference measured
    assert "只差不到 1%" in text(res(24.6, 33.2, loadonly=22.8))
    fast = res(15.0, 18.0, loadonly=9.0)
    assert pick(fast, "claim.gemm.lib.w4.dec.result") == "faster" == pick(fast, "claim.gemm.lib.w4.dec.lesson")
    assert pick(fast, "claim.gemm.lib.w4.dec.loadonly") == "lower"
    assert pick(res(15.0, 33.2), "claim.gemm.lib.w4.dec.result") == "split"
    assert pick(res(24.6, 33.2, loadonly=30.0), "claim.gemm.lib.w4.dec.loadonly") == "higher"
    assert tiles.library_values(slow)["derived.gemm.lib.w4.dec.n"] == "2"
    assert pick({"suites": {}}, "claim.gemm.lib.w4.dec.result") is None


def test_the_w4a16_profile_sentences_follow_the_profile():
    """Nsight Compute's times of the wgmma kernel and its two probes decide how much the halves
    overlap; the decode loads' top stalls decide whether they queue at the LSU."""
    from coursebook import ncu

    def prof(full, nomma, noexpand, stalls):
        k = {"wgmma M=16": full, "wgmma nomma M=16": nomma, "wgmma noexpand M=16": noexpand}
        rows = {n: {"duration_us": t, "dram_throughput_pct_of_peak": 50.0, "top_stalls": []} for n, t in k.items()}
        rows["decode r128 sk4 loadonly M=1"] = {"duration_us": 16.6, "dram_throughput_pct_of_peak": 44.0,
                                                 "top_stalls": [{"reason": r, "pct": p} for r, p in stalls]}
        return {"kernels": rows}

    pick = lambda d, k: next(c for c in ncu.w4a16_claims(d) if c.key == k)  # noqa: E731
    lg = [("long_scoreboard", 34.0), ("lg_throttle", 32.0), ("barrier", 14.0)]
    assert pick(prof(20.9, 11.1, 12.3, lg), "claim.gemm.w4.ncu.overlap").case == "serial"
    assert pick(prof(13.0, 11.1, 12.3, lg), "claim.gemm.w4.ncu.overlap").case == "overlapped"
    assert pick(prof(17.0, 11.1, 12.3, lg), "claim.gemm.w4.ncu.overlap").case == "partial"
    c = pick(prof(20.9, 11.1, 12.3, lg), "claim.gemm.w4.ncu.dec_stall")
    assert c.case == "lg" and "32%" in c.text
    c = pick(prof(20.9, 11.1, 12.3, [("barrier", 40.0), ("wait", 20.0), ("lg_throttle", 5.0)]), "claim.gemm.w4.ncu.dec_stall")
    assert c.case == "other" and "barrier" in c.text
    assert pick({}, "claim.gemm.w4.ncu.overlap").case is None
    assert ncu.w4a16_values({})["derived.gemm.w4.ncu.wg16_us"] == "—"


def test_word_wide_expansion_sentences_follow_the_search_records():
    """The word-wide expansion's sentence is chosen by the same searches: its best candidate
    against the best per-element one (decode-kernel candidates left out) at every shape."""
    from coursebook import tiles

    shapes = ("1x8192x8192", "16x8192x8192", "64x8192x8192", "128x8192x8192", "4096x4096x4096")

    def res(wide, elem=(22.8, 22.2, 28.4, 40.3, 219.0)):
        return {"suites": {"gemm.w4a16": {"records": [
            {"kind": "search", "name": f"w4a16 {s}",
             "ms": {"m16_k512_s4_k": e / 1e3, "m16_k512_s4_k_wd": w / 1e3, "dec_r64_kw1_sk8_d4": 0.001}}
            for s, w, e in zip(shapes, wide, elem)]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k)  # noqa: E731
    fast = res((15.0, 15.5, 21.0, 33.0, 210.0))
    assert pick(fast, "claim.gemm.lib.w4.wide.result").case == "faster"
    assert pick(res((25.0, 23.0, 30.0, 41.0, 230.0)), "claim.gemm.lib.w4.wide.result").case == "slower"
    split = pick(res((15.0, 23.0, 30.0, 41.0, 230.0)), "claim.gemm.lib.w4.wide.result")
    assert split.case == "split" and "1" in split.text and "5" in split.text
    # the dec_ candidate (1 us here) is neither form: the per-element best stays the wgmma one
    v = tiles.library_values(fast)
    assert v["derived.gemm.lib.w4.elem.m1_us"] == "22.8" and v["derived.gemm.lib.w4.wide.m16_us"] == "15.5"
    assert pick({"suites": {}}, "claim.gemm.lib.w4.wide.result").case is None
    # the page's table of the two forms: one row per shape, the word-wide form's speed-up, a dash where missing
    rows = tiles.w4_wide_table(fast).splitlines()[2:]
    assert len(rows) == 5 and rows[0].split("|")[2:5] == [" 22.8 ", " 15.0 ", " 1.52 "]
    gap = res((15.0, 15.5, 21.0, 33.0, 210.0))
    gap["suites"]["gemm.w4a16"]["records"][1]["ms"].pop("m16_k512_s4_k_wd")
    assert tiles.w4_wide_table(gap).splitlines()[3].split("|")[3:5] == [" — ", " — "]
    assert "**" in tiles.w4_wide_table({"suites": {}})


def test_scores_store_sentence_follows_the_search():
    """The overlapped-store sentence compares the best candidate with two staging buffers or the
    evict-first hint against the best with neither, in the same search."""
    from coursebook import tiles

    def res(new, old):
        return {"suites": {"gemm.batched_ws": {"records": [{"kind": "search",
                "name": "batched ws scores 64x2048x2048x128",
                "ms": {"n256_k64_s3_e128_if0_pers_c2": old / 1e3, "n256_k64_s4_e64_if0_pers_c2_b2_ef": new / 1e3,
                       "n256_k64_s3_e128_if0_pers_c2_ef": (new + 5) / 1e3}}]}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.bmm.qk_store").case  # noqa: E731
    assert pick(res(173.7, 189.7)) == "lower"
    assert pick(res(195.0, 189.7)) == "higher"
    assert pick(res(189.0, 189.7)) == "tie"
    v = tiles.library_values(res(173.7, 189.7))
    assert v["derived.gemm.lib.bmm.qk.store_new_us"] == "173.7" and v["derived.gemm.lib.bmm.qk.store_old_us"] == "189.7"


def test_tma_decode_kernel_sentences_follow_the_search_records():
    """The TMA-ring decode kernel's sentences: its best candidate against the wgmma kernel's in the
    same searches (neither the register-load decode kernel nor it counts as the wgmma kernel), and
    its load-only probe against the register-load kernel's."""
    from coursebook import tiles

    def res(t1, t16, lo=20.0):
        recs = [{"kind": "search", "name": f"w4a16 {m}x8192x8192",
                 "ms": {"m16_k512_s4_k_wd": 20.5 / 1e3, "tma_r128_sk2_st4_g2": t / 1e3, "dec_r64_kw1_sk8_d4": 0.025}}
                for m, t in ((1, t1), (16, t16))]
        recs.append({"kind": "search", "name": "w4a16 probe loadonly 1x8192x8192 dec_r128_kw1_sk4_d4",
                     "ms": {"full": 0.0286, "loadonly": 0.0201}})
        recs.append({"kind": "search", "name": "w4a16 probe loadonly 1x8192x8192 tma_r128_sk2_st4_g2",
                     "ms": {"full": 0.0219, "loadonly": lo / 1e3}})
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(21.2, 27.4), "claim.gemm.lib.w4.tma.result") == "slower"
    assert pick(res(15.0, 16.0), "claim.gemm.lib.w4.tma.result") == "faster"
    assert pick(res(15.0, 27.4), "claim.gemm.lib.w4.tma.result") == "split"
    assert pick(res(21.2, 27.4), "claim.gemm.lib.w4.tma.loadonly") == "tie"
    assert pick(res(21.2, 27.4, lo=9.0), "claim.gemm.lib.w4.tma.loadonly") == "lower"
    v = tiles.library_values(res(21.2, 27.4))
    assert v["derived.gemm.lib.w4.tma.m16_us"] == "27.4" and v["derived.gemm.lib.w4.dec.wg_m16_us"] == "20.5"
    assert v["derived.gemm.lib.w4.dec.loadonly_us"] == "20.1" and v["derived.gemm.lib.w4.tma.loadonly_m1_us"] == "20.0"


def test_in_kernel_fixup_sentences_follow_the_searches():
    """The in-kernel fix-up ("last") against the separate reduction in the same search; the
    cluster sum ("dsmem") is neither."""
    from coursebook import tiles

    def res(last, sep):
        return {"suites": {"gemm.splitk_ws": {"records": [{"kind": "search", "name": "split-K ws 1024x1024x16384",
                "ms": {"ws s=4 128x256 st4 e64 r32": sep / 1e3, "ws s=4 128x256 st4 e64 last": last / 1e3,
                       "ws s=4 128x256 st4 e64 dsmem": 0.001}}]}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.skws.last").case  # noqa: E731
    assert pick(res(62.0, 57.3)) == "higher"
    assert pick(res(50.0, 57.3)) == "lower"
    assert pick(res(57.5, 57.3)) == "tie"
    v = tiles.library_values(res(62.0, 57.3))
    assert v["derived.gemm.lib.skws.last_us"] == "62.0" and v["derived.gemm.lib.skws.sep_us"] == "57.3"


def test_spread_fixup_sentence_follows_the_search_and_is_not_a_separate_kernel():
    """Stream-K's spread in-kernel fix-up ("spread") against the separate fix-up kernel in the same search; it
    counts neither as the separate kernel (sep_us), nor as the plain launch of the pdl comparison."""
    from coursebook import tiles

    def res(spread, sep, last=79.5, pdl=73.0):
        return {"suites": {"gemm.streamk_ws": {"records": [{"kind": "search", "name": "stream-K ws 1536x1536x8192",
                "ms": {"dp+sk 128x128 st5 e64 p0": sep / 1e3, "dp+sk 128x128 st5 e64 p0 spread": spread / 1e3,
                       "dp+sk 128x128 st5 e64 last": last / 1e3, "dp+sk 128x128 st5 e64 pdl": pdl / 1e3}}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(70.4, 66.7), "claim.gemm.lib.skwsawk.spread") == "higher"
    assert pick(res(60.0, 66.7), "claim.gemm.lib.skwsawk.spread") == "lower"
    assert pick(res(67.0, 66.7), "claim.gemm.lib.skwsawk.spread") == "tie"
    v = tiles.library_values(res(50.0, 66.7))  # a fast spread is not taken for the separate kernel
    assert v["derived.gemm.lib.skwsawk.spread_us"] == "50.0" and v["derived.gemm.lib.skwsawk.sep_us"] == "66.7"
    assert v["derived.gemm.lib.skwsawk.plain_us"] == "66.7"
    assert pick(res(50.0, 66.7), "claim.gemm.lib.skwsawk.last") == "higher"
    empty = tiles.library_values({"suites": {}})
    assert empty["derived.gemm.lib.skwsawk.spread_us"] == tiles.DASH


def test_fixvec_sentence_follows_the_search_and_pdl_is_a_word_of_the_label():
    """Stream-K's separate fix-up with its sum by hand ("fv") against the generated one in the same search (the
    fix-ups inside the kernel are neither); a label with "pdl" before "fr4 fv" counts as a pdl launch."""
    from coursebook import tiles

    def res(fv, gen, pdl_fv=70.0, spread=50.0):
        return {"suites": {"gemm.streamk_ws": {"records": [{"kind": "search", "name": "stream-K ws 1536x1536x8192",
                "ms": {"dp+sk 128x128 st5 e64 p0": gen / 1e3, "dp+sk 128x128 st5 e64 p0 fr4 fv": fv / 1e3,
                       "dp+sk 128x128 st5 e64 p0 pdl fr4 fv": pdl_fv / 1e3,
                       "dp+sk 128x128 st5 e64 p0 spread": spread / 1e3}}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(63.4, 65.5), "claim.gemm.lib.skwsawk.fv") == "lower"
    assert pick(res(65.6, 65.5), "claim.gemm.lib.skwsawk.fv") == "tie"
    assert pick(res(70.0, 65.5, pdl_fv=71.0), "claim.gemm.lib.skwsawk.fv") == "higher"
    v = tiles.library_values(res(63.4, 65.5, pdl_fv=63.6))
    assert v["derived.gemm.lib.skwsawk.fv_us"] == "63.4" and v["derived.gemm.lib.skwsawk.gen_us"] == "65.5"
    assert v["derived.gemm.lib.skwsawk.pdl_us"] == "63.6" and v["derived.gemm.lib.skwsawk.plain_us"] == "63.4"
    v = tiles.library_values(res(63.4, 65.5, pdl_fv=60.0))  # the pdl form is not the plain launch
    assert v["derived.gemm.lib.skwsawk.plain_us"] == "63.4" and v["derived.gemm.lib.skwsawk.fv_us"] == "60.0"
    # the signal moved to the end of the stream-K kernel ("pdl@end") is still a pdl launch, not a plain one
    r = res(63.4, 65.5, pdl_fv=70.0)
    r["suites"]["gemm.streamk_ws"]["records"][0]["ms"]["dp+sk 128x128 st6 e64 p0 pdl@end fr4 fv te32"] = 0.0601
    v = tiles.library_values(r)
    assert v["derived.gemm.lib.skwsawk.pdl_us"] == "60.1" and v["derived.gemm.lib.skwsawk.plain_us"] == "63.4"
    empty = tiles.library_values({"suites": {}})
    assert empty["derived.gemm.lib.skwsawk.fv_us"] == tiles.DASH and empty["derived.gemm.lib.skwsawk.gen_us"] == tiles.DASH


def test_timeline_sentence_follows_the_profiled_calls():
    """Where stream-K's call spends its time on the GPU's clock (the suite's timeline note): the kernel alone against
    cuBLAS's call picks the sentence (slower by more than 1 %, within it, faster); the steps come from the winner's
    schedule; a winner with its fix-up inside the kernel (one kernel a call) or no note gives dashes, no sentence."""
    from coursebook import tiles

    def res(sk, fix, gap, lib, cfg=None, kernels=2):
        st = {"dur_us": [sk, fix][:kernels], "gaps_us": [gap][:kernels - 1], "span_us": sk + gap + fix, "calls": 30}
        return {"suites": {"gemm.streamk_ws": {"records": [
            {"kind": "bench", "name": "stream-K ws 1536x1536x8192", "ms": 0.064, "speedup": {"cuBLAS": 0.87},
             "config": cfg or {"block_N": 128, "block_K": 64, "dp_waves": -1}},
            {"kind": "note", "name": "stream-K ws 1536x1536x8192 timeline",
             "timeline": {"stream-K": st, "cuBLAS": {"dur_us": [lib], "gaps_us": [], "span_us": lib, "calls": 30}}}]}}}

    pick = lambda r: next(c for c in tiles.streamk_ws_claims(r) if c.key == "claim.gemm.skws.tl.kernel")  # noqa: E731
    c = pick(res(54.5, 3.4, 1.5, 50.9))
    assert c.case == "higher" and "3.6 µs" in c.text and "140 个" in c.text and "128 步" in c.text
    assert "128×128 的块" in c.text and "$" not in c.text  # glued text: no math
    assert pick(res(51.2, 3.4, 1.5, 50.9)).case == "tie"
    assert pick(res(49.0, 3.4, 1.5, 50.9)).case == "lower"
    # the 128 x 256 tiles streamed whole: the busiest of 132 workers runs 70 of the 72 x 128 steps, fewer than 128,
    # so the step count explains nothing and the sentence leaves it out
    c = pick(res(60.0, 5.0, 1.0, 50.9, cfg={"block_N": 256, "block_K": 64, "dp_waves": 0}))
    assert c.case == "higher" and c.text.endswith("慢 9.1 µs") and "K 步" not in c.text
    v = tiles.streamk_ws_values(res(54.5, 3.424, 1.52, 50.9))
    assert (v["derived.gemm.skws.tl.sk_us"], v["derived.gemm.skws.tl.gap_us"], v["derived.gemm.skws.tl.fix_us"],
            v["derived.gemm.skws.tl.fixgap_us"], v["derived.gemm.skws.tl.lib_us"]) == ("54.5", "1.5", "3.4", "4.9", "50.9")
    assert v["calc.gemm.skws.tl.steps"] == "140" and v["calc.gemm.skws.tl.fw_steps"] == "128"
    one = res(60.0, 0.0, 0.0, 50.9, kernels=1)
    assert pick(one).case is None and tiles.streamk_ws_values(one)["derived.gemm.skws.tl.fix_us"] == tiles.DASH
    assert pick({"suites": {}}).case is None
    assert tiles.streamk_ws_values({"suites": {}})["derived.gemm.skws.tl.sk_us"] == tiles.DASH


def test_parts_paragraph_follows_the_wave_and_the_tail_run_alone():
    """The stream-K kernel less its wave run alone is what the tail adds; the busiest worker's tail steps at the
    wave's rate (the wave's time over its K steps) pick the clause, the tail alone against what it adds the other;
    a timeline without the parts (a winner the suite does not take apart) gives the paragraph that says so, and no
    timeline at all no paragraph."""
    from coursebook import tiles

    def res(sk, wave, tail_alone=14.0, cfg=None, parts=True):
        two = lambda k: {"dur_us": [k, 3.3], "gaps_us": [1.3], "span_us": k + 4.6, "calls": 30}  # noqa: E731
        tl = {"stream-K": two(sk), "cuBLAS": {"dur_us": [50.2], "gaps_us": [], "span_us": 50.2, "calls": 30}}
        if parts:
            tl["wave alone"] = {"dur_us": [wave], "gaps_us": [], "span_us": wave, "calls": 30}
            tl["tail alone"] = two(tail_alone)
        return {"suites": {"gemm.streamk_ws": {"records": [
            {"kind": "bench", "name": "stream-K ws 1536x1536x8192", "ms": 0.063, "speedup": {"cuBLAS": 0.86},
             "config": cfg or {"block_N": 128, "block_K": 64, "dp_waves": -1, "panel": 0}},
            {"kind": "note", "name": "stream-K ws 1536x1536x8192 timeline", "timeline": tl}]}}}

    pick = lambda r, k="claim.gemm.skws.tl.parts": next(c for c in tiles.streamk_ws_claims(r) if c.key == k)  # noqa: E731
    # 132 whole tiles of 128 steps in 47.6 us: 0.372 us a step; the busiest worker's tail is 12 steps (1536 tail
    # steps over 132 workers: 11, and 84 workers one more) -> 4.46 us, against 54.3 - 47.6 = 6.7 us
    c = pick(res(54.3, 47.6))
    assert c.case == "parts" and "$" not in c.text
    for part in ("这一波要 47.6 µs", "长了 6.7 µs", "走的 12 步只该花 4.5 µs，实际多了 2.2 µs", "那个 kernel 要 14.0 µs，是它",
                 "2.1 倍", "HBM"):
        assert part in c.text, part
    tail, alone = tiles._skws_tail_claim, tiles._skws_alone_claim  # the paragraph's two clauses
    assert tail(res(54.3, 47.6)).case == "higher" and tail(res(52.1, 47.6)).case == "tie"
    assert tail(res(51.0, 47.6)).case == "lower" and "实际比这还少" in pick(res(51.0, 47.6)).text
    assert alone(res(54.3, 47.6, tail_alone=7.0)).case == "tie" and alone(res(54.3, 47.6, tail_alone=5.0)).case == "lower"
    whole = pick(res(54.3, 47.6, parts=False))
    assert whole.case == "whole" and whole.text == ""  # no breakdown to show: the page says nothing about one
    # a winner streamed whole has no wave: nothing to take apart even if a note had the parts
    assert pick(res(54.3, 47.6, cfg={"block_N": 256, "block_K": 64, "dp_waves": 0})).case == "whole"
    # nor a winner whose fix-up is launched early: it runs beside the stream-K kernel, inside the kernel's time
    assert pick(res(54.3, 47.6, cfg={"block_N": 128, "block_K": 64, "dp_waves": -1, "panel": 0, "pdl": True})).case == "whole"
    assert pick({"suites": {}}).case is None
    # a winner whose fix-up is inside the kernel (one kernel a call) has no stream-K kernel to take apart
    inside = res(54.3, 47.6)
    inside["suites"]["gemm.streamk_ws"]["records"][1]["timeline"]["stream-K"] = {
        "dur_us": [60.0], "gaps_us": [], "span_us": 60.0, "calls": 30}
    assert pick(inside).case is None and tail(inside).case is None


def test_fix_clause_follows_the_gap_or_an_early_launch():
    """The fix-up after a gap, or launched early as a programmatic dependent (a negative gap: the profiled fix-up
    starts before the stream-K kernel ends); either way the time from the kernel's end to the fix-up's end is the
    gap plus the fix-up."""
    from coursebook import tiles

    def res(gap, fix):
        st = {"dur_us": [56.2, fix], "gaps_us": [gap], "span_us": 56.2 + gap + fix, "calls": 30}
        return {"suites": {"gemm.streamk_ws": {"records": [
            {"kind": "bench", "name": "stream-K ws 1536x1536x8192", "ms": 0.064, "speedup": {"cuBLAS": 0.87},
             "config": {"block_N": 128, "block_K": 64, "dp_waves": -1, "panel": 0, "pdl": True}},
            {"kind": "note", "name": "stream-K ws 1536x1536x8192 timeline",
             "timeline": {"stream-K": st, "cuBLAS": {"dur_us": [51.0], "gaps_us": [], "span_us": 51.0, "calls": 30}}}]}}}

    pick = lambda r: next(c for c in tiles.streamk_ws_claims(r) if c.key == "claim.gemm.skws.tl.fix")  # noqa: E731
    c = pick(res(-3.1, 6.6))
    assert c.case == "below" and "PDL" in c.text and "3.1 µs" in c.text and "-" not in c.text
    c = pick(res(1.3, 3.4))
    assert c.case == "above" and "隔 1.3 µs" in c.text and "再跑 3.4 µs" in c.text
    assert tiles.streamk_ws_values(res(-3.1, 6.6))["derived.gemm.skws.tl.fixgap_us"] == "3.5"
    assert pick({"suites": {}}).case is None


def test_pdl_sentences_follow_the_searches_and_the_bench():
    """The reduction launched as a programmatic dependent ("pdl") against the plain launch in the same
    search (the in-kernel fix-up and the cluster sum are neither); the winner's launch form and the
    gap sentence follow the bench."""
    from coursebook import tiles

    def res(pdl, plain, x=1.0, best="ws s=4 128x256 st4 e64 r32 pdl"):
        return {"suites": {"gemm.splitk_ws": {"records": [
            {"kind": "search", "name": "split-K ws 1024x1024x16384",
             "ms": {"ws s=4 128x256 st4 e64 r32": plain / 1e3, "ws s=4 128x256 st4 e64 r32 pdl": pdl / 1e3,
                    "ws s=4 128x256 st4 e64 last": 0.040, "ws s=4 128x256 st4 e64 dsmem": 0.001}},
            {"kind": "bench", "name": "split-K ws 1024x1024x16384", "ms": pdl / 1e3, "label": best,
             "speedup": {"cuBLAS": x}, "targets": {"speedup:cuBLAS": {"target": 1.0, "met": x >= 1.0}},
             "config": {"splits": 4}}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(55.6, 57.2), "claim.gemm.lib.skws.pdl") == "lower"
    assert pick(res(58.0, 57.2), "claim.gemm.lib.skws.pdl") == "higher"
    assert pick(res(57.3, 57.2), "claim.gemm.lib.skws.pdl") == "tie"
    assert pick(res(55.6, 57.2), "claim.gemm.lib.skws.form") == "pdl"
    assert pick(res(55.6, 57.2, best="ws s=4 128x256 st4 e64 r32"), "claim.gemm.lib.skws.form") == "plain"
    assert pick(res(55.6, 57.2, x=1.004), "claim.gemm.lib.skws.gap") == "above"
    assert pick(res(55.6, 57.2, x=0.998), "claim.gemm.lib.skws.gap") == "below"
    v = tiles.library_values(res(55.6, 57.2))
    assert v["derived.gemm.lib.skws.pdl_us"] == "55.6" and v["derived.gemm.lib.skws.plain_us"] == "57.2"
    assert v["derived.gemm.lib.skws.sep_us"] == "55.6"  # the separate reduction, either launch


def test_ring_and_four_consumer_sentences_follow_the_searches():
    """The ring probe sentence compares the two-consumer ring alone with the time the target allows
    (the four-consumer probes are left to the next sentence); the four-consumer sentence compares the
    best of each form at M = 1 and 16, within 2 % a tie."""
    from coursebook import tiles

    def res(lo, m1=(20.5, 20.8), m16=(20.4, 19.6), q4_lo=5.0):
        recs = [{"kind": "bench", "name": "w4a16 16x8192x8192", "ms": 0.020, "shape": [16, 8192, 8192],
                 "baselines": {tiles.W4_BASE: 0.045}, "speedup": {tiles.W4_BASE: 2.2},
                 "targets": {f"speedup:{tiles.W4_BASE}": {"target": 2.5, "met": False}}},
                {"kind": "search", "name": "w4a16 probe loadonly 16x8192x8192 m16_k256_s4_w8_k_wd",
                 "ms": {"full": 0.0202, "loadonly": lo / 1e3}},
                {"kind": "search", "name": "w4a16 probe mmaonly 16x8192x8192 m16_k256_s4_w8_k_wd",
                 "ms": {"full": 0.0202, "mmaonly": 0.0194}},
                {"kind": "search", "name": "w4a16 probe loadonly 16x8192x8192 m16_k256_s8_k_q4_wd",
                 "ms": {"full": 0.0205, "loadonly": q4_lo / 1e3}}]
        for shape, (four, two) in (("1x8192x8192", m1), ("16x8192x8192", m16)):
            recs.append({"kind": "search", "name": f"w4a16 {shape}",
                         "ms": {"m16_k256_s8_k_q4_wd": four / 1e3, "m16_k512_s4_k_wd": two / 1e3,
                                "m16_k512_s4_k": 0.0228, "dec_r64_kw1_sk8_d4": 0.0249}})
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    # need = 45 us / 2.5 = 18 us; the q4 probe (5 us) is not the one the sentence reads
    assert pick(res(17.6), "claim.gemm.lib.w4.ring") == "most"
    ring = next(c for c in tiles.library_claims(res(17.6)) if c.key == "claim.gemm.lib.w4.ring")
    assert "用去了目标允许时间的 98%" in ring.text and "只剩 2%" in ring.text  # the margin is the rest, in words too
    assert pick(res(18.5), "claim.gemm.lib.w4.ring") == "all"
    assert pick(res(9.0), "claim.gemm.lib.w4.ring") == "room"
    v = tiles.library_values(res(17.6))
    assert v["derived.gemm.lib.w4.ring.loadonly_us"] == "17.6" and v["derived.gemm.lib.w4.ring.need_pct"] == "98"
    assert v["derived.gemm.lib.w4.ring.mmaonly_us"] == "19.4" and v["derived.gemm.lib.w4.probe.need_us"] == "18.0"
    assert v["derived.gemm.lib.w4.q4.m16_us"] == "20.4" and v["derived.gemm.lib.w4.q4.m16_two_us"] == "19.6"
    assert pick(res(17.6), "claim.gemm.lib.w4.q4") == "mixed"
    q4 = lambda **kw: next(c for c in tiles.library_claims(res(17.6, **kw)) if c.key == "claim.gemm.lib.w4.q4")  # noqa: E731
    c = q4(m1=(20.6, 20.0), m16=(20.25, 19.9))  # one shape slower, one within 2 %: each named, none faster
    assert c.case == "mixed" and "M = 1 时慢了 3%，M = 16 时相差不到 2%：哪个形状上都没有更快" in c.text
    assert "没有稳定地更快" in q4(m1=(19.0, 20.1), m16=(20.25, 19.9)).text  # one faster, one slower
    assert pick(res(17.6, m1=(18.0, 20.8), m16=(18.0, 20.0)), "claim.gemm.lib.w4.q4") == "faster"
    assert pick(res(17.6, m1=(20.6, 20.8), m16=(20.1, 20.0)), "claim.gemm.lib.w4.q4") == "tie"
    assert pick(res(17.6, m1=(22.0, 20.8), m16=(22.0, 20.0)), "claim.gemm.lib.w4.q4") == "slower"


def test_repacked_weight_sentences_follow_the_searches():
    """The offline-repacking paragraph: interleaved (``_il``) and tiled-only (``_tl``) bests against the best
    word-wide form on weights as stored, within 2 % no difference; the winners' sentence counts the bench
    winners on repacked weights; and the repacked forms stay out of the earlier comparisons (ring probes,
    four consumers, word-wide against per-element)."""
    from coursebook import tiles

    def res(il=19.0, tl=19.5, plain=19.8, winner="m16_k256_s8_k_q4_il_wd", ring_tl=5.0):
        recs = []
        for shape in ("1x8192x8192", "16x8192x8192", "64x8192x8192", "128x8192x8192"):
            recs.append({"kind": "search", "name": f"w4a16 {shape}",
                         "ms": {"m16_k256_s8_k_q4_il_wd": il / 1e3, "m16_k512_s4_k_tl_wd": tl / 1e3,
                                "m16_k512_s4_k_wd": plain / 1e3, "m16_k256_s8_k_q4_wd": 0.0204,
                                "m16_k512_s4_k": 0.0228}})
            recs.append({"kind": "bench", "name": f"w4a16 {shape}", "ms": il / 1e3, "label": winner,
                         "shape": [int(shape.split("x")[0]), 8192, 8192], "baselines": {tiles.W4_BASE: 0.045},
                         "speedup": {tiles.W4_BASE: 2.3}})
        recs += [{"kind": "search", "name": "w4a16 probe loadonly 16x8192x8192 m16_k512_s4_k_tl_wd",
                  "ms": {"full": 0.0199, "loadonly": ring_tl / 1e3}},
                 {"kind": "search", "name": "w4a16 probe mmaonly 16x8192x8192 m16_k512_s4_k_tl_wd",
                  "ms": {"full": 0.0199, "mmaonly": 0.0170}},
                 {"kind": "search", "name": "w4a16 probe loadonly 16x8192x8192 m16_k512_s4_k_wd",
                  "ms": {"full": 0.0197, "loadonly": 0.0163}}]
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(), "claim.gemm.lib.w4.repack.il") == "faster"
    assert pick(res(il=19.7), "claim.gemm.lib.w4.repack.il") == "none"
    assert pick(res(il=21.0), "claim.gemm.lib.w4.repack.il") == "slower"
    assert pick(res(), "claim.gemm.lib.w4.repack.tl") == "none"
    assert pick(res(tl=19.0), "claim.gemm.lib.w4.repack.tl") == "faster"
    assert pick(res(), "claim.gemm.lib.w4.repack.winners") == "all"
    assert pick(res(winner="m16_k512_s4_k_wd"), "claim.gemm.lib.w4.repack.winners") == "none"
    v = tiles.library_values(res())
    assert v["derived.gemm.lib.w4.repack.m16_il_us"] == "19.0" and v["derived.gemm.lib.w4.repack.m16_tl_us"] == "19.5"
    assert v["derived.gemm.lib.w4.repack.m16_plain_us"] == "19.8" and v["derived.gemm.lib.w4.repack.square_il_us"] == "—"
    # the earlier sentences see weights as stored only: no repacked time, no repacked ring probe
    assert v["derived.gemm.lib.w4.wide.m16_us"] == "19.8" and v["derived.gemm.lib.w4.q4.m16_two_us"] == "19.8"
    assert v["derived.gemm.lib.w4.q4.m16_us"] == "20.4"
    assert v["derived.gemm.lib.w4.ring.loadonly_us"] == "—"  # the stored-weight probe has no mmaonly pair


def test_kpair_sentence_follows_the_searches():
    """The on-chip paragraph at M = 64 and 128: the best ``kpair`` candidate on interleaved weights against the
    best interleaved one with a block per 64 weight rows (``post`` left out), within 2 % no difference."""
    from coursebook import tiles

    def res(kp64=27.5, il64=25.2, kp128=38.3, il128=34.7):
        recs = []
        for shape, kp, il in (("64x8192x8192", kp64, il64), ("128x8192x8192", kp128, il128)):
            recs.append({"kind": "search", "name": f"w4a16 {shape}",
                         "ms": {"m64_k128_s4_w8_n_kp_il_wd": kp / 1e3, "m64_k128_s4_w8_n_kp": 0.0101,  # kp, stored weights
                                "m64_k256_s4_w8_k_il_wd": il / 1e3, "m64_k256_s4_k_mma_x128_il_po_wd": 0.0102,
                                "m64_k256_s4_k_wd": 0.0103}})
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.w4.kp").case  # noqa: E731
    assert pick(res()) == "slower"
    assert pick(res(kp64=24.0, kp128=33.0)) == "faster"
    assert pick(res(kp64=25.4, kp128=34.5)) == "none"
    assert pick(res(kp64=24.0)) == "some"
    assert pick({"suites": {"gemm.w4a16": {"records": []}}}) is None
    v = tiles.library_values(res())
    assert v["derived.gemm.lib.w4.kp.m64_kp_us"] == "27.5" and v["derived.gemm.lib.w4.kp.m64_il_us"] == "25.2"
    assert v["derived.gemm.lib.w4.kp.m128_kp_us"] == "38.3" and v["derived.gemm.lib.w4.kp.m128_il_us"] == "34.7"


def test_post_sentences_follow_the_searches():
    """The scale-after-the-MMA paragraph: the fastest ``post`` candidate against its control (the same label
    without ``_po``) and the ``post`` best against the best interleaved kernel with the scale in the expansion,
    within 2 % no difference; ``post`` candidates stay out of the interleaved-against-stored comparison."""
    from coursebook import tiles

    def res(po=18.2, ctl=20.2, il=18.5, other_po=18.6):
        recs = []
        for shape in ("1x8192x8192", "16x8192x8192"):
            recs.append({"kind": "search", "name": f"w4a16 {shape}",
                         "ms": {"m16_k256_s12_k_mma_x128_il_po_wd": po / 1e3, "m16_k256_s12_k_mma_x128_il_wd": ctl / 1e3,
                                "m16_k512_s6_k_mma_x128_il_po_wd": other_po / 1e3,  # no control: not a pair
                                "m16_k256_s12_k_q4_il_wd": il / 1e3, "m16_k512_s4_k_wd": 0.0199}})
        return {"suites": {"gemm.w4a16": {"records": recs}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k).case  # noqa: E731
    assert pick(res(), "claim.gemm.lib.w4.post.ctl") == "faster"
    assert pick(res(ctl=18.3), "claim.gemm.lib.w4.post.ctl") == "none"
    assert pick(res(ctl=17.0, il=19.0), "claim.gemm.lib.w4.post.ctl") == "slower"
    assert pick(res(), "claim.gemm.lib.w4.post.best") == "none"
    assert pick(res(il=19.0), "claim.gemm.lib.w4.post.best") == "faster"
    assert pick(res(il=17.5), "claim.gemm.lib.w4.post.best") == "slower"
    v = tiles.library_values(res())
    assert v["derived.gemm.lib.w4.post.m16_pair_po_us"] == "18.2" and v["derived.gemm.lib.w4.post.m16_pair_ctl_us"] == "20.2"
    assert v["derived.gemm.lib.w4.post.m16_po_us"] == "18.2" and v["derived.gemm.lib.w4.post.m16_il_us"] == "18.5"
    assert v["derived.gemm.lib.w4.repack.m16_il_us"] == "18.5"  # the post candidates are not in the repacking claim
    # the fastest post candidate without a control: the pair is the fastest one that has one
    v = tiles.library_values(res(po=19.0, other_po=18.0))
    assert v["derived.gemm.lib.w4.post.m16_pair_po_us"] == "19.0" and v["derived.gemm.lib.w4.post.m16_po_us"] == "18.0"
    assert v["derived.gemm.lib.w4.post.fold_ffma"] == "8" and v["derived.gemm.lib.w4.post.saved_hmul2"] == "32"


def test_eight_row_sentences_follow_the_m1_search():
    """The 8-row activation tile at M = 1: its best candidate against the best 16-row one of the same module (the
    decode kernels' ``dec_``/``tma_`` left out), within 2 % no difference; whether the bench winner has 8 rows;
    the 8-row candidates stay out of the post comparison (a 16-row kernel's scale after the MMA)."""
    from coursebook import tiles

    def res(m8=17.0, m16=18.5, won=True, dec=15.0):
        ms = {"m8_k256_s12_k_mma_x128_il_po_wd": m8 / 1e3, "m8_k256_s8_k_mma_x128_il_po_wd": 0.0199,
              "m16_k256_s12_k_mma_x128_il_po_wd": 0.0190, "m16_k256_s12_k_mma_x128_il_wd": 0.0210,
              "m16_k256_s12_k_q4_il_wd": m16 / 1e3, "dec_r128_kw1_sk4_d4": dec / 1e3, "tma_r128_sk4_st4_g1": dec / 1e3}
        label = "m8_k256_s12_k_mma_x128_il_po_wd" if won else "m16_k256_s12_k_q4_il_wd"
        return {"suites": {"gemm.w4a16": {"records": [
            {"kind": "search", "name": "w4a16 1x8192x8192", "ms": ms},
            {"kind": "bench", "name": "w4a16 1x8192x8192", "ms": 0.018, "label": label}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k)  # noqa: E731
    c = pick(res(), "claim.gemm.lib.w4.m8")
    assert c.case == "lower" and "快了 8%" in c.text
    assert pick(res(m8=18.3), "claim.gemm.lib.w4.m8").case == "tie"
    c = pick(res(m8=19.5), "claim.gemm.lib.w4.m8")
    assert c.case == "higher" and "慢了 5%" in c.text
    assert pick(res(), "claim.gemm.lib.w4.m8.won").case == "yes"
    assert pick(res(won=False), "claim.gemm.lib.w4.m8.won").case == "no"
    no_m8 = {"suites": {"gemm.w4a16": {"records": [{"kind": "search", "name": "w4a16 1x8192x8192",
                                                     "ms": {"m16_k256_s12_k_q4_il_wd": 0.0185}}]}}}
    assert pick(no_m8, "claim.gemm.lib.w4.m8").case is None and pick(no_m8, "claim.gemm.lib.w4.m8.won").case is None
    v = tiles.library_values(res())
    assert v["derived.gemm.lib.w4.m8.m8_us"] == "17.0" and v["derived.gemm.lib.w4.m8.m16_us"] == "18.5"
    assert v["derived.gemm.lib.w4.m8.n"] == "2"
    assert v["derived.gemm.lib.w4.post.m1_po_us"] == "19.0"  # the 16-row post candidate, not the faster 8-row one
    assert v["derived.gemm.lib.w4.m8.fold_ffma"] == "4" and v["derived.gemm.lib.w4.post.fold_ffma"] == "8"
    assert tiles.library_values(no_m8)["derived.gemm.lib.w4.m8.m8_us"] == tiles.DASH


def test_flush_sentences_follow_the_flush_suite():
    """The flush section of the W4A16 pages: who pays more for the write flush's dirty lines (over 1 µs), how many
    decode targets hold under the clean flush, 4096^3 against its target, the M = 16 kernel against cuBLAS on the
    same bytes (2 %), the target's time against a plain read of the same bytes (a copy of them where no read was
    timed), and the kernel's time beyond its load path under each flush; every sentence turns with made-up records, and the table and figures come from them."""
    from coursebook import tiles

    shapes = {1: (19.4, 19.3, 48.2, 40.1, 2.5), 16: (18.4, 17.2, 43.9, 35.1, 2.5), 64: (25.3, 25.2, 45.6, 38.9, 2.0),
              128: (34.6, 34.0, 45.2, 37.6, 1.3), 4096: (203.6, 187.4, 206.0, 181.0, 0.9)}

    def res(over=None, m16_bounds=None, read=None):
        recs = []
        for m, (kw, kc, bw, bc, tgt) in shapes.items():
            kw, kc, bw, bc = (over or {}).get(m, (kw, kc, bw, bc))
            shape = f"{m}x8192x8192" if m < 4096 else "4096x4096x4096"
            for mode, k, b in (("write", kw, bw), ("clean", kc, bc)):
                base = {"cuBLAS fp16 weights": b / 1e3}
                if m == 16:
                    bounds = (m16_bounds or {}).get(mode, {"write": (16.1, 19.4, 14.1, 3.8), "clean": (12.7, 17.1, 11.6, 3.6)}[mode])
                    base.update({"load path alone": bounds[0] / 1e3, "cuBLAS fp16, same bytes (16x2112x8192)": bounds[1] / 1e3,
                                 "torch copy, same bytes moved": bounds[2] / 1e3, "one-element add": bounds[3] / 1e3})
                    if read:
                        base["plain read, same bytes"] = read[mode] / 1e3
                x = b / k
                recs.append({"kind": "bench", "name": f"{mode} flush: w4a16 {shape}", "ms": k / 1e3, "baselines": base,
                             "speedup": {lab: t * 1e3 / k for lab, t in base.items()}, "frac_copy_bw": 0.4, "copy_gbps": 4260.0,
                             "shape": [m, 8192, 8192] if m < 4096 else [4096] * 3,
                             "targets": {"speedup:cuBLAS fp16 weights": {"target": tgt, "value": x, "met": x >= tgt}}})
        return {"suites": {"gemm.flush": {"records": recs}}}

    def pick(r, key):
        return next(c for c in tiles.flush_claims(r) if c.key == f"claim.gemm.lib.w4.flush.{key}").case

    r = res()
    assert [pick(r, k) for k in ("cost", "targets", "square", "same", "reach", "gap")] == [
        "library", "none", "above", "tie", "higher", "higher"]
    v = tiles.flush_values(r)
    assert (v["derived.gemm.lib.w4.flush.cublas_extra_lo"], v["derived.gemm.lib.w4.flush.cublas_extra_hi"]) == ("6.7", "8.8")
    assert v["derived.gemm.lib.w4.flush.w4_extra_hi"] == "1.2" and v["derived.gemm.lib.w4.flush.same_rows"] == "2112"
    assert v["derived.gemm.lib.w4.flush.same_shape"] == "16×2112×8192"
    cost = next(c for c in tiles.flush_claims(r) if c.key.endswith(".cost")).text  # the gaps, with their sizes
    assert "cuBLAS 多用 6.7–8.8 µs，W4A16 kernel 至多多用 1.2 µs" in cost
    # a decode shape whose library time is missing is left out of the write-back figures, not counted as 0
    no_base = res()
    for rec in no_base["suites"]["gemm.flush"]["records"]:
        if rec["name"] == "clean flush: w4a16 1x8192x8192":
            rec["baselines"] = {}
    assert tiles.flush_values(no_base)["derived.gemm.lib.w4.flush.cublas_extra_hi"] == "8.8"
    assert v["derived.gemm.lib.w4.flush.m16_need_us"] == "14.0"  # 35.1 / 2.5
    assert (v["derived.gemm.lib.w4.flush.m16_gap_write_us"], v["derived.gemm.lib.w4.flush.m16_gap_clean_us"]) == ("2.3", "4.5")
    assert v["derived.gemm.lib.w4.flush.w4_copy_lo"] == "40"
    table = tiles.flush_table(r)
    assert "| 16×8192×8192 | 18.4 / 17.2 | 43.9 / 35.1 | 2.39× / 2.04× | ≥ 2.5× |" in table
    # the kernel pays as much as cuBLAS: no side pays over 1 µs more; the kernel pays more everywhere
    same = {m: (k, k - (bw - bc), bw, bc) for m, (k, _, bw, bc, _) in shapes.items() if m < 4096}
    assert pick(res(over=same), "cost") == "none"
    worse = {m: (k + 10, k, bw, bc) for m, (k, _, bw, bc, _) in shapes.items() if m < 4096}
    assert pick(res(over=worse), "cost") == "kernel"
    # under the clean flush the targets hold at 2 of 4 shapes, then at all; 4096^3 falls below 0.9x
    two = res(over={1: (19.4, 15.0, 48.2, 40.1), 16: (18.4, 13.0, 43.9, 35.1)})
    assert pick(two, "targets") == "some"
    assert "只有 M = 1、M = 16 还到目标" in next(c.text for c in tiles.flush_claims(two)
                                            if c.key == "claim.gemm.lib.w4.flush.targets")  # named, not counted
    fast = {m: (k, bc / (t + 0.1), bw, bc) for m, (k, _, bw, bc, t) in shapes.items() if m < 4096}
    assert pick(res(over=fast), "targets") == "all"
    assert pick(res(over={4096: (203.6, 210.0, 206.0, 181.0)}), "square") == "below"
    # against cuBLAS on the same bytes, and the target against the copy; the gap under the clean flush
    assert pick(res(m16_bounds={"clean": (12.7, 19.0, 11.6, 3.6)}), "same") == "lower"
    assert pick(res(m16_bounds={"clean": (12.7, 15.0, 11.6, 3.6)}), "same") == "higher"
    assert pick(res(m16_bounds={"clean": (12.7, 17.1, 15.0, 3.6)}), "reach") == "lower"
    assert pick(res(m16_bounds={"clean": (16.0, 17.1, 11.6, 3.6)}), "gap") == "lower"  # 1.2 µs against 2.3
    assert pick(res(m16_bounds={"clean": (15.0, 17.1, 11.6, 3.6)}), "gap") == "tie"  # 2.2 µs against 2.3
    # the plain read of the same bytes, where the run timed it, is the reference the target is held against
    assert pick(r, "read") == "no" and v["derived.gemm.lib.w4.flush.m16_read_clean_us"] == "—"
    rd = res(read={"write": 16.0, "clean": 14.9})
    assert pick(rd, "read") == "yes" and pick(rd, "reach") == "lower"  # 14.0 µs needed, 14.9 to read: out of reach
    text = next(c.text for c in tiles.flush_claims(rd) if c.key.endswith(".read"))
    assert "14.9 µs，重写冲刷下 16.0 µs" in text
    assert next(c.text for c in tiles.flush_claims(rd) if c.key.endswith(".reach")).startswith(
        "比只把这些字节读一遍的 kernel 还短：")  # a blank between the Latin word and the Chinese after it
    assert pick(res(read={"write": 16.0, "clean": 12.5}), "reach") == "higher"  # the copy is not consulted
    assert pick(res(read={"write": 16.0, "clean": 12.5}, m16_bounds={"clean": (12.7, 17.1, 15.0, 3.6)}),
                "reach") == "higher"
    assert tiles.flush_values(rd)["derived.gemm.lib.w4.flush.m16_read_write_us"] == "16.0"
    assert all(c.case is None for c in tiles.flush_claims({"suites": {}}))
    assert tiles.flush_values({"suites": {}})["derived.gemm.lib.w4.flush.m16_clean_us"] == "—"


def test_lag_sentences_follow_the_m64_search():
    """lag at M = 64: its best candidate (labels with ``_lg``) against the best of the others in the same search,
    within 2 % no difference; whether the bench winner is a lag form; nothing said without both kinds."""
    from coursebook import tiles

    def res(lag=25.0, rest=26.0, won=True):
        ms = {"m64_k128_s8_w8_k_il_lg_wd": lag / 1e3, "m64_k128_s8_w4_k_il_lg_wd": 0.0292,
              "m64_k256_s4_k_tl_il_wd": rest / 1e3, "m64_k256_s4_w8_k_il_wd": 0.0265, "m64_k256_s4_k": 0.0300}
        label = "m64_k128_s8_w8_k_il_lg_wd" if won else "m64_k256_s4_k_tl_il_wd"
        return {"suites": {"gemm.w4a16": {"records": [
            {"kind": "search", "name": "w4a16 64x8192x8192", "ms": ms},
            {"kind": "bench", "name": "w4a16 64x8192x8192", "ms": 0.025, "label": label}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k)  # noqa: E731
    c = pick(res(), "claim.gemm.lib.w4.lag")
    assert c.case == "lower" and "快了 4%" in c.text
    assert pick(res(lag=25.4, rest=25.6), "claim.gemm.lib.w4.lag").case == "tie"
    c = pick(res(lag=27.0), "claim.gemm.lib.w4.lag")
    assert c.case == "higher" and "慢了 4%" in c.text
    assert pick(res(), "claim.gemm.lib.w4.lag.won").case == "yes"
    assert pick(res(won=False), "claim.gemm.lib.w4.lag.won").case == "no"
    no_lag = {"suites": {"gemm.w4a16": {"records": [{"kind": "search", "name": "w4a16 64x8192x8192",
                                                      "ms": {"m64_k256_s4_k_tl_il_wd": 0.0256}}]}}}
    assert pick(no_lag, "claim.gemm.lib.w4.lag").case is None and pick(no_lag, "claim.gemm.lib.w4.lag.won").case is None
    v = tiles.library_values(res())
    assert (v["derived.gemm.lib.w4.lag.lag_us"], v["derived.gemm.lib.w4.lag.rest_us"]) == ("25.0", "26.0")
    assert v["derived.gemm.lib.w4.lag.n"] == "2"
    assert tiles.library_values(no_lag)["derived.gemm.lib.w4.lag.lag_us"] == tiles.DASH


def test_fuse_sentences_follow_the_twin_pairs_and_leave_the_other_comparisons_alone():
    """fuse: every twin (``_fu``) whose form without it ran in the same search is a pair; the sentence says how
    many pairs the fused form wins by more than 2 %, and how many bench winners carry it.  The comparisons
    before it on the page (lag here) leave the twins out."""
    from coursebook import tiles

    def res(fu64=24.5, fu16=18.2, won=(True, True)):
        s64 = {"m64_k128_s8_w8_k_il_lg_wd": 0.0254, "m64_k128_s8_w8_k_il_lg_fu_wd": fu64 / 1e3,
               "m64_k256_s4_k_tl_il_wd": 0.0256}
        s16 = {"m16_k256_s8_k_mma_x128_il_po_wd": 0.0186, "m16_k256_s8_k_mma_x128_il_po_fu_wd": fu16 / 1e3,
               "m16_k256_s12_k_q4_il_fu_wd": 0.0199}  # a twin whose plain form did not run: no pair
        w64 = "m64_k128_s8_w8_k_il_lg_fu_wd" if won[0] else "m64_k128_s8_w8_k_il_lg_wd"
        w16 = "m16_k256_s8_k_mma_x128_il_po_fu_wd" if won[1] else "m16_k256_s8_k_mma_x128_il_po_wd"
        return {"suites": {"gemm.w4a16": {"records": [
            {"kind": "search", "name": "w4a16 64x8192x8192", "ms": s64},
            {"kind": "search", "name": "w4a16 16x8192x8192", "ms": s16},
            {"kind": "bench", "name": "w4a16 64x8192x8192", "ms": 0.025, "label": w64},
            {"kind": "bench", "name": "w4a16 16x8192x8192", "ms": 0.018, "label": w16}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == k)  # noqa: E731
    c = pick(res(), "claim.gemm.lib.w4.fuse")
    assert c.case == "faster" and "2 对里" in c.text
    c = pick(res(fu16=18.5), "claim.gemm.lib.w4.fuse")
    assert c.case == "some_never_slower" and "有 1 对快出 2% 以上，其余 1 对相差不到 2%，没有一对慢出 2%" in c.text
    c = pick(res(fu16=19.5), "claim.gemm.lib.w4.fuse")
    assert c.case == "some" and "有 1 对快出 2% 以上、1 对慢了 2% 以上，其余 0 对" in c.text
    assert pick(res(fu64=25.3, fu16=18.5), "claim.gemm.lib.w4.fuse").case == "none"
    assert pick(res(fu64=26.0, fu16=19.5), "claim.gemm.lib.w4.fuse").case == "slower"
    assert pick(res(), "claim.gemm.lib.w4.fuse.won").case == "all"
    c = pick(res(won=(True, False)), "claim.gemm.lib.w4.fuse.won")
    assert c.case == "some" and "2 个形状里，1 个" in c.text
    assert pick(res(won=(False, False)), "claim.gemm.lib.w4.fuse.won").case == "none"
    plain = {"suites": {"gemm.w4a16": {"records": [{"kind": "search", "name": "w4a16 64x8192x8192",
                                                     "ms": {"m64_k256_s4_k_tl_il_wd": 0.0256}}]}}}
    assert pick(plain, "claim.gemm.lib.w4.fuse").case is None and pick(plain, "claim.gemm.lib.w4.fuse.won").case is None
    v = tiles.library_values(res())
    assert v["derived.gemm.lib.w4.fuse.n"] == "2"
    assert (v["derived.gemm.lib.w4.fuse.m64_fu_us"], v["derived.gemm.lib.w4.fuse.m64_plain_us"]) == ("24.5", "25.4")
    assert (v["derived.gemm.lib.w4.fuse.m16_fu_us"], v["derived.gemm.lib.w4.fuse.m16_plain_us"]) == ("18.2", "18.6")
    assert v["derived.gemm.lib.w4.fuse.m1_fu_us"] == tiles.DASH
    assert (v["derived.gemm.lib.w4.fuse.lop3_plain"], v["derived.gemm.lib.w4.fuse.lop3_fused"]) == ("8", "4")
    # lag's comparison is between unfused kernels: the fused lag twin (24.5) is not its best
    assert (v["derived.gemm.lib.w4.lag.lag_us"], v["derived.gemm.lib.w4.lag.n"]) == ("25.4", "1")


# ----------------------------------------------------------------- review 50-b: sentences and tables chosen by the data
def test_ladder_figure_and_text_read_the_same_cublas(results):
    """The figure's cuBLAS bar is the cuBLAS timed with the tuned rung (the one the text quotes); each rung's
    ratio is to its own rounds' cuBLAS, a tiny one printed as a fraction instead of 0.00x."""
    from coursebook import gemm_ladder as G
    from coursebook.records import bench

    fig = G.ladder_bars(results)
    bars = [p for p in fig.axes[0].patches]
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[-1] == "cuBLAS"
    per_side = len(labels)
    for i, side in enumerate(sorted({r["shape"][0] for r in G.records(results, "gemm.ladder", kind="bench") if r.get("rung")})):
        want = G._cublas_tflops(bench(results, f"tuned rung4 {side}^3"))
        assert abs(bars[i * per_side + per_side - 1].get_height() - want) < 1e-6
        assert f"{want:.1f}" == G.tuned_values(results)[f"derived.gemm.cublas.s{side}.tflops"]
    assert G.ratio_text(0.0013) == "约 1/769" and G.ratio_text(0.33) == "0.33×" and G.ratio_text(None) == "—"
    v = G.ladder_values(results)
    assert v["derived.gemm.ladder.rung1_naive.s4096.x"].startswith("约 1/")
    lo, hi = (float(x) for x in v["derived.gemm.cublas.s4096.span"].split("–"))
    assert lo <= float(G.tuned_values(results)["derived.gemm.cublas.s4096.tflops"]) <= hi
    assert G.ladder_values(None)["derived.gemm.ladder.rung1_naive.s4096.x"] == "—"


def test_slowest_run_prints_cut_like_the_list_of_runs(results):
    from coursebook import gemm_ladder as G

    c = next(x for x in G.ws_claims(results) if x.key == "claim.gemm.vs_cublas.s4096")
    lo = c.values["value"]
    assert G.floor3(lo) in c.text and G.floor3(lo) in G.replicate_values(results)["derived.gemm.tune.s4096.ratio_runs"]


def test_bench_against_search_is_said_per_shape():
    from coursebook import gemm_ladder as G

    def res(b4, b8):
        recs = []
        for side, b in ((4096, b4), (8192, b8)):
            recs += [{"kind": "search", "name": f"tuned rung4 {side}^3", "ms": {"x_ws": 1.0}},
                     {"kind": "bench", "name": f"tuned rung4 {side}^3", "ms": b}]
        return {"suites": {"gemm.ladder": {"records": recs}}}

    pick = G.bench_search_claim
    c = pick(res(1.002, 1.02))
    assert c.case == "same_slower" and c.text == "4096³ 上几乎不变，8192³ 上慢了 2%"
    assert pick(res(0.97, 1.0)).case == "faster_same"


def test_w4a16_square_and_decode_sentences_do_not_repeat():
    from coursebook import gemm_ladder as G

    def res(sq, dec):
        return {"suites": {"gemm.lowp": {"records": [
            {"kind": "bench", "name": "dequant W4A16 g128 4096x4096x4096", "speedup": {"cuBLAS fp16 weights": sq}},
            {"kind": "bench", "name": "dequant W4A16 g128 128x8192x8192", "speedup": {"cuBLAS fp16 weights": dec}}]}}}

    sq, dec = G.lowp_claims(res(0.3, 0.25))
    assert (sq.case, dec.case) == ("below", "also_lost") and sq.text != dec.text and "也" in dec.text
    assert G.lowp_claims(res(1.1, 0.9))[1].case == "lost" and G.lowp_claims(res(0.3, 1.2))[1].case == "won"


def test_audit_names_every_recorded_probe_in_words(results):
    from coursebook import gemm_ladder as G

    for r in G.audit_rows(results):
        assert r["construct"] in G.AUDIT_WORDS, r["construct"]
    for c in G.records(results, "gemm.support", kind="check"):
        assert c["name"] in G.AUDIT_CHECK_WORDS, c["name"]
    md = G.audit_table(results)
    assert "int8_gemm" not in md and "(exact)" not in md and "^3" not in md


def test_fp8_failures_are_grouped_by_kind():
    from coursebook import gemm_ladder as G

    def single(side, n):
        return {"kind": "bench", "name": f"fp8 e4m3 single-level {side}^3", "tflops": 1100.0, "ms": 0.1,
                "shape": [side] * 3, "speedup": {"torch._scaled_mm": 1.04}, "rel_fro_err": 2.1e-3,
                "accumulation": "single-level (teaching variant)",
                "tolerance": {"ok": False, "mismatched": n, "max_abs_err": 2.4, "rel_fro_err": 2.1e-3}}

    md = G.fp8_section({"suites": {"gemm.lowp": {"records": [single(4096, 280), single(8192, 15946)]}}})
    assert "单级累加的教学版在 4096³ 与 8192³ 上都没有通过逐元素检查（分别有 280 与 15946 个元素超出容差）" in md
    assert md.count("单级累加（教学版），4096³") == 1  # the table's row, not repeated in the sentence


def test_w4a16_probe_paragraphs_name_the_kernel_they_measured():
    """The probes' paragraphs say which kernel the probes timed and, when it is not the results table's M = 16
    winner, whether that winner met the target."""
    from coursebook import tiles

    def res(winner, met):
        return {"suites": {"gemm.w4a16": {"records": [
            {"kind": "search", "name": "w4a16 probe nomma 16x8192x8192 m16_k512_s4_k", "ms": {"nomma": 0.016, "full": 0.022}},
            {"kind": "search", "name": "w4a16 probe noexpand 16x8192x8192 m16_k512_s4_k",
             "ms": {"noexpand": 0.017, "full": 0.022}},
            {"kind": "bench", "name": "w4a16 16x8192x8192", "label": winner, "shape": [16, 8192, 8192], "ms": 0.0177,
             "targets": {f"speedup:{tiles.W4_BASE}": {"target": 2.5, "value": 2.5 if met else 2.4, "met": met}}}]}}}

    pick = lambda r, k: next(c for c in tiles.library_claims(r) if c.key == f"claim.gemm.lib.w4.probe.{k}")  # noqa: E731
    r = res("m16_k256_s12_k_q4_il_fu_wd", True)
    c = pick(r, "which")
    assert c.case == "other" and "逐元素展开、权重原样存放的 wgmma 版本" in c.text and "交错重排" in c.text
    assert pick(r, "table").case == "other_met" and "已经到了目标" in pick(r, "table").text
    assert pick(res("m16_k256_s12_k_q4_il_fu_wd", False), "table").case == "other_missed"
    r = res("m16_k512_s4_k", False)
    assert pick(r, "which").case == "same" and pick(r, "table").case == "same_missed"
    assert pick({"suites": {}}, "which").case is None


def test_repacking_table_and_sentences_name_the_shapes(results):
    from coursebook import tiles

    md = tiles.w4_forms_table(results)
    assert md.count("\n") == len(tiles.W4_SHAPES) + 1 and "| M = 1 |" in md and "| 4096³ |" in md
    c = tiles._faster_claim("k", [(1.0, 1.1), (1.0, 1.1), (1.0, 1.005)], ["M = 1", "M = 16", "4096³"])
    assert c.case == "some" and c.text.endswith("只有 4096³ 上两者相差不到 2%")
    c = tiles._faster_claim("k", [(1.0, 1.1), (1.0, 1.005), (1.2, 1.0)], ["M = 1", "M = 16", "4096³"])
    assert "在 M = 16 上两者相差不到 2%" in c.text and "在 4096³ 上它更慢" in c.text
    assert tiles._faster_claim("k", [(1.0, 1.1), (1.0, 1.005)]).text.endswith("其余的相差不到 2% 或更慢")


def test_grouped_padded_form_is_read_against_the_loop_spread():
    from coursebook import tiles

    def res(x_uniform, x_skewed, spread=0.03):
        return {"suites": {"gemm.grouped_ws": {"records": [
            {"kind": "bench", "name": f"grouped ws padded G=8 {mix} N=4096 K=2048", "ms": 0.18,
             "speedup": {tiles.GRAPH_LOOP: x}, "baseline_spread": {tiles.GRAPH_LOOP: spread}}
            for mix, x in (("uniform", x_uniform), ("skewed", x_skewed))]}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.grp.padded")  # noqa: E731
    c = pick(res(1.06, 1.01))
    assert c.case == "faster_tie" and c.text == "组大小相同时快约 6%，组大小悬殊时与循环持平（差距在离散范围以内）"
    assert pick(res(1.06, 1.05)).case == "faster_faster" and pick(res(0.9, 1.0)).case == "slower_tie"
    md = tiles.grouped_ws_table(res(1.06, 1.01))
    assert md.startswith("（每一行都是 8 个专家，N = 4096，K = 2048。）") and "| 手写流水补齐式，相同 |" in md


def test_scores_store_sentence_gives_the_gain():
    from coursebook import tiles

    def res(new, old):
        return {"suites": {"gemm.batched_ws": {"records": [
            {"kind": "search", "name": "batched ws scores 64x2048x2048x128",
             "ms": {"a_b2_ef": new / 1e3, "a": old / 1e3}}]}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.bmm.qk_store")  # noqa: E731
    assert pick(res(174.7, 189.7)).text == "前者快约 8%" and pick(res(189.0, 189.7)).case == "tie"
    assert pick(res(200.0, 189.7)).text == "前者反而慢约 5%"


def test_wave_table_states_its_direction_threshold_and_baseline_tiles(results):
    """Direction: a prediction counts as "faster" only above 1 + WAVE_DIR_TOL, which the page states; the
    hand-written stream-K rows show the baseline's tiles and waves beside their own."""
    from coursebook import tiles

    assert tiles.library_values(results)["derived.gemm.lib.wave_dir_pct"] == f"{100 * tiles.WAVE_DIR_TOL:.0f}"
    for r in tiles.wave_rows(results):
        assert r["holds_dir"] == ((r["pred"] > 1 + tiles.WAVE_DIR_TOL) == (r["meas"] > 1))
    md = tiles.wave_table(results)
    assert "128×256 → 128×128" in md and "对 cuBLAS" not in md and "网格" not in md
    sk = [r for r in tiles.wave_rows(results) if r["kind"] == "stream-K，手写流水" and r["tile"] != r["base_tile"]]
    assert sk and all(r["base_tile"] == "128×256" for r in sk)


def test_splitk_unsplit_l2_rate_is_the_default_blocks(results):
    from coursebook import tiles

    rows = tiles._splitk_l2(results)
    want = [r["l2_tbps"] for r in rows if r["split"] == 1 and r["tile"] == "128×128"]
    assert tiles.splitk_values(results)["derived.gemm.splitk.l2_nosplit_tbps"] == f"{want[0]:.1f}"
    assert "从 L2 读的操作数" not in tiles.splitk_l2_table(results)  # constant per tile: said in the prose


def test_streamk_winner_settings_are_a_list(results):
    from coursebook import tiles

    md = tiles.skws_form_list(results)
    items = md.splitlines()
    assert all(x.startswith("- ") for x in items) and items[-1].endswith("。")
    assert "，".join(x[2:-1] for x in items) == tiles.streamk_ws_values(results)["derived.gemm.skws.awk.form"]
    assert tiles.NO_RESULT in tiles.skws_form_list({"suites": {}})


def test_ledger_verdicts_are_glued_in_words(registry):
    from coursebook import gemm_ladder as G

    v = G.ledger_words()
    assert v["calc.gemm.ledger.s512.bound_h100"] == "受带宽限制" and v["calc.gemm.ledger.s512.bound_h200"] == "受算力限制"
    assert v["calc.gemm.bench.statistic"] == "中位数"
    assert {k[len("calc."):] for k in v if ".bound_" in k} == {k for k in registry if k.startswith("gemm.ledger.s") and ".bound_" in k}


def test_fp8_two_partials_sentence_names_one_figure_when_both_round_alike(monkeypatch):
    """The two-partials sentence gives one percentage for both shapes when they print alike, two otherwise, and
    turns when one shape is not slower."""
    from coursebook import gemm_ladder as G

    def pick(a, b):
        vals = {"derived.gemm.fp8.s4096.if1_loss_pct": a, "derived.gemm.fp8.s8192.if1_loss_pct": b,
                "derived.gemm.fp8.s4096.ws_gain_pct": "1.0", "derived.gemm.fp8.s8192.ws_gain_pct": "1.0"}
        monkeypatch.setattr(G, "fp8_values", lambda results: vals)
        return next(c for c in G.fp8_claims({}) if c.key == "claim.gemm.fp8.two_partials")

    c = pick("14.2", "13.9")
    assert c.case == "slower_same" and "都比同一块形状的单部分和版本慢了 14%" in c.text
    c = pick("14.2", "9.0")
    assert c.case == "slower" and "14%（4096³）与 9%（8192³）" in c.text
    assert pick("3.0", "-1.0").case == "not"


def test_fp8_winners_said_beside_each_other():
    """The 8192^3 fp8 winner is said as the 4096^3 one plus what it adds, never by repeating the shared words."""
    from coursebook.gemm_ladder import _words_beside

    assert _words_beside("128×192×128 的块、4 级流水", "128×192×128 的块、4 级流水、2 块一簇、多播 B") == \
        "是同样的配置再加上 2 块一簇、多播 B"
    assert _words_beside("a、b", "a、b") == "是同样的配置"
    assert _words_beside("128×192×128 的块、4 级流水", "128×128×128 的块、4 级流水") == "是 128×128×128 的块、4 级流水"
    assert _words_beside("—", "手写流水") == "是手写流水"


def test_tuned_winners_pipeline_said_once_when_alike(monkeypatch):
    """The sentence under the tuning table names the winners' pipeline once when both shapes agree."""
    from coursebook import gemm_ladder as G

    def words(best):
        monkeypatch.setattr(G, "search", lambda results, name, suite=None: {"best": best[name.split()[2]], "ms": {}})
        return G.tuned_values({})["derived.gemm.tune.best_pipelines"]

    assert words({"4096^3": "a_ws", "8192^3": "b_ws"}) == "在两个形状上都是手写流水"
    assert words({"4096^3": "a_ws", "8192^3": "b"}) == "在 4096³ 上是手写流水，在 8192³ 上是自动流水"


def test_the_grouped_loop_spread_covers_every_row_of_the_table():
    """The page gives the graph loop's spread over every row of the grouped table, and separately over the rows
    timed beside the padded form (what the padded form's verdict is read against)."""
    from coursebook import tiles

    def rec(form, mix, spread):
        return {"kind": "bench", "name": f"grouped {form} G=8 {mix} N=4096 K=2048", "ms": 0.2,
                "speedup": {tiles.GRAPH_LOOP: 1.0}, "baseline_spread": {tiles.GRAPH_LOOP: spread}}

    res = {"suites": {"gemm.grouped_ws": {"records": [
        rec("ws padded", "skewed", 0.03), rec("concat", "skewed", 0.058), rec("ptr", "uniform", 0.016),
        rec("ws padded", "uniform", 0.034)]}}}
    v = tiles.library_values(res)
    assert v["derived.gemm.lib.grp.loop_spread_all_pct"] == "1.6–5.8"
    assert v["derived.gemm.lib.grp.loop_spread_pct"] == "3.0–3.4"
    text = page_text("gemm/grouped.md")
    assert "derived.gemm.lib.grp.loop_spread_all_pct" in text and "derived.gemm.lib.grp.loop_spread_pct" in text


def test_the_batched_targets_are_said_once_for_both_products():
    from coursebook import tiles

    def res(pv, qk, tq=0.95):
        def r(name, x, t):
            return {"kind": "bench", "name": name, "ms": 1.0, "speedup": {"torch.bmm": x},
                    "targets": {"speedup:torch.bmm": {"target": t, "value": x, "met": x >= t}}}
        return {"suites": {"gemm.batched_ws": {"records": [r("batched ws context 64x2048x128x2048", pv, 0.95),
                                                           r("batched ws scores 64x2048x2048x128", qk, tq)]}}}

    pick = lambda r: next(c for c in tiles.library_claims(r) if c.key == "claim.gemm.lib.bmm.targets")  # noqa: E731
    c = pick(res(1.03, 1.03))
    assert c.case == "both" and c.text.count("0.95") == 1
    assert pick(res(0.9, 0.9)).case == "neither"
    assert pick(res(1.0, 0.9)).case == "pv" and pick(res(0.9, 1.0)).case == "qk"
    assert "1.0" in pick(res(1.03, 1.03, tq=1.0)).text
    text = page_text("gemm/grouped.md")
    assert text.count("claim.gemm.lib.bmm.targets") == 1 and "claim.gemm.lib.bmm.pv" not in text


def test_the_flush_table_is_said_to_be_another_run_naming_a_turned_verdict(results):
    """The write-flush column is the verdict table's protocol in a later run: the page says so, and names the
    products whose verdict differs between the two tables."""
    from coursebook import tiles

    def res(first, later):
        def r(name, suite, x):
            return {"kind": "bench", "name": name, "suite": suite, "ms": 1.0,
                    "targets": {"speedup:cuBLAS fp16 weights": {"target": 2.5, "value": x, "met": x >= 2.5}}}
        return {"suites": {"gemm.w4a16": {"records": [r("w4a16 16x8192x8192", "gemm.w4a16", first)]},
                           "gemm.flush": {"records": [r("write flush: w4a16 16x8192x8192", "gemm.flush", later),
                                                      r("clean flush: w4a16 16x8192x8192", "gemm.flush", 1.0)]}}}

    c = tiles.flush_rerun_claim(res(2.502, 2.43))
    assert c.case == "differ" and "16×8192×8192" in c.text and "2.502" in c.text and "2.430" in c.text
    assert tiles.flush_rerun_claim(res(2.6, 2.55)).case == "same"
    assert tiles.flush_rerun_claim(res(2.6, 2.6)).case == "identical"
    assert tiles.flush_rerun_claim({}).case is None
    # the recorded tables: every write-flush target has its counterpart in the verdict table
    rows = tiles.flush_rerun(results)
    from coursebook.records import records as recs

    n_write = sum(len(r.get("targets") or {}) for r in recs(results, "gemm.flush", kind="bench")
                  if r["name"].startswith("write flush: "))
    assert rows and len(rows) == n_write
    assert "claim.gemm.lib.flush_rerun" in page_text("gemm/ws.md") and "就是上表用的协议" not in page_text("gemm/ws.md")


def test_the_wave_table_holds_every_record_with_a_prediction_the_page_quotes(results):
    """Every split-K / stream-K record with a wave prediction, and the full-wave tiling the page predicts for,
    is a row of the wave table (the count the direction sentence gives is the table's)."""
    from coursebook import tiles
    from coursebook.records import records as recs

    rows = tiles.wave_rows(results)
    kinds = [r["kind"] for r in rows]
    assert any(k.startswith("换块宽") for k in kinds)
    fw = next(r for r in rows if r["kind"].startswith("换块宽"))
    v = tiles.streamk_ws_values(results)
    assert f"{fw['pred']:.2f}" == v["calc.gemm.skws.fw.pred"] and f"{fw['meas']:.2f}" == v["derived.gemm.skws.fw.dp"]
    n = 0
    for suite in ("gemm.splitk", "gemm.splitk_ws", "gemm.streamk", "gemm.streamk_ws"):
        for r in recs(results, suite, kind="bench"):
            split = (r.get("config") or {}).get("splits") if suite == "gemm.splitk_ws" else r.get("split_k")
            if r.get("name", "").startswith("full-wave") or (
                    r.get("predicted_speedup_vs_no_split", r.get("predicted_speedup_vs_dp")) is not None
                    and str(split or "") != "1"):
                n += 1
    assert len(rows) == n
    c = next(c for c in tiles.wave_claims(results) if c.key == "claim.gemm.waves.direction")
    assert c.values["n"] == len(rows)


def test_the_ladder_page_orders_the_hopper_passes_as_tilelang_does():
    """On the warp-specialised sm_90a path, tilelang runs ProducerConsumerWarpSpecialized before the two
    software-pipeline passes and layout inference; the rung-3 paragraph names it first."""
    import inspect

    from tilelang.cuda import pipeline

    src = inspect.getsource(pipeline.CUDAPassPipelineBodyPrologue)
    order = [src.index(p) for p in ("ProducerConsumerWarpSpecialized()", "PipelinePlanning()",
                                    "InjectSoftwarePipeline()", "LayoutInference()")]
    assert order == sorted(order)
    text = page_text("gemm/ladder.md")
    para = text[text.index("(gemm-rung3)="):text.index("(gemm-rung4)=")]
    assert para.index("ProducerConsumerWarpSpecialized") < para.index("流水规划") < para.index("布局推断")


def test_visible_cells_import_what_they_use():
    """A cell the reader sees that calls gemm_ladder starts with its import."""
    for page in ("gemm/ladder.md", "gemm/ws.md"):
        text = page_text(page)
        for cell in re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, re.S):
            lines = [x for x in cell.splitlines() if x and not x.startswith(":tags:")]
            if "remove-cell" in cell or "remove-input" in cell or "gemm_ladder." not in cell:
                continue
            assert lines[0] == "from coursebook import gemm_ladder", (page, lines[:2])
