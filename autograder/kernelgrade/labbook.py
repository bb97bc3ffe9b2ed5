"""Build the instructor notebook of a lab with kernel parts (used by ``labs/<lab>/build.py``).

The notebook carries nbgrader metadata like the ``pytorch`` lab's: a locked intro, a locked
setup cell (``ANSWER``, ``check`` bound to the lab and the student, the student's
parameters ``P``), a locked kernel-setup cell (``kernel_setup``: the imports the kernel
cells use; the grader takes this cell from the instructor's notebook, never from a
submission), then per exercise a locked text cell, one answer cell per answer
(``<grade_id>_answer``, solution between ``### BEGIN SOLUTION`` / ``### END SOLUTION``)
and one locked ``check`` cell per graded part with nbgrader's hidden test (``strict``;
kernel parts end with ``points=True``, whose number nbgrader takes as partial credit).
Kernel exercises get their text from the task: the interface, the student's variant shape,
the timing shape, the ledger's bytes and FLOPs there, the bound they imply, the speed
levels and the structure the grader reads.  Numbers are computed here from ``ledger`` when
the notebook is built; ``build.py --check`` fails when they are stale.  ``build(variant,
student)`` makes one student's notebook (``python -m autograder release LAB --student ID``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from .tasks import AscendTask, CudaTask, get_task
from ..labs import nbgrader_meta as _meta, params_literal as _p_literal, write_readable

__all__ = ["kernel_exercise_text", "build_notebook", "render", "main", "STRUCTURE_TEXT", "SETUP", "WHO_STUDENT",
           "WHO_COMMON", "VARIANT_TEXT"]

SETUP = """# 运行本格一次：准备答案字典、自查函数与你的题目参数
try:
    from autograder import checker
    check = checker({{CHECKER}})
except ImportError:  # 不在课程环境里时，自查不可用，作答不受影响
    def check(*args, **kwargs):
        print("autograder 未安装：请在课程仓库的 .venv 里打开本 notebook")
