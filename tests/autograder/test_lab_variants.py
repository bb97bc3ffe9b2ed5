"""Every lab gives each student their own numbers in its calculation parts (not only the
kernel parts' variant shapes), the references follow those numbers, and the instructor's
solutions -- which compute from ``P`` -- are right for every student.

The solutions are run here in this process (the set-up cell and the answer cells of the
calculation parts, in notebook order) and compared with the references the grader computes
for that student; ``test_variants.py`` and ``test_kernel_labs.py`` grade whole notebooks in the
sandbox."""
from __future__ import annotations

import json
import re

import pytest

from autograder.grade import compute_references
from autograder.labs import load_builder, load_lab
from autograder.parts import compare
from autograder.variants import variant_for

LABS = ("pytorch", "primer", "elementwise", "gemm", "perfmodel")
STUDENTS = ("2024001", "2024002", "2024003", "alice", "bob", "s17")
#: parts whose reference compiles a kernel or imports tilelang (the same for every student;
#: graded in the slow tests)
SLOW_REFERENCES = {"pytorch": {"e09_a", "e09_b", "e09_c", "e09_d"}, "elementwise": {"e7_a", "e7_b", "e7_c"}}


def _calc_parts(spec, lab):
    return [p for p in spec.parts if p.auto and p.kind != "kernel" and p.grade_id not in SLOW_REFERENCES.get(lab, ())]


def _references(spec, lab, variant):
    return {p.grade_id: p.reference(variant) for p in _calc_parts(spec, lab)}


def _probe_outputs(fn, probes):
    out = []
    for args in probes:
        try:
            out.append({"ok": True, "value": fn(*args)})
        except Exception as exc:  # noqa: BLE001 - what the sandbox would send back
            out.append({"ok": False, "error": repr(exc)})
    return out


def _run_solutions(lab, spec, student):
    """ANSWER after the set-up cell and every calculation answer cell of ``student``'s
    instructor notebook (kernel answer cells and the kernel set-up are not run)."""
    nb = load_builder(lab).build(variant_for(spec, student), student=student)
    calc = {p.grade_id for p in spec.parts if p.kind != "kernel"}
    ns: dict = {}
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
        if c.cell_type != "code":
            continue
        if gid == "setup" or (gid.endswith("_answer") and gid.removesuffix("_answer") in calc):
            exec(compile(c.source, f"<{lab} {student} {gid}>", "exec"), ns)
    return ns["P"], ns["ANSWER"]


@pytest.mark.parametrize("lab", LABS)
def test_two_students_get_different_numbers_in_the_calculation_parts(lab):
    spec, _ = load_lab(lab)
    kernel_keys = {p.key for p in spec.params if p.key.startswith("K")}
    calc_params = [p for p in spec.params if p.key not in kernel_keys]
    assert len(calc_params) >= 5, f"{lab}: the calculation parts have no per-student numbers"
    book = spec.default_variant()
    a, b = variant_for(spec, "alice"), variant_for(spec, "bob")
    assert any(a[p.key] != b[p.key] for p in calc_params)
    for v in (a, b):  # nobody is asked the book's question
        assert all(v[p.key] != book[p.key] for p in calc_params if p.default not in p.choices)
    ra, rb, r0 = (_references(spec, lab, v) for v in (a, b, book))
    moved = [g for g in ra if ra[g] != r0[g]]
    # most calculation parts follow the student's numbers; the rest are facts (a machine,
    # the compiler, a fixed table) listed in the lab's spec
    assert len(moved) >= 0.5 * len(ra), (lab, sorted(set(ra) - set(moved)))
    assert [g for g in ra if ra[g] != rb[g]], lab
    # the book's answer, copied, is wrong for alice wherever her reference moved
    for g in moved:
        p = spec.part(g)
        if p.kind in ("function",):
            continue
        copied = {"value": r0[g], "unit": p.unit} if p.kind == "quantity" else r0[g]
        if p.kind in ("quantity", "number") and abs(ra[g] - r0[g]) <= max(p.abs_tol, p.rel_tol * abs(ra[g])):
            continue  # within tolerance of the book's: not a difference a student could exploit
        assert compare(p, copied, ra[g]).status == "wrong", (lab, g)


