"""The notebook a reader downloads from a page: plain Jupyter, no MyST left in its text.

A page is a MyST notebook: its prose says ``{glue:text}`rec.header```, ``{ref}`gemm-ws```,
``{numref}`fig-gemm-roofline```, ``(label)=``, ``% claim: ...``, ``````{dropdown}``````
and ``[^note]``.  The book renders all of it; Jupyter renders none of it, so the executed
notebook, offered as it is, shows a reader the raw glue keys instead of every number on the
page.  :func:`reader_notebook` turns the executed notebook into the one the reader gets:

* glued values are pasted as their text (myst-nb's own formatting), glued figures as cell
  attachments with their number and caption;
* references become the words the book shows: a section's or a figure's title, "图 4.2", the
  page's title; labels and MyST comments are dropped;
* a dropdown becomes ``<details>``, a rubric bold text, an admonition a quotation, the table of
  contents a list of the chapter's sections; footnotes are numbered ``[1]`` in the notebook;
* code cells, their outputs and their tags are kept: the notebook runs as the page did, given
  the course package (``make venv`` in the repository), which a note under the title says.

:func:`notebook_from_markdown` does the same for a page without code (a chapter's landing page),
so that every page offers a notebook.  Standard library only; :class:`Refs` carries what the
book resolved (``coursebook.sphinxext`` fills it from the Sphinx environment).
"""
from __future__ import annotations

import copy
import posixpath
import re
from ast import literal_eval
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Refs", "reader_markdown", "reader_notebook", "notebook_from_markdown", "myst_leftovers", "run_note"]


@dataclass
class Refs:
    """What the book resolved, for one page."""

    docname: str = ""
    #: glue key -> mime bundle (``{"text/plain": ..., "image/png": base64}``) of this page
    glue: dict = field(default_factory=dict)
    #: label -> the title the book shows for it (a section's title, a figure's caption)
    labels: dict = field(default_factory=dict)
    #: label -> (figtype, "4.2"): the number of a numbered figure, table or section
    numbers: dict = field(default_factory=dict)
    #: figtype -> format, e.g. {"figure": "图 %s"} (Sphinx's numfig_format)
    numfig_format: dict = field(default_factory=lambda: {"figure": "图 %s", "table": "表 %s",
                                                         "code-block": "列表 %s", "section": "%s 节"})
    #: docname -> title
    titles: dict = field(default_factory=dict)
    #: docnames listed by this page's table of contents
    children: list = field(default_factory=list)
    #: the glue of another page (``{glue:text}`other/page::key```), or None
    glue_of: Callable[[str], dict] | None = None


# ------------------------------------------------------------------ inline


def _escape(text: str) -> str:
    """Text pasted into Jupyter markdown stays text: no emphasis, table cell, math or HTML."""
    return re.sub(r"([\\`*_\[\]<>|$~])", r"\\\1", text)


def _plain(text: str, fmt_spec: str = "") -> str:
    """myst-nb's ``format_plain_text``: a repr'd string loses its quotes, then the format."""
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not fmt_spec:
        return str(value)
    kind = fmt_spec[-1]
    if kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    elif kind == "s":
        value = str(value)
    return format(value, fmt_spec)


def _split_target(content: str) -> tuple[str | None, str]:
    """``text <target>`` -> (text, target); ``target`` -> (None, target)."""
    m = re.fullmatch(r"\s*(.*?)\s*<([^<>]+)>\s*", content, re.S)
    if m and m.group(1):
        return m.group(1), m.group(2).strip()
    return None, content.strip()


def _glue_bundle(refs: Refs, key: str) -> dict:
    doc_key = key.split("::", 1)
    if len(doc_key) == 2 and refs.glue_of is not None:
        doc = posixpath.normpath(posixpath.join(posixpath.dirname(refs.docname), doc_key[0]))
        return (refs.glue_of(doc) or {}).get(doc_key[1], {})
    return refs.glue.get(key, {})


def _glue_text(refs: Refs, content: str, markdown: bool = False) -> str:
    key, fmt_spec = content, ""
    parts = content.rsplit(":", 1)
    if len(parts) == 2 and not parts[1].startswith(":") and not parts[0].endswith(":"):
        key, fmt_spec = parts
    bundle = _glue_bundle(refs, key.strip())
    if markdown and "text/markdown" in bundle:
        return str(bundle["text/markdown"])
    if "text/plain" not in bundle:
        return "—"
    try:
        return _escape(_plain(str(bundle["text/plain"]), fmt_spec))
    except (TypeError, ValueError):
        return _escape(str(bundle["text/plain"]))


