"""Checks on the TileLang primer page (book/ch_primer.md) and its helpers (coursebook/primer.py).

* its place in the book: second chapter of _toc.yml, in the intro's map, referenced by label;
* every glued key exists (``primer.*`` / ``machines.*`` in the ledger, ``rec.*`` among the
  recorded measurements, ``calc.primer.*`` among the values the page derives at build time);
* the prose is long enough, types no decimal and no registry number, names no draft;
* the sections, the exercises with collapsible answers, the references with URLs;
* kernel code is read from the package; the footnotes cite tests that exist;
* the measured section says "not recorded" without records (and shows no number) and shows
  provenance with records; the sentences concluding from records are chosen by them.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from coursebook import claims
from coursebook.pagecheck import CJK, GLUE, typed_decimals, typed_numbers
from coursebook.pagecheck import prose_of as _prose

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "ch_primer.md"
from coursebook.pagecheck import chapter_text  # noqa: E402


def _text() -> str:
    return chapter_text("ch_primer.md")


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(("primer.", "machines."))}


@pytest.fixture(scope="module")
def results():
    from measure.results import load_results

    return load_results("nvidia-h200")


@pytest.fixture(scope="module")
def values(results):
    from coursebook import primer as C

    return C.page_values(results)


# ------------------------------------------------------------------ place in the book
def test_second_chapter_of_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    chapters = [c["file"] for c in toc["parts"][0]["chapters"]]
    assert chapters[:2] == ["book/ch_pytorch_to_kernel", "book/ch_primer"]
    assert _text().count("(ch-primer)=") == 1
    assert PAGE.read_text(encoding="utf-8").count("(ch-primer)=") == 1


def test_intro_map_and_cross_references_use_the_label():
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert "{ref}`ch-primer`" in intro and "正文五章" in intro
    m = re.search(r"^1\. \{ref\}`ch-pytorch-to-kernel`.*?\n2\. \{ref\}`ch-primer`", intro, flags=re.M | re.S)
    assert m, "the intro lists the primer second"
    others = [p for p in (ROOT / "book").rglob("*.md") if p != PAGE and p.parent.name != "primer"]
    assert sum("{ref}`ch-primer`" in p.read_text(encoding="utf-8") for p in others) >= 2
    t = _text()
    for ref in ("ch-pytorch-to-kernel", "ch-elementwise-norm-rope", "ch-gemm", "ch-perf-model"):
        assert "{ref}`" + ref + "`" in t, ref
    assert not re.search(r"第\s*[0-9一二三四五六七八九十]+\s*章", t)


# ------------------------------------------------------------------ numbers
@pytest.mark.slow
def test_every_glue_key_exists(registry, results, values):
    from coursebook.measured import measured_values

    have = set(registry) | set(measured_values(results)) | set(values)
    used = set(GLUE.findall(_text()))
    missing = sorted(used - have)
    assert not missing, f"glued keys nobody provides: {missing}"
    assert any(k.startswith("primer.") for k in used) and any(k.startswith("rec.") for k in used)
    assert any(k.startswith("calc.primer.") for k in used)


def test_page_glues_its_sources():
    t = _text()
    assert 'glue_figures(("primer", "machines"))' in t and 'glue_measured(topic="primer")' in t
    assert "C.page_values_cached()" in t


# problem statements (shapes, configs, bit widths, warp sizes), not results
_SHAPES = {"0", "1", "2", "3", "4", "8", "16", "32", "64", "100", "128", "256", "512", "1024", "2048", "4096",
           "16384", "65536", "262144", "1000003", "2026", "5"}


def test_prose_types_no_registry_number(registry):
    texts = {str(f.text) for f in registry.values() if re.fullmatch(r"[0-9.,]+", str(f.text))}
    typed = typed_numbers(_prose(_text()), texts, _SHAPES)
    assert not typed, f"numbers typed into the prose that the registry holds (glue them): {typed}"


def test_prose_has_no_decimal_number():
    assert not typed_decimals(_prose(_text()))


def test_prose_is_long_enough():
    n = len(CJK.findall(_prose(_text())))
    assert n >= 12000, f"chapter prose has {n} Chinese characters outside code, want >= 12000"


def test_no_bookkeeping_in_the_prose():
    prose = _prose(_text())
    assert "草稿" not in _text()
    assert not re.search(r"measure/results|kernels/results|\.json|tests/", prose), "file paths belong in footnotes or cells"


# ------------------------------------------------------------------ structure
SECTIONS = ("primer-goals", "primer-first", "primer-ledger", "primer-launch", "primer-memory", "primer-parallel", "primer-copy",
            "primer-pipeline", "primer-gemm", "primer-reduce", "primer-compile", "primer-passes", "primer-debug",
            "primer-measure", "primer-pitfalls", "primer-summary", "primer-exercises", "primer-references")


def test_section_numbers_follow_the_outline():
    """The rendered section numbers are the outline's: the landing page has no numbered heading below
    its title, each section page one top-level heading, and the outline lists the pages in order."""
    from coursebook.pagecheck import numbering_problems

    assert numbering_problems("ch_primer.md") == []


def test_every_section_is_there_in_order():
    t = _text()
    pos = [t.index(f"({label})=") for label in SECTIONS]
    assert pos == sorted(pos)


def test_exercises_have_collapsible_answers():
    t = _text()
    body = t[t.index("(primer-exercises)="):t.index("(primer-references)=")]
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    blocks = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    assert sorted(blocks, key=lambda e: int(e[1:])) == [f"E{i}" for i in range(1, len(blocks) + 1)]
    assert len(blocks) >= 8
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), f"{name} has no collapsible answer"
    # numeric answers come from the ledger (primer.*) or from this page's build-time lowerings (calc.primer.*)
    assert sum(("{glue:text}`primer." in b) or ("{glue:text}`calc.primer." in b) for b in blocks.values()) >= 6


def test_references_carry_urls():
    t = _text()
    refs = t[t.index("(primer-references)="):]
    items = [ln for ln in refs.splitlines() if ln.startswith("- ")]
    assert len([ln for ln in items if "<http" in ln or "](http" in ln]) >= 12
    # a link's text tells the links apart (bare GitHub URLs all render as the same shortened text)
    texts = re.findall(r"\[([^\]]+)\]\(https://github\.com/", refs)
    assert len(texts) == len(set(texts)) and not re.search(r"^- .*<https://github\.com/[^>]+/(?:blob|tree)/", refs, re.M)


def test_kernel_code_is_read_from_the_package():
    t = _text()
    for factory in ("P.copy_kernel", "P.scale_kernel", "P.row_sum_kernel", "P.gemm_tile_kernel", "P.mirror_kernel",
                    "P.row_sum_ascend"):
        assert f"C.source_md({factory}" in t, factory


def test_generated_code_is_lowered_at_build_time_and_labelled():
    t = _text()
    assert "lowered on CPU" in t and "在 CPU 上降级" in t
    passes = t[t.index("(primer-passes)="):t.index("(primer-debug)=")]
    assert "C.trace()" in passes and "C.ascend_trace()" in passes and "TL_LOWER_TRACE" in passes
    assert "从未在 NPU 上运行" in passes
    for name in ("ProducerConsumerWarpSpecialized", "LayoutInference", "LowerTileOp"):
        assert name in passes


def test_footnotes_cite_tests_that_exist():
    from coursebook.pagecheck import chapter_pages, page_text

    for page in chapter_pages("ch_primer.md"):  # footnotes are per page
        pt = page_text(page)
        defined = re.findall(r"^\[\^([\w-]+)\]: ", pt, flags=re.M)
        assert sorted(defined) == sorted(set(re.findall(r"\[\^([\w-]+)\](?!:)", pt))), page
    t = _text()
    notes = re.findall(r"^\[\^([\w-]+)\]: (.*)$", t, flags=re.M)
    cited = set(re.findall(r"`(test_\w+)`", " ".join(body for _, body in notes)))
    have = set(re.findall(r"^def (test_\w+)", (ROOT / "tests/kernels/test_primer.py").read_text(encoding="utf-8"),
                          flags=re.M))
    assert cited and not (cited - have), f"footnotes cite missing tests: {sorted(cited - have)}"


def test_every_debugging_cell_really_raises():
    t = _text()
    debug = t[t.index("(primer-debug)="):t.index("(primer-measure)=")]
    assert debug.count("C.attempt(") >= 8


# ------------------------------------------------------------------ measured section
def test_measured_block_without_records_says_so_and_shows_no_number():
    from coursebook import primer as C

    for res in (None, {"suites": {}}, {"suites": {"elementwise": {"records": []}}}):
        text = C.measured_block(res if res is not None else {"suites": {}})
        assert C.NOT_RECORDED in text and "python -m measure.runner --topic primer" in text
        assert not re.search(r"\d+\.\d+", text)


def test_measured_block_with_records_shows_provenance():
    from coursebook import primer as C

    fake = {"runs": [{"file": "nvidia-h200.run30.json", "device": "NVIDIA H200", "date": "2027-01-02T03:04:05Z",
                      "tilelang": "0.1.15", "command": "python -m measure.runner --topic primer"}],
            "suites": {"primer": {"run": "nvidia-h200.run30.json", "records": [
                {"kind": "bench", "name": "copy fp16 n=2^28", "ms": 0.5, "gbps": 2147.0, "frac_copy_bw": 0.5,
                 "speedup": {"torch copy_": 0.6}}]}}}
    text = C.measured_block(fake)
    assert C.NOT_RECORDED not in text and "2027-01-02" in text
    assert "拷贝，fp16，2<sup>28</sup> 个元素" in text and "copy fp16" not in text, "records are named in words"
    assert "500.0" in text and "50.0%" in text and "torch copy_ 0.60×" in text
    prov = C.provenance_md("primer", fake)
    assert "NVIDIA H200" in prov and "2027-01-02" in prov and "附录“测量记录”" in prov
    assert "python -m" not in prov, "the command lives in the records appendix"
    assert C.NOT_RECORDED in C.provenance_md("elementwise", fake)


@pytest.mark.slow
def test_sentences_from_records_hold_for_the_records(results, values):
    """The measuring section says the vectorised add is faster by the recorded ratio and that its
    share of the copy bandwidth is above one hundred percent: the records must agree."""
    t = _text()
    assert "{glue:text}`calc.primer.add.ratio` 倍" in t and float(values["calc.primer.add.ratio"]) > 1
    if "第二行的占比超过了百分之百" in t:
        rec = next(r for r in results["suites"]["elementwise"]["records"]
                   if r.get("kind") == "bench" and r["name"].startswith("add[per_thread]"))
        assert rec["frac_copy_bw"] > 1
    assert "C.provenance_md(\"elementwise\")" in t


@pytest.mark.slow
def test_page_values_match_the_lowerings(values):
    assert values["calc.primer.ws.threads_before"] == "128" and values["calc.primer.ws.threads_after"] == "256"
    assert values["calc.primer.layout.xf_per_thread"] == "64" and values["calc.primer.layout.acc_replicate"] == "16"
    assert values["calc.primer.scale.npt8_load"] == "uint4" and values["calc.primer.scale.npt4_load"] == "uint2"
    assert int(values["calc.primer.big.smem"]) > 227 * 1024
    assert abs(float(values["calc.primer.big.smem_kib"]) * 1024 - int(values["calc.primer.big.smem"])) < 52
    assert values["calc.primer.big.stage_kib"] == "128"
    assert int(values["calc.primer.trace.changed"]) < int(values["calc.primer.trace.passes"])
    assert values["calc.primer.asc.x_versions"] == "2"


def test_kib_keeps_the_half():
    from coursebook import primer as C

    assert C.kib(393728) == "384.5" and C.kib(131072) == "128" and C.kib(1536) == "1.5"


# ------------------------------------------------------------------ the primer suite's record
def _fake_primer(copy_ms=0.6, torch_ms=0.3, scale_frac=0.97, gemm_ok=(True, False, True), no_ws=None):
    """A merged-results dict holding one primer run, with the values a test sets."""
    bench = lambda name, ms, frac, base, tgt=None, cfg=None: {  # noqa: E731
        "kind": "bench", "name": name, "ms": ms, "frac_copy_bw": frac, "gbps": 1000.0 * frac,
        "baselines": base, "speedup": {k: v / ms for k, v in base.items()}, "config": cfg or {},
        "targets": {"frac_copy_bw": {"target": tgt, "value": frac, "met": frac >= tgt}} if tgt else None}
    recs = [bench("copy fp16 n=2^28", copy_ms, 0.37, {"torch copy_": torch_ms}),
            bench("scale fp16 n=2^28", 0.26, scale_frac, {"eager": 0.26}, 0.95),
            bench("row_sum fp16 16384x4096", 0.05, 0.63, {"eager": 0.046}, 0.85, {"split": 1}),
            bench("row_sum[registers] fp16 16384x4096", 0.047, 0.67, {"eager": 0.047}, None, {"split": 1}),
            bench("row_sum fp16 256x262144", 0.83, 0.04, {"eager": 0.054}, None, {"split": 1}),
            bench("row_sum[split] fp16 256x262144", 0.05, 0.63, {"eager": 0.054}, 0.85, {"split": 32})]
    names = ("a_in=shared b_in=shared", "a_in=fragment b_in=shared", "a_in=shared b_in=fragment")
    recs += [{"kind": "check", "name": f"gemm_tile {n}", "shape": [256, 384], "numel": 98304, "ok": ok,
              "max_abs_err": 1e-4 if ok else 48.6, "mismatched": 0 if ok else 36207} for n, ok in zip(names, gemm_ok)]
    if no_ws is not None:
        recs.append({"kind": "check", "name": "gemm_tile a_in=fragment b_in=shared no_ws", "shape": [256, 384],
                     "numel": 98304, "ok": no_ws, "max_abs_err": 1e-4 if no_ws else 40.0,
                     "mismatched": 0 if no_ws else 30000})
    return {"runs": [{"file": "x.run1.json", "device": "NVIDIA H200", "date": "2027-01-02T00:00:00Z",
                      "copy_bandwidth_gbps": 4260.4}],
            "suites": {"primer": {"run": "x.run1.json", "records": recs}}}


def test_record_claims_follow_the_record():
    """Every sentence about the primer's record is chosen by it: change a value, the words change."""
    from coursebook import claims as K
    from coursebook import primer as C

    def cases(res):
        return {c.key: c.case for c in C.record_claims(res)}

    base = cases(_fake_primer())
    assert base["claim.primer.copy.vs_torch"] == "higher" and base["claim.primer.scale.target"] == "above"
    assert base["claim.primer.gemm.checks"] == "some" and base["claim.primer.gemm.no_ws"] == "missing"
    assert base["claim.primer.long.split"] == "lower"
    assert cases(_fake_primer(copy_ms=0.2))["claim.primer.copy.vs_torch"] == "lower"
    assert cases(_fake_primer(scale_frac=0.8))["claim.primer.scale.target"] == "below"
    assert cases(_fake_primer(gemm_ok=(True, True, True)))["claim.primer.gemm.checks"] == "all"
    assert cases(_fake_primer(no_ws=True))["claim.primer.gemm.no_ws"] == "ok"
    assert cases(_fake_primer(no_ws=False))["claim.primer.gemm.no_ws"] == "fail"
    text = {c.key: c.text for c in C.record_claims(_fake_primer())}["claim.primer.gemm.checks"]
    assert "“A 在 fragment”这种放法没有算对" in text and "48.6" in text and "36207" in text and "$" not in text
    # no record: every claim says it cannot judge, the values are dashes, the block says so
    assert all(c.text == K.UNKNOWN for c in C.record_claims({"suites": {}}))
    assert set(C.record_values({"suites": {}}).values()) == {"—"}
    assert "尚无记录" in C.checks_line({"suites": {}})
    line = C.checks_line(_fake_primer())
    assert "4 项中 3 项通过" not in line and "3 项中 2 项通过" in line and "单块矩阵乘（A 在 fragment）" in line
    assert "a_in=" not in line and "gemm_tile" not in line, "a failed check is named in words, not by its label"


