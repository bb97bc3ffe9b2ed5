"""The appendix of measurement records (coursebook.runlog): every recorded label is explained,
every timed kernel, search and declared repeat is listed, headers are Chinese."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from coursebook import runlog
from measure.results import load_results, manifest, records

RES = load_results("nvidia-h200")


def _labels() -> set[str]:
    out = set()
    for r in records(RES, "search"):
        out |= set((r.get("ms") or {}).keys()) | {r.get("best") or ""}
    return {x for x in out if x}


@pytest.mark.parametrize("label", sorted(_labels()))
def test_every_token_of_every_recorded_label_is_explained(label):
    words = runlog.explain(label).split("；")
    toks = runlog._tokens(label)
    assert len(words) == len(toks)
    unknown = [t for t, w in zip(toks, words) if t == w]
    assert not unknown, f"{label}: tokens without an explanation {unknown}"


def test_explain_reads_a_gemm_label():
    text = runlog.explain("128x256x64_s4_t256_p8_ws_e128_if0_pers_c2")
    for part in ("输出分块 128×256", "4 级流水", "256 个线程", "warp 专门化", "保留 0 批", "persistent", "2 个线程块组成一个簇"):
        assert part in text


def test_legend_explains_each_token_once():
    legend = runlog.legend_markdown()
    rows = [ln for ln in legend.splitlines()[2:]]
    assert len(rows) == len(runlog.TOKENS)
    assert all(re.search(r"[\u4e00-\u9fff]", ln) for ln in rows)
    # every row shows an example token, never the pattern behind it or an unfilled placeholder
    assert not [ln for ln in rows if "\\" in ln or "{0}" in ln], [ln for ln in rows if "\\" in ln or "{0}" in ln]


@pytest.mark.parametrize("topic", ["pytorch", "elementwise", "gemm", "perfmodel"])
def test_bench_table_lists_every_timed_kernel_of_the_topic(topic):
    table = runlog.bench_markdown(topic)
    names = [r["name"] for r in records(RES, "bench") if any(r["suite"] == s or r["suite"].startswith(s + ".")
                                                              for s in runlog.topic_suites(topic))]
    assert names
    for n in names:
        assert f"| {n.replace('|', chr(92) + '|')} |" in table, n
    assert table.splitlines()[0].startswith("| 测量项 | 时间 (µs)")


def test_searches_list_every_candidate_and_the_winner_in_words():
    text = runlog.searches_markdown("gemm")
    for r in records(RES, "search"):
        if not r["suite"].startswith("gemm."):
            continue
        assert f"胜出：`{r['best']}`，读作：{runlog.explain(r['best'])}" in text
        for cand in r["ms"]:
            assert f"| `{cand}` |" in text


def test_the_two_w4a16_search_pages_split_its_searches_between_them():
    """The W4A16 searches fill two appendix pages (decode shapes; the other shapes and the probes): every
    search on exactly one of them, as the pages call runlog."""
    pages = {p: (Path(__file__).resolve().parents[2] / "book/appendix/records" / p).read_text()
             for p in ("gemm_w4a16_searches.md", "gemm_w4a16_probes.md")}
    pats = [re.search(r'names=r"([^"]+)"', t).group(1) for t in pages.values()]
    texts = [runlog.searches_markdown("gemm", suites=("gemm.w4a16",), names=p) for p in pats]
    found = [r["name"] for r in records(RES, "search") if r["suite"] == "gemm.w4a16"]
    assert found and any(" probe " in n for n in found) and any(n.startswith("w4a16 16x") for n in found)
    for n in found:
        assert sum(f"**{n}**" in t for t in texts) == 1, n


def test_repeats_list_every_declared_run():
    text = runlog.repeats_markdown()
    declared = manifest()["nvidia-h200"]["repeats"]
    for exp, files in declared.items():
        assert f"**{runlog.REPEAT_TITLES[exp]}**" in text, exp
        for f in files:
            assert f"| {runlog.run_number(f)} |" in text
    assert " probe " not in text  # timing probes are not repeats of a winner


def test_the_two_pages_of_repeats_split_the_declared_experiments():
    declared = manifest()["nvidia-h200"]["repeats"]
    main, variants = runlog.repeats_markdown(part="main"), runlog.repeats_markdown(part="variants")
    for exp in declared:
        on_variants = exp.split(" ")[0] in runlog.VARIANT_REPEAT_SUITES
        title = f"**{runlog.REPEAT_TITLES[exp]}**"
        assert (title in variants) == on_variants and (title in main) != on_variants, exp
    assert any(e.split(" ")[0] in runlog.VARIANT_REPEAT_SUITES for e in declared)
    with pytest.raises(ValueError, match="part must be"):
        runlog.repeats_markdown(part="other")


def test_runs_table_names_every_input_and_what_the_book_takes_from_it():
    text = runlog.runs_markdown()
    for run in RES["runs"]:
        assert f"| {runlog.run_number(run['file'])} |" in text
    for name, suite in RES["suites"].items():
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {runlog.run_number(suite['run'])} |"))
        assert name in row


def test_every_run_has_its_own_name_in_the_tables():
    """Runs recorded on a helper branch keep their recorded name; no two runs share a row name."""
    names = [runlog.run_number(r["file"]) for r in RES["runs"]]
    assert "—" not in names and len(set(names)) == len(names), names
    assert runlog.run_number("raw/nvidia-h200.run19.json") == "19"
    assert runlog.run_number("raw/nvidia-h200.gemmvar4.json") == "gemmvar4"


def test_a_run_of_several_runner_calls_lists_each_command():
    text = runlog.runs_markdown()
    import json

    from measure.results import RESULTS_DIR

    for run in RES["runs"]:
        data = json.loads((RESULTS_DIR / run["file"]).read_text(encoding="utf-8"))
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {runlog.run_number(run['file'])} |"))
        for s in data["suites"].values():
            if s.get("command"):
                assert s["command"] in row, (run["file"], s["command"])


def test_explain_reads_the_variant_labels():
    w4 = runlog.explain("m64_k128_s4_w8_n_c2_kp_mma_x64")
    for part in ("64 行激活", "沿 K 读入 128", "4 级流水", "8 级环形缓冲", "沿 N 分工", "2 个线程块组成一个簇",
                 "沿 K 分摊", "mma.sync", "按 64 个 K 分段"):
        assert part in w4, part
    sk = runlog.explain("ws s=4 128x256 st4 e64 c2")
    assert sk.split("；")[:3] == [runlog.explain("ws"), "沿 K 切成 4 段（split-K），各段的 fp32 部分和最后归并",
                                  "输出分块 128×256（block_M×block_N）"]
    assert "整块输出一次" in runlog.explain("ws 128x128 st6 e0 p8")
    assert "沿 K 分工" in runlog.explain("m16_k512_s4_k") and "沿 N 分工" in runlog.explain("m256_k64_s4_n")


def test_explain_reads_the_moved_pdl_signal_and_the_tail_staging():
    text = runlog.explain("dp+sk 128x128 st6 e64 p0 pdl@end fr4 fv te32").split("；")
    assert text[5] == "修正 kernel 以程序化依赖启动，但 stream-K kernel 的各消费者写完尾部各段之后才放行"
    assert text[-1] == "尾部各段的 fp32 部分和每次暂存并写回 32 列（整块仍按 e 后的列数）"
    assert "写完整块之后" in runlog.explain("pdl@tail") and "32 个线程" not in runlog.explain("te32")
    aligned = runlog.explain("dp+sk 128x128 st6 e64 p0 fr4 fv te32 al").split("；")
    assert aligned[-1].startswith("尾部按分块对齐切分") and "没有线程块跨两个分块" in aligned[-1]
    shared = runlog.explain("dp+sk 128x128 st6 e128 p0 pdl@end fr4 fv te64 al sh").split("；")
    assert shared[-1].startswith("整块的 fp16 暂存与尾部各段的 fp32 暂存共用") and shared[-2].startswith("尾部按分块对齐")


def test_explain_reads_two_stages_left_running():
    two = runlog.explain("m64_k128_s8_w8_k_il_lg2_fu_wd").split("；")
    one = runlog.explain("m64_k128_s8_w8_k_il_lg_fu_wd").split("；")
    assert two[6].startswith("每个消费者让 2 级的 wgmma 在后台跑着") and "晚 2 级才放回" in two[6]
    assert one[6].startswith("每个消费者让一级的 wgmma") and len(one) == len(two)


def test_every_declared_repeat_has_a_chinese_title_and_no_title_is_left_over():
    """The repeats pages title each experiment in Chinese, never with the manifest's English key."""
    declared = manifest()["nvidia-h200"]["repeats"]
    assert set(runlog.REPEAT_TITLES) == set(declared), set(runlog.REPEAT_TITLES) ^ set(declared)
    assert len(set(runlog.REPEAT_TITLES.values())) == len(declared), "two experiments share a title"
    text = runlog.repeats_markdown()
    for exp, title in runlog.REPEAT_TITLES.items():
        assert re.search(r"[\u4e00-\u9fff]", title), title
        assert f"**{exp}**" not in text, exp
    assert not re.search(r"\| \d{4}-\d\d-\d\dT", text), "a date printed with its T"


