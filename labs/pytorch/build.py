"""Build ``labs/pytorch/pytorch.ipynb`` (the instructor notebook) from this file and ``spec.py``.

``python labs/pytorch/build.py`` rewrites the notebook; ``--check`` exits 1 when the file
on disk differs from what this script builds (CI uses it).  The solutions below compute
their answers from first principles (formulas on the exercise's numbers, read from ``P``);
the grader's references come from ``ledger``, so the instructor notebook scoring 100 % is
a real cross-check of both.

:func:`build` also makes one student's notebook: ``build(variant, student)`` puts that
student's numbers in the exercise texts, the prompts and ``P``, and binds ``check`` to the
student (``python -m autograder release pytorch --student ID`` strips the solutions).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parents[1]) not in sys.path:
    sys.path.insert(0, str(HERE.parents[1]))

import nbformat  # noqa: E402

from autograder.labs import load_lab, nbgrader_meta as _meta, params_literal as _p_literal, write_readable  # noqa: E402
from autograder.parts import render as render_text  # noqa: E402

OUT = HERE / "pytorch.ipynb"
LAB = "pytorch"

INTRO = """# 实验 · 从 PyTorch 到 kernel：给算子记账（习题 E1–E13）

这份实验把「从 PyTorch 到 kernel」一章的 13 道习题拆成一个个可以自动判分的小问。每个小问都有一个答案格，
你只需要把结果赋给字典 `ANSWER` 里对应的键，再运行紧跟其后的 `check(...)` 格，就能知道这一问
**对、错，还是格式不对**（它从不告诉你标准答案）。

作答约定：

* 带单位的量写成 `{"value": 数值, "unit": "单位"}`。十进制与二进制前缀不同：`GB` 是 $10^9$ 字节，
  `GiB` 是 $2^{30}$ 字节；时间用 `s`、`ms`、`us`、`ns`；算术强度用 `FLOP/B`。
* 单选题写一个字符串，多选题写一个集合（`set()` 表示一个都没有），表格题写字典。
* 函数题给出一个函数，评分程序会用它自己挑的输入去调用。
* 需要文字解释的小问写在 Markdown 格里，由助教人工批改。
* 每个数值小问的标题后面写着它的容差（例如「相对误差 ≤ 1%」）。

{{WHO}}

默认约定（题目没有另行说明时）：fp16/bf16 每元素 2 字节；机器用 H200 的标定参数
（`ledger.machines.get_machine("h200-calibrated")`）；账本口径与正文相同：输入读一次、输出写一次、
片上中间量不计，逐元素运算与超越函数各记 1 FLOP，一次乘加记 2 FLOP。

你可以随时 `import ledger` 来验算，但请先自己推一遍。"""

#: the intro's ``{{WHO}}`` paragraph: one student's notebook, or the common version (the book's numbers)
WHO_STUDENT = """**你的题目参数（variant）**：这份 notebook 是发给 `{student}` 的。题目里的尺寸与数据类型（正文中的数字）
每人不同，也与书上的例子不同；准备格里的字典 `P` 列出了你的全部参数，`check` 也按你的参数判对错。
书上的参考答案对应的是书里的数字，不能直接照抄。"""
WHO_COMMON = """**题目参数**：这是公共版本（nbgrader 课程与自学使用），题目里的数字与书上的例子相同，可以对照书上的参考答案。
准备格里的字典 `P` 列出了这些数字，`check` 也按它们判对错。"""

SETUP = """# 运行本格一次：准备答案字典、自查函数与你的题目参数
try:
    from autograder import checker
    check = checker({{CHECKER}})
except ImportError:  # 不在课程环境里时，自查不可用，作答不受影响
    def check(*args, **kwargs):
        print("autograder 未安装：请在课程仓库的 .venv 里打开本 notebook")
P = {{P}}  # 你的题目参数：正文里的数字就是这些
ANSWER = {}"""

# exercise statements: markdown shown before the exercise's parts
EXERCISES = {
    "E1": """## E1 · 训练一步的四个阶段（★）

