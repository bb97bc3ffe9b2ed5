"""Lower Ascend kernels on the CPU through tilelang 0.1.15's real compile path.

``tilelang.compile(func, target="ascend")`` runs the whole Ascend pass pipeline and
the AscendC code generator on any machine; the first thing that needs Huawei's
toolkit is ``tilelang.contrib.bisheng.compile_ascend`` (the call that would turn the
AscendC source into an NPU binary).  :func:`capture` replaces exactly that function
for the duration of one compile: it records the source and the options bisheng would
have received, then stops the compile.  A pass instrument registered through
tilelang's own instrumentation hook snapshots the IR after the scheduling passes, so
the capture also says what the compiler decided:

* ``EstimateLatency`` -> ``tasks``: every schedulable task with its estimated
  ``latency`` and initiation interval ``ii`` (cycles), the core it was assigned to
  (``core_mask`` 2 = AIC/Cube, 1 = AIV/Vector, read after ``InsertSync``) and a
  one-line description of the operation;
* ``AutoSchedule`` -> ``buffer_versions``: how many copies (multi-buffering) of each
  on-chip buffer the scheduler kept;
* ``InsertSync`` -> ``flags``: the pipe-to-pipe set/wait flags and cross-core flags
  it inserted, and in the final source ``sync``: counts of every AscendC sync call.

Everything here is *lowered on the CPU, never run on an NPU*.

``python -m measure.ascend`` re-captures the four kernels of
:mod:`kernels.ascend.programs` into ``measure/results/ascend/`` (sources, pass
reports, ``index.json``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernels.ascend import LABEL

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "ascend"

# Passes whose output IR the capture keeps (names as tvm reports them).
SNAPSHOT_PASSES = (
    "tl.EstimateLatency",
    "tl.AutoSchedule",
    "tl.InsertSync",
    "tl.MaterializeMultiBuffer",
)

CORE_NAMES = {1: "AIV", 2: "AIC"}


class StoppedAtBisheng(RuntimeError):
    """Raised by the stand-in for ``bisheng.compile_ascend`` once the source is recorded."""


@dataclass
class AscendCapture:
    """What one CPU lowering of an Ascend kernel produced."""

    name: str
    shape: dict[str, Any]
    source: str
    kernel_kind: str  # "mix(1, 2)", "cube" or "vector": the __global__ qualifier
    pass_order: list[str]
    tasks: list[dict[str, Any]]
    buffer_versions: dict[str, int]
    flags: list[str]
    sync: dict[str, int]
    bisheng: dict[str, Any]
    stopped_at: str
    ir_after: dict[str, str] = field(default_factory=dict, repr=False)

    def summary(self) -> dict[str, Any]:
        """JSON-friendly record without the bulky source and IR."""
        d = asdict(self)
        d.pop("source")
        d.pop("ir_after")
        return d


# ---------------------------------------------------------------- parsing helpers
_TASK_ATTR = re.compile(r'T\.attr\(\{(?P<body>[^}]*)\}, "tl\.ascend_task", 1\)')
_INT_FIELD = re.compile(r'"(\w+)": T\.int64\((\d+)\)')


def _describe(stmt_line: str) -> str:
    """One-line description of the statement a task wraps."""
    s = stmt_line.strip()
    if "SIMT_VF" in s:
        return "SimtVF region"
    if "SIMD_VF" in s:
        return "SimdVF region"
    m = re.match(r"T\.(\w+)\((.*)", s)
    if not m:
        return s.split("(")[0][:60]
    op, rest = m.group(1), m.group(2)
    # AutoSchedule renames multi-versioned buffers (``out_ub`` -> ``out_ub_1``).
    bufs = [re.sub(r"_\d+$", "", b) for b in re.findall(r"T\.region\((\w+)\[", rest)]
    if op == "ascend_copy" and len(bufs) == 2:
        return f"copy {bufs[0]} -> {bufs[1]}"
    if op == "gemm" and len(bufs) == 3:
        return f"gemm {bufs[0]} x {bufs[1]} -> {bufs[2]}"
    return op + (" " + ", ".join(bufs) if bufs else "")


def parse_tasks(ir_text: str) -> list[dict[str, Any]]:
    """Tasks carrying a latency estimate, in program order, from a scheduled-TIR dump."""
    lines = ir_text.splitlines()
    tasks = []
    for i, line in enumerate(lines):
        m = _TASK_ATTR.search(line)
        if not m:
            continue
        fields = {k: int(v) for k, v in _INT_FIELD.findall(m.group("body"))}
        if "latency" not in fields:
            continue
        nxt = next((ln for ln in lines[i + 1 :] if ln.strip()), "")
        task = {"op": _describe(nxt), "latency": fields["latency"], "ii": fields.get("ii")}
        if "core_mask" in fields:
            task["core"] = CORE_NAMES.get(fields["core_mask"], str(fields["core_mask"]))
        tasks.append(task)
    return tasks


def parse_buffer_versions(ir_text: str) -> dict[str, int]:
    """``tl.buffer_versions_map`` (multi-buffer copies per buffer) after AutoSchedule."""
    m = re.search(r'"tl\.buffer_versions_map": \{([^}]*)\}', ir_text)
    if not m:
        return {}
    return {name: int(n) for name, n in re.findall(r"(\w+)(?:\.data)?: (\d+)", m.group(1))}


def parse_flags(ir_text: str) -> list[str]:
    """Distinct synchronisation statements InsertSync put into the scheduled TIR."""
    found = re.findall(r'T\.(ascend_set_flag|ascend_wait_flag)\("(\w+)"', ir_text)
    cross = re.findall(r'T\.(ascend_cross_core_set_flag|ascend_cross_core_wait_flag)\(\d+, "(\w+)"', ir_text)
    out = []
    for kind, what in found + cross:
        item = f"{kind}:{what}"
        if item not in out:
            out.append(item)
    return out


_SYNC_CALLS = (
    "asc_sync_notify",
    "asc_sync_wait",
    "asc_sync_intra_arrive",
    "asc_sync_intra_wait",
    "asc_sync_inter_arrive",
    "asc_sync_inter_wait",
    "asc_syncthreads",
    "asc_pipe_barrier",
)


def parse_sync(source: str) -> dict[str, int]:
    """How often each AscendC synchronisation call appears in the generated source."""
    counts = {name: len(re.findall(rf"\b{name}\(", source)) for name in _SYNC_CALLS}
    counts["pipe_pairs"] = len(set(re.findall(r"asc_sync_notify\((PIPE_\w+), (PIPE_\w+)", source)))
    return counts


def kernel_kind(source: str) -> str:
    """The ``__global__`` qualifier: ``mix(c, v)``, ``cube`` or ``vector``."""
    m = re.search(r"__global__ __mix__\((\d+), (\d+)\)", source)
    if m:
        return f"mix({m.group(1)}, {m.group(2)})"
    if re.search(r"__global__ __cube__", source):
        return "cube"
    if re.search(r"__global__ __vector__", source):
        return "vector"
    return "unknown"


# ---------------------------------------------------------------- capture
@contextlib.contextmanager
def quiet_tilelang():
    """Hold tilelang's INFO chatter ("begins to compile kernel") for the duration."""
    import logging

    lg = logging.getLogger("tilelang")
    old = lg.level
    lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        lg.setLevel(old)


