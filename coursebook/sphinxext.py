"""Sphinx extension of the course: an offline, relocatable Chinese book.

* MathJax 3 is served from the build itself (``_static/mathjax``), copied from the
  ``django-static-mathjax`` wheel: no CDN URL in any page.
* Chinese search: ``html_search_language = "zh"`` (Sphinx splits with jieba when
  it is installed; this extension fails the build if it is not).  The index is cut
  with a user dictionary of the course's terms (the glossary's Chinese column plus
  :data:`EXTRA_TERMS`), so that 昇腾 or 算术强度 are index terms; the search page
  cuts the *query* with the index's own term list (``coursebook-search.js``) and
  shows snippets from page text embedded at build time (also from ``file://``).
* Reader experience: the sidebar toggles work at every width (``coursebook.js``),
  glued values keep the text's weight, nothing slides sideways on a phone
  (``coursebook.css``); every figure image gets a meaningful alt text and a link to
  its full-size file; every page offers its ``.md`` and an ``.ipynb`` in plain Jupyter
  markdown (:mod:`coursebook.notebook`).
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import posixpath
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes

__all__ = ["setup", "mathjax_source_dir", "course_terms", "page_search_text", "repository_url", "is_placeholder_url",
           "EXTRA_TERMS"]

HERE = Path(__file__).resolve().parent
#: The static files of this extension, next to this module.
ASSETS = ("coursebook.css", "coursebook.js", "coursebook-search.js")
#: Course terms that the glossary does not list but readers search for.  jieba's
#: own dictionary cuts most of them into pieces (昇 / 腾, 张量 / 核).
EXTRA_TERMS = (
    "昇腾", "张量核", "张量核心", "访存受限", "计算受限", "机器平衡点", "平衡点",
    "算术强度", "屋顶线", "脊点", "显存", "片上", "线程块", "寄存器", "共享内存",
    "全局内存", "双缓冲", "异步拷贝", "峰值带宽", "峰值算力", "时间下界", "逐元素",
    "归一化", "矩阵乘", "账本", "字节数", "融合", "分块", "流水线", "波次", "降级",
    "统一缓冲区", "向量单元", "持久化", "量化", "反量化", "累加器",
)
#: jieba frequency given to a course term: high enough that the term wins over the
#: pieces jieba's statistics would cut it into.
_TERM_FREQ = 200000

# What tex-chtml.js loads at run time: fonts, autoloaded TeX extensions, the menu, and what
# the menu's accessibility items load on demand -- the explorer and speech need the MathML
# input (a11y/semantic-enrich) and the speech rule engine's locale files (``[mathjax]/sre``),
# which would otherwise be fetched from nowhere offline (a 404, or a CDN).
_KEEP = ("tex-chtml.js", "output/chtml", "input/tex/extensions", "input/mml.js", "input/mml", "ui", "a11y",
         "adaptors", "sre/mathmaps")


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
    # the copy is redone when the source or the list of what is kept changes
    key = f"{src}\n{' '.join(_KEEP)}"
    if not (stamp.is_file() and stamp.read_text() == key):
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
        stamp.write_text(key)
    if str(stage) not in app.config.html_static_path:
        app.config.html_static_path.append(str(stage))
    app.config.mathjax_path = "mathjax/tex-chtml.js"


def _check_search(app) -> None:
    try:
        import jieba  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("Chinese search needs jieba: install the 'book' extra") from exc
    app.config.html_search_language = "zh"


# ------------------------------------------------------------------ search terms

_CJK = re.compile(r"^[\u3400-\u9fff\uf900-\ufaff]{2,}$")


def course_terms(srcdir: Path) -> list[str]:
    """The Chinese terms the index must keep whole: the first column of the glossary
    table (``book/appendix/glossary.md``) and :data:`EXTRA_TERMS`, sorted, unique."""
    terms = set(EXTRA_TERMS)
    glossary = Path(srcdir) / "book" / "appendix" / "glossary.md"
    if glossary.is_file():
        lines = [ln.strip() for ln in glossary.read_text(encoding="utf-8").splitlines()]
        for i, line in enumerate(lines):
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if not line.startswith("|") or re.match(r"^\|[\s:|-]+$", line) or re.match(r"^\|[\s:-]*-", following):
                continue  # not a row, a separator, or a header row
            first = line.strip("|").split("|")[0]
            # a cell may give variants: 张量核心（张量核）or 张量核心 / 张量核
            for word in re.split(r"[\s/、，,（）()]+", first):
                if _CJK.match(word):
                    terms.add(word)
    return sorted(t for t in terms if _CJK.match(t))


def _on_config_inited(app, config) -> None:
    """Give Sphinx's zh indexer a jieba user dictionary of the course's terms.

    The dictionary's digest is part of ``html_search_options``, so a changed term
    list changes the configuration and every page is indexed again."""
    terms = course_terms(Path(app.srcdir))
    text = "".join(f"{t} {_TERM_FREQ} n\n" for t in terms)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(app.outdir).parent / ".coursebook_search"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "jieba_userdict.txt"
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        path.write_text(text, encoding="utf-8")
    options = dict(config.html_search_options or {})
    options.update({"dict": str(path), "coursebook_terms": digest})
    config.html_search_options = options
    _repository_from_environment(config)


def repository_url(configured: str) -> str:
    """The course repository: ``repository.url`` in _config.yml is the one place it is
    named; ``COURSE_REPOSITORY_URL`` overrides it, and a build inside GitHub Actions
    links the repository it runs in.  ``""`` when what is left is a placeholder
    (:func:`is_placeholder_url`): a reader never gets a link that leads nowhere."""
    url = os.environ.get("COURSE_REPOSITORY_URL", "").strip()
    if not url and os.environ.get("GITHUB_ACTIONS") == "true" and os.environ.get("GITHUB_REPOSITORY"):
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        url = f"{server}/{os.environ['GITHUB_REPOSITORY']}"
    url = (url or configured or "").strip()
    return "" if is_placeholder_url(url) else url


#: Owner names that stand for "fill this in" (``https://github.com/OWNER/repo``).
_PLACEHOLDER_OWNERS = {"owner", "user", "username", "your-name", "yourname", "your-org", "your-username",
                       "org", "organization", "example", "xxx", "todo"}


def is_placeholder_url(url: str) -> bool:
    """Whether ``url`` is no real repository: empty, not ``https://host/owner/name``, an
    example host, or an owner that stands for "fill this in" (``OWNER``, ``<owner>``, ``USER``)."""
    m = re.fullmatch(r"https://([^/\s]+)/([^/\s]+)/([^/\s]+?)(?:\.git)?/?", (url or "").strip())
    if not m:
        return True
    host, owner, name = m.groups()
    return (owner.lower() in _PLACEHOLDER_OWNERS or bool(re.search(r"[<>{}]", owner + name))
            or host.lower() in ("example.com", "example.org") or host.lower().endswith(".example"))


def _repository_from_environment(config) -> None:
    """Link the real repository (:func:`repository_url`), or, when none is known, hide the
    header's repository button and drop the placeholder, so no page links it."""
    opts = dict(config.html_theme_options or {})
    configured = opts.get("repository_url", "")
    url = repository_url(configured)
    if url:
        if url != configured:
            opts["repository_url"] = url
            config.html_theme_options = opts
        return
    opts.pop("repository_url", None)
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button", "use_source_button"):
        opts[key] = False
    config.html_theme_options = opts