一次训练迭代由前向、反向、优化器更新与梯度通信组成。请按「算术强度与平衡点之比」这一个标准，
把每个阶段归入 `"compute-bound"`、`"memory-bound"` 或 `"transfer"`（只搬数据、不做运算）之一；
参照的模型是正文「把算子拼成模型：8B 级模型的两本账」一节的 8B 模型（序列长度 4096、8 卡、H200 标定参数）。
再算出 AdamW 每更新一个参数要搬多少字节：梯度为 {{E1.grad}}，参数与两个动量 m、v 都是 {{E1.state}}。""",
    "E2": """## E2 · 同一个 attention，两种判据（★）

取 1 个样本、32 个头、head_dim 128。prefill 用 flash 式写法（分数不落显存）、fp16，序列长度 {{E2.S}}；
decode 每步只有 1 个 query，KV cache 长度 {{E2.L}}，数据类型（KV cache 与 q、o）为 {{E2.dtype}}。
分别求两者的算术强度，并解释为什么一个偏算力、一个偏带宽。""",
    "E3": """## E3 · 规格值与标定值（★★）

H200 的厂商规格是 fp16 张量核 989.5 TFLOPS、显存 4800 GB/s；课程采用的标定系数把它们折成约
729 TFLOPS 与 4502 GB/s（见 `ledger/machines/`）。求两种口径下的平衡点，再判断：在下面这张算子表里，
把平衡点从标定值换成规格值，哪些算子的判据会翻转？

| id | 算子 |
|---|---|
| `add` | 逐元素加，$4096^2$ 个元素 |
| `chain2_eager` / `chain2_fused` | `sin(cos(x))`，两个 kernel / 融合成一个 |
| `layernorm_fused` / `layernorm_3pass` | LayerNorm $8192\\times4096$，融合 / 三趟拆分 |
| `gemm_4096` / `gemm_1024` / `gemm_512` | 方阵 GEMM，边长 4096 / 1024 / 512 |
| `attn_prefill_scores` / `attn_prefill_flash` | prefill attention（S=4096），分数落显存 / flash 式 |
| `attn_decode` | decode attention，KV 长度 32768 |
| `adamw` | 7B 参数的 AdamW 一步 |
| `allreduce` | 8B 参数 bf16 梯度、8 卡 ring all-reduce |""",
    "E4": """## E4 · 链越长，收益越大吗？（★★）

$k$ 个逐元素算子串成一条链：逐个执行时每个算子都读一遍输入、写一遍输出；融合成一个 kernel 后只读
一遍、写一遍。先求 $k={{E4.k}}$ 时这条链融合前后的访存之比；再设想这条链（融合前）只占整个
（纯带宽受限的）模型访存的 {{E4.pct}}%，融合后整个模型最多能快多少倍。""",
    "E5": """## E5 · 手算 LayerNorm（★★）

$M = {{E5.M}}$ 行、$H = {{E5.H}}$ 列、fp16，按每元素 8 FLOP 记运算量（gamma、beta 不计访存）。对比
「一个融合 kernel」与「均值、方差、归一化加仿射各一趟」两种实现的访存量、算术强度与 H200 标定参数下的
时间下界。最后把 $H$ 改成 512，融合版的判据是什么？""",
    "E6": """## E6 · GEMM 的脊点（★★）

机器换成 H100 的规格值（1000 TFLOPS、3.0 TB/s）。按「A、B 各读一次、C 写一次」记账，求 ${{E6.N}}^3$ fp16 GEMM
的算术强度和判据。再写一个函数 `ridge_edge(balance, elem_bytes)`：给定平衡点（FLOP/B）与每元素字节数，
返回方阵 GEMM 的算术强度恰好等于平衡点时的边长 $N$（实数即可，不必取整），形如 `{"n": ...}`。""",
    "E7": """## E7 · 分数矩阵为什么是 $O(S^2)$（★★★）

