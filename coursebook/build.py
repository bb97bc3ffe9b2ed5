"""Build the HTML book: ``python -m coursebook.build [--no-strict] [--clean]``.

Strict by default: any Sphinx warning or failing notebook cell fails the build
(``-W --keep-going`` with ``raise_on_error`` in ``_config.yml``).

Live or recorded (:mod:`coursebook.live`): on a machine with a CUDA GPU the pages run their
chapter's suites live unless ``LIVE=0`` (``make book LIVE=0``).  The mode is part of the cache
stamp, and a live build always executes every page afresh (new measurements, a new live
directory): jupyter-cache keys a page on its source only and would replay old numbers.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "html"
CACHE = ROOT / "_build" / ".jupyter_cache"
STAMP = ROOT / "_build" / ".inputs.sha256"
# What executed pages read besides their own source: the packages and the recorded
# results.  jupyter-cache keys a page on its source only, so when any of these
# changes the execution cache is dropped and every page runs again.
INPUTS = ("ledger", "kernels", "measure", "coursebook", "autograder", "labs")
SUFFIXES = {".py", ".json", ".csv", ".txt", ".cpp", ".h"}
# Read by no executed page: the PDF edition's builder (editing it re-executes nothing).
NOT_EXECUTED = {"coursebook/pdf.py"}


def inputs_digest() -> str:
    import hashlib

    h = hashlib.sha256()
    for top in INPUTS:
        for p in sorted((ROOT / top).rglob("*")):
            rel = p.relative_to(ROOT).as_posix()
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts and rel not in NOT_EXECUTED:
                h.update(rel.encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def _invalidate_stale_cache(mode: str = "recorded") -> tuple[bool, str]:
    """Drop the caches when the inputs or the mode changed, or the build is live; returns (stale,
    stamp of the inputs now).  The caller stamps *this* digest after a good build -- not one taken
    at the end, which would claim inputs edited during the build were already executed."""
    digest = inputs_digest() + ("" if mode == "recorded" else f" {mode}")
    old = STAMP.read_text().strip() if STAMP.is_file() else None
    stale = old != digest or mode == "live"
    if stale:
        # drop executed outputs and Sphinx's parsed pages, so every page re-runs
        for d in (CACHE, ROOT / "_build" / ".doctrees"):
            if d.exists():
                shutil.rmtree(d)
    return stale, digest


def _complete_redirect(index: Path) -> None:
    """jupyter-book's root index.html is a bare meta refresh; give it a charset, a
    title and the book's favicon, so a browser opening the root asks the server for
    nothing outside the build (no /favicon.ico)."""
    if not index.is_file():
        return
    text = index.read_text(encoding="utf-8")
    if "<link rel=\"icon\"" in text:
        return
    m = re.search(r'url=([^"]+)"', text)
    target = m.group(1) if m else "book/intro.html"
    index.write_text(
        "<!DOCTYPE html>\n<html lang=\"zh-CN\"><head><meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Refresh\" content=\"0; url={target}\">\n"
        "<link rel=\"icon\" href=\"_static/favicon.svg\">\n<title>TileLang 算子课</title></head>\n"
        f"<body><a href=\"{target}\">TileLang 算子课</a></body></html>\n",
        encoding="utf-8",
    )


def build(strict: bool = True, clean: bool = False) -> Path:
    if clean and (ROOT / "_build").exists():
        shutil.rmtree(ROOT / "_build")
    from coursebook import live

    mode = live.mode()
    if mode == "live":
        shutil.rmtree(live.live_dir(), ignore_errors=True)
        print("a CUDA GPU is here: every page runs again and measures its chapter live (LIVE=0: recorded)")
    stale, digest = _invalidate_stale_cache(mode)
    if stale and mode != "live":
        print("packages or recorded results changed since the last build: every page runs again")
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(ROOT), "--builder", "html"]
    if strict:
        cmd += ["-W", "--keep-going"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"book build failed (exit {proc.returncode}); see the messages above")
    STAMP.write_text(digest + "\n")
    index = OUT / "index.html"
    _complete_redirect(index)
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
