"""tools.live_notebook: the MyST -> notebook converter reads every page as myst-nb does, glued
values come back out of an executed notebook, and a live record is checked field by field -- the
committed ones (``measure/results/live/*.notebook.json``) included."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tools import live_notebook as L

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.relative_to(ROOT / "book").as_posix() for p in (ROOT / "book").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_converter_reads_each_page_as_myst_nb_does(page):
    from myst_nb.core.read import read_myst_markdown_notebook

    text = (ROOT / "book" / page).read_text(encoding="utf-8")
    ref = read_myst_markdown_notebook(text)
    ours = L.md_to_notebook(text)
    assert [(c.cell_type, c.source, dict(c.metadata)) for c in ref.cells] == \
           [(c["cell_type"], c["source"], c["metadata"]) for c in ours["cells"]]
    if "kernelspec:" in text:
        assert ours["metadata"]["kernelspec"]["name"] == "python3"


def test_code_cell_options_both_forms():
    nb = L.md_to_notebook("# t\n```{code-cell} ipython3\n:tags: [remove-cell]\nx = 1\n```\n+++\n"
                          "text\n```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    name: f\n---\ny = 2\n```\n")
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code", "markdown", "code"]
    assert nb["cells"][1]["metadata"] == {"tags": ["remove-cell"]} and nb["cells"][1]["source"] == "x = 1"
    assert nb["cells"][3]["metadata"] == {"mystnb": {"figure": {"name": "f"}}} and nb["cells"][3]["source"] == "y = 2"


def test_glued_values_from_outputs():
    nb = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "rec.a.us", "mime_prefix":
                                                                     "application/papermill.record/"}},
         "data": {"application/papermill.record/text/plain": "12.5"}},
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "shown", "mime_prefix": ""}},
         "data": {"text/plain": ["a", "b"]}},
        {"output_type": "stream", "name": "stdout", "text": "x"}]}]}
    assert L.glued_values(nb) == {"rec.a.us": "12.5", "shown": "ab"}
    # a text myst-nb would change is glued quoted (coursebook.glue.GluedText) and read back as printed
    nb["cells"][0]["outputs"][0]["data"]["application/papermill.record/text/plain"] = "'1.20'"
    assert L.glued_values(nb)["rec.a.us"] == "1.20"


GOOD = {"schema": 1, "kind": "live-notebook", "topic": "elementwise", "mode": "live", "device": "NVIDIA H200",
        "date": "2026-12-02T10:00:00Z", "command": "python -m tools.live_notebook run --topic elementwise",
        "versions": {"torch": "2.11.0", "tilelang": "0.1.15", "cuda": "13.0", "driver": "580.159.04"},
        "pages": [{"page": "ch_elementwise_norm_rope.md", "seconds": 200.0, "errors": [],
                   "values": {"rec.header": "现场实测（live）：本页 norm 套件的数字由本次构建在 NVIDIA H200（132 个 SM）上实测",
                              "rec.mode": "live", "rec.add-fp16-268435456.us": "371.7"}}]}


def test_a_good_record_passes_and_each_fault_is_named():
    assert L.check_record(GOOD) == []
    landing = copy.deepcopy(GOOD)
    landing["pages"].insert(0, {"page": "ch_elementwise_norm_rope.md", "seconds": 3.0, "errors": [], "values": {}})
    assert L.check_record(landing) == [], "a landing page without GPU numbers needs no header"
    faults = {
        "mode": lambda r: r.update(mode="recorded"),
        "header": lambda r: r["pages"][0]["values"].update({"rec.header": "记录结果（recorded）：…"}),
        "rec.mode": lambda r: r["pages"][0]["values"].update({"rec.mode": "recorded"}),
        "time": lambda r: r["pages"][0]["values"].pop("rec.add-fp16-268435456.us"),
        "no page measured": lambda r: r["pages"][0].update(values={}),
        "errors": lambda r: r["pages"][0].update(errors=["CellExecutionError: boom"]),
        "date": lambda r: r.update(date="yesterday"),
        "versions": lambda r: r["versions"].pop("driver"),
        "missing": lambda r: r.pop("pages"),
    }
    for name, spoil in faults.items():
        bad = copy.deepcopy(GOOD)
        spoil(bad)
        assert L.check_record(bad), f"a record with a bad {name} passed"


LIVE_RECORDS = sorted((ROOT / "measure" / "results" / "live").glob("*.notebook.json"))


@pytest.mark.skipif(not LIVE_RECORDS, reason="no live-notebook record committed yet (the lead runs it on the H200)")
@pytest.mark.parametrize("path", LIVE_RECORDS, ids=lambda p: p.name)
def test_committed_live_records_are_well_formed(path):
    rec = json.loads(path.read_text(encoding="utf-8"))
    assert L.check_record(rec) == []
    assert path.name.startswith(rec["device"].lower().replace(" ", "-") + "." + rec["topic"] + ".")
    pages = [p["page"] for p in rec["pages"]]
    assert pages == L.chapter_pages(rec["topic"])[:len(pages)] and pages, "pages in the chapter's order"


def test_chapter_pages_follow_the_toc():
    from coursebook.pagecheck import toc_chapters

    for topic, landing in L.CHAPTERS.items():
        assert L.chapter_pages(topic) == toc_chapters()[landing]


def test_the_jupyter_stack_is_pinned_for_the_gpu_python():
    pins = L._lock_pins("3.12")
    assert all(n in pins for n in L.JUPYTER_STACK)
    assert pins["ipykernel"] and pins["nbclient"]


@pytest.mark.slow
def test_run_executes_pages_in_a_kernel_and_records_them(tmp_path, monkeypatch):
    monkeypatch.setattr(L, "_versions", lambda: {"device": "CPU", "torch": "x"})
    rec = L.run("pytorch", tmp_path, timeout=300, pages=["appendix/glossary.md"], mode="recorded")
    assert rec["pages"][0]["page"] == "appendix/glossary.md" and rec["pages"][0]["errors"] == []
    assert (tmp_path / "live_pytorch.json").is_file() and (tmp_path / "notebooks_pytorch.zip").is_file()
    problems = L.check_record(rec)
    assert any("not live" in p for p in problems) and any("no page glued" in p for p in problems)
