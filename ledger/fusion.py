"""Fusion ledgers of chapter 13: op-by-op decomposition against one fused kernel.

Each scenario is written out as two :class:`Plan`\\ s.  A plan is a list of
:class:`Step`\\ s, one per kernel launch; a step names the tensors it reads and the
tensors it writes.  The rules of :mod:`ledger.cost` then give the bytes: every tensor a
step reads is read from memory, every tensor it writes is written to memory.  A tensor
that one step writes and the next reads is therefore counted twice -- that is exactly
the traffic fusion removes.

FLOPs are counted per element of the row-sized tensors (the rules of
:mod:`ledger.cost`); the scalar work on per-row statistics (the division in a mean, the
``+ eps``, the ``rsqrt``, a scale's division) is O(rows), well below the printed digits,
and is left out, in the split and the fused plan alike.  The bytes of per-row statistic
tensors *are* counted when a split plan sends them through memory.

The five scenarios of the chapter (:func:`scenarios`):

==========================  ======================================================
scale+add                   ``y = x*a + b``, fp32, N = 2^20 (2 steps vs 1)
RMSNorm                     4096 x 4096 fp16, stats fp32 (6 steps vs 1)
LayerNorm                   4096 x 4096 bf16, stats fp32 (8 steps vs 1)
RoPE                        4096 x 32 rows, rope_dim 128, NeoX half-split, fp16,
                            cos/sin given per row (7 steps vs 1)
RMSNorm+RoPE+FP8            4096 x 4096 bf16, RoPE on the last 128 columns, per-token
                            fp8 scale (3 kernels vs 1)
==========================  ======================================================

The single-kernel costs the chapter-13 kernels are timed against are plain functions
for any shape: :func:`elementwise_cost`, :func:`rmsnorm_cost`, :func:`layernorm_cost`,
:func:`rope_cost`, :func:`fp8_quant_cost`, :func:`rmsnorm_rope_fp8_cost`.

``python -m ledger.fusion [--steps] [--machine NAME]`` prints the table (and, with
``--steps``, every step's reads and writes).
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Sequence

from ledger.cost import Cost, check_size, dtype_bytes, fmt_bytes, fmt_time
from ledger.machines import Machine, get_machine

__all__ = [
    "Tensor",
    "Step",
    "Plan",
    "Scenario",
    "dtype_bytes",
    "fragment_kib",
    "vector_lanes",
    "elementwise_cost",
    "rmsnorm_cost",
    "layernorm_cost",
    "rope_cost",
    "fp8_quant_cost",
    "rmsnorm_rope_fp8_cost",
    "rmsnorm_rope_cost",
    "scale_add",
    "rmsnorm",
    "layernorm",
    "rope",
    "rmsnorm_rope_fp8",
    "scenarios",
    "figures",
]


# ------------------------------------------------------------------------------------
# tensors, steps, plans
# ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tensor:
    """A named tensor in memory: shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        if not self.shape:
            raise ValueError(f"shape: tensor {self.name!r} needs at least one dimension")
        for i, s in enumerate(self.shape):
            check_size(f"shape[{i}] of {self.name}", s)
        dtype_bytes(self.dtype)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> float:
        return self.elements * dtype_bytes(self.dtype)

    def __str__(self) -> str:
        return f"{self.name}[{'x'.join(map(str, self.shape))}] {self.dtype}"


@dataclass(frozen=True)
class Step:
    """One kernel launch: the tensors it reads, the tensors it writes, its FLOPs."""

    name: str
    reads: tuple[Tensor, ...]
    writes: tuple[Tensor, ...]
    flops: float

    @property
    def bytes(self) -> float:
        return sum(t.bytes for t in self.reads) + sum(t.bytes for t in self.writes)

    @property
    def cost(self) -> Cost:
        return Cost(self.flops, self.bytes, self.name)

    def describe(self) -> str:
        r = ", ".join(map(str, self.reads)) or "-"
        w = ", ".join(map(str, self.writes))
        return f"{self.name}: read {r}; write {w}; {fmt_bytes(self.bytes)}, {self.flops / 1e6:.2f} MFLOP"


