"""Suite ``gemm.w4a16_tma``: the TMA decode W4A16 kernel (:mod:`kernels.gemm.w4a16_tma`) at the two
decode batches (M = 1 and 16 on 8192 x 8192 weights) against the recorded winners of suite
``gemm.w4a16`` and cuBLAS on the fp16 weights: the same checks, search, alternating-round bench and
probes as that suite (:func:`measure.suites.gemm.w4a16.gpu_suite`), on a short list, so one run
compares them."""
from typing import Any

from kernels.gemm.w4a16 import config as _c
from kernels.gemm.w4a16_dec import config as _d
from kernels.gemm.w4a16_tma import config as _t
from measure.suites.gemm import w4a16 as base

#: The decode shapes of the issue.
SHAPES: list[tuple[int, int, int]] = [s for s in base.SHAPES if s[0] <= 16]

#: The TMA candidates, then the recorded winners of ``gemm.w4a16`` (wgmma at M = 1, mma.sync at M = 16,
#: the best register-load decode kernel) as the baseline of the same run, and the wgmma winner with the
#: word-wide expansion into wgmma's fragment (``wide``, not yet recorded when this suite was written).
CANDIDATES: dict[str, list[dict[str, Any]]] = {
    "decode": [*base.TMA_DECODE, _c(16, 512, 4), _c(16, 512, 4, inst="mma"), _d(64, 1, 8, 4),
               _c(16, 512, 4, wide=True)],
}
#: Ragged checks of the TMA kernel (M not a multiple of 8, no cluster, 256 rows).
RAGGED = [(shape, cfg) for shape, cfg in base.RAGGED if cfg.get("inst") == "tma"]
#: Its ``loadonly`` probes (the load path alone).
PROBES = [p for p in base.PROBES if p[1].get("inst") == "tma"]


def build_thunks(shapes: list[tuple[int, int, int]], skip: tuple[str, ...] = (), group: int = 128) -> dict[str, Any]:
    """Label -> compile of every kernel this suite builds (for prebuilding the cache on a CPU)."""
    return base.build_thunks(shapes, skip, group, CANDIDATES, RAGGED, PROBES)


def gpu_suite(h: Any, skip: tuple[str, ...] = ()) -> None:
    """The TMA decode kernel vs the recorded winners and cuBLAS at M = 1 and 16 (see the module docstring)."""
    shapes = [(16, 1024, 1024)] if h.quick else SHAPES
    base.gpu_suite(h, skip, shapes=shapes, candidates=CANDIDATES, ragged=RAGGED, probes=PROBES)
