"""What each kernel part asks for: the interface, the shapes, the reference, the bar.

A :class:`CudaTask` states the whole contract of one kernel part of a lab:

* the **interface** -- the keyword arguments the student's factory receives
  (``factory_args``) and the parameters the kernel it returns must take, in order, with
  shape and dtype (``signature(shape)``); every output is a parameter (pre-filled with a
  poison value by the grader), nothing is allocated by the kernel;
* the **shapes** -- ``check_shapes`` (aligned and ragged), the student's own variant shape,
  and ``time_shape`` where speed is measured.  The variant is made of the lab's per-student
  parameters (:class:`autograder.parts.Param`, drawn and signed by :mod:`autograder.variants`
  like every other variant of the course): :func:`variant_params` declares them for one
  exercise (``K1.N``, ``K1.dtype`` ...) from the task's ``variant_pools``, and
  :meth:`CudaTask.variant_shape` turns the drawn values into the shape;
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

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Param", "CudaTask", "AscendTask", "DTYPE_TOLERANCE_TEXT", "TASKS", "get_task", "variant_params", "variant_values",
           "shape_label"]

TARGET = {"kind": "cuda", "arch": "sm_90a"}
EPS = 1e-6
FLOAT_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class Param:
    """One kernel parameter of the interface: name, shape, dtype, whether it is written, and
    whether it is a scalar (``T.float32`` argument, passed as a Python number)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    output: bool = False
    scalar: bool = False


# the course's per-dtype tolerances (measure.check.TOLERANCES; a test keeps the two in step)
DTYPE_TOLERANCE_TEXT = ("每个元素的误差绝对值 ≤ atol + rtol × 参考值的绝对值，一个都不能超；按输出的数据类型："
                        "fp32 atol = rtol = 1e-5，fp16 2e-3，bf16 1.6e-2")


@dataclass(frozen=True)
class CudaTask:
    key: str
    title: str  # Chinese, one line
    factory_args: tuple[str, ...]
    signature: Callable[[dict], tuple[Param, ...]]
    check_shapes: tuple[dict, ...]
    time_shape: dict
    variant_pools: tuple[tuple[str, Any, tuple], ...]  # (name, the common default, the students' pool)
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
    tolerance_text: str = ""  # the tolerance in the words shown to the student (Chinese); default: DTYPE_TOLERANCE_TEXT
    to_shape: Callable[[dict], dict] | None = None  # drawn values -> shape (derived sizes), default: as drawn

    kind = "cuda"

    @property
    def tolerance_words(self) -> str:
        """The correctness tolerance as the feedback shows it (Chinese)."""
        return self.tolerance_text or DTYPE_TOLERANCE_TEXT

    def variant_shape(self, values: dict | None) -> dict:
        """The variant shape of the drawn ``values`` (``{name: value}``; missing names: the default)."""
        vals = {n: (values or {}).get(n, default) for n, default, _ in self.variant_pools}
        return self.to_shape(vals) if self.to_shape else vals

    def shapes_for(self, values: dict | None) -> list[tuple[str, dict]]:
        """(label, shape) of every correctness shape, the student's variant last."""
        out = [(shape_label(s), dict(s)) for s in self.check_shapes]
        v = self.variant_shape(values)
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
    variant_pools: tuple = field(default=())

    def shapes_for(self, values: dict | None = None) -> list[tuple[str, dict]]:
        return [(shape_label(self.shape), dict(self.shape))]

    @property
    def time_shape(self) -> dict:
        return dict(self.shape)


