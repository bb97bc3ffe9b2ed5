"""Structural feedback read from what the compiler produced (no GPU needed).

For a CUDA kernel compiled for ``sm_90a`` the generated source says how wide each global
access is, whether tiles are staged in shared memory, and which copy and math
instructions the kernel reaches; the elaborated TIR says how many pipeline stages the
student asked for.  For an Ascend kernel the CPU capture (:mod:`kernels.ascend.capture`)
says what the scheduling passes decided.

:func:`global_accesses` is the reading; :data:`EXPECTATIONS` and
:data:`ASCEND_EXPECTATIONS` are the checks a task may name (each returns ``(ok, what was
found)``, the text in English, shown to the student).
"""
from __future__ import annotations

import re
from typing import Any, Callable

__all__ = ["global_accesses", "kernel_params", "vector_types", "pipeline_stages", "analyse_cuda",
           "analyse_ascend", "EXPECTATIONS", "ASCEND_EXPECTATIONS", "evaluate"]

#: bytes of one access through a pointer of this type in tilelang's generated CUDA
TYPE_BYTES = {
    "longlong4": 32, "ulonglong4": 32, "double4": 32,
    "uint4": 16, "int4": 16, "float4": 16, "double2": 16, "longlong2": 16, "ulonglong2": 16,
    "uint2": 8, "int2": 8, "float2": 8, "double": 8, "int64_t": 8, "uint64_t": 8, "half4": 8, "bfloat16x4": 8,
    "uint1": 4, "int1": 4, "float1": 4, "uint": 4, "int": 4, "float": 4, "unsigned": 4, "half2": 4, "__half2": 4,
    "bfloat162": 4, "__nv_bfloat162": 4, "int32_t": 4, "uint32_t": 4,
    "half_t": 2, "half": 2, "__half": 2, "bfloat16_t": 2, "__nv_bfloat16": 2, "short": 2, "ushort": 2,
    "char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1, "fp8_e4_t": 1, "fp8_e5_t": 1,
}
_PARAM = re.compile(r"(?:const\s+)?([A-Za-z_][\w:]*)\s*\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)")
_CAST = re.compile(r"\*\s*\(\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*\*\s*\)\s*\(\s*(?:&\s*\(\s*)?([A-Za-z_]\w*)\b")
_BULK = {"tma_load": "load", "tma_load_multicast": "load", "tma_store": "store", "cp_async_gs": "load",
         "cp_async_gs_conditional": "load"}


def kernel_params(src: str) -> dict[str, str]:
    """``{pointer parameter: element type}`` of the first ``__global__`` function."""
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?\w+\s*\(([^)]*)\)", src)
    if not m:
        return {}
    return {name: ty for ty, name in _PARAM.findall(m.group(1))}


