"""The rendered book in a real browser (headless Chromium driven by Playwright).

Every page loads without console errors, math is typeset by the local MathJax,
a Chinese search finds the expected page, a collapsible answer opens, and the book
works under a URL prefix and from file://.

The reader's side (issue 18): the sidebar buttons open and close at phone and
tablet widths and ☰ collapses the sidebar on a desktop; Chinese search finds the
course's core terms and quotes page text, also from file://; no page scrolls
sideways at 390 px; figures have meaningful alt texts and open full size; glued
values keep the text's weight; no bold runs away; every page links the repository
and notebook pages offer their .ipynb and .md.  Pages are taken from the built
HTML, so new pages are covered without editing this file.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "_build" / "screenshots"
PHONE, TABLET, DESKTOP = 390, 820, 1280


@pytest.fixture(scope="module")
def server(built_book):
    """Serve _build/ so the book lives under the prefix /html/ (relocation check)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep test output readable
            pass

    handler = functools.partial(Quiet, directory=str(built_book.parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/html"
    httpd.shutdown()


def _fontconfig(tmp: Path) -> Path:
    """A fontconfig file that adds the book's CJK font (shipped by mplfonts) to the
    system fonts, so screenshots show Chinese even where no CJK font is installed."""
    from coursebook.style import cjk_font_path

    conf = tmp / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig>'
        '<include ignore_missing="yes">/etc/fonts/fonts.conf</include>'
        f"<dir>{cjk_font_path().parent}</dir><cachedir>{tmp / 'cache'}</cachedir></fontconfig>",
        encoding="utf-8",
    )
    return conf


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install the distribution package 'chromium'")
    from playwright.sync_api import sync_playwright

    conf = _fontconfig(tmp_path_factory.mktemp("fonts"))
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True, env=env)
        yield b
        b.close()


def _open(browser, url):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    # A request the browser aborts because the page navigated on (the root redirect)
    # is not a failure of the book; every other failed request is.
    page.on("requestfailed", lambda r: None if "ERR_ABORTED" in (r.failure or "")
            else errors.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="load")
    return page, errors


def _all_pages(built_book):
    return sorted(p.relative_to(built_book).as_posix() for p in built_book.rglob("*.html")
                  if "_static" not in p.parts and p.name not in {"genindex.html"})


def test_every_page_loads_cleanly(browser, server, built_book):
    problems = {}
    for rel in _all_pages(built_book):
        page, errors = _open(browser, f"{server}/{rel}")
        page.wait_for_timeout(150)
        if errors:
            problems[rel] = errors
        page.close()
    assert not problems, f"pages with console errors: {problems}"


def test_math_is_typeset(browser, server, built_book):
    pages_with_math = [rel for rel in _all_pages(built_book)
                       if "math notranslate" in (built_book / rel).read_text(encoding="utf-8")]
    assert pages_with_math, "no page has math to typeset"
    page, errors = _open(browser, f"{server}/{pages_with_math[0]}")
    page.wait_for_selector("mjx-container", timeout=20000)
    assert page.locator("mjx-container").count() > 0
    assert not errors, errors
    page.close()


def test_chinese_search_finds_the_page(browser, server):
    page, errors = _open(browser, f"{server}/search.html")
    # Sphinx lists the results one by one (5 ms apart): read them once the search has finished,
    # or a book of many pages shows only the first few.
    hrefs = [r["href"] for r in _search(page, server, "带宽")]  # bandwidth
    assert any("glossary" in (h or "") for h in hrefs), hrefs
    assert not errors, errors
    page.close()


def test_collapsible_answer_opens(browser, server, built_book):
    candidates = [rel for rel in _all_pages(built_book)
                  if "sd-dropdown" in (built_book / rel).read_text(encoding="utf-8")]
    assert candidates, "no page has a collapsible answer (sphinx-design dropdown)"
    page, errors = _open(browser, f"{server}/{candidates[0]}")
    box = page.locator("details.sd-dropdown").first
    assert box.get_attribute("open") is None, "answer should start closed"
    box.locator("summary").click()
    page.wait_for_timeout(200)
    assert box.get_attribute("open") is not None, "clicking the summary did not open the answer"
    assert box.locator(".sd-summary-content").is_visible()
    page.close()


