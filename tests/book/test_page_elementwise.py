"""Checks on the elementwise chapter (landing book/ch_elementwise_norm_rope.md and its section pages
under book/elementwise/) and its helpers.

* every glued key exists: ``elementwise.*``/``machines.*`` in the ledger's figures registry, ``rec.*``
  among the recorded measurements, ``derived.*``/``calc.*``/``claim.*`` among the values and claims the
  page helpers derive from the records, the ledger and the Ascend capture index; and every page glues
  what it uses in its own setup cell (glue is per page);
* the prose types no decimal number and no registry number (numbers are glued);
* the prose is long enough; every section is there, each page short enough to read;
* kernel code on the pages is read from the package; the compiler section lowers on CPU and cites
  tests that exist (in footnotes); the measured pages label their numbers and read the verdicts;
* the sentences that conclude from the records are glued variants (checked here against the
  records) or guarded by the tests marked ``@claims.guards`` below;
* the figures draw and are numbered with captions; the measured helpers degrade to "no recorded result".
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from coursebook import claims
from coursebook.pagecheck import (CJK, GLUE, chapter_pages, chapter_text, labelled_block, page_text, typed_decimals,
                                  typed_numbers)
from coursebook.pagecheck import prose_of as _prose

ROOT = Path(__file__).resolve().parents[2]
LANDING = "ch_elementwise_norm_rope.md"


def _pages() -> list[str]:
    return chapter_pages(LANDING)


def _text() -> str:
    return chapter_text(LANDING)


def _block(start: str, end: str | None = None) -> str:
    return labelled_block(_text(), start, end)


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(("elementwise.", "machines."))}


@pytest.fixture(scope="module")
def results():
    from measure.results import load_results

    return load_results("nvidia-h200")


@pytest.fixture(scope="module")
def derived(results):
    from coursebook import ascend, budgets, claims as C, live, ncu, records
    from coursebook.measured import measured_values

    return {**measured_values(results), **records.elementwise_values(results), **budgets.fusion_exercise_values(),
            "derived.elementwise.live_proof": live.notebook_proof_sentence("elementwise"),
            **ascend.ascend_values(), **ncu.rows_values(results), "rec.header": "x",
            **C.claim_values(records.elementwise_claims(results), ncu.rows_claims(results))}


def test_the_chapter_is_split_into_pages():
    pages = _pages()
    assert pages[0] == LANDING and len(pages) >= 10
    assert all(p.startswith("elementwise/") for p in pages[1:])
    assert "{tableofcontents}" in page_text(LANDING)
    # the landing page has no section heading of its own (it would take the pages' section numbers)
    assert not re.search(r"^##\s", page_text(LANDING), flags=re.M)


def test_every_glue_key_exists(registry, derived):
    used = set(GLUE.findall(_text()))
    assert used, "the chapter glues nothing"
    missing = sorted(k for k in used if k not in registry and k not in derived)
    assert not missing, f"glued keys nobody provides: {missing}"
    assert any(k.startswith("elementwise.") for k in used) and any(k.startswith("rec.") for k in used)
    assert any(k.startswith("claim.elementwise.") for k in used)


_PROVIDERS = {  # a glued key's prefix -> what the page's setup cell must call to glue it
    "elementwise.": "glue_figures(", "machines.": "glue_figures(", "rec.": "glue_measured(",
    "claim.elementwise.fused.": "ncu.rows_claims(", "claim.elementwise.": "records.elementwise_claims(",
    "derived.elementwise.ncu.": "ncu.rows_values(", "derived.elementwise.diag.": "ncu.rows_values(",
    "derived.elementwise.ascend.": "ascend.ascend_values(", "calc.elementwise.": "budgets.fusion_exercise_values(",
    "derived.elementwise.live_proof": "live.notebook_proof_sentence(",
    "derived.elementwise.": "records.elementwise_values(",
}


@pytest.mark.parametrize("page", chapter_pages(LANDING))
def test_each_page_glues_what_it_uses(page):
    """Glue is per page: a key used on a page must be glued by that page's own setup cell."""
    text = page_text(page)
    for key in set(GLUE.findall(text)):
        need = next(v for k, v in _PROVIDERS.items() if key.startswith(k))
        assert need in text, f"{page} uses {key} but does not call {need}"
    if any(k.startswith("rec.") for k in GLUE.findall(text)) and page != LANDING:
        assert "glue_missing(" in text, f"{page}: a live run may lack a kernel; glue_missing keeps the build strict"


