"""Grading spec of the ``pytorch`` lab (formerly lab 02; the chapter "从 PyTorch 到 kernel", E1-E13).

Every reference answer is a function computing it at grading time: from ``ledger``
(operator costs, machines, the step budget) or, for E9, from introspecting the
installed ``tilelang``.  Nothing here is a typed-in expected number.  Points and
grade_ids come from this file only, never from a submission's metadata.

Answer forms (``ANSWER[grade_id] = ...`` in the notebook) are described by each
part's ``stub``; the release shows the stub, the instructor notebook the solution.
Every reference takes the student's variant ``v`` (:data:`PARAMS`): the sizes and dtypes
of that student's questions; ``v`` holds the book's numbers for the common version.
"""
from __future__ import annotations

import ast
import functools
import inspect
import math
import re
import typing

from autograder.parts import LabSpec, Param, Part

BOUNDS = ("compute-bound", "memory-bound")
CLASSES = ("compute-bound", "memory-bound", "transfer")
PHASES = ("forward", "backward", "optimizer", "communication")
SEQ_LENS = (512, 4096, 32768, 131072)
MACHINES = ("h200-calibrated", "h200-spec", "h100-spec")


# ----------------------------------------------------------------------------- ledger access
def _ops():
    from ledger import ops

    return ops


def _machine(name: str):
    from ledger.machines import get_machine

    return get_machine(name)


def _judge(cost, machine: str):
    from ledger.cost import judge

    return judge(cost, machine)


@functools.lru_cache(maxsize=None)
def op_rows() -> dict:
    """The operators E3 and E11 compare across machines, keyed by the ids students use."""
    o = _ops()
    n = o.N_ELEM
    return {
        "add": o.elementwise_add(n),
        "chain2_eager": o.elementwise_chain(n, 2, fused=False),
        "chain2_fused": o.elementwise_chain(n, 2, fused=True),
        "layernorm_fused": o.layernorm(8192, 4096, passes=1),
        "layernorm_3pass": o.layernorm(8192, 4096, passes=3),
        "gemm_4096": o.gemm(4096, 4096, 4096),
        "gemm_1024": o.gemm(1024, 1024, 1024),
        "gemm_512": o.gemm(512, 512, 512),
        "attn_prefill_scores": o.attention_prefill(materialize_scores=True),
        "attn_prefill_flash": o.attention_prefill(materialize_scores=False),
        "attn_decode": o.attention_decode(kv_len=32768),
        "adamw": o.adamw(o.ADAMW_EXAMPLE_PARAMS),
        "allreduce": o.ring_allreduce(o.ALLREDUCE_PARAMS, 8),
    }


OP_IDS = ("add", "chain2_eager", "chain2_fused", "layernorm_fused", "layernorm_3pass", "gemm_4096",
          "gemm_1024", "gemm_512", "attn_prefill_scores", "attn_prefill_flash", "attn_decode",
          "adamw", "allreduce")


@functools.lru_cache(maxsize=None)
def _flips(a: str, b: str) -> list[str]:
    rows = op_rows()
    return [k for k, c in rows.items() if _judge(c, a).bound != _judge(c, b).bound]


@functools.lru_cache(maxsize=None)
def step_phases(seq_len: int = 4096) -> dict:
    """{phase: {"flops", "bytes", "seconds", "share"}} of the 8B training step (ledger.step_budget)."""
    from ledger.step_budget import step_budget

    budget = step_budget("h200-calibrated", seq=seq_len)
    names = {"forward": "forward", "backward": "backward", "optimizer": "optimizer", "communication": "comm"}
    out = {}
    for ph, stage_name in names.items():
        st = budget.stage(stage_name)
        out[ph] = {"flops": st.cost.flops, "bytes": st.cost.bytes, "seconds": st.time, "share": st.share}
    return out


def _phase_class(ph: dict) -> str:
    from ledger.cost import Cost

    if ph["flops"] == 0:
        return "transfer"
    return _judge(Cost(ph["flops"], ph["bytes"]), "h200-calibrated").bound


# ----------------------------------------------------------------------------- tilelang (E9)
@functools.lru_cache(maxsize=None)
def _compile_api() -> tuple[inspect.Signature, str]:
    import tilelang

    return inspect.signature(tilelang.compile), inspect.getdoc(tilelang.compile) or ""


