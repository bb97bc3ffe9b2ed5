"""Checks on the GEMM chapter's page (book/ch_gemm.md) and its helpers (coursebook.gemm_ladder, .tiles, ...).

* every glued key exists: registry figures (gemm/perfmodel/machines), measured values of the
  recorded results (rec.*), and the page's derived values (calc.gemm.*, derived.gemm.*);
* the prose types no decimal and no registry number (numbers are glued), is long enough
  and repeats no draft (../shared/tools/prose_overlap.py);
* every section the chapter promises is there; exercises have collapsible answers;
  references carry URLs; kernel code is read from the package, not retyped;
* the helpers: figures draw, tables say "no recorded result" without results, the fp8
  section reads whatever fp8 records exist (verdicts not fixed in the text), the lowered
  evidence of a rung names its instruction path.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "ch_gemm.md"
PREFIXES = ("gemm", "perfmodel", "machines")
from coursebook.pagecheck import CJK, GLUE, typed_decimals, typed_numbers  # noqa: E402
from coursebook.pagecheck import prose_of as _prose  # noqa: E402


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(PREFIXES)}


@pytest.fixture(scope="module")
def results():
    from coursebook import records

    return records.load()


def _page_values(results):
    """Every value the page's setup cell glues besides the registry and the measured values."""
    from coursebook import gemm_ladder, ncu, tiles

    return {**tiles.exercise_values(), **tiles.splitk_values(results), **tiles.streamk_values(results),
            **tiles.variant_values(results), **gemm_ladder.pipeline_values(), **gemm_ladder.tuned_values(results),
            **gemm_ladder.replicate_values(results), **gemm_ladder.fp8_values(results), **ncu.gemm_values()}


def test_every_glue_key_exists(registry, results):
    from coursebook.measured import measured_values

    used = set(GLUE.findall(_text()))
    assert used, "the page glues nothing"
    known = set(registry) | set(_page_values(results))
    if results is not None:
        known |= set(measured_values(results))
    rec_used = {k for k in used if k.startswith("rec.")}
    missing = sorted(k for k in used - known if not (results is None and k in rec_used))
    assert not missing, f"glued keys nobody provides: {missing}"


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


def test_no_hard_coded_chapter_numbers():
    prose = _prose(_text())
    assert not re.search(r"第\s*\d+\s*章", prose), "cross-reference chapters by label, not by number"


def test_every_section_is_there():
    t = _text()
    for label in ("ch-gemm", "gemm-goals", "gemm-ledger", "gemm-tiled", "gemm-budget", "gemm-waves", "gemm-errata",
                  "gemm-ladder", "gemm-rung1", "gemm-rung2", "gemm-rung3", "gemm-rung4", "gemm-rung5",
                  "gemm-lowered", "gemm-ladder-measured", "gemm-tuning", "gemm-variants", "gemm-splitk",
                  "gemm-streamk", "gemm-grouped", "gemm-batched", "gemm-lowp", "gemm-fp8", "gemm-w4a16",
                  "gemm-support", "gemm-ascend", "gemm-protocol", "ch-gemm-measured", "gemm-pitfalls",
                  "gemm-summary", "gemm-exercises", "gemm-references", "gemm-numbers"):
        assert f"({label})=" in t, label
    for ref in ("ch-pytorch-to-kernel", "ch-elementwise-norm-rope", "ch-perf-model"):
        assert "{ref}`" + ref + "`" in t, ref


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
    t = _text()
    body = t[t.index("(gemm-exercises)="):t.index("(gemm-references)=")]
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    blocks = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    assert len(blocks) >= 8
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), name
    numeric = [n for n, b in blocks.items() if "{glue:text}`" in b]
    assert len(numeric) >= len(blocks) - 2, f"answers without a glued number: {sorted(set(blocks) - set(numeric))}"


def test_references_carry_urls():
    t = _text()
    refs = t[t.index("(gemm-references)="):t.index("(gemm-numbers)=")]
    items = [ln for ln in refs.splitlines() if ln.startswith("- ")]
    assert len([ln for ln in items if "<http" in ln]) >= 15


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
               records.verdict_table(empty), records.variant_summary(empty, "grouped", "gemm.grouped"),
               gemm_ladder.audit_table(empty)):
        assert records.NO_RESULT in md
        assert not re.search(r"\d+\.\d+", md)
    vals = _page_values(None)
    assert vals["derived.gemm.cublas.s4096.tflops"] == records.DASH and vals["calc.gemm.splitk.s1.grid"].isdigit()


def test_fp8_section_reads_any_fp8_record():
    """A later run may add a promoted-accumulation fp8 kernel: it must show up without a page edit."""
    from coursebook import gemm_ladder as f14

    def rec(name, ok, err):
        return [{"kind": "check", "name": name, "ok": ok, "max_abs_err": 1.0, "rel_fro_err": err, "mismatched": 0 if ok else 7},
                {"kind": "bench", "name": name, "tflops": 1000.0, "shape": [4096, 4096, 4096],
                 "speedup": {"torch._scaled_mm": 1.0}, "rel_fro_err": err}]

    fake = {"suites": {"gemm.lowp": {"records": [
        {"kind": "check", "name": "torch._scaled_mm 4096^3", "ok": True, "max_abs_err": 1.0, "rel_fro_err": 1.6e-3},
        *rec("fp8 e4m3 4096^3", False, 2.1e-3),
        *rec("fp8 e4m3 promoted 4096^3", True, 1.6e-3),
    ]}}}
    md = f14.fp8_section(fake)
    assert "fp8 e4m3 promoted 4096^3" in md and "未通过（7" in md
    assert "误差高于同形状" in md and "相当或更低的有：`fp8 e4m3 promoted 4096^3`" in md


def test_verdicts_come_from_the_records():
    from coursebook import records as f14

    fake = {"suites": {"gemm.ladder": {"records": [
        {"kind": "bench", "name": "tuned rung4 8192^3", "targets": {"speedup:cuBLAS": {"target": 1.0, "value": 0.99, "met": False}}},
    ]}}}
    md = f14.verdict_table(fake)
    assert "未达到" in md and "0.990" in md
    fake["suites"]["gemm.ladder"]["records"][0]["targets"]["speedup:cuBLAS"].update(value=1.01, met=True)
    assert "| 达到 |" in f14.verdict_table(fake)
    # the prose never states a verdict itself
    prose = _prose(_text())
    assert "未达到目标" not in prose and "达到了目标" not in prose


def test_errata_table_reads_the_ledger():
    from coursebook import errata as E
    from ledger.errata import errata

    md = E.errata_reasons_table("gemm.")
    mine = [e for e in errata() if e.key.startswith("gemm.")]
    if mine:
        assert all(f"`{e.figure}`" in md for e in mine)
    else:
        assert "没有登记本章的勘误" in md


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
    """The page says the `_inferred` candidates compile to the same CUDA as their annotated twins."""
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