# Numbers that are problem statements (shapes, sizes, bit widths), not results.
_SHAPES = {"1", "2", "3", "4", "8", "16", "32", "64", "128", "256", "1024", "2047", "4096", "16384",
           "65536", "90", "0", "448"}


def test_prose_types_no_registry_number(registry):
    prose = _prose(_text())
    texts = {str(f.text) for f in registry.values() if re.fullmatch(r"[0-9.]+", str(f.text))}
    typed = typed_numbers(prose, texts, _SHAPES)
    assert not typed, f"numbers typed into the prose that the registry holds (glue them): {typed}"


def test_prose_has_no_decimal_number_at_all():
    decimals = typed_decimals(_prose(_text()))
    assert not decimals, f"decimal numbers typed into the prose: {decimals}"


def test_prose_is_long_enough():
    n = len(CJK.findall(_prose(_text())))
    assert n >= 8000, f"chapter prose has {n} Chinese characters outside code, want >= 8000"


@pytest.mark.parametrize("page", chapter_pages(LANDING))
def test_no_page_is_too_long(page):
    """About 15 desktop screens at most: the longest page's prose stays well under the old chapter's."""
    n = len(CJK.findall(_prose(page_text(page))))
    assert n <= 6500, f"{page}: {n} Chinese characters of prose; split it"


def test_no_hard_coded_chapter_number():
    assert not re.search(r"第\s*[0-9一二三四五六七八九十]+\s*章", _text())


SECTIONS = ("elementwise-ledger", "elementwise-model", "elementwise-elementwise", "elementwise-quant",
            "elementwise-norm", "elementwise-rope", "elementwise-fused", "elementwise-compiler", "elementwise-ascend",
            "elementwise-measured", "elementwise-diagnosis", "elementwise-pitfalls", "elementwise-summary",
            "elementwise-exercises", "elementwise-references")


def test_every_section_is_there():
    t = _text()
    assert t.count("(ch-elementwise-norm-rope)=") == 1
    for label in SECTIONS:
        assert t.count(f"({label})=") == 1, label
    for ref in ("ch-pytorch-to-kernel", "ch-primer", "records-elementwise"):
        assert "{ref}`" + ref + "`" in t or f"<{ref}>`" in t, ref


def test_fusion_ledger_is_shown():
    t = _block("elementwise-ledger", "elementwise-model")
    for key in ("scale_add", "rmsnorm", "layernorm", "rope", "rmsnorm_rope_fp8"):
        assert "{glue:text}`elementwise.fusion." + key + ".ratio`" in t, key


def test_kernel_code_on_the_page_resolves_to_the_package():
    """Every excerpt the pages show (``show_source(X.name, first, last)``) names a factory or macro
    of the course's packages whose source can be read, and its excerpt markers are in that source
    (a moved or renamed kernel fails here, not as a silently whole-factory excerpt)."""
    import importlib
    import inspect

    from coursebook.source import excerpt_bounds, function_of

    t = _text()
    aliases = {}
    for mod, name, alias in re.findall(r"^from ([\w.]+) import (\w+) as (\w+)$", t, flags=re.M):
        aliases[alias] = f"{mod}.{name}"
    calls = re.findall(r'show_source\((\w+)\.(\w+)(?:, "([^"]+)", "([^"]+)")?\)', t)
    assert len(calls) >= 10, calls
    for alias, attr, first, last in calls:
        fn = function_of(getattr(importlib.import_module(aliases[alias]), attr))
        assert fn.__module__.startswith("kernels."), (alias, attr, fn.__module__)
        lines = inspect.getsource(fn).splitlines()
        assert excerpt_bounds(lines, first or None, last or None) is not None, (alias, attr, first, last)