@dataclass(frozen=True)
class Plan:
    """A sequence of kernel launches; its cost is the sum of the steps'."""

    name: str
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError(f"steps: plan {self.name!r} has no steps")

    @property
    def kernels(self) -> int:
        return len(self.steps)

    @property
    def cost(self) -> Cost:
        return Cost(sum(s.flops for s in self.steps), sum(s.bytes for s in self.steps), self.name)

    @property
    def bytes(self) -> float:
        return self.cost.bytes

    @property
    def flops(self) -> float:
        return self.cost.flops


@dataclass(frozen=True)
class Scenario:
    """One fusion scenario: the split plan and the fused plan of the same computation."""

    key: str
    title: str
    conditions: str
    unfused: Plan
    fused: Plan

    @property
    def ratio(self) -> float:
        """Bytes of the split plan over bytes of the fused plan."""
        return self.unfused.bytes / self.fused.bytes


def _fused(name: str, reads: Sequence[Tensor], writes: Sequence[Tensor], flops: float) -> Plan:
    return Plan(name, (Step(name, tuple(reads), tuple(writes), flops),))


# ------------------------------------------------------------------------------------
# single kernels, any shape (the kernels' timing suite calls these)
# ------------------------------------------------------------------------------------
def fragment_kib(shape: Sequence[int], dtype: str = "fp32") -> float:
    """On-chip size of a fragment of ``shape`` in KiB (e.g. (1, 4096) fp32 -> 16)."""
    return Tensor("fragment", tuple(shape), dtype).bytes / 1024


def vector_lanes(dtype: str, bits: int = 128) -> int:
    """Elements of ``dtype`` in one ``bits``-wide memory access (128-bit: 4 fp32, 8 fp16)."""
    bits = check_size("bits", bits)
    lanes = bits / 8 / dtype_bytes(dtype)
    if lanes < 1 or lanes != int(lanes):
        raise ValueError(f"bits: a {bits}-bit access does not hold a whole number of {dtype} elements")
    return int(lanes)


def elementwise_cost(n: int, in_dtypes: Sequence[str] = ("float16", "float16"),
                     out_dtype: str = "float16", flops_per_elem: float = 1) -> Cost:
    """An N-element elementwise kernel: each input read once, the output written once."""
    n = check_size("n", n)
    if not in_dtypes:
        raise ValueError("in_dtypes must name at least one input dtype")
    check_size("flops_per_elem", flops_per_elem, integer=False, allow_zero=True)
    nbytes = sum(n * dtype_bytes(d, arg="in_dtypes") for d in in_dtypes) + n * dtype_bytes(out_dtype, arg="out_dtype")
    return Cost(flops_per_elem * n, nbytes, f"elementwise {len(in_dtypes)} in -> {out_dtype}")


def _rmsnorm_kernel(x: Tensor, w: Tensor | None, y: Tensor) -> Step:
    per = 4 if w is not None else 3  # square, sum, x rstd (, x w)
    reads = (x,) if w is None else (x, w)
    return Step("rmsnorm kernel", reads, (y,), per * x.elements)


def rmsnorm_cost(m: int, n: int, dtype: str = "float16", weight: bool = True,
                 out_dtype: str | None = None) -> Cost:
    """Fused RMSNorm over ``m`` rows of ``n``: read x (and w once), write y; 4 FLOP/elem."""
    m, n = check_size("m", m), check_size("n", n)
    x = Tensor("x", (m, n), dtype)
    w = Tensor("w", (n,), dtype) if weight else None
    return _rmsnorm_kernel(x, w, Tensor("y", (m, n), out_dtype or dtype)).cost


def layernorm_cost(m: int, n: int, dtype: str = "float16", weight: bool = True, bias: bool = True) -> Cost:
    """Fused LayerNorm: read x, gamma, beta once, write y; 8 FLOP/elem (one less per missing affine term)."""
    m, n = check_size("m", m), check_size("n", n)
    x, y = Tensor("x", (m, n), dtype), Tensor("y", (m, n), dtype)
    reads = [x] + ([Tensor("gamma", (n,), dtype)] if weight else []) + ([Tensor("beta", (n,), dtype)] if bias else [])
    per = 6 + int(weight) + int(bias)
    return Step("layernorm kernel", tuple(reads), (y,), per * m * n).cost


