"""Shared fixtures: the repository root and one strict build of the book per session."""
from __future__ import annotations

import os
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


def pytest_collection_modifyitems(session, config, items):
    """Run the book tests last: they are the slowest (a strict build, a browser), and
    page tests compile kernels in this process through the cached jit path, which
    must not precede the kernel tests that inspect freshly compiled device modules."""
    items.sort(key=lambda item: "/tests/book/" in str(item.fspath))