# ------------------------------------------------------------------ static files

def _stage_assets(app) -> None:
    stage = Path(app.outdir).parent / ".coursebook_static"
    stage.mkdir(parents=True, exist_ok=True)
    for name in ASSETS:
        src, dest = HERE / name, stage / name
        if not (dest.is_file() and dest.read_bytes() == src.read_bytes()):
            shutil.copy2(src, dest)
    if str(stage) not in app.config.html_static_path:
        app.config.html_static_path.append(str(stage))
    app.add_css_file("coursebook.css", priority=900)
    # Deferred, and placed in <head>: it runs after the page is parsed but before the
    # theme's deferred script at the end of <body> binds the sidebar toggles.
    app.add_js_file("coursebook.js", loading_method="defer")


def _on_builder_inited(app) -> None:
    if app.builder.format != "html":
        return
    _stage_mathjax(app)
    _check_search(app)
    _stage_assets(app)


# ------------------------------------------------------------------ figures

_FILE_LIKE = re.compile(r"(^|/)[0-9a-f]{16,}(\.\w+)?$|\.(png|jpe?g|gif|svg|pdf)$", re.I)


def _needs_alt(img: nodes.image) -> bool:
    alt = (img.get("alt") or "").strip()
    return not alt or alt == img.get("uri") or bool(_FILE_LIKE.search(alt))


