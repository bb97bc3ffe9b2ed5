"""The PDF edition: built with XeLaTeX from the executed pages, then read back with
poppler (pdfinfo, pdftotext, pdfimages, pdftohtml) and compared with the HTML book.

The build runs after the strict HTML build (fixture ``built_book``) and shares its
execution cache, so no page runs twice.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

slow = pytest.mark.slow  # the tests that build the PDF

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")
BOOK_TITLE = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]  # the running header
POPPLER = ("pdfinfo", "pdftotext", "pdfimages", "pdftohtml")
# how the pages introduce the provenance of measured results (device, date, versions)
PROVENANCE = re.compile(r"记录结果（recorded）：|现场实测（live）：|记录于 |\brecorded：|\blive：")


def _toc_pages() -> list[tuple[str, bool]]:
    """(page, numbered) of the root and every chapter (landing page), in book order."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [(toc["root"], False)]
    for part in toc["parts"]:
        pages += [(c["file"], bool(part.get("numbered"))) for c in part["chapters"]]
    return pages


def _all_pages() -> list[str]:
    """Every page of the book in order: the root, each chapter and its section pages."""
    import yaml

    def walk(entry: dict) -> list[str]:
        return [entry["file"]] + [f for sub in entry.get("sections") or [] for f in walk(sub)]

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [f for part in toc["parts"] for c in part["chapters"] for f in walk(c)]


def _article(html: Path) -> str:
    """The page's own content (no navigation, no footer) as HTML."""
    text = html.read_text(encoding="utf-8")
    i = text.index('<article class="bd-article"')
    body = text[i:text.index("</article>", i)]
    return re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S)


def _text(fragment: str) -> str:
    import html as _html

    return _html.unescape(re.sub(r"<[^>]+>", "", fragment))


# pdftotext reads the CJK font's circled digits (① U+2460…) back as the dingbat ones (➀ U+2780…)
_CIRCLED = str.maketrans({chr(0x2780 + i): chr(0x2460 + i) for i in range(10)})


def _squash(text: str) -> str:
    """Drop what line breaking changes: white space and hyphens; read circled digits one way."""
    return re.sub(r"[\s\-\u2010\u2011\u2013]+", "", text.translate(_CIRCLED))


@pytest.fixture(scope="module")
def pdf(built_book) -> Path:
    missing = [t for t in ("xelatex", "latexmk", *POPPLER) if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: install the packages of .ci/pdf-packages (see .ci/run)")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "coursebook.pdf"], cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        pytest.fail(f"make pdf failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    print(f"PDF edition built in {took:.0f} s")
    from coursebook.pdf import OUT, TEX

    out = OUT / TEX.replace(".tex", ".pdf")
    assert out.is_file()
    return out


@pytest.fixture(scope="module")
def pdf_text(pdf) -> str:
    """The PDF's text without the running heads: each page's header line (the book's title) and
    footer (the section mark and the page number), which would otherwise split a sentence that
    runs across a page break."""
    return _pdftotext(pdf)


def _pdftotext(pdf, *opts: str) -> str:
    raw = subprocess.run(["pdftotext", *opts, "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    return "\f".join(_body_of_page(p) for p in raw.split("\f"))


@pytest.fixture(scope="module")
def pdf_text_raw(pdf) -> str:
    """The same text in the order the page draws it (``pdftotext -raw``).  poppler's layout
    analysis, which :func:`pdf_text` uses, can put the end of a justified CJK line into the
    middle of the next one when the line breaks inside an inline identifier (seen with a
    sentence breaking after ``lg_`` of ``lg_throttle``); the drawing order keeps the line whole."""
    return _pdftotext(pdf, "-raw")


def _body_of_page(page: str) -> str:
    lines = page.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].strip().isdigit():  # the page number, then the section mark above it
        lines.pop()
        while lines and not lines[-1].strip():
            lines.pop()
        if lines and re.match(r"^(\d+(\.\d+)*\.?\s|附录|第\s*\d+\s*章)", lines[-1].strip()):
            lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].strip() == BOOK_TITLE:
        lines.pop(0)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def pdf_xml(pdf) -> str:
    """pdftohtml's XML: the text of each page, its links, and the outline (bookmarks)."""
    return subprocess.run(["pdftohtml", "-xml", "-i", "-q", "-stdout", str(pdf)], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def latex_log(pdf) -> str:
    return pdf.with_suffix(".log").read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def html_articles(built_book) -> dict[str, str]:
    return {page: _article(built_book / f"{page}.html") for page in _all_pages()}


def _outline(xml: str) -> list[str]:
    import html as _html

    return [_html.unescape(t) for t in re.findall(r"<item page=\"\d+\">(.*?)</item>", xml)]


@slow
def test_title_page_and_plausible_page_count(pdf, html_articles):
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    import yaml

    title = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]
    assert re.search(rf"^Title:\s+{re.escape(title)}$", info, re.M), info
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    cjk = sum(len(CJK.findall(_text(a))) for a in html_articles.values())
    # a page of this book holds a few hundred to about a thousand Chinese characters
    assert cjk / 1200 <= pages <= cjk / 150, f"{pages} pages for {cjk} Chinese characters"
    first = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"], capture_output=True, text=True,
                           check=True).stdout
    assert title in first, "the first page is not the title page"


