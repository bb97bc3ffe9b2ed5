"""Build ``labs/gemm/gemm.ipynb``, the instructor notebook of the GEMM lab.

    .venv/bin/python labs/gemm/build.py          # (re)write the notebook
    .venv/bin/python labs/gemm/build.py --check  # exit 1 if it is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from autograder.kernelgrade.labbook import kernel_exercise_text, run_build_script  # noqa: E402
from autograder.kernelgrade.labbook import build_notebook as _build  # noqa: E402

LAB = "gemm"

INTRO = """# 实验 · GEMM

前一半（E1–E6、E10）是「GEMM」一章的计算题：GEMM 的账本、tile 的共享内存与寄存器预算、波数、split-K 与计时协议。
答案写进 `ANSWER`，运行后面的 `check(...)` 格自查（对、错、格式不对；从不显示标准答案）。表格题写成字典，
键照格子里给的写。后一半（K1–K2）写两个 GEMM kernel，接口相同：

`C = A · Bᵀ`，A 形状 (M, K)、B 形状 (N, K)（与 `nn.Linear` 的权重一样，一行对应 C 的一列），都是 float16；
用 fp32 累加，C 写成 float16。工厂函数用 `@tilelang.jit` 修饰，评分程序以关键字参数 `M=…, N=…, K=…` 调用它，
取回 `T.prim_func` 自己编译（sm_90a），按 `(A, B, C)` 的顺序传入张量；C 预先填满 NaN。

{{WHO}}

**变体形状**：每道 kernel 题除了几种固定形状，还要在准备格里的字典 `P` 给出的一个形状上算对（例如 `P["K1.N"]`）；
kernel 不要按某个具体形状写死。

**在哪里评什么**：没有 GPU 时，计算题全部评分，kernel 会被生成、为 sm_90a 编译，从生成的代码读出结构
（共享内存暂存、张量核指令、流水级数、异步搬运）；正确性与速度标为「需要 GPU，未评」。在有 GPU 的评分机上，
另外在几种形状（含你的变体形状）上与 fp64 参考逐元素比较（容差随 K 增长，与课程的 GEMM 检查相同），
并按课程的计时协议与同一进程里的 cuBLAS（`torch.matmul`）比速度。

自查：`python -m autograder check gemm 你的文件.ipynb`。
"""


KERNEL_SETUP = """# kernel 题共用的导入（评分程序用的是这一格的原样，改动不会生效）
import tilelang
import tilelang.language as T

TARGET = {"kind": "cuda", "arch": "sm_90a"}"""

EXERCISES = {
    "E1": """## E1 · 一个 {{E1.N}}³ 的 GEMM（★）

fp16 输入输出，$C = AB$，$M = N = K = {{E1.N}}$。写出运算量、最少字节（每个操作数读一次、C 写一次）与算术强度；
按机器参数 `{{E1.machine}}`（`ledger.machines.get_machine("{{E1.machine}}")`，fp16 张量核峰值与显存带宽）它受什么限制？
在这台机器上，方阵边长是多少时判断翻转？""",
    "E2": """## E2 · 分块大小与显存流量（★★）

$M \\times N \\times K = {{E2.M}}\\times{{E2.N}}\\times{{E2.K}}$、fp16。假设没有任何缓存复用：每个输出块都要把自己那一条 A 横带与 B 竖带从显存读一遍。
分别求 128×128、128×256、256×256 输出块的总流量（含写一次 C），以及朴素写法的操作数字节。""",
    "E3": """## E3 · 一个 128×{{E3.bn}}×{{E3.bk}} 的块（★★）

fp16、{{E3.stages}} 级流水、128 个线程。每级流水要多少共享内存、{{E3.stages}} 级合计多少？按 H100/H200 每个 SM 228 KB 共享内存，
只看共享内存能驻留几个 block？fp32 累加器摊到每个线程是多少个寄存器？""",
    "E4": """## E4 · 流水级数与驻留（★★）

调优胜出的块是 128×256×64（两个计算 warpgroup，256 个线程）。流水级数取 {{E4.stages}}：共享内存合计多少？每个 SM 还能驻留几个 block？
fp8 版 128×256×128、{{E4.stages}} 级流水呢？""",
    "E5": """## E5 · 尾波（★★）

