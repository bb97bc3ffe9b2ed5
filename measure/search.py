"""Searching: compile candidate kernels ahead of time, time them, keep the fastest.

``Searching`` is the part of :class:`measure.harness.Harness` that picks configurations:

``h.precompile([(factory, args), (factory, args, kwargs), ...])``
    Compiles ``@tilelang.jit`` kernels in parallel (nvcc in threads) into tilelang's cache,
    so the suite's later calls load them; call it first in a suite.
``h.search(name, candidates, rounds=1)``
    ``candidates`` maps a config label to a zero-argument callable; times each (``rounds``
    times, the starting point rotated every round, the median kept), returns
    ``(best_label, {label: ms})`` and records the search.

:func:`par_build` compiles labelled thunks in a thread pool and reports each one's kernel,
error and compile time (the GEMM suites use it for their candidate lists).
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Mapping

__all__ = ["Searching", "par_build"]


class Searching:
    """Candidate searches and parallel precompilation (mixed into the Harness)."""

    suite: str
    records: list

    def search(self, name, candidates: Mapping[str, Callable[[], Any]], rounds: int = 1):
        """Time every candidate, return ``(best_label, {label: ms})`` and record the search.

        With ``rounds > 1`` every candidate is timed once per round, each round starting one
        ``len / rounds`` further down the list (no candidate always runs at the same point of
        a power-capped minute), and its figure is the median of its rounds
        (``ms_per_round`` in the record)."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        labels = list(candidates)
        per: dict[str, list] = {k: [] for k in labels}
        errors: dict[str, str] = {}
        for rnd in range(rounds):
            start = (rnd * len(labels)) // rounds
            for label in labels[start:] + labels[:start]:
                if label in errors:
                    continue
                try:
                    per[label].append(self.time(candidates[label]))
                except Exception as exc:
                    errors[label] = f"{type(exc).__name__}: {exc}"
        times = {k: statistics.median(v) for k, v in per.items() if v and k not in errors}
        if not times:
            raise RuntimeError(f"{name}: every candidate failed: {errors}")
        best = min(times, key=times.get)
        rec = {"kind": "search", "suite": self.suite, "name": name, "best": best,
               "ms": times, "errors": errors, "ok": True}
        if rounds > 1:
            rec["rounds"] = rounds
            rec["ms_per_round"] = {k: per[k] for k in times}
        self.records.append(rec)
        self.log(f"  search {name}: best {best} ({times[best] * 1e3:.1f} us) of "
                 + ", ".join(f"{k}={v * 1e3:.1f}us" for k, v in times.items()))
        return best, times

    def precompile(self, jobs, num_workers: int | None = None) -> int:
        """Compile kernels in parallel before a suite uses them.

        ``jobs``: iterable of ``(factory, args)`` or ``(factory, args, kwargs)`` where
        ``factory`` is a ``@tilelang.jit`` function.  Elaboration runs serially, lowering
        and nvcc in threads (``tilelang.jit.par_compile``); the kernels land in
        tilelang's kernel cache, so the suite's later ``factory(*args)`` calls load them
        instead of compiling one by one.  Failures are recorded as notes, never raised
        (the suite's own call reports the error).  Returns the number compiled.
        """
        import os

        from tilelang.jit import par_compile

        groups: dict = {}
        seen = set()
        for job in jobs:
            f, args = job[0], tuple(job[1])
            kw = dict(job[2]) if len(job) > 2 else {}
            key = (id(f), args, tuple(sorted(kw.items())))
            if key in seen:
                continue
            seen.add(key)
            gkey = (str(getattr(f, "target", None)), str(getattr(f, "out_idx", None)),
                    str(getattr(f, "execution_backend", None)), str(getattr(f, "pass_configs", None)),
                    str(getattr(f, "compile_flags", None)))
            try:
                groups.setdefault(gkey, (f, []))[1].append(f.get_tir(*args, **kw))
            except Exception as exc:
                self.note("precompile", f"elaboration failed for {getattr(f, '__name__', f)}{args}: "
                                        f"{type(exc).__name__}: {str(exc)[:200]}")
        n = 0
        workers = num_workers or max(1, min(32, (os.cpu_count() or 2)))
        for f, funcs in groups.values():
            t0 = time.time()
            try:
                out = par_compile(funcs, out_idx=f.out_idx, execution_backend=f.execution_backend,
                                  target=f.target, target_host=f.target_host, verbose=False,
                                  pass_configs=f.pass_configs, compile_flags=f.compile_flags,
                                  num_workers=min(workers, len(funcs)), ignore_error=True)
                n += sum(k is not None for k in out)
            except Exception as exc:
                self.note("precompile", f"par_compile failed: {type(exc).__name__}: {str(exc)[:200]}")
            self.log(f"  precompiled {len(funcs)} kernels in {time.time() - t0:.1f} s")
        return n


def par_build(thunks: dict[str, Any], workers: int = 16) -> dict[str, dict[str, Any]]:
    """Compile several kernels at once (lowering releases the GIL; nvcc is a subprocess).

    ``thunks`` maps a label to a zero-argument callable returning a compiled kernel.
    Returns label -> {"kernel": kernel or None, "error": str or None, "compile_s": s}.
    """
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, Any]) -> tuple[str, dict[str, Any]]:
        label, thunk = item
        t0 = time.perf_counter()
        try:
            return label, dict(kernel=thunk(), error=None, compile_s=time.perf_counter() - t0)
        except Exception as exc:
            return label, dict(kernel=None, error=f"{type(exc).__name__}: {exc}"[-600:], compile_s=time.perf_counter() - t0)

    items = list(thunks.items())
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        return dict(pool.map(one, items))
