"""Operator ledgers of chapter 02: one (flops, bytes) function per operator.

Every function returns a :class:`ledger.cost.Cost` built with the rules of
:mod:`ledger.cost` (inputs read once, outputs written once, intermediates not counted;
elementwise op or transcendental = 1 FLOP; multiply-add = 2 FLOP).  Sizes are element
counts; dtypes are names from :data:`ledger.cost.DTYPE_BYTES`.

The operators: elementwise add and chains (eager vs fused), LayerNorm (fused vs three
passes), GEMM, attention prefill (S x S scores in memory vs flash-style) and decode,
AdamW, ring all-reduce, and the two ledgers exercise E13 asks for (SiLU, RoPE rotation).
:func:`op_table` is the chapter's default table; :func:`flips` compares two machines.

``python -m ledger.ops [--machine NAME] [--compare NAME]`` prints the table.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Sequence

from ledger.cost import (
    FLOP_MAC,
    Cost,
    Verdict,
    check_size,
    dtype_bytes,
    fmt_time,
    judge,
)
from ledger.machines import DEFAULT_MACHINE, Machine, get_machine

__all__ = [
    "elementwise",
    "elementwise_add",
    "elementwise_chain",
    "layernorm",
    "gemm",
    "gemm_square_intensity",
    "gemm_ridge_edge",
    "attention_prefill",
    "attention_decode",
    "attention_io_ratio",
    "attention_scores_bytes",
    "adamw_bytes_per_param",
    "adamw",
    "ring_allreduce",
    "silu",
    "rope_rotation",
    "op_table",
    "judge_table",
    "flips",
    "figures",
    "LAYERNORM_FLOPS_PER_ELEM",
    "ADAMW_FLOPS_PER_PARAM",
    "SOFTMAX_FLOPS_PER_SCORE",
    "SILU_FLOPS_PER_ELEM",
    "ROPE_FLOPS_PER_ELEM",
]

#: LayerNorm, ledger FLOPs per element: mean 1 (accumulate), variance 3 (centre,
#: square, accumulate), normalise 2 (centre, x rstd), affine 2 (x gamma, + beta) = 8.
#: The per-row scalars (divide by H, + eps, rsqrt) are O(rows) and not counted.
LAYERNORM_FLOPS_PER_ELEM = 8
#: AdamW, ledger FLOPs per parameter: m update 3 (2 mul, 1 add), v update 4 (3 mul,
#: 1 add), two bias corrections 2, sqrt 1, + eps 1, divide 1, x lr 1, decoupled weight
#: decay theta x (1 - lr*wd) 1, subtract the update 1 = 15.
ADAMW_FLOPS_PER_PARAM = 15
#: Attention, ledger FLOPs per score (TileOPs convention) for scale, max, subtract, exp, sum: 5.
SOFTMAX_FLOPS_PER_SCORE = 5
#: SiLU x*sigmoid(x): neg 1, exp 1, add 1, reciprocal 1 (sigmoid = 4), times x 1 = 5.
SILU_FLOPS_PER_ELEM = 5
#: RoPE rotation: per pair y1 = x1 c - x2 s, y2 = x2 c + x1 s = 4 mul + 2 add/sub = 6,
#: i.e. 3 per element (cos/sin precomputed).
ROPE_FLOPS_PER_ELEM = 3


# ------------------------------------------------------------------------------------
# elementwise
# ------------------------------------------------------------------------------------
def elementwise(n: int, *, inputs: int = 1, outputs: int = 1, flops_per_elem: float = 1,
                dtype: str = "fp16", name: str = "") -> Cost:
    """An elementwise kernel over ``n`` elements reading ``inputs`` and writing ``outputs`` tensors."""
    n = check_size("n", n)
    inputs = check_size("inputs", inputs, allow_zero=True)
    outputs = check_size("outputs", outputs)
    check_size("flops_per_elem", flops_per_elem, integer=False, allow_zero=True)
    b = dtype_bytes(dtype)
    return Cost(flops_per_elem * n, (inputs + outputs) * n * b,
                name or f"elementwise ({inputs} in, {outputs} out, {dtype})",
                f"{flops_per_elem} FLOP/elem; {inputs} reads + {outputs} writes of {n} elements")


def elementwise_add(n: int, dtype: str = "fp16") -> Cost:
    """``y = x + b``: reads two tensors, writes one, 1 FLOP per element (AI = 1/(3b))."""
    return elementwise(n, inputs=2, outputs=1, flops_per_elem=1, dtype=dtype,
                       name=f"elementwise add ({n / 1e6:.1f}M, {dtype})")


def elementwise_chain(n: int, k: int = 2, dtype: str = "fp16", *, fused: bool,
                      flops_per_op: float = 1) -> Cost:
    """A chain of ``k`` unary elementwise ops (``sin(cos(x))`` is k = 2).

    Eager (``fused=False``): every op is its own kernel, reads its input and writes its
    output: ``2k`` passes over the tensor.  Fused: one kernel reads ``x`` and writes the
    result: 2 passes.  FLOPs are ``k x flops_per_op`` per element either way.
    """
    n = check_size("n", n)
    k = check_size("k", k)
    b = dtype_bytes(dtype)
    passes = 2 if fused else 2 * k
    kind = "fused" if fused else "eager"
    return Cost(k * flops_per_op * n, passes * n * b, f"elementwise chain x{k}, {kind} ({dtype})",
                f"{passes} passes of {n} elements; {flops_per_op} FLOP per op per element")


# ------------------------------------------------------------------------------------
# LayerNorm
# ------------------------------------------------------------------------------------
def layernorm(m: int, h: int, dtype: str = "fp16", *, passes: int = 1,
              flops_per_elem: float = LAYERNORM_FLOPS_PER_ELEM, include_params: bool = False) -> Cost:
    """LayerNorm over ``m`` rows of ``h``: ``passes`` reads of x plus one write of y.

    ``passes=1`` is the fused kernel (read x, write y); ``passes=3`` is the chapter's
    hand-assembled version (a pass for the mean, one for the variance, one to normalise
    and apply the affine).  The chapter leaves gamma and beta (2h elements) out of the
    count; ``include_params=True`` adds them (one read each).
    """
    m = check_size("m", m)
    h = check_size("h", h)
    passes = check_size("passes", passes)
    b = dtype_bytes(dtype)
    nbytes = (passes + 1) * m * h * b + (2 * h * b if include_params else 0)
    kind = "fused" if passes == 1 else f"{passes} passes"
    return Cost(flops_per_elem * m * h, nbytes, f"LayerNorm {m}x{h}, {kind} ({dtype})",
                f"{passes} read(s) of x + 1 write of y; {flops_per_elem} FLOP/elem")


# ------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------
def gemm(m: int, n: int, k: int, dtype: str = "fp16", out_dtype: str | None = None) -> Cost:
    """``C[m,n] = A[m,k] B[k,n]``: 2mnk FLOP; A and B read once, C written once."""
    m, n, k = check_size("m", m), check_size("n", n), check_size("k", k)
    b = dtype_bytes(dtype)
    bo = dtype_bytes(out_dtype, arg="out_dtype") if out_dtype else b
    return Cost(FLOP_MAC * m * n * k, (m * k + k * n) * b + m * n * bo,
                f"GEMM {m}x{n}x{k} ({dtype})", "A, B read once, C written once")


def gemm_square_intensity(edge: int, dtype: str = "fp16") -> float:
    """AI of a square GEMM of side ``edge``: 2N^3 / (3 N^2 b) = 2N / (3b)."""
    return gemm(edge, edge, edge, dtype).intensity


def gemm_ridge_edge(machine: Machine | str | None = None, dtype: str = "fp16") -> float:
    """The square-GEMM side where AI equals the machine balance: N = 3 b balance / 2."""
    return 3 * dtype_bytes(dtype) * get_machine(machine).balance / 2


# ------------------------------------------------------------------------------------
# attention
# ------------------------------------------------------------------------------------
def attention_prefill(batch: int = 1, heads: int = 32, seq: int = 4096, head_dim: int = 128,
                      dtype: str = "fp16", *, materialize_scores: bool = True,
                      score_passes: int = 6) -> Cost:
    """Attention prefill (no causal saving): FLOPs ``B H (4 S^2 d + 5 S^2)``.

    Bytes: Q, K, V read and O written once (``4 B H S d b``).  With
    ``materialize_scores`` the S x S matrix also goes through memory ``score_passes``
    times, as in eager PyTorch: QK^T writes it (1), scale + mask read and write it (2),
    softmax reads and writes it (2), PV reads it (1) -- 6 passes of ``B H S^2 b``.
    A kernel that fuses softmax with PV but still stores the scores has
    ``score_passes=2``.  Flash-style (``materialize_scores=False``) keeps scores on chip.
    """
    batch, heads = check_size("batch", batch), check_size("heads", heads)
    seq, head_dim = check_size("seq", seq), check_size("head_dim", head_dim)
    score_passes = check_size("score_passes", score_passes)
    b = dtype_bytes(dtype)
    flops = batch * heads * (2 * FLOP_MAC * seq * seq * head_dim + SOFTMAX_FLOPS_PER_SCORE * seq * seq)
    io = 4 * batch * heads * seq * head_dim * b
    scores = attention_scores_bytes(batch, heads, seq, dtype, score_passes) if materialize_scores else 0
    kind = f"S x S scores x{score_passes}" if materialize_scores else "flash-style"
    return Cost(flops, io + scores, f"attention prefill S={seq}, {kind}",
                f"B={batch}, H={heads}, d={head_dim}, {dtype}; Q/K/V/O once")


def attention_scores_bytes(batch: int = 1, heads: int = 32, seq: int = 4096, dtype: str = "fp16",
                           score_passes: int = 6) -> float:
    """Bytes the S x S score matrix adds to a prefill that keeps it in memory."""
    batch, heads, seq = check_size("batch", batch), check_size("heads", heads), check_size("seq", seq)
    score_passes = check_size("score_passes", score_passes)
    return score_passes * batch * heads * seq * seq * dtype_bytes(dtype)


def attention_io_ratio(seq: int, head_dim: int = 128, score_passes: int = 6) -> float:
    """Bytes of the S x S version over the flash-style one: 1 + passes S / (4 d)."""
    a = attention_prefill(1, 1, seq, head_dim, "fp16", score_passes=score_passes)
    f = attention_prefill(1, 1, seq, head_dim, "fp16", materialize_scores=False)
    return a.bytes / f.bytes


def attention_decode(batch: int = 1, heads: int = 32, kv_len: int = 32768, head_dim: int = 128,
                     dtype: str = "fp16", *, kv_heads: int | None = None) -> Cost:
    """One decode step: 1 query token per sequence against ``kv_len`` cached keys/values.

    FLOPs ``B H (4 kv_len d + 5 kv_len)``; bytes: the K and V cache (``kv_heads`` heads,
    default ``heads``) read once, plus q read and o written (one token each).
    """
    batch, heads = check_size("batch", batch), check_size("heads", heads)
    kv_len, head_dim = check_size("kv_len", kv_len), check_size("head_dim", head_dim)
    kvh = heads if kv_heads is None else check_size("kv_heads", kv_heads)
    b = dtype_bytes(dtype)
    flops = batch * heads * (2 * FLOP_MAC * kv_len * head_dim + SOFTMAX_FLOPS_PER_SCORE * kv_len)
    nbytes = 2 * batch * kvh * kv_len * head_dim * b + 2 * batch * heads * head_dim * b
    return Cost(flops, nbytes, f"attention decode KV={kv_len}",
                f"B={batch}, H={heads}, KV heads={kvh}, d={head_dim}, {dtype}; K/V cache read once")


# ------------------------------------------------------------------------------------
# optimizer and communication
# ------------------------------------------------------------------------------------
def adamw(params: float, grad_dtype: str = "bf16", state_dtype: str = "fp32",
          flops_per_param: float = ADAMW_FLOPS_PER_PARAM) -> Cost:
    """AdamW step: read grad, param, m, v; write param, m, v (26 B/param for bf16 + fp32)."""
    p = check_size("params", params)
    g = dtype_bytes(grad_dtype, arg="grad_dtype")
    s = dtype_bytes(state_dtype, arg="state_dtype")
    per = g + 3 * s + 3 * s
    return Cost(flops_per_param * p, per * p, f"AdamW ({p / 1e9:.2f}B params)",
                f"{per:g} B/param: grad {grad_dtype} read; param, m, v ({state_dtype}) read and written")


def adamw_bytes_per_param(grad_dtype: str = "bf16", state_dtype: str = "fp32") -> float:
    """Bytes AdamW moves per parameter: grad read, param/m/v read and written (26 for bf16 + fp32)."""
    return adamw(1, grad_dtype, state_dtype).bytes


def ring_allreduce(params: float, world: int = 8, dtype: str = "bf16") -> Cost:
    """Ring all-reduce of ``params`` gradients over ``world`` ranks: 2(N-1)/N x the gradient bytes.

    No arithmetic is counted (the reduction adds are negligible and not the point).
    """
    p = check_size("params", params)
    world = check_size("world", world)
    b = dtype_bytes(dtype)
    return Cost(0, 2 * (world - 1) / world * p * b, f"ring all-reduce (N={world})",
                f"2(N-1)/N x {p:.3g} x {b:g} B per rank")


# ------------------------------------------------------------------------------------
# exercise E13
# ------------------------------------------------------------------------------------
def silu(n: int, dtype: str = "fp16") -> Cost:
    """SiLU ``y = x sigmoid(x)``: 5 FLOP/elem (sigmoid 4 + multiply 1); read x, write y."""
    n = check_size("n", n)
    return elementwise(n, inputs=1, outputs=1, flops_per_elem=SILU_FLOPS_PER_ELEM, dtype=dtype,
                       name=f"SiLU ({n / 1e6:.1f}M, {dtype})")


def rope_rotation(batch: int = 1, heads: int = 32, seq: int = 4096, head_dim: int = 128,
                  dtype: str = "fp16") -> Cost:
    """RoPE rotation of a B x H x S x d tensor: 3 FLOP/elem; read x, write y (cos/sin ignored)."""
    n = (check_size("batch", batch) * check_size("heads", heads) * check_size("seq", seq)
         * check_size("head_dim", head_dim))
    return elementwise(n, inputs=1, outputs=1, flops_per_elem=ROPE_FLOPS_PER_ELEM, dtype=dtype,
                       name=f"RoPE rotation {batch}x{heads}x{seq}x{head_dim}")


# ------------------------------------------------------------------------------------
# the chapter's table
# ------------------------------------------------------------------------------------
N_ELEM = 4096 * 4096  #: 16.8M elements, the chapter's elementwise size
ADAMW_EXAMPLE_PARAMS = 7e9  #: the "7B model" of section 1.1
ALLREDUCE_PARAMS = 8.03e9  #: the 8B-class model of the step budget


def op_table() -> list[Cost]:
    """The chapter's default operator table (the rows E11 compares across machines)."""
    return [
        elementwise_add(N_ELEM),
        elementwise_chain(N_ELEM, 2, fused=False),
        elementwise_chain(N_ELEM, 2, fused=True),
        layernorm(8192, 4096, passes=1),
        layernorm(8192, 4096, passes=3),
        gemm(4096, 4096, 4096),
        attention_prefill(materialize_scores=True),
        attention_prefill(materialize_scores=False),
        attention_decode(kv_len=32768),
        adamw(ADAMW_EXAMPLE_PARAMS),
        ring_allreduce(ALLREDUCE_PARAMS, 8),
    ]


