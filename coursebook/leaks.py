"""Bookkeeping that must not reach the reader: what the page test looks for in the rendered book.

The reader has never seen the drafts the chapters grew from, the runner's run numbers, the
registry's keys or the repository's test functions; none of them belongs in reader-facing
prose.  :func:`find_leaks` looks for each kind in a text; :func:`html_reader_text` takes a built
page's HTML and returns the text a reader reads in its article -- after glue, cell outputs
included, code cells' sources, displayed code blocks, math and footnotes left out -- and
:func:`md_reader_text` does the same, roughly, for a MyST page's source (a quick check before a
build).  :func:`english_paragraphs` finds paragraphs written in English (a provenance paragraph
listing timestamps and output paths is the case the test exists for).

Two pages are exempt (:data:`EXEMPT_PAGES`): the generated appendix of measurement records (run
numbers, configuration labels and searches live there, explained once) and the maintainers'
appendix (where the course departs from its source material, and where each number comes from).
A test function may be cited in a footnote or a margin note, which the reader text leaves out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["Leak", "PATTERNS", "EXEMPT_PAGES", "is_exempt", "find_leaks", "html_reader_text", "md_reader_text",
           "english_paragraphs", "unrendered_markup", "page_leaks"]

#: Pages (relative to the book root, no suffix) where bookkeeping is the content, with their sections.
EXEMPT_PAGES = ("book/appendix/records", "book/appendix/maintainers")


def is_exempt(page: str) -> bool:
    """Whether ``page`` (``book/appendix/records/gemm``, no suffix) is one of :data:`EXEMPT_PAGES`
    or one of their section pages."""
    return any(page == e or page.startswith(e + "/") for e in EXEMPT_PAGES)

_KEY_TOPICS = r"(?:pytorch|primer|elementwise|gemm|perfmodel|machines|calc|derived|claim|fig)"
_REPO_DIRS = r"(?:kernels|measure|ledger|coursebook|tests|labs|autograder|tools|results|book)"

#: (kind, what it is in words, pattern)
PATTERNS: tuple[tuple[str, str, re.Pattern], ...] = (
    ("draft", "a reference to the drafts the chapters grew from",
     re.compile(r"草稿|\b[Dd]rafts?\b")),
    ("run", "a run number of the recorded results",
     re.compile(r"第\s*[0-9一二三四五六七八九十百零两]+(?:\s*[、,，和与及至到–-]\s*[0-9一二三四五六七八九十百零两]+)*"
                r"\s*(?:次|轮)\s*(?:运行|测量|记录)|"
                r"第[0-9一二三四五六七八九十百]+次(?:及更早|以前|之前)|"
                r"[0-9一二三四五六七八九十]+\s*次运行(?:中|里)?的第|"
                r"\b[Rr]uns?\s*#?\d+(?:\s*(?:[-–,、]|and|to)\s*\d+)*\b|\brun\d+\b")),
    ("config", "a raw configuration label",
     re.compile(r"\b\d+x\d+x\d+(?:_[a-z]+\d*)+\b|(?:\b[a-z_]+,)?\b[a-z_]+=\d+(?:,[a-z_]+(?:=\d+)?)+")),
    ("key", "a registry or glue key",
     re.compile(rf"\b{_KEY_TOPICS}\.[a-z0-9_\-]+\.[a-z0-9_.\-]+|\brec\.[a-z0-9][a-z0-9_.\-]*")),
    ("id", "an internal chapter id or an old lab name",
     re.compile(r"\bch(?:02|13|14|28)(?![0-9])|\blab02\b")),
    ("path", "a path in the repository",
     re.compile(rf"(?<![\w./-]){_REPO_DIRS}/[\w.\-/]*")),
    ("test", "a test function's name",
     re.compile(r"\btest_[a-z0-9_]+")),
)

_URL = re.compile(r"<?https?://[^\s<>）)]+>?")


@dataclass(frozen=True)
class Leak:
    kind: str
    text: str
    context: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.text!r} in …{self.context}…"


def find_leaks(text: str, kinds: tuple[str, ...] | None = None) -> list[Leak]:
    """Every match of :data:`PATTERNS` in ``text`` (URLs removed first), with some context."""
    text = _URL.sub(" ", text)
    out = []
    for kind, _, pat in PATTERNS:
        if kinds is not None and kind not in kinds:
            continue
        for m in pat.finditer(text):
            a, b = max(0, m.start() - 30), min(len(text), m.end() + 30)
            out.append(Leak(kind, m.group(0), text[a:b].replace("\n", " ")))
    return out


# ------------------------------------------------------------------ rendered HTML
#: Elements whose whole subtree the reader text leaves out: by tag, and by class.
_SKIP_TAGS = {"script", "style", "pre", "math", "svg", "template", "nav"}
_SKIP_CLASSES = {"cell_input", "math", "footnote", "footnote-list", "footnotes", "margin", "headerlink",
                 "toctree-wrapper", "prev-next-area", "MathJax", "docutils-footnote"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK = {"p", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "caption", "figcaption", "div",
          "summary", "blockquote", "tr", "table", "section", "details"}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.in_article = 0
        self.skip = 0
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, opened skip, opened article)
        self.parts: list[str] = []
        self.paragraphs: list[str] = []
        self._p: list[str] | None = None
        self._p_depth = 0
        self._code = 0

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        art = tag == "article" or ("bd-article" in classes)
        sk = bool(self.in_article) and (tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES)
                                        or (tag == "span" and "math" in classes))
        if art:
            self.in_article += 1
        if sk:
            self.skip += 1
        if tag == "code":
            self._code += 1
        self.stack.append((tag, sk, art))
        if self.in_article and not self.skip:
            if tag in _BLOCK:
                self.parts.append("\n")
            if tag == "p" and self._p is None:
                self._p, self._p_depth = [], len(self.stack)

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.stack:
            t, sk, art = self.stack.pop()
            if self._p is not None and len(self.stack) < self._p_depth:
                self.paragraphs.append("".join(self._p).strip())
                self._p = None
            if sk:
                self.skip -= 1
            if art:
                self.in_article -= 1
            if t == "code":
                self._code -= 1
            if t == tag:
                break
        if self.in_article and not self.skip and tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.in_article and not self.skip:
            self.parts.append(data)
            if self._p is not None and not self._code:  # a paragraph's words, not its identifiers
                self._p.append(data)


def _read(html: str) -> _Reader:
    r = _Reader()
    r.feed(html)
    r.close()
    return r


def html_reader_text(html: str) -> str:
    """The text of a built page's article that a reader reads (see the module's docstring)."""
    text = "".join(_read(html).parts)
    return re.sub(r"\n\s*\n+", "\n", text).strip()


def english_paragraphs(html: str, min_chars: int = 200, max_cjk_share: float = 0.1) -> list[str]:
    """Paragraphs (``<p>``) of the article with at least ``min_chars`` characters of words (inline
    code and URLs left out) in which Chinese characters make at most ``max_cjk_share`` of the
    letters: prose a Chinese reader should not meet (a provenance paragraph in English, a pasted
    log).  A reference to an English paper title stays below the length."""
    out = []
    for p in _read(html).paragraphs:
        p = _URL.sub(" ", p).strip()
        latin = len(re.findall(r"[A-Za-z]", p))
        cjk = len(re.findall(r"[\u3400-\u9fff]", p))
        if len(p) >= min_chars and latin + cjk and cjk <= max_cjk_share * (latin + cjk):
            out.append(p[:200])
    return out


#: Markup that a reader should never see as text: a glued value or a table cell whose Markdown was
#: not rendered (a backtick, ``**``), or a role that was not resolved.
_MARKUP = re.compile(r"`|\*\*|\{(?:glue(?::\w+)?|ref|numref|doc|eq|term)\}")


def unrendered_markup(text: str) -> list[str]:
    """Every piece of unrendered MyST markup in a page's reader text (see :data:`_MARKUP`), with
    some context; a glued text is pasted as plain text, so Markdown inside it shows literally."""
    return [text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ") for m in _MARKUP.finditer(text)]


def page_leaks(html: str) -> list[str]:
    """Every leak of a built page, English paragraphs and unrendered markup included, as printable lines."""
    text = html_reader_text(html)
    out = [str(leak) for leak in find_leaks(text)]
    out += [f"[english] {p!r}" for p in english_paragraphs(html)]
    out += [f"[markup] …{m}…" for m in unrendered_markup(text)]
    return out


# ------------------------------------------------------------------ MyST source
def md_reader_text(text: str) -> str:
    """A MyST page's source without what a reader never sees: front matter, code cells, comments
    (``% …``), labels, directive options, math, footnote definitions and the targets of roles
    (``{ref}`label```, ``{glue:text}`key```).  Inline code stays: a test name in backticks is still
    a test name in the prose."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```\{code-cell\}.*?\n```", "", text, flags=re.S)
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1\s*$", lambda m: "" if not re.match(r"`{3,}\{", m.group(0)) else m.group(0),
                  text, flags=re.S | re.M)  # plain code blocks (directives with bodies stay)
    text = re.sub(r"^%.*$", "", text, flags=re.M)
    text = re.sub(r"^\([^)\n]+\)=\s*$", "", text, flags=re.M)
    text = re.sub(r"^:[a-z_-]+:.*$", "", text, flags=re.M)
    text = re.sub(r"^\[\^[^\]]+\]:.*$", "", text, flags=re.M)
    text = re.sub(r"^`{3,}\{[^}]+\}[^\n]*$", "", text, flags=re.M)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", "", text)
    text = re.sub(r"\{[a-z:]+\}`[^`]*`", "", text)
    return text
