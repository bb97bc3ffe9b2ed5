"""Build ``labs/elementwise/elementwise.ipynb``, the instructor notebook of the elementwise lab.

    .venv/bin/python labs/elementwise/build.py          # (re)write the notebook
    .venv/bin/python labs/elementwise/build.py --check  # exit 1 if it is out of date

Texts are Chinese; kernel exercise texts (interface, ledger bytes, bound, speed levels,
structure) are generated from the tasks and the ledger by ``autograder.kernelgrade.labbook``.
Reference solutions of the kernel parts call the course's kernels (``kernels``).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from autograder.kernelgrade.labbook import kernel_exercise_text, run_build_script  # noqa: E402
from autograder.kernelgrade.labbook import build_notebook as _build  # noqa: E402

LAB = "elementwise"

INTRO = """# 实验 · 逐元素、归一化与 RoPE

这份实验分两半。**前一半**（E1–E8）是「逐元素、归一化与 RoPE」一章的习题，拆成可以自动判分的小问：先算账，答案写进字典 `ANSWER`，
紧跟着的 `check(...)` 格会告诉你**对、错，还是格式不对**（从不显示标准答案）。**后一半**（K1–K4、A1–A2）
要你写 TileLang kernel：每题给出一个能编译、能运行的起点（starter），你把它补完或改快。

作答约定与「TileLang 入门」一章的实验相同：带单位的量写成 `{"value": 数值, "unit": "单位"}`（`MB` 是 $10^6$ 字节，`MiB` 是
$2^{20}$ 字节，评分按你写的单位换算）；单选写字符串；文字题写在 Markdown 格里，由助教批改。

**kernel 题的接口**：把一个 `@tilelang.jit` 修饰的工厂函数赋给 `ANSWER["题号"]`。评分程序用关键字参数调用它
（例如 `add_kernel(N=1000003, dtype="float16")`），取回它给出的 `T.prim_func`，自己编译（目标 sm_90a），
再把输入、输出张量按接口规定的顺序传给编译好的 kernel。输出张量由评分程序分配并预先填满 NaN，kernel 不能自己
分配输出（不要用 `out_idx`）。评分时只调用编译好的 kernel：你的 Python 代码只在生成 kernel 时运行一次，
而且是在一个不能联网、不能启动子进程的受限进程里。

{{WHO}}

**变体形状**：每道 kernel 题除了几种固定形状，还要在准备格里的字典 `P` 给出的一个形状上算对（例如 `P["K1.N"]`）；
kernel 不要按某个具体形状写死。

**在哪里评什么**：

* 没有 GPU 的机器（笔记本电脑、CI）：E1–E8 全部评分；每个 kernel 都会被生成、为 sm_90a 编译（需要 nvcc），
  并从生成的代码里读出结构（访存宽度、共享内存、流水级数）给出结构分；A1–A2 在 CPU 上降级到 AscendC 评分
  （lowered on CPU）。正确性与速度两项标为「需要 GPU，未评」。
* 有 GPU 的评分机：另外在多种形状上检查正确性（包括不是分块整数倍的形状，以及按你的学号生成的变体形状），
  并按课程的计时协议（预热、每次测量前冲刷 L2、CUDA events、取中位数）测速，与同一进程里实测的拷贝带宽和
  PyTorch 基线比较。

自查：保存后在课程仓库里运行 `python -m autograder check elementwise 你的文件.ipynb`，与正式评分走同一套流程；
notebook 里的 `check(ANSWER, "k1_add")` 则在你自己的进程里编译、读结构，有 GPU 时再粗测一次（仅供参考）。
"""


KERNEL_SETUP = """# kernel 题共用的导入（评分程序用的是这一格的原样，改动不会生效）
import tilelang
import tilelang.language as T
import tilelang.ascend.language as TA

TARGET = {"kind": "cuda", "arch": "sm_90a"}"""

EXERCISES = {
    "E1": """## E1 · 换一种元素宽度（★）

本章的 scale+add 场景是 $y = x\\cdot a + b$（$a$ 是标量参数），取 $N = {{E1.N}}$ 个元素。把它换成 {{E1.dtype}}：逐算子执行
（先写出中间量 $t = x\\cdot a$，再读回来加 $b$）与融合成一个 kernel，各要搬多少字节？两者之比是多少？""",
    "E2": """## E2 · RMSNorm 的下界（★★）

形状 {{E2.M}}×{{E2.N}}、{{E2.dtype}}，带权重 $w$。用账本的记账规则求融合 RMSNorm 最少要搬的字节，以及按 H200 标定带宽
（`ledger` 的 `h200-calibrated`）算出的时间下界。""",
    "E3": """## E3 · fragment 占多少寄存器（★★）

