"""measure: verify and time the course's kernels, profile them, keep the recorded results.

* :mod:`measure.harness` -- the harness every suite receives (:mod:`measure.check`,
  :mod:`measure.timing`, :mod:`measure.search`); :mod:`measure.cost` prices a bench
  with a ledger function;
* :mod:`measure.suites` -- one ``gpu_suite(h)`` per kernel family, with its tuning tables;
* :mod:`measure.runner` -- runs the suites on a GPU, merges runs, shows recorded results;
* :mod:`measure.results` -- reading, merging and loading the files in ``measure/results/``;
* :mod:`measure.ncu` -- Nsight Compute profiles; :mod:`measure.ascend` -- Ascend captures.
"""