def _doc_section(doc: str, name: str) -> str:
    """The numpydoc entry of parameter ``name``: its header line and indented body."""
    lines = doc.splitlines()
    for i, ln in enumerate(lines):
        if re.match(rf"^{name}\s*:", ln):
            body = [ln]
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith((" ", "\t")):
                    break
                body.append(nxt)
            return "\n".join(body)
    raise LookupError(f"tilelang.compile's docstring has no entry for {name!r}")


def e09_backends() -> list[str]:
    """The string literals of ``execution_backend``'s annotation (a string or a typing object)."""
    sig, _ = _compile_api()
    ann = sig.parameters["execution_backend"].annotation
    if not isinstance(ann, str):
        vals = [a for arg in typing.get_args(ann) for a in (typing.get_args(arg) or (arg,))]
        return [v for v in vals if isinstance(v, str)]
    return [a or b for a, b in re.findall(r"'([^']+)'|\"([^\"]+)\"", ann)]


def e09_target_forms() -> list[str]:
    _, doc = _compile_api()
    head = _doc_section(doc, "target").splitlines()[0].split(":", 1)[1]
    head = head.replace(", optional", "")
    forms = [t.strip() for t in re.split(r",|\bor\b", head) if t.strip()]
    return [f.split(".")[-1] for f in forms]


def e09_target_example() -> dict:
    _, doc = _compile_api()
    m = re.search(r"\{[^{}]*\}", _doc_section(doc, "target"))
    if not m:
        raise LookupError("no dict example in the docstring of tilelang.compile's target")
    return ast.literal_eval(m.group(0))


def e09_target_env() -> str:
    _, doc = _compile_api()
    m = re.search(r"reads from\s+(\w+)\s+environment", _doc_section(doc, "target"), re.S)
    if not m:
        raise LookupError("the target entry names no environment variable")
    return m.group(1)


# ----------------------------------------------------------------------------- references
def _ridge_probe(balance: float, elem_bytes: float) -> dict:
    """Side N of a square GEMM whose ledger AI equals ``balance`` (bisection on ledger.ops.gemm)."""
    from ledger.cost import DTYPE_BYTES

    dtype = next(k for k, v in DTYPE_BYTES.items() if v == elem_bytes)
    o = _ops()
    lo, hi = 1.0, 1.0
    while o.gemm_square_intensity(math.ceil(hi), dtype) < balance:
        hi *= 2
    lo = hi / 2
    # AI is linear in N; interpolate between two integer sides for the exact crossing
    a1, a2 = o.gemm_square_intensity(int(lo), dtype), o.gemm_square_intensity(int(hi), dtype)
    return {"n": lo + (balance - a1) * (hi - lo) / (a2 - a1)}


def _attn(seq: int, **kw):
    return _ops().attention_prefill(1, 32, seq, 128, "fp16", **kw)


def _ratio(seq: int) -> float:
    return _attn(seq).bytes / _attn(seq, materialize_scores=False).bytes


def _growth(r1: float, r2: float) -> str:
    """Classify how the ratio grows when S doubles (exponent of the power law)."""
    e = math.log2((r2 - 1) / (r1 - 1)) if r1 > 1 else 0.0
    return "constant" if e < 0.5 else "linear" if e < 1.5 else "quadratic"


def _softmax_flops() -> float:
    """FLOPs per score the ledger charges beyond the two matrix products (2 x 2 S^2 d per head)."""
    from ledger.cost import FLOP_MAC

    s, d = 1024, 64
    c = _ops().attention_prefill(1, 1, s, d, "fp16", materialize_scores=False)
    return (c.flops - 2 * FLOP_MAC * s * s * d) / (s * s)


def _e12_table() -> dict:
    return {s: {ph: step_phases(s)[ph]["share"] * 100 for ph in PHASES} for s in SEQ_LENS}


def _e12_fastest() -> str:
    t = _e12_table()
    return max(PHASES, key=lambda ph: max(t[s][ph] for s in SEQ_LENS) - min(t[s][ph] for s in SEQ_LENS))


def _e12_constant() -> list[str]:
    a, b = step_phases(SEQ_LENS[0]), step_phases(SEQ_LENS[-1])
    return [ph for ph in PHASES if abs(b[ph]["seconds"] - a[ph]["seconds"]) <= 0.01 * a[ph]["seconds"]]