def test_compiler_section_lowers_on_cpu_and_cites_the_tests():
    """The compiler page is labelled as CPU lowering, shows generated source, and backs its
    claims with tests cited in footnotes (that the cited tests exist is checked below)."""
    block = page_text("elementwise/compiler.md")
    assert "lowered on CPU" in block and "在 CPU 上降级" in block
    assert ".get_kernel_source()" in block
    notes = "\n".join(ln for ln in block.splitlines() if ln.startswith("[^"))
    assert len(set(re.findall(r"(test_[a-z0-9_]+)", notes))) >= 8


def test_cited_tests_exist():
    names = set(re.findall(r"(test_[a-z0-9_]+)", _text()))
    have = set()
    for f in (ROOT / "tests").rglob("test_*.py"):
        have.add(f.stem)
        have |= set(re.findall(r"^def (test_\w+)", f.read_text(encoding="utf-8"), flags=re.M))
    assert names, "the chapter cites no test"
    missing = sorted(n for n in names if n not in have)
    assert not missing, f"the chapter cites tests that do not exist: {missing}"


def test_tests_are_cited_only_in_footnotes():
    for page in _pages():
        for ln in page_text(page).splitlines():
            if re.search(r"\btest_[a-z0-9_]+", ln) and not ln.startswith("[^"):
                assert ln.startswith(("```", "from ", "import ")) or "`" not in ln or "test_" not in _prose(ln), \
                    f"{page}: a test named outside a footnote: {ln[:90]}"


def test_ascend_section_is_labelled_cpu_only():
    block = page_text("elementwise/ascend.md")
    assert "从未在 NPU 上运行" in block and "derived.elementwise.ascend.label" in block
    # the book build reads the committed captures; it never lowers (a compile at build time)
    assert "surface_table(" in block and "asc_excerpt(" in block


def test_measured_pages_label_their_numbers_and_read_verdicts_from_the_records():
    block = page_text("elementwise/measured.md")
    assert "{glue:text}`rec.header`" in block
    assert "records.targets_table(" in block and "{glue:text}`claim.elementwise.measured.targets`" in block
    # the source line gives the copy bandwidth once; the page does not print a second range
    assert "derived.elementwise.copy_bw" not in block
    assert "derived.elementwise.fused_fp8.byte_ratio" in block and "x.3-tilelang-kernels" in block
    # verdicts are glued, never asserted in fixed words about a named kernel
    assert not re.search(r"(RMSNorm|LayerNorm|量化|RoPE|融合)[^。\n]{0,40}(达标了|没有达标|未能达标)", _prose(block))
    assert "{glue:text}`rec.header`" in page_text("elementwise/diagnosis.md")


def test_exercises_have_collapsible_answers():
    body = _block("elementwise-exercises", "elementwise-references")
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    blocks = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    assert len(blocks) >= 6, sorted(blocks)
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), f"{name} has no collapsible answer"
    assert sum("calc.elementwise." in b for b in blocks.values()) >= 5, "numeric answers should be glued from the ledger"


def test_references_carry_urls():
    refs = _block("elementwise-references")
    items = [ln for ln in refs.splitlines() if ln.startswith("- ")]
    assert len([ln for ln in items if "<http" in ln]) >= 12


def test_figures_are_numbered_with_chinese_captions():
    t = _text()
    names = re.findall(r"^\s+name: (fig-elementwise-[\w-]+)$", t, flags=re.M)
    assert len(names) >= 4 and len(set(names)) == len(names), names
    captions = re.findall(r"^\s+caption: (.+)$", t, flags=re.M)
    assert len(captions) >= len(names) and all(CJK.search(c) for c in captions)
    for name in names:
        assert "{numref}`" + name + "`" in t, f"figure {name} is never referred to"


