"""The rendered book in a real browser (headless Chromium driven by Playwright).

Every page loads without console errors, math is typeset by the local MathJax,
a Chinese search finds the expected page, a collapsible answer opens, and the book
works under a URL prefix and from file://.

The reader's side (issue 18): the sidebar buttons open and close at phone and
tablet widths and ☰ collapses the sidebar on a desktop; Chinese search finds the
course's core terms and quotes page text, also from file://; no page scrolls
sideways at 360 px, the narrowest phone in common use; figures keep a legible size on a
phone (scrolling in their own box), have meaningful alt texts and open full size; titles are set at a
phone's scale; Chinese text is given a Chinese face; glued values keep the text's
weight; no bold runs away; every page links the repository and offers its .ipynb
and .md; MathJax's accessibility explorer works offline.  Pages are taken from the built
HTML, so new pages are covered without editing this file.

Most checks look at every page, and loading a page is what costs, so each page is
loaded once per width and the tests read what that visit collected: ``desktop_visits``
(1280 px: console errors, bold, glued values, the repository link, the download menu),
``phone_visits`` (360 px touch screen: width, figures, headings, sidebar buttons) and
``tablet_visits`` (820 px: sidebar buttons).  A visit runs its checks in order, those
that click or tap last; the pages of one width follow each other in one tab (``_Tab``),
each from a blank start.  A check that raises on one page (``_Failed``) becomes a
problem of that page, reported by the test that owns the check.  A new check of every
page belongs in these visits, not in a loop of page loads of its own.
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
PHONE, TABLET, DESKTOP = 360, 820, 1280


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


DESKTOP_VIEWPORT = {"width": DESKTOP, "height": 900}


def _listen(page, requests=True):
    """The list that the page's listeners fill: console errors and uncaught exceptions,
    with ``requests`` also failed requests and HTTP errors."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    if requests:
        # A request the browser aborts because the page navigated on (the root redirect)
        # is not a failure of the book; every other failed request is.
        page.on("requestfailed", lambda r: None if "ERR_ABORTED" in (r.failure or "")
                else errors.append(f"request failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    return errors


def _open(browser, url):
    page = browser.new_page(viewport=DESKTOP_VIEWPORT)
    errors = _listen(page)
    page.goto(url, wait_until="load")
    return page, errors


def _all_pages(built_book):
    return sorted(p.relative_to(built_book).as_posix() for p in built_book.rglob("*.html")
                  if "_static" not in p.parts and p.name not in {"genindex.html"})


def _touch_screen(browser, width, height=844):
    """A browser context of a touch screen of the given width (phone 390 px, tablet 820 px)."""
    return browser.new_context(viewport={"width": width, "height": height}, has_touch=True,
                               is_mobile=width < DESKTOP, device_scale_factor=2)


def _mobile(browser, url, width, height=844):
    """A touch page of the given width, in a context of its own."""
    ctx = _touch_screen(browser, width, height)
    page = ctx.new_page()
    errors = _listen(page, requests=False)
    page.goto(url, wait_until="load")
    return ctx, page, errors


def _content_pages(built_book):
    """Pages with an article (everything but the search page and the root redirect)."""
    return [rel for rel in _all_pages(built_book)
            if rel not in {"search.html", "index.html"}
            and 'class="bd-article"' in (built_book / rel).read_text(encoding="utf-8")]


# ---------------------------------------------------------------- one visit a page and width

#: How long a tap or click may take to show its effect (it normally does in a frame or two).
WAIT_MS = 3000


class _Failed(str):
    """A check that raised on a page (a timeout, a crashed page): a problem of that page."""

    def __new__(cls, exc: BaseException):
        text = str(exc).strip().splitlines()
        return super().__new__(cls, f"check failed: {type(exc).__name__}: {text[0] if text else ''}")


def _in_time(wait) -> bool:
    """Whether ``wait()``, a Playwright wait with a timeout, saw its condition in time."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        wait()
    except PlaywrightTimeout:
        return False
    return True


#: Run first in a tab's every document: start it with the empty storage of a new tab.
_FRESH_STORAGE = ("if (window === window.top) try { sessionStorage.clear(); localStorage.clear(); }"
                  " catch (e) {}")


class _Tab:
    """One tab of the browser context ``ctx`` that visits page after page: three times
    as fast as a new tab a page (its renderer and script caches stay warm), yet every
    page starts fresh -- from about:blank, with empty storage and an empty error list
    (the listeners of ``_open``, or with ``requests=False`` those of ``_mobile``)."""

    def __init__(self, ctx, requests=True):
        self.ctx, self.requests = ctx, requests
        self._new()

    def _new(self):
        self.page = self.ctx.new_page()
        self.page.add_init_script(_FRESH_STORAGE)
        self.errors = _listen(self.page, self.requests)

    def load(self, url):
        try:
            self.page.goto("about:blank")
            self.errors.clear()
            self.page.goto(url, wait_until="load")
        except Exception:
            self.page.close()  # a crashed or stuck tab: the next page gets a new one
            self._new()
            raise
        return self.page, self.errors


def _visit(tab, url, checks):
    """Load ``url`` in ``tab`` and run ``checks`` ({name: check(page, errors)}) on it in
    order.  Returns {name: result}; a check that raises gives a _Failed and the next
    still run.  A check returns a copy of what it reads: the tab reuses its error list."""
    try:
        page, errors = tab.load(url)
    except Exception as exc:  # the page did not load: every check fails with it
        return dict.fromkeys(checks, _Failed(exc))
    results = {}
    for name, check in checks.items():
        try:
            results[name] = check(page, errors)
        except Exception as exc:
            results[name] = _Failed(exc)
    return results


def _is_notebook(rel):
    src = ROOT / Path(rel).with_suffix(".md")
    return src.is_file() and "kernelspec:" in src.read_text(encoding="utf-8")[:800]


@pytest.fixture(scope="module")
def desktop_visits(browser, server, built_book):
    """Every page opened once at desktop width (the listeners of ``_open``)."""
    content = set(_content_pages(built_book))
    url = _repository_url()
    ctx = browser.new_context(viewport=DESKTOP_VIEWPORT)
    tab = _Tab(ctx)
    visits = {}
    for rel in _all_pages(built_book):
        checks = {"errors": _errors_after_load}
        if rel in content:
            checks["bold"] = _bold_report
            if "pasted-text" in (built_book / rel).read_text(encoding="utf-8"):
                checks["glued"] = _glued_weights
            checks["repository"] = functools.partial(_repository_link_shown, url=url)
            checks["downloads"] = functools.partial(_download_links, rel=rel)  # last: it opens a menu
        visits[rel] = _visit(tab, f"{server}/{rel}", checks)
    ctx.close()
    return visits


@pytest.fixture(scope="module")
def phone_visits(browser, server, built_book):
    """Every page but the root redirect opened once on a phone (the listeners of
    ``_mobile``).  Pages without an article (search) are only measured; on the others
    the sidebar buttons, which change the page, go last, and the errors are read when
    the visit is done."""
    content = set(_content_pages(built_book))
    checks = {"width": _phone_overflow, "images": _images, "headings": _heading_sizes,
              "sidebars": _sidebar_problems, "errors": _errors_so_far}
    ctx = _touch_screen(browser, PHONE)
    tab = _Tab(ctx, requests=False)
    visits = {rel: _visit(tab, f"{server}/{rel}", checks if rel in content else {"width": _phone_overflow})
              for rel in _all_pages(built_book) if rel != "index.html"}
    ctx.close()
    return visits


@pytest.fixture(scope="module")
def tablet_visits(browser, server, built_book):
    """Every content page opened once on a tablet, for its sidebar buttons."""
    checks = {"sidebars": _sidebar_problems, "errors": _errors_so_far}
    ctx = _touch_screen(browser, TABLET)
    tab = _Tab(ctx, requests=False)
    visits = {rel: _visit(tab, f"{server}/{rel}", checks) for rel in _content_pages(built_book)}
    ctx.close()
    return visits


def _errors_so_far(page, errors):
    """What the listeners caught from the load to the end of the visit."""
    return list(errors)


def _errors_after_load(page, errors):
    """What ``_open``'s listeners caught by 150 ms after the load event."""
    page.wait_for_timeout(150)
    return list(errors)


def test_every_page_loads_cleanly(built_book, desktop_visits):
    problems = {}
    for rel in _all_pages(built_book):
        errors = desktop_visits[rel]["errors"]
        if errors:
            problems[rel] = [errors] if isinstance(errors, _Failed) else errors
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

#: How many links inside the sidebar dialog ``id`` a reader can actually see on screen.
_VISIBLE_LINKS = """(id) => {
    const d = document.getElementById(id);
    if (!d || !d.open) return 0;
    return [...d.querySelectorAll('a')].filter(a => {
        const r = a.getBoundingClientRect(), s = getComputedStyle(a);
        return r.width > 0 && r.height > 0 && r.right > 0 && r.left < innerWidth
            && r.bottom > 0 && r.top < innerHeight && s.visibility !== 'hidden';
    }).length;
}"""
#: The dialog is open and shows links.
_SHOWN = f"(id) => ({_VISIBLE_LINKS})(id) > 0"
#: No transition or animation of the dialog itself is running.
_STILL = "(id) => !document.getElementById(id).getAnimations().length"
#: The dialog is closed and shows no link.
_CLOSED = f"(id) => !document.getElementById(id).open && ({_VISIBLE_LINKS})(id) === 0"
_SIDEBARS = (("primary-toggle", "pst-primary-sidebar-modal"),
             ("secondary-toggle", "pst-secondary-sidebar-modal"))


def _tap_outside(page, dialog_id):
    """Tap the backdrop: the side of the screen the dialog does not cover.  Returns
    the problem when the dialog leaves no side to tap, else None."""
    box = page.evaluate("(id) => { const r = document.getElementById(id).getBoundingClientRect();"
                        " return [r.left, r.right, innerWidth, innerHeight]; }", dialog_id)
    left, right, width, height = box
    x = (right + width) / 2 if width - right > left else left / 2
    if not ((width - right > 8) or (left > 8)):
        return f"the {dialog_id} dialog covers the whole width"
    page.touchscreen.tap(x, height / 2)
    return None


def _sidebar_problems(page, errors=None):
    """Tap ☰ and the contents button in turn; each must show its sidebar dialog, and a tap
    on the backdrop must close it.  Returns {button class: problem}."""
    problems = {}
    for cls, dialog in _SIDEBARS:
        buttons = [b for b in page.locator(f".{cls}").all() if b.is_visible()]
        if cls == "secondary-toggle" and not buttons and not page.locator("nav.page-toc a").count():
            continue  # a page without sections has no contents button
        if len(buttons) != 1:
            problems[cls] = f"{len(buttons)} visible buttons"
            continue
        if page.evaluate(_VISIBLE_LINKS, dialog):
            problems[cls] = "sidebar visible before the tap"
        buttons[0].tap()
        if not _in_time(lambda: page.wait_for_function(_SHOWN, arg=dialog, timeout=WAIT_MS)):
            problems[cls] = "tap did not show the sidebar"
            continue
        # Let it finish sliding in, so the tap beside it lands beside where it stops.
        _in_time(lambda: page.wait_for_function(_STILL, arg=dialog, timeout=WAIT_MS))
        covers = _tap_outside(page, dialog)
        if covers:
            problems[cls] = covers
            continue
        if not _in_time(lambda: page.wait_for_function(_CLOSED, arg=dialog, timeout=WAIT_MS)):
            problems[cls] = "tap outside did not close the sidebar"
    return problems


@pytest.mark.parametrize("width", [PHONE, TABLET])
def test_sidebar_buttons_open_and_close_on_touch_screens(request, built_book, width):
    """☰ opens the book's navigation, the list button the page's contents; a tap on
    the backdrop closes them again -- on every page, at phone and tablet width."""
    visits = request.getfixturevalue("phone_visits" if width == PHONE else "tablet_visits")
    problems = {}
    for rel in _content_pages(built_book):
        sidebars, errors = visits[rel]["sidebars"], visits[rel]["errors"]
        if isinstance(sidebars, _Failed):
            problems[(rel, "sidebars")] = sidebars
        else:
            problems.update({(rel, cls): problem for cls, problem in sidebars.items()})
        if errors:
            problems[(rel, "errors")] = errors
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


def _phone_overflow(page, errors=None):
    """None when the page fits the phone's width, else (scroll width, inner width, culprits)."""
    _settled(page)
    # A mobile browser widens its layout viewport to fit wide content (innerWidth
    # grows with it), so compare with the phone's width itself.
    sw, iw = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    if max(sw, iw) <= PHONE:
        return None
    culprits = page.evaluate("""(w) => [...document.querySelectorAll('.bd-article *')]
        .filter(e => e.getBoundingClientRect().right > w + 1)
        .slice(0, 3).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 50))""", PHONE)
    return (sw, iw, culprits)


def test_no_page_scrolls_sideways_on_a_phone(built_book, phone_visits):
    wide = {}
    for rel in _all_pages(built_book):
        if rel == "index.html":
            continue  # the root redirect
        overflow = phone_visits[rel]["width"]
        if overflow:
            wide[rel] = overflow
    assert not wide, f"pages wider than a {PHONE} px phone: {wide}"


_FILE_LIKE = re.compile(r"(^|/)[0-9a-f]{16,}(\.\w+)?$|\.(png|jpe?g|gif|svg)$", re.I)


def _images(page, errors=None):
    """The article's images as a phone shows them."""
    return page.evaluate("""() => [...document.querySelectorAll('.bd-article img')].map(img => ({
        alt: img.getAttribute('alt') || '', src: img.getAttribute('src'),
        link: img.closest('a') ? img.closest('a').getAttribute('href') : null,
        natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
        column: (box => box.clientWidth - parseFloat(getComputedStyle(box).paddingLeft)
                 - parseFloat(getComputedStyle(box).paddingRight))(img.closest('figure') || img.closest('.bd-article'))}))""")


def test_figures_have_alt_text_and_open_full_size(browser, server, built_book, phone_visits):
    """Every content image has an alt text that is words, not a file name; it links
    to its full-size file; on a phone it is shown at a legible size (scrolling in its
    own box) and a tap opens the file."""
    problems, seen = {}, 0
    first_with_images = None
    for rel in _content_pages(built_book):
        images = phone_visits[rel]["images"]
        if isinstance(images, _Failed):
            problems[(rel, "images")] = images
            continue
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
        if images and first_with_images is None:
            first_with_images = rel
    tapped = False
    if first_with_images:  # a tap on the first figure of the book opens its file
        ctx, page, _ = _mobile(browser, f"{server}/{first_with_images}", PHONE)
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


def _glued_weights(page, errors=None):
    """[glued value's font weight, its sentence's] for each glued value in running text."""
    return page.evaluate("""() => [...document.querySelectorAll('p span.pasted-text')]
        .filter(s => !s.closest('strong, b, th, h1, h2, h3, h4'))
        .map(s => [getComputedStyle(s).fontWeight, getComputedStyle(s.closest('p')).fontWeight])""")


def test_glued_values_keep_the_text_weight(built_book, desktop_visits):
    checked = 0
    for rel in _content_pages(built_book):
        if "pasted-text" not in (built_book / rel).read_text(encoding="utf-8"):
            continue
        pairs = desktop_visits[rel]["glued"]
        assert not isinstance(pairs, _Failed), f"{rel}: {pairs}"
        bold = [p for p in pairs if p[0] != p[1]]
        assert not bold, f"{rel}: glued values heavier than their sentence: {bold[:3]}"
        checked += len(pairs)
    assert checked, "no glued value found in a paragraph"


#: A bold run longer than this many characters is a broken emphasis, not a stress.
MAX_BOLD_CHARS = 80


def _bold_report(page, errors=None):
    """The article's nested bold, overlong bold runs and stray ``**`` outside code."""
    return page.evaluate("""(limit) => {
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


def test_no_runaway_bold(built_book, desktop_visits):
    """Markdown emphasis that failed to close (CommonMark will not close ``**`` after
    a full-width bracket followed by a letter: ``**…）**的``) shows as nested bold, a
    stray ``**`` or a bold run half a paragraph long."""
    problems = {}
    for rel in _content_pages(built_book):
        report = desktop_visits[rel]["bold"]
        if isinstance(report, _Failed) or any(report.values()):
            problems[rel] = report
    assert not problems, problems


def _repository_url():
    import yaml

    from coursebook.sphinxext import repository_url

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return repository_url(config["repository"]["url"])


def _repository_link_shown(page, errors=None, *, url):
    """Whether the page shows a link to ``url``; without a real URL (None), whether it
    shows any repository link."""
    if url:
        links = page.locator(f'a[href="{url}"]')
        return bool(links.count()) and any(a.is_visible() for a in links.all())
    shown = page.locator('a[href*="/OWNER/"], [class*="source-repository-button"], a[title="Source repository"]')
    return any(a.is_visible() for a in shown.all())


def test_every_page_links_the_repository(built_book, desktop_visits):
    """With a real repository URL every page shows a link to it; without one (the placeholder of
    _config.yml) no page shows a repository link at all."""
    url = _repository_url()
    missing = []
    for rel in _content_pages(built_book):
        shown = desktop_visits[rel]["repository"]
        if isinstance(shown, _Failed):
            missing.append(f"{rel} ({shown})")
        elif (not shown) if url else shown:
            missing.append(rel)
    assert not missing, (f"no visible link to {url}: {missing}" if url else
                         f"a repository link without a real URL: {missing}")


def _download_links(page, errors=None, *, rel):
    """Open the page's download menu: {suffix: (links, shown, href)} for .ipynb and .md."""
    page.locator("button[aria-label='Download this page'], .dropdown-download-buttons button").first.click()
    found = {}
    for suffix in (".ipynb", ".md"):
        link = page.locator(f".dropdown-download-buttons a[href$='{Path(rel).stem}{suffix}']")
        count = link.count()
        if count != 1:
            found[suffix] = (count, False, None)
            continue
        shown = _in_time(lambda: link.wait_for(state="visible", timeout=WAIT_MS))
        found[suffix] = (count, shown, link.get_attribute("href"))
    return found


def test_every_page_offers_ipynb_and_md(built_book, desktop_visits):
    """Every page offers an .ipynb and its .md: a page written as a MyST notebook its executed
    notebook, a page without code a notebook of its text (coursebook.notebook)."""
    checked = 0
    for rel in _content_pages(built_book):
        downloads = desktop_visits[rel]["downloads"]
        assert not isinstance(downloads, _Failed), f"{rel}: {downloads}"
        for suffix in (".ipynb", ".md"):
            count, shown, href = downloads[suffix]
            assert count == 1, f"{rel}: no {suffix} download"
            assert shown, f"{rel}: the {suffix} download is not shown"
            target = ((built_book / rel).parent / href).resolve()
            assert target.is_file(), target
        nb = json.loads(target.with_suffix(".ipynb").read_text(encoding="utf-8"))
        assert nb["nbformat"] == 4 and nb["cells"], rel
        assert any(c["cell_type"] == "code" for c in nb["cells"]) == _is_notebook(rel), rel
        checked += 1
    assert checked, "no notebook page found"


#: The largest title a phone shows (px): the theme's 42 px breaks a short Chinese title over three lines.
PHONE_TITLE_PX = 30


def _heading_sizes(page, errors=None):
    """{tag: font size in px} of the first h1, h2 and h3 of the article."""
    return page.evaluate("""() => Object.fromEntries(['h1', 'h2', 'h3'].map(t => [t,
        document.querySelector('.bd-article ' + t)]).filter(([t, e]) => e)
        .map(([t, e]) => [t, parseFloat(getComputedStyle(e).fontSize)]))""")


def test_titles_are_set_at_a_phone_scale(built_book, phone_visits):
    too_big, seen = {}, 0
    for rel in _content_pages(built_book):
        sizes = phone_visits[rel]["headings"]
        assert not isinstance(sizes, _Failed), f"{rel}: {sizes}"
        seen += len(sizes)
        big = {t: s for t, s in sizes.items() if s > PHONE_TITLE_PX}
        if big or sizes.get("h2", 0) > sizes.get("h1", 99) or sizes.get("h3", 0) > sizes.get("h2", 99):
            too_big[rel] = sizes
    assert seen
    assert not too_big, f"titles larger than {PHONE_TITLE_PX} px (or out of order) on a phone: {too_big}"


#: One CJK face of each family of systems: macOS/iOS, Windows, Linux and Android.
CJK_FACES = ("PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC")


def test_chinese_text_is_given_chinese_faces(browser, server):
    """Body, headings and code name a CJK face of every system before the generic family, so
    Windows and a Linux desktop do not fall back to SimSun or a Japanese variant of Noto."""
    page, errors = _open(browser, f"{server}/book/intro.html")
    families = page.evaluate("""() => ['body', '.bd-article h1', '.bd-article code'].map(s => {
        const e = document.querySelector(s); return e ? getComputedStyle(e).fontFamily : ''; })""")
    for selector, family in zip(("body", "h1", "code"), families):
        names = [f.strip().strip('"') for f in family.split(",")]
        generic = next((i for i, n in enumerate(names) if n in ("sans-serif", "monospace", "serif")), len(names))
        missing = [face for face in CJK_FACES if face not in names[:generic]]
        if selector != "code":
            assert not missing, f"{selector}: {family}"
        else:
            assert len(missing) < len(CJK_FACES), f"{selector}: {family}"
    page.close()


def test_math_accessibility_explorer_works_offline(browser, server, built_book):
    """MathJax's menu item Accessibility > Activate loads the explorer, the MathML input and the
    speech rule engine's locale files from the build (no request fails), and every formula is
    still on the page afterwards, now with its spoken form (mathjax/MathJax #3124: without the
    retry in coursebook.js every formula vanishes)."""
    rel = "book/gemm/measured.html"
    assert "math notranslate" in (built_book / rel).read_text(encoding="utf-8")
    page, errors = _open(browser, f"{server}/{rel}")
    page.wait_for_selector("mjx-container", timeout=20000)
    page.evaluate("() => MathJax.startup.promise")
    before = page.locator("mjx-container").count()
    result = page.evaluate("""async () => {
        MathJax.startup.document.menu.menu.pool.lookup('explorer').setValue(true);
        for (let i = 0; i < 80; i++) {
            await new Promise(r => setTimeout(r, 250));
            const spoken = document.querySelectorAll('mjx-container[aria-label]');
            if (spoken.length) return [document.querySelectorAll('mjx-container').length, spoken[0].getAttribute('aria-label')];
        }
        return [document.querySelectorAll('mjx-container').length, null];
    }""")
    assert result[0] == before, f"{before} formulas before the explorer, {result[0]} after"
    assert result[1], "no formula got a spoken form"
    assert not errors, errors
    page.close()


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