def _silu_probe(n, dtype):
    c = _ops().silu(n, dtype)
    return {"flops": c.flops, "bytes": c.bytes}


def _rope_probe(b, h, s, d, dtype):
    c = _ops().rope_rotation(b, h, s, d, dtype)
    return {"flops": c.flops, "bytes": c.bytes}


SILU_PROBES = ((4096 * 4096, "fp16"), (1000, "fp32"), (4096 * 14336, "bf16"), (7, "fp8"))
ROPE_PROBES = ((1, 32, 4096, 128, "fp16"), (2, 8, 1024, 64, "fp32"), (4, 16, 333, 96, "bf16"))
RIDGE_PROBES = ((1000 / 3.0, 2), (162.0, 2), (206.1, 1), (50.0, 4))


def _q(gid, ex, pts, prompt, ref, unit, stub_unit=None, **kw):
    return Part(gid, ex, pts, "quantity", prompt, ref, unit=unit,
                stub=f'ANSWER["{gid}"] = {{"value": None, "unit": "{stub_unit or unit}"}}', **kw)


def _m(gid, ex, pts, prompt):
    return Part(gid, ex, pts, "manual", prompt)


H200 = "h200-calibrated"


def _parts() -> tuple[Part, ...]:
    o = _ops
    return (
        # E1 ------------------------------------------------------------------
        Part("e01_a", "E1", 2, "table", "训练一步四个阶段各属哪一类（compute-bound / memory-bound / transfer）",
             lambda v: {ph: _phase_class(step_phases()[ph]) for ph in PHASES}, options=CLASSES,
             stub='ANSWER["e01_a"] = {"forward": None, "backward": None, "optimizer": None, "communication": None}'),
        _q("e01_b", "E1", 1, "AdamW 每个参数搬运的字节数（{{E1.grad}} 梯度、{{E1.state}} 参数与两个动量）",
           lambda v: o().adamw(1, v["E1.grad"], v["E1.state"]).bytes, "B/param"),
        _m("e01_c", "E1", 2, "每个阶段一句理由；优化器字节数出自哪些张量"),
        # E2 ------------------------------------------------------------------
        _q("e02_a", "E2", 1, "flash 式 prefill attention 的算术强度（S={{E2.S}}）",
           lambda v: _attn(v["E2.S"], materialize_scores=False).intensity, "FLOP/B"),
        _q("e02_b", "E2", 1, "decode attention 的算术强度（KV 长度 {{E2.L}}，{{E2.dtype}}）",
           lambda v: o().attention_decode(1, 32, v["E2.L"], 128, v["E2.dtype"]).intensity, "FLOP/B"),
        _m("e02_c", "E2", 2, "用「每读一个字节做几次乘加」解释两段判据为何相反"),
        # E3 ------------------------------------------------------------------
        _q("e03_a", "E3", 1, "H200 按厂商规格算的平衡点", lambda v: _machine("h200-spec").balance, "FLOP/B"),
        _q("e03_b", "E3", 1, "H200 按标定值算的平衡点", lambda v: _machine(H200).balance, "FLOP/B"),
        Part("e03_c", "E3", 2, "set", "换用规格平衡点后判据翻转的算子（从给定 id 中选）",
             lambda v: _flips(H200, "h200-spec"), options=OP_IDS,
             stub='ANSWER["e03_c"] = None  # 一个集合，如 {"add", "gemm_4096"}；一个都没有就写 set()'),
        _m("e03_d", "E3", 2, "两条「规格 ≠ 实测」的事实及其测量条件"),
        # E4 ------------------------------------------------------------------
        Part("e04_a", "E4", 1, "number", "k={{E4.k}} 的逐元素链，融合前后访存之比",
             lambda v: _chain_ratio(v["E4.k"]), stub='ANSWER["e04_a"] = None'),
        Part("e04_b", "E4", 1, "number", "该链只占模型访存 {{E4.pct}}% 时，端到端加速比的上限",
             lambda v: _amdahl(v["E4.pct"] / 100, _chain_ratio(v["E4.k"])),
             rel_tol=1e-4, stub='ANSWER["e04_b"] = None',
             hint="按 Amdahl 定律：只有这一部分的访存变少；答案与 1 很接近，请保留足够多的有效数字"),
        _m("e04_c", "E4", 2, "链本身的收益与端到端收益各由什么决定；给一个反例场景"),
        # E5 ------------------------------------------------------------------
        _q("e05_a", "E5", 1, "融合 LayerNorm 的访存量", lambda v: _ln(v).bytes / 1e6, "MB"),
        _q("e05_b", "E5", 1, "融合 LayerNorm 的算术强度", lambda v: _ln(v).intensity, "FLOP/B"),
        _q("e05_c", "E5", 1, "三趟拆分的访存量", lambda v: _ln(v, 3).bytes / 1e6, "MB"),
        _q("e05_d", "E5", 1, "三趟拆分的算术强度", lambda v: _ln(v, 3).intensity, "FLOP/B"),
        _q("e05_e", "E5", 1, "融合版在 H200 标定参数下的时间下界",
           lambda v: _judge(_ln(v), H200).lower_bound * 1e6, "us"),
        _q("e05_f", "E5", 1, "三趟版在 H200 标定参数下的时间下界",
           lambda v: _judge(_ln(v, 3), H200).lower_bound * 1e6, "us"),
        Part("e05_g", "E5", 1, "choice", "H 改成 512 后，融合版的判据",
             lambda v: _judge(o().layernorm(v["E5.M"], 512), H200).bound, options=BOUNDS,
             stub='ANSWER["e05_g"] = None  # "compute-bound" 或 "memory-bound"'),
        _m("e05_h", "E5", 1, "为什么 H 变了结论不变"),
        # E6 ------------------------------------------------------------------
        _q("e06_a", "E6", 1, "{{E6.N}}³ fp16 GEMM 的算术强度", lambda v: o().gemm_square_intensity(v["E6.N"]),
           "FLOP/B"),
        Part("e06_b", "E6", 1, "choice", "它在 H100 规格下的判据",
             lambda v: _judge(o().gemm(v["E6.N"], v["E6.N"], v["E6.N"]), "h100-spec").bound, options=BOUNDS,
             stub='ANSWER["e06_b"] = None'),
        Part("e06_c", "E6", 3, "function", "函数 ridge_edge(balance, elem_bytes) -> {\"n\": 边长}",
             _ridge_fn_refs, probes=RIDGE_PROBES, fields=("n",), rel_tol=0.005,
             stub='def ridge_edge(balance, elem_bytes):\n    ...  # 返回 {"n": 边长}\n\nANSWER["e06_c"] = ridge_edge',
             hint="先写出方阵 GEMM 的算术强度关于 N 的表达式"),
        # E7 ------------------------------------------------------------------
        _q("e07_a", "E7", 1, "S={{E7.S}}、分数落显存版本的总访存量", lambda v: _attn(v["E7.S"]).bytes / 1e9, "GB"),
        _q("e07_b", "E7", 1, "S={{E7.S}}、flash 式版本的访存量",
           lambda v: _attn(v["E7.S"], materialize_scores=False).bytes / 1e6, "MB"),
        Part("e07_c", "E7", 1, "number", "两者之比（S={{E7.S}}）", lambda v: _ratio(v["E7.S"]),
             stub='ANSWER["e07_c"] = None'),
        Part("e07_d", "E7", 1, "number", "两者之比（S={{E7.S2}}）", lambda v: _ratio(v["E7.S2"]),
             stub='ANSWER["e07_d"] = None'),
        Part("e07_e", "E7", 1, "choice", "S 翻倍时这个比值大致怎样增长",
             lambda v: _growth(_ratio(v["E7.S"]), _ratio(v["E7.S2"])), options=("constant", "linear", "quadratic"),
             stub='ANSWER["e07_e"] = None  # "constant" / "linear" / "quadratic"'),
        _m("e07_f", "E7", 1, "为什么叫 O(S²) 问题"),
        # E8 ------------------------------------------------------------------
        Part("e08_a", "E8", 1, "number", "ledger 的 attention_prefill 给 softmax 的每个分数记几个 FLOP",
             lambda v: _softmax_flops(), rel_tol=0, abs_tol=1e-9, stub='ANSWER["e08_a"] = None'),
        _q("e08_b", "E8", 2, "缩放、mask、softmax 与 PV 合成一个 kernel、分数仍落显存时的访存量（S={{E8.S}}）",
           lambda v: _attn(v["E8.S"], score_passes=2).bytes / 1e9, "GB"),
        _m("e08_c", "E8", 2, "FLOPs 式里的两项各代表什么"),
        # E9 ------------------------------------------------------------------
        Part("e09_a", "E9", 1, "set", "execution_backend 的全部合法取值", lambda v: e09_backends(),
             stub='ANSWER["e09_a"] = None  # 一个集合，如 {"a", "b"}'),
        Part("e09_b", "E9", 1, "set", "target 接受的输入形式（类型名）", lambda v: e09_target_forms(),
             stub='ANSWER["e09_b"] = None  # 类型名的集合，如 {"int", "float"}'),
        Part("e09_c", "E9", 1, "mapping", "docstring 里 target 的字典示例", lambda v: e09_target_example(),
             stub='ANSWER["e09_c"] = None  # 一个字典'),
        Part("e09_d", "E9", 1, "choice", "target 为 None 时读取的环境变量名", lambda v: e09_target_env(),
             stub='ANSWER["e09_d"] = None'),
        _m("e09_e", "E9", 2, "这个签名说明 TileLang 位于栈的哪一层，依据是什么"),
        # E10 -----------------------------------------------------------------
        _m("e10_a", "E10", 2, "key 为何须是 str 而非 int"),
        _m("e10_b", "E10", 2, "磁盘缓存的形状与「key 不能复用」的关系"),
        _m("e10_c", "E10", 2, "被追踪的 forward 为何不能构造 kernel"),
        # E11 -----------------------------------------------------------------
        Part("e11_a", "E11", 2, "set", "H200 标定与 H100 规格之间判据翻转的算子",
             lambda v: _flips(H200, "h100-spec"), options=OP_IDS,
             stub='ANSWER["e11_a"] = None  # 一个集合，如 {"a", "b"}'),
        Part("e11_b", "E11", 1, "table", "gemm_512 在三台机器上的判据",
             lambda v: {m: _judge(op_rows()["gemm_512"], m).bound for m in MACHINES}, options=BOUNDS,
             stub='ANSWER["e11_b"] = {"h200-calibrated": None, "h200-spec": None, "h100-spec": None}'),
        _q("e11_c", "E11", 1, "{{E11.dtype}} 逐元素加的算术强度",
           lambda v: o().elementwise_add(1 << 20, v["E11.dtype"]).intensity, "FLOP/B"),
        _m("e11_d", "E11", 2, "为什么逐元素加在任何机器上都不会变成 compute-bound"),
        # E12 -----------------------------------------------------------------
        Part("e12_a", "E12", 3, "table", "四个序列长度下四个阶段的占比（%）", lambda v: _e12_table(),
             rel_tol=0.01, abs_tol=0.15,
             stub='ANSWER["e12_a"] = {s: {"forward": None, "backward": None, "optimizer": None, '
                  '"communication": None} for s in (512, 4096, 32768, 131072)}'),
        Part("e12_b", "E12", 1, "choice", "占比变化最大的阶段", lambda v: _e12_fastest(), options=PHASES,
             stub='ANSWER["e12_b"] = None'),
        Part("e12_c", "E12", 1, "set", "自身耗时基本不受序列长度影响的阶段", lambda v: _e12_constant(),
             options=PHASES, stub='ANSWER["e12_c"] = None  # 一个集合，如 {"a", "b"}'),
        _m("e12_d", "E12", 2, "解释占比变化最快的原因"),
        # E13 -----------------------------------------------------------------
        Part("e13_a", "E13", 3, "function", "silu_cost(n, dtype) -> {\"flops\", \"bytes\"}",
             lambda v: [_silu_probe(*a) for a in SILU_PROBES], probes=SILU_PROBES, fields=("flops", "bytes"),
             rel_tol=1e-6, stub='def silu_cost(n, dtype="fp16"):\n    ...  # 返回 {"flops": ..., "bytes": ...}\n\n'
                                'ANSWER["e13_a"] = silu_cost',
             hint="sigmoid 按账本口径记几个 FLOP？dtype 决定每元素字节数"),
        Part("e13_b", "E13", 3, "function", "rope_cost(batch, heads, seq, head_dim, dtype) -> {\"flops\", \"bytes\"}",
             lambda v: [_rope_probe(*a) for a in ROPE_PROBES], probes=ROPE_PROBES, fields=("flops", "bytes"),
             rel_tol=1e-6, stub='def rope_cost(batch, heads, seq, head_dim, dtype="fp16"):\n    ...\n\n'
                                'ANSWER["e13_b"] = rope_cost',
             hint="一对元素要几次乘、几次加减？cos/sin 表按题意不计"),
        _q("e13_c", "E13", 1, "SiLU（n={{E13.side}}²，{{E13.dtype}}）在 H200 标定参数下的时间下界",
           lambda v: _judge(o().silu(v["E13.side"] ** 2, v["E13.dtype"]), H200).lower_bound * 1e6, "us"),
        Part("e13_d", "E13", 1, "choice", "RoPE 旋转（1×32×4096×128，fp16）在 H200 标定参数下的判据",
             lambda v: _judge(o().rope_rotation(1, 32, 4096, 128), H200).bound, options=BOUNDS,
             stub='ANSWER["e13_d"] = None'),
        _m("e13_e", "E13", 2, "与残差相加融合后访存量怎样变化"),
    )