def test_works_from_file_url(browser, built_book):
    page, errors = _open(browser, (built_book / "book" / "appendix" / "glossary.html").as_uri())
    # CSS from the relative _static path must have applied: the theme sets a layout grid.
    assert page.locator("link[rel=stylesheet]").count() > 0
    assert page.evaluate("getComputedStyle(document.body).fontFamily") != ""
    real = [e for e in errors if "favicon" not in e]
    assert not real, real
    page.close()


def test_screenshots_of_chapters(browser, server, built_book):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for rel in _all_pages(built_book):
        if not rel.startswith("book/ch_"):
            continue
        page, _ = _open(browser, f"{server}/{rel}")
        out = SHOTS / (Path(rel).stem + ".png")
        page.screenshot(path=str(out), full_page=False)
        assert out.stat().st_size > 10_000
        page.close()


# ---------------------------------------------------------------- reader experience

def _mobile(browser, url, width, height=844):
    """A touch page of the given width (phone 390 px, tablet 820 px)."""
    ctx = browser.new_context(viewport={"width": width, "height": height}, has_touch=True,
                              is_mobile=width < DESKTOP, device_scale_factor=2)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.goto(url, wait_until="load")
    return ctx, page, errors


def _content_pages(built_book):
    """Pages with an article (everything but the search page and the root redirect)."""
    return [rel for rel in _all_pages(built_book)
            if rel not in {"search.html", "index.html"}
            and 'class="bd-article"' in (built_book / rel).read_text(encoding="utf-8")]


def _visible_links(page, dialog_id):
    """Links inside a sidebar dialog that a reader can actually see on screen."""
    return page.evaluate("""(id) => {
        const d = document.getElementById(id);
        if (!d || !d.open) return 0;
        return [...d.querySelectorAll('a')].filter(a => {
            const r = a.getBoundingClientRect(), s = getComputedStyle(a);
            return r.width > 0 && r.height > 0 && r.right > 0 && r.left < innerWidth
                && r.bottom > 0 && r.top < innerHeight && s.visibility !== 'hidden';
        }).length;
    }""", dialog_id)


def _tap_outside(page, dialog_id):
    """Tap the backdrop: the side of the screen the dialog does not cover."""
    box = page.evaluate("(id) => { const r = document.getElementById(id).getBoundingClientRect();"
                        " return [r.left, r.right, innerWidth, innerHeight]; }", dialog_id)
    left, right, width, height = box
    x = (right + width) / 2 if width - right > left else left / 2
    assert (width - right > 8) or (left > 8), f"the {dialog_id} dialog covers the whole width"
    page.touchscreen.tap(x, height / 2)
    page.wait_for_timeout(300)


@pytest.mark.parametrize("width", [PHONE, TABLET])
def test_sidebar_buttons_open_and_close_on_touch_screens(browser, server, built_book, width):
    """☰ opens the book's navigation, the list button the page's contents; a tap on
    the backdrop closes them again -- on every page, at phone and tablet width."""
    problems = {}
    for rel in _content_pages(built_book):
        ctx, page, errors = _mobile(browser, f"{server}/{rel}", width)
        for cls, dialog in (("primary-toggle", "pst-primary-sidebar-modal"),
                            ("secondary-toggle", "pst-secondary-sidebar-modal")):
            buttons = [b for b in page.locator(f".{cls}").all() if b.is_visible()]
            if cls == "secondary-toggle" and not buttons and not page.locator("nav.page-toc a").count():
                continue  # a page without sections has no contents button
            if len(buttons) != 1:
                problems[(rel, cls)] = f"{len(buttons)} visible buttons"
                continue
            if _visible_links(page, dialog):
                problems[(rel, cls)] = "sidebar visible before the tap"
            buttons[0].tap()
            page.wait_for_timeout(400)
            shown = _visible_links(page, dialog)
            if not shown:
                problems[(rel, cls)] = "tap did not show the sidebar"
                continue
            _tap_outside(page, dialog)
            if page.evaluate(f"document.getElementById('{dialog}').open") or _visible_links(page, dialog):
                problems[(rel, cls)] = "tap outside did not close the sidebar"
        if errors:
            problems[(rel, "errors")] = errors
        ctx.close()
    assert not problems, problems