输出用 {{E5.bm}}×{{E5.bn}} 的块切，每个 SM 一个 block，共 132 个 SM。$8192^2$ 与 $4096^2$ 的输出各有多少个 block、跑几波、
最后一波多满（百分比）？""",
    "E6": """## E6 · split-K 的账（★★★）

${{E6.M}}\\times{{E6.N}}\\times16384$，128×128 的块。split = 1、2、4、8 时网格多大、几波、末波多满？
用原子加把部分和直接加到 fp32 的 C 上时，输出侧要写多少 MiB？""",
    "E10": """## E10 · 计时协议（★★）

按 `ledger.protocol` 的默认协议，一个估计耗时 {{E10.us}} µs 的 kernel 会预热多少次、测量多少次？""",
}

KERNEL_TEXT = {
    "K1": ("gemm_shared", {"correct": 4, "speed": 3, "structure": 1},
           "起点已经把 A、B 的块搬进共享内存，但没有做乘加（结果全是 0）。用 `T.gemm` 补上，先把它做对；"
           "本题只考 128 倍数的形状。"),
    "K2": ("gemm_pipelined", {"correct": 4, "speed": 3, "structure": 2},
           "同一个 GEMM，主循环改成 `T.Pipelined`：在 Hopper 上 tilelang 会把它变成 TMA 搬运加 `wgmma`、生产者与消费者"
           "分工的流水。这一题的形状不再是分块的整数倍（M 任意，N、K 是 8 的倍数），边缘的块必须正确。"),
}

SOLUTIONS = {
    "e1_a": 'M = N = K = P["E1.N"]\nANSWER["e1_a"] = {"value": 2 * M * N * K / 1e9, "unit": "GFLOP"}',
    "e1_b": 'b = 2\nANSWER["e1_b"] = {"value": b * (M * K + K * N + M * N) / 1e6, "unit": "MB"}',
    "e1_c": 'ai = 2 * M * N * K / (b * (M * K + K * N + M * N))  # = 2M / (3b) for a square GEMM\n'
            'ANSWER["e1_c"] = {"value": ai, "unit": "FLOP/B"}',
    "e1_d": 'from ledger.machines import get_machine\n'
            'balance = get_machine(P["E1.machine"]).balance  # peak FLOP/s over bandwidth\n'
            'ANSWER["e1_d"] = "compute-bound" if ai > balance else "memory-bound"',
    "e1_e": 'ANSWER["e1_e"] = 3 * b * balance / 2  # 2M / (3b) = balance',
    "e2_a": 'M, N, K, b = P["E2.M"], P["E2.N"], P["E2.K"], 2\n'
            'def traffic(bm, bn):\n'
            '    return (b * M * N * K * (1 / bm + 1 / bn) + b * M * N) / 1e6\n'
            'ANSWER["e2_a"] = {"128x128": traffic(128, 128), "128x256": traffic(128, 256), "256x256": traffic(256, 256)}',
    "e2_b": 'ANSWER["e2_b"] = {"value": 2 * M * N * K * b / 1e9, "unit": "GB"}',
    "e2_c": "同时驻留的 block 共享 L2：相邻的 block 读同一条 A 横带或 B 竖带时，后读的往往在 L2 命中，不再去显存。"
            "第四级的光栅化（block 的发射顺序）就是在主动安排这种命中。",
    "e3_a": 'bn, bk, st = P["E3.bn"], P["E3.bk"], P["E3.stages"]\n'
            'stage = (128 * bk + bk * bn) * 2  # an A tile and a B tile, fp16\n'
            'ANSWER["e3_a"] = {"value": stage / 1024, "unit": "KiB"}',
    "e3_b": 'ANSWER["e3_b"] = {"value": st * stage / 1024, "unit": "KiB"}',
    "e3_c": 'ANSWER["e3_c"] = (228 * 1024) // (st * stage)  # 228 KB of shared memory per SM',
    "e3_d": 'ANSWER["e3_d"] = 128 * bn / 128  # fp32 accumulators per thread',
    "e3_e": "「占满线程槽位」只允许每个线程 65536 / 2048 = 32 个寄存器，这里光累加器就要几十到上百个，还没算地址、操作数片段与写回；"
            "所以这个块的驻留数由寄存器决定，而不是共享内存。",
    "e4_a": 'st = P["E4.stages"]\nsmem = st * (128 * 64 + 64 * 256) * 2\n'
            'ANSWER["e4_a"] = {"value": smem / 1024, "unit": "KiB"}',
    "e4_b": 'ANSWER["e4_b"] = (228 * 1024) // smem  # shared memory is what limits this block',
    "e4_c": 'ANSWER["e4_c"] = {"value": st * (128 * 128 + 128 * 256) * 1 / 1024, "unit": "KiB"}',
    "e5_a": 'import math\n'
            'def waves(side, bm=P["E5.bm"], bn=P["E5.bn"], sms=132):\n'
            '    grid = math.ceil(side / bm) * math.ceil(side / bn)\n'
            '    w = math.ceil(grid / sms)\n'
            '    return {"grid": grid, "waves": w, "fill_pct": 100 * (grid - (w - 1) * sms) / sms}\n'
            'ANSWER["e5_a"] = {"8192": waves(8192), "4096": waves(4096)}',
    "e5_b": "尾波损失要看「最后一波的空缺」占全部波数的比例：8192² 波数多，即使末波不满，摊到所有波上的损失也只有几个百分点；"
            "4096² 波数少，但末波较满。两者的损失都不大，所以大方阵不需要 stream-K。",
    "e6_a": 'M, N = P["E6.M"], P["E6.N"]\n'
            'def split_row(s, sms=132):\n'
            '    grid = math.ceil(M / 128) * math.ceil(N / 128) * s\n'
            '    w = math.ceil(grid / sms)\n'
            '    return {"grid": grid, "waves": w, "fill_pct": 100 * (grid - (w - 1) * sms) / sms,\n'
            '            "out_mib": (M * N * 4 * s) / 2**20}  # s fp32 partial tiles land on C\n'
            'ANSWER["e6_a"] = {str(s): split_row(s) for s in (1, 2, 4, 8)}',
    "e6_b": "其一，fp32 部分和的写出随 split 线性增长；其二，这些写是原子的读—改—写，同一地址在 L2 上串行；"
            "其三，每段 K 循环变短，流水的填充与排空、写回这些固定开销占比变大。",
    "e10_a": 'from ledger.protocol import iterations\n'
             'warm, rep = iterations(P["E10.us"] / 1000)  # 25 ms of warm-up, 100 ms measured, over the estimate\n'
             'ANSWER["e10_a"] = {"warmup": warm, "measured": rep}',
    "e10_b": "不冲刷的一边显得更快：上一次调用留下的操作数还在 L2 里。工作集小于或接近 L2 容量的形状受影响最大——"
             "split-K 的 1024×1024 输出、小矩阵的 batched GEMM、decode 形状的 GEMV；8192³ 这种大方阵几乎不受影响。",
    "k1_gemm": '''from kernels.gemm.ladder import rung2_shared


@tilelang.jit(target=TARGET)
def gemm_kernel(M, N, K):
    # the course's rung 2: 128x128x32 tiles staged in shared memory, T.gemm, serial K loop
    return rung2_shared.get_tir(M, N, K)


ANSWER["k1_gemm"] = gemm_kernel''',
    "k2_gemm_pipe": '''from kernels.gemm.ladder import rung3_pipelined


@tilelang.jit(target=TARGET)
def gemm_pipelined_kernel(M, N, K):
    # the course's rung 3: the same body under T.Pipelined(num_stages=3), 128x128x64
    return rung3_pipelined.get_tir(M, N, K)


ANSWER["k2_gemm_pipe"] = gemm_pipelined_kernel''',
}


def build(variant=None, student=None):
    """The instructor notebook for ``variant`` (default: the common numbers); ``student`` names whose."""
    texts = dict(EXERCISES)
    for ex, (task, pts, extra) in KERNEL_TEXT.items():
        texts[ex] = kernel_exercise_text(ex, task, pts, extra)
    return _build(LAB, INTRO, KERNEL_SETUP, texts, SOLUTIONS, variant, student)


if __name__ == "__main__":
    run_build_script(LAB, HERE, build)
