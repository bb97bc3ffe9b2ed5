"""Chinese renderings of the grader's fixed phrases, for what students read.

The grader writes its verdicts and notices in English (records, the instructor's report,
log.json).  The student's feedback and ``check``'s printed lines are in Chinese: :func:`zh`
rewrites the fixed phrases of a message through :data:`PHRASES` (regular expressions, applied
in order; the variable parts -- a unit, a parameter name, a cell number, the student's own
text -- are carried over).  A phrase the table does not know is left as it is: feedback never
loses information for lack of a translation.
"""
from __future__ import annotations

import re

__all__ = ["zh", "PHRASES", "DIMENSIONS_ZH"]

# units.DIMENSION_NAMES, in Chinese
DIMENSIONS_ZH = {
    "a byte count": "字节数",
    "an operation count": "运算次数",
    "a time": "时间",
    "an arithmetic intensity": "算术强度",
    "a compute rate": "算力",
    "a bandwidth": "带宽",
    "bytes per parameter": "每个参数的字节数",
    "a percentage": "百分比",
    "a plain number": "无单位的数",
}
_DIM = "|".join(re.escape(k) for k in sorted(DIMENSIONS_ZH, key=len, reverse=True))


def _dim(m: re.Match, group: str) -> str:
    return DIMENSIONS_ZH.get(m.group(group), m.group(group))


