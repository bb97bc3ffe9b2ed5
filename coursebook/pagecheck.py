"""Text checks shared by the page tests: what counts as a page's prose.

``prose_of`` strips a MyST notebook page down to the sentences a reader reads:
no front matter, code cells, math, inline code, roles (glue, ref, doc), URLs or
labels.  The page tests count its Chinese characters and look for numbers typed
into it instead of glued.
"""
from __future__ import annotations

import re

__all__ = ["GLUE", "CJK", "prose_of", "typed_numbers", "typed_decimals"]

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
