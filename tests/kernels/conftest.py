"""Fixtures shared by the kernel tests."""
from __future__ import annotations

import sys

import pytest


@pytest.fixture(scope="module")
def fresh_compiles():
    """Compile afresh: kernels from tilelang's disk cache (or from a jit object's
    in-memory memo filled earlier in this process, e.g. by a book page test) carry no
    device module, so their launch configuration cannot be inspected."""
    tilelang = pytest.importorskip("tilelang")

    def clear_memos():
        for name, mod in list(sys.modules.items()):
            if not name.startswith("kernels.") or mod is None:
                continue
            for obj in list(vars(mod).values()):
                memo = getattr(obj, "_kernel_cache", None)
                if isinstance(memo, dict):
                    memo.clear()

    tilelang.disable_cache()
    clear_memos()
    yield
    clear_memos()
    tilelang.enable_cache()
