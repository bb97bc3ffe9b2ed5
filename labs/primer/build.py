"""Build ``labs/primer/primer.ipynb``, the instructor notebook of the primer lab.

    .venv/bin/python labs/primer/build.py          # (re)write the notebook
    .venv/bin/python labs/primer/build.py --check  # exit 1 if it is out of date

Texts are Chinese; kernel exercise texts (interface, variant shape, ledger bytes, bound,
speed levels, structure) are generated from the tasks and the ledger by
``autograder.kernelgrade.labbook``.  The analytic solutions compute their answers from
first principles on the student's numbers ``P`` (the grader's references come from
``ledger.primer``: full marks for this notebook cross-checks both); the kernel solutions
call the primer's own kernels (:mod:`kernels.primer`).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[1]) not in sys.path:
    sys.path.insert(0, str(HERE.parents[1]))

from autograder.kernelgrade.labbook import kernel_exercise_text, run_build_script  # noqa: E402
from autograder.kernelgrade.labbook import build_notebook as _build  # noqa: E402

LAB = "primer"

INTRO = """# 实验 · TileLang 入门

这份实验跟着「TileLang 入门」一章走一遍：先算账，再写 kernel，再看编译器和 GPU 怎么说。**前一半**（E1–E4、E8）是本章的计算题，
答案写进字典 `ANSWER`，运行紧跟着的 `check(...)` 格自查：它只说**对、错，还是格式不对**，从不显示标准答案。
**后一半**（K1–K3）要你写本章的三个 kernel：拷贝、向量化的缩放、按行求和。每题给出一个能编译、能运行的起点。

{{WHO}}

作答约定：带单位的量写成 `{"value": 数值, "unit": "单位"}`（`MB` 是 $10^6$ 字节，`KiB` 是 $2^{10}$ 字节，评分按你写的单位换算）；
只有一个整数答案的小问（block 数、线程数）必须精确；表格题写成字典；文字题写在 Markdown 格里，由助教批改。
机器参数用 `ledger.machines` 里 H200 的规格与标定值（`h200-spec`、`h200-calibrated`），与正文一致。

**kernel 题的接口**：把一个 `@tilelang.jit` 修饰的工厂函数赋给 `ANSWER["题号"]`。评分程序用关键字参数调用它
（例如 `copy_kernel(N=1000003, dtype="float16")`），取回它给出的 `T.prim_func`，自己编译（目标 sm_90a），
再按接口规定的顺序传入张量（缩放题还有一个 `T.float32` 标量）。输出张量由评分程序分配并预先填满 NaN，
kernel 不能自己分配输出（不要用 `out_idx`）。你的 Python 代码只在生成 kernel 时运行一次，而且是在一个不能联网、
不能启动子进程的受限进程里；检查与计时只调用编译好的 kernel。

**在哪里评什么**：没有 GPU 的机器上，计算题全部评分；每个 kernel 被生成、为 sm_90a 编译（需要 nvcc），并从生成的
代码里读出结构（每次访存的宽度、有没有块内归约与流水），给出结构分；正确性与速度标为「需要 GPU，未评」。在有 GPU 的
评分机上，另外在几种形状（含不是分块整数倍的形状与你的变体形状）上与 fp64 参考逐元素比较，并按课程的计时协议
（预热、每次测量前冲刷 L2、CUDA events、取中位数）与同一进程里实测的拷贝带宽比速度。

自查：保存后运行 `python -m autograder check primer 你的文件.ipynb`（与正式评分同一套流程）；notebook 里的
`check(ANSWER, "k2_scale")` 在你自己的进程里编译、读结构，有 GPU 时再粗测一次（只测一轮，仅供参考）。
"""

KERNEL_SETUP = """# kernel 题共用的导入（评分程序用的是这一格的原样，改动不会生效）
import tilelang
import tilelang.language as T

TARGET = {"kind": "cuda", "arch": "sm_90a"}"""

EXERCISES = {
    "E1": """## E1 · 一次启动有多少个 block（★）

拷贝 kernel 一个线程搬一个元素：$N = {{E1.N}}$ 个元素，每个 block {{E1.threads}} 个线程。网格有多少个 block？
最后一个 block 有多少个线程落在数组之外、没有元素可搬？换成每个线程负责 8 个连续元素的缩放 kernel，网格有多少个 block？
边界落在某个线程的 8 个元素中间时，生成的代码会怎样？""",
    "E2": """## E2 · 放在哪一级存储（★）

为下面五样数据各选一种存储层级（`global`、`shared`、`fragment`、`local` 之一），写成字典
`{"row_partial_sums": ..., ...}`，并在文字格里说明理由：