def _figure_alt(img: nodes.image) -> str:
    """Alt text from the figure's caption; else from the section the image sits in."""
    fig = img.parent
    while fig is not None and not isinstance(fig, (nodes.figure, nodes.section, nodes.document)):
        fig = fig.parent
    if isinstance(fig, nodes.figure):
        caption = next(iter(fig.findall(nodes.caption)), None)
        if caption is not None and caption.astext().strip():
            return " ".join(caption.astext().split())
    sec = img.parent
    while sec is not None and not isinstance(sec, nodes.section):
        sec = sec.parent
    title = sec.next_node(nodes.title) if sec is not None else None
    if title is not None and title.astext().strip():
        return f"插图：{' '.join(title.astext().split())}"
    return "插图"


def _on_doctree_resolved(app, doctree, docname) -> None:
    """Meaningful alt texts for every image; on HTML, a link from each image to its
    full-size file (a phone shows the figure small; a tap opens it whole)."""
    html_builder = app.builder.format == "html"
    for img in list(doctree.findall(nodes.image)):
        if _needs_alt(img):
            img["alt"] = _figure_alt(img)
        if not html_builder or isinstance(img.parent, nodes.reference):
            continue
        key = img["uri"]
        if key not in app.env.images:
            cands = [c for c in (img.get("candidates") or {}).values() if c in app.env.images]
            if not cands:
                continue
            key = cands[0]
        imgpath = posixpath.relpath("_images", posixpath.dirname(app.builder.get_target_uri(docname)) or ".")
        ref = nodes.reference("", "", internal=True, classes=["cb-figure-link"],
                              refuri=posixpath.join(imgpath, app.env.images[key][1]))
        ref["reftitle"] = "点击查看原尺寸图片"
        img.replace_self(ref)
        ref.append(img)


# ------------------------------------------------------------------ page context

def _glue_of(app, docname: str) -> dict:
    """The glued outputs of a page ({key: mime bundle}), as myst-nb saved them."""
    path = Path(app.outdir).parent / "jupyter_execute" / f"{docname}.glue.json"
    if not path.is_file():
        return {}
    return {k: v.get("data", {}) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}


def _reader_refs(app, pagename):
    """What the book resolved for ``pagename``, for its reader notebook (coursebook.notebook)."""
    from coursebook.notebook import Refs

    env = app.env
    std = env.get_domain("std")
    labels = {name: sect for name, (_doc, _lid, sect) in std.labels.items() if sect}
    numbers = {}
    for name, (doc, lid) in std.anonlabels.items():
        for figtype, ids in env.toc_fignumbers.get(doc, {}).items():
            if lid in ids:
                numbers[name] = (figtype, ".".join(map(str, ids[lid])))
    fmt = {k: str(v) for k, v in (app.config.numfig_format or {}).items()}
    return Refs(docname=pagename, glue=_glue_of(app, pagename), labels=labels, numbers=numbers,
                numfig_format=fmt or Refs().numfig_format,
                titles={d: t.astext() for d, t in env.titles.items()},
                children=list(env.toctree_includes.get(pagename, [])),
                glue_of=lambda doc: _glue_of(app, doc))


def _notebook_download(app, pagename, context) -> None:
    """Offer every page as a notebook to download (``.ipynb``; the theme does this only when
    a launch service is configured, and this book is offline).  The reader gets plain
    Jupyter (coursebook.notebook): glued values, references and directives as the page shows
    them, not MyST that Jupyter would print raw.  A page with code is its executed notebook,
    a page without code a notebook of its text."""
    from coursebook.notebook import notebook_from_markdown, reader_notebook, run_note

    if context.get("ipynb_source") or not str(context.get("sourcename", "")).endswith((".md", ".md.txt")):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    source = Path(app.srcdir) / f"{pagename}.md"
    refs = _reader_refs(app, pagename)
    if executed.is_file():
        nb = reader_notebook(json.loads(executed.read_text(encoding="utf-8")), refs,
                             note=run_note(str(app.config.html_title or app.config.project or "")))
    elif source.is_file():
        nb = notebook_from_markdown(source.read_text(encoding="utf-8"), refs)
    else:
        return
    dest = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    context["ipynb_source"] = f"{pagename}.ipynb"