prefill attention，1 个样本、32 头、$d = 128$、fp16，运算量与访存按正文「记账：一个算子要搬多少字节、做多少运算」一节的口径：Q、K、V 读一次、
O 写一次；「分数落显存」的写法里，$S\\times S$ 的分数（与概率）矩阵在显存里往返 6 趟。
求 $S = {{E7.S}}$ 时两种写法的访存量与比值，再求 $S = {{E7.S2}}$ 时的比值，并判断比值随 $S$ 怎样增长。""",
    "E8": """## E8 · 读账本代码（★★）

打开 `ledger/ops.py`，读 `attention_prefill` 的实现与文档。它给 softmax 的每个分数记几个 FLOP？如果某个实现把
缩放、mask、softmax 与 PV 合成了一个 kernel，但 $QK^\\top$ 的分数矩阵仍写回显存、再由它读一次（共 2 趟），
$S = {{E8.S}}$（其余同 E2 的 prefill）时总访存是多少？
FLOPs 公式里的两项各代表什么？""",
    "E9": """## E9 · 读 `tilelang.compile` 的签名（★★）

在本机装好的 tilelang 里查看 `tilelang.compile`（`inspect.signature` 与 `help`）。回答：`execution_backend`
能取哪些值？`target` 接受哪几种类型的输入（写类型名，不带模块路径）？docstring 里给 `target` 举的字典例子
是什么？`target` 为 `None` 时它去读哪个环境变量？最后说说这个签名透露出 TileLang 处在软件栈的哪一层。""",
    "E10": """## E10 · 自定义算子与 `torch.compile` 的接缝（★★★）

阅读 TileOPs 仓库 `src/tileops/ops/compile_boundary.py` 开头的模块说明（正文「torch.compile：Dynamo、AOTAutograd 与 Inductor」一节摘录了要点），用自己的话回答：
传给自定义算子的 key 为什么必须是字符串？Inductor 把假张量的输出形状写进磁盘缓存这件事，和「同一个 key
不能复用」有什么关系？为什么被 Dynamo 追踪的 `forward` 里不能构造 kernel？""",
    "E11": """## E11 · 换一台机器，判据会翻转吗？（★★）

运行 `python -m ledger.ops` 与 `python -m ledger.ops --machine h100-spec`，逐行比较判据列（算子 id 见 E3 的表）。
哪些算子在 H200 标定参数与 H100 规格之间翻转？`gemm_512` 在三台机器（`h200-calibrated`、`h200-spec`、
`h100-spec`）上各是什么判据？{{E11.dtype}} 逐元素加的算术强度是多少，为什么它在哪台机器上都是 memory-bound？""",
    "E12": """## E12 · 序列长度与训练一步的构成（★★★）

用 `ledger.step_budget`（或 `python -m ledger.step_budget --seq-len S`）在 H200 标定参数下，把序列长度依次设为
512、4096、32768、131072，记下前向、反向、优化器、通信四段各占一步时间的百分比。哪一段的占比变化最大？
序列长度变了、自身耗时却基本不动的是哪几段？""",
    "E13": """## E13 · 给 SiLU 和 RoPE 记账（★★★）

仿照 `ledger/ops.py` 的写法，为两个算子各写一个账本函数，返回 `{"flops": ..., "bytes": ...}`：

* SiLU，$y = x\\,\\sigma(x)$，$n$ 个元素：sigmoid 拆成取负、exp、加一、求倒数共 4 次，再乘 $x$；
* RoPE 的旋转部分，张量形状 $B\\times H\\times S\\times d$，沿最后一维两两配对，每对算
  $y_1 = x_1\\cos\\theta - x_2\\sin\\theta$、$y_2 = x_2\\cos\\theta + x_1\\sin\\theta$（cos、sin 已预先算好，不计访存）。