`rmsnorm_rows` 一个线程块处理 `blk_m` 整行，平方值放在 fp32 的 fragment 里。取 `blk_m={{E3.blk_m}}`、{{E3.threads}} 个线程、
行长 {{E3.N}}：这个 fragment 有多少 KiB？平均到每个线程是多少个 fp32 寄存器？`blk_m` 翻倍呢？""",
    "E4": """## E4 · 只转一半通道（★★）

RoPE 取 {{E4.T}} 个 token、{{E4.H}} 个 head、head_dim {{E4.D}}，输入输出 fp16，cos/sin 表 fp32、每个 token 一行。
分别求只旋转后 {{E4.R}} 个通道与旋转全部 {{E4.D}} 个通道时 kernel 的访存量（不旋转的通道也要原样写出）。""",
    "E5": """## E5 · scale 的粒度（★★）

{{E5.M}}×{{E5.N}} bf16 的 RMSNorm + RoPE（最后 128 个通道，cos/sin 表 bf16、每个 token 一行）+ FP8 量化：
拆成三个 kernel 与融合成一个，字节比是多少？把每个 token 一个 fp32 scale 改成每 {{E5.group}} 个通道一个，比值怎样变？
融合版多写出多少 scale？""",
    "E6": """## E6 · 读量化 kernel（★★）

读 `kernels/quant.py` 的 `quant_fp8`：为什么输入被看成 `(M, N // group, group)` 的三维张量？把组内最大值写成
`amax[g] = T.max(amax[g], abs(x[j]))` 的循环会怎样？再按账本求 {{E6.M}}×{{E6.N}} bf16、组大小 {{E6.group}} 时它的访存量与算术强度。""",
    "E7": """## E7 · 读生成的代码（★★）

在本机（不需要 GPU）运行
`python -c "from kernels import elementwise as E; print(E.scale_cast(1 << 16).get_kernel_source())"`，
找出：读 $x$（fp32）用的向量类型、fp32 → fp16 的转换函数、写 $y$（fp16）用的向量类型。把 `npt` 改成 4 再生成一次，
循环结构有什么变化？""",
    "E8": """## E8 · 残差相加 + RMSNorm（★★★）