| 键 | 数据 |
|---|---|
| `row_partial_sums` | 行求和里每一行的部分和 |
| `gemm_b_tile` | 矩阵乘里 $B$ 的一个 tile（sm_90a 的 `wgmma`） |
| `gemm_accumulator` | 矩阵乘的累加器 |
| `mirror_row` | 镜像差里需要被“对面”线程读到的一行数据 |
| `thread_temporaries` | 每个线程自己用的四个临时变量 |""",
    "E3": """## E3 · 换成 fp32 的行求和（★★）

行求和的输入换成 fp32，形状 {{E3.M}}×{{E3.N}}，输出每行一个 fp32。按账本的记账规则（输入读一次、每行写一个值；
每行 $N-1$ 次加法）求字节、按 H200 标定带宽（`h200-calibrated`）的时间下界与算术强度。kernel 的写法为什么不用改？
哪一条约束值得重新检查？""",
    "E4": """## E4 · 行求和的片上预算（★★）

行求和的 tile 取 {{E4.blk_m}}×{{E4.blk_n}}、{{E4.stages}} 级流水、128 个线程，输入 fp16。共享内存一共要多少 KiB
（每级一个 tile）？这个 tile 的 fp32 fragment 摊到每个线程是多少个值？只看共享内存（H200 每个 SM 228 KB），
一个 SM 能驻留几个 block（放不下写 0）？""",
    "E8": """## E8 · 很长的行（★★★）

