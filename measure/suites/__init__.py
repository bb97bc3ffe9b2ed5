"""The GPU suites: each module's ``gpu_suite(h)`` verifies and times one kernel family.

A suite receives a :class:`measure.harness.Harness` and, in this order: compiles its
kernels up front (``h.precompile`` / :func:`measure.search.par_build`), checks every
kernel against an fp64 reference on fresh random inputs with poisoned outputs and
ragged shapes, searches the configurations of its tuning tables (a candidate is timed
only after it passed its checks), and benches the winner against its baselines with
bytes and FLOPs from :mod:`ledger` (:func:`measure.cost.priced`).

The suite's name is its module path here (``norm``, ``gemm.ladder``); its tuning tables
live beside it, the kernels in :mod:`kernels`.  ``python -m measure.runner`` runs them.
"""