def _number(refs: Refs, label: str) -> tuple[str, str] | None:
    return refs.numbers.get(label)


def _doc(refs: Refs, target: str) -> str:
    target = re.sub(r"\.(md|ipynb)$", "", target)
    doc = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
        posixpath.join(posixpath.dirname(refs.docname), target))
    return refs.titles.get(doc, target)


def _role(name: str, content: str, refs: Refs, footnotes: dict) -> str:
    if name in ("glue:text", "glue", "glue:", "glue:any"):
        return _glue_text(refs, content)
    if name == "glue:md":
        return _glue_text(refs, content, markdown=True)
    if name in ("ref", "std:ref"):
        text, label = _split_target(content)
        if text:
            return _escape(text)
        title = refs.labels.get(label.lower(), refs.labels.get(label))
        return f"“{_escape(title)}”" if title else _escape(label)
    if name in ("numref", "std:numref"):
        text, label = _split_target(content)
        found = _number(refs, label.lower()) or _number(refs, label)
        if not found:
            return _escape(text or refs.labels.get(label, label))
        figtype, num = found
        if text:
            return _escape(text.replace("%s", num).replace("{number}", num)
                           .replace("{name}", refs.labels.get(label, "")))
        return _escape(refs.numfig_format.get(figtype, "%s") % num)
    if name in ("doc", "std:doc"):
        text, target = _split_target(content)
        return _escape(text or _doc(refs, target))
    if name == "math":
        return f"${content}$"
    if name == "eq":
        return f"({_escape(content)})"
    text, _ = _split_target(content)
    return _escape(text if text else content)


#: a role (matched first where it starts) or an inline code span (left alone)
_INLINE = re.compile(r"(?P<role>\{(?P<name>[A-Za-z][\w:.+-]*)\}`(?P<content>[^`]*)`)"
                     r"|(?P<code>(?P<ticks>`+).+?(?P=ticks))"
                     r"|(?P<fnref>\[\^(?P<fn>[^\]\s]+)\](?!:))")


def _inline(line: str, refs: Refs, footnotes: dict) -> str:
    def sub(m: re.Match) -> str:
        if m.group("role"):
            return _role(m.group("name"), m.group("content"), refs, footnotes)
        if m.group("fnref"):
            n = footnotes.setdefault(m.group("fn"), len(footnotes) + 1)
            return f"<sup>[{n}]</sup>"
        return m.group(0)

    return _INLINE.sub(sub, line)


# ------------------------------------------------------------------ blocks

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\s*(?:\{(?P<name>[^}\s]+)\})?\s*(?P<arg>.*?)\s*$")
_LABEL = re.compile(r"^\s*\([^()\s]+\)=\s*$")
_COMMENT = re.compile(r"^\s*%")
_FOOTDEF = re.compile(r"^\[\^(?P<fn>[^\]\s]+)\]:\s*(?P<text>.*)$")
_MATH_END = re.compile(r"\$\$\s*(?:\([^()]+\))?\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ADMONITIONS = {"note": "注", "tip": "提示", "hint": "提示", "important": "重要", "warning": "警告",
                "caution": "小心", "attention": "注意", "danger": "危险", "error": "错误", "seealso": "另见"}


