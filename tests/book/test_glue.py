"""A glued text prints exactly as written: myst-nb's {glue:text} literal-evaluates text/plain
("1.20" -> 1.2, "1.718e10" -> 17180000000.0), so coursebook.glue.GluedText quotes the texts it
would change."""
from __future__ import annotations

import pytest

from coursebook.glue import GluedText, shown_text


@pytest.mark.parametrize("text", ["1.20", "1.718e10", "0.50", "12.5", "371.0", "1_000", "2", "abc", "—", "1.2×",
                                  "现场实测（live）：本页", "it's \"quoted\"", "(1, 2)", "True", "None", "-0.0", ""])
def test_glue_text_prints_what_was_glued(text):
    from myst_nb.core.variables import format_plain_text

    assert format_plain_text(repr(GluedText(text)), "") == text
    assert shown_text(repr(GluedText(text))) == text


def test_plain_texts_stay_unquoted():
    """Texts myst-nb prints unchanged are stored as they are (what a live record reads back)."""
    for text in ("12.5", "abc", "现场实测（live）", "371.0"):
        assert repr(GluedText(text)) == text
    assert repr(GluedText("1.20")) == "'1.20'"


@pytest.mark.slow
def test_the_built_book_prints_a_figure_text_as_the_ledger_wrote_it(built_book):
    from ledger.figures import collect

    text = collect()["pytorch.e6.flop_sci"].text
    html = (built_book / "book" / "pytorch" / "summary.html").read_text(encoding="utf-8")
    assert f'<span class="pasted-text">{text}</span>' in html
    assert "17180000000.0" not in html
