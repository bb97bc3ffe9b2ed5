"""tilelang's own carver and Analyzer, run for real (chapter "performance model").

Two tools of tilelang 0.1.15 that the chapter reads at the source level:

* **carver** -- ``MatmulTemplate(...).with_arch(arch).recommend_hints(topk)`` ranks
  GEMM tiles with a traffic x waves cost model.  :mod:`ledger.carver` re-computes that
  model on the CPU.  On a GPU, the suite :mod:`measure.suites.carver` builds the real device model
  (``tilelang.carver.arch.CUDA``), asks carver for its top hints at 4096^3 fp16, checks
  them against the ledger's walk (same order? which of them tie?) and compiles and
  times the top hints as the ladder's GEMMs (:func:`hint_kernel`).
* **Analyzer** -- ``tilelang.tools.Analyzer.analysis(tir, arch)`` counts GEMM FLOPs
  and global-memory bytes of a TIR function and turns them into a time with a peak
  table that covers compute capabilities 80, 86 and 89 only, and a "bandwidth" taken
  from carver's device model (12080 MB/s, meaningful only as a ratio).  On sm_90 it
  silently returns half an answer; :func:`analyzer_capture` records exactly what it
  prints and returns.

Both also run on a CPU with a *hand-built* device model (:func:`hand_built_arch`):
carver's ``CUDA`` refuses to start without CUDA device 0, and its tensor-core check
builds another ``CUDA`` internally, so on a CPU carver silently falls back to its
default (non-tensor-core) policy unless that check is pointed at the hand-built model
(``tensor_core_path=True``).
"""

import contextlib
import io
import logging
import math

from ledger.machines import DEFAULT_MACHINE, get_machine

from kernels.common import TARGET
from kernels.gemm.ladder import rung3_pipelined, rung4_annotated

_RES = get_machine(DEFAULT_MACHINE).resources
SHAPE = (4096, 4096, 4096)
TOPK = 20
TIME_TOP = 4  # hints compiled and timed on the GPU


# ---------------------------------------------------------------- device models
def hand_built_arch(smem_cap: int = int(_RES["smem_per_block_kb"]) * 1024, sms: int = int(_RES["sms"]),
                    compute_capability: str = "90", l2_bytes: int = 50 * 1024 * 1024):
    """A ``tilelang.carver.arch.CUDA`` object filled by hand (no GPU needed).

    Fields are the ones ``CUDA.__init__`` sets; the defaults describe the ledger's default
    machine profile (an H200: 227 KiB shared memory per block, 132 SMs, compute capability 9.0).
    """
    from tilelang import tvm
    from tilelang.carver.arch import CUDA
    from tilelang.carver.arch.cuda import check_sm_version

    if smem_cap <= 0 or sms <= 0:
        raise ValueError("smem_cap and sms must be positive")
    arch = CUDA.__new__(CUDA)
    arch.target = tvm.target.Target(TARGET)
    arch.sm_version = check_sm_version(arch.target.attrs["arch"])
    arch.name = "hand-built H200 model"
    arch.device = None
    arch.platform = "CUDA"
    arch.smem_cap = smem_cap
    arch.compute_max_core = sms
    arch.warp_size = 32
    arch.compute_capability = compute_capability
    arch.reg_cap = 65536
    arch.max_smem_usage = 2 * smem_cap
    arch.sm_partition = 4
    arch.l2_cache_size_bytes = l2_bytes
    arch.transaction_size = [32, 128]
    arch.bandwidth = [750, 12080]
    arch.available_tensor_instructions = None
    return arch


def real_arch():
    """carver's device model of CUDA device 0 (raises RuntimeError without a GPU)."""
    from tilelang import tvm
    from tilelang.carver.arch import CUDA

    return CUDA(tvm.target.Target(TARGET))


def arch_fields(arch) -> dict:
    """The device-model fields carver and Analyzer read."""
    return {k: getattr(arch, k, None) for k in ("name", "smem_cap", "compute_max_core", "warp_size",
                                                  "compute_capability", "reg_cap", "max_smem_usage",
                                                  "sm_partition", "l2_cache_size_bytes", "transaction_size",
                                                  "bandwidth")}