def test_scopes_table_speaks_chinese_outside_code():
    from coursebook import primer as C

    table = C.scopes_table()
    spans = re.findall(r"`([^`]*)`", table)
    assert spans and all(re.fullmatch(r"T\.\w+", x) for x in spans), spans  # code is code, words are Chinese
    words = set(re.findall(r"[A-Za-z]{3,}", re.sub(r"`[^`]*`", "", table)))
    assert words <= {"TileLang", "fragment", "local", "shared", "global", "block", "HBM", "KiB", "MiB"}, words


def test_record_labels_read_as_words():
    """The record table and the checks line name a record by what it is, not by the suite's label."""
    from coursebook import primer as C
    from coursebook.leaks import find_leaks

    cases = {("row_sum[split] fp16 256x262144", (("split", 32), ("via", "shared"))):
             "行求和（经共享内存，列切成 32 段），fp16，256×262144",
             ("row_sum[registers] fp16 16384x4096", (("split", 1), ("via", "registers"))):
             "行求和（跳过共享内存、直接读进寄存器，不切分），fp16，16384×4096",
             ("scale npt=4", ()): "缩放（每线程 4 个元素）",
             ("gemm_tile a_in=fragment b_in=shared no_ws", ()): "单块矩阵乘（A 在 fragment，关闭 warp 专门化）"}
    for (name, cfg), words in cases.items():
        got = C.record_label(name, dict(cfg))
        assert got == words, (name, got)
        assert not find_leaks(got) and not re.search(r"[a-z_]+=\d|\[\w+\]", got), got


