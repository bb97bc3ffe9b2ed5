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


def test_the_machines_table_marks_the_default_and_lists_the_on_chip_resources():
    from ledger.machines import DEFAULT_MACHINE, machines

    table = roofline.machines_table()
    assert table.count("（正文默认）") == 1 and f"**{DEFAULT_MACHINE}**（正文默认）" in table
    for name, m in machines().items():
        if m.resources:
            assert roofline._resources_text(m.resources) in table, name
    assert "KiB" in roofline._resources_text({"smem_per_sm_kb": 228}), "the profiles' kb are KiB (x 1024)"


def test_the_example_machine_name_of_the_appendix_is_a_valid_profile_name():
    """The appendix tells the reader to call judge(cost, NAME) with their own profile: NAME must be a name
    the ledger accepts (lower case, digits, - _ .)."""
    import re
    from pathlib import Path

    from ledger import machines as lm

    page = (Path(__file__).resolve().parents[2] / "book" / "appendix" / "machines.md").read_text(encoding="utf-8")
    names = re.findall(r'judge\(cost, "([^"]+)"\)', page)
    assert names and all(lm._NAME_RE.match(n) for n in names), names


def test_the_glossary_names_the_four_labels_and_every_row_is_complete():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "book" / "appendix" / "glossary.md").read_text(encoding="utf-8")
    rows = [ln for ln in page.splitlines() if ln.startswith("| ") and not ln.startswith("| 中文 |")]
    assert len(rows) >= 60
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split(" | ")]
        assert len(cells) == 3 and all(cells), ln
    for label in ("| live |", "| recorded |", "| lowered on CPU |", "| analytic |"):
        assert label in page, label
    terms = [ln.split(" | ")[0].strip("| ") for ln in rows]
    assert len(terms) == len(set(terms)), "a term listed twice"
