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
* :mod:`coursebook.style` -- the one plotting style; :mod:`coursebook.build` -- the strict build.
"""
from coursebook.glue import figure_table, glue_figures  # noqa: F401
