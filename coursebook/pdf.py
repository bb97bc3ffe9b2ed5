"""The PDF edition: ``python -m coursebook.pdf [--no-strict]``.

Sphinx's LaTeX builder writes ``_build/latex/book.tex`` from the same executed pages
as the HTML book -- the Jupyter execution cache is shared, so no page runs twice --
and ``latexmk`` turns it into ``_build/latex/book.pdf`` with XeLaTeX and ``ctex``
(CJK fonts: Noto CJK from Debian's fonts-noto-cjk).  The PDF is then copied beside
the HTML book as ``_build/html/tilelang-course.pdf``.

The module is also a Sphinx extension (``_config.yml`` lists it).  For the LaTeX
builder it sets the preamble and reshapes the assembled book:

* the root page becomes an unnumbered front chapter, each part of ``_toc.yml`` a
  part entry in the table of contents; numbered parts number their chapters like the
  HTML book (1, 2, ...), unnumbered parts (the appendices) stay unnumbered;
* a notebook output image becomes a numbered figure; its caption is the caption the
  page gives (``mystnb: figure: caption:``) or else the title of its section;
* a cell output that is only HTML (a table a page rendered itself) becomes document
  nodes, so its text, tables and code print;
* a table longer than LONG_ROWS rows may break across pages; a wide one gets column
  widths from its content, and a smaller font if its words alone are too wide;
* long identifiers in inline code and tables may break after ``_``, ``/`` and ``.``;
* a dropdown (folded answer) becomes an admonition, printed open;
* Unicode relations in prose (≥, ⌈…⌉) are set in math; circled digits and symbols
  in the CJK font, so no glyph is missing.

For the HTML builder it adds a download link for the PDF to the sidebar's icon links.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
OUT = BUILD / "latex"
DOCTREES = BUILD / ".doctrees-latex"
TEX = "book.tex"
PDF_NAME = "tilelang-course.pdf"  # the file's name beside the HTML book

__all__ = ["build", "latex_elements", "setup", "PDF_NAME", "OUT", "TEX"]

# Debian fonts-noto-cjk; fontspec finds them by name through fontconfig.
CJK_SERIF = "Noto Serif CJK SC"
CJK_SANS = "Noto Sans CJK SC"
CJK_MONO = "Noto Sans Mono CJK SC"
SECNUMDEPTH = 3  # the HTML book numbers down to 3.3.8.1

_FONTS = rf"""
\usepackage[UTF8,scheme=plain,fontset=none]{{ctex}}
% symbols Latin Modern lacks and the CJK fonts have: set them with the CJK font
\xeCJKDeclareCharClass{{CJK}}{{"2460->"24FF, "25A0->"27BF}}
\setCJKmainfont{{{CJK_SERIF}}}[BoldFont={{{CJK_SANS}}}, ItalicFont={{{CJK_SERIF}}}]
\setCJKsansfont{{{CJK_SANS}}}
\setCJKmonofont{{{CJK_MONO}}}
\setmainfont{{Latin Modern Roman}}
\setsansfont{{Latin Modern Sans}}
\setmonofont{{lmmono10-regular.otf}}[ItalicFont=lmmono10-italic.otf, BoldFont=lmmonolt10-bold.otf,
  BoldItalicFont=lmmonolt10-boldoblique.otf]
"""

# Relations and brackets that prose writes as Unicode characters: set them in math.
_TEXT_MATH = {"≥": r"\geq", "≤": r"\leq", "≈": r"\approx", "≠": r"\neq", "≪": r"\ll", "≫": r"\gg",
              "∝": r"\propto", "∞": r"\infty", "⌈": r"\lceil", "⌉": r"\rceil", "⌊": r"\lfloor",
              "⌋": r"\rfloor", "√": r"\surd", "∑": r"\sum", "∈": r"\in",
              "ᵀ": r"{}^{\mathrm{T}}"}

_PREAMBLE = r"""
\usepackage{newunicodechar}
""" + "".join(rf"\newunicodechar{{{ch}}}{{\ensuremath{{{cmd}}}}}" + "\n" for ch, cmd in _TEXT_MATH.items()) + r"""
% chapter headings: 第 N 章 for numbered chapters; unnumbered ones show the title only
\titleformat{\chapter}[display]{\normalfont\sffamily\bfseries\huge}
  {第\,\thechapter\,章}{16pt}{\Huge}