P = {{P}}  # 你的题目参数：题目里的数字（含 kernel 题的变体形状）就是这些
ANSWER = {}"""

#: the intro's ``{{WHO}}`` paragraph: one student's notebook (``{student}``, then the lab's
#: ``variant_text``), or the common version, whose numbers are the book's
WHO_STUDENT = "**你的题目参数（variant）**：这份 notebook 是发给 `{student}` 的。{text}"
VARIANT_TEXT = ("题目里的尺寸、数据类型与每道 kernel 题的变体形状都由学号决定，也与书上的例子不同；发布时签名写进 notebook，"
                "评分时核对。准备格里的字典 `P` 列出了你的全部参数，`check` 也按它们判对错。书上折叠的参考答案对应的是书里的"
                "数字，只能用来对照思路，照抄会判错。")
WHO_COMMON = ("**题目参数**：这是公共版本（nbgrader 课程与自学使用），题目里的数字与书上的例子相同，可以对照书上折叠的"
              "参考答案。准备格里的字典 `P` 列出了这些数字，`check` 也按它们判对错。")

STRUCTURE_TEXT = {
    "vector_load_16B": "读输入的全局访存每线程一次 16 字节（如 `uint4`）",
    "vector_store_16B": "写输出的全局访存每线程一次 16 字节",
    "vector_load_8B": "读输入（x）的全局访存至少 8 字节一次",
    "vector_store_8B": "写输出的全局访存至少 8 字节一次",
    "shared_staging": "A、B 的 tile 先搬进共享内存",
    "tensor_core": "乘加走张量核（`wgmma` 或 `mma.sync`）",
    "pipelined": "主循环是 `T.Pipelined`，`num_stages ≥ 2`",
    "async_copy": "全局 → 共享的搬运是异步的（TMA 或 `cp.async`）",
    "lowers": "能降级到 AscendC（走到 bisheng 调用之前）",
    "vector_core": "是 Vector 核上的 kernel",
    "vf_region": "计算在 `T.SimtVF` / SIMD 向量函数区域里",
    "double_buffered": "调度后 UB 缓冲至少有两份（搬运与计算重叠）",
    "pipe_sync": "编译器插入了流水之间的同步标志",
    "row_reduction": "每行有一次块内或 warp 内的归约",
    "reads_tables": "读了 cos/sin 表",
}


def _num(v) -> str:
    if isinstance(v, int) and v >= 1 << 16 and v & (v - 1) == 0:
        return f"2^{v.bit_length() - 1}"
    return str(v)


def _si(x: float, unit: str) -> str:
    for f, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= f:
            return f"{x / f:.1f} {p}{unit}"
    return f"{x:.0f} {unit}"


def kernel_exercise_text(ex: str, task_key: str, points: dict, extra: str = "") -> str:
    """The locked text of one kernel exercise, from the task and the ledger (``{{K1.N}}``
    placeholders for the student's variant are filled in when the notebook is built)."""
    from ledger.machines import get_machine

    task = get_task(task_key)
    pts = " + ".join(f"{v:g}" for v in points.values())
    lines = [f"## {ex} · {task.title}（{pts} 分）", ""]
    if extra:
        lines += [extra, ""]
    lines += [f"**接口** `{task.interface_doc}`", ""]
    if isinstance(task, CudaTask) and task.variant_pools:
        mine = "、".join(f"`{name}={{{{{ex}.{name}}}}}`" for name, _, _ in task.variant_pools)
        lines += [f"**你的变体形状**（每人不同，在 `P` 里）：{mine}。评分时它和下面的固定形状一起检查。", ""]
    if isinstance(task, CudaTask):
        nbytes, flops, src = task.cost(task.time_shape)
        m = get_machine("h200-calibrated")
        bw = m.bandwidth
        shape = "、".join(f"{k}={_num(v)}" for k, v in task.time_shape.items())
        mem_us = nbytes / bw * 1e6
        if task.metric == "frac_copy":  # elementwise work runs on the CUDA cores: the bytes decide
            roof = f"带宽 {bw / 1e12:.2f} TB/s"
            bound, which = mem_us, "带宽"
        else:
            cmp_us = flops / m.peak_flops * 1e6
            roof = f"带宽 {bw / 1e12:.2f} TB/s、{m.default_compute} 峰值 {m.peak_flops / 1e12:.0f} TFLOP/s"
            bound, which = max(mem_us, cmp_us), ("带宽" if mem_us >= cmp_us else "算力")
        lines += [f"**先算账（analytic，`{src}`）** 计时形状 {shape}：最少搬运 {_si(nbytes, 'B')}、{_si(flops, 'FLOP')}，"
                  f"按 H200 标定参数（{roof}）下界约 {bound:.1f} µs，受{which}限制。", ""]
        if task.metric == "frac_copy":
            lv = "；".join(f"达到同一次运行实测拷贝带宽的 {100 * t:.0f}% 得 {100 * f:.0f}%" for t, f in task.levels)
            bar = "速度以 *账本字节 ÷ 实测时间* 与评分机上同一进程实测的设备拷贝带宽之比计"
        else:
            lv = "；".join(f"达到 {task.baseline_label} 速度的 {t:g} 倍得 {100 * f:.0f}%" for t, f in task.levels)
            bar = f"速度以与同一进程里 {task.baseline_label} 的时间之比计"
        lines += [f"**评分** 正确性：固定形状（含不是分块整数倍的形状）加上你自己的变体形状，输入每次重新随机生成，"
                  f"输出先填入毒值（NaN），与 fp64 参考逐元素比较，一个元素都不能超出容差，输入不许被改写。"
                  f"{bar}：{lv}（速度分只给正确的 kernel；快于物理下界的时间不计分并标记给教师）。"
                  + (f"结构（CPU 上读 sm_90a 生成代码）：" + "；".join(STRUCTURE_TEXT[k] for k in task.structure) + "。"
                     if task.structure else ""), ""]
    else:
        lines += ["**评分（lowered on CPU）** 在 CPU 上走 tilelang 的昇腾编译流程，停在 bisheng 调用之前，读生成的 AscendC："
                  + "；".join(STRUCTURE_TEXT[k] for k in task.structure) + "。从未在 NPU 上运行，因此不评正确性与速度。", ""]
    return "\n".join(lines)


def build_notebook(lab: str, intro: str, kernel_setup: str, texts: dict, solutions: dict,
                   variant: dict | None = None, student: str | None = None, variant_text: str = VARIANT_TEXT):
    """The instructor notebook (solutions in place) for ``variant`` (default: the common
    numbers); ``texts`` per exercise, ``solutions`` per answer grade_id.  ``{{WHO}}`` in the
    intro is a paragraph of its own that says whose notebook it is: ``student``'s (then
    ``variant_text``: the numbers are theirs) or the common version's (the book's numbers)."""
    import nbformat

    from ..labs import load_lab
    from ..parts import render as render_text

    spec, _ = load_lab(lab)
    variant = spec.default_variant() if variant is None else variant
    answers = {}
    for p in spec.parts:
        key = p.reference().answer if p.kind == "kernel" else p.grade_id
        answers.setdefault(key, p)
    missing = [k for k in answers if k not in solutions]
    if missing:
        raise SystemExit(f"build: no solution for {missing}")
    who = WHO_STUDENT.format(student=student, text=variant_text) if student else WHO_COMMON
    setup = (SETUP.replace("{{CHECKER}}", repr(spec.name) + (f", {student!r}" if student else ""))
             .replace("{{P}}", _p_literal(variant)))
    nb = nbformat.v4.new_notebook()
    nb.metadata.update({"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                        "language_info": {"name": "python"}})
    cells = [nbformat.v4.new_markdown_cell(render_text(intro.replace("{{WHO}}", who), variant),
                                           metadata=_meta("intro", solution=False, grade=False, locked=True)),
             nbformat.v4.new_code_cell(setup, metadata=_meta("setup", solution=False, grade=False, locked=True))]
    if kernel_setup:
        cells.append(nbformat.v4.new_code_cell(kernel_setup, metadata=_meta("kernel_setup", solution=False, grade=False,
                                                                            locked=True)))
    for ex in spec.exercises:
        cells.append(nbformat.v4.new_markdown_cell(render_text(texts[ex], variant), metadata=_meta(
            f"{ex.lower()}_text", solution=False, grade=False, locked=True)))
        for p in (q for q in spec.parts if q.exercise == ex):
            prompt = p.prompt_for(variant)
            label = f"**{p.grade_id}**（{p.points:g} 分）· {prompt}"
            if p.kind == "manual":
                cells.append(nbformat.v4.new_markdown_cell(f"{label}\n\n" + solutions[p.grade_id], metadata=_meta(
                    p.grade_id, solution=True, grade=True, locked=False, points=p.points)))
                continue
            key = p.reference().answer if p.kind == "kernel" else p.grade_id
            if answers[key] is p:
                head = f"# {key} · {prompt.split(' · ')[0]}"
                if p.kind != "kernel" and p.tolerance:
                    head += f"（容差：{p.tolerance}）"
                src = f"{head}\n### BEGIN SOLUTION\n{solutions[key]}\n### END SOLUTION"
                cells.append(nbformat.v4.new_code_cell(src, metadata=_meta(f"{key}_answer", solution=True, grade=False,
                                                                           locked=False)))
            if p.kind == "kernel":
                hidden = (f'check(ANSWER, "{p.grade_id}", strict=True, quiet=True, points=True)'
                          "  # nbgrader: the points earned (partial credit); raises if none")
            else:
                hidden = f'check(ANSWER, "{p.grade_id}", strict=True, quiet=True)  # nbgrader: raises unless right'
            test = (f'check(ANSWER, "{p.grade_id}")\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS')
            cells.append(nbformat.v4.new_code_cell(test, metadata=_meta(
                p.grade_id, solution=False, grade=True, locked=True, points=p.points)))
    nb.cells = cells
    for i, c in enumerate(nb.cells):
        c["id"] = f"c{i:03d}"
    return nb


def render(nb) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(lab: str, out: Path, build: Callable[[], object], argv=None) -> int:
    ap = argparse.ArgumentParser(description=f"Build the {lab} instructor notebook.")
    ap.add_argument("--check", action="store_true", help=f"exit 1 if {out.name} is out of date")
    args = ap.parse_args(argv)
    text = render(build())
    if args.check:
        same = out.exists() and out.read_text(encoding="utf-8") == text
        print(f"{out.name} is up to date" if same else f"{out.name} is out of date: run labs/{lab}/build.py")
        return 0 if same else 1
    write_readable(out, text)
    print(f"wrote labs/{lab}/{out.name}")
    return 0


def run_build_script(lab: str, here: Path, build: Callable[[], object]) -> None:
    sys.exit(main(lab, here / f"{lab}.ipynb", build))