设计一个融合 kernel：输入 $x$、残差 $r$ 与权重 $w$，输出更新后的残差 $h = x + r$（后续层还要用）和 $y = \\mathrm{RMSNorm}(h)\\cdot w$。
{{E8.M}}×{{E8.N}}、{{E8.dtype}}：逐算子（先加、再做已经融合好的 RMSNorm）与融合各搬多少字节？比值多少？""",
}

KERNEL_TEXT = {
    "K1": ("ew_add", {"correct": 3, "speed": 2, "structure": 1},
           "起点是「每个线程一次一个元素」的写法：它是对的，但每次访存只有 2 字节。让每个线程负责若干个连续元素"
           "（`T.Parallel(threads, npt)`），使 fp16 下每次访存是 16 字节；注意长度不是分块整数倍时也要正确。"),
    "K2": ("rmsnorm", {"correct": 3, "speed": 2, "structure": 1},
           "起点把整行读进 fragment 又原样写出。补上 fp32 的平方和（`T.reduce_sum`）、`rsqrt` 与乘权重；"
           "行长不是 256 的倍数时，片上补的零不影响平方和，但均值要除以真实的 N。"),
    "K3": ("rope", {"correct": 3, "speed": 2, "structure": 1},
           "起点一个线程块处理一个 token，把 x 原样拷到 y。补上 NeoX 配对 (p, p + rope_dim/2) 的旋转，用 fp32 计算、"
           "最后舍入一次。要快，可以一次处理几个 token、先把 tile 暂存进共享内存，使写回成为宽访存。"),
    "K4": ("rmsnorm_rope", {"correct": 3, "speed": 2, "structure": 1},
           "把 K2 与 K3 融合：一次读 x、一次写 y。RoPE 的配对通道在别的线程手里，尾部 rope_dim 个通道要经共享内存交换。"),
    "A1": ("ascend_add", {"ascend": 2},
           "同一个向量加法，写成 tilelang 主干的昇腾方言：一维的核网格、`TA.alloc_shared` 即 UB、`TA.SimtVF` 开线程。"
           "起点能降级，但搬运与计算没有重叠。"),
    "A2": ("ascend_rmsnorm", {"ascend": 2},
           "昇腾版 RMSNorm：每个核按 UB 容量一次处理若干行；起点只把行原样拷回，补上 SimtVF 区域里的归一化。"),
}

SOLUTIONS = {
    "e1_a": 'ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}  # bytes per element\n'
            'N, b = P["E1.N"], ELEM[P["E1.dtype"]]\n'
            '# t = x * a: read x, write t; y = t + b: read t and b, write y\n'
            'ANSWER["e1_a"] = {"value": 5 * N * b / 1e6, "unit": "MB"}',
    "e1_b": 'ANSWER["e1_b"] = {"value": 3 * N * b / 1e6, "unit": "MB"}  # read x and b, write y',
    "e1_c": 'ANSWER["e1_c"] = 5 / 3',
    "e1_d": "两份计划搬的都是若干个「张量大小」的量：逐算子 5 个、融合 3 个。元素宽度变了，每个张量同比缩放，"
            "比值只取决于张量个数，与元素宽度无关。",
    "e2_a": 'M, N, b = P["E2.M"], P["E2.N"], ELEM[P["E2.dtype"]]\n'
            'nbytes = 2 * M * N * b + N * b  # read x, write y, read w once\n'
            'ANSWER["e2_a"] = {"value": nbytes / 1e6, "unit": "MB"}',
    "e2_b": 'from ledger.machines import get_machine\n'
            'bw = get_machine("h200-calibrated").bandwidth\n'
            'ANSWER["e2_b"] = {"value": nbytes / bw * 1e6, "unit": "us"}',
    "e2_c": "标定带宽是厂商规格乘以一组标定实验得到的系数，是账本里固定的尺子，用来比较不同机器、不同算子；"
            "同一次运行实测的拷贝带宽反映这张卡此刻的状态（时钟、温度、功耗上限），用来判断一个 kernel 离「同样字节的拷贝」还有多远。"
            "前者回答「理论上能多快」，后者回答「这次测量里做得好不好」。",
    "e3_a": 'bm, N, t = P["E3.blk_m"], P["E3.N"], P["E3.threads"]\n'
            'ANSWER["e3_a"] = {"value": bm * N * 4 / 1024, "unit": "KiB"}',
    "e3_b": 'ANSWER["e3_b"] = bm * N / t',
    "e3_c": 'ANSWER["e3_c"] = 2 * bm * N / t',
    "e3_d": "每个线程用的寄存器越多，一个 SM 上能同时驻留的线程块越少；访存受限的 kernel 靠大量同时在途的请求来掩盖显存延迟，"
            "驻留变少，在途请求变少，带宽就用不满。输入本身的 fragment 还要另占一份寄存器。",
    "e4_a": 'T_, H, D, b = P["E4.T"], P["E4.H"], P["E4.D"], 2\n'
            'def rope_bytes(R):\n'
            '    x_y = 2 * T_ * H * D * b       # x read, y written (unrotated channels copied)\n'
            '    tables = 2 * T_ * (R // 2) * 4  # cos and sin, fp32, one row per token\n'
            '    return x_y + tables\n'
            'ANSWER["e4_a"] = {"value": rope_bytes(P["E4.R"]) / 1e6, "unit": "MB"}',
    "e4_b": 'ANSWER["e4_b"] = {"value": rope_bytes(D) / 1e6, "unit": "MB"}',
    "e4_c": "两者只差 cos/sin 表的那一点字节，主体的「读一遍 x、写一遍 y」不变，所以只转一半几乎不会更快——它受带宽限制，而字节几乎没少。"
            "改成原地写回、只写被旋转的通道，账本才会明显变小。",
    "e5_a": 'from ledger import fusion as F\n'
            'M, N, g = P["E5.M"], P["E5.N"], P["E5.group"]\n'
            'ANSWER["e5_a"] = F.rmsnorm_rope_fp8(M, N).ratio',
    "e5_b": 'ANSWER["e5_b"] = F.rmsnorm_rope_fp8(M, N, group=g).ratio',
    "e5_c": 'extra = M * (N // g - 1) * 4  # fp32 scales: N/g per token instead of one\n'
            'ANSWER["e5_c"] = {"value": extra / 1e6, "unit": "MB"}',
    "e6_a": 'M, N, g = P["E6.M"], P["E6.N"], P["E6.group"]\n'
            'q_bytes = M * N * 2 + M * N * 1 + M * (N // g) * 4  # read bf16, write fp8 and fp32 scales\n'
            'ANSWER["e6_a"] = {"value": q_bytes / 1e6, "unit": "MB"}',
    "e6_b": 'ANSWER["e6_b"] = {"value": 3 * M * N / q_bytes, "unit": "FLOP/B"}  # |x|, running max, times 1/scale',
    "e6_c": "（1）三维视图让「组」成为 fragment 的一个维度，`T.reduce_absmax(..., dim=2)` 直接沿组内归约，跨线程只发生在分到"
            "同一组的少数线程之间。（2）存储下标在一个向量组内不变，是读—改—写，向量化会把它标量化，而且多个线程同时更新"
            "同一个 `amax[g]` 还需要额外的同步才正确。",
    "e7_a": 'ANSWER["e7_a"] = "float4"',
    "e7_b": 'ANSWER["e7_b"] = "__float22half2_rn"',
    "e7_c": 'ANSWER["e7_c"] = "uint2"',
    "e7_d": "`npt=8` 时每个线程外面有一个两次的循环、每次四路；`npt=4` 时这层循环消失，每个线程只做一组。"
            "向量宽度的上限由 fp32 一侧决定（16 字节是 4 个 fp32），与 `npt` 取多大无关。",
    "e8_a": 'M, N, b = P["E8.M"], P["E8.N"], ELEM[P["E8.dtype"]]\n'
            'split = (3 * M * N * b) + (2 * M * N * b + N * b)  # h = x + r; rmsnorm reads h, w writes y\n'
            'ANSWER["e8_a"] = {"value": split / 1e6, "unit": "MB"}',
    "e8_b": 'fused = 4 * M * N * b + N * b  # read x, r, w; write h and y\n'
            'ANSWER["e8_b"] = {"value": fused / 1e6, "unit": "MB"}',
    "e8_c": 'ANSWER["e8_c"] = split / fused',
    "e8_d": "数据可以全部留在 fragment：没有跨线程的配对，归约直接在 fragment 上做，不必像 RoPE 那样绕道共享内存。"
            "收益小，是因为 $h$ 本来就必须写出，融合只省下了 $h$ 的一次读回；而 RMSNorm 自身的融合省下的是五六个中间张量的往返。",
    # kernels: the reference solutions call the course's kernels
    "k1_add": '''from kernels.elementwise import add_per_thread


@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):
    # the course's level 2: 8 contiguous elements per thread (16-byte accesses in fp16)
    return add_per_thread.get_tir(N, dtype, 256, 8)


ANSWER["k1_add"] = add_kernel''',
    "k2_rmsnorm": '''from kernels.norm import rmsnorm_rows


@tilelang.jit(target=TARGET)
def rmsnorm_kernel(M, N, dtype):
    # the course's rows schedule: 4 whole rows per block, in register fragments
    return rmsnorm_rows.get_tir(M, N, dtype, 4, 256, 1e-6)


ANSWER["k2_rmsnorm"] = rmsnorm_kernel''',
    "k3_rope": '''from kernels import rope as course_rope


@tilelang.jit(target=TARGET)
def rope_kernel(S, H, D, rope_dim, dtype):
    # the course's blocked kernel (one token per block, staged in shared memory) where its
    # tiling constraints hold; the naive one (any shape) elsewhere
    try:
        threads = course_rope._threads_for(1, H, D, rope_dim)
    except ValueError:
        return course_rope.rope_naive.get_tir(S, H, D, rope_dim, "neox", dtype, 256)
    return course_rope.rope_blocked.get_tir(S, H, D, rope_dim, "neox", dtype, 1, threads)


ANSWER["k3_rope"] = rope_kernel''',
    "k4_fused": '''from kernels.fused import rmsnorm_rope


@tilelang.jit(target=TARGET)
def rmsnorm_rope_kernel(M, N, rope_dim, dtype):
    # the course's fused kernel: rows in registers, only the RoPE tail through shared memory
    return rmsnorm_rope.get_tir(M, N, rope_dim, dtype, 1, 256, 1e-6)


ANSWER["k4_fused"] = rmsnorm_rope_kernel''',
    "a1_add_ascend": '''from kernels.ascend.programs import vector_add


def ascend_add(n):
    return vector_add(n=n)  # double-buffered UB tiles, SIMT threads on the Vector core


ANSWER["a1_add_ascend"] = ascend_add''',
    "a2_rms_ascend": '''from kernels.ascend.programs import rmsnorm as course_ascend_rmsnorm


def ascend_rmsnorm(tokens, d):
    return course_ascend_rmsnorm(tokens=tokens, d=d)  # rows per tile sized from the UB budget


ANSWER["a2_rms_ascend"] = ascend_rmsnorm''',
}


def build(variant=None, student=None):
    """The instructor notebook for ``variant`` (default: the common numbers); ``student`` names whose."""
    texts = dict(EXERCISES)
    for ex, (task, pts, extra) in KERNEL_TEXT.items():
        texts[ex] = kernel_exercise_text(ex, task, pts, extra)
    return _build(LAB, INTRO, KERNEL_SETUP, texts, SOLUTIONS, variant, student)


if __name__ == "__main__":
    run_build_script(LAB, HERE, build)