256×262144 的 fp16 行求和，tile 为 64×128（`blk_m` = 64，`blk_n` = 128），H200 有 132 个 SM。不切分时网格有几个 block、
多少比例的 SM 有活干？账本（`ledger.primer.split_for`）把列方向切成几段：取使网格接近每个 SM 一个 block 的最小的
2 的幂（block 数不少于 SM 数的九成即可），且能整除列方向的 tile 数。切分后一共多少次 fp32 原子加？
切分带来哪两个正确性上的后果？""",
}

KERNEL_TEXT = {
    "K1": ("primer_copy", {"correct": 3, "speed": 1},
           "本章的第一个 kernel。起点只启动了一个 block：改成 `T.Kernel(T.ceildiv(N, threads), threads=threads)`，"
           "一个线程搬一个元素。长度不是 `threads` 的整数倍时，越界的线程不能读写（tilelang 会为 `T.Parallel` 的下标"
           "自动加上边界判断）。速度档位很低：一个线程一次只搬一个元素，本来就到不了拷贝带宽，K2 才是要快的那一题。"),
    "K2": ("primer_scale", {"correct": 3, "speed": 2, "structure": 1},
           "起点是一个线程一个元素。让每个线程负责 `npt` 个连续元素（`T.Parallel(threads, npt)`），fp16 下取 8，"
           "每个操作数每次访存正好 16 字节；`y = x · s` 在 fp32 中计算，舍入一次回到 `dtype`。"),
    "K3": ("primer_row_sum", {"correct": 3, "speed": 2, "structure": 1},
           "起点让每个线程串行地加完一整行：对，但同一个 warp 的 32 个线程读的是 32 行，访存不合并。按本章的写法："
           "一个 block 管 `blk_m` 行，列方向按 `blk_n` 分块，在 `T.Pipelined` 里把 tile `T.copy` 进共享内存、"
           "再拷进 fp32 的 fragment，`T.reduce_sum` 得到每行的部分和，累加器先 `T.clear`。"),
}

SOLUTIONS = {
    "e1_a": 'N, t = P["E1.N"], P["E1.threads"]\nANSWER["e1_a"] = (N + t - 1) // t  # ceil(N / threads)',
    "e1_b": 'ANSWER["e1_b"] = ((N + t - 1) // t) * t - N',
    "e1_c": 'ANSWER["e1_c"] = (N + 8 * t - 1) // (8 * t)  # each block covers 8 * threads elements',
    "e1_d": "拷贝 kernel 的生成代码只多一个 `if`：越界线程跳过读写。缩放 kernel 里，边界落在某个线程的 8 个元素中间时，"
            "这 8 个元素不能再合成一次 16 字节的访问；因为 $N$ 是编译期常数、整个网格共用一份代码，编译器把每个线程的访存"
            "都退回到逐元素带判断的循环，不只是最后一个 block 变慢。",
    "e2_a": 'ANSWER["e2_a"] = {"row_partial_sums": "fragment", "gemm_b_tile": "shared", "gemm_accumulator": "fragment",\n'
            '                  "mirror_row": "shared", "thread_temporaries": "local"}',
    "e2_b": "部分和由 `T.reduce_sum` 写进 fragment，同一行的和在管这一行的线程里各有一份；`wgmma` 的 B 操作数必须来自共享内存，"
            "放进 fragment 时会退回 `mma.sync`；`T.gemm` 的累加器在寄存器里；对面线程的数据在别的线程的寄存器里，只有整个 "
            "block 可见的共享内存能交换；每个线程自己的临时变量用 `T.alloc_local`，不需要布局。",
    "e3_a": 'M, N = P["E3.M"], P["E3.N"]\nnbytes = M * N * 4 + M * 4  # x read once (fp32), one fp32 sum per row\n'
            'ANSWER["e3_a"] = {"value": nbytes / 1e6, "unit": "MB"}',
    "e3_b": 'from ledger.machines import get_machine\nbw = get_machine("h200-calibrated").bandwidth  # B/s\n'
            'ANSWER["e3_b"] = {"value": nbytes / bw * 1e6, "unit": "us"}',
    "e3_c": 'ANSWER["e3_c"] = {"value": M * (N - 1) / nbytes, "unit": "FLOP/B"}',
    "e3_d": "kernel 对 dtype 是参数化的：共享内存的 tile 与 fragment 跟着 dtype 变，逐元素的写法不用改。"
            "值得重新核对的是共享内存预算：同样的 tile 每级的字节翻倍，级数多时可能超出每个 block 的上限；"
            "行距的 16 字节对齐（TMA）在 fp32 下只要行长是 4 的倍数。",
    "e4_a": 'bm, bn, st = P["E4.blk_m"], P["E4.blk_n"], P["E4.stages"]\nsmem = st * bm * bn * 2  # fp16 tiles, one per stage\n'
            'ANSWER["e4_a"] = {"value": smem / 1024, "unit": "KiB"}',
    "e4_b": 'ANSWER["e4_b"] = bm * bn / 128',
    "e4_c": 'ANSWER["e4_c"] = (228 * 1024) // smem  # 228 KB of shared memory per SM',
    "e8_a": 'rows = (256 + 63) // 64\nANSWER["e8_a"] = rows',
    "e8_b": 'ANSWER["e8_b"] = {"value": 100 * min(rows, 132) / 132, "unit": "%"}',
    "e8_c": 'tiles, s = 262144 // 128, 1\nwhile rows * s < 0.9 * 132 and s * 2 <= tiles and tiles % (s * 2) == 0:\n'
            '    s *= 2\nANSWER["e8_c"] = s',
    "e8_d": 'ANSWER["e8_d"] = 256 * s  # one atomic add per row and per column segment',
    "e8_e": "其一，输出必须先清零：各段的部分和用原子加累积在输出上（课程的启动函数在 `split > 1` 时替你清零）；"
            "其二，浮点加法的顺序由原子加到达的先后决定，末位在两次运行之间可能不同，需要逐位可复现时要改用两趟写法。",
    # kernels: the reference solutions call the primer's own kernels
    "k1_copy": '''from kernels import primer


@tilelang.jit(target=TARGET)
def copy_kernel(N, dtype):
    # the primer's step 1: ceil(N / 256) blocks of 256 threads, one element per thread
    return primer.copy_kernel.get_tir(N, dtype, 256)


ANSWER["k1_copy"] = copy_kernel''',
    "k2_scale": '''from kernels import primer


@tilelang.jit(target=TARGET)
def scale_kernel(N, dtype):
    # the primer's step 2: 8 contiguous elements per thread (16-byte accesses in fp16)
    return primer.scale_kernel.get_tir(N, dtype, 256, 8)


ANSWER["k2_scale"] = scale_kernel''',
    "k3_row_sum": '''from kernels import primer


@tilelang.jit(target=TARGET)
def row_sum_kernel(M, N, dtype):
    # the primer's step 3: 64-row blocks, 128-column tiles through shared memory in a
    # two-stage T.Pipelined loop, T.reduce_sum into an fp32 accumulator
    return primer.row_sum_kernel.get_tir(M, N, dtype, 64, 128, 128, 2, 1, "shared")


ANSWER["k3_row_sum"] = row_sum_kernel''',
}


def build(variant=None, student=None):
    """The instructor notebook for ``variant`` (default: the common numbers); ``student`` names whose."""
    texts = dict(EXERCISES)
    for ex, (task, pts, extra) in KERNEL_TEXT.items():
        texts[ex] = kernel_exercise_text(ex, task, pts, extra)
    return _build(LAB, INTRO, KERNEL_SETUP, texts, SOLUTIONS, variant, student)


if __name__ == "__main__":
    run_build_script(LAB, HERE, build)
