"""Build ``labs/perfmodel/perfmodel.ipynb``, the instructor notebook of the performance-model lab.

    .venv/bin/python labs/perfmodel/build.py          # (re)write the notebook
    .venv/bin/python labs/perfmodel/build.py --check  # exit 1 if it is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from autograder.kernelgrade.labbook import run_build_script  # noqa: E402
from autograder.kernelgrade.labbook import build_notebook as _build  # noqa: E402

LAB = "perfmodel"

INTRO = """# 实验 · 性能模型

「性能模型与算子设计方法论」一章的习题，全部是「先算账」：把本章的设计案例（每个 token 若干个 q head 与 kv head 的 RMSNorm + RoPE +
FP8 量化）变成字节与运算量，判类，给下界；检查 tile 的约束；用昇腾的流水模型数周期；最后在 E7 做一次**设计决策**：
在两种方案之间选一个，并给出账本对它的字节预测——评分程序用 `ledger` 的同一个模型判定胜负。

答案写进 `ANSWER`，运行后面的 `check(...)` 自查。可以在答案格里调用 `ledger`（例如 `ledger.case_study`、
`ledger.decisions`），但请先自己列式，再用账本核对：文字题要写出理由。本实验不需要 GPU。

{{WHO}}

自查：`python -m autograder check perfmodel 你的文件.ipynb`。
"""


KERNEL_SETUP = None  # no kernel parts in this lab

EXERCISES = {
    "E1": """## E1 · 案例算子的账本（★）

{{E1.T}} 个 token、{{E1.q_heads}} 个 q head 与 8 个 kv head、head_dim {{E1.D}}；bf16 输入、fp8 输出，每行（每个 token 的每个 head）
一个 fp32 scale；RoPE 表 fp32（每个 token 的 cos 与 sin 各 {{E1.D}} 个），两份 bf16 的 norm 权重。
求 payload（输入读一次、输出与 scale 写一次）、查表与理想字节；按两种 FLOP 口径求运算量与算术强度
（每元素 RMSNorm 4、RoPE 3、量化 3 或 2，另每行 3）；按 H200 标定带宽求下界，并以 CUDA core 为天花板判类。""",
    "E2": """## E2 · 哪块天花板（★★）

一个 fp8 输入的 attention：两次矩阵乘在 fp16 张量核上做，softmax 在 CUDA core 上做。按机器参数 `{{E2.machine}}`（`ledger.machines`），
fp16 张量核、fp32 CUDA core 与（误按输入 dtype 声明的）fp8 张量核三块天花板的平衡点各是多少？""",
    "E3": """## E3 · 拆成两个 kernel（★★）

把 E1 的案例算子拆成两个 kernel：norm 加 RoPE 写出 bf16 的中间量，量化 kernel 再读回。拆分版要搬多少字节？与融合版之比是多少？""",
    "E4": """## E4 · 两份 tile 配置（★★）

$4096^2$ 的输出、fp16 输入、fp32 累加、每个 block {{E4.threads}} 个线程：128×256×64 三级流水，与 256×256×64 四级流水。
对每一份写出 C1（共享内存合计、是否放得进每个 block 227 KB 的上限）与 C2（每线程累加器寄存器、是否不超过 255）。""",
    "E5": """## E5 · 读 carver（★★）

读 `ledger/carver.py` 与 tilelang 安装包里的 `tilelang/carver/roller/policy/default.py`。""",
    "E6": """## E6 · 昇腾的流水账（★★）

用 tilelang 安装包里 `estimate_latency.h` 的常量（`ledger.ascend` 会读出它们）：方形 tile 的边长至少多大时 Cube 才是瓶颈？
{{E6.bm}}×{{E6.bn}}×{{E6.bk}} fp16 的 tile，Cube、MTE2、MTE1 的 II 各是多少周期？按「流水级数 ≥ 1 + ⌈延迟 / 周期⌉」，
不计与计入 Cube 的完成开销各需几级？""",
    "E7": """## E7 · 设计决策：切，还是不切（★★★）