def _closes(line: str, fence: str) -> bool:
    return re.fullmatch(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", line) is not None


def _options(body: list[str]) -> tuple[dict, list[str]]:
    opts, i = {}, 0
    while i < len(body) and (m := _OPTION.match(body[i])):
        opts[m.group("key")] = m.group("value").strip()
        i += 1
    return opts, body[i:]


def _image(bundle: dict) -> tuple[str, str, str] | None:
    """(file name suffix, mime type, data) of the first image in a glue bundle."""
    for mime, suffix in (("image/png", "png"), ("image/jpeg", "jpg"), ("image/svg+xml", "svg"),
                         ("image/gif", "gif")):
        if mime in bundle:
            data = bundle[mime]
            return suffix, mime, "".join(data) if isinstance(data, list) else str(data)
    return None


def _directive(name: str, arg: str, body: list[str], refs: Refs, footnotes: dict,
               attachments: dict) -> list[str]:
    opts, rest = _options(body)
    inner = _lines(rest, refs, footnotes, attachments)
    if name == "rubric":
        return [f"**{_inline(arg, refs, footnotes)}**", ""]
    if name in ("dropdown", "toggle"):
        return ["<details>", f"<summary>{_inline(arg, refs, footnotes) or '展开'}</summary>", "",
                *inner, "", "</details>", ""]
    if name == "glue:figure" or name == "glue":
        out = []
        found = _image(_glue_bundle(refs, arg))
        if found:
            suffix, mime, data = found
            fname = re.sub(r"[^\w.-]", "_", arg) + f".{suffix}"
            attachments[fname] = {mime: data}
            alt = opts.get("alt", "").replace("]", " ").replace("[", " ")
            out += [f"![{alt}](attachment:{fname})", ""]
        elif "text/plain" in _glue_bundle(refs, arg):
            out += [_glue_text(refs, arg), ""]
        caption = " ".join(ln.strip() for ln in inner if ln.strip())
        number = _number(refs, opts.get("name", "").lower()) if opts.get("name") else None
        prefix = f"**{refs.numfig_format.get(number[0], '%s') % number[1]}** " if number else ""
        if caption or prefix:
            out += [f"{prefix}{caption}", ""]
        return out
    if name == "tableofcontents":
        return [f"- {_escape(refs.titles.get(d, d))}" for d in refs.children] + [""]
    if name in ("math",):
        return ["$$", *rest, "$$", ""]
    if name in ("code", "code-block", "sourcecode", "code-cell"):
        return ["```" + arg, *rest, "```", ""]
    if name in _ADMONITIONS or name == "admonition":
        title = _inline(arg, refs, footnotes) if name == "admonition" else _ADMONITIONS[name]
        quoted = [f"> {ln}" if ln.strip() else ">" for ln in inner]
        return [f"> **{title}**", ">", *quoted, ""]
    # any other directive: its title in bold, then its content -- never the raw syntax
    return ([f"**{_inline(arg, refs, footnotes)}**", ""] if arg else []) + inner + [""]


def _lines(lines: list[str], refs: Refs, footnotes: dict, attachments: dict) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m and (m.group("name") or m.group("fence").startswith("`")):
            fence = m.group("fence")
            j = i + 1
            while j < len(lines) and not _closes(lines[j], fence):
                j += 1
            body = lines[i + 1:j]
            if m.group("name"):
                out += _directive(m.group("name"), m.group("arg"), body, refs, footnotes, attachments)
            else:  # a plain code block: as it is
                out += [line, *body, lines[j] if j < len(lines) else fence]
            i = j + 1
            continue
        if line.strip().startswith("$$"):  # display math: as it is, without a MyST label
            j = i
            if not _MATH_END.search(line.strip()[2:]):
                j = i + 1
                while j < len(lines) and not _MATH_END.search(lines[j]):
                    j += 1
            block = lines[i:j + 1]
            if block:
                block[-1] = re.sub(r"(\$\$)\s*\([^()]+\)\s*$", r"\1", block[-1])
            out += block
            i = j + 1
            continue
        if _LABEL.match(line) or _COMMENT.match(line):
            i += 1
            continue
        d = _FOOTDEF.match(line)
        if d:
            n = footnotes.setdefault(d.group("fn"), len(footnotes) + 1)
            out.append(f"<sup>[{n}]</sup> {_inline(d.group('text'), refs, footnotes)}")
            i += 1
            continue
        out.append(_inline(line, refs, footnotes))
        i += 1
    return out


def reader_markdown(text: str, refs: Refs, footnotes: dict | None = None) -> tuple[str, dict]:
    """One markdown cell as Jupyter reads it, and the attachments it needs ({name: {mime: data}}).
    ``footnotes`` (name -> number) is shared by the cells of one notebook."""
    footnotes = {} if footnotes is None else footnotes
    attachments: dict = {}
    out = _lines(text.splitlines(), refs, footnotes, attachments)
    joined = "\n".join(out)
    joined = re.sub(r"\n{3,}", "\n\n", joined).strip("\n")
    return joined, attachments


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def run_note(title: str) -> str:
    """What a notebook with code says under its title: what it needs to run."""
    return (f"> 这是《{title}》中一页的 notebook。运行其中的代码需要课程包：在课程仓库的根目录执行 "
            "`make venv`，再选用 `.venv` 里的 Python 作为内核。")


def reader_notebook(nb: dict, refs: Refs, note: str | None = None) -> dict:
    """The executed notebook ``nb`` (nbformat 4, as a dict) with its markdown made plain; with
    ``note``, a notebook that has code gets it as a cell under its title."""
    out = copy.deepcopy(nb)
    footnotes: dict = {}
    cells = []
    for cell in out.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text, attachments = reader_markdown(_source(cell), refs, footnotes)
            if not text.strip():
                continue  # a cell that held only labels or comments
            cell["source"] = text
            if attachments:
                cell["attachments"] = {**cell.get("attachments", {}), **attachments}
        cells.append(cell)
    if note and any(c.get("cell_type") == "code" for c in cells):
        at = 1 if cells and cells[0].get("cell_type") == "markdown" and _source(cells[0]).startswith("# ") else 0
        cells.insert(at, {"cell_type": "markdown", "id": "coursebook-run-note", "metadata": {}, "source": note})
    out["cells"] = cells
    meta = out.setdefault("metadata", {})
    meta.pop("source_map", None)
    meta.pop("jupytext", None)  # its text form is the page's MyST source, not this notebook
    return out


_HEADING = re.compile(r"^#{1,6}\s")


def notebook_from_markdown(source: str, refs: Refs) -> dict:
    """A notebook of markdown cells (one a section) from a page's MyST source without code."""
    text = source
    if text.startswith("---"):
        end = re.search(r"^---\s*$", text[3:], re.M)
        if end:
            text = text[3 + end.end():]
    cells, current, fence = [], [], None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is None and m and (m.group("name") or m.group("fence").startswith("`")):
            fence = m.group("fence")
        elif fence is not None and _closes(line, fence):
            fence = None
        elif fence is None and _HEADING.match(line) and any(ln.strip() and not _LABEL.match(ln) for ln in current):
            # a heading starts a new cell; the label just above it goes with it
            tail = []
            while current and (_LABEL.match(current[-1]) or not current[-1].strip()):
                tail.insert(0, current.pop())
            cells.append(current)
            current = tail
        current.append(line)
    cells.append(current)
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "language_info": {"name": "python"}},
          "cells": [{"cell_type": "markdown", "id": f"cell-{i}", "metadata": {}, "source": "\n".join(c)}
                    for i, c in enumerate(cells) if "\n".join(c).strip()]}
    return reader_notebook(nb, refs)


