"""No prose anywhere in the project repeats the reference drafts word for word.

Runs the drafts' own checker (../shared/tools/prose_overlap.py, beside the checkout)
once over the whole repository.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT.parent / "shared" / "tools" / "prose_overlap.py"


def test_no_prose_repeats_the_drafts():
    if not TOOL.is_file():
        pytest.skip(f"{TOOL} not present beside this checkout")
    out = subprocess.run([sys.executable, str(TOOL), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert not out.stdout.strip(), "prose repeating the drafts:\n" + out.stdout