def global_accesses(src: str) -> dict[str, dict[str, list[int]]]:
    """``{param: {"load": [bytes...], "store": [bytes...]}}`` of every access to a global buffer.

    Vector accesses are the ``*(T*)(P + ...)`` casts tilelang emits; element accesses are
    ``P[...]``; a TMA copy or ``cp.async`` counts as a 16-byte (or wider) access.
    """
    params = kernel_params(src)
    out: dict[str, dict[str, list[int]]] = {p: {"load": [], "store": []} for p in params}
    body = src[src.find("__global__"):] if "__global__" in src else src
    descriptor_of: dict[str, str] = {}
    for m in re.finditer(r"CUtensorMap\s+(\w+)", body):  # TMA descriptors passed as parameters
        descriptor_of[m.group(1)] = m.group(1)
    for line in body.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        lhs, eq, rhs = _split_assignment(s)
        for part, role in ((lhs, "store"), (rhs, "load")) if eq else ((s, "load"),):
            for ty, name in _CAST.findall(part):
                if name in out:
                    out[name][role].append(TYPE_BYTES.get(ty, 0))
            for name in out:
                for _ in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\[", part):
                    out[name][role].append(TYPE_BYTES.get(params[name], 0))
        for fn, role in _BULK.items():
            if re.search(rf"\b{fn}\s*[<(]", s):
                for name in out:
                    if re.search(rf"\b{re.escape(name)}\b", s) or re.search(rf"\b{re.escape(name)}_desc\b", s):
                        out[name][role].append(16)
    return out


def _split_assignment(s: str) -> tuple[str, bool, str]:
    """(left side, is an assignment, right side) of one statement (compound ops count)."""
    depth = 0
    for i, ch in enumerate(s):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0:
            prev, nxt = s[i - 1] if i else "", s[i + 1] if i + 1 < len(s) else ""
            if nxt == "=" or prev in "=!<>":
                continue
            if prev in "+-*/|&^%":
                return s[:i - 1], True, s[i + 1:] + " " + s[:i - 1]  # a += b reads a too
            return s[:i], True, s[i + 1:]
    return s, False, ""


def vector_types(src: str, param: str) -> dict[str, list[str]]:
    """Names of the pointer types a parameter is accessed through, split into loads and stores."""
    out = {"load": [], "store": []}
    for line in src.splitlines():
        lhs, eq, rhs = _split_assignment(line.strip())
        for part, role in ((lhs, "store"), (rhs, "load")) if eq else ((line, "load"),):
            for ty, name in _CAST.findall(part):
                if name == param and ty not in out[role]:
                    out[role].append(ty)
    return out


def pipeline_stages(func: Any) -> list[int]:
    """``num_stages`` of every ``T.Pipelined`` loop in an elaborated TIR function."""
    from tvm.tirx import stmt_functor  # noqa: F401  (tilelang's tvm namespace)

    stages: list[int] = []

    def visit(node):
        ann = getattr(node, "annotations", None)
        if ann is not None and "num_stages" in ann:
            try:
                stages.append(int(ann["num_stages"]))
            except (TypeError, ValueError):
                pass

    _post_order(func.body, visit)
    return stages


def _post_order(stmt, fn) -> None:
    try:
        from tvm.tirx.stmt_functor import post_order_visit
    except ImportError:  # pragma: no cover - older tvm namespace
        from tvm.tir.stmt_functor import post_order_visit
    post_order_visit(stmt, fn)


def tir_param_names(func: Any) -> list[str]:
    """Buffer names of the TIR parameters, in order (the names the generated source uses)."""
    return [str(func.buffer_map[v].name) if v in func.buffer_map else str(v.name) for v in func.params]


def analyse_cuda(src: str, func: Any | None = None, params: Any = ()) -> dict:
    """Everything the structural checks read, as plain data (kept in the record).

    ``params`` are the task's parameters; accesses are reported under their names (the
    generated source uses the student's buffer names, matched here by position)."""
    from .measure import instruction_path

    acc = global_accesses(src)
    rename = {}
    if func is not None and params:
        rename = dict(zip(tir_param_names(func), [p.name for p in params]))
    widths = {rename.get(p, p): {r: (max(v) if v else 0) for r, v in d.items()} for p, d in acc.items()}
    return {"accesses": widths, "paths": instruction_path(src), "reduction": _reduction_kind(src),
            "stages": pipeline_stages(func) if func is not None else []}


def _reduction_kind(src: str) -> str:
    for pat, name in ((r"\bAllReduce<", "tl::AllReduce"), (r"__shfl_(?:xor|down)_sync", "warp shuffles"),
                      (r"\bAscendAllReduce<", "tl::AscendAllReduce"), (r"\breduce_sum\b|ReduceSum", "reduce_sum")):
        if re.search(pat, src):
            return name
    return ""


def analyse_ascend(capture: Any) -> dict:
    return {"kernel_kind": capture.kernel_kind, "buffer_versions": dict(capture.buffer_versions),
            "sync": dict(capture.sync), "flags": list(capture.flags), "tasks": len(capture.tasks),
            "vf_region": bool(re.search(r"__sim[dt]_vf__", capture.source)), "lowers": True,
            "reduction": _reduction_kind(capture.source)}


# ----------------------------------------------------------------------------- expectations
def _width(role: str, need: int) -> Callable[[dict, list], tuple[bool, str]]:
    def check(a: dict, params: list) -> tuple[bool, str]:
        names = [p.name for p in params if (p.output if role == "store" else not p.output)]
        names = [n for n in names if n in a["accesses"]] or names
        # the operand the task is about: the big inputs (or the outputs), not a per-row table
        big = max((p for p in params if p.name in names), key=lambda p: _numel(p.shape), default=None)
        seen = {n: a["accesses"].get(n, {}).get(role, 0) for n in names}
        heavy = [p.name for p in params if p.name in names and _numel(p.shape) == _numel(big.shape)] if big else names
        ok = bool(heavy) and all(seen.get(n, 0) >= need for n in heavy)
        what = ", ".join(f"{n}: {seen.get(n, 0)} B" for n in heavy)
        verb = "load" if role == "load" else "store"
        return ok, f"widest global {verb} per thread ({what}); expected >= {need} B"
    return check


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _shared(a, params):
    p = a["paths"]
    ok = bool(p.get("shared_memory")) and bool(p.get("tma_load") or p.get("cp_async") or _shared_stores(a))
    return ok, "operand tiles staged in shared memory" if ok else "no shared-memory staging of the operands found"


def _shared_stores(a) -> bool:
    return bool(a["paths"].get("shared_memory"))


def _tensor_core(a, params):
    p = a["paths"]
    ok = bool(p.get("wgmma") or p.get("mma_sync"))
    which = "wgmma" if p.get("wgmma") else "mma.sync" if p.get("mma_sync") else "none"
    return ok, f"tensor-core instruction: {which}"


def _pipelined(a, params):
    st = a.get("stages") or []
    ok = bool(st) and max(st) >= 2
    return ok, (f"T.Pipelined num_stages = {max(st)}" if st else "no T.Pipelined loop with num_stages found")


def _async(a, params):
    p = a["paths"]
    ok = bool(p.get("tma_load") or p.get("cp_async"))
    which = "TMA" if p.get("tma_load") else "cp.async" if p.get("cp_async") else "none"
    return ok, f"asynchronous global->shared copies: {which}" + (" with mbarriers" if p.get("mbarrier") else "")


def _reduction(a, params):
    ok = bool(a.get("reduction"))
    return ok, ("a block or warp reduction per row (" + a["reduction"] + ")") if ok else "no per-row reduction found"


def _tables(a, params):
    seen = {n: a["accesses"].get(n, {}).get("load", 0) for n in ("Cos", "Sin")}
    ok = all(v > 0 for v in seen.values())
    return ok, "reads the cos/sin tables" if ok else "does not read the cos/sin tables"


EXPECTATIONS: dict[str, Callable[[dict, list], tuple[bool, str]]] = {
    "row_reduction": _reduction,
    "reads_tables": _tables,
    "vector_load_16B": _width("load", 16),
    "vector_store_16B": _width("store", 16),
    "vector_load_8B": _width("load", 8),
    "vector_store_8B": _width("store", 8),
    "shared_staging": _shared,
    "tensor_core": _tensor_core,
    "pipelined": _pipelined,
    "async_copy": _async,
}


def _asc(key: str):
    def check(a: dict, params: list) -> tuple[bool, str]:
        if key == "lowers":
            return bool(a.get("lowers")), "lowered to AscendC up to the bisheng call"
        if key == "vector_core":
            kind = a.get("kernel_kind", "?")
            return kind == "vector" or kind.startswith("mix"), f"kernel kind: {kind}"
        if key == "vf_region":
            return bool(a.get("vf_region")), "a SIMT/SIMD vector-function region" + ("" if a.get("vf_region") else " is missing")
        if key == "double_buffered":
            v = a.get("buffer_versions") or {}
            ok = bool(v) and max(v.values()) >= 2
            return ok, f"buffer versions after AutoSchedule: {v or 'none'} (expected a double-buffered tile)"
        if key == "row_reduction":
            ok = bool(a.get("reduction"))
            return ok, "a reduction over each row" + (f" ({a['reduction']})" if ok else " is missing")
        if key == "pipe_sync":
            n = int((a.get("sync") or {}).get("asc_sync_notify", 0))
            return n > 0, f"{n} pipe-to-pipe flag notifications inserted"
        raise KeyError(key)
    return check


ASCEND_EXPECTATIONS = {k: _asc(k) for k in ("lowers", "vector_core", "vf_region", "double_buffered", "pipe_sync",
                                              "row_reduction")}


def evaluate(keys, analysis: dict, params, ascend: bool = False) -> list[dict]:
    """``[{"key", "ok", "found"}]`` for the expectations ``keys``."""
    table = ASCEND_EXPECTATIONS if ascend else EXPECTATIONS
    out = []
    for k in keys:
        ok, found = table[k](analysis, list(params))
        out.append({"key": k, "ok": bool(ok), "found": found})
    return out