# ----------------------------------------------------------------- helpers
FIGURES = ["budgets.scenario_fusion_bars", "diagrams.rope_pairing", "diagrams.reduction_two_stage",
           "records.measured_copy_fraction"]


@pytest.mark.parametrize("name", FIGURES)
def test_figure_draws(name):
    import importlib

    from matplotlib.figure import Figure

    mod, fn = name.split(".")
    fig = getattr(importlib.import_module(f"coursebook.{mod}"), fn)()
    assert isinstance(fig, Figure) and fig.axes


def test_measured_helpers_without_results_say_so():
    from coursebook import records as R

    assert R.targets_table({"suites": {}}).startswith("| kernel")  # empty records: header only
    assert R.NO_RESULT in R.elementwise_table({"suites": {}})
    extras = R.elementwise_values({"suites": {}})
    assert extras["derived.elementwise.targets.total"] == "0" and extras["derived.elementwise.fused_fp8.byte_ratio"] == "—"
    fig = R.measured_copy_fraction({"suites": {}})
    assert any(t.get_text() == R.NO_RESULT for ax in fig.axes for t in ax.texts)
    # with no records no claim picks a variant
    assert all(c.text == claims.UNKNOWN for c in R.elementwise_claims({"suites": {}}))


def test_the_copy_fraction_figure_names_kernels_in_chinese(results):
    """The bars are labelled with the kernels in words (as the results table), not record names."""
    from coursebook import records as R

    fig = R.measured_copy_fraction(results)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels and all(CJK.search(t) for t in labels)
    assert not any(re.search(r"\[|\bn=|\^|\d+x\d+", t) for t in labels), labels
    assert len(set(labels)) == len(labels), "two kernels that read the same are told apart by their shape"


def test_the_copy_bandwidth_sentence_follows_the_runs():
    from coursebook import records as R

    one = {"suites": {"norm": {"records": [{"kind": "bench", "name": "rmsnorm[rows] fp16 8x8", "ms": 0.01, "copy_gbps": 4258.2},
                                           {"kind": "bench", "name": "layernorm[rows] fp16 8x8", "ms": 0.01, "copy_gbps": 4258.3}]}}}
    assert "4258 GB/s" in R.elementwise_values(one)["derived.elementwise.copy_bw"]
    two = {"suites": {"norm": {"records": [{"kind": "bench", "name": "rmsnorm[rows] fp16 8x8", "ms": 0.01, "copy_gbps": 4258.2},
                                           {"kind": "bench", "name": "layernorm[rows] fp16 8x8", "ms": 0.01, "copy_gbps": 4284.0}]}}}
    words = R.elementwise_values(two)["derived.elementwise.copy_bw"]
    assert "4258–4284 GB/s 之间" in words and "几次运行" in words


def test_verdicts_follow_the_records():
    from coursebook import records as R

    fake = {"suites": {"norm": {"records": [
        {"kind": "bench", "name": "rmsnorm[rows] fp16 8x8", "ms": 0.01, "frac_copy_bw": 0.5,
         "targets": {"frac_copy_bw": {"target": 0.85, "value": 0.5, "met": False}}},
        {"kind": "bench", "name": "layernorm[rows] fp16 8x8", "ms": 0.01, "frac_copy_bw": 0.9,
         "targets": {"frac_copy_bw": {"target": 0.85, "value": 0.9, "met": True}}},
    ]}}}
    v = R.elementwise_values(fake)
    assert v["derived.elementwise.targets.total"] == "2" and v["derived.elementwise.targets.met"] == "1"
    assert "RMSNorm" in v["derived.elementwise.targets.missed_list"] and "LayerNorm" in v["derived.elementwise.targets.met_list"]
    assert "8×8" in v["derived.elementwise.targets.missed_list"]
    assert "未达标" in R.targets_table(fake)

    def summary(recs):
        return next(c for c in R.elementwise_claims({"suites": {"norm": {"records": recs}}})
                    if c.key == "claim.elementwise.measured.targets")

    some = summary(fake["suites"]["norm"]["records"])
    assert some.case == "some" and "RMSNorm" in some.text and "LayerNorm" not in some.text, some.text
    met = [dict(r, targets={"frac_copy_bw": {"target": 0.85, "value": 0.9, "met": True}}) for r in fake["suites"]["norm"]["records"]]
    assert summary(met).case == "all" and "RMSNorm" not in summary(met).text
    missed = [dict(r, targets={"frac_copy_bw": {"target": 0.85, "value": 0.5, "met": False}}) for r in fake["suites"]["norm"]["records"]]
    assert summary(missed).case == "none" and "LayerNorm" in summary(missed).text
    assert summary([]).case is None


