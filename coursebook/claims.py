"""Claims that follow the data: a sentence that concludes from measured values is either chosen
by those values or guarded by a test that fails when a record contradicts it.

**Chosen by the values.**  A page glues the words that carry the conclusion::

    from coursebook import claims
    claims.glue_claims(
        claims.compare("claim.pytorch.sincos.vs_compile", tl_ms, compile_ms,
                       lower="比 torch.compile 快", higher="比 torch.compile 慢", tie="与 torch.compile 相当"),
        claims.threshold("claim.pytorch.ln.reaches", pct, 80, above="达到", below="没有达到"),
        claims.every("claim.gemm.repeats.winner", [w == best for w in winners]),
    )

and writes ``TileLang 版本{glue:text}`claim.pytorch.sincos.vs_compile```.  Each helper returns a
:class:`Claim` (its key, the chosen text, the case and the values it was chosen from), so a page
test can assert which case the record gives without parsing prose.  With no value (no record,
a live run without that kernel) the claim reads :data:`UNKNOWN` and never a guessed variant.

**Guarded by a test.**  Where a sentence cannot be written as variants (an explanation, a
ranking in a paragraph), put a MyST comment line right above the paragraph::

    % claim: pytorch.compile.more-launches

and a test anywhere under ``tests/`` decorated with ``@claims.guards("pytorch.compile.more-launches")``
that reads the record and asserts what the sentence says.  :func:`claim_markers` lists the markers
of the pages and :func:`guarded_ids` the ids the tests guard; ``tests/book/test_claims.py`` fails
on a marker without a guard or a guard without a marker.  Keys of glued claims start with
``claim.<topic>.`` (topic ids as everywhere).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = ["UNKNOWN", "Claim", "choose", "compare", "threshold", "every", "count_text", "glue_claims",
           "claim_values", "guards", "claim_markers", "guarded_ids", "MARKER"]

#: What a claim reads when the values it depends on are missing.
UNKNOWN = "（尚无数据，无法判断）"
#: ``% claim: <id>`` -- the MyST comment that marks a guarded sentence (the id: letters, digits, ``.-_``).
MARKER = re.compile(r"^%\s*claim:\s*([A-Za-z0-9_.\-]+)\s*$", re.M)

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Claim:
    """A text chosen by values: ``case`` names the branch taken (``None`` when the values were
    missing), ``values`` keeps what it was chosen from."""

    key: str
    text: str
    case: str | None
    values: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


def _missing(*xs: Any) -> bool:
    return any(x is None or (isinstance(x, float) and not math.isfinite(x)) for x in xs)


def _fmt(template: str, values: Mapping[str, Any]) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"claim text {template!r} names a value it was not given: {exc}") from None


def choose(key: str, case: str | None, variants: Mapping[str, str], **values: Any) -> Claim:
    """The variant named ``case`` (``None``: :data:`UNKNOWN`); ``values`` fill ``{name}`` fields.
    A case without a variant is a ``KeyError`` naming the variants there are."""
    if case is None:
        return Claim(key, UNKNOWN, None, values)
    if case not in variants:
        raise KeyError(f"claim {key!r}: no text for case {case!r}; cases are {sorted(variants)}")
    return Claim(key, _fmt(variants[case], values), case, values)


def compare(key: str, a: float | None, b: float | None, *, lower: str, higher: str, tie: str | None = None,
            tol: float = 0.0, **values: Any) -> Claim:
    """Compare ``a`` with ``b``: case ``"lower"`` when ``a < b`` by more than the relative ``tol``,
    ``"higher"`` when above by more, ``"tie"`` within it (``tie`` text required when ``tol > 0``).
    For times, ``lower`` is "faster"; for bandwidths, it is "slower": the page says which."""
    if tol < 0:
        raise ValueError("tol must be >= 0")
    vals = {"a": a, "b": b, **values}
    if _missing(a, b):
        return Claim(key, UNKNOWN, None, vals)
    if b == 0:
        raise ValueError(f"claim {key!r}: compares with zero")
    r = a / b
    if tol > 0 and abs(r - 1) <= tol:
        if tie is None:
            raise ValueError(f"claim {key!r}: tol={tol} needs a tie text")
        return Claim(key, _fmt(tie, {**vals, "ratio": r}), "tie", {**vals, "ratio": r})
    case = "lower" if r < 1 else "higher"
    return Claim(key, _fmt(lower if case == "lower" else higher, {**vals, "ratio": r}), case, {**vals, "ratio": r})


def threshold(key: str, value: float | None, limit: float, *, above: str, below: str, **values: Any) -> Claim:
    """``above`` when ``value >= limit`` (the limit is reached), else ``below``."""
    vals = {"value": value, "limit": limit, **values}
    if _missing(value):
        return Claim(key, UNKNOWN, None, vals)
    case = "above" if value >= limit else "below"
    return Claim(key, _fmt(above if case == "above" else below, vals), case, vals)


def count_text(k: int, n: int) -> str:
    """``"{k}/{n}"`` in words: 全部 / 没有一次 / 其中 k 次."""
    if n <= 0:
        return UNKNOWN
    if k == n:
        return f"全部 {n} 次"
    if k == 0:
        return f"{n} 次中没有一次"
    return f"{n} 次中的 {k} 次"


def every(key: str, flags: Sequence[bool | None], *, all_: str = "在每次重复中", some: str = "在 {n} 次重复中的 {k} 次",
          none: str = "在 {n} 次重复中没有一次", **values: Any) -> Claim:
    """Whether a statement held in every run: case ``"all"``, ``"some"`` or ``"none"``
    (``{k}`` runs of ``{n}``); a missing flag, or no run at all, gives :data:`UNKNOWN`."""
    flags = list(flags)
    vals = {"n": len(flags), "k": sum(bool(f) for f in flags if f is not None), **values}
    if not flags or any(f is None for f in flags):
        return Claim(key, UNKNOWN, None, vals)
    k, n = vals["k"], vals["n"]
    case = "all" if k == n else ("none" if k == 0 else "some")
    return Claim(key, _fmt({"all": all_, "some": some, "none": none}[case], vals), case, vals)


def claim_values(*claims: Claim | Iterable[Claim]) -> dict[str, str]:
    """``{key: text}`` of the claims (nested iterables flattened); a key given twice is an error."""
    out: dict[str, str] = {}
    for c in claims:
        for one in ([c] if isinstance(c, Claim) else list(c)):
            if one.key in out:
                raise ValueError(f"claim key {one.key!r} given twice")
            out[one.key] = one.text
    return out


def glue_claims(*claims: Claim | Iterable[Claim]) -> dict[str, str]:
    """Glue every claim's text under its key; returns ``{key: text}``."""
    from coursebook.glue import glue_values

    return glue_values(claim_values(*claims))