def _page_buttons(app, pagename, templatename, context, doctree) -> None:
    """Before the theme builds its header buttons: the notebook download; on the
    search page, the Chinese query splitter and the page text for snippets."""
    if app.builder.format != "html":
        return
    _notebook_download(app, pagename, context)
    if pagename == "search":
        app.add_js_file(SEARCH_TEXT_JS)
        app.add_js_file("coursebook-search.js", loading_method="defer")


def _page_scripts(app, pagename, templatename, context, doctree) -> None:
    """After every other extension added its scripts: drop thebe's (an online-kernel
    feature that points at a CDN and is registered twice by jupyter-book's default
    extension list) and any duplicate."""
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
    files[:] = kept


# ------------------------------------------------------------------ search snippets

#: The page text that search snippets quote, written at the end of the build.
SEARCH_TEXT_JS = "coursebook-search-text.js"
_SKIP_CLASSES = {"headerlink", "cell_input", "toctree-wrapper", "sd-summary-icon", "copybtn",
                 "visually-hidden", "sr-only"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


class _ArticleText(HTMLParser):
    """Reduce a page to the text of its article, keeping ``<section id>`` nesting (the
    search page asks for ``[role=main] #anchor``) and dropping code-cell inputs,
    header links, scripts and the like."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.depth = 0          # inside <article class="bd-article">
        self.skip = 0           # inside an element whose text is dropped
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, skipping, section)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if tag in _VOID:
            if tag == "br" and self.depth and not self.skip:
                self.out.append(" ")
            return
        if not self.depth:
            if tag == "article" and "bd-article" in classes:
                self.depth = 1
                self.stack.append((tag, False, False))
            return
        skipping = bool(self.skip) or tag in {"script", "style", "template"} or bool(classes & _SKIP_CLASSES)
        section = tag == "section" and not skipping and bool(a.get("id"))
        if skipping:
            self.skip += 1
        elif section:
            self.out.append(f'<section id="{html.escape(a["id"], quote=True)}">')
        elif tag in {"p", "li", "tr", "h1", "h2", "h3", "h4", "div", "td", "th", "dt", "dd", "pre"}:
            self.out.append(" ")
        self.stack.append((tag, skipping, section))

    def handle_endtag(self, tag):
        if not self.depth or tag in _VOID:
            return
        while self.stack:
            t, skipping, section = self.stack.pop()
            if skipping:
                self.skip -= 1
            if section:
                self.out.append("</section>")
            if t == "article" and not self.stack:
                self.depth = 0
            if t == tag:
                break

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.out.append(html.escape(data, quote=False))

    def text(self) -> str:
        joined = "".join(self.out)
        return re.sub(r"\s+", " ", joined).strip()


def page_search_text(page_html: str) -> str:
    """The article of one built page as ``<div role="main">`` + sections + text."""
    parser = _ArticleText()
    parser.feed(page_html)
    parser.close()
    return f'<div role="main">{parser.text()}</div>'


def _write_search_text(app) -> None:
    out = Path(app.outdir)
    found = app.builder.get_outfilename if hasattr(app.builder, "get_outfilename") else None
    pages = {}
    for docname in sorted(app.env.found_docs):
        path = Path(found(docname)) if found else out / f"{docname}.html"
        if path.is_file():
            pages[docname] = page_search_text(path.read_text(encoding="utf-8"))
    payload = json.dumps(pages, ensure_ascii=False, separators=(",", ":"))
    (out / "_static").mkdir(exist_ok=True)
    (out / "_static" / SEARCH_TEXT_JS).write_text(
        f"window.COURSEBOOK_SEARCH_TEXT = {payload};\n", encoding="utf-8")


def _on_build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html" and app.builder.name == "html":
        _write_search_text(app)


def setup(app):
    app.connect("config-inited", _on_config_inited)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("doctree-resolved", _on_doctree_resolved)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _page_buttons, priority=400)
    # after sphinx.ext.mathjax and the others add their scripts (priority 500)
    app.connect("html-page-context", _page_scripts, priority=900)
    app.connect("build-finished", _on_build_finished)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
