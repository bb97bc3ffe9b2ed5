"""Build the HTML book: ``python -m coursebook.build [--no-strict] [--clean]``.

Strict by default: any Sphinx warning or failing notebook cell fails the build
(``-W --keep-going`` with ``raise_on_error`` in ``_config.yml``).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "html"


def build(strict: bool = True, clean: bool = False) -> Path:
    if clean and (ROOT / "_build").exists():
        shutil.rmtree(ROOT / "_build")
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(ROOT), "--builder", "html"]
    if strict:
        cmd += ["-W", "--keep-going"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"book build failed (exit {proc.returncode}); see the messages above")
    index = OUT / "index.html"
    if not index.is_file():
        raise SystemExit(f"book build produced no {index}")
    print(f"built in {time.perf_counter() - t0:.1f} s; open {index}")
    return index


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-strict", action="store_true", help="do not turn warnings into errors")
    ap.add_argument("--strict", action="store_true", help="(default) warnings are errors")
    ap.add_argument("--clean", action="store_true", help="remove _build first (also the execution cache)")
    a = ap.parse_args(argv)
    build(strict=not a.no_strict, clean=a.clean)
    return 0


if __name__ == "__main__":
    sys.exit(main())