def test_menu_button_collapses_the_sidebar_on_desktop(browser, server, built_book):
    page, errors = _open(browser, f"{server}/{_content_pages(built_book)[0]}")
    sidebar = page.locator("#pst-primary-sidebar")
    link = sidebar.locator(".bd-links a").first
    assert link.is_visible(), "the navigation is not shown on a desktop"
    width0 = page.evaluate("document.querySelector('.bd-article').getBoundingClientRect().width")
    visible = [b for b in page.locator(".primary-toggle").all() if b.is_visible()]
    assert len(visible) == 1, f"{len(visible)} visible ☰ buttons"
    visible[0].click()
    page.wait_for_timeout(800)
    assert not link.is_visible(), "☰ did not hide the navigation"
    assert not page.evaluate("document.getElementById('pst-primary-sidebar-modal').open"), \
        "☰ opened the phone dialog on a desktop instead of collapsing the sidebar"
    width1 = page.evaluate("document.querySelector('.bd-article').getBoundingClientRect().width")
    assert width1 > width0, "the text did not take the freed space"
    visible[0].click()
    page.wait_for_timeout(800)
    assert link.is_visible(), "a second ☰ did not bring the navigation back"
    assert not errors, errors
    page.close()


# Ten core terms of the course; each must find every page that uses it.
CORE_TERMS = ["算术强度", "张量核", "昇腾", "访存受限", "机器平衡点",
              "屋顶线", "共享内存", "寄存器", "流水线", "统一缓冲区"]


def _page_text(built_book, rel):
    """Visible article text of a built page (no code-cell inputs), as search sees it."""
    from coursebook.sphinxext import page_search_text

    return re.sub(r"<[^>]+>", "", page_search_text((built_book / rel).read_text(encoding="utf-8")))


def _search(page, base, query):
    page.goto(f"{base}/search.html?q={urllib.parse.quote(query)}", wait_until="load")
    page.wait_for_function("() => { const s = document.querySelector('#search-results p.search-summary');"
                           " return s && s.innerText.trim().length > 0; }", timeout=30000)
    # snippets arrive one by one after the result list
    page.wait_for_function("() => [...document.querySelectorAll('#search-results li')]"
                           ".every(li => li.querySelector('p.context'))", timeout=30000)
    return page.evaluate("""() => [...document.querySelectorAll('#search-results li')].map(li => ({
        href: li.querySelector('a').getAttribute('href'),
        snippet: (li.querySelector('p.context') || {}).innerText || ''}))""")


def _result_page(href):
    return href.split("#")[0].split("?")[0]


def test_search_index_keeps_course_terms_whole(built_book):
    """The index holds each core term as one word (jieba alone cuts 昇腾 into 昇 / 腾,
    single characters that the index drops)."""
    text = (built_book / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1: text.rindex(")")])
    missing = [t for t in CORE_TERMS if t not in index["terms"] and t not in index["titleterms"]]
    assert not missing, f"not index terms: {missing}"


def test_chinese_search_finds_core_terms_offline(browser, built_book):
    """From file:// (no server): each core term finds exactly the pages whose text
    uses it, and every result quotes text around the term, not the page's contents."""
    base = built_book.as_uri()
    texts = {rel: _page_text(built_book, rel) for rel in _content_pages(built_book)}
    page, errors = _open(browser, (built_book / "search.html").as_uri())
    problems = {}
    for term in CORE_TERMS:
        expected = {rel for rel, text in texts.items() if term in text}
        assert expected, f"no page uses {term}: pick another core term"
        results = _search(page, base, term)
        found = {_result_page(r["href"]) for r in results}
        if not expected <= found:
            problems[term] = f"missing {sorted(expected - found)}"
        wrong = {rel for rel in found if term not in (built_book / rel).read_text(encoding="utf-8")}
        if wrong:
            problems[(term, "wrong")] = sorted(wrong)
        bad = [r for r in results if term not in r["snippet"]]
        if bad:
            problems[(term, "snippet")] = [(r["href"], r["snippet"][:60]) for r in bad]
    real = [e for e in errors if "favicon" not in e]
    assert not real, real
    assert not problems, problems
    page.close()


