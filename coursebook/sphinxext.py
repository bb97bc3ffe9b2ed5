"""Sphinx extension of the course: an offline, relocatable Chinese book.

* MathJax 3 is served from the build itself (``_static/mathjax``), copied from the
  ``django-static-mathjax`` wheel: no CDN URL in any page.
* Chinese search: ``html_search_language = "zh"`` (Sphinx splits with jieba when
  it is installed; this extension fails the build if it is not).
"""
from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["setup", "mathjax_source_dir"]

# What tex-chtml.js loads at run time: fonts, autoloaded TeX extensions, menu, a11y.
_KEEP = ("tex-chtml.js", "output/chtml", "input/tex/extensions", "ui", "a11y", "adaptors")


def mathjax_source_dir() -> Path:
    try:
        import mathjax  # the django-static-mathjax wheel
    except ImportError as exc:
        raise RuntimeError("local MathJax missing: install the 'book' extra (django-static-mathjax)") from exc
    base = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (base / "tex-chtml.js").is_file():
        raise RuntimeError(f"MathJax es5 build not found under {base}")
    return base


def _stage_mathjax(app) -> None:
    src = mathjax_source_dir()
    stage = Path(app.outdir).parent / ".coursebook_static"
    dest = stage / "mathjax"
    stamp = dest / ".source"
    if not (stamp.is_file() and stamp.read_text() == str(src)):
        if dest.exists():
            shutil.rmtree(dest)
        for rel in _KEEP:
            s = src / rel
            d = dest / rel
            d.parent.mkdir(parents=True, exist_ok=True)
            if s.is_dir():
                shutil.copytree(s, d)
            else:
                shutil.copy2(s, d)
        stamp.write_text(str(src))
    if str(stage) not in app.config.html_static_path:
        app.config.html_static_path.append(str(stage))
    app.config.mathjax_path = "mathjax/tex-chtml.js"


def _check_search(app) -> None:
    try:
        import jieba  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("Chinese search needs jieba: install the 'book' extra") from exc
    app.config.html_search_language = "zh"


def _on_builder_inited(app) -> None:
    if app.builder.format != "html":
        return
    _stage_mathjax(app)
    _check_search(app)


def _page_context(app, pagename, templatename, context, doctree) -> None:
    """Drop thebe's scripts (an online-kernel feature that points at a CDN and is
    registered twice by jupyter-book's default extension list) and any duplicate."""
    files = context.get("script_files")
    if not files:
        return
    kept, seen = [], set()
    for js in files:
        body = str(getattr(js, "attributes", {}).get("body", ""))
        name = str(getattr(js, "filename", js) or "")
        if "thebe" in name.lower() or "THEBE" in body:
            continue
        ident = (name, body)
        if ident in seen:
            continue
        seen.add(ident)
        kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    app.connect("html-page-context", _page_context)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