def test_record_values_from_the_record():
    from coursebook import primer as C

    v = C.record_values(_fake_primer())
    assert v["calc.primer.rec.scale_target_pct"] == "95" and v["calc.primer.rec.rowsum_target_pct"] == "85"
    assert v["calc.primer.rec.long_speedup"] == "16.6" and v["calc.primer.rec.date"] == "2027-01-02"
    assert v["calc.primer.rec.device"] == "NVIDIA H200"
    assert v["calc.primer.rec.copy_gbps"] == "4260", "the measured copy bandwidth is the run's, not the calibration's"


def test_memory_page_separates_calibrated_and_measured_copy_rates():
    """The page gives the model's calibrated pure-copy rate and the measured device copy bandwidth, each
    glued and each named for what it is, and the two are different sources."""
    t = (ROOT / "book" / "primer" / "memory.md").read_text(encoding="utf-8")
    i, j = t.find("`primer.mem.hbm_copy_gbs`"), t.find("`calc.primer.rec.copy_gbps`")
    assert 0 <= i < j, "both rates are glued in the scopes list"
    assert "标定" in t[i - 40:i] and "实测" in t[i:j]


@claims.guards("primer.gemm.rs-layout")
def test_the_recorded_gemm_checks_are_those_the_page_explains(results):
    """The T.gemm section explains one placement that computed a wrong tile on the GPU (A in a register
    fragment) and contrasts it with both operands in shared memory: the record must say exactly that."""
    from coursebook import primer as C

    got = {k: C._check(results, f"gemm_tile {k}") for k in C.GEMM_PLACEMENTS}
    assert all(got.values()), "the record lacks a T.gemm placement check"
    assert not got["a_in=fragment b_in=shared"]["ok"]
    assert got["a_in=shared b_in=shared"]["ok"] and got["a_in=shared b_in=fragment"]["ok"]
    assert "% claim: primer.gemm.rs-layout" in _text() and "claim.primer.gemm.checks" in _text()