def test_search_query_is_cut_like_the_index(browser, server):
    """A phrase is cut into index words; a word the book never uses finds nothing."""
    page, errors = _open(browser, f"{server}/search.html")
    page.wait_for_function("() => typeof Search !== 'undefined' && Search.hasIndex()", timeout=20000)
    words = page.evaluate("coursebookSplitQuery('共享内存的带宽')")
    assert words == ["共享内存", "带宽"], words
    assert page.evaluate("coursebookSplitQuery('昇腾 NPU')") == ["昇腾", "NPU"]
    results = _search(page, server, "量子纠缠")
    assert results == [], results
    results = _search(page, server, "共享内存的带宽")
    assert results and all(r["snippet"] for r in results), results
    assert not errors, errors
    page.close()


def _settled(page):
    """Wait for MathJax (typeset math can widen a line) and fonts."""
    page.evaluate("() => (window.MathJax && MathJax.startup && MathJax.startup.promise) || null")
    page.evaluate("() => document.fonts.ready.then(() => true)")
    page.wait_for_timeout(200)


def test_no_page_scrolls_sideways_on_a_phone(browser, server, built_book):
    wide = {}
    for rel in _all_pages(built_book):
        if rel == "index.html":
            continue  # the root redirect
        ctx, page, _ = _mobile(browser, f"{server}/{rel}", PHONE)
        _settled(page)
        # A mobile browser widens its layout viewport to fit wide content (innerWidth
        # grows with it), so compare with the phone's width itself.
        sw, iw = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        if max(sw, iw) > PHONE:
            culprits = page.evaluate("""(w) => [...document.querySelectorAll('.bd-article *')]
                .filter(e => e.getBoundingClientRect().right > w + 1)
                .slice(0, 3).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 50))""", PHONE)
            wide[rel] = (sw, iw, culprits)
        ctx.close()
    assert not wide, f"pages wider than a 390 px phone: {wide}"


_FILE_LIKE = re.compile(r"(^|/)[0-9a-f]{16,}(\.\w+)?$|\.(png|jpe?g|gif|svg)$", re.I)


def test_figures_have_alt_text_and_open_full_size(browser, server, built_book):
    """Every content image has an alt text that is words, not a file name; it links
    to its full-size file; on a phone it is shown at a legible size (scrolling in its
    own box) and a tap opens the file."""
    problems, seen = {}, 0
    tapped = False
    for rel in _content_pages(built_book):
        ctx, page, _ = _mobile(browser, f"{server}/{rel}", PHONE)
        images = page.evaluate("""() => [...document.querySelectorAll('.bd-article img')].map(img => ({
            alt: img.getAttribute('alt') || '', src: img.getAttribute('src'),
            link: img.closest('a') ? img.closest('a').getAttribute('href') : null,
            natural: img.naturalWidth, shown: img.getBoundingClientRect().width}))""")
        for img in images:
            seen += 1
            alt = img["alt"].strip()
            if not alt or _FILE_LIKE.search(alt) or alt == img["src"]:
                problems[(rel, img["src"])] = f"alt text {alt!r}"
            if not img["link"]:
                problems[(rel, img["src"], "link")] = "no link to the full-size image"
                continue
            target = (built_book / rel).parent / urllib.parse.unquote(img["link"])
            if not target.resolve().is_file():
                problems[(rel, img["src"], "link")] = f"link to a missing file {img['link']}"
            legible = min(img["natural"], 600)
            if img["shown"] < legible - 1:
                problems[(rel, img["src"], "size")] = f"shown {img['shown']:.0f} px of {img['natural']} px"
        if images and not tapped:
            first = page.locator(".bd-article a.cb-figure-link img").first
            first.scroll_into_view_if_needed()
            with page.expect_navigation():
                first.tap()
            assert page.url.endswith(".png") or page.url.endswith(".svg"), page.url
            tapped = True
        ctx.close()
    assert seen, "the book has no figures"
    assert tapped
    assert not problems, problems


