"""The strict build passes and its HTML is offline, Chinese and relocatable."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)


def _pages(html: Path) -> list[Path]:
    return [p for p in html.rglob("*.html") if "_static" not in p.parts]


def test_build_produces_every_toc_page(built_book):
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def files_of(entry):
        return [entry["file"]] + [f for sub in entry.get("sections") or [] for f in files_of(sub)]

    files = [toc["root"]] + [f for part in toc["parts"] for c in part["chapters"] for f in files_of(c)]
    for f in files:
        assert (built_book / f"{f}.html").is_file(), f"{f}.html not built"


def test_no_resource_loaded_from_the_network(built_book):
    offenders = []
    for page in _pages(built_book):
        for m in EXTERNAL.finditer(page.read_text(encoding="utf-8")):
            offenders.append(f"{page.relative_to(built_book)}: {m.group(0)[:120]}")
    assert not offenders, "pages load resources from the network:\n" + "\n".join(offenders)


def test_mathjax_is_local(built_book):
    assert (built_book / "_static" / "mathjax" / "tex-chtml.js").is_file()
    fonts = list((built_book / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert len(fonts) > 10, "MathJax CHTML fonts were not copied"
    page = (built_book / "book" / "intro.html").read_text(encoding="utf-8")
    assert "cdn.jsdelivr" not in page and "mathjax/tex-chtml.js" in page


def test_links_are_relative(built_book):
    for page in _pages(built_book):
        text = page.read_text(encoding="utf-8")
        bad = re.findall(r"""(?:src|href)\s*=\s*["'](/(?!/)[^"']*)""", text)
        assert not bad, f"{page.relative_to(built_book)} uses root-absolute URLs: {bad[:3]}"


def test_html_declares_chinese(built_book):
    text = (built_book / "book" / "intro.html").read_text(encoding="utf-8")
    assert re.search(r'<html[^>]*lang="zh[-_]CN"', text)


def test_search_index_has_whole_chinese_words(built_book):
    index = (built_book / "searchindex.js").read_text(encoding="utf-8")
    # jieba segments 峰值带宽 into words; a two-character word must be a term.
    assert '"\\u5e26\\u5bbd"' in index or '"带宽"' in index, "带宽 is not a search term"


def test_repository_button_only_with_a_real_url(built_book):
    """Every page shows the header's repository button linking the real repository, or -- when
    none is known (the placeholder of _config.yml) -- no page shows the button or the placeholder."""
    import yaml

    from coursebook.sphinxext import repository_url

    configured = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
    url = repository_url(configured)
    wrong = []
    for page in _pages(built_book):
        text = page.read_text(encoding="utf-8")
        button = "source-repository-button" in text
        if "/OWNER/" in text or (configured != url and configured in text):
            wrong.append(f"{page.relative_to(built_book)}: links the placeholder")
        elif url and page.name not in ("search.html", "genindex.html") and "bd-article" in text and (
                not button or f'href="{url}"' not in text):
            wrong.append(f"{page.relative_to(built_book)}: no button to {url}")
        elif not url and button:
            wrong.append(f"{page.relative_to(built_book)}: a repository button without a real URL")
    assert not wrong, wrong[:5]


def test_no_hard_coded_chapter_numbers(repo_root):
    pattern = re.compile(r"第\s*[0-9一二三四五六七八九十]+\s*章")
    hits = []
    for page in (repo_root / "book").rglob("*.md"):
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and "草稿" not in line:
                hits.append(f"{page.relative_to(repo_root)}:{i}: {line.strip()[:80]}")
    assert not hits, "cross-reference chapters by label, not by number:\n" + "\n".join(hits)


def test_stamp_records_the_inputs_the_build_started_from(tmp_path, monkeypatch):
    """An input edited while the book builds must leave the cache stale for the next build:
    the stamp is the digest taken before the build, not after."""
    import subprocess

    from coursebook import build as B

    (tmp_path / "pkg").mkdir()
    src = tmp_path / "pkg" / "mod.py"
    src.write_text("A = 1\n")
    out = tmp_path / "_build" / "html"
    monkeypatch.setattr(B, "ROOT", tmp_path)
    monkeypatch.setattr(B, "OUT", out)
    monkeypatch.setattr(B, "CACHE", tmp_path / "_build" / ".jupyter_cache")
    monkeypatch.setattr(B, "STAMP", tmp_path / "_build" / ".inputs.sha256")
    monkeypatch.setattr(B, "INPUTS", ("pkg",))
    before = B.inputs_digest()

    def fake_jupyter_book(cmd, cwd=None):
        src.write_text("A = 2\n")  # someone saves a file halfway through the build
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=book/intro.html">')
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(B.subprocess, "run", fake_jupyter_book)
    B.build(strict=True)
    assert B.STAMP.read_text().strip() == before != B.inputs_digest()
    stale, _ = B._invalidate_stale_cache()
    assert stale  # the next build re-executes every page