\titlespacing*{\chapter}{0pt}{0pt}{28pt}
\usepackage[labelsep=quad,font=small]{caption}
\renewcommand{\contentsname}{目录}
\renewcommand{\figurename}{图}
\renewcommand{\tablename}{表}
\setcounter{tocdepth}{1}
% long identifiers (test names, config labels) may break after an underscore
\DeclareRobustCommand{\_}{\textunderscore\hspace{0pt}}
\setlength{\emergencystretch}{3em}
% table columns of given width: ragged right (narrow justified CJK columns gape)
\makeatletter
\newcolumntype{\X}[2]{>{\raggedright\arraybackslash}p{\dimexpr
      (\linewidth-\spx@arrayrulewidth)*#1/#2-\tw@\tabcolsep-\spx@arrayrulewidth\relax}}
% the running head: 第 N 章 title (unnumbered chapters: the title alone)
\renewcommand{\chaptermark}[1]{\markboth{\ifnum\c@secnumdepth>\m@ne 第\,\thechapter\,章\quad\fi #1}{}}
\makeatother
\setlength{\headheight}{14pt}
% the book's tables carry no caption: a table continued on the next page says so without a number
\renewcommand{\sphinxtablecontinued}[1]{{\footnotesize\itshape
  \def\tablename{}\def\thetable{}\def\textendash{}\ignorespaces#1}}
\hypersetup{bookmarksnumbered=true}
"""


def latex_elements() -> dict[str, str]:
    """The ``latex_elements`` of the PDF edition (the book's own settings win)."""
    return {
        "papersize": "a4paper",
        "pointsize": "10pt",
        "extraclassoptions": "openany,oneside",  # read on screen: no blank pages before chapters
        "babel": "",
        "polyglossia": "",
        "fontenc": "",
        "fontpkg": _FONTS,
        "fvset": r"\fvset{fontsize=\small,formatcom=\xeCJKVerbAddon}",
        "fncychap": "",
        "figure_align": "H",
        "printindex": "",
        "makeindex": "",
        "sphinxsetup": "verbatimwrapslines=true, verbatimforcewraps=true, verbatimmaxunderfull=2",
        "preamble": _PREAMBLE,
    }


# ------------------------------------------------------------------ Sphinx extension
def _config_inited(app, config) -> None:
    elements = latex_elements()
    elements.update(config.latex_elements or {})
    config.latex_elements = elements
    config.latex_engine = "xelatex"
    config.latex_use_xindy = False
    config.latex_domain_indices = False
    config.latex_show_urls = "no"
    config.latex_show_pagerefs = False
    config.latex_toplevel_sectioning = "chapter"


def _post_transforms():
    """The LaTeX-only post-transforms (built lazily: Sphinx is imported by the build)."""
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class HtmlOutputs(SphinxPostTransform):
        """A cell output that exists only as HTML (and plain-text repr) is converted to
        document nodes, so the PDF prints its paragraphs, tables and code."""

        default_priority = 3  # before myst-nb picks a mime type (4)
        formats = ("latex",)

        def run(self, **kwargs) -> None:
            from sphinx.util import logging

            log = logging.getLogger(__name__)
            for bundle in list(self.document.findall(nodes.container)):
                if bundle.get("nb_element") != "mime_bundle":
                    continue
                kinds = {c.get("mime_type"): c for c in bundle.children}
                html = kinds.get("text/html")
                if html is None or set(kinds) & {"text/markdown", "text/latex", "image/png", "image/jpeg",
                                                  "application/pdf", "image/svg+xml"}:
                    continue
                converted, unknown = html_to_nodes("".join(r.astext() for r in html.findall(nodes.raw)))
                if unknown:
                    log.warning("HTML output: tags %s printed as plain text in the PDF", sorted(set(unknown)),
                                location=bundle)
                html.children = []
                html.extend(converted)
                html["mime_type"] = "text/markdown"

    class Dropdowns(SphinxPostTransform):
        """A sphinx-design dropdown prints as an admonition with its title (open)."""

        default_priority = 150
        formats = ("latex",)

        def run(self, **kwargs) -> None:
            for node in list(self.document.findall(nodes.container)):
                if node.get("design_component") != "dropdown":
                    continue
                children = list(node.children)
                title = ""
                if children and isinstance(children[0], nodes.rubric):
                    title = children.pop(0).astext()
                adm = nodes.admonition("", nodes.title(title, title or "参考答案"), *children)
                adm["classes"] = ["note"]
                adm.source, adm.line = node.source, node.line
                node.replace_self(adm)

    class OutputFigures(SphinxPostTransform):
        """An image a notebook cell printed becomes a numbered figure with a caption."""

        default_priority = 155
        formats = ("latex",)

        def run(self, **kwargs) -> None:
            for img in list(self.document.findall(nodes.image)):
                if not _in_cell_output(img) or _ancestor(img, nodes.figure) is not None:
                    continue  # not a cell's output, or already a figure (the page gave a caption)
                section = _ancestor(img, nodes.section)
                text = section[0].astext() if section is not None and section.children else ""
                fig = nodes.figure("", img.deepcopy(), nodes.caption(text, text))
                fig["align"] = "center"
                fig.source, fig.line = img.source, img.line
                img.replace_self(fig)

    class Tables(SphinxPostTransform):
        """A table of more than LONG_ROWS rows is a longtable (it breaks across
        pages).  One whose text is wider than the page gets column widths from its
        content (a column never narrower than its longest unbreakable word) and, if
        still too wide, a smaller font."""

        default_priority = 160
        formats = ("latex",)

        def run(self, **kwargs) -> None:
            for table in list(self.document.findall(nodes.table)):
                group = next(iter(table.findall(nodes.tgroup)), None)
                if group is None:
                    continue
                specs = [c for c in group.children if isinstance(c, nodes.colspec)]
                head = [[e.astext() for e in r.children if isinstance(e, nodes.entry)]
                        for h in group.findall(nodes.thead) for r in h.findall(nodes.row)]
                body = [[e.astext() for e in r.children if isinstance(e, nodes.entry)]
                        for b in group.findall(nodes.tbody) for r in b.findall(nodes.row)]
                if len(body) > LONG_ROWS and "longtable" not in table["classes"]:
                    table["classes"].append("longtable")
                size, widths = table_layout(body, len(specs), head=head)
                if widths is None:
                    continue
                for spec, w in zip(specs, widths):
                    spec["colwidth"] = w
                table["classes"] = [c for c in table["classes"] if c != "colwidths-auto"] + ["colwidths-given"]
                if size:
                    parent = table.parent
                    i = parent.index(table)
                    parent.insert(i + 1, _raw(r"\endgroup"))
                    parent.insert(i, _raw(r"\begingroup" + size))

    class BreakPoints(SphinxPostTransform):
        """Inline code and table cells may break a long word after / and after a dot
        followed by a letter (module paths, file names, units like TFLOP/s)."""

        default_priority = 170
        formats = ("latex",)
        _skip = (nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.title,
                 nodes.caption, nodes.reference)

        def run(self, **kwargs) -> None:
            for text in list(self.document.findall(nodes.Text)):
                if not _SOFT.search(text) or not self._wanted(text):
                    continue
                pieces = _SOFT.split(str(text))
                new = []
                for i, piece in enumerate(pieces):
                    if i:
                        new.append(_raw(r"\hspace{0pt}", newline=False))
                    new.append(nodes.Text(piece))
                parent = text.parent
                i = parent.index(text)
                parent.remove(text)
                for j, n in enumerate(new):
                    parent.insert(i + j, n)

        def _wanted(self, text) -> bool:
            wanted = False
            p = text.parent
            while p is not None:
                if isinstance(p, self._skip) or (isinstance(p, nodes.literal) and p.get("language")):
                    return False
                if isinstance(p, (nodes.literal, nodes.entry)):
                    wanted = True
                p = p.parent
            return wanted

    class BookStructure(SphinxPostTransform):
        """Front chapter, parts and chapter numbering of the assembled book."""

        default_priority = 900
        formats = ("latex",)

        def run(self, **kwargs) -> None:
            if self.env.docname != self.config.root_doc:
                return
            sitemap = getattr(self.config, "external_site_map", None)
            top = next(iter(self.document.findall(nodes.section)), None)
            if sitemap is None or top is None or not top.children:
                return
            # the root page's own text: one unnumbered chapter titled like the page
            title = top[0]
            front = nodes.section("", nodes.title(title.astext(), "", *[c.deepcopy() for c in title.children]))
            rest = [c for c in top.children[1:] if not _is_toctree(c)]
            for c in rest:
                top.remove(c)
                front.append(c)
            top.insert(1, _raw(r"\setcounter{secnumdepth}{-1}"))
            top.insert(2, front)
            # a part entry before the first chapter of every part of the toc
            firsts = {}
            for sub in sitemap.root.subtrees:
                if sub.items:
                    firsts[str(sub.items[0])] = sub
            for sof in list(self.document.findall(addnodes.start_of_file)):
                sub = firsts.get(sof.get("docname"))
                if sub is None:
                    continue
                caption = _tex_escape(sub.caption or "")
                depth = SECNUMDEPTH if sub.numbered else -1
                tex = rf"\clearpage\setcounter{{secnumdepth}}{{{depth}}}"
                if sub.numbered:
                    tex += r"\setcounter{chapter}{0}"
                if caption:
                    tex += rf"\phantomsection\addcontentsline{{toc}}{{part}}{{{caption}}}"
                sof.parent.insert(sof.parent.index(sof), _raw(tex))

    return [HtmlOutputs, Dropdowns, OutputFigures, Tables, BreakPoints, BookStructure]


def _width(text: str) -> int:
    """Printed width of a text in Latin-letter units (a CJK character is two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# What fits on a line of the text block, in Latin-letter units (_width).
LINE_UNITS = 84
LONG_ROWS = 15  # a table with more body rows may break across pages
_SIZES = (("", 1.0), (r"\small", 0.9), (r"\footnotesize", 0.8))


_CJK = "\u2e80-\u9fff\uff00-\uffef"
# where BreakPoints lets a line break inside a word (after / and after a . before a letter)
_SOFT = re.compile(r"(?<=/)(?=.)|(?<=\.)(?=[A-Za-z_])")
_BREAK = re.compile(rf"(?<=[_\-/])|(?<=\.)(?=[A-Za-z_])|(?=[{_CJK}])|(?<=[{_CJK}])")


def _words(text: str) -> list[str]:
    """Pieces of a cell's text between which a line may break: spaces, after an
    underscore, a hyphen or a slash, after a dot before a letter, around every CJK
    character."""
    out = []
    for chunk in text.split():
        out += [w for w in _BREAK.split(chunk) if w]
    return out


def table_layout(rows: list[list[str]], ncols: int, head: list[list[str]] = ()) -> tuple[str, list[int] | None]:
    """(font-size command, column widths) of a table; widths None: small enough
    for LaTeX's tabulary to size it.

    Widths are in Latin-letter units.  The line is shared out in proportion to each
    column's amount of text, but a column gets at least its longest unbreakable word
    (of the body or the header) and at most its natural width (its longest body cell;
    headers wrap).  If the longest words alone do not fit, the font gets smaller."""
    if ncols == 0:
        return "", None
    natural, longest, amount = [1] * ncols, [1] * ncols, [1] * ncols
    for row in [*head, *rows]:
        for i, text in enumerate(row[:ncols]):
            longest[i] = max([longest[i]] + [_width(w) + 3 for w in _words(text)])
    for row in rows or head:
        for i, text in enumerate(row[:ncols]):
            natural[i] = max(natural[i], _width(text) + 3)
            amount[i] += _width(text) + 3
    natural = [max(n, lg) for n, lg in zip(natural, longest)]
    if sum(natural) <= LINE_UNITS * 0.6 and not any(_width(t) + 3 > LINE_UNITS * 0.6 for r in head for t in r):
        return "", None
    size, scale = next(((s, f) for s, f in _SIZES if sum(longest) * f <= LINE_UNITS), _SIZES[-1])
    room = LINE_UNITS / scale
    fixed: dict[int, float] = {}
    while True:
        free = [i for i in range(ncols) if i not in fixed]
        if not free:
            break
        left = room - sum(fixed.values())
        share = {i: left * amount[i] / sum(amount[j] for j in free) for i in free}
        low = [i for i in free if share[i] < longest[i]]
        high = [i for i in free if share[i] > natural[i]]
        if not low and not high:
            fixed.update(share)
            break
        for i in low:
            fixed[i] = longest[i]
        if not low:
            for i in high:
                fixed[i] = natural[i]
    widths = [fixed[i] for i in range(ncols)]
    if sum(widths) < room:  # every column at its natural width: share out the rest
        widths = [w * room / sum(widths) for w in widths]
    return size, [max(1, round(w)) for w in widths]


# ------------------------------------------------------------------ HTML outputs
class _El:
    """A parsed HTML element: tag, attributes, children (elements and strings)."""

    def __init__(self, tag: str, attrs: dict[str, str]):
        self.tag, self.attrs, self.children = tag, attrs, []


_VOID = {"br", "hr", "img", "col", "wbr", "meta", "input"}


def _parse_html(text: str) -> _El:
    from html.parser import HTMLParser

    root = _El("#root", {})
    stack = [root]

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            el = _El(tag, {k: v or "" for k, v in attrs})
            stack[-1].children.append(el)
            if tag not in _VOID:
                stack.append(el)

        def handle_endtag(self, tag):
            for i in range(len(stack) - 1, 0, -1):
                if stack[i].tag == tag:
                    del stack[i:]
                    break

        def handle_data(self, data):
            stack[-1].children.append(data)

    P(convert_charrefs=True).feed(text)
    return root


_BLOCK = {"p", "ul", "ol", "table", "pre", "blockquote", "div", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
          "section", "dl"}


def html_to_nodes(text: str) -> tuple[list, list[str]]:
    """docutils nodes for the HTML a notebook cell printed (the subset Markdown renders
    to: paragraphs, lists, tables, code, emphasis, links), and the tags it could not
    convert.  LaTeX cannot print raw HTML; without this such an output would print as
    ``<IPython.core.display.HTML object>``."""
    from docutils import nodes

    unknown: list[str] = []

    def inline(el) -> list:
        out = []
        for c in el.children:
            if isinstance(c, str):
                out.append(nodes.Text(c))
            elif c.tag in ("strong", "b"):
                out.append(nodes.strong("", "", *inline(c)))
            elif c.tag in ("em", "i"):
                out.append(nodes.emphasis("", "", *inline(c)))
            elif c.tag == "code":
                out.append(nodes.literal(_text(c), _text(c)))
            elif c.tag == "a" and c.attrs.get("href", "").startswith(("http://", "https://")):
                out.append(nodes.reference("", "", *inline(c), refuri=c.attrs["href"]))
            elif c.tag == "sub":
                out.append(nodes.subscript("", "", *inline(c)))
            elif c.tag == "sup":
                out.append(nodes.superscript("", "", *inline(c)))
            elif c.tag == "br":
                out.append(nodes.Text("\n"))
            elif c.tag in ("span", "a", "abbr", "small", "u", "s", "del", "ins", "mark", "label"):
                out.extend(inline(c))
            else:
                unknown.append(c.tag)
                out.append(nodes.Text(_text(c)))
        return out

    def para(el) -> nodes.paragraph:
        return nodes.paragraph("", "", *inline(el))

    def blocks(el) -> list:
        out, loose = [], _El("p", {})

        def flush():
            if any(not isinstance(c, str) or c.strip() for c in loose.children):
                out.append(para(loose))
            loose.children = []

        for c in el.children:
            if isinstance(c, str) or c.tag not in _BLOCK:
                loose.children.append(c)
                continue
            flush()
            if c.tag == "p":
                out.append(para(c))
            elif c.tag in ("ul", "ol"):
                lst = nodes.bullet_list() if c.tag == "ul" else nodes.enumerated_list(enumtype="arabic")
                for li in c.children:
                    if isinstance(li, _El) and li.tag == "li":
                        lst.append(nodes.list_item("", *blocks(li)))
                out.append(lst)
            elif c.tag == "pre":
                code = next((k for k in c.children if isinstance(k, _El) and k.tag == "code"), c)
                lang = re.sub(r"^language-", "", code.attrs.get("class", "").split(" ")[0]) or "none"
                src = _text(code).rstrip("\n")
                out.append(nodes.literal_block(src, src, language=lang))
            elif c.tag == "table":
                out.append(table(c))
            elif c.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                out.append(nodes.rubric("", "", *inline(c)))
            elif c.tag == "blockquote":
                out.append(nodes.block_quote("", *blocks(c)))
            elif c.tag in ("div", "section"):
                out.extend(blocks(c))
            elif c.tag != "hr":
                unknown.append(c.tag)
                out.append(nodes.paragraph("", _text(c)))
        flush()
        return out

    def rows(el, tag):
        found = []
        for c in el.children:
            if isinstance(c, _El):
                if c.tag == "tr":
                    found.append(c)
                elif c.tag == tag or (tag == "tbody" and c.tag not in ("thead", "tfoot")):
                    found += [r for r in c.children if isinstance(r, _El) and r.tag == "tr"]
        return found

    def table(el):
        head, body = rows(el, "thead"), rows(el, "tbody")
        if not head and body and all(isinstance(c, _El) and c.tag == "th" for c in body[0].children if isinstance(c, _El)):
            head, body = body[:1], body[1:]
        width = max((sum(1 for c in r.children if isinstance(c, _El) and c.tag in ("td", "th")) for r in head + body),
                    default=1)
        group = nodes.tgroup(cols=width)
        group.extend(nodes.colspec(colwidth=1) for _ in range(width))

        def section(cls, trs):
            sec = cls()
            for tr in trs:
                cells = [c for c in tr.children if isinstance(c, _El) and c.tag in ("td", "th")]
                cells += [_El("td", {})] * (width - len(cells))
                sec.append(nodes.row("", *[nodes.entry("", para(c)) for c in cells[:width]]))
            return sec

        if head:
            group.append(section(nodes.thead, head))
        group.append(section(nodes.tbody, body or [_El("tr", {})]))
        return nodes.table("", group, classes=["colwidths-auto"])

    return blocks(_parse_html(text)), unknown


def _text(el) -> str:
    return "".join(c if isinstance(c, str) else _text(c) for c in el.children)


def _raw(tex: str, newline: bool = True):
    from docutils import nodes

    return nodes.raw("", tex + ("\n" if newline else ""), format="latex")


def _tex_escape(text: str) -> str:
    from sphinx.util.texescape import escape

    return escape(text)


def _ancestor(node, cls):
    p = node.parent
    while p is not None and not isinstance(p, cls):
        p = p.parent
    return p


def _in_cell_output(node) -> bool:
    p = node.parent
    while p is not None:
        if getattr(p, "get", lambda k: None)("nb_element") == "cell_code_output":
            return True
        p = p.parent
    return False


def _is_toctree(node) -> bool:
    from docutils import nodes

    return isinstance(node, nodes.compound) and "toctree-wrapper" in node.get("classes", [])


def _html_page_context(app, pagename, templatename, context, doctree) -> None:
    """The PDF's download link among the sidebar's icon links, relative to the page
    (the book stays relocatable)."""
    if app.builder.format != "html" or "pathto" not in context:
        return
    link = {
        "name": "下载 PDF 版",
        "url": context["pathto"](PDF_NAME, 1),
        "icon": "fa-solid fa-file-pdf",
        "type": "fontawesome",
        "attributes": {"target": "_self", "rel": "alternate", "type": "application/pdf"},
    }
    context["theme_icon_links"] = [*(context.get("theme_icon_links") or []), link]


def setup(app):
    app.connect("config-inited", _config_inited, priority=900)
    for t in _post_transforms():
        app.add_post_transform(t)
    app.connect("html-page-context", _html_page_context)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}


# ------------------------------------------------------------------ the build
def _sphinx_latex(strict: bool) -> None:
    """Write _build/latex/book.tex with jupyter-book's configuration, reading the pages
    afresh into a doctree directory of its own (the HTML build keeps its own) and
    their outputs from the shared execution cache."""
    from jupyter_book.sphinx import build_sphinx

    if DOCTREES.exists():
        shutil.rmtree(DOCTREES)
    overrides = {"external_toc_path": str(ROOT / "_toc.yml"), "latex_individualpages": False}
    result = build_sphinx(
        ROOT,
        OUT,
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        confoverrides=overrides,
        doctreedir=DOCTREES,
        builder="latex",
        warningiserror=strict,
        keep_going=strict,
        freshenv=True,
    )
    if result != 0:
        raise SystemExit(f"LaTeX build failed ({result!r}); see the messages above")


def _latexmk() -> Path:
    exe = shutil.which("latexmk")
    if exe is None or shutil.which("xelatex") is None:
        raise SystemExit("latexmk/xelatex not found: install texlive-xetex and latexmk (see .ci/run)")
    cmd = [exe, "-xelatex", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", TEX]
    proc = subprocess.run(cmd, cwd=OUT, stdout=subprocess.DEVNULL)
    pdf = OUT / TEX.replace(".tex", ".pdf")
    if proc.returncode != 0 or not pdf.is_file():
        raise SystemExit(f"xelatex failed (exit {proc.returncode}); see {OUT / TEX.replace('.tex', '.log')}")
    return pdf


def build(strict: bool = True) -> Path:
    """Build the PDF; returns its path under _build/latex."""
    from coursebook.build import STAMP, _invalidate_stale_cache

    stale, digest = _invalidate_stale_cache()
    t0 = time.perf_counter()
    _sphinx_latex(strict)
    t1 = time.perf_counter()
    pdf = _latexmk()
    t2 = time.perf_counter()
    if stale:
        STAMP.write_text(digest + "\n")
    html = BUILD / "html"
    if html.is_dir():
        shutil.copy2(pdf, html / PDF_NAME)
    print(f"PDF built: LaTeX {t1 - t0:.1f} s, xelatex {t2 - t1:.1f} s; {pdf}")
    return pdf


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the PDF edition of the book (_build/latex/book.pdf).")
    ap.add_argument("--no-strict", action="store_true", help="do not turn Sphinx warnings into errors")
    a = ap.parse_args(argv)
    build(strict=not a.no_strict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