本章用四个问题判断一次融合或拆分：省多少字节、片上放不放得下、网格够不够填满机器、增加了什么新工作。
账本的模型把它压成一个数：方案的下界 = (字节 + 两方共有的字节) ÷ (带宽 × min(1, 网格 / SM 数))。
对下面两行各选一个方案，并给出胜出方案的账本字节：

* 细长 GEMM {{E7.M}}×{{E7.M}}×{{E7.K}}、128×128 的块：不切（一个 fp32 的 C），还是 split-K=8（8 份 fp32 部分和写出、读回、再写 C）；
  两者共有的是 A、B 的字节（fp16）。
* 长 KV 的 decode attention（batch {{E7.batch}}、{{E7.heads}} 个 head、head_dim 128、每个序列 KV 长 {{E7.L}}、bf16）：
  每个序列的每个 head 一个 block，
  还是 split-KV=64（每份写出 fp32 的部分输出与 LSE，再读回合并）。

然后把 SM 数改成 32 再选一次。最后在 E1 的案例算子的三种设计（A 每个 block 一行、B 每个 block 八行、C 每个 block
一个 token 的 {{E1.rows}} 行）中选出下界最低的一种，给出它的账本字节（每个 block 都要读一遍自己那一行 RoPE 表与两份权重）。""",
    "E8": """## E8 · 回看设计案例（★★★）

本章的 ncu 记录里，设计 A（每个 block 一行）与设计 C（每个 block 一个 token）的 DRAM 字节几乎相同，时间却差了几倍。""",
    "E9": """## E9 · decode 一步（★★）

