"""What each kernel part asks for: the interface, the shapes, the reference, the bar.

A :class:`CudaTask` states the whole contract of one kernel part of a lab:

* the **interface** -- the keyword arguments the student's factory receives
  (``factory_args``) and the parameters the kernel it returns must take, in order, with
  shape and dtype (``signature(shape)``); every output is a parameter (pre-filled with a
  poison value by the grader), nothing is allocated by the kernel;
* the **shapes** -- ``check_shapes`` (aligned and ragged), one per-student variant drawn
  from a hash of the student id (:func:`variant`), and ``time_shape`` where speed is measured;
* the **reference** -- ``reference(inputs, shape)`` computed in fp64 from the same
  (rounded) inputs *after* the student's kernel ran, compared with the course's
  tolerances (``tolerance``) and a mismatch ratio of zero;
* the **bar** -- the bytes/FLOPs of the operator from :mod:`ledger` (``cost``), the
  library baseline timed in the same process (``baseline``), and the speed levels: a
  fraction of the measured copy bandwidth or a multiple of the library's speed;
* the **structure** expected in the sm_90a code (:mod:`autograder.kernelgrade.structure`).

An :class:`AscendTask` is lowered on the CPU only (never run): the factory returns a
``T.prim_func`` of tilelang's Ascend dialect; the capture must reach the bisheng call and
show the expected structure.

Everything here is plain data and small functions; torch is imported inside them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Param", "CudaTask", "AscendTask", "TASKS", "get_task", "variant", "shape_label"]

TARGET = {"kind": "cuda", "arch": "sm_90a"}
EPS = 1e-6
FLOAT_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class Param:
    """One kernel parameter of the interface: name, shape, dtype, and whether it is written."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    output: bool = False


@dataclass(frozen=True)
class CudaTask:
    key: str
    title: str  # Chinese, one line
    factory_args: tuple[str, ...]
    signature: Callable[[dict], tuple[Param, ...]]
    check_shapes: tuple[dict, ...]
    time_shape: dict
    variant_of: Callable[[int], dict]
    make_inputs: Callable[[Any, dict], dict]
    reference: Callable[[dict, dict], dict]
    cost: Callable[[dict], tuple[float, float, str]]  # (bytes, flops, ledger source)
    baseline: Callable[[dict, dict, dict], Callable[[], Any]]
    baseline_label: str
    metric: str  # "frac_copy" or "x_library"
    levels: tuple[tuple[float, float], ...]  # (threshold, fraction of the speed points), ascending
    structure: tuple[str, ...]  # expectation keys of structure.EXPECTATIONS
    tolerance: Callable[[dict, str, dict], dict] | None = None  # (shape, output name, want) -> atol/rtol
    interface_doc: str = ""

    kind = "cuda"

    def shapes_for(self, student_hash: int) -> list[tuple[str, dict]]:
        """(label, shape) of every correctness shape, the student's variant last."""
        out = [(shape_label(s), dict(s)) for s in self.check_shapes]
        v = self.variant_of(student_hash)
        out.append(("variant " + shape_label(v), v))
        return out


@dataclass(frozen=True)
class AscendTask:
    key: str
    title: str
    factory_args: tuple[str, ...]
    signature: Callable[[dict], tuple[Param, ...]]
    shape: dict
    structure: tuple[str, ...]  # expectation keys of structure.ASCEND_EXPECTATIONS
    interface_doc: str = ""

    kind = "ascend"
    check_shapes: tuple = field(default=())

    def shapes_for(self, student_hash: int) -> list[tuple[str, dict]]:
        return [(shape_label(self.shape), dict(self.shape))]

    @property
    def time_shape(self) -> dict:
        return dict(self.shape)