@slow
def test_every_chapter_and_appendix_with_the_books_numbers(pdf_xml, built_book):
    """The bookmarks list every page of the toc, numbered chapters with the HTML's number."""
    outline = _outline(pdf_xml)
    for page, numbered in _toc_pages():
        h1 = re.search(r"<h1>((?:(?!</h1>).)*?)<a class=\"headerlink\"", _article(built_book / f"{page}.html"), re.S)
        assert h1, f"no title in {page}.html"
        title = _text(h1.group(1)).strip()
        if numbered:
            num = re.match(r"(\d+)\.\s*(.*)", title)
            assert num, f"{page}: the HTML title {title!r} has no chapter number"
            want = f"{num.group(1)} {num.group(2)}"
        else:
            want = title
        assert want in outline, f"bookmark {want!r} missing; chapters in the PDF: {[o for o in outline if not re.match(r'[0-9]+[.]', o)]}"


@slow
def test_table_of_contents_has_the_chapter_numbers(pdf_text):
    toc = pdf_text[pdf_text.index("目录"):]
    toc = toc[:toc.index("\f", toc.index("附录"))]
    numbered = sum(1 for _, n in _toc_pages() if n)
    for i in range(1, numbered + 1):
        assert re.search(rf"^{i} \S", toc, re.M), f"chapter {i} missing from the table of contents"


@slow
def test_chinese_text_matches_the_html(pdf_text, html_articles):
    html = sum(len(CJK.findall(_text(a))) for a in html_articles.values())
    got = len(CJK.findall(pdf_text))
    # the PDF adds a table of contents, running heads and captions; it loses nothing
    assert 0.97 * html <= got <= 1.10 * html, f"PDF has {got} Chinese characters, the HTML pages {html}"


@slow
def test_every_figure_is_embedded_numbered_and_captioned(pdf, pdf_xml, html_articles):
    figures = sum(len(re.findall(r"<img\b", a)) for a in html_articles.values())
    listed = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    images = [ln for ln in listed.splitlines()[2:] if ln.split()[2:3] == ["image"]]
    assert figures > 0 and len(images) == figures, f"{len(images)} images in the PDF, {figures} figures in the HTML"
    captions = _numbered_captions(pdf_xml)
    assert len(captions) == figures, f"{len(captions)} numbered captions for {figures} figures: {captions}"


