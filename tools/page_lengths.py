"""How long each built page is: its height in CSS pixels at a given width, in headless Chromium.

    python -m tools.page_lengths                  # _build/html, 1280 px wide
    python -m tools.page_lengths --width 390 --json lengths.json

A "screen" is the height of the viewport (900 px at 1280 wide); the book aims at no page longer
than about 15 desktop screens (``tests/book/test_page_length.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCREEN = {1280: 900, 820: 1180, 390: 844}


def pages(html_root: Path) -> list[Path]:
    return sorted(p for p in (html_root / "book").rglob("*.html"))


def measure(html_root: Path, width: int = 1280, chromium: str | None = None) -> dict[str, int]:
    """``{page relative to the book: document height in px}`` at ``width`` (images loaded)."""
    from playwright.sync_api import sync_playwright

    exe = chromium or os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
    if not Path(exe).exists():
        exe = shutil.which("chromium") or exe
    out = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True,
                              args=["--headless=new", "--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": width, "height": SCREEN.get(width, 900)})
        for f in pages(html_root):
            page.goto(f.as_uri(), wait_until="load")
            # lazy images load only near the viewport: make every image eager, wait for all of them
            page.evaluate("""async () => {
                for (const img of document.images) { img.loading = 'eager'; }
                await Promise.all([...document.images].map(img => img.complete ? null :
                    new Promise(r => { img.onload = img.onerror = r; })));
            }""")
            page.wait_for_timeout(100)
            out[f.relative_to(html_root).as_posix()] = int(page.evaluate(
                "Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)"))
        b.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.page_lengths", description=__doc__.split("\n")[0])
    ap.add_argument("html", nargs="?", default=str(REPO / "_build" / "html"))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--json", default=None, help="also write the lengths as JSON here")
    a = ap.parse_args(argv)
    lengths = measure(Path(a.html), a.width)
    screen = SCREEN.get(a.width, 900)
    for name, px in lengths.items():
        print(f"{px:8d} px  {px / screen:5.1f} screens  {name}")
    if a.json:
        Path(a.json).write_text(json.dumps(lengths, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