def _make_tool(store: dict[str, Any]):
    from tilelang.instrumentation import PassInstrumentationTool
    from tvm.ir.instrument import pass_instrument

    @pass_instrument
    class _Snapshot:
        def run_after_pass(self, mod, info):
            store["order"].append(info.name)
            if info.name in SNAPSHOT_PASSES:
                store["ir"][info.name] = mod.script()

    class _Tool(PassInstrumentationTool):
        def create_pass_instrument(self):
            return _Snapshot()

    return _Tool


@contextlib.contextmanager
def _intercept_bisheng(store: dict[str, Any]):
    from tilelang.contrib import bisheng

    real = bisheng.compile_ascend

    def stand_in(code, target_format="o", npu_arch=None, options=None, path_target=None, verbose=False):
        store["source"] = code
        store["bisheng"] = {
            "target_format": target_format,
            "npu_arch": bisheng.get_npu_arch(npu_arch),
            "compile_options": bisheng.get_bisheng_compile_options(npu_arch, options)[:6],
        }
        raise StoppedAtBisheng("stopped at tilelang.contrib.bisheng.compile_ascend")

    bisheng.compile_ascend = stand_in
    try:
        yield
    finally:
        bisheng.compile_ascend = real


def capture(name: str, func, shape: dict[str, Any] | None = None) -> AscendCapture:
    """Compile ``func`` for ``target="ascend"`` and stop at the bisheng call.

    Raises ``RuntimeError`` if the compile fails before bisheng (a lowering error)
    or, surprisingly, gets past it.
    """
    import tilelang
    from tilelang.instrumentation import register_pass_instrumentation_tool, unregister_pass_instrumentation_tool

    store: dict[str, Any] = {"order": [], "ir": {}}
    tool_name = "course_ascend_capture"
    register_pass_instrumentation_tool(tool_name, _make_tool(store))
    stopped = ""
    try:
        with _intercept_bisheng(store), quiet_tilelang():
            try:
                tilelang.compile(func, target="ascend")
            except Exception as exc:  # the FFI layer may re-wrap our exception
                if "source" not in store:
                    raise RuntimeError(f"{name}: lowering failed before bisheng: {exc}") from exc
                stopped = str(exc).strip().splitlines()[-1][:200]
            else:
                raise RuntimeError(f"{name}: compile finished without reaching bisheng")
    finally:
        unregister_pass_instrumentation_tool(tool_name)

    ir = store["ir"]
    src = store["source"]
    sched = ir.get("tl.InsertSync", "")
    return AscendCapture(
        name=name,
        shape=dict(shape or {}),
        source=src,
        kernel_kind=kernel_kind(src),
        pass_order=[p for p in store["order"] if p.startswith("tl.")],
        tasks=parse_tasks(sched),
        buffer_versions=parse_buffer_versions(ir.get("tl.AutoSchedule", "")),
        flags=parse_flags(sched),
        sync=parse_sync(src),
        bisheng=store["bisheng"],
        stopped_at=stopped,
        ir_after=dict(ir),
    )