def _numbered_captions(xml: str) -> list[str]:
    """Figure numbers of the captions: a line that starts with 图 N.M set smaller than the body
    text (prose that mentions a figure at the start of a line is in the body size)."""
    import collections

    sizes = {m.group(1): int(m.group(2)) for m in re.finditer(r'<fontspec id="(\d+)" size="(\d+)"', xml)}
    texts = [(f, _text(t).strip()) for f, t in re.findall(r'<text [^>]*font="(\d+)"[^>]*>(.*?)</text>', xml, re.S)]
    body = collections.Counter(sizes.get(f) for f, _ in texts).most_common(1)[0][0]
    found = []
    for i, (f, t) in enumerate(texts):
        if t.startswith("图") and sizes.get(f, body) < body:
            m = re.match(r"图\s*(\d+\.\d+)", t + " " + (texts[i + 1][1] if i + 1 < len(texts) else ""))
            if m:
                found.append(m.group(1))
    return found


@slow
def test_no_unresolved_reference_or_raw_role(pdf_text, latex_log):
    assert "??" not in pdf_text, "unresolved reference (??) in the PDF"
    assert "{glue" not in pdf_text and "glue:text" not in pdf_text, "a glue role was printed raw"
    assert "There were undefined references" not in latex_log
    assert not re.search(r"LaTeX Warning: (Reference|Citation) .* undefined", latex_log)


@slow
def test_glued_values_are_the_htmls(pdf_text, pdf_text_raw, html_articles):
    """Every value the pages paste (myst-nb glue) is printed in the PDF as in the HTML: found whole
    in the text in reading order as poppler's layout analysis gives it, or in drawing order (each
    reading misplaces a different few lines; a value missing or changed is missing from both)."""
    squashed, squashed_raw = _squash(pdf_text), _squash(pdf_text_raw)
    pasted = set()
    for a in html_articles.values():
        pasted |= {_text(v).strip() for v in re.findall(r'<span class="pasted-text">(.*?)</span>', a, re.S)}
    assert len(pasted) > 50, "the HTML pages paste fewer values than expected"
    missing = sorted(v for v in pasted if _squash(v) not in squashed and _squash(v) not in squashed_raw)
    assert not missing, f"glued values missing from the PDF: {missing[:10]}"


@slow
def test_provenance_of_measured_results(pdf_text, html_articles):
    lines = []
    for a in html_articles.values():
        text = _text(a)
        lines += [text[m.start():m.start() + 60].split("\n")[0] for m in PROVENANCE.finditer(text)]
    assert len(lines) >= 3, f"too few provenance lines in the HTML pages: {lines}"
    squashed = _squash(pdf_text)
    missing = [line for line in lines if _squash(line) not in squashed]
    assert not missing, f"provenance missing from the PDF: {missing}"


@slow
def test_fonts_cover_every_character(latex_log, pdf):
    """No glyph is missing (XeTeX drops it silently) and no CJK font is substituted."""
    missing = sorted(set(re.findall(r"Missing character: There is no (.) \(U\+([0-9A-F]+)\) in font ([^/!]+)", latex_log)))
    assert not missing, f"characters without a glyph: {missing[:10]}"
    subst = [ln for ln in latex_log.splitlines()
             if re.search(r"Package (xeCJK|fontspec|ctex) Warning|LaTeX Font Warning", ln)]
    assert not subst, "font warnings (a substituted or missing font):\n" + "\n".join(subst[:5])
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "NotoSerifCJK" in fonts and "NotoSansCJK" in fonts, fonts