def test_the_source_line_and_the_measured_page_round_the_copy_bandwidth_alike():
    """One rounding for every copy-bandwidth figure: the source line's range and the measured
    values' range print the same bandwidths the same way."""
    from coursebook import records as R
    from coursebook.measured import copy_bandwidth_range, measured_values

    bws = (4257.4, 4284.6)
    runs = {"runs": [{"copy_gbps": b} for b in bws], "suites": {"norm": {"records": [
        {"kind": "bench", "name": f"rmsnorm[rows] fp16 8x{i}", "ms": 0.01, "copy_gbps": b} for i, b in enumerate(bws)]}}}
    assert copy_bandwidth_range(bws) == "4257–4285" == measured_values(runs)["rec.copy_gbps"]
    assert "4257–4285 GB/s" in R.elementwise_values(runs)["derived.elementwise.copy_bw"]
    assert copy_bandwidth_range([4257.6, 4258.4]) == "4258" and copy_bandwidth_range([None]) is None


def test_tables_name_kernels_in_words(results):
    from coursebook import records as R

    table = R.elementwise_table(results)
    assert "| kernel | 形状与 dtype |" in table and "占拷贝带宽" in table
    assert "rmsnorm[" not in table and "n=2^28" not in table, "raw record names belong to the appendix"
    assert R.kernel_words("rope[neox,blocked] fp16 16384x32x128") == ("RoPE NeoX 分块", "fp16，16384×32×128")


def _rec(name, ms, pct=None, **kw):
    return {"kind": "bench", "name": name, "ms": ms, "frac_copy_bw": pct, **kw}


def test_claims_follow_the_records():
    """Each glued claim turns when the records turn (fabricated records, both ways)."""
    from coursebook import records as R

    def pick(recs, key):
        return next(c for c in R.elementwise_claims({"suites": {"elementwise": {"records": recs}}}) if c.key == key)

    slow1 = [_rec("add[parallel] fp16 n=2^28", 2.0, 0.5), _rec("add[per_thread] fp16 n=2^28", 1.0, 1.0)]
    assert pick(slow1, "claim.elementwise.add.level1").case == "higher"
    same = [_rec("add[parallel] fp16 n=2^28", 1.0, 1.0), _rec("add[per_thread] fp16 n=2^28", 1.0, 1.0)]
    assert pick(same, "claim.elementwise.add.level1").case == "tie"
    assert pick([_rec("scale_cast fp32->fp16 n=2^28", 1.0, 0.7)], "claim.elementwise.cast.narrow").case == "below"
    assert pick([_rec("scale_cast fp32->fp16 n=2^28", 1.0, 1.01)], "claim.elementwise.cast.narrow").case == "above"
    rope = [_rec("rope[neox,blocked] x", 1.0), _rec("rope[neox,naive] x", 1.3), _rec("rope[interleaved,blocked] x", 1.2),
            _rec("rope[interleaved,naive] x", 1.4)]
    assert pick(rope, "claim.elementwise.rope.interleaved").case == "higher"
    assert pick(rope, "claim.elementwise.rope.blocked").case == "faster"


