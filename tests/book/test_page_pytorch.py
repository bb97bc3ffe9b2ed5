"""Checks on chapter 02's page (book/ch_pytorch_to_kernel.md) and its helpers.

* every glued key exists in the figures registry, and the prose types no number the
  registry holds (numbers are glued, never retyped);
* the prose is long enough and repeats no draft (../shared/tools/prose_overlap.py);
* the exercises E1-E13 are all there, each with a collapsible answer and a link to
  the lab appendix;
* the figures draw, the measured cells say "no recorded result" without results and
  show provenance with them, and the chapter's TileLang kernel lowers for sm_90a;
* (browser) the rendered page opens an answer; a full-page screenshot is written to
  ``_build/screenshots/pytorch_full.png``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "ch_pytorch_to_kernel.md"
PREFIXES = ("pytorch", "machines")
from coursebook.pagecheck import CJK, GLUE, typed_decimals, typed_numbers  # noqa: E402
from coursebook.pagecheck import prose_of as _prose  # noqa: E402


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def registry():
    from ledger.figures import collect

    return {k: f for k, f in collect().items() if k.startswith(PREFIXES)}


def test_every_glue_key_is_in_the_registry(registry):
    used = set(GLUE.findall(_text()))
    assert used, "the page glues nothing"
    missing = sorted(used - set(registry))
    assert not missing, f"glued keys the ledger does not register: {missing}"


# Numbers that are problem statements, not results: shapes, sizes, years, ordinals.
_SHAPES = {"1", "2", "3", "4", "5", "6", "8", "13", "32", "128", "512", "1024", "2048", "4096",
           "8192", "14336", "16384", "32768", "131072", "2026", "2009", "700", "0"}


def test_prose_types_no_registry_number(registry):
    prose = _prose(_text())
    registry_texts = {f.text for f in registry.values() if re.fullmatch(r"[0-9.]+", str(f.text))}
    typed = typed_numbers(prose, registry_texts, _SHAPES)
    assert not typed, f"numbers typed into the prose that the registry holds (glue them): {typed}"


def test_prose_has_no_decimal_number_at_all():
    # every measured or computed quantity is glued; a decimal in prose is a retyped number
    decimals = typed_decimals(_prose(_text()))
    assert not decimals, f"decimal numbers typed into the prose: {decimals}"


def test_prose_is_long_enough():
    n = len(CJK.findall(_prose(_text())))
    assert n >= 12000, f"chapter prose has {n} Chinese characters outside code, want >= 12000"


def _exercise_blocks(text: str) -> dict[str, str]:
    body = text[text.index("(pytorch-exercises)="):text.index("(pytorch-references)=")]
    parts = re.split(r"^\*\*(E\d+)（", body, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_thirteen_exercises_each_with_answer_and_lab_link():
    blocks = _exercise_blocks(_text())
    assert sorted(blocks, key=lambda e: int(e[1:])) == [f"E{i}" for i in range(1, 14)]
    for name, block in blocks.items():
        assert "{ref}`appendix-labs`" in block, f"{name} does not link to the lab appendix"
        assert "lab02" in block, f"{name} does not name lab02"
        assert re.search(r"^````\{dropdown\} 参考答案$", block, flags=re.M), f"{name} has no collapsible answer"


def test_every_section_named_by_the_issue_is_there():
    text = _text()
    for label in ("pytorch-training-step", "pytorch-inference", "pytorch-stack", "pytorch-ledger", "pytorch-balance",
                  "pytorch-roofline", "pytorch-examples", "pytorch-budget", "pytorch-limits", "pytorch-eager",
                  "pytorch-compile", "pytorch-kernel-names", "pytorch-fusion", "pytorch-compile-limits",
                  "pytorch-when", "pytorch-pitfalls", "pytorch-summary", "pytorch-exercises", "pytorch-references",
                  "pytorch-numbers"):
        assert f"({label})=" in text, label


def test_references_carry_urls():
    refs = _text()[_text().index("(pytorch-references)="):_text().index("(pytorch-numbers)=")]
    items = [ln for ln in refs.splitlines() if ln.startswith("- ") and "：" in ln]
    with_url = [ln for ln in items if "<http" in ln]
    assert len(with_url) >= 14, f"only {len(with_url)} references carry a URL"


# ----------------------------------------------------------------- helpers
FIGURES = ["diagrams.training_step_map", "diagrams.inference_request_map", "diagrams.stack_diagram",
           "roofline.roofline_h200", "budgets.step_budget_bars", "budgets.step_share_sweep", "budgets.op_fusion_bars",
           "diagrams.decision_flow"]


@pytest.mark.parametrize("name", FIGURES)
def test_figure_draws(name):
    import importlib

    from matplotlib.figure import Figure

    mod, fn = name.split(".")
    fig = getattr(importlib.import_module(f"coursebook.{mod}"), fn)()
    assert isinstance(fig, Figure) and fig.axes


def test_measured_cells_without_results_say_so(monkeypatch):
    from coursebook import records as f2

    monkeypatch.setattr(f2, "load", lambda device="nvidia-h200": None)
    for md in (f2.measured_table("pytorch.sincos"), f2.measured_table("pytorch.layernorm"), f2.kernel_names_table()):
        assert f2.NO_RESULT in md
        assert not re.search(r"\d+\.\d+", md), "no number may appear without a recorded result"


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
    assert f2.NO_RESULT in f2.measured_table("pytorch.layernorm")
    names = f2.kernel_names_table()
    assert "triton_poi_fused_cos_sin_0" in names and "记录于" in names


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


# ----------------------------------------------------------------- browser
@pytest.mark.browser
@pytest.mark.slow
def test_rendered_page_opens_an_answer_and_is_photographed(built_book, tmp_path):
    chromium = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists() and not shutil.which("chromium"):
        pytest.fail(f"Chromium not found at {chromium}")
    from playwright.sync_api import sync_playwright

    html = built_book / "book" / "ch_pytorch_to_kernel.html"
    assert html.is_file(), html
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    # a CJK font for the screenshot: the Noto Sans CJK file the plotting style ships with
    from coursebook.style import cjk_font_path

    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig>'
        '<include ignore_missing="yes">/etc/fonts/fonts.conf</include>'
        f"<dir>{cjk_font_path().parent}</dir><cachedir>{tmp_path / 'fc'}</cachedir></fontconfig>",
        encoding="utf-8")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=args, headless=True, env=env)
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto(html.as_uri(), wait_until="load")
        assert page.locator("img").count() >= len(FIGURES), "figures missing from the rendered page"
        box = page.locator("details.sd-dropdown").first
        assert box.get_attribute("open") is None
        box.locator("summary").click()
        page.wait_for_timeout(200)
        assert box.get_attribute("open") is not None
        body = page.inner_text("body")
        assert "{glue" not in body, "an unrendered glue role reached the page"
        out = shots / "pytorch_full.png"
        page.screenshot(path=str(out), full_page=True)
        b.close()
    assert out.stat().st_size > 50_000
    (shots / "pytorch_full.json").write_text(json.dumps({"page": str(html), "png": str(out)}), encoding="utf-8")
