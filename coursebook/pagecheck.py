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
           "page_text", "chapter_text", "chapter_of"]

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
