"""Per-student variants: each student's numbers, their notebook, their references; a
notebook graded under another id is flagged, not silently scored."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.grade import GradeError, compute_references, grade_batch
from autograder.labs import load_builder
from autograder.release import ReleaseError, read_roster, release, release_roster
from autograder.variants import TAG_KEY, make_tag, variant_for, verify_tag

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def key(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOGRADER_KEY", raising=False)
    monkeypatch.setenv("AUTOGRADER_KEY_FILE", str(tmp_path / "course.key"))
    return tmp_path / "course.key"


def _solved(lab, student, key_bytes):
    """The instructor's solutions in ``student``'s notebook, tagged as released to them."""
    spec, _ = lab
    nb = load_builder("pytorch").build(variant_for(spec, student), student=student)
    nb.metadata[TAG_KEY] = make_tag(spec, student, key_bytes)
    return nb


def test_variants_are_deterministic_and_differ(lab):
    spec, _ = lab
    a, b = variant_for(spec, "alice"), variant_for(spec, "bob")
    assert a == variant_for(spec, "alice") and a != b
    book = spec.default_variant()
    for v in (a, b):  # nobody is asked the book's question
        assert all(v[p.key] != book[p.key] for p in spec.params if p.default not in p.choices)
    ra, rb, r0 = compute_references(spec, a), compute_references(spec, b), compute_references(spec)
    differ = [g for g in ra if ra[g] != rb[g]]
    assert len(differ) >= 6, differ
    # a class of 30: the answers spread over many values, so a neighbour's are rarely yours
    for gid in ("e05_a", "e07_a", "e02_a"):
        values = {round(compute_references(spec, variant_for(spec, f"s{i:02d}"))[gid], 9) for i in range(30)}
        assert len(values) >= 4, (gid, values)
    # the book's answer, copied, is wrong for alice on every part a parameter changes
    from autograder.parts import compare

    for g in ("e01_b", "e02_a", "e02_b", "e04_a", "e04_b", "e05_a", "e06_a", "e07_a", "e08_b", "e11_c", "e13_c"):
        p = spec.part(g)
        copied = {"value": r0[g], "unit": p.unit} if p.kind == "quantity" else r0[g]
        assert compare(p, copied, ra[g]).status == "wrong", g
        assert compare(p, {"value": ra[g], "unit": p.unit} if p.kind == "quantity" else ra[g], ra[g]).status == "right"


def test_release_writes_each_students_numbers_and_a_tag(lab, tmp_path, key):
    spec, _ = lab
    out_a = release("pytorch", tmp_path / "alice.ipynb", student="alice")
    assert key.exists() and oct(key.stat().st_mode & 0o777) == "0o600"
    nb = nbformat.read(str(out_a), as_version=4)
    tag = nb.metadata[TAG_KEY]
    assert tag["student"] == "alice" and tag["params"] == variant_for(spec, "alice")
    assert verify_tag(spec, tag, "alice", key.read_text().strip().encode())[0] == "ok"
    text = out_a.read_text(encoding="utf-8")
    v = variant_for(spec, "alice")
    assert f"S = {v['E7.S']}" in text and f"checker('pytorch', 'alice')" in text
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    roster = tmp_path / "roster.csv"
    roster.write_text("学号,姓名\nalice,A\nbob smith,B\n# a comment\n\n", encoding="utf-8")
    assert read_roster(roster) == ["alice", "bob_smith"]
    outs = release_roster("lab02", roster, tmp_path / "class")  # the old lab name works too
    assert [p.name for p in outs] == ["alice.ipynb", "bob_smith.ipynb"]
    tag_b = nbformat.read(str(outs[1]), as_version=4).metadata[TAG_KEY]
    assert tag_b["student"] == "bob_smith" and tag_b["params"] == variant_for(spec, "bob_smith")
    with pytest.raises(ReleaseError, match="alice smith"):
        release("pytorch", tmp_path / "x.ipynb", student="alice smith")
    dup = tmp_path / "dup.txt"
    dup.write_text("Alice\nalice\n", encoding="utf-8")
    with pytest.raises(ReleaseError, match="same student id"):
        read_roster(dup)


def test_two_students_two_right_answers_and_swapped_ids_are_flagged(lab, limits, tmp_path, key):
    spec, _ = lab
    release("pytorch", tmp_path / "warmup.ipynb", student="warmup")  # creates the course key
    k = key.read_text().strip().encode()
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(_solved(lab, "alice", k), str(subs / "alice.ipynb"))
    nbformat.write(_solved(lab, "bob", k), str(subs / "bob.ipynb"))
    # carol hands in alice's notebook; dave's tag was edited to say dave; erin's has no tag
    nbformat.write(_solved(lab, "alice", k), str(subs / "carol.ipynb"))
    forged = _solved(lab, "alice", k)
    forged.metadata[TAG_KEY]["student"] = "dave"
    nbformat.write(forged, str(subs / "dave.ipynb"))
    untagged = _solved(lab, "erin", k)
    del untagged.metadata[TAG_KEY]
    nbformat.write(untagged, str(subs / "erin.ipynb"))
    grade_batch(sorted(subs.glob("*.ipynb")), "pytorch", tmp_path / "out", jobs=2, limits=limits, progress=False)
    recs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "out" / "records").glob("*.json")}
    for s in ("alice", "bob"):
        assert recs[s]["status"] == "graded" and recs[s]["auto_score"] == spec.auto_points, recs[s]["problems"]
        assert recs[s]["variant"]["tag"] == "ok" and recs[s]["variant"]["params"] == variant_for(spec, s)
    ra, rb = compute_references(spec, variant_for(spec, "alice")), compute_references(spec, variant_for(spec, "bob"))
    differ = [g for g in ra if ra[g] != rb[g]]
    assert len(differ) >= 6
    for g in differ:  # two different expected answers, both right
        ea, eb = recs["alice"]["parts"][g]["detail"], recs["bob"]["parts"][g]["detail"]
        assert ea.split("; got")[0] != eb.split("; got")[0], g
    carol = recs["carol"]
    assert carol["status"] == "flagged" and carol["variant"]["tag"] == "other-student"
    assert any("released to student 'alice'" in p and "'carol'" in p for p in carol["problems"])
    assert carol["auto_score"] < spec.auto_points  # alice's numbers are not carol's
    assert recs["dave"]["status"] == "flagged" and recs["dave"]["variant"]["tag"] == "altered"
    assert recs["erin"]["status"] == "flagged" and recs["erin"]["variant"]["tag"] == "missing"
    assert recs["erin"]["auto_score"] == spec.auto_points  # her own numbers: right, but unverified
    from autograder.report import merge

    merge([tmp_path / "out"], tmp_path / "out", "pytorch", plot=False)
    fb = (tmp_path / "out" / "feedback" / "carol.md").read_text(encoding="utf-8")
    assert "待教师核对" in fb and "alice" in fb
    # grading everything with the book's numbers instead: no flags, alice's answers are wrong
    grade_batch([subs / "alice.ipynb"], "pytorch", tmp_path / "common", jobs=1, limits=limits,
                progress=False, variants="common")
    rec = json.loads((tmp_path / "common" / "records" / "alice.json").read_text(encoding="utf-8"))
    assert rec["status"] == "graded" and rec["auto_score"] < spec.auto_points


def test_grading_variants_without_the_key_is_a_clear_error(lab, limits, tmp_path, key):
    subs = tmp_path / "alice.ipynb"
    nbformat.write(_solved(lab, "alice", b"k"), str(subs))
    with pytest.raises(GradeError, match="course key"):
        grade_batch([subs], "pytorch", tmp_path / "out", jobs=1, limits=limits, progress=False)


def test_in_notebook_check_uses_the_students_numbers(lab, capsys):
    from autograder import checker

    spec, _ = lab
    nb = load_builder("pytorch").build(variant_for(spec, "alice"), student="alice")
    setup = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    answer = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "e07_a_answer")
    ns: dict = {}
    exec(setup, ns)
    exec(answer, ns)
    assert ns["check"](ns["ANSWER"], "e07_a") == {"e07_a": "right"}
    other = next(f"s{i}" for i in range(100) if variant_for(spec, f"s{i}")["E7.S"] != variant_for(spec, "alice")["E7.S"])
    assert checker("pytorch", other)(ns["ANSWER"], "e07_a") == {"e07_a": "wrong"}
    with pytest.raises(AssertionError, match="e07_a"):
        checker("pytorch", other)(ns["ANSWER"], "e07_a", strict=True, quiet=True)
    out = capsys.readouterr().out
    assert "容差" in out  # a wrong answer is told the tolerance


def test_cli_check_takes_the_variant_from_the_tag(lab, tmp_path, key):
    nb = _solved(lab, "alice", b"any key: a student cannot verify it")
    path = tmp_path / "my_work.ipynb"
    nbformat.write(nb, str(path))
    r = subprocess.run([sys.executable, "-m", "autograder", "check", "pytorch", str(path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "52 / 52" in r.stdout and "expected" not in r.stdout
