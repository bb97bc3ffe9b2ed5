"""The ledger needs the standard library only, and gives the same registry without anything else.

Two guards: every module of the package imports nothing outside the standard library
(read from the source, so an import inside a function counts too), and the command line
run by an interpreter that has no site-packages at all (``-I -S``: no tilelang, no
torch, no numpy) prints the same figures, errata and machines as this one.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ledger"
ALLOWED_TOP = set(sys.stdlib_module_names) | {"ledger"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def outside_imports(source: str, filename: str = "<src>") -> list[str]:
    """``'line: module'`` for every import of ``source`` that leaves the standard library and ``ledger``.

    Covers ``import x``, ``from x import y`` (relative imports stay inside the package),
    and ``importlib.import_module(...)`` / ``__import__(...)`` calls, whose argument must
    be a literal (or an f-string that starts with ``ledger.``) to be judged at all.
    """
    bad: list[str] = []

    def check(name: str, line: int) -> None:
        if name.split(".")[0] not in ALLOWED_TOP:
            bad.append(f"{filename}:{line}: {name}")

    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                check(node.module or "", node.lineno)
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "import_module",
                                                                   "__import__"):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                check(arg.value, node.lineno)
            elif (isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant)
                  and str(arg.values[0].value).startswith("ledger.")):
                continue
            else:
                bad.append(f"{filename}:{node.lineno}: dynamic import of a computed name")
    return bad


def test_checker_flags_what_it_should():
    src = """
import json, numpy
from . import cost
from ledger.cost import Cost
from torch.nn import functional
import importlib
importlib.import_module("tilelang.language")
importlib.import_module(f"ledger.{name}")
importlib.import_module(name)
__import__("yaml")
def f():
    import scipy.linalg
"""
    bad = outside_imports(src)
    assert [b.split(": ", 1)[1] for b in bad] == ["numpy", "torch.nn", "tilelang.language",
                                                  "dynamic import of a computed name", "yaml", "scipy.linalg"]


def test_every_ledger_module_imports_only_the_standard_library():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) >= 15 and PACKAGE / "figures.py" in files
    bad = [b for f in files for b in outside_imports(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert bad == [], "ledger must import the standard library only:\n" + "\n".join(bad)


# --- the command line on a bare interpreter -------------------------------------------

_BARE = r"""
import importlib.util, runpy, sys
root = sys.argv.pop(1)
sys.path.insert(0, root)
present = [n for n in ("tilelang", "torch", "numpy", "pytest") if importlib.util.find_spec(n) is not None]
if present:
    sys.exit(f"not a bare interpreter: {present} importable")
import ledger
if not ledger.__file__.startswith(root):
    sys.exit(f"ledger comes from {ledger.__file__}, not {root}")
runpy.run_module("ledger", run_name="__main__", alter_sys=True)
"""


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "LEDGER_MACHINES_DIR" and not k.startswith("PYTHON")}


def run_bare(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m ledger ARGS`` with no site-packages (``-I -S``), the checkout first on the path."""
    return subprocess.run([sys.executable, "-I", "-S", "-c", _BARE, str(ROOT), *args], cwd=cwd,
                          capture_output=True, text=True, env=_env())


def run_here(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ledger", *args], cwd=ROOT, capture_output=True, text=True,
                          env=_env())


def test_bare_interpreter_has_nothing_installed(tmp_path):
    out = subprocess.run([sys.executable, "-I", "-S", "-c", "import torch"], cwd=tmp_path, capture_output=True,
                         text=True, env=_env())
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr
    out = subprocess.run([sys.executable, "-I", "-S", "-c", "import tilelang"], cwd=tmp_path, capture_output=True,
                         text=True, env=_env())
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr


@pytest.mark.parametrize("args", [("figures", "--json", "--full"), ("errata", "--json"), ("machines", "--json")])
def test_same_output_with_and_without_site_packages(args, tmp_path):
    bare = run_bare(*args, cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    here = run_here(*args)
    assert here.returncode == 0, here.stderr
    b, h = json.loads(bare.stdout), json.loads(here.stdout)
    assert b, args
    if isinstance(b, dict):
        assert sorted(b) == sorted(h)
        diff = [k for k in b if b[k] != h[k]]
        assert diff == [], f"differ without site-packages: {diff[:10]}"
    assert b == h


def test_bare_registry_holds_the_ascend_figures(tmp_path):
    """What used to vanish without tilelang: the Ascend constants and the figures built on them."""
    bare = run_bare("figures", "--json", cwd=tmp_path)
    assert bare.returncode == 0, bare.stderr
    figs = json.loads(bare.stdout)
    const = {k.rsplit(".", 1)[1]: v for k, v in figs.items() if ".ascend.const." in k}
    assert const["cube_throughput_fp16"] == 8192 and const["special_func_throughput"] == 8
    assert any(k.endswith(".ascend.square_threshold") for k in figs)
    assert any(k.endswith(".m5.softmax_ratio") for k in figs)