def _rope_kernel(x: Tensor, rope_dim: int, rows: int, table_rows: int, cs_dtype: str, y: Tensor) -> Step:
    half = rope_dim // 2
    cos = Tensor("cos", (table_rows, half), cs_dtype)
    sin = Tensor("sin", (table_rows, half), cs_dtype)
    return Step("rope kernel", (x, cos, sin), (y,), 3 * rows * rope_dim)


def rope_cost(tokens: int, heads: int = 1, head_dim: int = 128, rope_dim: int | None = None,
              dtype: str = "float16", cos_sin_dtype: str = "float32", table_rows: int | None = None) -> Cost:
    """RoPE kernel (out of place): read x, read the cos/sin tables once, write y.

    x and y are ``tokens x heads x head_dim``; ``rope_dim`` (default ``head_dim``) of the
    columns of each head are rotated (which ones -- first or last -- does not change the
    count), 3 FLOP per rotated element; the other columns are copied through.  The
    tables are ``table_rows x rope_dim/2`` each; ``table_rows`` defaults to ``tokens``
    (one table row per token, shared by the heads).  Chapter 13's RoPE kernel takes one
    table row per (token, head) row: ``table_rows = tokens x heads``.
    """
    tokens, heads, head_dim = check_size("tokens", tokens), check_size("heads", heads), check_size("head_dim", head_dim)
    rope_dim = head_dim if rope_dim is None else check_size("rope_dim", rope_dim)
    if rope_dim > head_dim or rope_dim % 2:
        raise ValueError(f"rope_dim must be even and <= head_dim ({head_dim}), got {rope_dim}")
    table_rows = tokens if table_rows is None else check_size("table_rows", table_rows)
    dtype_bytes(cos_sin_dtype, arg="cos_sin_dtype")
    x = Tensor("x", (tokens, heads, head_dim), dtype)
    y = Tensor("y", (tokens, heads, head_dim), dtype)
    return _rope_kernel(x, rope_dim, tokens * heads, table_rows, cos_sin_dtype, y).cost


def _quant_kernel(x: Tensor, q: Tensor, scale: Tensor) -> Step:
    # |x| 1, running max 1, multiply by the inverse scale 1; the cast is not arithmetic
    return Step("fp8 quant kernel", (x,), (q, scale), 3 * x.elements)