def shape_label(shape: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def variant_params(exercise: str, task_key: str, label: str = "") -> tuple:
    """The per-student parameters of one kernel exercise (``K1.N``, ``K1.dtype`` ...), to put in
    the lab's ``LabSpec.params``: drawn per student, shown in ``P``, signed in the tag."""
    from ..parts import Param as LabParam

    task = get_task(task_key)
    return tuple(LabParam(f"{exercise}.{name}", default, tuple(pool), label or f"{task.title}：变体形状的 {name}")
                 for name, default, pool in task.variant_pools)


def variant_values(exercise: str, task_key: str, variant: dict | None) -> dict:
    """``{name: value}`` of one exercise's variant, read from a lab variant (``{"K1.N": ...}``)."""
    task = get_task(task_key)
    variant = variant or {}
    return {name: variant.get(f"{exercise}.{name}", default) for name, default, _ in task.variant_pools}


_HALF = ("float16", "bfloat16")
_FLOAT = ("float16", "bfloat16", "float32")


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



EW_ADD = CudaTask(
    key="ew_add", title="向量化的逐元素加法 C = A + B",
    factory_args=("N", "dtype"), signature=_add_sig,
    check_shapes=({"N": 1 << 20, "dtype": "float16"}, {"N": 1_000_003, "dtype": "float16"},
                  {"N": 4097, "dtype": "bfloat16"}, {"N": 12_345, "dtype": "float32"}),
    time_shape={"N": 1 << 27, "dtype": "float16"},
    variant_pools=(("N", 333_333, (262_147, 456_791, 524_309, 655_373, 777_781, 999_983, 1_048_583, 1_234_577)),
                   ("dtype", "bfloat16", _HALF)),
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



RMSNORM = CudaTask(
    key="rmsnorm", title="按行 RMSNorm（eps = 1e-6）",
    factory_args=("M", "N", "dtype"), signature=_rms_sig,
    check_shapes=({"M": 256, "N": 4096, "dtype": "float16"}, {"M": 37, "N": 4000, "dtype": "bfloat16"},
                  {"M": 33, "N": 1000, "dtype": "float16"}),
    time_shape={"M": 16384, "N": 4096, "dtype": "float16"},
    variant_pools=(("M", 100, (1, 7, 33, 61, 129, 200, 257, 299)), ("N", 2048, (1024, 1536, 3000, 4096)),
                   ("dtype", "bfloat16", _HALF)),
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


def _rope_shape(v):
    D = v["D"]
    return {"S": v["S"], "H": v["H"], "D": D, "rope_dim": D if v["rotate"] == "all" else D // 2, "dtype": v["dtype"]}


ROPE = CudaTask(
    key="rope", title="NeoX 约定的 RoPE（旋转最后 rope_dim 个通道）",
    factory_args=("S", "H", "D", "rope_dim", "dtype"), signature=_rope_sig,
    check_shapes=({"S": 64, "H": 8, "D": 128, "rope_dim": 128, "dtype": "float16"},
                  {"S": 37, "H": 4, "D": 128, "rope_dim": 64, "dtype": "bfloat16"},
                  {"S": 9, "H": 3, "D": 96, "rope_dim": 32, "dtype": "float16"}),
    time_shape={"S": 16384, "H": 32, "D": 128, "rope_dim": 128, "dtype": "float16"},
    variant_pools=(("S", 77, (1, 13, 31, 50, 64, 101, 150, 199)), ("H", 4, (2, 6, 8, 16)), ("D", 128, (64, 128)),
                   ("rotate", "half", ("all", "half")), ("dtype", "bfloat16", _HALF)),
    to_shape=_rope_shape,
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



FUSED = CudaTask(
    key="rmsnorm_rope", title="融合的 RMSNorm + RoPE（一个 kernel，一次读一次写）",
    factory_args=("M", "N", "rope_dim", "dtype"), signature=_fused_sig,
    check_shapes=({"M": 64, "N": 4096, "rope_dim": 128, "dtype": "bfloat16"},
                  {"M": 37, "N": 4096, "rope_dim": 64, "dtype": "float16"},
                  {"M": 5, "N": 1024, "rope_dim": 1024, "dtype": "bfloat16"}),
    time_shape={"M": 16384, "N": 4096, "rope_dim": 128, "dtype": "bfloat16"},
    variant_pools=(("M", 100, (1, 9, 17, 63, 150, 200, 255, 299)), ("N", 2048, (1024, 4096)),
                   ("rope_dim", 128, (64, 128)), ("dtype", "bfloat16", _HALF)),
    make_inputs=_fused_inputs, reference=_fused_ref, cost=_fused_cost, tolerance=_fused_tol,
    tolerance_text=DTYPE_TOLERANCE_TEXT + "；atol 至少是结果最大幅值处的一个 ulp（中间结果舍入可差一个 ulp）",
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


_X128 = tuple(128 * k for k in (1, 2, 4, 5, 7, 9, 11, 12))

GEMM_SHARED = CudaTask(
    key="gemm_shared", title="共享内存分块 GEMM（C = A·Bᵀ，fp16 输入、fp32 累加、fp16 输出）",
    factory_args=("M", "N", "K"), signature=_gemm_sig,
    check_shapes=({"M": 256, "N": 256, "K": 256}, {"M": 384, "N": 640, "K": 1152}),
    time_shape={"M": 4096, "N": 4096, "K": 4096},
    variant_pools=(("M", 384, _X128), ("N", 768, _X128), ("K", 640, _X128)),
    make_inputs=_gemm_inputs, reference=_gemm_ref, cost=_gemm_cost, tolerance=_gemm_tol,
    tolerance_text="每个元素的误差绝对值 ≤ atol + rtol × 参考值的绝对值，一个都不能超；atol = 2⁻¹¹·√K，rtol = 2e-3",
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
    time_shape={"M": 4096, "N": 4096, "K": 4096},
    # K >= 384: at least six 64-wide K steps for a three-stage pipeline
    variant_pools=(("M", 777, (65, 130, 333, 517, 1000, 1201, 1399, 1563)),
                   ("N", 904, (136, 392, 520, 808, 1096, 1288, 1432, 1560)),
                   ("K", 1000, (384, 440, 648, 792, 1032, 1224, 1400, 1576))),
    make_inputs=_gemm_inputs, reference=_gemm_ref, cost=_gemm_cost, tolerance=_gemm_tol,
    tolerance_text="每个元素的误差绝对值 ≤ atol + rtol × 参考值的绝对值，一个都不能超；atol = 2⁻¹¹·√K，rtol = 2e-3",
    baseline=_gemm_baseline, baseline_label="cuBLAS (torch.matmul)",
    metric="x_library", levels=((0.40, 0.5), (0.60, 1.0)),
    structure=("pipelined", "async_copy", "tensor_core"),
    interface_doc="gemm_pipelined_kernel(M, N, K) -> kernel(A, B, C)；接口同上；M 任意正整数，N、K 为 8 的倍数"
                  "（TMA 的 16 字节行距），不是分块大小倍数的边缘必须正确处理",
)


# ----------------------------------------------------------------------------- the primer: copy, scale, row sum
def _primer():
    from ledger import primer

    return primer


def _copy_sig(s):
    n, d = s["N"], s["dtype"]
    return (Param("X", (n,), d), Param("Y", (n,), d, True))


def _copy_inputs(h, s):
    return {"X": h.rand(s["N"], _dt(s["dtype"]))}


def _copy_ref(inp, s):
    return {"Y": inp["X"].double()}


def _copy_cost(s):
    c = _primer().copy_cost(s["N"], s["dtype"])
    return float(c.bytes), float(c.flops), "ledger.primer.copy_cost"


def _copy_baseline(inp, out, s):
    x, y = inp["X"], out["Y"]
    return lambda: y.copy_(x)


P_COPY = CudaTask(
    key="primer_copy", title="拷贝 Y = X（启动：grid、block 与线程）",
    factory_args=("N", "dtype"), signature=_copy_sig,
    check_shapes=({"N": 1 << 20, "dtype": "float16"}, {"N": 1_000_003, "dtype": "float16"},
                  {"N": 65_537, "dtype": "float32"}, {"N": 4097, "dtype": "bfloat16"}),
    time_shape={"N": 1 << 28, "dtype": "float16"},
    variant_pools=(("N", 100_003, (999, 4_099, 65_539, 131_101, 300_007, 524_341, 777_787, 1_000_039)),
                   ("dtype", "bfloat16", _FLOAT)),
    make_inputs=_copy_inputs, reference=_copy_ref, cost=_copy_cost,
    baseline=_copy_baseline, baseline_label="torch copy_",
    # The lesson's kernel moves one element per thread (2-byte accesses in fp16): on the H200 it
    # reaches 36-37 % of the copy bandwidth (the primer suite and the recorded grading run,
    # 2026-12-01); full points from 30 %, half from 15 % (a launch that leaves most SMs idle).
    # Speed is K2's lesson, not this one's.
    metric="frac_copy", levels=((0.15, 0.5), (0.30, 1.0)), structure=(),
    interface_doc="copy_kernel(N, dtype) -> kernel(X, Y)；X、Y 都是长度 N 的一维张量，dtype 为 "
                  "float16 / bfloat16 / float32；Y = X",
)


def _scale_sig(s):
    n, d = s["N"], s["dtype"]
    return (Param("X", (n,), d), Param("Y", (n,), d, True), Param("s", (), "float32", scalar=True))


def _scale_inputs(h, s):
    torch = _torch()
    factor = 0.25 + float(h.rand((1,), torch.float32).abs().item())  # a fresh factor per call
    return {"X": h.rand(s["N"], _dt(s["dtype"]), scale=3.0), "s": factor}


def _scale_ref(inp, s):
    torch = _torch()
    factor = float(torch.tensor(inp["s"], dtype=torch.float32))  # the kernel receives an fp32 scalar
    return {"Y": inp["X"].double() * factor}


def _scale_cost(s):
    c = _primer().scale_cost(s["N"], s["dtype"])
    return float(c.bytes), float(c.flops), "ledger.primer.scale_cost"


def _scale_baseline(inp, out, s):
    torch = _torch()
    x, y, f = inp["X"], out["Y"], inp["s"]
    return lambda: torch.mul(x, f, out=y)


P_SCALE = CudaTask(
    key="primer_scale", title="向量化的缩放 Y = X · s（每个线程负责连续的几个元素）",
    factory_args=("N", "dtype"), signature=_scale_sig,
    check_shapes=({"N": 1 << 20, "dtype": "float16"}, {"N": 1_000_003, "dtype": "float16"},
                  {"N": 77_777, "dtype": "bfloat16"}, {"N": 12_345, "dtype": "float32"}),
    time_shape={"N": 1 << 28, "dtype": "float16"},
    variant_pools=(("N", 200_003, (1_001, 8_191, 65_543, 131_111, 262_147, 500_009, 777_817, 1_048_589)),
                   ("dtype", "bfloat16", _FLOAT)),
    make_inputs=_scale_inputs, reference=_scale_ref, cost=_scale_cost,
    baseline=_scale_baseline, baseline_label="torch.mul",
    metric="frac_copy", levels=((0.70, 0.5), (0.90, 1.0)),
    structure=("vector_load_16B", "vector_store_16B"),
    interface_doc="scale_kernel(N, dtype) -> kernel(X, Y, s)；X、Y 长度 N，dtype 为 float16 / bfloat16 / float32，"
                  "s 是 T.float32 标量参数；y = x · s 在 fp32 中计算、舍入一次到 dtype",
)


def _rowsum_sig(s):
    m, n, d = s["M"], s["N"], s["dtype"]
    return (Param("X", (m, n), d), Param("Y", (m,), "float32", True))


def _rowsum_inputs(h, s):
    return {"X": h.rand((s["M"], s["N"]), _dt(s["dtype"]))}


def _rowsum_ref(inp, s):
    return {"Y": inp["X"].double().sum(-1)}


def _rowsum_tol(s, name, want):
    # fp32 sums of N terms of magnitude ~1: about sqrt(N) ulps of fp32 at the row's scale
    # (the course's own check of this kernel); an fp16 accumulator misses it by far
    return {"atol": 1e-4 * float(s["N"]) ** 0.5, "rtol": 1e-4}


def _rowsum_cost(s):
    c = _primer().row_sum_cost(s["M"], s["N"], s["dtype"])
    return float(c.bytes), float(c.flops), "ledger.primer.row_sum_cost"


def _rowsum_baseline(inp, out, s):
    torch = _torch()
    x, y = inp["X"], out["Y"]
    return lambda: torch.sum(x, dim=-1, dtype=torch.float32, out=y)


P_ROWSUM = CudaTask(
    key="primer_row_sum", title="按行求和 Y[i] = Σⱼ X[i, j]（fp32 累加）",
    factory_args=("M", "N", "dtype"), signature=_rowsum_sig,
    check_shapes=({"M": 1024, "N": 4096, "dtype": "float16"}, {"M": 1000, "N": 1000, "dtype": "float16"},
                  {"M": 333, "N": 4104, "dtype": "bfloat16"}, {"M": 100, "N": 3000, "dtype": "float32"}),
    time_shape={"M": 16384, "N": 4096, "dtype": "float16"},
    variant_pools=(("M", 250, (1, 17, 63, 129, 300, 511, 777, 1025)), ("N", 2000, (64, 136, 1000, 2056, 4104, 5000)),
                   ("dtype", "bfloat16", _FLOAT)),
    make_inputs=_rowsum_inputs, reference=_rowsum_ref, cost=_rowsum_cost, tolerance=_rowsum_tol,
    tolerance_text="每个元素的误差绝对值 ≤ atol + rtol × 参考值的绝对值，一个都不能超；atol = 1e-4·√N，rtol = 1e-4（fp32 累加）",
    baseline=_rowsum_baseline, baseline_label="torch.sum",
    # At 16384 x 4096 fp16 the lesson's kernel (64-row blocks, 128-column tiles, two stages)
    # reaches 63-64 % of the copy bandwidth on the H200 and torch.sum itself 68-69 % (the primer
    # suite and the recorded grading run, 2026-12-01): full points from 60 %, half from 40 %.
    metric="frac_copy", levels=((0.40, 0.5), (0.60, 1.0)),
    structure=("row_reduction", "pipelined"),
    interface_doc="row_sum_kernel(M, N, dtype) -> kernel(X, Y)；X 形状 (M, N)，dtype 为 float16 / bfloat16 / float32；"
                  "Y 形状 (M,)、float32；每一行在 fp32 中求和；M 任意，N 是 8 的倍数（一行 16 字节的整数倍，TMA 的行距），"
                  "两者都可以不是分块的整数倍",
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
                                                               GEMM_PIPELINED, ASCEND_ADD, ASCEND_RMSNORM,
                                                               P_COPY, P_SCALE, P_ROWSUM)}


def get_task(key: str) -> CudaTask | AscendTask:
    try:
        return TASKS[key]
    except KeyError:
        raise KeyError(f"unknown kernel task {key!r}; known: {sorted(TASKS)}") from None
