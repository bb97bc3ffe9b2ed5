"""Executable audit of mainline tilelang 0.1.15's Ascend language surface.

The drafts mix two Ascend front ends: mainline tilelang (``tilelang.ascend.language``,
target ``"ascend"``) and the separate tilelang-ascend adapter (``T.alloc_ub``,
``T.tile.*``, ``T.Scope("V")``, ``TL_ASCEND_AUTO_SYNC``).  Only the first is
installed here.  :func:`audit` checks, against the installed package, which names
exist and how a few of them behave; the test suite asserts the result and the book
prints it.  All of it is *lowered on the CPU, never run on an NPU*.
"""

# No `from __future__ import annotations`: T.prim_func evaluates its parameter annotations,
# and on Python 3.10 typing rejects a string annotation that evaluates to a buffer.
import inspect
from dataclasses import dataclass
from typing import Any

# Names the chapters use, and whether mainline 0.1.15 should have them.
PRESENT = (
    "alloc_shared", "alloc_l1", "alloc_l0a", "alloc_l0b", "alloc_l0c", "alloc_fragment",
    "Kernel", "MixedKernel", "SimtVF", "SimdVF", "Persistent", "Pipelined", "Parallel",
    "copy", "dual_copy", "gemm", "reduce_sum", "simd", "set_atomic", "set_atomic_none",
    "ascend_sync_inter_arrive", "ascend_sync_inter_wait", "annotate_buffer_versions",
    "PerCoreTask",
)
# The adapter's names (tilelang-ascend): its UB allocator, its tile-op namespace, its
# scope frame, and its opt-in synchronisation switch.
ABSENT = ("alloc_ub", "tile", "Scope")
ADAPTER_PASS_CONFIGS = ("TL_ASCEND_AUTO_SYNC",)


@dataclass
class Finding:
    """One checked statement about the language surface."""

    item: str
    expected: str
    observed: str
    ok: bool


def _kernel_has_threads() -> bool:
    import tilelang.ascend.language as T

    target = inspect.unwrap(T.Kernel)
    return "threads" in inspect.signature(target).parameters


def _alloc_shared_scope() -> str:
    import tilelang.ascend.language as T

    return inspect.signature(inspect.unwrap(T.alloc_shared)).parameters["scope"].default


def _ub_in_source() -> tuple[bool, str]:
    """Lower a 1-buffer kernel and report the AscendC storage qualifier of alloc_shared."""
    import tilelang
    import tilelang.ascend.language as T
    from tilelang.ascend.target import _make_ascend_target

    n = 4096

    @T.prim_func
    def probe(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1) as _bx:
            buf = T.alloc_shared((n,), T.float32)
            T.copy(A[0:n], buf)
            T.copy(buf, B[0:n])

    tgt = _make_ascend_target()
    with tgt:
        src = tilelang.lower(probe, target=tgt).kernel_source
    return "__ubuf__" in src, "asc_copy_gm2ub" if "asc_copy_gm2ub" in src else "?"


def audit(lower: bool = True) -> list[Finding]:
    """Check the installed Ascend dialect; ``lower=False`` skips the one lowering probe."""
    import tilelang
    import tilelang.ascend.language as T
    from tilelang.transform import PassConfigKey

    out: list[Finding] = []
    for name in PRESENT:
        has = hasattr(T, name)
        out.append(Finding(f"T.{name}", "exists", "exists" if has else "missing", has))
    for name in ABSENT:
        has = hasattr(T, name)
        out.append(Finding(f"T.{name}", "missing", "exists" if has else "missing", not has))
    for key in ADAPTER_PASS_CONFIGS:
        has = hasattr(PassConfigKey, key)
        out.append(Finding(f"PassConfigKey.{key}", "missing", "exists" if has else "missing", not has))
    has_sched = hasattr(PassConfigKey, "TL_ENABLE_AUTO_SCHEDULE")
    out.append(Finding("PassConfigKey.TL_ENABLE_AUTO_SCHEDULE", "exists", "exists" if has_sched else "missing", has_sched))
    thr = _kernel_has_threads()
    out.append(Finding("T.Kernel(..., threads=)", "no threads parameter", "has threads" if thr else "no threads parameter", not thr))
    scope = _alloc_shared_scope()
    out.append(Finding("T.alloc_shared default scope", "shared.dyn", scope, scope == "shared.dyn"))
    try:
        with T.Kernel(2, 2):  # pragma: no cover - must raise before entering
            pass
        two_d = "accepted"
    except ValueError:
        two_d = "ValueError"
    except Exception as exc:  # outside a prim_func some versions fail differently
        two_d = type(exc).__name__
    out.append(Finding("T.Kernel(2, 2)", "ValueError (1-D core grid)", two_d, two_d == "ValueError"))
    tgt_ok = tilelang.ascend.target.normalize_ascend_target("ascend") is not None
    out.append(Finding('target "ascend"', "normalises to an Ascend Target", "yes" if tgt_ok else "no", tgt_ok))
    if lower:
        ub, copy = _ub_in_source()
        out.append(Finding("alloc_shared in AscendC", "__ubuf__ (UB)", "__ubuf__" if ub else "other", ub))
        out.append(Finding("T.copy GM->shared in AscendC", "asc_copy_gm2ub*", copy, copy != "?"))
    return out


def as_table(findings: list[Finding]) -> list[dict[str, Any]]:
    """Rows for printing: item / expected / observed / ok."""
    return [f.__dict__.copy() for f in findings]


if __name__ == "__main__":
    for f in audit():
        print(f"{'ok ' if f.ok else 'BAD'} {f.item:42s} expected {f.expected:30s} observed {f.observed}")