def fp8_quant_cost(m: int, n: int, in_dtype: str = "bfloat16", group: int | None = 128,
                   out_dtype: str = "float8_e4m3fn", scale_dtype: str = "float32") -> Cost:
    """FP8 quantisation: read x, write q (1 B/elem) and one scale per group of ``group``
    columns (``group=None``: one per row, i.e. per token); 3 FLOP/elem."""
    m, n = check_size("m", m), check_size("n", n)
    g = n if group is None else check_size("group", group)
    if n % g:
        raise ValueError(f"group must divide n ({n}), got {g}")
    for arg, d in (("in_dtype", in_dtype), ("out_dtype", out_dtype), ("scale_dtype", scale_dtype)):
        dtype_bytes(d, arg=arg)
    x = Tensor("x", (m, n), in_dtype)
    return _quant_kernel(x, Tensor("q", (m, n), out_dtype), Tensor("scale", (m, n // g), scale_dtype)).cost


# ------------------------------------------------------------------------------------
# the five scenarios
# ------------------------------------------------------------------------------------
def scale_add(n: int = 2 ** 20, dtype: str = "fp32") -> Scenario:
    """``y = x*a + b`` (``a`` a scalar argument): mul then add, against one kernel."""
    n = check_size("n", n)
    x, b, t, y = (Tensor(k, (n,), dtype) for k in ("x", "b", "t", "y"))
    split = Plan("op by op", (
        Step("t = x * a", (x,), (t,), n),
        Step("y = t + b", (t, b), (y,), n),
    ))
    return Scenario("scale_add", f"scale+add (y = x*a + b, {dtype}, N={n})",
                    f"N = {n} elements, {dtype}; a is a scalar argument", split,
                    _fused("fused", (x, b), (y,), 2 * n))


def rmsnorm(m: int = 4096, n: int = 4096, dtype: str = "fp16", stats_dtype: str = "fp32") -> Scenario:
    """RMSNorm as PyTorch's six calls (pow, mean, add eps, rsqrt, mul, mul weight) vs one kernel."""
    m, n = check_size("m", m), check_size("n", n)
    x, w = Tensor("x", (m, n), dtype), Tensor("w", (n,), dtype)
    sq, xn, y = Tensor("x2", (m, n), dtype), Tensor("xn", (m, n), dtype), Tensor("y", (m, n), dtype)
    ms, v, r = (Tensor(k, (m, 1), stats_dtype) for k in ("ms", "v", "rstd"))
    split = Plan("op by op", (
        Step("x2 = x.pow(2)", (x,), (sq,), m * n),
        Step("ms = x2.mean(-1)", (sq,), (ms,), m * n),
        Step("v = ms + eps", (ms,), (v,), 0),
        Step("rstd = rsqrt(v)", (v,), (r,), 0),
        Step("xn = x * rstd", (x, r), (xn,), m * n),
        Step("y = xn * w", (xn, w), (y,), m * n),
    ))
    fused = Plan("fused", (_rmsnorm_kernel(x, w, y),))
    return Scenario("rmsnorm", f"RMSNorm ({m}x{n}, {dtype})",
                    f"{m} x {n} {dtype}, weight {n}, per-row statistics {stats_dtype}", split, fused)


def layernorm(m: int = 4096, n: int = 4096, dtype: str = "bf16", stats_dtype: str = "fp32") -> Scenario:
    """LayerNorm as eight calls (mean, var, +eps, rsqrt, sub, mul, mul gamma, add beta) vs one kernel."""
    m, n = check_size("m", m), check_size("n", n)
    x, y = Tensor("x", (m, n), dtype), Tensor("y", (m, n), dtype)
    g, b = Tensor("gamma", (n,), dtype), Tensor("beta", (n,), dtype)
    xc, xh, yg = (Tensor(k, (m, n), dtype) for k in ("xc", "xhat", "yg"))
    mu, var, ve, r = (Tensor(k, (m, 1), stats_dtype) for k in ("mean", "var", "ve", "rstd"))
    split = Plan("op by op", (
        Step("mean = x.mean(-1)", (x,), (mu,), m * n),
        Step("var = x.var(-1)", (x,), (var,), 3 * m * n),
        Step("ve = var + eps", (var,), (ve,), 0),
        Step("rstd = rsqrt(ve)", (ve,), (r,), 0),
        Step("xc = x - mean", (x, mu), (xc,), m * n),
        Step("xhat = xc * rstd", (xc, r), (xh,), m * n),
        Step("yg = xhat * gamma", (xh, g), (yg,), m * n),
        Step("y = yg + beta", (yg, b), (y,), m * n),
    ))
    fused = _fused("fused", (x, g, b), (y,), 8 * m * n)
    return Scenario("layernorm", f"LayerNorm ({m}x{n}, {dtype})",
                    f"{m} x {n} {dtype}, gamma and beta {n}, per-row statistics {stats_dtype}", split, fused)


def rope(rows: int = 4096 * 32, rope_dim: int = 128, dtype: str = "fp16",
         cos_sin_dtype: str | None = None) -> Scenario:
    """NeoX half-split RoPE written with PyTorch slicing (7 calls) vs one kernel.

    ``rows`` (token, head) rows of ``rope_dim``; the cos/sin tables hold one row of
    ``rope_dim/2`` per row of x, in ``cos_sin_dtype`` (default: ``dtype``).
    """
    rows, rope_dim = check_size("rows", rows), check_size("rope_dim", rope_dim)
    if rope_dim % 2:
        raise ValueError(f"rope_dim must be even, got {rope_dim}")
    h = rope_dim // 2
    csd = cos_sin_dtype or dtype
    x, y = Tensor("x", (rows, rope_dim), dtype), Tensor("y", (rows, rope_dim), dtype)
    lo, hi = Tensor("x[..., :H]", (rows, h), dtype), Tensor("x[..., H:]", (rows, h), dtype)
    c, s = Tensor("cos", (rows, h), csd), Tensor("sin", (rows, h), csd)
    a1, a2, a3, a4, ylo, yhi = (Tensor(k, (rows, h), dtype) for k in ("a1", "a2", "a3", "a4", "y_lo", "y_hi"))
    split = Plan("op by op", (
        Step("a1 = x_lo * cos", (lo, c), (a1,), rows * h),
        Step("a2 = x_hi * sin", (hi, s), (a2,), rows * h),
        Step("y_lo = a1 - a2", (a1, a2), (ylo,), rows * h),
        Step("a3 = x_hi * cos", (hi, c), (a3,), rows * h),
        Step("a4 = x_lo * sin", (lo, s), (a4,), rows * h),
        Step("y_hi = a3 + a4", (a3, a4), (yhi,), rows * h),
        Step("y = cat(y_lo, y_hi)", (ylo, yhi), (y,), 0),
    ))
    fused = Plan("fused", (_rope_kernel(x, rope_dim, rows, rows, csd, y),))
    return Scenario("rope", f"RoPE ({rows} rows, rope_dim={rope_dim}, {dtype})",
                    f"{rows} rows x {rope_dim}, {dtype}, NeoX half-split, cos/sin {csd} one row per row of x",
                    split, fused)


def rmsnorm_rope_fp8(m: int = 4096, n: int = 4096, dtype: str = "bf16", rope_dim: int = 128,
                     group: int | None = None, cos_sin_dtype: str | None = None,
                     scale_dtype: str = "fp32") -> Scenario:
    """RMSNorm, then RoPE on the last ``rope_dim`` columns, then FP8 quantisation.

    Split: three kernels, each already fused on its own (RMSNorm; an out-of-place RoPE
    that copies the unrotated columns through; the quantiser).  Fused: one kernel that
    reads x, w, cos, sin and writes q and the scales.  ``group=None`` is one scale per
    row (per token); cos/sin hold one row of ``rope_dim/2`` per token.
    """
    m, n, rope_dim = check_size("m", m), check_size("n", n), check_size("rope_dim", rope_dim)
    if rope_dim > n or rope_dim % 2:
        raise ValueError(f"rope_dim must be even and <= n ({n}), got {rope_dim}")
    g = n if group is None else check_size("group", group)
    if n % g:
        raise ValueError(f"group must divide n ({n}), got {g}")
    csd = cos_sin_dtype or dtype
    x, w = Tensor("x", (m, n), dtype), Tensor("w", (n,), dtype)
    y, z = Tensor("y", (m, n), dtype), Tensor("z", (m, n), dtype)
    q, sc = Tensor("q", (m, n), "fp8"), Tensor("scale", (m, n // g), scale_dtype)
    norm = _rmsnorm_kernel(x, w, y)
    rot = _rope_kernel(y, rope_dim, m, m, csd, z)
    quant = _quant_kernel(z, q, sc)
    split = Plan("three kernels", (norm, rot, quant))
    cos, sin = rot.reads[1], rot.reads[2]
    fused = _fused("fused", (x, w, cos, sin), (q, sc), norm.flops + rot.flops + quant.flops)
    scale_kind = "per token" if group is None else f"per group of {g}"
    return Scenario("rmsnorm_rope_fp8", f"RMSNorm+RoPE+FP8 ({m}x{n}, {dtype})",
                    f"{m} x {n} {dtype}; RoPE on the last {rope_dim} columns, cos/sin {csd} per token; "
                    f"fp8 output, {scale_dtype} scale {scale_kind}", split, fused)


def rmsnorm_rope_fp8_cost(m: int, n: int, dtype: str = "bfloat16", rope_dim: int = 128,
                          group: int | None = None, *, fused: bool = True,
                          cos_sin_dtype: str | None = None) -> Cost:
    """Cost of the fused RMSNorm+RoPE+FP8 kernel (or, ``fused=False``, of the three kernels).

    ``cos_sin_dtype`` defaults to ``dtype``, the chapter's scenario; the course's kernels
    read fp32 tables (``kernels.rope.rope_tables``) and are priced with ``"float32"``."""
    sc = rmsnorm_rope_fp8(m, n, dtype, rope_dim, group, cos_sin_dtype)
    return (sc.fused if fused else sc.unfused).cost


def rmsnorm_rope_cost(m: int, n: int, dtype: str = "bfloat16", rope_dim: int = 128,
                      cos_sin_dtype: str = "float32") -> Cost:
    """Fused RMSNorm + RoPE kernel: read x (m, n), w (n,), cos and sin (m, rope_dim/2) once,
    write y (m, n); 4 FLOP/elem for the norm plus 3 per rotated element."""
    m, n, rope_dim = check_size("m", m), check_size("n", n), check_size("rope_dim", rope_dim)
    if rope_dim > n or rope_dim % 2:
        raise ValueError(f"rope_dim must be even and <= n ({n}), got {rope_dim}")
    dtype_bytes(cos_sin_dtype, arg="cos_sin_dtype")
    x, w, y = Tensor("x", (m, n), dtype), Tensor("w", (n,), dtype), Tensor("y", (m, n), dtype)
    norm = _rmsnorm_kernel(x, w, y)
    rot = _rope_kernel(y, rope_dim, m, m, cos_sin_dtype, y)
    cos, sin = rot.reads[1], rot.reads[2]
    return Step("rmsnorm+rope kernel", (x, w, cos, sin), (y,), norm.flops + rot.flops).cost


def scenarios() -> list[Scenario]:
    """The chapter's five scenarios, in the order of its table."""
    return [scale_add(), rmsnorm(), layernorm(), rope(), rmsnorm_rope_fp8()]


# ------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------
def figures() -> list:
    """Chapter 13 fusion-ledger figures (``elementwise.*``)."""
    from ledger.figures import fig

    out = []
    src = "ledger.fusion"
    all_ai = []
    for sc in scenarios():
        k = f"elementwise.fusion.{sc.key}"
        out.append(fig(f"{k}.unfused_mb", sc.unfused.bytes / 1e6, "MB", digits=2, source=f"{src}.{sc.key}",
                       conditions=sc.conditions + f"; split plan: {sc.unfused.kernels} kernels"))
        out.append(fig(f"{k}.fused_mb", sc.fused.bytes / 1e6, "MB", digits=2, source=f"{src}.{sc.key}",
                       conditions=sc.conditions + "; one kernel"))
        out.append(fig(f"{k}.ratio", sc.ratio, "x", digits=2, source="ledger.fusion.Scenario.ratio",
                       conditions=sc.conditions))
        out.append(fig(f"{k}.unfused_ai", sc.unfused.cost.intensity, "FLOP/B", digits=3,
                       source=f"{src}.{sc.key}", conditions=sc.conditions))
        out.append(fig(f"{k}.fused_ai", sc.fused.cost.intensity, "FLOP/B", digits=3,
                       source=f"{src}.{sc.key}", conditions=sc.conditions))
        out.append(fig(f"{k}.steps", sc.unfused.kernels, "", digits=0, source=f"{src}.{sc.key}",
                       conditions="kernel launches of the split plan"))
        all_ai += [sc.unfused.cost.intensity, sc.fused.cost.intensity]
    sc = scale_add()
    n = sc.fused.steps[0].reads[0].elements
    out.append(fig("elementwise.fusion.scale_add.unfused_bytes_per_elem", sc.unfused.bytes / n, "B", digits=0,
                   source=f"{src}.scale_add", conditions=sc.conditions, text=f"{sc.unfused.bytes / n:.0f}N"))
    out.append(fig("elementwise.fusion.scale_add.fused_bytes_per_elem", sc.fused.bytes / n, "B", digits=0,
                   source=f"{src}.scale_add", conditions=sc.conditions, text=f"{sc.fused.bytes / n:.0f}N"))
    out.append(fig("elementwise.fusion.rmsnorm_rope_fp8.unfused_mb_1", rmsnorm_rope_fp8().unfused.bytes / 1e6, "MB",
                   digits=1, source=f"{src}.rmsnorm_rope_fp8", conditions=rmsnorm_rope_fp8().conditions))
    out.append(fig("elementwise.fusion.rmsnorm_rope_fp8.fused_mb_1", rmsnorm_rope_fp8().fused.bytes / 1e6, "MB",
                   digits=1, source=f"{src}.rmsnorm_rope_fp8", conditions=rmsnorm_rope_fp8().conditions))
    cA = "over the split and fused plans of the five scenarios"
    out.append(fig("elementwise.fusion.ai_min", min(all_ai), "FLOP/B", digits=3, source=src, conditions=cA))
    out.append(fig("elementwise.fusion.ai_max", max(all_ai), "FLOP/B", digits=3, source=src, conditions=cA))
    out.append(fig("elementwise.fusion.plans", 2 * len(scenarios()), "", digits=0, source=src, conditions=cA))
    ratios = [s.ratio for s in scenarios()[1:]]
    cR = "RMSNorm, LayerNorm, RoPE, RMSNorm+RoPE+FP8"
    out.append(fig("elementwise.fusion.ratio_min", min(ratios), "x", digits=1, source=src, conditions=cR))
    out.append(fig("elementwise.fusion.ratio_max", max(ratios), "x", digits=0, source=src, conditions=cR))
    cV = "one warp = 32 threads; 32-bit vs 128-bit global loads"
    out.append(fig("elementwise.vector.lanes_fp32", vector_lanes("fp32"), "elements", digits=0,
                   source="ledger.fusion.vector_lanes", conditions="128-bit access, fp32"))
    out.append(fig("elementwise.vector.lanes_fp16", vector_lanes("fp16"), "elements", digits=0,
                   source="ledger.fusion.vector_lanes", conditions="128-bit access, fp16/bf16"))
    out.append(fig("elementwise.vector.warp_bytes_32bit", 32 * 32 // 8, "B", digits=0, source="ledger.fusion",
                   conditions=cV))
    out.append(fig("elementwise.vector.warp_bytes_128bit", 32 * 128 // 8, "B", digits=0, source="ledger.fusion",
                   conditions=cV))
    out.append(fig("elementwise.vector.width_gain", 128 // 32, "x", digits=0, source="ledger.fusion", conditions=cV))
    out.append(fig("elementwise.vector.threads_for_256_fp16", 256 // vector_lanes("fp16"), "threads", digits=0,
                   source="ledger.fusion.vector_lanes",
                   conditions="256 fp16 elements per block, 8 per thread in one 128-bit access"))
    out.append(fig("elementwise.fragment.row_fp32_kib", fragment_kib((1, 4096), "fp32"), "KiB", digits=0,
                   source="ledger.fusion.fragment_kib", conditions="(1, 4096) fp32 fragment"))
    out.append(fig("elementwise.fragment.rows4_fp32_kib", fragment_kib((4, 4096), "fp32"), "KiB", digits=0,
                   source="ledger.fusion.fragment_kib", conditions="(4, 4096) fp32 fragment"))
    return out


# ------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.fusion", description="Chapter 13 fusion ledger.")
    p.add_argument("--machine", default=None, help="profile for the lower bounds")
    p.add_argument("--steps", action="store_true", help="print every step's reads and writes")
    args = p.parse_args(argv)
    try:
        m: Machine = get_machine(args.machine)
        print(f"machine: {m.summary()}")
        print(f"{'scenario':<44s} {'op by op':>11s} {'fused':>11s} {'ratio':>6s} {'AI split':>9s} "
              f"{'AI fused':>9s} {'t fused':>11s}")
        for sc in scenarios():
            u, f = sc.unfused.cost, sc.fused.cost
            print(f"{sc.title:<44s} {fmt_bytes(u.bytes):>11s} {fmt_bytes(f.bytes):>11s} {sc.ratio:>5.2f}x "
                  f"{u.intensity:>9.3f} {f.intensity:>9.3f} {fmt_time(f.lower_bound(m)):>11s}")
            if args.steps:
                for plan in (sc.unfused, sc.fused):
                    print(f"    {plan.name} ({plan.kernels} kernel{'s' if plan.kernels > 1 else ''}):")
                    for s in plan.steps:
                        print(f"      {s.describe()}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
