"""The book's own static files, without a build: the MathJax it serves and its stylesheet.

The browser tests (test_browser.py) check the same things on the built pages; these run in the
fast tier and say which file is wrong.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from coursebook import sphinxext

ROOT = Path(__file__).resolve().parents[2]
CSS = (ROOT / "coursebook" / "coursebook.css").read_text(encoding="utf-8")


def _app(tmp_path):
    return SimpleNamespace(outdir=str(tmp_path / "_build" / "html"),
                           config=SimpleNamespace(html_static_path=[], mathjax_path=""))


def test_mathjax_serves_what_its_accessibility_menu_loads(tmp_path):
    """Accessibility > Activate in MathJax's menu loads a11y/explorer, which needs the MathML
    input and the speech rule engine's locale files, from [mathjax]/sre/mathmaps: all of them
    are staged with tex-chtml.js, or an offline reader gets 404s and a page without formulas."""
    src = sphinxext.mathjax_source_dir()
    loader = (src / "tex-chtml.js").read_text(encoding="utf-8")
    assert 'sre:"[mathjax]/sre/mathmaps"' in loader.replace(" ", "")  # where MathJax asks for them
    app = _app(tmp_path)
    sphinxext._stage_mathjax(app)
    staged = tmp_path / "_build" / ".coursebook_static" / "mathjax"
    for rel in ("tex-chtml.js", "ui/menu.js", "a11y/explorer.js", "a11y/semantic-enrich.js", "a11y/sre.js",
                "input/mml.js", "sre/mathmaps/base.json", "sre/mathmaps/en.json",
                "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff"):
        assert (staged / rel).is_file(), f"MathJax's {rel} is not served"
    assert app.config.mathjax_path == "mathjax/tex-chtml.js"
    assert str(staged.parent) in app.config.html_static_path


def test_mathjax_is_staged_again_when_what_is_kept_changes(tmp_path, monkeypatch):
    """The staged copy is keyed on the source and on the list of what is kept: a component added
    to the list reaches the next build (a stamp of the source alone kept the old copy)."""
    app = _app(tmp_path)
    staged = tmp_path / "_build" / ".coursebook_static" / "mathjax"
    monkeypatch.setattr(sphinxext, "_KEEP", ("tex-chtml.js",))
    sphinxext._stage_mathjax(app)
    assert not (staged / "a11y").exists()
    monkeypatch.setattr(sphinxext, "_KEEP", ("tex-chtml.js", "a11y"))
    sphinxext._stage_mathjax(app)
    assert (staged / "a11y" / "explorer.js").is_file()


def _declaration(name: str) -> str:
    m = re.search(rf"{re.escape(name)}\s*:\s*([^;]+);", CSS)
    assert m, f"coursebook.css does not set {name}"
    return " ".join(m.group(1).split())


@pytest.mark.parametrize("variable", ["--pst-font-family-base", "--pst-font-family-monospace"])
def test_font_stacks_name_chinese_faces_before_the_generic_family(variable):
    names = [f.strip().strip('"') for f in _declaration(variable).split(",")]
    generic = next(i for i, n in enumerate(names) if n in ("sans-serif", "monospace"))
    cjk = {"PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", "Noto Sans Mono CJK SC"}
    assert cjk & set(names[:generic]), names
    if variable.endswith("base"):
        assert {"PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC"} <= set(names[:generic]), names


def test_no_fixed_width_wider_than_a_phone():
    """No rule of the book's stylesheet sets a width, or a minimum width, that a 360 px phone
    cannot hold -- except a figure's image, which keeps a legible 640 px on a phone inside
    its own link box, and that box is held to the column and scrolls."""
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", CSS, flags=re.S))
    wide = [(sel.strip(), m.group(0)) for sel, body in rules
            for m in re.finditer(r"(?<![\w-])(?:min-)?width\s*:\s*(\d+)px", body) if int(m.group(1)) > 360]
    assert wide and all(sel.endswith("a.cb-figure-link img") for sel, _ in wide), wide
    box = next(body for sel, body in rules if sel.strip() == ".bd-article a.cb-figure-link")
    assert "max-width: 100%" in box and "overflow-x: auto" in box, box
