"""Grading spec of the performance-model lab (chapter 5).

Every part is analytic: the chapter's exercises on the design case (QK-norm + RoPE + FP8
quantisation), roofs, fusion and split, tile budgets and the Ascend pipeline model, plus a
design decision (E7) graded against the ledger's model: which plan wins, and the bytes it
predicts.  Each student has their own numbers (:data:`PARAMS`; the defaults are the
book's), and references are computed by ``ledger`` from them at grading time.
"""
from __future__ import annotations

from autograder.parts import LabSpec, Param, Part

H200 = "h200-calibrated"
ROOFS = ("tensor_core.fp16", "cuda_core.fp32", "tensor_core.fp8")
KV_HEADS = 8  # the case's kv heads (the q heads are drawn)
SPLIT_K, SPLIT_KV = 8, 64  # E7's two split options (their names are the answers' options)
BOUNDS = ("compute-bound", "memory-bound")
DESIGNS = ("A", "B", "C")


def _cs():
    from ledger import case_study

    return case_study


def _dec():
    from ledger import decisions

    return decisions


def _q(gid, ex, pts, prompt, ref, unit, **kw):
    return Part(gid, ex, pts, "quantity", prompt, ref, unit=unit,
                stub=f'ANSWER["{gid}"] = {{"value": None, "unit": "{unit}"}}', **kw)


def _n(gid, ex, pts, prompt, ref, **kw):
    return Part(gid, ex, pts, "number", prompt, ref, stub=f'ANSWER["{gid}"] = None', **kw)


def _m(gid, ex, pts, prompt):
    return Part(gid, ex, pts, "manual", prompt)


def _case(v: dict):
    """The student's case: tokens, q heads and head_dim drawn (8 kv heads, the dtypes of the book)."""
    return _cs().CaseSpec(tokens=v["E1.T"], q_heads=v["E1.q_heads"], kv_heads=KV_HEADS, head_dim=v["E1.D"])


def _case_bound(v: dict) -> str:
    from ledger.cost import judge

    return judge(_cs().case_cost(_case(v)), H200, roof="cuda_core.fp32").bound


def _roofs(v: dict) -> dict:
    from ledger.machines import get_machine

    m = get_machine(v["E2.machine"])
    return {u: m.balance_for(u) for u in ROOFS}


def _tile_table(v: dict) -> dict:
    from ledger.tiles import tile_decision

    out = {}
    for key, (bm, bn, bk, st) in {"128x256x64_s3": (128, 256, 64, 3), "256x256x64_s4": (256, 256, 64, 4)}.items():
        r = tile_decision(bm, bn, bk, stages=st, threads=v["E4.threads"])
        out[key] = {"smem_kib": r.smem_total / 1024, "acc_regs": r.acc_per_thread,
                    "c1_fits": "yes" if not any(f.startswith("C1") for f in r.failures) else "no",
                    "c2_fits": "yes" if not any(f.startswith("C2") for f in r.failures) else "no"}
    return out


def _ii(v: dict):
    from ledger import ascend

    return ascend.pipe_ii(v["E6.bm"], v["E6.bn"], v["E6.bk"])


def _ascend_ii(v: dict) -> dict:
    ii = _ii(v)
    return {"cube": ii.cube, "mte2": ii.mte2, "mte1": ii.mte1}


def _ascend_stages(v: dict) -> dict:
    from ledger import ascend

    ii = _ii(v)
    return {"without_base": ascend.min_stages(ii, with_base=False), "with_base": ascend.min_stages(ii)}


def _decision(which: str, v: dict):
    d = _dec()
    if which == "skinny":
        return d.skinny_gemm_split_k(v["E7.M"], v["E7.M"], v["E7.K"], split=SPLIT_K)
    return d.decode_split_kv(v["E7.heads"], 128, v["E7.L"], split=SPLIT_KV, batch=v["E7.batch"])


def _winner(which: str, v: dict, sms: int = 132) -> str:
    return _decision(which, v).winner(sms=sms).name


def _winner_bytes(which: str, v: dict) -> float:
    d = _decision(which, v)
    return (d.winner().bytes + d.common_bytes) / 1e6


def _designs(v: dict) -> dict:
    """The three designs of the student's case: A one row, B 8 rows, C one whole token per block."""
    s = _case(v)
    return {k: _cs().design(r, s) for k, r in (("A", 1), ("B", 8), ("C", s.rows_per_token))}


def _best_design(v: dict) -> str:
    designs = _designs(v)
    return min(designs, key=lambda k: designs[k].floor_seconds(H200))


def _design_bytes(v: dict) -> float:
    return _designs(v)[_best_design(v)].total_bytes / 1e6