def test_every_suite_is_described_in_chinese():
    from measure.runner import suite_names

    every = set(suite_names()) | set(RES["suites"])
    assert every <= set(runlog.SUITES_ZH), every - set(runlog.SUITES_ZH)
    legend = runlog.suites_markdown()
    for suite in every:
        assert f"| `{suite}` |" in legend, suite
    assert all(re.search(r"[\u4e00-\u9fff]", d) for d in runlog.SUITES_ZH.values())


def test_every_recorded_config_key_reads_in_chinese():
    """The timing tables print a recorded config in words: no key of any recorded bench is left raw."""
    keys = {k for r in records(RES, "bench") if isinstance(r.get("config"), dict) for k in r["config"]}
    assert keys <= set(runlog.CONFIG_KEYS), keys - set(runlog.CONFIG_KEYS)
    text = runlog._config({"blk_m": 64, "blk_n": 128, "split": 32, "via": "registers", "prefetch": True,
                           "kpair": False, "dp_waves": -1})
    assert text == "每块行数 64，每步列数 128，每组行的列分给 32 个线程块，输入分块 直接进寄存器，预取，数据并行整波数 全部整波"


def test_the_runs_note_explains_the_gaps_and_the_named_runs():
    from measure.results import manifest as read_manifest

    m = read_manifest()["nvidia-h200"]
    note = runlog.runs_note()
    for f in m.get("archive") or []:
        assert runlog.run_number(f) in note, f
    shown = [runlog.run_number(f) for f in m["inputs"]]
    for name in shown:
        if not name.isdigit():
            assert name in note, name


def test_every_failing_check_is_explained_under_its_table():
    """A recorded check that failed is not hidden: the checks table names it and a note says where the book
    discusses it."""
    failing = [r["name"] for r in records(RES, "check") if not r.get("ok")]
    assert set(failing) <= set(runlog.CHECK_NOTES), set(failing) - set(runlog.CHECK_NOTES)
    for topic in ("pytorch", "primer", "elementwise", "gemm", "perfmodel"):
        text = runlog.checks_markdown(topic)
        names = {r["name"] for r in records(RES, "check") if not r.get("ok")
                 and any(r["suite"] == p or r["suite"].startswith(p + ".") for p in runlog.topic_suites(topic))}
        for n in names:
            assert f"未通过的“{n}”：{runlog.CHECK_NOTES[n]}。" in text, n