def test_glued_values_keep_the_text_weight(browser, server, built_book):
    checked = 0
    for rel in _content_pages(built_book):
        if "pasted-text" not in (built_book / rel).read_text(encoding="utf-8"):
            continue
        page, _ = _open(browser, f"{server}/{rel}")
        pairs = page.evaluate("""() => [...document.querySelectorAll('p span.pasted-text')]
            .filter(s => !s.closest('strong, b, th, h1, h2, h3, h4'))
            .map(s => [getComputedStyle(s).fontWeight, getComputedStyle(s.closest('p')).fontWeight])""")
        bold = [p for p in pairs if p[0] != p[1]]
        assert not bold, f"{rel}: glued values heavier than their sentence: {bold[:3]}"
        checked += len(pairs)
        page.close()
    assert checked, "no glued value found in a paragraph"


#: A bold run longer than this many characters is a broken emphasis, not a stress.
MAX_BOLD_CHARS = 80


def test_no_runaway_bold(browser, server, built_book):
    """Markdown emphasis that failed to close (CommonMark will not close ``**`` after
    a full-width bracket followed by a letter: ``**…）**的``) shows as nested bold, a
    stray ``**`` or a bold run half a paragraph long."""
    problems = {}
    for rel in _content_pages(built_book):
        page, _ = _open(browser, f"{server}/{rel}")
        report = page.evaluate("""(limit) => {
            const art = document.querySelector('.bd-article');
            const nested = [...art.querySelectorAll('strong strong, b b, strong b, b strong')]
                .map(e => e.textContent.slice(0, 40));
            const long = [...art.querySelectorAll('strong, b')].map(e => e.textContent)
                .filter(t => [...t].length > limit).map(t => t.slice(0, 40));
            const walker = document.createTreeWalker(art, NodeFilter.SHOW_TEXT);
            const stray = [];
            for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                if (n.parentElement.closest('pre, code, script, style, .highlight, mjx-container')) continue;
                if (n.data.includes('**')) stray.push(n.data.slice(0, 60));
            }
            return {nested, long, stray};
        }""", MAX_BOLD_CHARS)
        if any(report.values()):
            problems[rel] = report
        page.close()
    assert not problems, problems


def _repository_url():
    import yaml

    from coursebook.sphinxext import repository_url

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return repository_url(config["repository"]["url"])


def test_every_page_links_the_repository(browser, server, built_book):
    """With a real repository URL every page shows a link to it; without one (the placeholder of
    _config.yml) no page shows a repository link at all."""
    url = _repository_url()
    missing = []
    for rel in _content_pages(built_book):
        page, _ = _open(browser, f"{server}/{rel}")
        if url:
            links = page.locator(f'a[href="{url}"]')
            if not links.count() or not any(a.is_visible() for a in links.all()):
                missing.append(rel)
        else:
            shown = page.locator('a[href*="/OWNER/"], [class*="source-repository-button"], a[title="Source repository"]')
            if any(a.is_visible() for a in shown.all()):
                missing.append(rel)
        page.close()
    assert not missing, (f"no visible link to {url}: {missing}" if url else
                         f"a repository link without a real URL: {missing}")


