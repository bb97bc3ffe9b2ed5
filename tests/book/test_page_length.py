"""Pages of readable length: no built page is longer than about 15 desktop screens (1280 px wide,
900 px a screen) -- a chapter is split into section pages (``_toc.yml`` sections)."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTH, SCREEN, MAX_SCREENS = 1280, 900, 15


def test_no_page_is_longer_than_fifteen_desktop_screens(built_book):
    from tools.page_lengths import measure

    lengths = measure(built_book, WIDTH)
    assert len(lengths) >= 20
    long = {page: round(px / SCREEN, 1) for page, px in lengths.items() if px > MAX_SCREENS * SCREEN}
    assert not long, f"pages longer than {MAX_SCREENS} screens at {WIDTH} px (screens): {long}"
