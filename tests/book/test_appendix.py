"""The machines appendix quotes each profile's English source and conditions, one condition a row,
so no quoted cell grows into an English paragraph (coursebook.roofline.machines_sources)."""
from __future__ import annotations

from coursebook import leaks, roofline


def test_conditions_are_split_one_a_row_and_nothing_is_lost():
    from ledger.machines import machines

    table = roofline.machines_sources()
    rows = [r for r in table.splitlines()[2:]]
    cells = [r.split(" | ")[-1].rstrip(" |") for r in rows]
    for name, m in machines().items():
        assert f"**{name}**" in table
        joined = "; ".join(c for c in roofline._clauses(m.conditions))
        assert joined.replace(" ", "") == m.conditions.replace(" ", "").rstrip(";"), name
        for clause in roofline._clauses(m.conditions):
            assert clause in cells, clause
    assert roofline._clauses("a (x; y); b;; c") == ["a (x; y)", "b", "c"]
    html = "<article class='bd-article'>" + "".join(f"<p>{c}</p>" for c in cells) + "</article>"
    assert leaks.english_paragraphs(html) == [], "a quoted cell reads as an English paragraph"
