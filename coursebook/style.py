"""The one plotting style of the book: CJK font, colours, sizes.

Every figure is drawn through :func:`new_figure` (or after :func:`apply`), so Chinese
labels render with a real CJK font (Noto Sans CJK SC shipped by the ``mplfonts``
wheel) instead of tofu boxes, and all figures look alike.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["apply", "new_figure", "figure", "cjk_font_path", "machine_words", "COLORS", "FONT_FAMILY", "MACHINE_WORDS"]

FONT_FAMILY = "Noto Sans CJK SC"
COLORS = {
    "memory": "#1f77b4",
    "compute": "#d62728",
    "datasheet": "#7f7f7f",
    "calibrated": "#2ca02c",
    "eager": "#ff7f0e",
    "fused": "#1f77b4",
    "accent": "#9467bd",
}
#: How a figure names the course's machine profiles (a profile's file name is bookkeeping).
MACHINE_WORDS = {
    "h200-calibrated": "H200 标定参数",
    "h200-sustained": "H200 持续算力标定参数",
    "h200-spec": "H200 规格",
    "h100-spec": "H100 规格",
    "a100-sxm4-80gb-spec": "A100 规格",
}
_applied = False


def machine_words(name: str) -> str:
    """The words a figure prints for machine profile ``name`` (a profile the table lacks -- a user's
    own -- is printed by its name)."""
    return MACHINE_WORDS.get(name, name)


def cjk_font_path() -> Path:
    """Path of the CJK font file; raises FileNotFoundError with a fix if missing."""
    override = os.environ.get("COURSEBOOK_CJK_FONT")
    if override:
        p = Path(override)
        if not p.is_file():
            raise FileNotFoundError(f"COURSEBOOK_CJK_FONT={override!r} is not a file")
        return p
    try:
        import mplfonts
    except ImportError as exc:  # pragma: no cover - depends on install
        raise FileNotFoundError(
            "no CJK font: install the 'book' extra (mplfonts) or set COURSEBOOK_CJK_FONT"
        ) from exc
    p = Path(mplfonts.__file__).parent / "fonts" / "NotoSansCJKsc-Regular.otf"
    if not p.is_file():
        raise FileNotFoundError(f"CJK font missing from mplfonts: {p}")
    return p


def apply() -> None:
    """Register the CJK font and set the book's rcParams (idempotent)."""
    global _applied
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib import font_manager, rcParams

    if not _applied:
        font_manager.fontManager.addfont(str(cjk_font_path()))
        _applied = True
    rcParams.update(
        {
            "font.family": "sans-serif",
            "font.sans-serif": [FONT_FAMILY, "DejaVu Sans"],
            "axes.unicode_minus": False,
            "figure.dpi": 110,
            "savefig.dpi": 110,
            "figure.figsize": (7.2, 4.2),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "font.size": 10.5,
        }
    )


def new_figure(nrows: int = 1, ncols: int = 1, **kw):
    """``plt.subplots`` with the book style applied; returns (fig, ax)."""
    apply()
    import matplotlib.pyplot as plt

    return plt.subplots(nrows, ncols, **kw)


def figure(w: float = 7.2, h: float = 4.2):
    """A :class:`matplotlib.figure.Figure` in the book style, made without pyplot, so a notebook
    cell that returns it shows it exactly once (as PNG)."""
    apply()
    try:  # let IPython render a bare Figure when a cell returns one
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")
    except Exception:  # outside IPython, or an IPython without matplotlib_inline
        pass
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h))
