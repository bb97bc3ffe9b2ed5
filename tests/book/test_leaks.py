"""No bookkeeping in reader-facing prose (coursebook.leaks).

The scanner is checked on examples of every kind (and on clean Chinese prose); then every page's
MyST source (a quick check) and every built page's rendered text -- after glue, cell outputs
included -- must be free of leaks, except the appendix of measurement records and the
maintainers' appendix.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from coursebook import leaks

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind, text", [
    ("draft", "这一节的数字与草稿不同"),
    ("draft", "as the drafts printed"),
    ("run", "第 19、20、22、23 次运行"),
    ("run", "第十二次及更早的运行"),
    ("run", "the search of run 19 picked"),
    ("run", "runs 19-23"),
    ("run", "raw/nvidia-h200.run19.json"),
    ("config", "胜者是 128x256x64_s4_t256_p8_ws_e128_if0_pers"),
    ("config", "配置 blk_m=2,threads=256 最快"),
    ("config", "vec,tpr=128,rows=1,seg=8"),
    ("key", "见 perfmodel.erratum.m4_split_mb"),
    ("key", "ch28.erratum.m4_split_mb".replace("ch28", "gemm")),
    ("key", "值为 rec.device"),
    ("id", "ch28.erratum.m4_split_mb"),
    ("id", "由 ch02 给出"),
    ("id", "实验 lab02 的 E1 小题"),
    ("path", "写在 kernels/norm.py 里"),
    ("path", "measure/results/raw 里的文件"),
    ("test", "由 test_chapter_kernel_lowers_for_hopper 检查"),
])
def test_each_kind_is_found(kind, text):
    found = leaks.find_leaks(text)
    assert any(f.kind == kind for f in found), (kind, text, found)


@pytest.mark.parametrize("text", [
    "融合以后只剩读 x、写 y，时间下界恰好减半；第 3 步把分数写回显存。",
    "参考 https://docs.pytorch.org/docs/2.14/user_guide/torch_compiler/torch.compiler.html 的说明。",
    "tilelang/jit/__init__.py 里的 tilelang.compile 与 torch._inductor.config.triton.unique_kernel_names。",
    "TileOPs 的 src/tileops/ops/compile_boundary.py 写明了三条约束。",
    "`T.Kernel(..., threads=128)` 开一个线程块；4096×4096 的 GEMM。",
    "实验 pytorch 的 E1 小题。",
])
def test_clean_prose_passes(text):
    assert leaks.find_leaks(text) == []


HTML = """<html><body><nav>草稿 in the sidebar</nav><article class="bd-article">
<h1>标题</h1><p>正文一句，粘贴的值 <span class="pasted-text">42</span>。</p>
<div class="cell docutils container"><div class="cell_input"><pre>import test_x  # 草稿</pre></div>
<div class="cell_output"><table><tr><td>run 19</td></tr></table></div></div>
<p>行内 <code>test_inline_name</code></p>
<aside class="footnote brackets"><p>见 test_in_footnote</p></aside>
<span class="math">\\(run 3\\)</span>
</article></body></html>"""


def test_reader_text_keeps_outputs_and_inline_code_and_drops_sources_footnotes_math_nav():
    text = leaks.html_reader_text(HTML)
    assert "粘贴的值 42" in text
    assert "run 19" in text, "a cell's output is reader-facing"
    assert "test_inline_name" in text, "inline code is prose"
    assert "test_x" not in text and "草稿" not in text, "code cells' sources and navigation are not"
    assert "test_in_footnote" not in text, "a footnote may cite a test"
    assert "run 3" not in text, "math is not prose"


def test_english_paragraph_found():
    para = "Recorded on NVIDIA H200 at 2026-11-29T16:09:32Z, 2026-11-29T16:11:48Z; outputs in /root/out. " * 3
    html = f'<article class="bd-article"><p>{para}</p><p>{"中文段落，" * 40}</p></article>'
    found = leaks.english_paragraphs(html)
    assert len(found) == 1 and found[0].startswith("Recorded")


def test_unrendered_markup_is_found():
    html = ('<article class="bd-article"><p>TileLang 版比 <span class="pasted-text">比 `F.layer_norm` 快</span>；'
            '<span class="pasted-text">**粗**</span>，见 {ref}`x`。<code>a*b</code></p><pre>`ok`</pre></article>')
    found = leaks.page_leaks(html)
    # two backticks, two ** and an unresolved role with its two backticks; the <code> and <pre> are fine
    assert sum(f.startswith("[markup]") for f in found) == 7, found
    assert not leaks.unrendered_markup("比 F.layer_norm 快，a*b 与 2**3 以外")[1:], "one ** is one finding"


def test_exemption_covers_the_section_pages():
    assert leaks.is_exempt("book/appendix/records") and leaks.is_exempt("book/appendix/records/gemm")
    assert not leaks.is_exempt("book/appendix/recordsX") and not leaks.is_exempt("book/ch_gemm")


def test_md_reader_text_leaves_out_what_is_not_rendered():
    src = ("---\nkernelspec: {}\n---\n(label-x)=\n# 题\n% claim: pytorch.x\n"
           "```{code-cell} ipython3\nprint('test_code')\n```\n"
           "正文 {glue:text}`rec.x.us` µs，见 {ref}`records-runs`。\n[^1]: 由 test_foot 检查。\n")
    text = leaks.md_reader_text(src)
    assert "正文" in text
    for gone in ("test_code", "rec.x", "records-runs", "test_foot", "pytorch.x", "label-x"):
        assert gone not in text


def _pages() -> list[Path]:
    return sorted(p for p in (ROOT / "book").rglob("*.md")
                  if not leaks.is_exempt(p.relative_to(ROOT).with_suffix("").as_posix()))


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT / "book").as_posix())
def test_page_source_has_no_bookkeeping(page):
    found = leaks.find_leaks(leaks.md_reader_text(page.read_text(encoding="utf-8")))
    assert not found, f"{page.relative_to(ROOT)}:\n" + "\n".join(map(str, found))


@pytest.mark.slow
def test_rendered_pages_have_no_bookkeeping(built_book):
    bad = {}
    pages = [p for p in built_book.joinpath("book").rglob("*.html")]
    assert len(pages) >= 10
    for html in pages:
        rel = html.relative_to(built_book).with_suffix("").as_posix()
        if leaks.is_exempt(rel):
            continue
        found = leaks.page_leaks(html.read_text(encoding="utf-8"))
        if found:
            bad[rel] = found
    assert not bad, "bookkeeping in reader-facing text:\n" + "\n".join(
        f"{page}:\n  " + "\n  ".join(items[:12]) for page, items in sorted(bad.items()))


@pytest.mark.slow
def test_no_page_shows_unrendered_markup(built_book):
    """Exempt pages included: a glued text is plain text, so Markdown inside it shows literally."""
    bad = {}
    for html in built_book.joinpath("book").rglob("*.html"):
        found = leaks.unrendered_markup(leaks.html_reader_text(html.read_text(encoding="utf-8")))
        if found:
            bad[html.relative_to(built_book).as_posix()] = found[:5]
    assert not bad, bad


@pytest.mark.slow
def test_exempt_pages_exist_and_hold_the_bookkeeping(built_book):
    assert (built_book / "book" / "appendix" / "records.html").is_file()
    repeats = (built_book / "book" / "appendix" / "records" / "repeats.html").read_text(encoding="utf-8")
    text = leaks.html_reader_text(repeats)
    assert any(f.kind == "config" for f in leaks.find_leaks(text)), "the records appendix shows configuration labels"
    assert leaks.is_exempt("book/appendix/records/repeats")
    assert (built_book / "book" / "appendix" / "maintainers.html").is_file()