def test_the_fused_claims_follow_the_records():
    from coursebook import ncu

    def res(fp8_ms, bf16_ms):
        return {"suites": {"fused": {"records": [
            {"kind": "bench", "name": "fused rmsnorm+rope+fp8 bf16 8x8 R=4", "ms": fp8_ms, "bytes": 200.0},
            {"kind": "bench", "name": "fused rmsnorm+rope bf16 8x8 R=4", "ms": bf16_ms, "bytes": 260.0},
            {"kind": "search", "name": "fused rmsnorm+rope+fp8 blk_m", "ms": {"blk_m=2": 0.08}}]}}}

    now = {c.key: c for c in ncu.rows_claims(res(0.058, 0.0724))}
    assert now["claim.elementwise.fused.now"].case == "kept"
    assert now["claim.elementwise.fused.first"].case == "higher"
    old = {c.key: c for c in ncu.rows_claims(res(0.074, 0.0724))}
    assert old["claim.elementwise.fused.now"].case == "none"


def test_exercise_values_come_from_the_ledger():
    from coursebook import budgets
    from ledger import fusion as F

    v = budgets.fusion_exercise_values()
    assert v["calc.elementwise.e1.fp16_ratio"] == f"{F.scale_add(dtype='fp16').ratio:.2f}"
    assert v["calc.elementwise.e3.frag2_kib"] == f"{F.fragment_kib((2, 4096)):.0f}"
    assert float(v["calc.elementwise.e8.ratio"]) > 1


# ----------------------------------------------------------------- guards of the marked sentences
@claims.guards("elementwise.ledger.all-bandwidth-bound")
def test_every_plan_is_below_the_fp32_balance_point():
    from ledger.figures import collect

    f = collect()
    assert float(f["elementwise.fusion.ai_max"].text) < float(f["machines.h200.cal.fp32_balance"].text)


@claims.guards("elementwise.ledger.rms-full-tensor-steps")
def test_only_the_statistics_steps_of_rmsnorm_skip_the_full_tensor():
    """The ledger's op-by-op RMSNorm: four steps read the whole M×N tensor (three of them write one
    too); adding eps and the rsqrt touch one number per row."""
    from ledger.fusion import rmsnorm

    sc = rmsnorm()
    full = sc.fused.steps[0].reads[0].bytes  # x, the whole M×N tensor
    big = [s for s in sc.unfused.steps if s.bytes >= full]
    small = [s for s in sc.unfused.steps if s.bytes < full]
    assert len(sc.unfused.steps) == 6 and len(big) == 4 and len(small) == 2
    assert all(s.bytes < 0.01 * full for s in small)
    assert sum(any(t.bytes >= full for t in s.writes) for s in big) == 3


@claims.guards("elementwise.measured.eager-gap")
def test_eager_is_far_behind_and_compile_is_close(results):
    from coursebook.records import records

    for prefix in ("rmsnorm[rows]", "layernorm[rows]"):
        r = next(r for r in records(results, kind="bench") if r["name"].startswith(prefix))
        assert r["speedup"]["eager"] > 5 and r["speedup"]["torch.compile"] < 2, r["speedup"]


@claims.guards("elementwise.measured.rms-target-out-of-reach")
def test_rms_target_needs_more_than_the_same_bytes_copy(results):
    from coursebook import records as R

    e = R.elementwise_values(results)
    assert float(e["derived.elementwise.rms.bound_compile"]) < float(e["derived.elementwise.rms.target_compile"])
    rms = R._find(results, "rmsnorm[rows]")
    copy_pct = 100 * rms["bytes"] / (float(e["derived.elementwise.rms.copy_us"]) * 1e-6) / 1e9 / rms["copy_gbps"]
    assert float(e["derived.elementwise.rms.need_pct"]) > copy_pct  # faster than copying the same bytes


@claims.guards("elementwise.measured.large-shape-bound")
def test_the_large_shape_bound_is_lower(results):
    from coursebook import records as R

    e = R.elementwise_values(results)
    assert float(e["derived.elementwise.rmsL.bound_compile"]) < float(e["derived.elementwise.rms.bound_compile"])