def judge_table(machine: Machine | str | None = None, costs: Sequence[Cost] | None = None) -> list[Verdict]:
    """Judge every cost of ``costs`` (default :func:`op_table`) on ``machine``."""
    return [judge(c, machine) for c in (op_table() if costs is None else costs)]


def flips(machine_a: Machine | str | None, machine_b: Machine | str | None,
          costs: Sequence[Cost] | None = None) -> list[str]:
    """Names of the operators whose bound class differs between the two machines."""
    rows = list(op_table() if costs is None else costs)
    a, b = judge_table(machine_a, rows), judge_table(machine_b, rows)
    return [va.cost.name for va, vb in zip(a, b) if va.bound != vb.bound]


# ------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------
def figures() -> list:
    """Every chapter-02 operator figure (keys ``pytorch.*``)."""
    from ledger.figures import fig

    cal = get_machine(DEFAULT_MACHINE)
    spec = get_machine("h200-spec")
    h100 = get_machine("h100-spec")
    C = f"{cal.name} profile ({cal.default_compute} burst, HBM envelope)"
    out: list = []

    def add(key: str, value: float, unit: str, digits: int, source: str, conditions: str,
            text: str | None = None) -> None:
        out.append(fig(key, value, unit, digits=digits, source=source, conditions=conditions, text=text))

    # -- example 1: sin(cos(x)) ----------------------------------------------------------
    eager, fused = elementwise_chain(N_ELEM, 2, fused=False), elementwise_chain(N_ELEM, 2, fused=True)
    cE = "x: 4096 x 4096 fp16, y = sin(cos(x)); eager = 2 kernels, fused = 1"
    add("pytorch.ex1.n_melem", N_ELEM / 1e6, "M", 1, "ledger.ops.N_ELEM", "4096 x 4096 elements")
    add("pytorch.ex1.tensor_mb", N_ELEM * 2 / 1e6, "MB", 1, "ledger.cost.dtype_bytes", cE + "; one fp16 tensor")
    add("pytorch.ex1.eager_mb", eager.bytes / 1e6, "MB", 1, "ledger.ops.elementwise_chain", cE)
    add("pytorch.ex1.fused_mb", fused.bytes / 1e6, "MB", 1, "ledger.ops.elementwise_chain", cE)
    add("pytorch.ex1.mflop", fused.flops / 1e6, "MFLOP", 1, "ledger.ops.elementwise_chain", cE + "; 1 FLOP per op")
    add("pytorch.ex1.ai_fused", fused.intensity, "FLOP/B", 1, "Cost.intensity", cE)
    add("pytorch.ex1.t_eager_us", eager.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", C)
    add("pytorch.ex1.t_fused_us", fused.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", C)
    add("pytorch.ex1.t_eager_us_3", eager.lower_bound(cal) * 1e6, "µs", 3, "Cost.lower_bound", C)
    add("pytorch.ex1.t_fused_us_3", fused.lower_bound(cal) * 1e6, "µs", 3, "Cost.lower_bound", C)
    add("pytorch.ex1.ratio", eager.bytes / fused.bytes, "x", 1, "ledger.ops.elementwise_chain", cE)

    # -- example 2: LayerNorm 8192 x 4096 -------------------------------------------------
    lf, l3 = layernorm(8192, 4096, passes=1), layernorm(8192, 4096, passes=3)
    cL = "x: 8192 x 4096 fp16; 8 FLOP/elem; gamma/beta not counted (2H elements, below the printed digits)"
    add("pytorch.ex2.fused_mb", lf.bytes / 1e6, "MB", 1, "ledger.ops.layernorm", cL)
    add("pytorch.ex2.three_pass_mb", l3.bytes / 1e6, "MB", 1, "ledger.ops.layernorm", cL + "; read x 3 times")
    add("pytorch.ex2.gflop", lf.flops / 1e9, "GFLOP", 3, "ledger.ops.layernorm", cL)
    add("pytorch.ex2.flop_per_elem", LAYERNORM_FLOPS_PER_ELEM, "FLOP", 0, "ledger.ops.LAYERNORM_FLOPS_PER_ELEM", cL)
    add("pytorch.ex2.ai_fused", lf.intensity, "FLOP/B", 1, "Cost.intensity", cL)
    add("pytorch.ex2.ai_three_pass", l3.intensity, "FLOP/B", 1, "Cost.intensity", cL)
    add("pytorch.ex2.t_fused_us", lf.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", C)
    add("pytorch.ex2.t_three_pass_us", l3.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", C)
    add("pytorch.ex2.ratio", l3.bytes / lf.bytes, "x", 1, "ledger.ops.layernorm", cL)

    # -- example 3: GEMM --------------------------------------------------------------------
    g = gemm(4096, 4096, 4096)
    cG = "fp16, A and B read once, C written once"
    add("pytorch.ex3.gflop", g.flops / 1e9, "GFLOP", 0, "ledger.ops.gemm", "4096^3 " + cG)
    out.append(fig("pytorch.ex3.flop_sci", float(f"{g.flops:.2e}"), "FLOP", source="ledger.ops.gemm",
                   conditions="4096^3 " + cG, text=f"{g.flops / 1e11:.2f}e11"))
    add("pytorch.ex3.mb", g.bytes / 1e6, "MB", 1, "ledger.ops.gemm", "4096^3 " + cG)
    add("pytorch.ex3.operand_mb", 4096 * 4096 * 2 / 1e6, "MB", 1, "ledger.ops.gemm", "one 4096 x 4096 fp16 matrix")
    add("pytorch.ex3.ai", g.intensity, "FLOP/B", 0, "Cost.intensity", "4096^3 " + cG)
    add("pytorch.ex3.ai_1024", gemm_square_intensity(1024), "FLOP/B", 0, "ledger.ops.gemm_square_intensity",
        "1024^3 " + cG)
    add("pytorch.ex3.ai_512", gemm_square_intensity(512), "FLOP/B", 0, "ledger.ops.gemm_square_intensity",
        "512^3 " + cG)
    add("pytorch.ex3.ai_512_1", gemm_square_intensity(512), "FLOP/B", 1, "ledger.ops.gemm_square_intensity",
        "512^3 " + cG)

    # -- example 4: attention ---------------------------------------------------------------
    pa, pf = attention_prefill(), attention_prefill(materialize_scores=False)
    dec = attention_decode(kv_len=32768)
    cA = "B=1, H=32, d=128, S=4096, fp16; no causal saving; scores 6 passes"
    add("pytorch.ex4.gflop", pa.flops / 1e9, "GFLOP", 0, "ledger.ops.attention_prefill", cA)
    add("pytorch.ex4.qkvo_mb", pf.bytes / 1e6, "MB", 1, "ledger.ops.attention_prefill", cA + "; Q/K/V/O once")
    add("pytorch.ex4.scores_gb", (pa.bytes - pf.bytes) / 1e9, "GB", 2, "ledger.ops.attention_prefill",
        cA + "; 6 x 32 x 4096^2 x 2 B")
    add("pytorch.ex4.naive_gb", pa.bytes / 1e9, "GB", 2, "ledger.ops.attention_prefill", cA)
    add("pytorch.ex4.ai_naive", pa.intensity, "FLOP/B", 1, "Cost.intensity", cA)
    add("pytorch.ex4.ai_flash", pf.intensity, "FLOP/B", 0, "Cost.intensity", cA + "; flash-style")
    add("pytorch.ex4.t_naive_ms", pa.lower_bound(cal) * 1e3, "ms", 3, "Cost.lower_bound", C)
    add("pytorch.ex4.t_flash_us", pf.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", C)
    add("pytorch.ex4.speedup", pa.lower_bound(cal) / pf.lower_bound(cal), "x", 1, "Cost.lower_bound", C)
    add("pytorch.ex4.io_ratio", pa.bytes / pf.bytes, "x", 0, "ledger.ops.attention_prefill", cA)
    cD = "B=1, H=32 (KV heads 32), d=128, KV length 32768, fp16; K/V cache + q/o once"
    add("pytorch.ex4.decode_gflop", dec.flops / 1e9, "GFLOP", 2, "ledger.ops.attention_decode", cD)
    add("pytorch.ex4.decode_mb", dec.bytes / 1e6, "MB", 0, "ledger.ops.attention_decode", cD)
    add("pytorch.ex4.decode_ai", dec.intensity, "FLOP/B", 2, "Cost.intensity", cD)

    add("pytorch.e2.prefill_mac_per_byte", pf.intensity / FLOP_MAC, "MAC/B", 0, "Cost.intensity",
        cA + "; flash-style; multiply-adds per byte = AI / 2")
    add("pytorch.e2.decode_mac_per_byte", dec.intensity / FLOP_MAC, "MAC/B", 1, "Cost.intensity",
        cD + "; multiply-adds per byte = AI / 2")

    # -- optimizer, all-reduce (section 1.1) -------------------------------------------
    a7 = adamw(ADAMW_EXAMPLE_PARAMS)
    cO = "bf16 gradients, fp32 param/m/v; 15 FLOP/param"
    add("pytorch.adamw.bytes_per_param", a7.bytes / ADAMW_EXAMPLE_PARAMS, "B", 0, "ledger.ops.adamw", cO)
    add("pytorch.adamw.ai", a7.intensity, "FLOP/B", 1, "Cost.intensity", cO)
    add("pytorch.adamw.ai_2", a7.intensity, "FLOP/B", 2, "Cost.intensity", cO)
    add("pytorch.adamw.flops_per_param", ADAMW_FLOPS_PER_PARAM, "FLOP", 0, "ledger.ops.ADAMW_FLOPS_PER_PARAM", cO)
    add("pytorch.adamw.gb_7b", a7.bytes / 1e9, "GB", 0, "ledger.ops.adamw", cO + "; 7e9 parameters")
    ar = ring_allreduce(ALLREDUCE_PARAMS, 8)
    add("pytorch.allreduce.gb_8b", ar.bytes / 1e9, "GB", 2, "ledger.ops.ring_allreduce",
        f"{ALLREDUCE_PARAMS / 1e9:g}e9 bf16 gradients, ring over 8 ranks: 2(N-1)/N = 1.75")
    add("pytorch.allreduce.gb_8b_int", ar.bytes / 1e9, "GB", 0, "ledger.ops.ring_allreduce",
        f"{ALLREDUCE_PARAMS / 1e9:g}e9 bf16 gradients, ring over 8 ranks")
    add("pytorch.allreduce.factor_8", 2 * 7 / 8, "x", 2, "ledger.ops.ring_allreduce", "2(N-1)/N at N = 8")
    add("pytorch.add.ai", elementwise_add(N_ELEM).intensity, "FLOP/B", 2, "ledger.ops.elementwise_add",
        "fp16: 1 FLOP per 3 x 2 bytes = 1/6, independent of size")

    # -- fusion table (section 4.2) -----------------------------------------------------
    add("pytorch.fusion.attn_ratio", pa.bytes / pf.bytes, "x", 0, "ledger.ops.attention_prefill", cA)

    # -- exercises ------------------------------------------------------------------------
    add("pytorch.e3.balance_spec", spec.balance, "FLOP/B", 1, "Machine.balance",
        f"{spec.peak_flops / 1e12:g} TFLOP/s / {spec.bandwidth / 1e9:g} GB/s")
    e5f, e5t = layernorm(4096, 4096, passes=1), layernorm(4096, 4096, passes=3)
    c5 = "LayerNorm 4096 x 4096 fp16, 8 FLOP/elem; " + C
    add("pytorch.e5.fused_mb", e5f.bytes / 1e6, "MB", 1, "ledger.ops.layernorm", c5)
    add("pytorch.e5.three_pass_mb", e5t.bytes / 1e6, "MB", 1, "ledger.ops.layernorm", c5)
    add("pytorch.e5.ai_fused", e5f.intensity, "FLOP/B", 1, "Cost.intensity", c5)
    add("pytorch.e5.ai_three_pass", e5t.intensity, "FLOP/B", 1, "Cost.intensity", c5)
    add("pytorch.e5.t_fused_us", e5f.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", c5)
    add("pytorch.e5.t_three_pass_us", e5t.lower_bound(cal) * 1e6, "µs", 1, "Cost.lower_bound", c5)
    add("pytorch.e5.ai_fused_h512", layernorm(4096, 512).intensity, "FLOP/B", 1, "Cost.intensity",
        "H = 512: AI does not depend on the size")
    e6 = gemm(2048, 2048, 2048)
    c6 = f"2048^3 fp16 on {h100.name} ({h100.peak_flops / 1e12:g} TFLOP/s / {h100.bandwidth / 1e12:.1f} TB/s)"
    out.append(fig("pytorch.e6.flop_sci", float(f"{e6.flops:.3e}"), "FLOP", source="ledger.ops.gemm",
                   conditions=c6, text=f"{e6.flops / 1e10:.3f}e10"))
    add("pytorch.e6.mb", e6.bytes / 1e6, "MB", 2, "ledger.ops.gemm", c6)
    add("pytorch.e6.ai", e6.intensity, "FLOP/B", 1, "Cost.intensity", c6)
    out.append(fig("pytorch.e6.bound", judge(e6, h100).bound, "", source="ledger.cost.judge", conditions=c6))
    add("pytorch.e6.ridge_edge", gemm_ridge_edge(h100), "", 0, "ledger.ops.gemm_ridge_edge",
        "N = 3 b balance / 2 with b = 2 and balance = 1000/3")
    for s in (8192, 16384):
        na = attention_prefill(seq=s)
        fl = attention_prefill(seq=s, materialize_scores=False)
        c7 = f"B=1, H=32, d=128, S={s}, fp16; scores 6 passes"
        add(f"pytorch.e7.s{s}.naive_gb", na.bytes / 1e9, "GB", 2, "ledger.ops.attention_prefill", c7)
        add(f"pytorch.e7.s{s}.scores_gb", (na.bytes - fl.bytes) / 1e9, "GB", 2, "ledger.ops.attention_prefill", c7)
        add(f"pytorch.e7.s{s}.flash_mb", fl.bytes / 1e6, "MB", 1, "ledger.ops.attention_prefill", c7)
        add(f"pytorch.e7.s{s}.ratio", na.bytes / fl.bytes, "x", 0, "ledger.ops.attention_prefill", c7)
    add("pytorch.e8.ratio_softmax_pv_fused", attention_io_ratio(4096, score_passes=2), "x", 0,
        "ledger.ops.attention_io_ratio", "S=4096, d=128: scores written once and read once (2 passes)")
    table = op_table()
    ais = [c.intensity for c in table if c.flops > 0]
    cT = "the default table of ledger.ops.op_table (all-reduce, 0 FLOP, left out)"
    add("pytorch.e11.ai_min", min(ais), "FLOP/B", 2, "ledger.ops.op_table", cT)
    add("pytorch.e11.ai_max", max(ais), "FLOP/B", 0, "ledger.ops.op_table", cT)
    add("pytorch.e11.flips_h100", len(flips(cal, h100)), "", 0, "ledger.ops.flips",
        f"default table, {cal.name} vs {h100.name}")
    g512 = gemm(512, 512, 512)
    for key, mach in (("cal", cal), ("h100", h100), ("spec", spec)):
        out.append(fig(f"pytorch.e11.gemm512.{key}", judge(g512, mach).bound, "", source="ledger.cost.judge",
                       conditions=f"GEMM 512^3 fp16 on {mach.name} (balance {mach.balance:.1f})"))
    add("pytorch.e11.add_ai_fp16", 1 / (3 * dtype_bytes("fp16")), "FLOP/B", 2, "ledger.ops.elementwise_add",
        "1/(3b), b = 2")
    si, ro = silu(N_ELEM), rope_rotation()
    c13 = "N = 1 x 32 x 4096 x 128 = 16.777M fp16 elements; " + C
    add("pytorch.e13.n_melem", N_ELEM / 1e6, "M", 3, "ledger.ops.N_ELEM", c13)
    for key, c, fpe, fn in (("silu", si, SILU_FLOPS_PER_ELEM, "silu"),
                            ("rope", ro, ROPE_FLOPS_PER_ELEM, "rope_rotation")):
        v = judge(c, cal)
        add(f"pytorch.e13.{key}.mflop", c.flops / 1e6, "MFLOP", 1, f"ledger.ops.{fn}", c13)
        add(f"pytorch.e13.{key}.mb", c.bytes / 1e6, "MB", 2, "Cost.bytes", c13)
        add(f"pytorch.e13.{key}.ai", v.intensity, "FLOP/B", 2, "Cost.intensity", c13)
        add(f"pytorch.e13.{key}.t_us", v.lower_bound * 1e6, "µs", 1, "Cost.lower_bound", c13)
        add(f"pytorch.e13.{key}.flop_per_elem", fpe, "FLOP", 0, "ledger.ops", c13)
        out.append(fig(f"pytorch.e13.{key}.bound", v.bound, "", source="ledger.cost.judge", conditions=c13))
    out.extend(_cited())
    return out


def _cited() -> list:
    """Numbers the chapter cites from papers and documentation (not computed here)."""
    from ledger.figures import fig

    fa3 = "https://arxiv.org/abs/2407.08608"
    fa = "https://arxiv.org/abs/2205.14135"
    prof = ("https://docs.pytorch.org/docs/2.14/user_guide/torch_compiler/"
            "torch.compiler_inductor_profiling.html")
    cbs = "https://arxiv.org/abs/2607.04454"
    rows = [
        ("pytorch.cite.fa2_h100_util", 35, "%", fa3, "FlashAttention-3 abstract: FlashAttention-2 on H100"),
        ("pytorch.cite.fa3_fp16_tflops", 740, "TFLOP/s", fa3, "FlashAttention-3 abstract, FP16, as reported"),
        ("pytorch.cite.fa3_fp16_util", 75, "%", fa3, "FlashAttention-3 abstract, FP16 utilisation"),
        ("pytorch.cite.fa3_fp8_pflops", 1.2, "PFLOP/s", fa3, "FlashAttention-3 abstract, FP8 (close to)"),
        ("pytorch.cite.fa_bert_speedup", 15, "%", fa, "FlashAttention: BERT-large training speedup"),
        ("pytorch.cite.fa_gpt2_speedup", 3, "x", fa, "FlashAttention: GPT-2 training speedup"),
        ("pytorch.cite.fa_lra_speedup", 2.4, "x", fa, "FlashAttention: long-range arena speedup"),
        ("pytorch.cite.densenet_gpu_busy", 32.69, "%", prof, "densenet121, small batch, 'Percent of time when GPU is busy'"),
        ("pytorch.cite.cbs_kernels", 22, "", cbs, "Correct but Slow: Triton/TileLang kernels studied on A100 and GH200"),
        ("pytorch.cite.cbs_layernorm_slowdown", 300, "x", cbs, "an idiomatic TileLang LayerNorm, more than 300x slower"),
    ]
    return [fig(k, v, u, source=s, conditions=c + " (cited, not computed)") for k, v, u, s, c in rows]


# ------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------
def _print_table(machine: Machine) -> list[Verdict]:
    rows = judge_table(machine)
    print(f"machine: {machine.summary()}")
    print(f"{'operator':<42s} {'FLOPs':>12s} {'bytes':>11s} {'FLOP/B':>9s} {'lower bound':>11s}  bound")
    for v in rows:
        print(v.row())
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.ops", description="Chapter 02 operator ledger.")
    p.add_argument("--machine", default=None, help="profile name (python -m ledger machines)")
    p.add_argument("--compare", default=None, help="a second profile: list the operators whose bound flips")
    p.add_argument("--gemm-sweep", action="store_true", help="square fp16 GEMM AI by edge, and the ridge edge")
    args = p.parse_args(argv)
    try:
        m = get_machine(args.machine)
        _print_table(m)
        if args.compare:
            other = get_machine(args.compare)
            print()
            _print_table(other)
            fl = flips(m, other)
            print(f"\nbound flips between {m.name} and {other.name}: {', '.join(fl) if fl else 'none'}")
        if args.gemm_sweep:
            print(f"\nsquare fp16 GEMM on {m.name} (ridge edge N = {gemm_ridge_edge(m):.0f})")
            for e in (256, 512, 1024, 2048, 4096, 8192):
                v = judge(gemm(e, e, e), m)
                print(f"  N={e:<5d} AI={v.intensity:8.1f}  {fmt_time(v.lower_bound):>11s}  {v.bound}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
