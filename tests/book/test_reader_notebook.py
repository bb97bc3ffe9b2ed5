"""The notebook a reader downloads from a page (coursebook.notebook): plain Jupyter markdown.

Jupyter renders no MyST: offered as it is, the executed notebook shows ``{glue:text}`rec.header```
where the page shows the device and the date, and a raw key in place of every number.  The fast
tests feed the converter each construct the pages use; the slow ones read every download of the
built book, and run each downloaded notebook's imports from a folder outside the repository.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coursebook.notebook import (Refs, myst_leftovers, notebook_from_markdown, reader_markdown, reader_notebook,
                                 run_note)

ROOT = Path(__file__).resolve().parents[2]

PAGE = textwrap.dedent("""\
    (gemm-ladder-measured)=
    # 实测：每一级跑出多少

    % claim: gemm.landing.naive-gap
    本页的 GPU 数字：{glue:text}`rec.header`

    {numref}`fig-gemm-ladder-bars` 是吞吐；cuBLAS 折合 {glue:text}`derived.span` TFLOP/s，约 {glue:text}`ratio:.1f` 倍[^ptx]。
    见 {ref}`gemm-ws`，以及 {ref}`上一页 <gemm-w4a16>` 与 {doc}`../appendix/labs`；代码 `{glue:text}` 原样。

    ```{rubric} 学习目标
    ```

    ````{dropdown} 参考答案

    运算量 {glue:text}`gflop` GFLOP。

    ```python
    x = 1  # {glue:text}`not-a-role-in-code`
    ```
    ````

    $$
    I = \\frac{2MNK}{b}
    $$ (eq-ai)

    ```{glue:figure} fig.bars
    :name: fig-gemm-ladder-bars
    :alt: 柱状图

    五级阶梯的吞吐
    ```

    ```{tableofcontents}
    ```

    [^ptx]: 见 PTX 手册。
    """)


def _refs() -> Refs:
    return Refs(
        docname="book/gemm/measured",
        glue={"rec.header": {"text/plain": "'记录结果：H200，2026-12-05'"},
              "derived.span": {"text/plain": "'661–710'"},
              "ratio": {"text/plain": "2.345"},
              "gflop": {"text/plain": "'17.2 * 2 | $x$'"},
              "fig.bars": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
        labels={"gemm-ws": "把流水写出来：手写的 warp 专门化", "gemm-w4a16": "W4A16",
                "fig-gemm-ladder-bars": "五级阶梯的吞吐"},
        numbers={"fig-gemm-ladder-bars": ("figure", "4.2")},
        numfig_format={"figure": "图 %s"},
        titles={"book/appendix/labs": "实验与评分", "book/gemm/ws": "把流水写出来"},
        children=["book/gemm/ws"],
    )


def test_reader_markdown_shows_what_the_page_shows():
    text, attachments = reader_markdown(PAGE, _refs())
    assert "记录结果：H200，2026-12-05" in text and "'记录结果" not in text  # the value, not its repr
    assert "661–710 TFLOP/s" in text and "约 2.3 倍" in text  # a format spec is applied
    assert "17.2 \\* 2 \\| \\$x\\$" in text  # a pasted value stays text in Jupyter (no emphasis, cell, math)
    assert text.count("图 4.2") == 2  # the reference and the caption's number
    assert "“把流水写出来：手写的 warp 专门化”" in text and "上一页" in text and "实验与评分" in text
    assert "`{glue:text}`" in text  # inline code is left alone
    assert "x = 1  # {glue:text}`not-a-role-in-code`" in text  # and so is a code block
    assert "**学习目标**" in text
    assert "<details>" in text and "<summary>参考答案</summary>" in text and "运算量 17.2" in text
    assert "$$ (eq-ai)" not in text and "I = \\frac{2MNK}{b}" in text
    assert "![柱状图](attachment:fig.bars.png)" in text and attachments == {"fig.bars.png": {"image/png": "iVBORw0KGgo="}}
    assert "**图 4.2** 五级阶梯的吞吐" in text
    assert "- 把流水写出来" in text  # the table of contents lists the sections
    assert "<sup>[1]</sup>" in text and "<sup>[1]</sup> 见 PTX 手册。" in text
    assert "(gemm-ladder-measured)=" not in text and "% claim" not in text and "claim:" not in text
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": text}]}
    assert not myst_leftovers(nb), myst_leftovers(nb)


def test_the_leftover_scanner_finds_raw_myst():
    """The scanner the built-book test relies on does see each kind of raw MyST."""
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": PAGE}]}
    kinds = {line.split(": ")[1] for line in myst_leftovers(nb)}
    assert kinds == {"role", "directive", "label", "comment", "footnote"}


def test_reader_notebook_keeps_code_and_outputs_and_drops_empty_markdown():
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3"}, "source_map": [1, 2], "jupytext": {"x": 1}},
          "cells": [{"cell_type": "markdown", "metadata": {}, "source": "(only-a-label)=\n% a comment\n"},
                    {"cell_type": "code", "metadata": {"tags": ["remove-cell"]}, "execution_count": 1,
                     "source": "from coursebook import glue_figures", "outputs": [{"output_type": "stream",
                                                                              "name": "stdout", "text": "hi"}]},
                    {"cell_type": "markdown", "metadata": {}, "source": ["值 {glue:text}`", "ratio`"]}]}
    out = reader_notebook(nb, _refs())
    assert [c["cell_type"] for c in out["cells"]] == ["code", "markdown"]
    assert out["cells"][0] == nb["cells"][1]
    assert out["cells"][1]["source"] == "值 2.345"
    assert out["metadata"] == {"kernelspec": {"name": "python3"}}
    assert nb["cells"][0]["source"].startswith("(only-a-label)")  # the input is not modified


def test_a_notebook_with_code_says_under_its_title_what_it_needs():
    code = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "import kernels"}
    title = {"cell_type": "markdown", "metadata": {}, "source": "(x)=\n# 实测"}
    note = run_note("TileLang 算子课")
    out = reader_notebook({"cells": [title, code], "metadata": {}}, _refs(), note=note)
    assert [c["source"] for c in out["cells"]] == ["# 实测", note, "import kernels"]
    assert "make venv" in note and "《TileLang 算子课》" in note
    prose = reader_notebook({"cells": [title], "metadata": {}}, _refs(), note=note)
    assert [c["source"] for c in prose["cells"]] == ["# 实测"]  # nothing to run, nothing to say


def test_a_page_without_code_becomes_a_notebook_of_its_sections():
    source = textwrap.dedent("""\
        (ch-primer)=
        # 入门

        {ref}`gemm-ws` 之前。

        (primer-goals)=
        ## 目标

        读完本章……
        """)
    nb = notebook_from_markdown(source, _refs())
    texts = [c["source"] for c in nb["cells"]]
    assert texts == ["# 入门\n\n“把流水写出来：手写的 warp 专门化” 之前。", "## 目标\n\n读完本章……"]
    assert nb["metadata"]["kernelspec"]["name"] == "python3" and nb["nbformat"] == 4
    assert not myst_leftovers(nb)


# ------------------------------------------------------------------ the built book


def _downloads(built_book: Path) -> dict[str, Path]:
    """{page: the .ipynb its download menu links}, for every page with an article."""
    out = {}
    for page in sorted((built_book / "book").rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        if 'class="bd-article"' not in html:
            continue
        links = re.findall(r'href="([^"]+\.ipynb)"', html)
        out[page.relative_to(built_book).as_posix()] = (page.parent / links[0]).resolve() if links else None
    return out


@pytest.mark.slow
def test_every_page_offers_a_notebook_in_plain_jupyter(built_book):
    """Every page (chapter landing pages and pages without code too) links an .ipynb that is in
    the build, and no markdown cell of it holds MyST that Jupyter would print raw."""
    downloads = _downloads(built_book)
    assert len(downloads) > 50
    missing = [page for page, nb in downloads.items() if nb is None or not nb.is_file()]
    assert not missing, f"pages without a notebook to download: {missing}"
    raw = {}
    for page, path in downloads.items():
        left = myst_leftovers(json.loads(path.read_text(encoding="utf-8")))
        if left:
            raw[page] = left[:3]
    assert not raw, raw


@pytest.mark.slow
def test_downloaded_notebooks_show_the_glued_values(built_book):
    """The values the page shows are in its notebook (the header of a page with GPU numbers)."""
    nb = json.loads((built_book / "_sources" / "book" / "gemm" / "measured.ipynb").read_text(encoding="utf-8"))
    text = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                     for c in nb["cells"] if c["cell_type"] == "markdown")
    page = (built_book / "book" / "gemm" / "measured.html").read_text(encoding="utf-8")
    device = re.search(r"(记录结果（recorded）|实测（live）)：([^，<]+)", page)
    assert device and device.group(2) in text, "the page's device line is not in its notebook"
    assert "TFLOP/s" in text and "图 4.2" in text
    import yaml

    title = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]
    assert "make venv" in text and f"《{title}》" in text  # how to run it, in the book's name


@pytest.mark.slow
def test_downloaded_notebooks_run_their_imports_outside_the_repository(built_book, tmp_path):
    """A reader runs a downloaded notebook from wherever it was saved, with the course package
    installed: every import of its code cells works with the working directory outside the
    repository (the package found as installed, here through PYTHONPATH)."""
    script = ["import json, sys, traceback", "bad = {}"]
    for page, path in _downloads(built_book).items():
        nb = json.loads(path.read_text(encoding="utf-8"))
        lines = [ln for c in nb["cells"] if c["cell_type"] == "code"
                 for ln in (c["source"] if isinstance(c["source"], str) else "".join(c["source"])).splitlines()
                 if re.match(r"(from \S+ import [^(]+$|import \S+)", ln) and "__future__" not in ln]
        if lines:
            code = "\n".join(lines)
            script += [f"try:\n    exec({code!r}, {{}})\nexcept Exception:\n"
                       f"    bad[{page!r}] = traceback.format_exc().splitlines()[-1]"]
    script.append("print(json.dumps(bad, ensure_ascii=False))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", "\n".join(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    bad = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not bad, bad