# ---------------------------------------------------------------- carver
@contextlib.contextmanager
def _tensorize_with(arch):
    """Point carver's tensor-core check at ``arch`` instead of a fresh ``CUDA()``."""
    import tilelang.carver.matmul_analysis as ma

    orig = ma.get_arch
    ma.get_arch = lambda target: arch
    try:
        yield
    finally:
        ma.get_arch = orig


def recommend(arch, M: int = SHAPE[0], N: int = SHAPE[1], K: int = SHAPE[2], topk: int = TOPK,
              tensor_core_path: bool = False) -> list[dict]:
    """carver's hints for an fp16 GEMM (fp32 accumulate, fp16 out, B as (N, K)).

    ``tensor_core_path`` makes a hand-built ``arch`` reach the tensor-core policy as a
    real GPU does; with a real arch it changes nothing.
    """
    from tilelang.carver.template import MatmulTemplate

    for name, v in (("M", M), ("N", N), ("K", K), ("topk", topk)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    tpl = MatmulTemplate(M=M, N=N, K=K, in_dtype="float16", out_dtype="float16",
                         accum_dtype="float32").with_arch(arch)
    ctx = _tensorize_with(arch) if tensor_core_path else contextlib.nullcontext()
    with ctx:
        hints = tpl.recommend_hints(topk=topk)
    out = []
    for h in hints:
        rp = h.rasterization_plan
        out.append({
            "block": [int(v) for v in h.block],
            "warp": [int(v) for v in h.warp] if h.use_tc else None,
            "thread": [int(v) for v in h.thread] if not h.use_tc else None,
            "rstep": [int(v) for v in h.rstep],
            "pipeline_stage": int(h.pipeline_stage),
            "use_tc": bool(h.use_tc),
            "use_async": bool(h.use_async),
            "rasterization": repr(rp),
            "raster_panel": int(getattr(rp, "panel_width_", 0) or 0),
            "raster_order": "column" if "Column" in type(rp).__name__ else "row",
        })
    return out


def ledger_view(arch, M: int = SHAPE[0], N: int = SHAPE[1], K: int = SHAPE[2]):
    """ledger.carver's walk for the same device fields (reg bits = output dtype, as carver)."""
    from ledger.carver import CarverDevice, walk

    dev = CarverDevice(smem_cap=int(arch.smem_cap), compute_max_core=int(arch.compute_max_core),
                       reg_cap=int(arch.reg_cap), sm_partition=int(arch.sm_partition),
                       transaction_size=tuple(int(t) for t in arch.transaction_size),
                       warp_size=int(arch.warp_size), bandwidth=tuple(int(b) for b in arch.bandwidth))
    return walk(M, N, K, reg_bits=16, trans_b=True, device=dev)


def compare(hints: list[dict], w) -> dict:
    """Does carver's hint order equal the ledger's ranking?  Which hints tie?"""
    ranked = [tuple(e.tile) for e in w.ranked]
    prio = {tuple(e.tile): e.priority for e in w.ranked}
    tiles = [tuple(h["block"]) for h in hints]
    groups: dict[float, list] = {}
    for t in tiles:
        groups.setdefault(prio.get(t), []).append(list(t))
    return {
        "carver_tiles": [list(t) for t in tiles],
        "ledger_tiles": [list(t) for t in ranked[: len(tiles)]],
        "same_order": tiles == ranked[: len(tiles)],
        "same_set": set(tiles) == set(ranked[: len(tiles)]),
        "first_difference": next((i for i, (a, b) in enumerate(zip(tiles, ranked)) if a != b), None),
        "ledger_priority": [prio.get(t) for t in tiles],
        "tie_groups": [g for g in groups.values() if len(g) > 1],
        "ledger_ties_at_top": w.ties_at_top,
        "ledger_distinct_priorities": w.distinct_priorities,
        "ledger_valid": w.n_valid,
    }


# ---------------------------------------------------------------- GEMM for a hint
def hint_config(h: dict) -> dict:
    """Kernel parameters of a carver hint: tile, block_K = rstep, stages, threads = 32 per warp tile."""
    bm, bn = h["block"]
    if h["use_tc"] and h["warp"]:
        warps = (bm // h["warp"][0]) * (bn // h["warp"][1])
    else:
        warps = max(1, math.prod(h["thread"] or [128]) // 32)
    cfg = dict(block_M=bm, block_N=bn, block_K=h["rstep"][0], stages=max(1, h["pipeline_stage"]),
               threads=32 * warps, panel=h.get("raster_panel", 0), order=h.get("raster_order", "row"))
    if cfg["threads"] > 1024 or cfg["threads"] < 32:
        raise ValueError(f"hint {h['block']} maps to {cfg['threads']} threads (must be in [32, 1024])")
    return cfg


def hint_kernel(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, stages: int, threads: int,
                panel: int = 0, order: str = "row"):
    """C = A @ B.T (fp16, fp32 accumulate) with a hint's tile, built from the GEMM ladder:
    ``panel=0`` is rung 3 (``T.Pipelined`` only); ``panel>0`` is rung 4 (swizzled shared
    layouts and block rasterization) with the accumulator stored straight to C."""
    if panel <= 0:
        return rung3_pipelined(M, N, K, block_M, block_N, block_K, stages, threads)
    return rung4_annotated(M, N, K, block_M, block_N, block_K, stages, threads, panel, order, epilogue="direct")


# ---------------------------------------------------------------- Analyzer
def analyzer_capture(arch, M: int = SHAPE[0], N: int = SHAPE[1], K: int = SHAPE[2],
                     block_M: int = 128, block_N: int = 128, block_K: int = 32, stages: int = 3) -> dict:
    """Run ``tilelang.tools.Analyzer`` on a rung-3 GEMM TIR and capture everything it says."""
    from tilelang.tools import Analyzer

    tir = rung3_pipelined.get_tir(M, N, K, block_M, block_N, block_K, stages, 128)
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setLevel(logging.DEBUG)
    lg = logging.getLogger(Analyzer.__module__)  # "tilelang.tools.Analyzer"
    old = (lg.level, lg.propagate)
    lg.addHandler(handler)
    lg.setLevel(logging.INFO)
    lg.propagate = False  # keep the message here, not on the console
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            res = Analyzer.analysis(tir, arch)
    finally:
        lg.removeHandler(handler)
        lg.setLevel(old[0])
        lg.propagate = old[1]
    flops = int(res.total_flops)
    gbytes = int(res.total_global_bytes)
    return {
        "tir": f"rung3_pipelined {M}x{N}x{K} block {block_M}x{block_N}x{block_K} stages {stages} (rung 3)",
        "compute_capability": arch.compute_capability,
        "total_flops": flops,
        "total_global_bytes": gbytes,
        "expected_tflops": None if res.expected_tflops is None else float(res.expected_tflops),
        "expected_bandwidth_GBps": float(res.expected_bandwidth_GBps),
        # a tvm float32 expression in 0.1.15 (bytes are an int32 expression)
        "estimated_time_s": float(res.estimated_time),
        "memory_only_time_s": gbytes / (res.expected_bandwidth_GBps * 1e9),
        # Analyzer multiplies int32 TIR expressions: past 2**31 bytes the count wraps.
        "bytes_wrapped_int32": gbytes < 0 or gbytes >= 2**31,
        "total_global_bytes_mod_2_32": gbytes % 2**32,
        "log": buf.getvalue().strip(),
        "stdout": out.getvalue().strip(),
        "stderr": err.getvalue().strip(),
    }


def analyzer_vs_ledger(cap: dict, M: int = SHAPE[0], N: int = SHAPE[1], K: int = SHAPE[2],
                       block_M: int = 128, block_N: int = 128) -> dict:
    """Analyzer's FLOPs and bytes next to the ledger's GEMM FLOPs and tiled traffic."""
    from ledger import gemm as lg

    return {"ledger_flops": lg.gemm_flops(M, N, K),
            "ledger_tiled_traffic": lg.tiled_traffic(M, N, K, block_M, block_N),
            "ledger_min_bytes": lg.gemm_min_bytes(M, N, K)}
