"""Check an elaborated TIR function from a submission before anything compiles it.

The grader never runs the student's Python when it compiles, checks or times a kernel:
the student's factory is elaborated in a confined process and only the resulting TIR
(serialised by TVM, plain data) comes back.  Data can still carry code into the build:
a host-side packed call, a C source string pasted into the CUDA file
(``T.import_source``), an extern "function name" that is really a statement.  This
module refuses those, checks the interface (every parameter a buffer of the stated
shape and dtype, in order; nothing allocated by the kernel itself) and sanitises the
compile options.  Every error names the constraint.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = ["TirError", "load", "check_interface", "check_body", "compile_options", "ALLOWED_FLAGS"]


class TirError(ValueError):
    """A submitted kernel the grader will not build; the message is shown to the student."""


_IDENT = re.compile(r"^[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?:<[\w\s,:.*]*>)?$")
_BAD_TEXT = re.compile(r"[;{}#\"\\\n]|/\*|//")
#: op names without their namespace ("tir." in TVM, "tirx." in the tvm tilelang 0.1.15 ships)
_FORBIDDEN_OPS = {
    "call_packed", "call_cpacked", "tvm_call_packed", "tvm_call_cpacked", "call_packed_lowered",
    "call_cpacked_lowered", "tvm_call_packed_lowered", "tvm_call_cpacked_lowered", "tvm_call_trace_packed",
    "call_llvm_intrin", "call_llvm_pure_intrin", "tvm_static_handle", "tvm_throw_last_error",
}
_EXTERN_OPS = {"call_extern", "call_pure_extern"}


def _op_name(op) -> str:
    name = str(getattr(op, "name", "") or "")
    for prefix in ("tirx.", "tir."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


_FORBIDDEN_ATTRS = ("pragma_import_c", "pragma_import_llvm", "import_c", "c_source")
ALLOWED_FLAGS = ("-O3", "-O2", "-lineinfo", "--use_fast_math", "-use_fast_math")
MAX_JSON_BYTES = 32 << 20


def load(text: str) -> Any:
    """Deserialise a PrimFunc sent back by the elaboration worker (TVM's JSON format)."""
    import tvm

    if not isinstance(text, str) or len(text) > MAX_JSON_BYTES:
        raise TirError("the elaborated kernel is not a TIR function (or is larger than 32 MiB)")
    try:
        func = tvm.ir.load_json(text)
    except Exception as exc:
        raise TirError(f"the elaborated kernel could not be read back ({type(exc).__name__})") from None
    if type(func).__name__ != "PrimFunc":
        raise TirError(f"the factory must produce a T.prim_func, got {type(func).__name__}")
    return func


def _dtype(s: Any) -> str:
    return str(s).replace("torch.", "")


def check_interface(func: Any, params: Iterable[Any]) -> None:
    """Parameters of ``func``, in order, must be the task's buffers (shape and dtype)."""
    want = list(params)
    got = list(func.params)
    if len(got) != len(want):
        names = ", ".join(p.name for p in want)
        raise TirError(f"the kernel must take {len(want)} parameters ({names}), in this order; it takes {len(got)}")
    attrs = func.attrs or {}
    if "tilelang_out_idx" in attrs:
        raise TirError("the kernel allocates its own output (T.empty / out_idx); the interface passes every "
                       "output as a parameter, pre-filled by the grader")
    for i, (var, p) in enumerate(zip(got, want)):
        buf = func.buffer_map.get(var)
        if getattr(p, "scalar", False):
            if buf is not None:
                raise TirError(f"parameter {i} ({p.name}) must be a scalar (T.{p.dtype}), not a tensor")
            if _dtype(var.dtype) != p.dtype:
                raise TirError(f"parameter {i} ({p.name}) must be a {p.dtype} scalar, got {_dtype(var.dtype)}")
            continue
        if buf is None:
            raise TirError(f"parameter {i} ({p.name}) must be a tensor (T.Tensor), not a scalar")
        try:
            shape = tuple(int(s) for s in buf.shape)
        except TypeError:
            raise TirError(f"parameter {i} ({p.name}) must have a static shape {p.shape}; got a symbolic one "
                           f"{tuple(str(s) for s in buf.shape)}") from None
        if shape != tuple(p.shape):
            raise TirError(f"parameter {i} ({p.name}) must have shape {tuple(p.shape)}, got {shape}")
        if _dtype(buf.dtype) != p.dtype:
            raise TirError(f"parameter {i} ({p.name}) must be {p.dtype}, got {_dtype(buf.dtype)}")


def check_body(func: Any) -> None:
    """Refuse host calls, pasted source and extern names that are not plain identifiers."""
    problems: list[str] = []
    for key in (func.attrs or {}).keys():
        if any(k in str(key) for k in _FORBIDDEN_ATTRS):
            problems.append(f"function attribute {key}")

    def visit(node):
        if len(problems) > 5:
            return
        tname = type(node).__name__
        if tname == "Call":
            op = _op_name(node.op)
            if op in _FORBIDDEN_OPS:
                problems.append(f"call {op}")
            elif op in _EXTERN_OPS and node.args:
                name = getattr(node.args[0], "value", None)
                if not isinstance(name, str) or not _IDENT.match(name):
                    problems.append(f"extern call to {str(name)[:60]!r} (not a function name)")
        elif tname == "StringImm":
            if _BAD_TEXT.search(node.value or ""):
                problems.append(f"string constant {node.value[:60]!r}")
        elif tname == "AttrStmt":
            if any(k in str(node.attr_key) for k in _FORBIDDEN_ATTRS):
                problems.append(f"attribute {node.attr_key}")
        ann = getattr(node, "annotations", None)
        if ann is not None:
            for k in ann.keys():
                if any(f in str(k) for f in _FORBIDDEN_ATTRS):
                    problems.append(f"annotation {k}")

    from .structure import _post_order

    _post_order(func.body, visit)
    if problems:
        raise TirError("the kernel uses what the grader does not build: " + "; ".join(problems[:5])
                       + " (host calls, pasted C source and non-identifier extern names are refused)")


def compile_options(jit: dict | None) -> dict:
    """The options of the student's ``@tilelang.jit`` that the grader honours, checked.

    ``out_idx`` must be unset; ``compile_flags`` may only come from :data:`ALLOWED_FLAGS`;
    ``pass_configs`` keys must be tilelang's (``tl.*``) with plain values.  The target is
    always the grader's (sm_90a) and the execution backend tilelang's default.
    """
    jit = jit or {}
    if not isinstance(jit, dict):
        raise TirError("the jit options of the factory could not be read")
    if jit.get("out_idx") not in (None, [], ()):
        raise TirError("out_idx must be left unset: the grader passes every output buffer (pre-filled with a poison value)")
    flags = jit.get("compile_flags") or []
    if isinstance(flags, str):
        flags = flags.split()
    bad = [f for f in flags if f not in ALLOWED_FLAGS]
    if bad:
        raise TirError(f"compile_flags {bad[:3]} are not allowed; allowed: {list(ALLOWED_FLAGS)}")
    pcs = jit.get("pass_configs") or {}
    if not isinstance(pcs, dict):
        raise TirError("pass_configs must be a dict")
    clean = {}
    for k, v in pcs.items():
        if not (isinstance(k, str) and re.fullmatch(r"tl\.[a-z0-9_.]+", k)) or not isinstance(v, (bool, int, float, str)):
            raise TirError(f"pass_configs entry {str(k)[:40]!r}: only tilelang's tl.* options with plain values")
        if isinstance(v, str) and _BAD_TEXT.search(v):
            raise TirError(f"pass_configs entry {k}: value not allowed")
        clean[k] = v
    return {"compile_flags": list(flags) or None, "pass_configs": clean or None}