@pytest.mark.slow
def test_the_page_glues_the_record_sentences(results, values):
    """The measured section glues each recorded fact, and with the committed record no glued claim or
    value of the record is missing."""
    from coursebook.claims import UNKNOWN
    from coursebook.measured import measured_values

    t = _text()
    rec = measured_values(results)
    for key in ("rec.copy-fp16-n-2-28.pct_copy", "rec.copy-fp16-n-2-28.x.torch-copy", "rec.scale-fp16-n-2-28.pct_copy",
                "rec.row-sum-fp16-16384x4096.pct_copy", "rec.row-sum-fp16-16384x4096.x.eager",
                "rec.row-sum-registers-fp16-16384x4096.pct_copy", "rec.row-sum-fp16-256x262144.pct_copy",
                "rec.row-sum-split-fp16-256x262144.pct_copy", "rec.row-sum-split-fp16-256x262144.x.eager"):
        assert f"{{glue:text}}`{key}`" in t and key in rec, key
    used = [k for k in GLUE.findall(t) if k.startswith(("claim.primer.", "calc.primer.rec."))]
    assert len(set(used)) >= 12
    assert all(values[k] not in (UNKNOWN, "—") for k in used), {k: values[k] for k in used}
    assert "尚无记录结果" not in t and "not yet recorded" not in t
