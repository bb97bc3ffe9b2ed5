"""The rendered book in a real browser (headless Chromium driven by Playwright).

Every page loads without console errors, math is typeset by the local MathJax,
a Chinese search finds the expected page, a collapsible answer opens, and the book
works under a URL prefix and from file://.
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "_build" / "screenshots"


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
    page, errors = _open(browser, f"{server}/search.html?q=%E5%B8%A6%E5%AE%BD")  # 带宽
    page.wait_for_selector("#search-results li a", timeout=20000)
    hrefs = [a.get_attribute("href") for a in page.locator("#search-results li a").all()]
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