def shape_label(shape: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def variant(lab: str, student: str, task: str) -> int:
    """A stable integer from the student id: the per-student variant of a task's shape."""
    return int.from_bytes(hashlib.sha256(f"{lab}\0{student}\0{task}".encode()).digest()[:8], "big")


def _pick(h: int, options, salt: int = 0):
    return options[(h >> (8 * salt)) % len(options)]


# ----------------------------------------------------------------------------- helpers
def _torch():
    import torch

    return torch


def _dt(name: str):
    return getattr(_torch(), name)


def _ledger_bytes(cost) -> tuple[float, float, str]:
    return float(cost.bytes), float(cost.flops), cost.name


# ----------------------------------------------------------------------------- elementwise add
def _add_sig(s):
    n, d = s["N"], s["dtype"]
    return (Param("A", (n,), d), Param("B", (n,), d), Param("C", (n,), d, True))


def _add_inputs(h, s):
    return {"A": h.rand(s["N"], _dt(s["dtype"])), "B": h.rand(s["N"], _dt(s["dtype"]))}


def _add_ref(inp, s):
    return {"C": inp["A"].double() + inp["B"].double()}


def _add_cost(s):
    from ledger.fusion import elementwise_cost

    d = s["dtype"]
    c = elementwise_cost(s["N"], (d, d), d)
    return float(c.bytes), float(c.flops), "ledger.fusion.elementwise_cost"


def _add_baseline(inp, out, s):
    torch = _torch()
    a, b, c = inp["A"], inp["B"], out["C"]
    return lambda: torch.add(a, b, out=c)


def _add_variant(h):
    return {"N": (1 << 18) + (h % (1 << 20)) | 1, "dtype": _pick(h, ("float16", "bfloat16"), 3)}


EW_ADD = CudaTask(
    key="ew_add", title="向量化的逐元素加法 C = A + B",
    factory_args=("N", "dtype"), signature=_add_sig,
    check_shapes=({"N": 1 << 20, "dtype": "float16"}, {"N": 1_000_003, "dtype": "float16"},
                  {"N": 4097, "dtype": "bfloat16"}, {"N": 12_345, "dtype": "float32"}),
    time_shape={"N": 1 << 27, "dtype": "float16"}, variant_of=_add_variant,
    make_inputs=_add_inputs, reference=_add_ref, cost=_add_cost,
    baseline=_add_baseline, baseline_label="torch.add",
    metric="frac_copy", levels=((0.70, 0.5), (0.90, 1.0)),
    structure=("vector_load_16B", "vector_store_16B"),
    interface_doc="add_kernel(N, dtype) -> kernel(A, B, C)；A、B、C 都是长度 N 的一维张量，dtype 为 "
                  "float16 / bfloat16 / float32",
)


# ----------------------------------------------------------------------------- RMSNorm
def _rms_sig(s):
    m, n, d = s["M"], s["N"], s["dtype"]
    return (Param("X", (m, n), d), Param("W", (n,), d), Param("Y", (m, n), d, True))


def _rms_inputs(h, s):
    d = _dt(s["dtype"])
    return {"X": h.rand((s["M"], s["N"]), d, scale=2.0, offset=0.3), "W": h.rand(s["N"], d)}


def _rms64(x, w):
    xd = x.double()
    return xd * (xd.pow(2).mean(-1, keepdim=True) + EPS).rsqrt() * w.double()


def _rms_ref(inp, s):
    return {"Y": _rms64(inp["X"], inp["W"])}


def _rms_cost(s):
    from ledger.fusion import rmsnorm_cost

    c = rmsnorm_cost(s["M"], s["N"], s["dtype"])
    return float(c.bytes), float(c.flops), "ledger.fusion.rmsnorm_cost"


def _rms_baseline(inp, out, s):
    import torch.nn.functional as F

    x, w = inp["X"], inp["W"]
    return lambda: F.rms_norm(x, (s["N"],), w, EPS)


def _rms_variant(h):
    return {"M": 1 + h % 300, "N": _pick(h, (1024, 2048, 3000, 4096), 2), "dtype": _pick(h, ("float16", "bfloat16"), 3)}


RMSNORM = CudaTask(
    key="rmsnorm", title="按行 RMSNorm（eps = 1e-6）",
    factory_args=("M", "N", "dtype"), signature=_rms_sig,
    check_shapes=({"M": 256, "N": 4096, "dtype": "float16"}, {"M": 37, "N": 4000, "dtype": "bfloat16"},
                  {"M": 33, "N": 1000, "dtype": "float16"}),
    time_shape={"M": 16384, "N": 4096, "dtype": "float16"}, variant_of=_rms_variant,
    make_inputs=_rms_inputs, reference=_rms_ref, cost=_rms_cost,
    baseline=_rms_baseline, baseline_label="F.rms_norm",
    metric="frac_copy", levels=((0.60, 0.5), (0.80, 1.0)),
    structure=("row_reduction", "vector_load_8B", "vector_store_8B"),
    interface_doc="rmsnorm_kernel(M, N, dtype) -> kernel(X, W, Y)；X、Y 形状 (M, N)，W 形状 (N,)，"
                  "dtype 为 float16 / bfloat16；y = x / sqrt(mean(x²) + 1e-6) · w，在 fp32 中计算",
)


# ----------------------------------------------------------------------------- RoPE (NeoX)
def _rope_sig(s):
    S, H, D, R, d = s["S"], s["H"], s["D"], s["rope_dim"], s["dtype"]
    return (Param("X", (S, H, D), d), Param("Cos", (S, R // 2), "float32"), Param("Sin", (S, R // 2), "float32"),
            Param("Y", (S, H, D), d, True))


def _tables(h, rows, half):
    torch = _torch()
    ang = h.rand((rows, half), torch.float32, scale=3.0)
    return ang.cos().contiguous(), ang.sin().contiguous()


def _rope_inputs(h, s):
    cos, sin = _tables(h, s["S"], s["rope_dim"] // 2)
    return {"X": h.rand((s["S"], s["H"], s["D"]), _dt(s["dtype"])), "Cos": cos, "Sin": sin}


def _rope64(x, cos, sin, rope_dim):
    """NeoX half-split rotation of the last ``rope_dim`` channels, in fp64."""
    torch = _torch()
    D = x.shape[-1]
    start, half = D - rope_dim, rope_dim // 2
    xd = x.double()
    c, sn = cos.double()[:, None, :], sin.double()[:, None, :]
    a, b = xd[..., start:start + half], xd[..., start + half:]
    return torch.cat([xd[..., :start], a * c - b * sn, b * c + a * sn], -1)


def _rope_ref(inp, s):
    return {"Y": _rope64(inp["X"], inp["Cos"], inp["Sin"], s["rope_dim"])}


def _rope_cost(s):
    from ledger.fusion import rope_cost

    c = rope_cost(s["S"], s["H"], s["D"], s["rope_dim"], s["dtype"], "float32")
    return float(c.bytes), float(c.flops), "ledger.fusion.rope_cost"


def _rope_baseline(inp, out, s):
    torch = _torch()
    x, cos, sin, R = inp["X"], inp["Cos"], inp["Sin"], s["rope_dim"]
    D = x.shape[-1]
    start, half = D - R, R // 2
    c, sn = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)

    def eager():
        a, b = x[..., start:start + half], x[..., start + half:]
        return torch.cat([x[..., :start], a * c - b * sn, b * c + a * sn], -1)

    return eager


def _rope_variant(h):
    D = _pick(h, (64, 128), 1)
    return {"S": 1 + h % 200, "H": _pick(h, (2, 4, 8, 16), 2), "D": D, "rope_dim": _pick(h, (D, D // 2), 4),
            "dtype": _pick(h, ("float16", "bfloat16"), 3)}


ROPE = CudaTask(
    key="rope", title="NeoX 约定的 RoPE（旋转最后 rope_dim 个通道）",
    factory_args=("S", "H", "D", "rope_dim", "dtype"), signature=_rope_sig,
    check_shapes=({"S": 64, "H": 8, "D": 128, "rope_dim": 128, "dtype": "float16"},
                  {"S": 37, "H": 4, "D": 128, "rope_dim": 64, "dtype": "bfloat16"},
                  {"S": 9, "H": 3, "D": 96, "rope_dim": 32, "dtype": "float16"}),
    time_shape={"S": 16384, "H": 32, "D": 128, "rope_dim": 128, "dtype": "float16"}, variant_of=_rope_variant,
    make_inputs=_rope_inputs, reference=_rope_ref, cost=_rope_cost,
    baseline=_rope_baseline, baseline_label="PyTorch eager",
    metric="frac_copy", levels=((0.60, 0.5), (0.80, 1.0)),
    structure=("reads_tables", "vector_store_8B"),
    interface_doc="rope_kernel(S, H, D, rope_dim, dtype) -> kernel(X, Cos, Sin, Y)；X、Y 形状 (S, H, D)，"
                  "Cos、Sin 形状 (S, rope_dim/2)、float32；前 D - rope_dim 个通道原样拷贝，"
                  "其余按 NeoX 配对 (p, p + rope_dim/2) 旋转",
)


# ----------------------------------------------------------------------------- fused RMSNorm + RoPE
def _fused_sig(s):
    M, N, R, d = s["M"], s["N"], s["rope_dim"], s["dtype"]
    return (Param("X", (M, N), d), Param("W", (N,), d), Param("Cos", (M, R // 2), "float32"),
            Param("Sin", (M, R // 2), "float32"), Param("Y", (M, N), d, True))


def _fused_inputs(h, s):
    d = _dt(s["dtype"])
    cos, sin = _tables(h, s["M"], s["rope_dim"] // 2)
    return {"X": h.rand((s["M"], s["N"]), d, scale=2.0), "W": h.rand(s["N"], d), "Cos": cos, "Sin": sin}


def _fused_ref(inp, s):
    # the chain as the unfused kernels compute it: RMSNorm rounded to the dtype, then RoPE
    y1 = _rms64(inp["X"], inp["W"]).to(inp["X"].dtype)
    return {"Y": _rope64(y1[:, None, :], inp["Cos"], inp["Sin"], s["rope_dim"])[:, 0, :]}


def _fused_tol(s, name, want):
    # a rounded intermediate may differ by one ulp, and RoPE can cancel: one ulp of the
    # dtype at the largest magnitude of the result (the course's own check of this kernel)
    from .measure import tolerance

    atol, rtol = tolerance(s["dtype"])
    eps = float(_torch().finfo(_dt(s["dtype"])).eps)
    return {"atol": max(atol, eps * float(want.abs().max())), "rtol": rtol}


def _fused_cost(s):
    from ledger.fusion import rmsnorm_rope_cost

    c = rmsnorm_rope_cost(s["M"], s["N"], s["dtype"], s["rope_dim"], "float32")
    return float(c.bytes), float(c.flops), "ledger.fusion.rmsnorm_rope_cost"


def _fused_baseline(inp, out, s):
    import torch.nn.functional as F

    x, w, cos, sin, R = inp["X"], inp["W"], inp["Cos"], inp["Sin"], s["rope_dim"]

    def eager():
        y1 = F.rms_norm(x, (s["N"],), w, EPS)
        return _rope_baseline({"X": y1[:, None, :], "Cos": cos, "Sin": sin}, out, {"rope_dim": R})()

    return eager


def _fused_variant(h):
    return {"M": 1 + h % 300, "N": _pick(h, (1024, 2048, 4096), 2), "rope_dim": _pick(h, (64, 128), 4),
            "dtype": _pick(h, ("float16", "bfloat16"), 3)}


FUSED = CudaTask(
    key="rmsnorm_rope", title="融合的 RMSNorm + RoPE（一个 kernel，一次读一次写）",
    factory_args=("M", "N", "rope_dim", "dtype"), signature=_fused_sig,
    check_shapes=({"M": 64, "N": 4096, "rope_dim": 128, "dtype": "bfloat16"},
                  {"M": 37, "N": 4096, "rope_dim": 64, "dtype": "float16"},
                  {"M": 5, "N": 1024, "rope_dim": 1024, "dtype": "bfloat16"}),
    time_shape={"M": 16384, "N": 4096, "rope_dim": 128, "dtype": "bfloat16"}, variant_of=_fused_variant,
    make_inputs=_fused_inputs, reference=_fused_ref, cost=_fused_cost, tolerance=_fused_tol,
    baseline=_fused_baseline, baseline_label="PyTorch eager (F.rms_norm + RoPE)",
    metric="frac_copy", levels=((0.60, 0.5), (0.80, 1.0)),
    structure=("row_reduction", "reads_tables", "vector_load_8B", "vector_store_8B"),
    interface_doc="rmsnorm_rope_kernel(M, N, rope_dim, dtype) -> kernel(X, W, Cos, Sin, Y)；X、Y 形状 (M, N)，"
                  "W 形状 (N,)，Cos、Sin 形状 (M, rope_dim/2)、float32；先 RMSNorm（结果舍入到 dtype），"
                  "再对最后 rope_dim 个通道做 NeoX RoPE",
)


# ----------------------------------------------------------------------------- GEMM
def _gemm_sig(s):
    M, N, K = s["M"], s["N"], s["K"]
    return (Param("A", (M, K), "float16"), Param("B", (N, K), "float16"), Param("C", (M, N), "float16", True))


def _gemm_inputs(h, s):
    torch = _torch()
    return {"A": h.rand((s["M"], s["K"]), torch.float16), "B": h.rand((s["N"], s["K"]), torch.float16)}


def _gemm_ref(inp, s):
    torch = _torch()
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return {"C": torch.matmul(inp["A"].double(), inp["B"].double().t())}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def _gemm_tol(s, name, want):
    from .measure import gemm_tolerance

    return gemm_tolerance(s["K"])


def _gemm_cost(s):
    from ledger.gemm import gemm_cost

    c = gemm_cost(s["M"], s["N"], s["K"], "fp16")
    return float(c.bytes), float(c.flops), "ledger.gemm.gemm_cost"


def _gemm_baseline(inp, out, s):
    torch = _torch()
    a, b, c = inp["A"], inp["B"], out["C"]
    return lambda: torch.matmul(a, b.t(), out=c)


def _gemm_shared_variant(h):
    return {"M": 128 * (1 + h % 12), "N": 128 * (1 + (h >> 8) % 12), "K": 128 * (1 + (h >> 16) % 12)}


def _gemm_pipe_variant(h):
    # K >= 384: at least six 64-wide K steps for a three-stage pipeline
    return {"M": 64 + h % 1500, "N": 8 * (16 + (h >> 12) % 180), "K": 8 * (48 + (h >> 24) % 150)}


GEMM_SHARED = CudaTask(
    key="gemm_shared", title="共享内存分块 GEMM（C = A·Bᵀ，fp16 输入、fp32 累加、fp16 输出）",
    factory_args=("M", "N", "K"), signature=_gemm_sig,
    check_shapes=({"M": 256, "N": 256, "K": 256}, {"M": 384, "N": 640, "K": 1152}),
    time_shape={"M": 4096, "N": 4096, "K": 4096}, variant_of=_gemm_shared_variant,
    make_inputs=_gemm_inputs, reference=_gemm_ref, cost=_gemm_cost, tolerance=_gemm_tol,
    baseline=_gemm_baseline, baseline_label="cuBLAS (torch.matmul)",
    metric="x_library", levels=((0.10, 0.5), (0.25, 1.0)),
    structure=("shared_staging", "tensor_core"),
    interface_doc="gemm_kernel(M, N, K) -> kernel(A, B, C)；A (M, K)、B (N, K)、C (M, N)，均为 float16；"
                  "C = A·Bᵀ，用 fp32 累加；M、N、K 都是 128 的倍数",
)

GEMM_PIPELINED = CudaTask(
    key="gemm_pipelined", title="用 T.Pipelined 流水化的 GEMM（同一接口，M 任意，N、K 为 8 的倍数）",
    factory_args=("M", "N", "K"), signature=_gemm_sig,
    check_shapes=({"M": 1024, "N": 1024, "K": 1024}, {"M": 1000, "N": 1016, "K": 1000}),
    time_shape={"M": 4096, "N": 4096, "K": 4096}, variant_of=_gemm_pipe_variant,
    make_inputs=_gemm_inputs, reference=_gemm_ref, cost=_gemm_cost, tolerance=_gemm_tol,
    baseline=_gemm_baseline, baseline_label="cuBLAS (torch.matmul)",
    metric="x_library", levels=((0.40, 0.5), (0.60, 1.0)),
    structure=("pipelined", "async_copy", "tensor_core"),
    interface_doc="gemm_pipelined_kernel(M, N, K) -> kernel(A, B, C)；接口同上；M 任意正整数，N、K 为 8 的倍数"
                  "（TMA 的 16 字节行距），不是分块大小倍数的边缘必须正确处理",
)


# ----------------------------------------------------------------------------- Ascend (lowered on CPU)
def _asc_add_sig(s):
    n = s["n"]
    return (Param("A", (n,), "float32"), Param("B", (n,), "float32"), Param("C", (n,), "float32", True))


def _asc_rms_sig(s):
    t, d = s["tokens"], s["d"]
    return (Param("X", (t, d), "bfloat16"), Param("W", (d,), "bfloat16"), Param("Y", (t, d), "bfloat16", True))


ASCEND_ADD = AscendTask(
    key="ascend_add", title="昇腾方言的向量加法（在 CPU 上降级到 AscendC）",
    factory_args=("n",), signature=_asc_add_sig, shape={"n": 1 << 22},
    structure=("lowers", "vector_core", "vf_region", "double_buffered", "pipe_sync"),
    interface_doc="ascend_add(n) -> T.prim_func(A, B, C)；float32，长度 n；用 tilelang.ascend.language 编写",
)

ASCEND_RMSNORM = AscendTask(
    key="ascend_rmsnorm", title="昇腾方言的 RMSNorm（在 CPU 上降级到 AscendC）",
    factory_args=("tokens", "d"), signature=_asc_rms_sig, shape={"tokens": 4096, "d": 4096},
    structure=("lowers", "vector_core", "vf_region", "double_buffered", "pipe_sync", "row_reduction"),
    interface_doc="ascend_rmsnorm(tokens, d) -> T.prim_func(X, W, Y)；bfloat16，X、Y 形状 (tokens, d)，W 形状 (d,)",
)

TASKS: dict[str, CudaTask | AscendTask] = {t.key: t for t in (EW_ADD, RMSNORM, ROPE, FUSED, GEMM_SHARED,
                                                               GEMM_PIPELINED, ASCEND_ADD, ASCEND_RMSNORM)}


def get_task(key: str) -> CudaTask | AscendTask:
    try:
        return TASKS[key]
    except KeyError:
        raise KeyError(f"unknown kernel task {key!r}; known: {sorted(TASKS)}") from None
