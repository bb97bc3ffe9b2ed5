"""The architecture of DEVELOPING.md's map, guarded: a package imports only the packages its row allows.

Every ``import`` and ``from ... import`` of every module (module level and inside functions) is
read with :mod:`ast`, nothing is executed.  A first-party import outside the package's allowed
set fails with the file, the line and the arrow.  (That ``ledger`` imports nothing outside the
standard library is the ledger's own test.)
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("ledger", "kernels", "measure", "coursebook", "autograder", "labs", "tools")

#: package -> the first-party packages it may import (DEVELOPING.md, "The map").
ALLOWED = {
    "ledger": set(),
    "kernels": {"ledger"},
    "measure": {"ledger", "kernels"},
    "coursebook": {"ledger", "kernels", "measure"},
    "autograder": {"ledger"},
    "labs": {"ledger", "autograder"},
    "tools": {"ledger", "kernels", "measure"},
}

#: file -> what it may import besides its package's row: the kernel labs' one adapter.  The
#: kernel grader checks and times students' kernels with the course's own harness and
#: tolerances (``measure``) and reads course kernels (``kernels``) -- through this file only, so
#: the rest of ``autograder`` (release, the notebook sandbox, the analytic grader) stays on
#: ``ledger`` alone and imports neither torch nor tilelang.
ADAPTERS = {
    "autograder/kernelgrade/measure.py": {"kernels", "measure"},
}


def imports_of(source: str, package: str, module_parts: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(line, top-level first-party package) of every import in ``source``; relative imports are
    resolved against ``package`` (they stay inside it)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            top = package if node.level else (node.module or "").split(".")[0]
            out.append((node.lineno, top))
    return [(line, top) for line, top in out if top in FIRST_PARTY]


def forbidden(package: str, root: Path = ROOT) -> list[str]:
    bad = []
    for path in sorted((root / package).rglob("*.py")):
        if "results" in path.relative_to(root / package).parts:
            continue
        rel = path.relative_to(root).as_posix()
        extra = ADAPTERS.get(rel, set())
        for line, top in imports_of(path.read_text(encoding="utf-8"), package):
            if top != package and top not in ALLOWED[package] | extra:
                bad.append(f"{path.relative_to(root)}:{line}: {package} -> {top}")
    return bad


@pytest.mark.parametrize("package", list(ALLOWED))
def test_package_imports_only_what_the_map_allows(package):
    assert (ROOT / package).is_dir(), package
    bad = forbidden(package)
    assert not bad, "imports against the map in DEVELOPING.md:\n" + "\n".join(bad)


def test_the_check_catches_a_forbidden_arrow(tmp_path):
    """A kernel module that reaches into the book's helpers or the measurement package fails,
    wherever the import sits; an allowed one passes."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "bad.py").write_text(
        "import ledger.machines\nfrom . import common\n\ndef f():\n    from coursebook import records\n"
        "    import measure.harness\n", encoding="utf-8")
    assert forbidden("kernels", tmp_path) == ["kernels/bad.py:5: kernels -> coursebook",
                                              "kernels/bad.py:6: kernels -> measure"]
    (tmp_path / "kernels" / "bad.py").write_text("from ledger.cost import Cost\n", encoding="utf-8")
    assert forbidden("kernels", tmp_path) == []


def test_only_the_adapter_may_reach_kernels_and_measure(tmp_path):
    """A second kernelgrade module importing measure fails; the adapter itself passes."""
    (tmp_path / "autograder" / "kernelgrade").mkdir(parents=True)
    (tmp_path / "autograder" / "kernelgrade" / "measure.py").write_text(
        "def f():\n    from measure.harness import Harness\n    import kernels.common\n", encoding="utf-8")
    assert forbidden("autograder", tmp_path) == []
    (tmp_path / "autograder" / "kernelgrade" / "evaluate.py").write_text(
        "def g():\n    from measure.check import tolerance\n", encoding="utf-8")
    assert forbidden("autograder", tmp_path) == ["autograder/kernelgrade/evaluate.py:2: autograder -> measure"]


def test_the_map_in_developing_md_is_this_table():
    """DEVELOPING.md's table lists every package with the arrows this test enforces (an
    adapter's extra arrows stand in parentheses after the file's name)."""
    text = (ROOT / "DEVELOPING.md").read_text(encoding="utf-8")
    for package, allowed in ALLOWED.items():
        row = next((ln for ln in text.splitlines() if ln.startswith(f"| `{package}`")), None)
        assert row is not None, f"DEVELOPING.md's map has no row for {package}"
        may = row.rsplit("|", 2)[-2]
        main, _, rest = may.partition("(")
        named = {p for p in FIRST_PARTY if f"`{p}`" in main}
        assert named == allowed, (package, named, allowed)
        for path, extra in ADAPTERS.items():
            if path.startswith(package + "/"):
                assert f"`{path}`" in rest and {p for p in FIRST_PARTY if f"`{p}`" in rest} == extra, (path, rest)
