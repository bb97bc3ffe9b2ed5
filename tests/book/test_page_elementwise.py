"""Checks on chapter 13's page (book/ch_elementwise_norm_rope.md) and its helpers.

* every glued key exists: ``elementwise.*`` in the ledger's figures registry, ``rec.*`` among the
  recorded measurements, ``derived.elementwise.*`` / ``calc.elementwise.*`` / ``derived.elementwise.ascend.*`` among the values the
  page's helpers derive from the records, the ledger and the Ascend capture index;
* the prose types no decimal number and no registry number (numbers are glued);
* the prose is long enough and repeats no draft (../shared/tools/prose_overlap.py);
* the sections are there, the exercises have collapsible answers, the references URLs;
* kernel code on the page is read from the package, the measured section says the
  numbers are recorded, and the verdicts are read from the records, not typed;
* the figures draw, and the measured helpers degrade to "no recorded result".
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "ch_elementwise_norm_rope.md"
from coursebook.pagecheck import CJK, GLUE, typed_decimals, typed_numbers  # noqa: E402
from coursebook.pagecheck import prose_of as _prose  # noqa: E402


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith("elementwise.")}


@pytest.fixture(scope="module")
def results():
    from measure.results import load_results

    return load_results("nvidia-h200")


@pytest.fixture(scope="module")
def derived(results):
    from coursebook import ascend, budgets, ncu, records
    from coursebook.measured import measured_values

    return {**measured_values(results), **records.elementwise_values(results), **budgets.fusion_exercise_values(),
            **ascend.ascend_values(), **ncu.rows_values(results), "derived.elementwise.provenance": "x"}


def test_every_glue_key_exists(registry, derived):
    used = set(GLUE.findall(_text()))
    assert used, "the page glues nothing"
    missing = sorted(k for k in used if k not in registry and k not in derived)
    assert not missing, f"glued keys nobody provides: {missing}"
    assert any(k.startswith("elementwise.") for k in used) and any(k.startswith("rec.") for k in used)


# Numbers that are problem statements (shapes, sizes, bit widths), not results.
_SHAPES = {"1", "2", "3", "4", "8", "16", "32", "64", "128", "256", "1024", "2047", "4096", "16384",
           "65536", "90", "0"}


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


def test_no_hard_coded_chapter_number():
    assert not re.search(r"第\s*[0-9一二三四五六七八九十]+\s*章", _text())


SECTIONS = ("elementwise-goals", "elementwise-ledger", "elementwise-errata", "elementwise-model", "elementwise-elementwise", "elementwise-quant",
            "elementwise-norm", "elementwise-rope", "elementwise-fused", "elementwise-compiler", "elementwise-ascend", "elementwise-measured",
            "elementwise-pitfalls", "elementwise-summary", "elementwise-exercises", "elementwise-references", "elementwise-numbers")


def test_every_section_is_there():
    t = _text()
    assert t.count("(ch-elementwise-norm-rope)=") == 1
    for label in SECTIONS:
        assert f"({label})=" in t, label
    for ref in ("ch-pytorch-to-kernel", "ch-perf-model"):
        assert "{ref}`" + ref + "`" in t, ref


def test_fusion_ledger_and_errata_are_shown():
    t = _text()
    for key in ("scale_add", "rmsnorm", "layernorm", "rope", "rmsnorm_rope_fp8"):
        assert "{glue:text}`elementwise.fusion." + key + ".ratio`" in t, key
    block = t[t.index("(elementwise-errata)="):t.index("(elementwise-model)=")]
    assert "```{admonition}" in block and "elementwise.erratum.layernorm_unfused_mb.draft" in block


def test_kernel_code_on_the_page_resolves_to_the_package():
    """Every excerpt the page shows (``show_source(X.name, first, last)``) names a factory or macro
    of the course's packages whose source can be read, and its excerpt markers are in that source
    (a moved or renamed kernel fails here, not as a silently whole-factory excerpt)."""
    import importlib
    import inspect

    t = _text()
    aliases = {}
    for mod, name, alias in re.findall(r"^from ([\w.]+) import (\w+) as (\w+)$", t, flags=re.M):
        aliases[alias] = f"{mod}.{name}"
    calls = re.findall(r'show_source\((\w+)\.(\w+)(?:, "([^"]+)", "([^"]+)")?\)', t)
    assert len(calls) >= 10, calls
    for alias, attr, first, last in calls:
        obj = getattr(importlib.import_module(aliases[alias]), attr)
        fn = getattr(getattr(obj, "func", obj), "orig_func", getattr(obj, "func", obj))
        src = inspect.getsource(fn)
        assert fn.__module__.startswith("kernels."), (alias, attr, fn.__module__)
        if first:
            assert first in src and last in src[src.index(first):], (alias, attr, first, last)


def test_compiler_section_lowers_on_cpu_and_cites_the_tests():
    """The compiler section is labelled as CPU lowering, shows generated source, and backs its
    claims with tests (that the cited tests exist is checked below)."""
    block = _text()[_text().index("(elementwise-compiler)="):_text().index("(elementwise-ascend)=")]
    assert "lowered on CPU" in block and "在 CPU 上降级" in block
    assert ".get_kernel_source()" in block
    assert len(set(re.findall(r"(test_[a-z0-9_]+)", block))) >= 5


def test_cited_tests_exist():
    names = set(re.findall(r"(test_[a-z0-9_]+)", _text()))
    have = {"test_asserts"}
    for f in (ROOT / "tests" / "kernels").glob("test_*.py"):
        have.add(f.stem)
        have |= set(re.findall(r"^def (test_\w+)", f.read_text(encoding="utf-8"), flags=re.M))
    assert names, "the page cites no test"
    missing = sorted(n for n in names if n not in have)
    assert not missing, f"the page cites tests that do not exist: {missing}"


def test_ascend_section_is_labelled_cpu_only():
    block = _text()[_text().index("(elementwise-ascend)="):_text().index("(elementwise-measured)=")]
    assert "从未在 NPU 上运行" in block and "derived.elementwise.ascend.label" in block
    # the book build reads the committed captures; it never lowers (a compile at build time)
    assert "lower=False" in block


def test_measured_section_reads_verdicts_from_the_records():
    block = _text()[_text().index("(elementwise-measured)="):_text().index("(elementwise-pitfalls)=")]
    assert "recorded" in block
    assert "derived.elementwise.targets.met_list" in block and "derived.elementwise.targets.missed_list" in block
    assert "derived.elementwise.fused_fp8.byte_ratio" in block and "x.3-tilelang-kernels" in block
    # verdicts are glued, never asserted in fixed words about a named kernel
    assert not re.search(r"(rmsnorm|layernorm|quant|rope|fused)[^。\n]{0,40}(达标了|没有达标|未能达标)", _prose(block))


def test_exercises_have_collapsible_answers():
    body = _text()[_text().index("(elementwise-exercises)="):_text().index("(elementwise-references)=")]
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    blocks = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    assert len(blocks) >= 6, sorted(blocks)
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), f"{name} has no collapsible answer"
    assert sum("calc.elementwise." in b for b in blocks.values()) >= 5, "numeric answers should be glued from the ledger"


def test_references_carry_urls():
    refs = _text()[_text().index("(elementwise-references)="):_text().index("(elementwise-numbers)=")]
    items = [ln for ln in refs.splitlines() if ln.startswith("- ")]
    assert len([ln for ln in items if "<http" in ln]) >= 12


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
    from coursebook import records as f13

    assert f13.targets_table({"suites": {}}).startswith("| kernel")  # empty records: header only
    extras = f13.elementwise_values({"suites": {}})
    assert extras["derived.elementwise.targets.total"] == "0" and extras["derived.elementwise.fused_fp8.byte_ratio"] == "—"
    fig = f13.measured_copy_fraction({"suites": {}})
    assert any(t.get_text() == f13.NO_RESULT for ax in fig.axes for t in ax.texts)


def test_verdicts_follow_the_records():
    from coursebook import records as f13

    fake = {"suites": {"norm": {"records": [
        {"kind": "bench", "name": "rmsnorm[rows] fp16 8x8", "ms": 0.01, "frac_copy_bw": 0.5,
         "targets": {"frac_copy_bw": {"target": 0.85, "value": 0.5, "met": False}}},
        {"kind": "bench", "name": "layernorm[rows] fp16 8x8", "ms": 0.01, "frac_copy_bw": 0.9,
         "targets": {"frac_copy_bw": {"target": 0.85, "value": 0.9, "met": True}}},
    ]}}}
    v = f13.elementwise_values(fake)
    assert v["derived.elementwise.targets.total"] == "2" and v["derived.elementwise.targets.met"] == "1"
    assert "rmsnorm[rows]" in v["derived.elementwise.targets.missed_list"] and "layernorm[rows]" in v["derived.elementwise.targets.met_list"]
    assert "未达标" in f13.targets_table(fake)


def test_exercise_values_come_from_the_ledger():
    from coursebook import budgets
    from ledger import fusion as F

    v = budgets.fusion_exercise_values()
    assert v["calc.elementwise.e1.fp16_ratio"] == f"{F.scale_add(dtype='fp16').ratio:.2f}"
    assert v["calc.elementwise.e3.frag2_kib"] == f"{F.fragment_kib((2, 4096)):.0f}"
    assert float(v["calc.elementwise.e8.ratio"]) > 1


def test_errata_table_lists_the_ledger_errata():
    from coursebook import errata as E
    from ledger.errata import errata

    table = E.errata_table("elementwise")
    for e in errata():
        if e.key.startswith("elementwise."):
            assert e.figure in table


def test_fused_diagnosis_reads_the_records_and_the_ncu_run(results):
    from coursebook import ncu

    d = ncu.rows_values(results)
    # every value the passage quotes is present (no "—") with the results in the repository
    assert all(v != "—" for v in d.values()), [k for k, v in d.items() if v == "—"]
    # the passage's claims, checked on the data it glues
    assert float(d["derived.elementwise.ncu.fused.issue"]) > float(d["derived.elementwise.ncu.fused.dram"])  # issue-bound
    assert float(d["derived.elementwise.ncu.lean.instructions"]) < float(d["derived.elementwise.ncu.fused.instructions"])
    assert float(d["derived.elementwise.ncu.rms.issue"]) < 50
    assert float(d["derived.elementwise.diag.capped_us"]) < float(d["derived.elementwise.diag.orig_us"])
    assert float(d["derived.elementwise.diag.pipe_us"]) > float(d["derived.elementwise.diag.lean_us"])
    assert float(d["derived.elementwise.diag.warp_us"]) > float(d["derived.elementwise.diag.lean_us"])
    # the vec schedule: the fastest searched, fewer instructions per element than the lean body,
    # about as few as the quantizer alone; neither the cp.async ring nor the L1 prefetch beat it
    assert d["derived.elementwise.diag.best"].startswith("vec,")
    assert float(d["derived.elementwise.diag.vec_us"]) < float(d["derived.elementwise.diag.lean_us"])
    assert float(d["derived.elementwise.ncu.vec.instructions"]) < float(d["derived.elementwise.ncu.lean.instructions"])
    assert float(d["derived.elementwise.ncu.vec.instructions"]) < 1.05 * float(d["derived.elementwise.ncu.quant.instructions"])
    assert float(d["derived.elementwise.diag.vecp_us"]) > float(d["derived.elementwise.diag.vec_us"])
    # "no distinguishable difference": within 2 % either way
    assert abs(float(d["derived.elementwise.diag.vecpf_us"]) / float(d["derived.elementwise.diag.vec_us"]) - 1) < 0.02
    # with no data every key falls back to a dash instead of failing the build
    empty = ncu.rows_values({"suites": {}}, {"kernels": {}})
    assert set(empty) == set(d)
    constants = {"derived.elementwise.ncu.fused.cfg", "derived.elementwise.ncu.lean.cfg", "derived.elementwise.ncu.vec.cfg", "derived.elementwise.ncu.vecp.cfg",
                 "derived.elementwise.diag.warp_elems", "derived.elementwise.diag.pipe_consumers", "derived.elementwise.diag.vec_elems"}
    assert {v for k, v in empty.items() if k not in constants} == {"—"}
    assert all(empty[k] == d[k] for k in constants)  # code constants, not measurements


def test_norm_bounds_and_fused_pricing_follow_the_records(results):
    """The same-bytes copy bound of the norms and the two pricings of the fused FP8 kernel."""
    from coursebook import records as f13

    e = f13.elementwise_values(results)
    # RMSNorm: even a kernel as fast as the copy could not reach the torch.compile target
    assert float(e["derived.elementwise.rms.bound_compile"]) < float(e["derived.elementwise.rms.target_compile"])
    rms = next(r for s in results["suites"].values() for r in s["records"]
               if r.get("kind") == "bench" and r["name"].startswith("rmsnorm[rows]"))
    copy_pct = 100 * rms["bytes"] / (float(e["derived.elementwise.rms.copy_us"]) * 1e-6) / 1e9 / rms["copy_gbps"]
    assert float(e["derived.elementwise.rms.need_pct"]) > copy_pct  # faster than copying the same bytes
    assert float(e["derived.elementwise.ln.bound_compile"]) > float(e["derived.elementwise.rms.bound_compile"])
    # the kernel reads fp32 tables: more bytes than the bf16-table pricing, a higher share
    assert float(e["derived.elementwise.fused_fp8.mb"]) > float(e["derived.elementwise.fused_fp8.mb_bf16_tables"])
    fused = next(r for s in results["suites"].values() for r in s["records"]
                 if r.get("kind") == "bench" and r["name"].startswith("fused rmsnorm+rope+fp8"))
    assert float(e["derived.elementwise.fused_fp8.pct_bf16_tables"]) < 100 * fused["frac_copy_bw"]