E1 的案例只剩 1 个 token（decode 一步）：要搬多少字节，按 H200 标定带宽的下界多少？（可以用 `ledger.case_study` 核对；
书上的案例也可以直接运行 `python -m ledger.case_study --tokens 1`。）""",
}

SOLUTIONS = {
    "e1_a": 'T_, H, D = P["E1.T"], P["E1.q_heads"] + 8, P["E1.D"]  # 8 kv heads\n'
            'rows, elems = T_ * H, T_ * H * D\n'
            'payload = elems * (2 + 1) + rows * 4  # bf16 in, fp8 out, one fp32 scale per row\n'
            'ANSWER["e1_a"] = {"value": payload / 1e6, "unit": "MB"}',
    "e1_b": 'ANSWER["e1_b"] = {"value": rows * 4 / 1e6, "unit": "MB"}',
    "e1_c": 'lookup = T_ * 2 * D * 4 + 2 * D * 2  # cos and sin per token (fp32), q and k norm weights (bf16)\n'
            'ANSWER["e1_c"] = {"value": lookup / 1e6, "unit": "MB"}',
    "e1_d": 'ideal = payload + lookup\nANSWER["e1_d"] = {"value": ideal / 1e6, "unit": "MB"}',
    "e1_e": 'flops = elems * (4 + 3 + 3) + rows * 3\nANSWER["e1_e"] = {"value": flops / 1e6, "unit": "MFLOP"}',
    "e1_f": 'ANSWER["e1_f"] = {"value": flops / ideal, "unit": "FLOP/B"}',
    "e1_g": 'ANSWER["e1_g"] = {"value": (elems * (4 + 3 + 2) + rows * 3) / 1e6, "unit": "MFLOP"}',
    "e1_h": 'from ledger.machines import get_machine\n'
            'bw = get_machine("h200-calibrated").bandwidth\n'
            'ANSWER["e1_h"] = {"value": ideal / bw * 1e6, "unit": "us"}',
    "e1_i": 'ANSWER["e1_i"] = "memory-bound"  # about 3 FLOP/B against a CUDA-core balance of about 13',
    "e2_a": 'm = get_machine(P["E2.machine"])\n'
            'ANSWER["e2_a"] = {u: m.balance_for(u) for u in ("tensor_core.fp16", "cuda_core.fp32", "tensor_core.fp8")}',
    "e2_b": "fp8 只是存储格式，矩阵乘在哪个单元上做由实现决定，天花板要按「最优实现会用哪个单元」来声明。"
            "两部分各有自己的强度与天花板，一张只有一块天花板的 roofline 回答不了哪一部分先到顶，需要分开记账。",
    "e3_a": 'two = ideal + 2 * elems * 2  # the bf16 intermediate of every row, written and read back\n'
            'ANSWER["e3_a"] = {"value": two / 1e6, "unit": "MB"}',
    "e3_b": 'ANSWER["e3_b"] = two / ideal',
    "e3_c": "两种方案的运算量相同，强度之比就是字节之比的倒数；换一种 FLOP 口径，分子分母同乘一个数，比值不变。",
    "e4_a": 'def cfg(bm, bn, bk, st, threads=P["E4.threads"]):\n'
            '    smem = st * (bm * bk + bk * bn) * 2 / 1024\n'
            '    acc = bm * bn / threads\n'
            '    return {"smem_kib": smem, "acc_regs": acc, "c1_fits": "yes" if smem <= 227 else "no",\n'
            '            "c2_fits": "yes" if acc <= 255 else "no"}\n'
            'ANSWER["e4_a"] = {"128x256x64_s3": cfg(128, 256, 64, 3), "256x256x64_s4": cfg(256, 256, 64, 4)}',
    "e4_b": "第一份的驻留数由共享内存卡住（144 KiB 一份，228 KB 里只放得下一个）；第二份共享内存 256 KiB 超过每个 block "
            "227 KB 的上限（线程多时累加器寄存器也会超过 255），编译或启动时就会出错。",
    "e5_a": "优先级是（每个 block 的搬运量 + 1）× 波数，越小越好：偏好搬得少、波数少的 tile。搬运量按整个 K 计算，"
            "与每次取多少 K 无关；波数只取决于输出 tile 数与驻留块数，block_K 只改变共享内存，而对常见的 tile 这不改变驻留块数，"
            "所以 block_K 对优先级没有分辨率。",
    "e6_a": 'from ledger import ascend\nANSWER["e6_a"] = ascend.square_threshold()',
    "e6_b": 'ii = ascend.pipe_ii(P["E6.bm"], P["E6.bn"], P["E6.bk"])\n'
            'ANSWER["e6_b"] = {"cube": ii.cube, "mte2": ii.mte2, "mte1": ii.mte1}',
    "e6_c": 'ANSWER["e6_c"] = {"without_base": ascend.min_stages(ii, with_base=False), "with_base": ascend.min_stages(ii)}',
    "e7_a": 'import math\n'
            'def floor_s(nbytes, grid, sms=132):\n'
            '    return nbytes / (bw * min(1.0, grid / sms))\n'
            'M, K = P["E7.M"], P["E7.K"]                              # N = M\n'
            'operands = 2 * (M * K * 2)                               # A and B, fp16, both plans\n'
            'no_split = M * M * 4                                     # one fp32 C\n'
            'split = 2 * 8 * M * M * 4 + M * M * 4                    # 8 partials written and read back, C written\n'
            'grid = math.ceil(M / 128) ** 2\n'
            'plans = {"no split": (no_split, grid), "split-K=8": (split, 8 * grid)}\n'
            'ANSWER["e7_a"] = min(plans, key=lambda k: floor_s(plans[k][0] + operands, plans[k][1]))',
    "e7_b": 'ANSWER["e7_b"] = {"value": (plans[ANSWER["e7_a"]][0] + operands) / 1e6, "unit": "MB"}',
    "e7_c": 'Bh, D, L = P["E7.batch"] * P["E7.heads"], 128, P["E7.L"]  # (sequence, head) pairs\n'
            'kv = 2 * Bh * L * D * 2 + 2 * Bh * D * 2              # K and V cache, q and o (bf16)\n'
            'dplans = {"one block per head": (kv, Bh),\n'
            '          "split-KV=64": (kv + 2 * 64 * Bh * (D + 1) * 4, 64 * Bh)}  # fp32 O and LSE, written and read\n'
            'ANSWER["e7_c"] = min(dplans, key=lambda k: floor_s(*dplans[k]))',
    "e7_d": 'ANSWER["e7_d"] = {"value": dplans[ANSWER["e7_c"]][0] / 1e6, "unit": "MB"}',
    "e7_e": 'ANSWER["e7_e"] = {"skinny": min(plans, key=lambda k: floor_s(plans[k][0] + operands, plans[k][1], 32)),\n'
            '                  "decode": min(dplans, key=lambda k: floor_s(*dplans[k], 32))}',
    "e7_f": 'from ledger.case_study import CaseSpec, design\n'
            'case = CaseSpec(tokens=P["E1.T"], q_heads=P["E1.q_heads"], kv_heads=8, head_dim=P["E1.D"])\n'
            'designs = {"A": design(1, case), "B": design(8, case), "C": design(case.rows_per_token, case)}\n'
            'ANSWER["e7_f"] = min(designs, key=lambda k: designs[k].floor_seconds())',
    "e7_g": 'ANSWER["e7_g"] = {"value": designs[ANSWER["e7_f"]].total_bytes / 1e6, "unit": "MB"}',
    "e7_h": "决定这两行的是第三个问题：不切时网格只有 64 个或 32 个 block，填不满 132 个 SM，只能用上一部分带宽；"
            "切开后多搬的字节相对总量很小，却让整台机器都动起来。只有 32 个 SM 时，不切的网格已经能填满机器，"
            "split 只剩下多搬字节的代价，两行的结论都翻转。",
    "e8_a": "A 每个 block 只处理一行，网格有十几万个 block，发射、索引、两次块内归约、退出这些固定开销压倒了每个 block 那一点载荷，"
            "显存带宽远没用满；C 一个 block 处理一个 token 的 40 行，开销被摊薄。在 C 之上可以让每个线程用向量化访存一次搬多个元素，"
            "或让一个 block 处理两个 token；验证时同时测时间与 DRAM 读字节：字节应保持在最少值附近，时间应向下界靠拢。",
    "e9_a": 'from ledger.case_study import CaseSpec, ideal_bytes, sol_seconds\n'
            'step = CaseSpec(tokens=1, q_heads=P["E1.q_heads"], kv_heads=8, head_dim=P["E1.D"])  # E1\'s case, one token\n'
            'ANSWER["e9_a"] = {"value": ideal_bytes(step), "unit": "B"}',
    "e9_b": 'ANSWER["e9_b"] = {"value": sol_seconds(ideal_bytes(step)) * 1e9, "unit": "ns"}',
    "e9_c": "这一步只有几十 KB，下界是几纳秒，远低于一次 kernel 发射的开销：它受延迟限制。该看发射次数、"
            "能否与相邻算子融合或放进 CUDA Graph，而不是带宽利用率。",
}


#: the per-student paragraph of the intro (this lab has no kernel exercises)
VARIANT_TEXT = ("题目里的尺寸、机器与 tile 都由学号决定，也与书上的例子不同；发布时签名写进 notebook，评分时核对。"
                "准备格里的字典 `P` 列出了你的全部参数，`check` 也按它们判对错。书上折叠的参考答案对应的是书里的数字，"
                "只能用来对照思路，照抄会判错。")


def build(variant=None, student=None):
    """The instructor notebook for ``variant`` (default: the common numbers); ``student`` names whose."""
    return _build(LAB, INTRO, KERNEL_SETUP, EXERCISES, SOLUTIONS, variant, student, variant_text=VARIANT_TEXT)


if __name__ == "__main__":
    run_build_script(LAB, HERE, build)
