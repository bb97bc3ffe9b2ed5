"""Claims follow the data (coursebook.claims): glued variants chosen by values, and guarded
sentences -- every ``% claim:`` marker on a page has a guard test, every guard a marker."""
from __future__ import annotations

import pytest

from coursebook import claims


def test_compare_picks_the_side_and_the_tie():
    fast = claims.compare("claim.t.x", 1.0, 2.0, lower="更快", higher="更慢")
    slow = claims.compare("claim.t.x", 3.0, 2.0, lower="更快", higher="更慢")
    tie = claims.compare("claim.t.x", 2.02, 2.0, lower="更快", higher="更慢", tie="相当", tol=0.05)
    assert (fast.text, fast.case) == ("更快", "lower")
    assert (slow.text, slow.case) == ("更慢", "higher")
    assert (tie.text, tie.case) == ("相当", "tie")
    assert claims.compare("k", 1.0, 2.0, lower="快 {ratio:.2f} 倍", higher="慢").text == "快 0.50 倍"


def test_missing_values_never_pick_a_variant():
    for c in (claims.compare("k", None, 2.0, lower="a", higher="b"),
              claims.threshold("k", float("nan"), 1.0, above="a", below="b"),
              claims.every("k", []), claims.every("k", [True, None]),
              claims.choose("k", None, {"x": "a"})):
        assert c.text == claims.UNKNOWN and c.case is None


def test_threshold_reaches_at_the_limit():
    assert claims.threshold("k", 80.0, 80.0, above="达到", below="未达到").case == "above"
    assert claims.threshold("k", 79.9, 80.0, above="达到", below="未达到").text == "未达到"


def test_every_counts_runs():
    assert claims.every("k", [True] * 4).text == "在每次重复中"
    assert claims.every("k", [True, False, True, True]).text == "在 4 次重复中的 3 次"
    assert claims.every("k", [False, False]).case == "none"


def test_choose_names_missing_cases_and_fields():
    with pytest.raises(KeyError, match="cases are"):
        claims.choose("k", "c", {"a": "x"})
    with pytest.raises(ValueError, match="names a value"):
        claims.choose("k", "a", {"a": "{nope}"})


def test_claim_values_refuse_a_key_twice():
    a = claims.choose("k", "a", {"a": "x"})
    with pytest.raises(ValueError, match="twice"):
        claims.claim_values(a, [a])


def test_guard_ids_are_read_from_test_files(tmp_path):
    deco = "@claims." + 'guards("pytorch.x-y")'  # split, so this file guards nothing itself
    (tmp_path / "test_x.py").write_text(deco + "\ndef test_a(): pass\n", encoding="utf-8")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "p.md").write_text("% claim: pytorch.x-y\n正文。\n", encoding="utf-8")
    assert claims.guarded_ids(tmp_path) == {"pytorch.x-y": ["test_x.py"]}
    assert claims.claim_markers(tmp_path / "book") == {"pytorch.x-y": ["p.md"]}
    with pytest.raises(ValueError):
        claims.guards("bad id!")


def test_every_marked_sentence_has_a_guard_and_every_guard_a_sentence():
    markers = claims.claim_markers()
    guarded = claims.guarded_ids()
    unguarded = sorted(set(markers) - set(guarded))
    orphans = sorted(set(guarded) - set(markers))
    assert not unguarded, f"sentences marked '% claim:' without a @claims.guards test: {unguarded}"
    assert not orphans, f"guard tests whose sentence is gone from every page: {orphans}"