def _chain_ratio(k: int) -> float:
    o = _ops()
    return o.elementwise_chain(1 << 24, k, fused=False).bytes / o.elementwise_chain(1 << 24, k, fused=True).bytes


def _amdahl(share: float, speedup: float) -> float:
    return 1.0 / ((1 - share) + share / speedup)


def _ln(v: dict, passes: int = 1):
    return _ops().layernorm(v["E5.M"], v["E5.H"], passes=passes)


# Per-student parameters: the book's number is the default (the instructor notebook, nbgrader
# and `grade --common` use it); every student gets a draw from the choices, none of which is
# the book's, so the published answers are nobody's answers.  E3, E9, E11 a/b and E12 stay
# fixed: their answers are facts about given machines, the installed tilelang and the step
# budget's four sequence lengths, not sums over sizes.
PARAMS = (
    Param("E1.grad", "bf16", ("fp32",), "梯度的数据类型"),
    Param("E1.state", "fp32", ("bf16", "fp32"), "参数与动量的数据类型"),
    Param("E2.S", 4096, (1024, 2048, 8192, 16384), "prefill 的序列长度"),
    Param("E2.L", 32768, (8192, 16384, 65536, 131072), "decode 的 KV 长度"),
    Param("E2.dtype", "fp16", ("fp8", "fp32"), "decode 的数据类型（KV cache 与 q、o）"),
    Param("E4.k", 4, (3, 5, 6, 7, 8), "链的长度"),
    Param("E4.pct", 1, (2, 3, 5, 10), "链占模型访存的百分比"),
    Param("E5.M", 4096, (1024, 2048, 8192, 16384), "行数 M"),
    Param("E5.H", 4096, (1536, 3072, 5120, 6144), "列数 H"),  # never M H = 4096², the book's size
    Param("E6.N", 2048, (256, 512, 1024, 4096, 8192), "GEMM 边长"),
    Param("E7.S", 8192, (1024, 2048, 4096, 16384, 32768), "序列长度 S"),
    Param("E8.S", 4096, (1024, 2048, 8192, 16384), "序列长度 S"),
    Param("E11.dtype", "fp16", ("fp32", "fp8"), "逐元素加的数据类型"),
    Param("E13.side", 4096, (1024, 2048, 8192, 16384), "SiLU 的 n 的平方根"),
    Param("E13.dtype", "fp16", ("fp32", "fp8"), "SiLU 的数据类型"),
)


def _derive(v: dict) -> dict:
    return {"E7.S2": 2 * v["E7.S"]}


def _with_options(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """Choice stubs list their options, so the released notebook shows what may be written."""
    import dataclasses

    out = []
    for p in parts:
        if p.kind == "choice" and p.options and "#" not in p.stub:
            p = dataclasses.replace(p, stub=p.stub + "  # " + " / ".join(f'"{o}"' for o in p.options))
        out.append(p)
    return tuple(out)


def _ridge_fn_refs(v: dict | None = None) -> list[dict]:
    return [_ridge_probe(*a) for a in RIDGE_PROBES]


SPEC = LabSpec(name="pytorch", title="实验 · 从 PyTorch 到 kernel：给算子记账（E1–E13）",
               parts=_with_options(_parts()), params=PARAMS, derive=_derive,
               cell_timeout=10.0, notebook_timeout=60.0, memory_mb=2048, scratch_mb=64)