# (pattern, replacement); a replacement may be a function of the match.  Whole-message phrases
# are anchored (^...$); fragments that occur inside longer messages are not.
PHRASES: list[tuple[str, object]] = [
    # --- analytic parts (autograder.parts.compare)
    (r"^correct$", "正确"),
    (r"^wrong$", "错误"),
    (r"^wrong: check ", "错误：请检查 "),
    (r"\. Hint: ", "。提示："),
    (r"^graded by hand \(answer cell not found\)$", "由助教人工批改（没有找到答案格）"),
    (r"^graded by hand$", "由助教人工批改"),
    (r"^not answered yet \(value is None\)$", "尚未作答（value 还是 None）"),
    (r"^not answered yet \(every entry is None\)$", "尚未作答（每一项都还是 None）"),
    (r"^not answered yet$", "尚未作答"),
    (r'^expected \{"value": <number>, "unit": "<unit>"\}$', '格式应为 {"value": 数值, "unit": "单位"}'),
    (rf"^wrong unit: (?P<u>.+?) is (?P<a>{_DIM}) \([^)]*\), this part asks for (?P<b>{_DIM}) \([^)]*\)$",
     lambda m: f"单位的种类不对：{m.group('u')} 是{_dim(m, 'a')}，这一问要的是{_dim(m, 'b')}"),
    (rf"^wrong unit: (?P<u>.+?) is (?P<a>{_DIM})[^,]*, this part asks for (?P<b>{_DIM}).*$",
     lambda m: f"单位的种类不对：{m.group('u')} 是{_dim(m, 'a')}，这一问要的是{_dim(m, 'b')}"),
    (r"; write the unit as e\.g\. ", "；单位请写成例如 "),
    (r"^unknown unit ", "不认识的单位 "),
    (r"^unknown prefix ", "不认识的单位前缀 "),
    (r"^a unit must be a string, got ", "单位必须是字符串，却是 "),
    (r": expected a finite number, got NaN/inf", "：应为有限的数，却是 NaN/inf"),
    (r": expected a finite number, got ", "：应为有限的数，却是 "),
    (r": expected a number, got the text ", "：应为数，却是文字 "),
    (r"^expected one string, got ", "应为一个字符串，却是 "),
    (r" is not one of the options ", " 不在选项之中："),
    (r"^expected a list or set of strings, got ", "应为字符串的列表或集合，却是 "),
    (r"^every element of the set must be a string$", "集合里的每个元素都必须是字符串"),
    (r"^not among the options: ", "不在选项之中："),
    (r"^expected a dict \{row: value\}, got ", "应为字典 {行: 值}，却是 "),
    (r"^some entries are still None: fill in every row$", "还有几项是 None：请填满每一行"),
    (r"^row (?P<r>.+?) is missing \(rows: ", lambda m: f"缺少行 {m.group('r')}（应有的行："),
    (r"^row (?P<r>.+?): column (?P<c>.+?) is missing$", lambda m: f"行 {m.group('r')} 缺少列 {m.group('c')}"),
    (r": missing entry$", "：缺少这一项"),
    (r"expected a dict, got ", "应为字典，却是 "),
    (r"expected a list, got ", "应为列表，却是 "),
    (r"expected a string, got ", "应为字符串，却是 "),
    (r" is not one of ", " 不在这些选项之中："),
    (r"^no function was assigned to this part$", "这一问还没有赋一个函数"),
    (r"^expected a function, got ", "应为函数，却是 "),
    (r"^expected data, got a function$", "应为数据，却是函数"),
    (r"^the function could not be evaluated$", "无法调用这个函数求值"),
    (r"^the function returns None: not written yet$", "函数返回 None：还没有写完"),
    (r"^calling it with \((?P<a>.*?)\) raised ", lambda m: f"以参数 ({m.group('a')}) 调用时抛出了 "),
    (r"^with \((?P<a>.*?)\) it returned (?P<t>\w+); return a dict with keys ",
     lambda m: f"以参数 ({m.group('a')}) 调用时返回了 {m.group('t')}；应返回带这些键的字典："),
    (r"^with \((?P<a>.*?)\) the result has no key ", lambda m: f"以参数 ({m.group('a')}) 调用时，结果里没有键 "),
    (r'^ANSWER\["(?P<g>\w+)"\] is not assigned yet$', lambda m: f'还没有给 ANSWER["{m.group("g")}"] 赋值'),
    # --- the notebook run (autograder.grade, autograder.sandbox)
    (r'^no answer: ANSWER\["(?P<g>\w+)"\] was never assigned$', lambda m: f'未作答：没有给 ANSWER["{m.group("g")}"] 赋值'),
    (r"^not reached: the notebook ran out of time before this answer$", "没有运行到：整本 notebook 在这一问之前就用完了时间"),
    (r"^not reached: too many cells hung or crashed, so the notebook was not run to this answer$",
     "没有运行到：卡住或崩溃的格子太多，评分程序不再重跑，没有运行到这一问"),
    (r"^the cell that answers it \(cell (?P<i>\d+)\) failed: ", lambda m: f"回答它的格子（第 {m.group('i')} 格）出错："),
    (r"cell ran past its (?P<s>[\d.]+) s limit and ignored the alarm; it was killed",
     lambda m: f"这一格超过了 {m.group('s')} 秒的上限且不响应中断，已被终止"),
    (r"the notebook ran past its (?P<s>[\d.]+) s wall-clock limit in this cell",
     lambda m: f"整本 notebook 在这一格超过了 {m.group('s')} 秒的总时间上限"),
    (r"the notebook ran past its (?P<s>[\d.]+) s wall-clock limit; it was stopped",
     lambda m: f"整本 notebook 超过了 {m.group('s')} 秒的总时间上限，已被停止"),
    (r"the process exited with status (?P<c>\d+) while running this cell", lambda m: f"运行这一格时进程退出了（状态码 {m.group('c')}）"),
    (r"the process was stopped at its CPU-time limit \((?P<s>[\d.]+) s of CPU time\) while running this cell",
     lambda m: f"运行这一格时进程用完了 CPU 时间上限（{m.group('s')} 秒），已被停止"),
    (r"the process was killed \(SIGKILL\) near its memory limit \((?P<a>\d+) of (?P<b>\d+) MiB\): out of memory "
     r"while running this cell", lambda m: f"运行这一格时进程在内存上限附近被杀死（{m.group('a')} / {m.group('b')} MiB）：内存不足"),
    (r"the process was killed \(SIGKILL\) by the code itself or by the system while running this cell",
     "运行这一格时进程被杀死（SIGKILL，来自代码自己或系统）"),
    (r"the process was killed for writing a file over (?P<n>\d+) MiB while running this cell",
     lambda m: f"运行这一格时进程因写出超过 {m.group('n')} MiB 的文件被杀死"),
    (r"the process crashed \((?P<w>[a-z ]+)\)(?P<rest>[^;]*?) while running this cell",
     lambda m: f"运行这一格时进程崩溃（{m.group('w')}）{m.group('rest')}"),
    (r"the process (?P<k>.+?) while running this cell", lambda m: f"运行这一格时进程异常结束（{m.group('k')}）"),
    (r"cell ran past its (?P<s>[\d.]+) s limit", lambda m: f"这一格超过了 {m.group('s')} 秒的上限"),
    (r"sandbox: signalling other processes is not allowed while grading", "沙箱：评分时不允许向其他进程发信号"),
    (r"sandbox: (?P<e>.+?) is not allowed while grading", lambda m: f"沙箱：评分时不允许 {m.group('e')}"),
    (r"MemoryError: the cell ran out of its memory limit", "MemoryError：这一格超出了内存上限"),
    (r" \(the scratch directory is full: its limit is (?P<n>\d+) MiB\)", lambda m: f"（临时目录已满：上限 {m.group('n')} MiB）"),
    (r" \(line (?P<n>\d+)\)$", lambda m: f"（第 {m.group('n')} 行）"),
    (r" is not valid JSON \(", " 不是合法的 JSON（"),
    (r" is JSON but not a notebook \(no list of cells\)", " 是 JSON，但不是 notebook（没有 cells 列表）"),
    (r"(?P<f>\w+) at \((?P<a>[^()]*)\)", lambda m: f"输入 ({m.group('a')}) 的 {m.group('f')}"),
    (r"too many cells hung or crashed; stopped re-running", "卡住或崩溃的格子太多，评分程序不再重跑其余的格子"),
    (r"^the answer is not plain data \(", "答案不是普通数据（"),
    (r"^the function was assigned, but the notebook was stopped before the grader could call it: ",
     "函数已经赋值，但评分程序调用它之前 notebook 就被停止了："),
    (r"not allowed in graded cells", "评分时不允许执行"),
    (r"^notebook not graded: ", "notebook 未评分："),
    # --- notices (autograder.variants)
    (r"^flagged: the notebook was released to student (?P<a>.+?) but is graded as (?P<b>.+?); "
     r"its answers were compared with .+?'s numbers$",
     lambda m: f"已标记：这份 notebook 是发给学生 {m.group('a')} 的，却作为 {m.group('b')} 的作业评分；"
               f"答案按 {m.group('b')} 的数字比较"),
    (r"^flagged: the notebook carries no variant tag \(it was not released with `release --student`\); "
     r"its answers were compared with the numbers of student (?P<b>.+)$",
     lambda m: f"已标记：这份 notebook 没有变体标签（不是用 `release --student` 发布的）；答案按学生 {m.group('b')} 的数字比较"),
    (r"^flagged: the variant tag in the notebook's metadata is malformed \(edited\?\)$",
     "已标记：notebook 元数据里的变体标签格式不对（被改过？）"),
    (r"^flagged: the variant tag does not verify under the course key \(edited, or released with another key\)$",
     "已标记：notebook 的变体标签用课程密钥验证不通过（被改过，或用另一把密钥发布）"),
    (r"^flagged: the notebook was released for lab (?P<a>.+?), not (?P<b>.+)$",
     lambda m: f"已标记：这份 notebook 是为实验 {m.group('a')} 发布的，不是 {m.group('b')}"),
    (r"^flagged: the lab's parameters changed after this notebook was released$",
     "已标记：这份 notebook 发布之后，实验的参数有过改动"),
    (r"^nbgrader metadata changed \(points ignored; the grader's spec decides\): ",
     "nbgrader 元数据被改过（其中的分值不起作用，以评分程序的配置为准）："),
    (r"^nbgrader metadata names grade_ids this lab does not have \(ignored\): ",
     "nbgrader 元数据里有本实验没有的 grade_id（已忽略）："),
    # --- kernel parts (autograder.kernelgrade.rubric, pipeline, tirsafe)
    (r"needs a GPU: not graded on this machine \(run the GPU grading, see labs/README\.md\)",
     "需要 GPU：这台机器上未评（不是零分；在 GPU 上评分时会自动重评）"),
    (r"^no speed points: ", "没有速度分："),
    (r"^not read: ", "未读取："),
    (r"the kernel is not correct on every shape", "kernel 并非在每种形状上都正确"),
    (r"^correct on all (?P<n>\d+) shapes \(fresh inputs, poisoned outputs, fp64 reference\)$",
     lambda m: f"在全部 {m.group('n')} 种形状上正确（每次新的随机输入、输出预填 NaN、与 fp64 参考比较）"),
    (r"^wrong on (?P<a>\d+) of (?P<b>\d+) shapes -- ", lambda m: f"{m.group('b')} 种形状中有 {m.group('a')} 种算错——"),
    (r"does not compile for sm_90a \((?P<l>[^)]*)\): ", lambda m: f"不能为 sm_90a 编译（{m.group('l')}）："),
    (r"building the kernel ran past its time limit", "编译 kernel 超过了时间上限"),
    (r"the submission's kernel phase ran past its total time limit",
     "这份作业的 kernel 部分（生成与编译）超过了总的时间上限"),
    (r"the kernel elaboration ran past its time limit", "生成 kernel（运行工厂函数）超过了时间上限"),
    (r"the kernel did not finish on the GPU \(a hang\?\): the evaluation was stopped",
     "kernel 在 GPU 上没有结束（卡死？），评估已被停止"),
    (r"^sm_90a code: ", "sm_90a 代码："),
    (r"^lowered on CPU \(never run on an NPU\): ", "在 CPU 上降级（从未在 NPU 上运行）："),
    (r"^lowered on CPU: failed before the bisheng call -- ", "在 CPU 上降级：在调用 bisheng 之前失败——"),
    (r"^flagged for the instructor: ", "已标记，待教师复核："),
    (r"no speed points; flagged for the instructor: ", "没有速度分；已标记，待教师复核："),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must be (?P<d>\w+), got (?P<g>\w+)",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应为 {m.group('d')}，却是 {m.group('g')}"),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must have shape (?P<s>\([^)]*\)), got ",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）的形状应为 {m.group('s')}，却是 "),
    (r" \(shape (?P<l>[^)]*)\)$", lambda m: f"（形状 {m.group('l')}）"),
    (r'^no answer cell for (?P<g>\w+) \(a cell assigning ANSWER\["\w+"\]\)$',
     lambda m: f'没有 {m.group("g")} 的答案格（给 ANSWER["{m.group("g")}"] 赋值的格子）'),
    (r'^ANSWER\["(?P<g>\w+)"\] is not assigned in its answer cell$',
     lambda m: f'答案格里没有给 ANSWER["{m.group("g")}"] 赋值'),
    (r"^the answer cell ran past its (?P<s>[\d.]+) s limit$", lambda m: f"答案格超过了 {m.group('s')} 秒的上限"),
    (r"^the answer cell raised ", "答案格抛出了 "),
]
_COMPILED = [(re.compile(p), r) for p, r in PHRASES]


def zh(message: str) -> str:
    """``message`` with every known fixed phrase in Chinese (unknown text is kept)."""
    out = str(message)
    for pat, rep in _COMPILED:
        out = pat.sub(rep, out)
    return out
