"""Shared fixtures and the test tiers.

``make test`` runs everything; ``make test-fast`` runs what is not marked ``slow`` or ``browser``.
A test that compiles a kernel (tilelang's compile, cached or not, CUDA or Ascend) or builds the
book must be marked ``slow``: an unmarked one fails here with a message that says so, so the fast
tier stays free of compiles by construction, not by convention.
"""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the book strictly once (warnings and failing cells are errors).

    Set COURSE_BOOK_PREBUILT=1 to reuse an existing _build/html (e.g. right after
    `make book`); by default the build runs, using the execution cache.
    """
    html = ROOT / "_build" / "html"
    if os.environ.get("COURSE_BOOK_PREBUILT") != "1" or not (html / "index.html").is_file():
        from coursebook.build import build

        build(strict=True)
    return html


@pytest.fixture(scope="session")
def fresh_compiles():
    """Compile afresh, once per session: tilelang's disk cache is off for the whole session (a
    kernel loaded from it carries no device module, so its launch configuration cannot be read)
    and the in-memory memos of the ``@tilelang.jit`` factories are cleared once at the start.
    After that every factory keeps what it compiled, so a kernel two modules inspect compiles
    once."""
    tilelang = pytest.importorskip("tilelang")

    def clear_memos():
        for name, mod in list(sys.modules.items()):
            if not name.startswith(("kernels.", "measure.")) or mod is None:
                continue
            for obj in list(vars(mod).values()):
                memo = getattr(obj, "_kernel_cache", None)
                if isinstance(memo, dict):
                    memo.clear()

    tilelang.disable_cache()
    clear_memos()
    yield
    tilelang.enable_cache()


#: The test being run, and whether it may compile (set before its fixtures are set up).
_CURRENT = {"nodeid": None, "slow": True}
_HOOKED: set = set()


def _hook_compiles() -> None:
    """Wrap tilelang's compile entry points (loading a cached kernel goes through them too): a
    compile while an unmarked test (or its fixtures) runs fails it. tilelang is imported here if a
    test has not imported it yet, so a test that imports it in its body is guarded too."""
    import importlib

    try:
        targets = [(importlib.import_module("tilelang.jit"), "compile"),  # the module, not the decorator
                   (importlib.import_module("tilelang.jit"), "par_compile"),
                   (importlib.import_module("tilelang"), "compile"),
                   (importlib.import_module("tilelang"), "lower"),  # lowering and codegen without nvcc
                   (importlib.import_module("tilelang.engine"), "lower"),
                   (importlib.import_module("tilelang.engine.lower"), "lower")]
    except Exception:
        return
    for mod, attr in targets:
        if (mod.__name__, attr) in _HOOKED:
            continue
        orig = getattr(mod, attr)

        @functools.wraps(orig)  # inspect.signature still reads the original's parameters
        def guarded(*a, _orig=orig, _name=f"{mod.__name__}.{attr}", **k):
            if not _CURRENT["slow"]:
                pytest.fail(f"{_CURRENT['nodeid']} compiles a kernel ({_name}) in its body or fixtures: "
                            f"mark it @pytest.mark.slow (make test-fast runs no compile)")
            return _orig(*a, **k)

        setattr(mod, attr, guarded)
        _HOOKED.add((mod.__name__, attr))


def pytest_collection_finish(session):
    if any(item.get_closest_marker("slow") is None for item in session.items):
        _hook_compiles()


def pytest_runtest_setup(item):
    _CURRENT.update(nodeid=item.nodeid, slow=item.get_closest_marker("slow") is not None)


def pytest_collection_modifyitems(session, config, items):
    """A test that builds the book must be marked slow; the book tests run last (a strict build
    and a browser are the slowest steps)."""
    for item in items:
        if "built_book" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("slow"):
            raise pytest.UsageError(f"{item.nodeid} builds the book: mark it @pytest.mark.slow")
    items.sort(key=lambda item: "/tests/book/" in str(item.fspath))