`dtype` 取 `"fp32"`、`"fp16"`、`"bf16"`、`"fp8"` 之一。再求 SiLU 在 $n = {{E13.side}}^2$、{{E13.dtype}} 时的时间下界与 RoPE
（$1\\times32\\times4096\\times128$，fp16）的判据，并说明把它们与残差相加融进一个 kernel 后访存量怎样变化。""",
}

# instructor solutions: code for auto parts, model answers (markdown) for manual parts
SOLUTIONS = {
    "e01_a": 'ANSWER["e01_a"] = {"forward": "compute-bound", "backward": "compute-bound",\n'
             '                  "optimizer": "memory-bound", "communication": "transfer"}',
    "e01_b": 'ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}  # bytes per element\n'
             'grad, state = ELEM[P["E1.grad"]], ELEM[P["E1.state"]]  # gradient; param, m, v\n'
             'ANSWER["e01_b"] = {"value": grad + 3 * state + 3 * state, "unit": "B/param"}',
    "e01_c": "前向与反向以 GEMM 和 attention 为主，长序列下运算量远超必须搬运的字节，落在脊点右侧；反向对每个 GEMM "
             "要算输入梯度与权重梯度两次乘法，运算量约是前向的两倍。优化器每个参数只有十几次运算，却要读梯度、参数、"
             "m、v 再写回后三者，强度远低于脊点。通信只搬梯度、不做运算。字节数来自 AdamW 的输入输出张量："
             "bf16 的 grad（2 B）加上 fp32 的 param、m、v 各读一次写一次（24 B），见 CANN 的 aclnnApplyAdamW 文档。",
    "e02_a": 'B, H, S, d, b = 1, 32, P["E2.S"], 128, 2\n'
             'flops = B * H * (4 * S * S * d + 5 * S * S)\n'
             'nbytes = 4 * B * H * S * d * b  # Q, K, V read, O written\n'
             'ANSWER["e02_a"] = {"value": flops / nbytes, "unit": "FLOP/B"}',
    "e02_b": 'ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}\n'
             'B, H, L, d, b = 1, 32, P["E2.L"], 128, ELEM[P["E2.dtype"]]\n'
             'flops = B * H * (4 * L * d + 5 * L)\n'
             'nbytes = 2 * B * H * L * d * b + 2 * B * H * d * b  # K/V cache, q and o\n'
             'ANSWER["e02_b"] = {"value": flops / nbytes, "unit": "FLOP/B"}',
    "e02_c": "prefill 里每个 K、V 元素被 S 个 query 复用，一个字节对应上千次运算；decode 只有一个 query，"
             "读进来的每个 K、V 元素只参与一次乘加（约 1 FLOP/B），所以前者受算力限制、后者受带宽限制。",
    "e03_a": 'ANSWER["e03_a"] = {"value": 989.5e12 / 4800e9, "unit": "FLOP/B"}',
    "e03_b": 'peak = 989.5e12 * 0.7370  # tensor-core burst calibration\n'
             'bw = 4800e9 * 0.9380      # HBM calibration\n'
             'ANSWER["e03_b"] = {"value": peak / bw, "unit": "FLOP/B"}',
    "e03_c": 'ANSWER["e03_c"] = {"gemm_512"}  # AI = 512/3 = 170.7 lies between 162 and 206',
    "e03_d": "其一，H200 标定文件里 fp16 张量核的系数只有 0.737（短时）与 0.668（持续，受 700 W 功耗上限）；"
             "其二，显存带宽系数 0.938，而纯拷贝混合只有 0.818。条件：2048 MB 工作集、5 次×200 轮、显存 3201 MHz。"
             "换成规格值后平衡点从约 162 升到约 206，只影响强度落在两者之间的算子（如 512 边长的 GEMM）。",
    "e04_a": 'k = P["E4.k"]\nANSWER["e04_a"] = (2 * k) / 2  # 2k passes eager, 2 fused',
    "e04_b": 'k = P["E4.k"]\np, r = P["E4.pct"] / 100, (2 * k) / 2\nANSWER["e04_b"] = 1 / ((1 - p) + p / r)',
    "e04_c": "链本身的收益由省下的中间张量往返决定，约为 k 倍；端到端收益取决于这条链的访存在整个模型里占多大比例。"
             "例如大模型训练里一条很长的逐元素链，只占总时间的百分之一，融合后整体也快不到百分之一。",
    "e05_a": 'M, H, b = P["E5.M"], P["E5.H"], 2\nANSWER["e05_a"] = {"value": 2 * M * H * b / 1e6, "unit": "MB"}',
    "e05_b": 'ANSWER["e05_b"] = {"value": 8 * M * H / (2 * M * H * b), "unit": "FLOP/B"}',
    "e05_c": 'ANSWER["e05_c"] = {"value": 4 * M * H * b / 1e6, "unit": "MB"}  # x read 3 times, y written once',
    "e05_d": 'ANSWER["e05_d"] = {"value": 8 * M * H / (4 * M * H * b), "unit": "FLOP/B"}',
    "e05_e": 'bw = 4800e9 * 0.9380\nANSWER["e05_e"] = {"value": 2 * M * H * b / bw * 1e6, "unit": "us"}',
    "e05_f": 'ANSWER["e05_f"] = {"value": 4 * M * H * b / bw * 1e3, "unit": "ms"}  # any time unit works',
    "e05_g": 'ANSWER["e05_g"] = "memory-bound"',
    "e05_h": "算术强度是每元素运算数与每元素字节数之比，与 H 无关；H 变小只让总量变小，强度仍是 1～2 FLOP/B，远在脊点左侧。",
    "e06_a": 'N, b = P["E6.N"], 2\nANSWER["e06_a"] = {"value": 2 * N**3 / (3 * N * N * b), "unit": "FLOP/B"}',
    "e06_b": 'N, b = P["E6.N"], 2\nbalance = 1000e12 / 3.0e12  # H100 spec: FLOP/s over B/s\n'
             'ANSWER["e06_b"] = "compute-bound" if 2 * N / (3 * b) > balance else "memory-bound"',
    "e06_c": 'def ridge_edge(balance, elem_bytes):\n'
             '    # AI = 2N^3 / (3 N^2 b) = 2N / (3b)  ->  N = 3 b balance / 2\n'
             '    return {"n": 3 * elem_bytes * balance / 2}\n\n'
             'ANSWER["e06_c"] = ridge_edge',
    "e07_a": 'H, d, b = 32, 128, 2\n'
             'def attn_bytes(S, passes):\n'
             '    return 4 * H * S * d * b + passes * H * S * S * b\n'
             'S = P["E7.S"]\n'
             'ANSWER["e07_a"] = {"value": attn_bytes(S, 6) / 1e9, "unit": "GB"}',
    "e07_b": 'S = P["E7.S"]\nANSWER["e07_b"] = {"value": attn_bytes(S, 0) / 2**20, "unit": "MiB"}',
    "e07_c": 'S = P["E7.S"]\nANSWER["e07_c"] = attn_bytes(S, 6) / attn_bytes(S, 0)',
    "e07_d": 'S2 = P["E7.S2"]\nANSWER["e07_d"] = attn_bytes(S2, 6) / attn_bytes(S2, 0)',
    "e07_e": 'ANSWER["e07_e"] = "linear"  # ratio = 1 + 6 S / (4 d)',
    "e07_f": "分数矩阵有 S² 个元素，它的往返访存随 S 平方增长，而 Q、K、V、O 只随 S 线性增长，所以两者之比随 S "
             "线性变大；flash 式把分数留在片上，访存回到 O(S)。",
    "e08_a": 'import inspect, ledger.ops\n'
             'print(inspect.getsource(ledger.ops.attention_prefill)[:300])\n'
             'ANSWER["e08_a"] = 5  # subtract max, exp, sum, divide ... per score (SOFTMAX_FLOPS_PER_SCORE)',
    "e08_b": 'S = P["E8.S"]\nANSWER["e08_b"] = {"value": attn_bytes(S, 2) / 1e9, "unit": "GB"}',
    "e08_c": "4·S²·d 是两次矩阵乘（QKᵀ 与 PV）的运算量：各有 S²·d 次乘加，每次乘加记 2 FLOP；"
             "5·S² 是 softmax 对每个分数做的约 5 次运算（减最大值、exp、求和、除法等）。",
    "e09_a": '# 在交互环境里查看（评分时不必再导入 tilelang，导入要几秒）：\n'
             '#   import inspect, tilelang\n'
             '#   inspect.signature(tilelang.compile).parameters["execution_backend"].annotation\n'
             'ANSWER["e09_a"] = {"auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl"}',
    "e09_b": '#   help(tilelang.compile)  ->  "target : str, dict, or tvm.target.Target, optional"\n'
             'ANSWER["e09_b"] = {"str", "dict", "Target"}',
    "e09_c": 'ANSWER["e09_c"] = {"kind": "cuda", "arch": "sm_90"}',
    "e09_d": 'ANSWER["e09_d"] = "TILELANG_DEFAULT_TARGET"',
    "e09_e": "它接收已经写好的 TIR PrimFunc，选择目标硬件与执行后端，产出可以直接用 PyTorch 张量调用的 kernel："
             "它只管一个算子怎样编译成快的 kernel，不管整张计算图，位于 Inductor 之下、CUDA 之上。",
    "e10_a": "Dynamo 把字符串参数当作编译期常量，而整数会被泛化成符号变量；key 若是 int，不同 key 会共用同一份图，"
             "取不到各自的 kernel。",
    "e10_b": "Inductor 把假实现给出的输出形状烤进磁盘上的编译产物；同一个 key 若换了形状，缓存里的旧形状就会错，"
             "所以一个 key 只能对应一种 kernel。",
    "e10_c": "被追踪的代码会被 Dynamo 变成图，kernel 的构造、缓存查找与编译是有副作用的 Python 逻辑，无法被捕获；"
             "这些必须放在未追踪的一侧，forward 里只调用已经注册好的算子。",
    "e11_a": 'ANSWER["e11_a"] = {"gemm_512"}',
    "e11_b": 'ANSWER["e11_b"] = {"h200-calibrated": "compute-bound", "h200-spec": "memory-bound",\n'
             '                  "h100-spec": "memory-bound"}',
    "e11_c": 'ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}\n'
             'b = ELEM[P["E11.dtype"]]\n'
             'ANSWER["e11_c"] = {"value": 1 / (3 * b), "unit": "FLOP/B"}  # 1 FLOP per 3 elements moved',
    "e11_d": "它每个元素只做 1 次加法，却要读两个、写一个元素；强度恒为 1/(3b)，与规模无关。"
             "要让它偏算力，平衡点得低于 1/6，没有哪台加速器的带宽会比算力还充裕到这种程度。",
    "e12_a": 'from ledger.step_budget import step_budget\n'
             'ANSWER["e12_a"] = {s: {}  for s in (512, 4096, 32768, 131072)}\n'
             'for s in ANSWER["e12_a"]:\n'
             '    shares = step_budget("h200-calibrated", seq=s).shares()\n'
             '    ANSWER["e12_a"][s] = {"forward": shares["forward"], "backward": shares["backward"],\n'
             '                          "optimizer": shares["optimizer"], "communication": shares["comm"]}',
    "e12_b": 'ANSWER["e12_b"] = "optimizer"',
    "e12_c": 'ANSWER["e12_c"] = {"optimizer", "communication"}',
    "e12_d": "优化器的访存只与参数个数有关，和序列长度无关；前向、反向的运算量却随序列长度增长（attention 部分还是平方）。"
             "分母变大、分子不变，优化器的占比就被迅速稀释；通信同理，它的绝对时间不变，只是份额变小。",
    "e13_a": 'ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}\n\n'
             'def silu_cost(n, dtype="fp16"):\n'
             '    # sigmoid: neg, exp, add, reciprocal = 4 FLOP; times x = 1 FLOP\n'
             '    return {"flops": 5 * n, "bytes": 2 * n * ELEM[dtype]}  # read x, write y\n\n'
             'ANSWER["e13_a"] = silu_cost',
    "e13_b": 'def rope_cost(batch, heads, seq, head_dim, dtype="fp16"):\n'
             '    n = batch * heads * seq * head_dim\n'
             '    # per pair: 4 multiplies + 2 add/sub = 6 FLOP -> 3 FLOP per element\n'
             '    return {"flops": 3 * n, "bytes": 2 * n * ELEM[dtype]}\n\n'
             'ANSWER["e13_b"] = rope_cost',
    "e13_c": 'n = P["E13.side"] ** 2\nbw = 4800e9 * 0.9380\n'
             'ANSWER["e13_c"] = {"value": silu_cost(n, P["E13.dtype"])["bytes"] / bw * 1e6, "unit": "us"}',
    "e13_d": 'ANSWER["e13_d"] = "memory-bound"',
    "e13_e": "单看「输入读一次、输出写一次」，融合后这一趟读写并不会少；省下的是几个算子之间中间张量的写回与再读，"
             "原本 k 个算子要 2k 趟，融合后回到 2 趟。",
}


def build(variant: dict | None = None, student: str | None = None) -> nbformat.NotebookNode:
    """The instructor notebook (solutions in place) for ``variant`` (default: the book's numbers)."""
    spec, _ = load_lab(LAB)
    variant = spec.default_variant() if variant is None else variant
    missing = [p.grade_id for p in spec.parts if p.grade_id not in SOLUTIONS]
    if missing:
        raise SystemExit(f"build: no solution for {missing}")
    who = WHO_STUDENT.format(student=student) if student else WHO_COMMON
    intro = render_text(INTRO.replace("{{WHO}}", who), variant)
    setup = (SETUP.replace("{{CHECKER}}", repr(LAB) + (f", {student!r}" if student else ""))
             .replace("{{P}}", _p_literal(variant)))
    nb = nbformat.v4.new_notebook()
    nb.metadata.update({"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                        "language_info": {"name": "python"}})
    cells = [nbformat.v4.new_markdown_cell(intro, metadata=_meta("intro", solution=False, grade=False, locked=True)),
             nbformat.v4.new_code_cell(setup, metadata=_meta("setup", solution=False, grade=False, locked=True))]
    for ex in spec.exercises:
        cells.append(nbformat.v4.new_markdown_cell(render_text(EXERCISES[ex], variant), metadata=_meta(
            f"{ex.lower()}_text", solution=False, grade=False, locked=True)))
        for p in (q for q in spec.parts if q.exercise == ex):
            prompt = p.prompt_for(variant)
            label = f"**{p.grade_id}**（{p.points:g} 分）· {prompt}"
            if p.kind == "manual":
                cells.append(nbformat.v4.new_markdown_cell(
                    f"{label}\n\n" + SOLUTIONS[p.grade_id],
                    metadata=_meta(p.grade_id, solution=True, grade=True, locked=False, points=p.points)))
                continue
            src = (f"# {p.grade_id} · {prompt}（容差：{p.tolerance}）\n"
                   f"### BEGIN SOLUTION\n{SOLUTIONS[p.grade_id]}\n### END SOLUTION")
            cells.append(nbformat.v4.new_code_cell(src, metadata=_meta(
                f"{p.grade_id}_answer", solution=True, grade=False, locked=False)))
            test = (f'check(ANSWER, "{p.grade_id}")\n'
                    "### BEGIN HIDDEN TESTS\n"
                    f'check(ANSWER, "{p.grade_id}", strict=True, quiet=True)  # nbgrader: raises unless right\n'
                    "### END HIDDEN TESTS")
            cells.append(nbformat.v4.new_code_cell(test, metadata=_meta(
                p.grade_id, solution=False, grade=True, locked=True, points=p.points)))
    nb.cells = cells
    for i, c in enumerate(nb.cells):  # stable ids: rebuilding gives the same file
        c["id"] = f"c{i:03d}"
    return nb


def render(nb) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the pytorch lab's instructor notebook.")
    ap.add_argument("--check", action="store_true", help="exit 1 if pytorch.ipynb is out of date")
    args = ap.parse_args(argv)
    text = render(build())
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("pytorch.ipynb is up to date" if same else "pytorch.ipynb is out of date: run labs/pytorch/build.py")
        return 0 if same else 1
    write_readable(OUT, text)
    print(f"wrote {OUT.relative_to(HERE.parents[1])} ({len(build().cells)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