def test_notebook_pages_offer_ipynb_and_md(browser, server, built_book):
    """A page written as a MyST notebook offers its executed .ipynb and its .md."""
    checked = 0
    for rel in _content_pages(built_book):
        src = ROOT / Path(rel).with_suffix(".md")
        if not (src.is_file() and "kernelspec:" in src.read_text(encoding="utf-8")[:800]):
            continue
        page, _ = _open(browser, f"{server}/{rel}")
        page.locator("button[aria-label='Download this page'], .dropdown-download-buttons button").first.click()
        page.wait_for_timeout(300)
        for suffix in (".ipynb", ".md"):
            link = page.locator(f".dropdown-download-buttons a[href$='{Path(rel).stem}{suffix}']")
            assert link.count() == 1, f"{rel}: no {suffix} download"
            assert link.is_visible(), f"{rel}: the {suffix} download is not shown"
            target = ((built_book / rel).parent / link.get_attribute("href")).resolve()
            assert target.is_file(), target
        nb = json.loads(target.with_suffix(".ipynb").read_text(encoding="utf-8"))
        assert nb["nbformat"] == 4 and any(c["cell_type"] == "code" for c in nb["cells"]), rel
        checked += 1
        page.close()
    assert checked, "no notebook page found"


# ---------------------------------------------------------------- numbered figures

MINI_PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# 图的写法

## 直线

```{code-cell} ipython3
:tags: [remove-cell]
from matplotlib.figure import Figure
from matplotlib_inline.backend_inline import set_matplotlib_formats
from myst_nb import glue
set_matplotlib_formats("png")
fig = Figure(figsize=(7.2, 3))
fig.subplots().plot([0, 1], [0, 1])
glue("demo.line", fig, display=False)
```

```{glue:figure} demo.line
:name: fig-demo-line

字节数随元素数线性增长
```

如 {numref}`fig-demo-line` 所示。

```{code-cell} ipython3
---
tags: [remove-input]
mystnb:
  figure:
    caption: 单元格的输出直接成图
    name: fig-demo-cell
---
fig2 = Figure(figsize=(7.2, 3))
fig2.subplots().bar([1, 2], [3, 4])
fig2
```

见 {numref}`fig-demo-cell`。
"""


@pytest.fixture(scope="module")
def mini_book(tmp_path_factory):
    """A two-page book with this project's _config.yml and one page that writes a
    numbered, captioned figure both ways DEVELOPING.md describes."""
    root = tmp_path_factory.mktemp("minibook")
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "book" / "_static").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_static" / "favicon.svg", root / "book" / "_static")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: 正文\n"
                                   "    numbered: true\n    chapters:\n      - file: book/figs\n",
                                   encoding="utf-8")
    (root / "book" / "intro.md").write_text("# 小书\n\n前言。\n", encoding="utf-8")
    (root / "book" / "figs.md").write_text(MINI_PAGE, encoding="utf-8")
    exe = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(exe), "build", str(root), "--builder", "html", "-W", "--keep-going"],
                          cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "_build" / "html"


def test_glued_figure_is_numbered_with_caption_alt_and_link(browser, mini_book):
    page, errors = _open(browser, (mini_book / "book" / "figs.html").as_uri())
    figs = page.evaluate("""() => [...document.querySelectorAll('figure')].map(f => ({
        id: f.id, number: (f.querySelector('.caption-number') || {}).textContent || '',
        caption: (f.querySelector('.caption-text') || {}).textContent || '',
        alt: f.querySelector('img').getAttribute('alt'),
        link: f.querySelector('img').closest('a') && f.querySelector('img').closest('a').getAttribute('href')}))""")
    assert [f["id"] for f in figs] == ["fig-demo-line", "fig-demo-cell"], figs
    assert [f["number"].strip() for f in figs] == ["图 1.1", "图 1.2"], figs
    assert [f["caption"] for f in figs] == ["字节数随元素数线性增长", "单元格的输出直接成图"], figs
    assert [f["alt"] for f in figs] == [f["caption"] for f in figs], figs
    for f in figs:
        assert f["link"] and (mini_book / "book" / f["link"]).resolve().is_file(), f
    refs = page.locator("span.std-numref").all_inner_texts()
    assert refs == ["图 1.1", "图 1.2"], refs
    real = [e for e in errors if "favicon" not in e]
    assert not real, real
    page.close()
