"""Helpers for the book pages: glue figures from the ledger, one plotting style."""
from coursebook.glue import glue_figures, figure_table  # noqa: F401