@claims.guards("elementwise.measured.ln-target-reachable")
def test_the_layernorm_target_is_within_the_bound(results):
    from coursebook import records as R

    e = R.elementwise_values(results)
    ln = R._find(results, "layernorm[rows]")
    target = ln["targets"]["speedup:torch.compile"]["target"]
    assert float(e["derived.elementwise.ln.bound_compile"]) > target
    assert float(e["derived.elementwise.ln.bound_compile"]) > float(e["derived.elementwise.rms.bound_compile"])


@claims.guards("elementwise.measured.flush-overhead")
def test_ncu_rmsnorm_beats_the_timed_same_bytes_copy(results):
    from coursebook import ncu, records as R

    d = ncu.rows_values(results)
    assert float(d["derived.elementwise.ncu.rms.time"]) < float(R.elementwise_values(results)["derived.elementwise.rms.copy_us"])


@pytest.fixture(scope="module")
def diag(results):
    from coursebook import ncu

    d = ncu.rows_values(results)
    assert all(v != "—" for v in d.values()), [k for k, v in d.items() if v == "—"]
    return {k: float(v) if re.fullmatch(r"[0-9.]+", v) else v for k, v in d.items()}


@claims.guards("elementwise.diagnosis.issue-bound")
def test_first_fused_kernel_is_issue_bound_and_rmsnorm_is_not(diag):
    assert diag["derived.elementwise.ncu.fused.issue"] > diag["derived.elementwise.ncu.fused.dram"]
    assert diag["derived.elementwise.ncu.rms.issue"] < 50
    assert diag["derived.elementwise.ncu.fused.instructions"] > 2 * diag["derived.elementwise.ncu.rms.instructions"]


@claims.guards("elementwise.diagnosis.steps")
def test_capping_the_registers_helped(diag):
    assert diag["derived.elementwise.diag.capped_us"] < diag["derived.elementwise.diag.orig_us"]


@claims.guards("elementwise.diagnosis.lean-step")
def test_the_lean_body_cut_instructions_and_time(diag):
    assert diag["derived.elementwise.diag.lean_us"] < diag["derived.elementwise.diag.capped_us"]
    assert diag["derived.elementwise.ncu.lean.instructions"] < diag["derived.elementwise.ncu.fused.instructions"]


@claims.guards("elementwise.diagnosis.dead-ends")
def test_warp_and_pipe_schedules_were_slower(diag):
    assert diag["derived.elementwise.diag.pipe_us"] > diag["derived.elementwise.diag.lean_us"]
    assert diag["derived.elementwise.diag.warp_us"] > diag["derived.elementwise.diag.lean_us"]


@claims.guards("elementwise.diagnosis.vec")
def test_vec_schedule_has_the_quantizers_instruction_count(diag):
    assert diag["derived.elementwise.diag.best"].startswith("vec,")
    assert diag["derived.elementwise.diag.vec_us"] < diag["derived.elementwise.diag.lean_us"]
    assert diag["derived.elementwise.ncu.vec.instructions"] < diag["derived.elementwise.ncu.lean.instructions"]
    assert diag["derived.elementwise.ncu.vec.instructions"] < 1.05 * diag["derived.elementwise.ncu.quant.instructions"]
    fused_dram = [diag[f"derived.elementwise.ncu.{k}.dram"] for k in ("fused", "lean", "vecp")]
    assert diag["derived.elementwise.ncu.vec.dram"] >= max(fused_dram)


@claims.guards("elementwise.diagnosis.vecp-slower")
def test_vecp_ring_was_slower_than_vec(diag):
    assert diag["derived.elementwise.diag.vecp_us"] > diag["derived.elementwise.diag.vec_us"]


@claims.guards("elementwise.diagnosis.lean-neither-full")
def test_the_lean_body_saturates_neither_issue_nor_dram(diag):
    assert diag["derived.elementwise.ncu.lean.issue"] < 80 and diag["derived.elementwise.ncu.lean.dram"] < 80
    assert diag["derived.elementwise.ncu.lean.issue"] < diag["derived.elementwise.ncu.fused.issue"]