# ------------------------------------------------------------------ guarded sentences
def guards(claim_id: str) -> Callable:
    """Mark a test as the guard of the sentence ``% claim: <claim_id>`` (read by :func:`guarded_ids`)."""
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", claim_id):
        raise ValueError(f"claim id {claim_id!r}: letters, digits, '.', '-', '_' only")

    def mark(fn: Callable) -> Callable:
        fn.guards_claim = claim_id
        return fn

    return mark


def claim_markers(book: Path | None = None) -> dict[str, list[str]]:
    """``{claim id: [page, ...]}`` of every ``% claim:`` marker under ``book/``."""
    book = Path(book or ROOT / "book")
    out: dict[str, list[str]] = {}
    for page in sorted(book.rglob("*.md")):
        for cid in MARKER.findall(page.read_text(encoding="utf-8")):
            out.setdefault(cid, []).append(page.relative_to(book).as_posix())
    return out


_GUARD = re.compile(r"""@(?:claims\.)?guards\(\s*["']([A-Za-z0-9_.\-]+)["']\s*\)""")


def guarded_ids(tests: Path | None = None) -> dict[str, list[str]]:
    """``{claim id: [test file, ...]}`` of every ``@claims.guards("…")`` under ``tests/``."""
    tests = Path(tests or ROOT / "tests")
    out: dict[str, list[str]] = {}
    for f in sorted(tests.rglob("*.py")):
        for cid in _GUARD.findall(f.read_text(encoding="utf-8")):
            out.setdefault(cid, []).append(f.relative_to(tests).as_posix())
    return out