@slow
def test_lines_fit_the_page(latex_log):
    """Wrapped code, sized tables, breakable long identifiers: nothing sticks out visibly."""
    over = [float(x) for x in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", latex_log)]
    assert not over or max(over) < 10, f"{len(over)} overfull lines, the worst {max(over):.1f} pt"


@slow
def test_internal_links_and_bookmarks(pdf_xml, html_articles):
    outline = re.findall(r"<item page=\"(\d+)\">", pdf_xml)
    assert len(outline) > 50, "too few bookmarks"
    body_start = int(outline[0])  # the front chapter's page: the table of contents is before it
    links = 0
    for number, page in re.findall(r"<page number=\"(\d+)\"(.*?)</page>", pdf_xml, re.S):
        if int(number) >= body_start:
            links += len(re.findall(r"<a href=\"[^\"#:]*#\d+\"", page))
    refs = sum(len(re.findall(r"<a class=\"reference internal\"", a)) for a in html_articles.values())
    assert refs and links >= refs, f"{links} internal links in the PDF's text, {refs} cross-references in the HTML"


@slow
def test_answers_are_printed(pdf_text, html_articles):
    """Folded answers (dropdowns in the HTML) are printed in the PDF."""
    answers = sum(len(re.findall(r"<details\b", a)) for a in html_articles.values())
    assert answers > 0
    titles = set()
    for a in html_articles.values():
        titles |= {_text(t).strip() for t in re.findall(r"<span class=\"sd-summary-text\">(.*?)</span>", a, re.S)}
    for t in titles:
        assert _squash(t) in _squash(pdf_text), f"answer title {t!r} missing"
    assert pdf_text.count("参考答案") >= sum(a.count("参考答案") for a in map(_text, html_articles.values()))


@slow
def test_html_links_the_pdf(pdf, built_book):
    from coursebook.pdf import PDF_NAME

    copy = built_book / PDF_NAME
    assert copy.is_file() and copy.read_bytes() == pdf.read_bytes(), "the PDF was not copied beside the HTML book"
    for page in _all_pages():
        html = built_book / f"{page}.html"
        hrefs = re.findall(rf"href=\"([^\"]*{re.escape(PDF_NAME)})\"", html.read_text(encoding="utf-8"))
        assert hrefs, f"{page}.html does not link the PDF"
        assert all((html.parent / h).resolve() == copy.resolve() for h in hrefs), hrefs


# ------------------------------------------------------------------ table layout (no build)
def test_a_narrow_table_is_left_to_tabulary():
    from coursebook.pdf import table_layout

    assert table_layout([["a", "1"], ["b", "2"]], 2, head=[["名", "值"]]) == ("", None)


def test_a_wide_table_fills_the_line_and_keeps_every_word_whole():
    from coursebook.pdf import LINE_UNITS, _width, _words, table_layout

    rows = [["pytorch.adamw.bytes_per_param", "26", "B", "ledger.ops.adamw",
             "bf16 gradients, fp32 param/m/v; 15 FLOP/param, and a long condition that must wrap " * 2]] * 4
    size, widths = table_layout(rows, 5, head=[["键 key", "数值", "单位", "出处 source", "条件 conditions"]])
    assert size == "" and abs(sum(widths) - LINE_UNITS) <= 5
    for i in range(5):
        assert widths[i] >= max(_width(w) for r in rows for w in _words(r[i]))
    assert widths[4] == max(widths)  # the column with the most text gets the most room
    assert widths[1] < widths[0]  # a short number column stays narrow


def test_words_too_long_for_the_line_shrink_the_font():
    from coursebook.pdf import table_layout

    word = "x" * 30  # no break point
    size, widths = table_layout([[word] * 3], 3)
    assert size in (r"\small", r"\footnotesize") and min(widths) >= 30


def test_break_points_of_long_identifiers():
    from coursebook.pdf import _words

    assert _words("kernels.gemm.report TFLOP/s 3.14 a_b 中文") == ["kernels.", "gemm.", "report", "TFLOP/", "s",
                                                                   "3.14", "a_", "b", "中", "文"]


def test_editing_the_pdf_builder_keeps_the_execution_cache(tmp_path, monkeypatch):
    """coursebook/pdf.py is read by no executed page: editing it must not re-run every page,
    while editing any other module of the package still does."""
    from coursebook import build as B

    (tmp_path / "coursebook").mkdir()
    builder, module = tmp_path / "coursebook" / "pdf.py", tmp_path / "coursebook" / "style.py"
    builder.write_text("A = 1\n")
    module.write_text("B = 1\n")
    monkeypatch.setattr(B, "ROOT", tmp_path)
    monkeypatch.setattr(B, "INPUTS", ("coursebook",))
    before = B.inputs_digest()
    builder.write_text("A = 2\n")
    assert B.inputs_digest() == before
    module.write_text("B = 2\n")
    assert B.inputs_digest() != before