@pytest.mark.parametrize("lab", LABS)
def test_a_class_spreads_over_many_answers(lab):
    """In a class of 30, the numeric calculation answers take several values each."""
    spec, _ = load_lab(lab)
    refs = [_references(spec, lab, variant_for(spec, f"s{i:02d}")) for i in range(30)]
    spread = {g: len({json.dumps(r[g], sort_keys=True, default=str) for r in refs}) for g in refs[0]}
    varied = [g for g, n in spread.items() if n >= 3]
    assert len(varied) >= 0.4 * len(spread), (lab, spread)


@pytest.mark.parametrize("lab", LABS)
def test_the_solutions_are_right_for_every_student(lab):
    spec, _ = load_lab(lab)
    for student in (None, *STUDENTS):
        variant = variant_for(spec, student)
        if student is None:
            nb = load_builder(lab).build()
            ns: dict = {}
            calc = {p.grade_id for p in spec.parts if p.kind != "kernel"}
            for c in nb.cells:
                gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
                if c.cell_type == "code" and (gid == "setup" or (gid.endswith("_answer")
                                                                 and gid.removesuffix("_answer") in calc)):
                    exec(compile(c.source, f"<{lab} common {gid}>", "exec"), ns)
            P, answers = ns["P"], ns["ANSWER"]
        else:
            P, answers = _run_solutions(lab, spec, student)
        assert P == variant
        refs = _references(spec, lab, variant)
        for g, ref in refs.items():
            p = spec.part(g)
            got = answers.get(g)
            if p.kind == "function":
                got = _probe_outputs(got, p.probes)
            v = compare(p, got, ref)
            assert v.status == "right", (lab, student, g, v.message, v.detail)


@pytest.mark.parametrize("lab", LABS)
def test_every_placeholder_of_the_texts_is_filled(lab):
    spec, _ = load_lab(lab)
    nb = load_builder(lab).build(variant_for(spec, "alice"), student="alice")
    text = "".join(c.source for c in nb.cells)
    assert not re.search(r"\{\{[A-Za-z0-9_.]+\}\}", text)


def test_a_perfmodel_class_graded_in_the_sandbox_gets_full_marks_each_on_their_own_numbers(limits, tmp_path,
                                                                                          monkeypatch):
    """Three students' solved notebooks, released to each (signed tags), graded as a class: every
    one full marks; the same notebook handed in under another student's id is flagged and loses
    the parts whose numbers differ."""
    import nbformat

    from autograder.grade import grade_batch
    from autograder.variants import TAG_KEY, make_tag

    monkeypatch.setenv("AUTOGRADER_KEY", "a course key for this test")
    spec, _ = load_lab("perfmodel")
    subs = tmp_path / "subs"
    subs.mkdir()
    students = ("2024001", "2024002", "2024003")
    for s in students:
        nb = load_builder("perfmodel").build(variant_for(spec, s), student=s)
        nb.metadata[TAG_KEY] = make_tag(spec, s, b"a course key for this test")
        nbformat.write(nb, str(subs / f"{s}.ipynb"))
    copied = nbformat.read(str(subs / "2024001.ipynb"), as_version=4)
    nbformat.write(copied, str(subs / "2024009.ipynb"))
    grade_batch(sorted(subs.glob("*.ipynb")), "perfmodel", tmp_path / "out", jobs=2, limits=limits, progress=False)
    recs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "out" / "records").glob("*.json")}
    for s in students:
        assert recs[s]["status"] == "graded" and recs[s]["auto_score"] == spec.auto_points, recs[s]["problems"]
    assert recs["2024009"]["status"] == "flagged" and recs["2024009"]["auto_score"] < spec.auto_points