#: MyST that Jupyter would show as it is (what a reader notebook must not contain)
_LEFTOVERS = (
    ("role", re.compile(r"\{[A-Za-z][\w:.+-]*\}`")),
    ("directive", re.compile(r"^\s*(`{3,}|:{3,})\s*\{", re.M)),
    ("label", re.compile(r"^\s*\([^()\s]+\)=\s*$", re.M)),
    ("comment", re.compile(r"^%", re.M)),
    ("footnote", re.compile(r"\[\^[^\]\s]+\]")),
)


def _without_code(text: str) -> str:
    """``text`` less its code blocks and inline code spans (which show MyST as it is, rightly);
    a directive's fences are followed, so that its closing fence opens no code block."""
    kept, stack = [], []  # stack: (fence, is a code block)
    for line in text.splitlines():
        if stack and _closes(line, stack[-1][0]):
            stack.pop()
            continue
        m = _FENCE.match(line)
        in_code = bool(stack) and stack[-1][1]
        if not in_code and m and (m.group("name") or m.group("fence").startswith("`")):
            stack.append((m.group("fence"), not m.group("name")))
            if m.group("name"):
                kept.append(line)
            continue
        if not in_code:
            kept.append(line)
    return re.sub(r"(?<!\})(`+)[^`].*?\1", "", "\n".join(kept))


def myst_leftovers(nb: dict) -> list[str]:
    """What in the markdown cells of ``nb`` is MyST that Jupyter would show raw."""
    found = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "markdown":
            continue
        text = _without_code(_source(cell))
        for kind, pat in _LEFTOVERS:
            for m in pat.finditer(text):
                found.append(f"cell {i}: {kind}: {text[max(0, m.start() - 30):m.end() + 30]!r}")
    return found
