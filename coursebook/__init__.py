"""Helpers for the book pages, organised by what they draw.

* :mod:`coursebook.glue` -- registry figures and computed texts glued into a page;
  :mod:`coursebook.measured` -- every recorded GPU number glued as ``rec.<kernel>.*``;
* :mod:`coursebook.diagrams` -- maps, the software stack, flows, RoPE pairs, reductions;
* :mod:`coursebook.roofline` -- rooflines from the machine profiles;
* :mod:`coursebook.budgets` -- the ledger's time and byte budgets as bars;
* :mod:`coursebook.records` -- tables of recorded results (measured variants, targets, verdicts);
* :mod:`coursebook.gemm_ladder` -- the GEMM ladder, the tuned search, fp8 and the sm_90a audit;
* :mod:`coursebook.tiles` -- waves and tiles: split-K, stream-K, grouped and batched GEMMs;
* :mod:`coursebook.ncu` -- Nsight Compute summaries; :mod:`coursebook.ascend` -- Ascend lowering;
* :mod:`coursebook.errata` -- errata and misreadings from the registry;
* :mod:`coursebook.runlog` -- the appendix of measurement records (runs, searches, repeats, labels);
* :mod:`coursebook.live` -- live (a CUDA GPU runs the chapter's suites) or recorded numbers;
* :mod:`coursebook.claims` -- sentences chosen by the data, and the markers of guarded sentences;
* :mod:`coursebook.leaks` -- the bookkeeping reader-facing text must not show (the page test's scanner);
* :mod:`coursebook.pagecheck` -- what counts as prose, and the pages of a chapter split into sections;
* :mod:`coursebook.style` -- the one plotting style; :mod:`coursebook.build` -- the strict build.
"""
from coursebook.glue import figure_table, glue_figures  # noqa: F401