def _decode(v: dict):
    import dataclasses

    return dataclasses.replace(_case(v), tokens=1)


def _parts() -> tuple[Part, ...]:
    cs = _cs
    return (
        # E1 ------------------------------------------------------------------
        _q("e1_a", "E1", 1, "案例算子的 payload 字节", lambda v: cs().payload_bytes(_case(v)) / 1e6, "MB"),
        _q("e1_b", "E1", 1, "其中 scale 的字节", lambda v: cs().scale_bytes(_case(v)) / 1e6, "MB"),
        _q("e1_c", "E1", 1, "查表（RoPE 表与两份 norm 权重）的字节", lambda v: cs().lookup_bytes(_case(v)) / 1e6, "MB"),
        _q("e1_d", "E1", 1, "理想字节", lambda v: cs().ideal_bytes(_case(v)) / 1e6, "MB"),
        _q("e1_e", "E1", 1, "逐次计数（|x| 与 max 各算一次）的运算量", lambda v: cs().case_flops(_case(v)) / 1e6, "MFLOP"),
        _q("e1_f", "E1", 1, "相应的算术强度", lambda v: cs().case_cost(_case(v)).intensity, "FLOP/B"),
        _q("e1_g", "E1", 1, "把 |x| 与 max 合为一次时的运算量",
           lambda v: cs().case_flops(_case(v), reading="fused_absmax") / 1e6, "MFLOP"),
        _q("e1_h", "E1", 1, "按 H200 标定带宽的下界", lambda v: cs().sol_seconds(cs().ideal_bytes(_case(v))) * 1e6, "us"),
        Part("e1_i", "E1", 1, "choice", "以 CUDA core 为天花板判类", _case_bound, options=BOUNDS,
             stub='ANSWER["e1_i"] = None  # "compute-bound" 或 "memory-bound"'),
        # E2 ------------------------------------------------------------------
        Part("e2_a", "E2", 2, "table", "{{E2.machine}} 参数下三块天花板的平衡点（FLOP/B）", _roofs,
             stub='ANSWER["e2_a"] = {"tensor_core.fp16": None, "cuda_core.fp32": None, "tensor_core.fp8": None}'),
        _m("e2_b", "E2", 2, "为什么「按输入 dtype 声明天花板」在这里是错的；一块天花板的 roofline 能否回答哪部分先到顶"),
        # E3 ------------------------------------------------------------------
        _q("e3_a", "E3", 1, "拆成两个 kernel（bf16 中间量写出再读回）的字节", lambda v: cs().two_kernel_bytes(_case(v)) / 1e6, "MB"),
        _n("e3_b", "E3", 1, "拆分与融合的字节比", lambda v: cs().two_kernel_bytes(_case(v)) / cs().ideal_bytes(_case(v))),
        _m("e3_c", "E3", 1, "强度之比为什么与 FLOP 口径无关"),
        # E4 ------------------------------------------------------------------
        Part("e4_a", "E4", 2, "table", "{{E4.threads}} 个线程时两份配置的 C1（共享内存 KiB、是否放得下）与 C2（每线程累加器寄存器、是否放得下）",
             _tile_table, options=("yes", "no"),
             stub='ANSWER["e4_a"] = {"128x256x64_s3": {"smem_kib": None, "acc_regs": None, "c1_fits": None, "c2_fits": None},\n'
                  '                  "256x256x64_s4": {"smem_kib": None, "acc_regs": None, "c1_fits": None, "c2_fits": None}}'),
        _m("e4_b", "E4", 1, "第一份配置的驻留数被哪条约束卡住；第二份在哪个阶段就会出错"),
        # E5 ------------------------------------------------------------------
        _m("e5_a", "E5", 2, "carver 的优先级公式偏好什么样的候选；为什么 block_K 对它没有分辨率"),
        # E6 ------------------------------------------------------------------
        _n("e6_a", "E6", 1, "方形 tile 由 Cube 成为瓶颈的最小边长", lambda v: __import__("ledger.ascend", fromlist=["x"]).square_threshold(),
           rel_tol=0.0, abs_tol=0.5),
        Part("e6_b", "E6", 2, "table", "{{E6.bm}}×{{E6.bn}}×{{E6.bk}} fp16 tile 的 Cube、MTE2、MTE1 的 II（周期）", _ascend_ii,
             rel_tol=0.0,
             abs_tol=0.5, stub='ANSWER["e6_b"] = {"cube": None, "mte2": None, "mte1": None}'),
        Part("e6_c", "E6", 1, "table", "不计与计入 Cube 完成开销时各需几级流水", _ascend_stages, rel_tol=0.0,
             stub='ANSWER["e6_c"] = {"without_base": None, "with_base": None}'),
        # E7: the design decision ----------------------------------------------
        Part("e7_a", "E7", 1, "choice", "细长 GEMM {{E7.M}}×{{E7.M}}×{{E7.K}}：不切还是 split-K=8（132 个 SM）",
             lambda v: _winner("skinny", v),
             options=("no split", "split-K=8"), stub='ANSWER["e7_a"] = None  # "no split" 或 "split-K=8"'),
        _q("e7_b", "E7", 1, "胜出方案的账本字节（含操作数）", lambda v: _winner_bytes("skinny", v), "MB"),
        Part("e7_c", "E7", 1, "choice", "batch {{E7.batch}}、{{E7.heads}} 个 head、KV 长 {{E7.L}} 的 decode attention：每 head 一个 block 还是 split-KV=64（132 个 SM）",
             lambda v: _winner("decode", v), options=("one block per head", "split-KV=64"),
             stub='ANSWER["e7_c"] = None  # "one block per head" 或 "split-KV=64"'),
        _q("e7_d", "E7", 1, "胜出方案的账本字节", lambda v: _winner_bytes("decode", v), "MB"),
        Part("e7_e", "E7", 1, "table", "只有 32 个 SM 时两行各选哪个方案",
             lambda v: {"skinny": _winner("skinny", v, 32), "decode": _winner("decode", v, 32)},
             options=("no split", "split-K=8", "one block per head", "split-KV=64"),
             stub='ANSWER["e7_e"] = {"skinny": None, "decode": None}'),
        Part("e7_f", "E7", 1, "choice", "案例算子的三种设计（A 每 block 一行、B 八行、C 一个 token）中下界最低的", _best_design,
             options=DESIGNS, stub='ANSWER["e7_f"] = None  # "A"、"B" 或 "C"'),
        _q("e7_g", "E7", 1, "它的账本字节（payload 加各 block 重复读的查表）", _design_bytes, "MB"),
        _m("e7_h", "E7", 2, "为什么多搬字节的一方会胜出；SM 只有 32 个时结论为什么翻转"),
        # E8 ------------------------------------------------------------------
        _m("e8_a", "E8", 2, "A 与 C 的 DRAM 字节几乎相同，A 为什么仍慢几倍；在 C 之上还能往哪里优化、要测什么"),
        # E9 ------------------------------------------------------------------
        _q("e9_a", "E9", 1, "decode 一步（1 个 token）要搬的字节", lambda v: cs().ideal_bytes(_decode(v)), "B"),
        _q("e9_b", "E9", 1, "它的下界", lambda v: cs().sol_seconds(cs().ideal_bytes(_decode(v))) * 1e9, "ns"),
        _m("e9_c", "E9", 1, "这个尺度上该看什么指标，而不是效率百分比"),
    )