# ---------------------------------------------------------------- the course's four kernels
def course_kernels() -> dict[str, tuple[Any, dict[str, Any]]]:
    """Name -> (prim_func, shape) for every Ascend kernel the chapters show."""
    from kernels.ascend import programs as P

    gr = dict(M=256, N=7168, K=2048, block_M=256, block_N=224, block_K=128, num_blocks=32)
    sk = dict(M=256, N=512, K=8192, split_k=8, tile=256)
    rn = dict(tokens=4096, d=4096)
    va = dict(n=1 << 22, tile=8192, num_blocks=64, threads=1024)
    plan = P.plan_rmsnorm(rn["d"])
    return {
        "gemm_relu": (P.gemm_relu(**gr), gr),
        "gemm_splitk": (P.gemm_splitk(**sk), sk),
        "rmsnorm": (P.rmsnorm(**rn), {**rn, "rows_per_tile": plan.rows, "ub_budget_bytes": plan.budget_bytes,
                                      "ub_used_bytes": plan.used_bytes}),
        "vector_add_simt": (P.vector_add(**va), va),
    }


def capture_all() -> dict[str, AscendCapture]:
    """Capture every course kernel (about a second each on one CPU core)."""
    return {name: capture(name, f, shape) for name, (f, shape) in course_kernels().items()}


def write_results(caps: dict[str, AscendCapture], out_dir: Path = RESULTS_DIR) -> Path:
    """Write ``<name>.asc``, ``<name>.passes.txt`` and ``index.json`` under ``out_dir``."""
    import tilelang

    out_dir.mkdir(parents=True, exist_ok=True)
    index = {
        "label": LABEL,
        "tilelang_version": tilelang.__version__,
        "date": _dt.date.today().isoformat(),
        "how": "tilelang.compile(func, target='ascend') with bisheng.compile_ascend intercepted; "
        "IR snapshots via tilelang.instrumentation.register_pass_instrumentation_tool",
        "kernels": {},
    }
    for name, cap in caps.items():
        (out_dir / f"{name}.asc").write_text(f"// {name}: {LABEL} (tilelang {tilelang.__version__})\n" + cap.source)
        report = [f"# {name}: IR after the Ascend scheduling passes ({LABEL})"]
        for p, text in cap.ir_after.items():
            report += ["", f"## after {p}", text]
        (out_dir / f"{name}.passes.txt").write_text("\n".join(report) + "\n")
        rec = cap.summary()
        rec["files"] = [f"{name}.asc", f"{name}.passes.txt"]
        index["kernels"][name] = rec
    path = out_dir / "index.json"
    path.write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")
    return path


def load_index(out_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """The committed ``index.json`` (recorded captures)."""
    return json.loads((out_dir / "index.json").read_text())


if __name__ == "__main__":
    caps = capture_all()
    p = write_results(caps)
    for n, c in caps.items():
        print(f"{n:16s} {c.kernel_kind:10s} tasks={len(c.tasks):2d} versions={c.buffer_versions} "
              f"flags={len(c.flags)} notify={c.sync['asc_sync_notify']}")
    print("wrote", p)
