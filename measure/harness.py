"""One GPU harness for every suite of the course: inputs, checking, timing, searching.

Every ``gpu_suite(h)`` in :mod:`measure.suites` receives a :class:`Harness` ``h`` from
:mod:`measure.runner` and uses only this API (stable; keyword arguments may be added,
never removed):

Inputs
    ``h.rand(shape, dtype, scale=1.0, offset=0.0)``: fresh random tensor on the harness
    device (normal distribution; a new seed every call, so two checks never share inputs).
Checking (:mod:`measure.check`)
    ``h.poisoned(shape, dtype)``, ``h.check(name, got, want, ...)``.
Timing (:mod:`measure.timing`)
    ``h.time(fn)``, ``h.copy_bandwidth()``, ``h.bench(name, fn, bytes=, flops=, ...)``.
Searching (:mod:`measure.search`)
    ``h.precompile(jobs)``, ``h.search(name, candidates, rounds=1)``.
Baselines
    ``h.torch_compile(fn, name)`` (``None``, recorded, when inductor fails) and
    ``h.warm_compiled(cfn, *args, name=)`` (one warm call; a zero-argument callable).
Bookkeeping
    ``h.note(name, text)``, ``h.skip(name, reason)``, ``h.error(name, exc)``; ``h.records``
    (JSON-serialisable dicts the runner writes), ``h.suite`` (set by the runner),
    ``h.quick`` (small shapes only: smoke runs), ``h.protocol`` (the timing protocol).
"""
from __future__ import annotations

import time
import traceback
from typing import Callable, Mapping

from measure.check import Checking
from measure.search import Searching
from measure.timing import Timing, protocol_dict

__all__ = ["Harness"]


class Harness(Checking, Timing, Searching):
    """Verification and timing shared by every ``gpu_suite``; see the module docstring."""

    def __init__(
        self,
        device: str = "cuda",
        protocol: Mapping | None = None,
        quick: bool = False,
        log: Callable[[str], None] | None = print,
        seed: int = 0,
    ) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.is_cuda = self.device.type == "cuda"
        self.protocol = dict(protocol) if protocol is not None else protocol_dict()
        self.quick = quick
        self.log = log or (lambda s: None)
        self.records: list[dict] = []
        self.suite = ""
        self._seed = seed
        self._copy_bw: float | None = None
        self._copy_ms: float | None = None
        self._flush_buf = None
        self._clean_buf = None

    # ------------------------------------------------------------------ inputs
    def _gen(self):
        self._seed += 1
        g = self.torch.Generator(device=self.device)
        # torch takes a seed below 2**63: a grader's private seed (62 random bits) times the
        # stride would overflow it, so the mix is taken modulo 2**63.
        g.manual_seed((1_000_003 * self._seed + int(time.time_ns() % 1_000_000)) % (1 << 63))
        return g

    def rand(self, shape, dtype, scale: float = 1.0, offset: float = 0.0):
        torch = self.torch
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
        g = self._gen()
        x = torch.randn(shape, generator=g, device=self.device, dtype=torch.float32)
        if scale != 1.0:
            x.mul_(scale)
        if offset != 0.0:
            x.add_(offset)
        return x.to(dtype)

    # --------------------------------------------------------------- baselines
    def torch_compile(self, fn, name: str = ""):
        try:
            return self.torch.compile(fn)
        except Exception as exc:
            self.error(f"torch.compile {name}", exc)
            return None

    def warm_compiled(self, cfn, *args, name: str = ""):
        """Call a torch.compile'd function once; None (recorded) when inductor fails."""
        if cfn is None:
            return None
        try:
            cfn(*args)
            if self.is_cuda:
                self.torch.cuda.synchronize()
            return lambda: cfn(*args)
        except Exception as exc:
            self.error(f"torch.compile {name}", exc)
            return None

    # ------------------------------------------------------------- bookkeeping
    def note(self, name, text, **meta):
        self.records.append({"kind": "note", "suite": self.suite, "name": name, "text": text, "ok": True, **meta})
        self.log(f"  note {name}: {text}")

    def skip(self, name, reason):
        self.records.append({"kind": "skip", "suite": self.suite, "name": name, "reason": reason, "ok": True})
        self.log(f"  skip {name}: {reason}")

    def error(self, name, exc: BaseException):
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.records.append({"kind": "error", "suite": self.suite, "name": name,
                             "error": f"{type(exc).__name__}: {exc}", "traceback": tb[-4000:], "ok": False})
        self.log(f"  ERROR {name}: {type(exc).__name__}: {str(exc)[:300]}")