# Per-student numbers: the book's number is the default (the instructor notebook, nbgrader and
# `grade --common` use it); no pool holds the book's number.  E1's case (tokens, q heads, head_dim)
# is also the case of E3, the designs of E7 and the decode step of E9.  E6's square threshold is a
# fact of the installed header (the same for every 16- and 8-bit dtype), so it stays fixed.
PARAMS = (
    Param("E1.T", 4096, (1024, 2048, 8192, 16384), "token 数"),
    Param("E1.q_heads", 32, (16, 48, 64), "q head 数（kv head 为 8）"),
    Param("E1.D", 128, (64, 256), "head_dim"),
    Param("E2.machine", "h200-calibrated", ("h200-spec", "h200-sustained"), "机器（`ledger.machines`）"),
    Param("E4.threads", 256, (128, 512), "每个 block 的线程数"),
    Param("E6.bm", 256, (128, 192), "tile 的 M"),
    Param("E6.bn", 224, (128, 256), "tile 的 N"),
    Param("E6.bk", 128, (64, 256), "tile 的 K"),
    Param("E7.M", 1024, (512, 768, 1536, 2048), "细长 GEMM 的 M（= N）"),
    Param("E7.K", 16384, (8192, 32768), "细长 GEMM 的 K"),
    Param("E7.heads", 32, (16, 64), "decode 的 head 数"),
    Param("E7.L", 131072, (32768, 65536, 262144), "decode 的 KV 长度"),
    Param("E7.batch", 1, (2, 4, 8), "decode 的 batch（每个序列一样长）"),
)


def _derive(v: dict) -> dict:
    return {"E1.rows": v["E1.q_heads"] + KV_HEADS}


SPEC = LabSpec(name="perfmodel", title="实验 · 性能模型", parts=_parts(), params=PARAMS, derive=_derive, cell_timeout=20.0,
               notebook_timeout=90.0, memory_mb=2048)
