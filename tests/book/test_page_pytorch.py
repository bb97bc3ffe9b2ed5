"""Checks on the first chapter (book/ch_pytorch_to_kernel.md and its section pages book/pytorch/*)
and its helpers.

* every glued key exists: in the figures registry, among the recorded measurements, or among the
  values the pages compute; the prose types no number the registry holds and no decimal;
* the chapter is long enough, every section label is there, the exercises E1-E13 each have a
  collapsible answer and name the lab ``pytorch``; references carry URLs;
* the figures draw; the measured cells say "no recorded result" without results and show
  provenance with them; the chapter's TileLang kernel lowers for sm_90a;
* claims follow the data: each sentence marked ``% claim:`` is guarded here against the records,
  the instruction count of the fused sin(cos(x)) is checked against the compiler, and the target
  suffix claim (what needs sm_90a) against nvcc;
* (browser) the rendered summary page opens an answer.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from coursebook import claims
from coursebook.pagecheck import CJK, GLUE, chapter_pages, chapter_text, typed_decimals, typed_numbers
from coursebook.pagecheck import prose_of as _prose

ROOT = Path(__file__).resolve().parents[2]
LANDING = "ch_pytorch_to_kernel.md"
PREFIXES = ("pytorch", "machines")


def _text() -> str:
    return chapter_text(LANDING)


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(PREFIXES)}


@pytest.fixture(scope="module")
def results():
    from measure.results import load_results

    return load_results("nvidia-h200")


@pytest.fixture(scope="module")
def computed(results):
    from coursebook import records
    from coursebook.measured import measured_values

    out = {**measured_values(results), **records.sincos_values(results), **records.launch_values(results),
           **records.layernorm_values(results)}
    out["rec.header"] = "…"
    return out


def test_the_chapter_is_split_into_sections():
    pages = chapter_pages(LANDING)
    assert pages[0] == LANDING and len(pages) >= 6
    assert all(p.startswith("pytorch/") for p in pages[1:])


def test_every_glue_key_exists(registry, computed):
    missing = []
    for page in chapter_pages(LANDING):
        text = (ROOT / "book" / page).read_text(encoding="utf-8")
        cells = "".join(re.findall(r"```\{code-cell\}.*?```", text, flags=re.S))
        for key in GLUE.findall(text):
            if key not in registry and key not in computed and f'"{key}"' not in cells:
                missing.append(f"{page}: {key}")
    assert not missing, f"glued keys nothing computes: {missing}"


def test_claims_are_chosen_from_the_records(computed):
    unknown = [k for k, v in computed.items() if k.startswith("claim.") and v == claims.UNKNOWN]
    assert not unknown, f"claims the recorded results cannot decide: {unknown}"


# Numbers that are problem statements, not results: shapes, sizes, years, ordinals.
_SHAPES = {"1", "2", "3", "4", "5", "6", "8", "13", "16", "32", "128", "512", "1024", "2048", "4096",
           "8192", "14336", "16384", "32768", "131072", "2026", "2009", "700", "0"}


def test_prose_types_no_registry_number(registry):
    prose = _prose(_text())
    registry_texts = {f.text for f in registry.values() if re.fullmatch(r"[0-9.]+", str(f.text))}
    typed = typed_numbers(prose, registry_texts, _SHAPES)
    assert not typed, f"numbers typed into the prose that the registry holds (glue them): {typed}"


def test_prose_has_no_decimal_number_at_all():
    decimals = typed_decimals(_prose(_text()))
    assert not decimals, f"decimal numbers typed into the prose: {decimals}"


def test_prose_is_long_enough():
    n = len(CJK.findall(_prose(_text())))
    assert n >= 12000, f"chapter prose has {n} Chinese characters outside code, want >= 12000"


def _exercise_blocks(text: str) -> dict[str, str]:
    body = text[text.index("(pytorch-exercises)="):text.index("(pytorch-references)=")]
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_thirteen_exercises_each_with_answer_and_lab_check():
    """Each exercise has a collapsible answer and a same-named check in the lab pytorch; the list's
    introduction names the lab and links to the lab appendix once, for every exercise."""
    from labs.pytorch.spec import SPEC

    text = _text()
    blocks = _exercise_blocks(text)
    assert sorted(blocks, key=lambda e: int(e[1:])) == [f"E{i}" for i in range(1, 14)]
    for name, block in blocks.items():
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), f"{name} has no collapsible answer"
    intro = text[text.index("(pytorch-exercises)="):text.index("**E1（")]
    assert "实验 `pytorch`" in intro and "{ref}`appendix-labs`" in intro and "同名的小题" in intro
    assert SPEC.name == "pytorch"
    checked = {p.exercise for p in SPEC.parts}
    assert set(blocks) <= checked, f"exercises without a check in the lab: {sorted(set(blocks) - checked)}"



def test_stack_cell_prints_what_exercise_e9_reads():
    """E9 reads the stack section's cell: it must print the docstring lines the answer relies on (the
    environment variables behind execution_backend and target, the target's accepted forms)."""
    import contextlib
    import io

    page = (ROOT / "book" / "pytorch" / "stack.md").read_text(encoding="utf-8")
    cells = re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```", page, flags=re.M | re.S)
    code = next(c for c in cells if "tilelang.compile" in c and "remove-cell" not in c)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "stack.md", "exec"), {})
    printed = out.getvalue()
    for needed in ("TILELANG_EXECUTION_BACKEND", "TILELANG_DEFAULT_TARGET", "out_idx :", "tvm.target.Target"):
        assert needed in printed, f"the cell E9 reads does not print {needed!r}"
    assert "文档字符串" in _exercise_blocks(_text())["E9"]


LABELS = ("ch-pytorch-to-kernel", "pytorch-workloads", "pytorch-training-step", "pytorch-inference", "pytorch-stack",
          "pytorch-ledger", "pytorch-balance", "pytorch-roofline", "pytorch-examples", "pytorch-budget",
          "pytorch-limits", "pytorch-eager", "pytorch-sincos-measured", "pytorch-sincos-instructions",
          "pytorch-compile", "pytorch-kernel-names", "pytorch-fusion", "pytorch-compile-limits", "pytorch-when",
          "pytorch-pitfalls", "pytorch-summary", "pytorch-exercises", "pytorch-references")


def test_section_numbers_follow_the_outline():
    """The rendered section numbers are the outline's: the landing page has no numbered heading below
    its title, each section page one top-level heading, and the outline lists the pages in order."""
    from coursebook.pagecheck import numbering_problems

    assert numbering_problems("ch_pytorch_to_kernel.md") == []


def test_every_section_is_there_once():
    text = _text()
    for label in LABELS:
        assert text.count(f"({label})=") == 1, label


def test_references_carry_urls():
    text = _text()
    refs = text[text.index("(pytorch-references)="):]
    items = [ln for ln in refs.splitlines() if ln.startswith("- ") and "：" in ln]
    with_url = [ln for ln in items if "<http" in ln]
    assert len(with_url) >= 14, f"only {len(with_url)} references carry a URL"


def test_figures_are_numbered_with_chinese_captions_and_alt_text():
    text = _text()
    figs = re.findall(r"```\{glue:figure\} (\S+)\n:name: (\S+)\n:alt: (.+)\n\n(.+)\n```", text)
    assert len(figs) >= 9, f"only {len(figs)} numbered figures"
    for key, name, alt, caption in figs:
        assert name.startswith("fig-pytorch-") and CJK.search(caption) and len(alt) > 20, (key, name)
        assert f"{{numref}}`{name}`" in text, f"{name} is never referred to"


# ----------------------------------------------------------------- helpers
FIGURES = ["diagrams.training_step_map", "diagrams.inference_request_map", "diagrams.stack_diagram",
           "roofline.roofline_h200", "budgets.step_budget_bars", "budgets.step_share_sweep", "budgets.op_fusion_bars",
           "diagrams.decision_flow", "records.sincos_bounds_figure"]


@pytest.mark.parametrize("name", FIGURES)
def test_figure_draws(name):
    import importlib

    from matplotlib.figure import Figure

    mod, fn = name.split(".")
    fig = getattr(importlib.import_module(f"coursebook.{mod}"), fn)()
    assert isinstance(fig, Figure) and fig.axes
    # what the figure prints is reader-facing text: no machine-profile file name, no registry key
    from matplotlib.text import Text

    from coursebook.leaks import find_leaks
    from ledger.machines import DEFAULT_MACHINE

    printed = " ".join(t.get_text() for t in fig.findobj(Text))
    assert DEFAULT_MACHINE not in printed and not re.search(r"\b[a-z0-9]+-(?:spec|calibrated|sustained)\b", printed), \
        printed
    assert not find_leaks(printed), find_leaks(printed)


def test_share_sweep_spans_the_lengths_the_text_names():
    """The page says the sweep runs from the exercise's shortest length to its longest: the axis does."""
    from coursebook import budgets
    from ledger.step_budget import SWEEP_SEQ_LENS

    ax = budgets.step_share_sweep().axes[0]
    assert ax.get_xlim() == (min(SWEEP_SEQ_LENS), max(SWEEP_SEQ_LENS))
    assert f"从 {min(SWEEP_SEQ_LENS)} 一路扫到 {max(SWEEP_SEQ_LENS)}" in _text()


def test_measured_cells_without_results_say_so(monkeypatch):
    from coursebook import records as f2

    monkeypatch.setattr(f2, "load", lambda device="nvidia-h200": None)
    for md in (f2.measured_table("pytorch.sincos"), f2.measured_table("pytorch.layernorm"), f2.kernel_names_table(),
               f2.launch_table()):
        assert f2.NO_RESULT in md
        assert not re.search(r"\d+\.\d+", md), "no number may appear without a recorded result"
    vals = f2.launch_values()
    assert vals["claim.pytorch.launch.total"] == claims.UNKNOWN


def test_measured_cells_with_results_show_provenance_and_floor(monkeypatch):
    from coursebook import records as f2

    fake = {
        "provenance": {"device": "NVIDIA H200", "date": "2026-11-29T16:00:00Z", "torch": "2.x", "tilelang": "0.1.15"},
        "suites": {"pytorch": {"records": [
            {"kind": "bench", "name": "pytorch.sincos.eager", "variant": "eager", "ms": 0.05, "gbps": 1342.0,
             "frac_copy_bw": 0.35, "ledger_bytes": 134217728, "lower_bound_ms": 0.0298, "shape": [4096, 4096],
             "copy_gbps": 3900.0},
            {"kind": "note", "name": "pytorch.inductor.kernels", "model": "m",
             "eager_kernels": {"aten_kernel_a": 3}, "compiled_kernels": {"triton_poi_fused_cos_sin_0": 1},
             "generated_kernels": ["triton_poi_fused_cos_sin_0"], "sincos_kernels": ["triton_poi_fused_cos_sin_0"]},
        ]}},
    }
    monkeypatch.setattr(f2, "load", lambda device="nvidia-h200": fake)
    md = f2.measured_table("pytorch.sincos")
    assert "记录于 NVIDIA H200" in md and "2026-11-29" in md and "tilelang 0.1.15" in md
    assert "134.2" in md and "29.8" in md and "50.0" in md  # ledger bytes, floor (us), measured (us)
    assert "eager：两个 ATen kernel" in md, "variants are named in Chinese, not by the record's label"
    assert f2.NO_RESULT in f2.measured_table("pytorch.layernorm")
    names = f2.kernel_names_table()
    assert "triton_poi_fused_cos_sin_0" in names and "记录于" in names


def test_kernel_names_table_lists_every_kind(monkeypatch):
    """The prose counts launches and names the split reductions from the table: every kind the compiled
    step launched is a row, and the rows add up to the launches the table's header reports."""
    from coursebook import records as f2

    comp = {f"triton_poi_fused_op{i}_{i}": 1 for i in range(14)}
    comp.update({"triton_red_fused_sum_view_0": 1, "triton_per_fused_sum_view_1": 1, "Memset (Device)": 3})
    fake = {"provenance": {"device": "NVIDIA H200", "date": "2026-11-29"},
            "suites": {"pytorch": {"records": [{"kind": "note", "name": "pytorch.inductor.kernels", "model": "m",
                                                "eager_kernels": {"a": 1}, "compiled_kernels": comp}]}}}
    monkeypatch.setattr(f2, "load", lambda device="nvidia-h200": fake)
    md = f2.kernel_names_table()
    rows = re.findall(r"^\| `(.+?)` \| (\d+) \|$", md, flags=re.M)
    assert {name for name, _ in rows} == set(comp)
    assert sum(int(n) for _, n in rows) == sum(comp.values())
    assert f"{sum(comp.values())} 次 kernel 发射，{len(comp)} 种 kernel" in md


@pytest.mark.slow
def test_chapter_kernel_lowers_for_hopper():
    from kernels import pytorch as m

    src = m.sincos_fused(4096).get_kernel_source()
    assert "sinf" in src and "cosf" in src, "the fused kernel should call sin and cos once per element"


def test_check_inputs_names_the_constraint():
    import torch

    from kernels import pytorch as m

    with pytest.raises(ValueError, match="multiple of 2048"):
        m.check_inputs(torch.zeros(1000, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype"):
        m.check_inputs(torch.zeros(2048, dtype=torch.float32))


# ----------------------------------------------------------------- claims follow the data
def _fig(key: str) -> float:
    from ledger.figures import collect

    return float(collect()[key].value)


@claims.guards("pytorch.ex1-two-orders")
def test_ex1_sits_two_orders_below_the_ridge():
    ratio = _fig("machines.h200.cal.balance") / _fig("pytorch.ex1.ai_fused")
    assert 100 <= ratio < 1000, "“离平衡点差了两个多数量级”"


@claims.guards("pytorch.ex3-above-ridge")
def test_gemm_4096_near_an_order_above_the_ridge_and_512_close_to_it():
    bal = _fig("machines.h200.cal.balance")
    assert 5 <= _fig("pytorch.ex3.ai") / bal < 10, "“高出平衡点将近一个数量级”"
    assert 0.9 <= _fig("pytorch.ex3.ai_512_1") / bal <= 1.2, "“边长 512 时……已经贴着平衡点”"


@claims.guards("pytorch.roofline-attention-sides")
def test_attention_points_fall_on_the_sides_the_text_says():
    bal = _fig("machines.h200.cal.balance")
    assert _fig("pytorch.ex4.ai_naive") < bal < _fig("pytorch.ex4.ai_flash")
    assert _fig("pytorch.ex4.ai_flash") / bal > 5, "“flash 风格……在右侧很远的地方”"
    decode, naive = _fig("pytorch.ex4.decode_ai"), _fig("pytorch.ex4.ai_naive")
    assert 10 <= naive / decode < 100, "“比分数落显存的写法还要靠左一个多数量级”"
    cluster = [_fig(k) for k in ("pytorch.ex1.ai_fused", "pytorch.ex2.ai_three_pass", "pytorch.ex2.ai_fused",
                                 "pytorch.adamw.ai")]
    assert min(cluster) <= decode <= max(cluster) and max(cluster) < naive / 10, \
        "“与逐元素运算、LayerNorm、AdamW 挤在图左下角的同一簇里”"
    assert abs(decode / _fig("pytorch.ex2.ai_three_pass") - 1) < 0.05, "“它与三趟 LayerNorm 几乎重合”"


def test_roofline_marks_a_point_that_sits_on_another():
    """The decode point sits on the three-pass LayerNorm: the figure draws it as a hollow diamond with
    its label led off by a line, so neither hides the other."""
    from matplotlib.collections import PathCollection

    from coursebook import roofline

    fig = roofline.roofline_h200()
    ax = fig.axes[0]
    hollow = [c for c in ax.collections if isinstance(c, PathCollection)
              and (len(c.get_facecolors()) == 0 or c.get_facecolors()[0][3] == 0)]
    assert len(hollow) == 1
    led = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(led) == 1 and led[0].get_text().startswith("attention decode")


@claims.guards("pytorch.budget-short-long")
def test_short_sequences_give_the_optimizer_and_comm_over_half():
    short = _fig("pytorch.e12.s512.optimizer") + _fig("pytorch.e12.s512.comm")
    assert short > 50, "“在短序列训练里，优化器和通信可能占去一半以上的时间”"
    assert _fig("pytorch.e12.s131072.optimizer") < 5, "“在长序列训练里，优化器那段几乎可以忽略”"


@claims.guards("pytorch.e3-gemm512-flips")
def test_gemm_512_flips_between_the_h200_spec_and_calibrated_ridge():
    ai = _fig("pytorch.ex3.ai_512_1")
    assert _fig("machines.h200.cal.balance") < ai < _fig("machines.h200.spec.balance")


def _sincos(results):
    from coursebook import records

    return records.sincos_values(results)


@claims.guards("pytorch.sincos-issue-bound")
def test_sincos_instruction_bound_explains_the_record(results):
    """The explanation of the fused sin(cos(x)): issuing its instructions takes longer than copying
    its bytes; no measured fused kernel beats that bound; it explains most of the measured time."""
    from coursebook import records

    v = _sincos(results)
    issue_us, copy_us = float(v["calc.pytorch.sincos.issue_us"]), float(v["derived.pytorch.sincos.copy_us"])
    assert issue_us > copy_us
    for name in ("pytorch.sincos.tilelang", "pytorch.sincos.compile"):
        ms = records._bench_by(results, name)["ms"]
        assert ms * 1e3 >= issue_us, f"{name} beats the issue bound: the instruction count is wrong"
        assert issue_us / (ms * 1e3) >= 0.8, f"{name}: the issue bound explains too little of the time"
    mufu_us = float(v["calc.pytorch.sincos.mufu_us"])
    assert mufu_us < copy_us, "fast math would be bandwidth-bound again"
    tl_us = records._bench_by(results, "pytorch.sincos.tilelang")["ms"] * 1e3
    assert tl_us / max(copy_us, mufu_us) >= 2, "“换成近似指令的 kernel 按推算能快一倍以上”"


@claims.guards("pytorch.sincos-eager-gain")
def test_eager_gains_less_than_the_byte_ratio(results):
    v = _sincos(results)
    assert float(v["derived.pytorch.sincos.eager_over_fused"]) < float(v["derived.pytorch.sincos.ledger_ratio"])


@claims.guards("pytorch.compile-launches")
def test_launch_breakdown_and_split_reductions(results):
    from coursebook import records

    b = records.launch_breakdown(results)
    assert b["eager"]["gemm"] == b["compiled"]["gemm"] and b["eager"]["shared"] == b["compiled"]["shared"]
    assert sum(b["eager"].values()) == b["eager_total"] and sum(b["compiled"].values()) == b["compiled_total"]
    assert b["split_reductions"], "“被拆成两级”: a red and a per kernel over the same operators"
    assert all("sum" in s or "backward" in s for s in b["split_reductions"]), "the split ones are the gradient sums"
    names = " ".join(records.records(results, prefix="pytorch.inductor.kernels")[-1]["compiled_kernels"])
    assert "gelu_gelu_backward" in names and "native_layer_norm_backward" in names, "GELU and LN backward fused"


@claims.guards("pytorch.layernorm-three-pass")
def test_three_pass_layernorm_far_above_its_floor(results):
    v = _sincos(results)  # noqa: F841  (the chapter's values load the same records)
    from coursebook import records

    assert float(records.layernorm_values(results)["derived.pytorch.ln.three_pass_over_floor"]) > 2


def test_instruction_record_is_consistent():
    from measure.instructions import RECORD

    rec = json.loads(RECORD.read_text(encoding="utf-8"))
    acc, fast = rec["accurate"]["sass"], rec["fast_math"]["sass"]
    assert acc["per_thread"] == sum(acc["opcodes_per_thread"].values())
    assert abs(acc["per_element"] - acc["per_thread"] / rec["elements_per_thread"]) < 1e-3
    assert acc["opcodes_per_thread"].get("MUFU", 0) == 0, "accurate sinf/cosf use no special-function instruction"
    assert fast["opcodes_per_thread"]["MUFU"] == 2 * rec["elements_per_thread"], "one MUFU.SIN and one MUFU.COS"
    assert acc["per_element"] > 10 * fast["by_class_per_element"]["special function (MUFU)"]


@pytest.mark.slow
def test_instruction_record_matches_the_compiler_ptx():
    """Compile the kernel again (tilelang source, nvcc): the CUDA source and the PTX counts of the
    record hold."""
    from measure import instructions as I

    new = I.sincos_record(nvdisasm=False)
    assert "sass" not in new["accurate"]
    assert I.compare(json.loads(I.RECORD.read_text(encoding="utf-8")), new) == []


@pytest.mark.slow
def test_instruction_record_matches_the_compiler_sass():
    """The SASS counts of the record hold (where nvdisasm is installed: $NVDISASM, PATH or the
    nvidia-cuda-nvdisasm wheel)."""
    from measure import instructions as I

    if not I.find_nvdisasm():
        pytest.skip("nvdisasm not installed: the SASS counts are checked where it is")
    new = I.sincos_record()
    assert "sass" in new["accurate"]
    assert I.compare(json.loads(I.RECORD.read_text(encoding="utf-8")), new) == []


@pytest.mark.slow
def test_sm90a_suffix_is_for_wgmma_and_setmaxnreg_not_tma(tmp_path):
    """What the 'a' of sm_90a unlocks: ptxas accepts a TMA bulk tensor copy for plain sm_90, and
    rejects wgmma and setmaxnreg there (both assemble for sm_90a)."""
    import subprocess

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    snippets = {
        "tma": ('__global__ void k(unsigned long long d, unsigned s, unsigned b, int x, int y) {'
                ' asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes'
                ' [%0], [%1, {%2, %3}], [%4];" :: "r"(s), "l"(d), "r"(x), "r"(y), "r"(b) : "memory"); }'),
        "wgmma": '__global__ void k() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }',
        "setmaxnreg": '__global__ void k() { asm volatile("setmaxnreg.inc.sync.aligned.u32 240;" ::: "memory"); }',
    }
    ok = {}
    for name, src in snippets.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(src + "\n", encoding="utf-8")
        for arch in ("90", "90a"):
            r = subprocess.run([nvcc, "-cubin", "-gencode", f"arch=compute_{arch},code=sm_{arch}", "-o",
                                str(tmp_path / f"{name}{arch}.cubin"), str(cu)], capture_output=True, text=True)
            ok[name, arch] = r.returncode == 0
    assert ok["tma", "90"] and ok["tma", "90a"]
    assert not ok["wgmma", "90"] and ok["wgmma", "90a"]
    assert not ok["setmaxnreg", "90"] and ok["setmaxnreg", "90a"]


def test_execution_backends_named_in_the_answer_are_the_installed_ones():
    import inspect
    import typing

    import tilelang

    ann = inspect.signature(tilelang.compile).parameters["execution_backend"].annotation
    names = set(typing.get_args(ann)) if not isinstance(ann, str) else set(re.findall(r"'(\w+)'", ann))
    assert names == {"auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl"}


# ----------------------------------------------------------------- browser
@pytest.mark.browser
@pytest.mark.slow
def test_rendered_summary_opens_an_answer_and_pages_show_figures(built_book, tmp_path):
    chromium = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists() and not shutil.which("chromium"):
        pytest.fail(f"Chromium not found at {chromium}")
    from playwright.sync_api import sync_playwright

    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=args, headless=True)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        images = 0
        for name in chapter_pages(LANDING):
            html = built_book / "book" / name.replace(".md", ".html")
            assert html.is_file(), html
            page.goto(html.as_uri(), wait_until="load")
            images += page.locator("figure img").count()
            assert "{glue" not in page.inner_text("body"), f"an unrendered glue role reached {name}"
        assert images >= len(FIGURES), "figures missing from the rendered pages"
        page.goto((built_book / "book" / "pytorch" / "summary.html").as_uri(), wait_until="load")
        box = page.locator("details.sd-dropdown").first
        assert box.get_attribute("open") is None
        box.locator("summary").click()
        page.wait_for_timeout(200)
        assert box.get_attribute("open") is not None
        b.close()


@claims.guards("intro.instruction-bound-example")
def test_the_intro_promises_an_instruction_bound_example_only_while_the_record_shows_one(results):
    """The preface tells the reader that chapter 1 meets a kernel bandwidth-bound on paper but held
    back by its instruction count: true only while the fused sin(cos(x)) record says so."""
    from coursebook import records

    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    if "实际却被指令条数拖住" not in intro:
        pytest.skip("the preface makes no such promise")
    vals = records.sincos_values(results)
    assert vals.get("claim.pytorch.sincos.bound", "").startswith("发射指令的时间比搬字节的时间还长"), \
        "the record no longer shows the fused sin(cos(x)) held back by instructions; reword the preface"


@claims.guards("pytorch.sincos-both-near-half")
def test_both_fused_sincos_kernels_stop_near_half_of_copy(results):
    """"融合以后的两个 kernel 也都只达到同一次运行拷贝带宽的一半上下 ... 两个各自独立生成的 kernel
    停在同一个高度": each at 35-65 % of the same run's copy bandwidth, within 15 % of each other."""
    from coursebook.measured import measured_values

    vals = measured_values(results)
    tl = float(vals["rec.pytorch-sincos-tilelang.pct_copy"])
    comp = float(vals["rec.pytorch-sincos-compile.pct_copy"])
    assert 35 <= tl <= 65 and 35 <= comp <= 65, (tl, comp)
    assert abs(tl - comp) <= 0.15 * max(tl, comp), (tl, comp)
