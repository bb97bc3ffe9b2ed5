"""Text checks shared by the page tests: what counts as a page's prose.

``prose_of`` strips a MyST notebook page down to the sentences a reader reads:
no front matter, code cells, math, inline code, roles (glue, ref, doc), URLs or
labels.  The page tests count its Chinese characters and look for numbers typed
into it instead of glued.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["GLUE", "CJK", "BOOK", "prose_of", "typed_numbers", "typed_decimals", "toc_chapters", "chapter_pages",
           "page_text", "chapter_text", "chapter_of", "headings", "numbering_problems"]

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"

GLUE = re.compile(r"\{glue:text\}`([^`]+)`")
CJK = re.compile(r"[\u3400-\u9fff]")


def prose_of(text: str) -> str:
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```\{code-cell\}.*?\n```", "", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", "", text)
    text = re.sub(r"\{[a-z:]+\}`[^`]*`", "", text)  # glue, ref, doc roles
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"<https?://[^>]+>|https?://\S+", "", text)
    text = re.sub(r"^\(.*\)=$", "", text, flags=re.M)  # labels
    return text



_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def typed_numbers(prose: str, computed: set[str], allowed: set[str] = frozenset()) -> list[str]:
    """Numbers standing alone in ``prose`` that equal a computed figure's printed text
    (so they should have been glued), except the problem statements in ``allowed``."""
    return sorted(t for t in set(_NUMBER.findall(prose)) if t in computed and t not in allowed)


def typed_decimals(prose: str) -> list[str]:
    """Decimal numbers standing alone in prose; a glued number never does."""
    return _DECIMAL.findall(prose)


# ------------------------------------------------------------------ chapters split into pages
def _toc() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def _files(entry: dict) -> list[str]:
    out = [entry["file"]] if "file" in entry else []
    for sub in entry.get("sections") or []:
        out += _files(sub)
    return out


def toc_chapters() -> dict[str, list[str]]:
    """``{chapter landing page: [its pages in reading order, landing first]}`` of every chapter and
    appendix in ``_toc.yml``, as paths relative to ``book/`` with ``.md`` (``"ch_gemm.md"``,
    ``"gemm/ladder.md"``)."""
    out: dict[str, list[str]] = {}
    for part in _toc().get("parts", []):
        for ch in part.get("chapters", []):
            files = [f[len("book/"):] + ".md" for f in _files(ch)]
            out[files[0]] = files
    return out


def chapter_pages(landing: str) -> list[str]:
    """The pages of the chapter whose landing page is ``landing`` (``"ch_gemm.md"``), landing first."""
    chapters = toc_chapters()
    if landing not in chapters:
        raise KeyError(f"{landing!r} is no chapter of _toc.yml; chapters are {sorted(chapters)}")
    return chapters[landing]


def chapter_of(page: str) -> str:
    """The landing page of the chapter ``page`` belongs to."""
    for landing, pages in toc_chapters().items():
        if page in pages:
            return landing
    raise KeyError(f"{page!r} is in no chapter of _toc.yml")


def page_text(page: str) -> str:
    """The MyST source of ``book/<page>``."""
    return (BOOK / page).read_text(encoding="utf-8")


def chapter_text(landing: str) -> str:
    """The sources of every page of a chapter, in reading order, joined by blank lines."""
    return "\n\n".join(page_text(p) for p in chapter_pages(landing))


def labelled_block(text: str, start: str, end: str | None = None) -> str:
    """The part of ``text`` from the MyST label ``(start)=`` up to the label ``(end)=`` (or to the end)."""
    i = text.index(f"({start})=")
    return text[i:text.index(f"({end})=", i)] if end else text[i:]


# ------------------------------------------------------------------ section numbers
_FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)


def headings(text: str) -> list[tuple[int, str]]:
    """``(level, title)`` of every Markdown heading of a page, in order (front matter, code cells and
    other fenced blocks left out: a ``#`` comment in a cell is no heading)."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = _FENCE.sub("", text)
    return [(len(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^(#{1,6})[ \t]+(.+)$", text, flags=re.M)]


def _outline_labels(landing_text: str) -> list[str]:
    """The labels the landing page's numbered list of sections points to, in order."""
    return re.findall(r"^\d+\. \{ref\}`([^`]+)`", landing_text, flags=re.M)


def numbering_problems(landing: str) -> list[str]:
    """Why the section numbers a numbered toctree gives a chapter would not match its outline (empty:
    they match).  Jupyter Book numbers every heading of the landing page below its title and every
    top-level heading of a section page in one sequence, so the landing page must have its title as
    its only heading (goals and the outline as rubrics), each section page exactly one ``#`` heading,
    and the outline must list the section pages' labels in reading order (or be the generated
    ``{tableofcontents}``): then item *k* of the outline is section *N.k*."""
    pages = chapter_pages(landing)
    out = []
    extra = [t for lvl, t in headings(page_text(landing)) if lvl > 1]
    if extra:
        out.append(f"{landing}: headings under the title take section numbers: {extra}")
    labels = []
    for p in pages[1:]:
        text = page_text(p)
        tops = [t for lvl, t in headings(text) if lvl == 1]
        if len(tops) != 1:
            out.append(f"{p}: {len(tops)} top-level headings, want 1: {tops}")
        m = re.search(r"^\(([^)\s]+)\)=\n#[ \t]", _FENCE.sub("", text), flags=re.M)
        labels.append(m.group(1) if m else f"<{p} has no label on its title>")
    listed = _outline_labels(page_text(landing))
    generated = not listed and "```{tableofcontents}" in page_text(landing)  # the build writes the outline
    if listed != labels and not generated:
        out.append(f"{landing}: the outline lists {listed}, the section pages are {labels}")
    return out
