"""Chinese renderings of the grader's fixed phrases, for what students read.

The grader writes its verdicts and notices in English (records, the instructor's report,
log.json).  The student's feedback and ``check``'s printed lines are in Chinese: :func:`zh`
rewrites the fixed phrases of a message through :data:`PHRASES` (regular expressions, applied
in order; the variable parts -- a unit, a parameter name, a cell number, the student's own
text -- are carried over).  A phrase the table does not know is left as it is: feedback never
loses information for lack of a translation.

``tests/autograder/test_messages_zh.py`` finds the message templates in the grader's source and
renders each through :func:`zh`: a new or reworded English message fails there until its Chinese
is added here (natural, concise Chinese; a technical term keeps its English once, in parentheses).
"""
from __future__ import annotations

import re

__all__ = ["zh", "PHRASES", "DIMENSIONS_ZH", "FILE_KINDS_ZH", "CRASHES_ZH"]

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

# extract._KIND: what a submitted path is when it is not a regular file
FILE_KINDS_ZH = {
    "a FIFO (named pipe)": "FIFO（命名管道）",
    "a character device": "字符设备",
    "a block device": "块设备",
    "a socket": "套接字",
    "a directory": "目录",
    "a symbolic link": "符号链接",
    "not a regular file": "特殊文件",
}
_KIND = "|".join(re.escape(k) for k in sorted(FILE_KINDS_ZH, key=len, reverse=True))
# sandbox._exit_text: the signal a crashed process died of
CRASHES_ZH = {"segmentation fault": "段错误（segmentation fault）", "bus error": "总线错误（bus error）",
              "abort": "中止（abort）"}
# runner._safe: what an answer that is not plain data is sent back as (besides its type's name)
MARKERS_ZH = {"too large or too deep": "太大或嵌套太深的数据", "function": "函数"}
# structure._reduction_kind: how a row reduction was done
REDUCTIONS_ZH = {"warp shuffles": "warp 内的 shuffle 指令"}
# how a grader program ended, said in one word (sandbox._exit_text, kernelgrade.pipeline)
ENDINGS_ZH = {"exited": "退出了", "ended": "结束了", "died": "意外终止", "timed out": "超时"}
# sandbox._run: where a run that did not reach the cells (or the answers' functions) stopped
WHERE_ZH = {"while evaluating answers": "调用答案中的函数时", "before running the cells": "运行格子之前"}
# tirsafe.check_body: what a kernel uses that the grader does not build
_REFUSED = [(re.compile(p), r) for p, r in (
    (r"^function attribute (?P<k>.+)$", r"函数属性 \g<k>"),
    (r"^extern call to (?P<n>.+) \(not a function name\)$", r"extern 调用 \g<n>（不是函数名）"),
    (r"^string constant (?P<v>.+)$", r"字符串常量 \g<v>"),
    (r"^call (?P<o>.+)$", r"调用 \g<o>"),
    (r"^attribute (?P<k>.+)$", r"属性 \g<k>"),
    (r"^annotation (?P<k>.+)$", r"注解 \g<k>"),
)]


def _dim(m: re.Match, group: str) -> str:
    return DIMENSIONS_ZH.get(m.group(group), m.group(group))


def _refused(items: str) -> str:
    out = []
    kinds = "function attribute|call|extern call to|string constant|attribute|annotation"
    for item in re.split(rf"; (?=(?:{kinds}) )", items):
        for pat, rep in _REFUSED:
            if pat.match(item):
                item = pat.sub(rep, item)
                break
        out.append(item)
    return "；".join(out)


def _speed(m: re.Match) -> str:
    metric = re.sub(r"^(?P<p>[\d.]+) % of the copy bandwidth$", r"拷贝带宽的 \g<p> %", m.group("m"))
    return (f"在 {m.group('s')} 上用时 {m.group('t')} us：{metric}（库 {m.group('b')} us，拷贝带宽 {m.group('c')} GB/s）；"
            f"分档：{m.group('l')}")


# the start of a message, or of a clause after a prefix ("not read: ", "no speed points: ", translated
# or not yet): a kernel finding can be shown alone or behind such a prefix
_S = r"(?:^|(?<=: )|(?<=：))"

# (pattern, replacement); a replacement may be a function of the match.  Whole-message phrases
# are anchored (^...$); fragments that occur inside longer messages are not.
PHRASES: list[tuple[str, object]] = [
    # --- analytic parts (autograder.parts.compare)
    (r"^correct$", "正确"),
    (r"^wrong(?=$|\. Hint: )", "错误"),
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
    (r": expected a finite number, got (?P<e>too large or too deep|function)$",
     lambda m: "：应为有限的数，却是" + MARKERS_ZH[m.group("e")]),
    (r": expected a finite number, got NaN/inf", "：应为有限的数，却是 NaN/inf"),
    (r": expected a finite number, got ", "：应为有限的数，却是 "),
    (r": expected a number, got the text ", "：应为数，却是文字 "),
    (r"^answer(?=：应为)", "答案"),
    (r"^expected one string, got ", "应为一个字符串，却是 "),
    (r" is not one of the options ", " 不在选项之中："),
    (r"^expected a list or set of strings, got ", "应为字符串的列表或集合，却是 "),
    (r"^every element of the set must be a string$", "集合里的每个元素都必须是字符串"),
    (r"^not among the options: ", "不在选项之中："),
    (r"^expected a dict \{row: value\}, got ", "应为字典 {行: 值}，却是 "),
    (r"^some entries are still None: fill in every row$", "还有几项是 None：请填满每一行"),
    (r"^row (?P<r>.+?) is missing \(rows: (?P<w>.*)\)$", lambda m: f"缺少行 {m.group('r')}（应有的行：{m.group('w')}）"),
    (r"^row (?P<r>.+?) is missing \(rows: ", lambda m: f"缺少行 {m.group('r')}（应有的行："),
    (r"^row (?P<r>.+?): column (?P<c>.+?) is missing$", lambda m: f"行 {m.group('r')} 缺少列 {m.group('c')}"),
    (r": missing entry$", "：缺少这一项"),
    (r"^row (?P<r>.+?): expected a dict, got ", lambda m: f"行 {m.group('r')}：应为字典，却是 "),
    (r"expected a dict, got ", "应为字典，却是 "),
    (r"expected a list, got ", "应为列表，却是 "),
    (r"expected a string, got ", "应为字符串，却是 "),
    (r" is not one of ", " 不在这些选项之中："),
    (r"^no function was assigned to this part$", "这一问还没有赋一个函数"),
    (r"^expected a function, got ", "应为函数，却是 "),
    (r"^expected data, got a function$", "应为数据，却是函数"),
    (r"^the function could not be evaluated$", "无法调用这个函数求值"),
    (r"^the function returns None: not written yet$", "函数返回 None：还没有写完"),
    (r"^calling it with \((?P<a>.*?)\) raised timeout after (?P<s>[\d.]+) s$",
     lambda m: f"以参数 ({m.group('a')}) 调用时超时（{m.group('s')} 秒）"),
    (r"^calling it with \((?P<a>.*?)\) raised ", lambda m: f"以参数 ({m.group('a')}) 调用时抛出了 "),
    (r"^with \((?P<a>.*?)\) it returned (?P<t>\w+); return a dict with keys ",
     lambda m: f"以参数 ({m.group('a')}) 调用时返回了 {m.group('t')}；应返回带这些键的字典："),
    (r"^with \((?P<a>.*?)\) the result has no key ", lambda m: f"以参数 ({m.group('a')}) 调用时，结果里没有键 "),
    (r'^ANSWER\["(?P<g>\w+)"\] is not assigned yet$', lambda m: f'还没有给 ANSWER["{m.group("g")}"] 赋值'),
    (r"^cannot compute the check \((?P<e>[^)]*)\); is the course env active\?$",
     lambda m: f"无法完成检查（{m.group('e')}）；课程的 Python 环境激活了吗？"),
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
     lambda m: f"运行这一格时进程崩溃（{CRASHES_ZH.get(m.group('w'), m.group('w'))}）{m.group('rest')}"),
    (r"the process (?P<k>.+?) while running this cell",
     lambda m: "运行这一格时进程" + (ENDINGS_ZH[m.group("k")] if m.group("k") in ENDINGS_ZH else f"异常结束（{m.group('k')}）")),
    (r"(?<!answer )cell ran past its (?P<s>[\d.]+) s limit", lambda m: f"这一格超过了 {m.group('s')} 秒的上限"),
    (r"sandbox: signalling other processes is not allowed while grading", "沙箱：评分时不允许向其他进程发信号"),
    (r"sandbox: access to (?P<p>.+?) is not allowed while grading", lambda m: f"沙箱：评分时不允许访问 {m.group('p')}"),
    (r"sandbox: listing (?P<p>.+?) is not allowed while grading", lambda m: f"沙箱：评分时不允许列出 {m.group('p')}"),
    (r"sandbox: C function (?P<f>.+?) is not allowed while grading",
     lambda m: f"沙箱：评分时不允许调用 C 函数 `{m.group('f')}`"),
    (r"sandbox: (?P<e>\S+) outside the scratch directory is not allowed",
     lambda m: f"沙箱：不允许在临时目录之外执行 {m.group('e')}"),
    (r"sandbox: (?P<e>.+?) is not allowed while grading", lambda m: f"沙箱：评分时不允许 {m.group('e')}"),
    (r"MemoryError: the cell ran out of its memory limit", "MemoryError：这一格超出了内存上限"),
    (r" \(the scratch directory is full: its limit is (?P<n>\d+) MiB\)", lambda m: f"（临时目录已满：上限 {m.group('n')} MiB）"),
    (r" \(one file may not exceed (?P<n>\d+) MiB\)", lambda m: f"（单个文件不能超过 {m.group('n')} MiB）"),
    (r" \(line (?P<n>\d+)\)$", lambda m: f"（第 {m.group('n')} 行）"),
    (r" is not valid JSON \(line (?P<l>\d+), column (?P<c>\d+): (?P<e>.*)\)$",
     lambda m: f" 不是合法的 JSON（第 {m.group('l')} 行第 {m.group('c')} 列：{m.group('e')}）"),
    (r" is not valid JSON \(", " 不是合法的 JSON（"),
    (r" is JSON but not a notebook \(no list of cells\)", " 是 JSON，但不是 notebook（没有 cells 列表）"),
    (r" is JSON but not a notebook \(not an object\)", " 是 JSON，但不是 notebook（顶层不是对象）"),
    (r" is JSON nested too deeply to be a notebook", " 的 JSON 嵌套太深，不可能是 notebook"),
    (r" is not UTF-8 text$", " 不是 UTF-8 文本"),
    (rf" is (?P<k>{_KIND}), not a regular file; submit the notebook file itself",
     lambda m: f" 是{FILE_KINDS_ZH[m.group('k')]}，不是普通文件；请提交 notebook 文件本身"),
    (r" is a symbolic link; submit the notebook file itself", " 是符号链接；请提交 notebook 文件本身"),
    (r"^(?P<p>notebook not graded: )?cannot read (?P<n>.+?): ", lambda m: f"{m.group('p') or ''}无法读取 {m.group('n')}："),
    (r" changed while it was being read; not graded", " 在读取过程中被改动了，未评分"),
    (r" is (?P<a>\d+) MiB; notebooks over (?P<b>\d+) MiB are not graded",
     lambda m: f" 有 {m.group('a')} MiB；超过 {m.group('b')} MiB 的 notebook 不评分"),
    (r" is over (?P<b>\d+) MiB; not graded", lambda m: f" 超过了 {m.group('b')} MiB，未评分"),
    (r"a cell's source is neither text nor a list of lines", "有一格的 source 既不是文本也不是行的列表"),
    (r" uses the old notebook format (?P<v>\S+) and could not be converted \((?P<e>[^)]*)\); open it in Jupyter and "
     r"save it again \(Jupyter writes format 4\)",
     lambda m: f" 用的是旧的 notebook 格式 {m.group('v')}，无法转换（{m.group('e')}）；请在 Jupyter 里打开后重新保存"
               f"（Jupyter 会存成格式 4）"),
    (r" says it is notebook format (?P<v>.+?); this grader reads format 4 \(and converts format 3\)",
     lambda m: f" 声明自己是 notebook 格式 {m.group('v')}；评分程序读取格式 4（格式 3 会先转换）"),
    (r"^the notebook was in the old format (?P<v>\S+); it was converted to format 4 for grading$",
     lambda m: f"这份 notebook 是旧格式 {m.group('v')}，评分时已转换为格式 4"),
    # the grader's notes on text that is not valid Unicode (autograder.grade)
    (r"^the file name is not valid UTF-8; its bytes were kept as %XX in the student id",
     "文件名不是合法的 UTF-8，学号里这些字节写成了 %XX"),
    (r" \(read as GB18030 it is (?P<g>.*)\)$", lambda m: f"（按 GB18030 读作 {m.group('g')}）"),
    (r"^cell (?P<i>\d+) printed text that is not valid Unicode \(lone surrogates\); it is kept escaped as \\udcXX$",
     lambda m: f"第 {m.group('i')} 格打印的文字不是合法的 Unicode（含落单的代理码位），以 \\udcXX 转义保留"),
    (r"^output written straight to the file descriptors was not UTF-8; the bad bytes are shown as U\+FFFD$",
     "直接写到文件描述符的输出不是 UTF-8，无法解码的字节显示为 U+FFFD"),
    (r"^some output or answer text was not valid Unicode; it is shown with \\udcXX escapes \(e\.g\. (?P<x>.*)\)$",
     lambda m: f"有些输出或答案文字不是合法的 Unicode，以 \\udcXX 转义显示（例如 {m.group('x')}）"),
    # the sandbox: a run that stopped outside the cells (autograder.sandbox)
    (r"^the submission flooded the result channel; stopped$", "这份作业向结果通道写得太多，已被停止"),
    (r"\btimed out (?P<w>while evaluating answers|before running the cells)",
     lambda m: WHERE_ZH[m.group("w")] + "超时了"),
    (r"\bthe process (?P<k>.+?) (?P<w>while evaluating answers|before running the cells)",
     lambda m: f"{WHERE_ZH[m.group('w')]}进程{ENDINGS_ZH.get(m.group('k'), m.group('k'))}"),
    (r"(?P<f>\w+) at \((?P<a>[^()]*)\)", lambda m: f"输入 ({m.group('a')}) 的 {m.group('f')}"),
    (r"too many cells hung or crashed; stopped re-running", "卡住或崩溃的格子太多，评分程序不再重跑其余的格子"),
    (r"^the answer is not plain data \((?P<e>.*)\)$",
     lambda m: f"答案不是普通数据（{MARKERS_ZH.get(m.group('e'), m.group('e'))}）"),
    (r"^the answer is not plain data \(", "答案不是普通数据（"),
    (r"^the function was assigned, but the notebook was stopped before the grader could call it: ",
     "函数已经赋值，但评分程序调用它之前 notebook 就被停止了："),
    (r"shell command (?P<c>`[^`]*`) is not allowed in graded cells", lambda m: f"评分时不允许执行 shell 命令 {m.group('c')}"),
    (r"(?P<c>%\S+) \(a shell command\) is not allowed in graded cells",
     lambda m: f"评分时不允许执行 {m.group('c')}（shell 命令）"),
    (r"(?P<c>`%[^`]*`) runs a program; not allowed in graded cells", lambda m: f"{m.group('c')} 会启动程序，评分时不允许"),
    (r"(?P<c>`%%[^`]*`) cell runs a program; not allowed in graded cells",
     lambda m: f"{m.group('c')} 格会启动程序，评分时不允许"),
    (r"(?P<c>%%?[^\s%]+) is not allowed in graded cells", lambda m: f"评分时不允许使用 {m.group('c')}"),
    (r"top-level await of asynchronous I/O is not supported in graded cells \(there is no event loop\)",
     "评分时的格子不支持顶层 await 异步 I/O（没有事件循环）"),
    (r"%%writefile needs a file name", "%%writefile 需要一个文件名"),
    (r" \(skipped\)$", "（已跳过）"),
    (r"not allowed in graded cells", "评分时不允许执行"),
    (r"^notebook not graded: ", "notebook 未评分："),
    (r"^cell (?P<i>\d+): ", lambda m: f"第 {m.group('i')} 格："),
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
    (r"^flagged: ", "已标记："),
    (r"^no course key on this machine: the variant tag was not verified$", "这台机器上没有课程密钥：变体标签未经验证"),
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
    (r"^(?P<h>sm_90a code: |lowered on CPU \(never run on an NPU\): )(?P<c>\[(?:ok|--)\] .*)$",
     lambda m: m.group("h") + re.sub(r"; (?=\[(?:ok|--)\] )", "；", m.group("c"))),
    (r"(?:^|(?<=: )|(?<=；))\[ok\] ", "✔ "),
    (r"(?:^|(?<=: )|(?<=；))\[--\] ", "✘ "),
    (r"^sm_90a code: ", "sm_90a 代码："),
    (r"^lowered on CPU \(never run on an NPU\): ", "在 CPU 上降级（从未在 NPU 上运行）："),
    (r"^lowered on CPU: failed before the bisheng call -- ", "在 CPU 上降级：在调用 bisheng 之前失败——"),
    (r"^flagged for the instructor: ", "已标记，待教师复核："),
    (r"no speed points; flagged for the instructor: ", "没有速度分；已标记，待教师复核："),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must be (?P<d>\w+), got (?P<g>\w+)",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应为 {m.group('d')}，却是 {m.group('g')}"),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must have shape (?P<s>\([^)]*\)|\S+), got ",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）的形状应为 {m.group('s')}，却是 "),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must be a scalar \((?P<t>[^)]*)\), not a tensor",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应为标量（{m.group('t')}），不是张量"),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must be a (?P<d>\w+) scalar, got ",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应为 {m.group('d')} 标量，却是 "),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must be a tensor \(T\.Tensor\), not a scalar",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应为张量（T.Tensor），不是标量"),
    (r"parameter (?P<i>\d+) \((?P<n>\w+)\) must have a static shape (?P<s>.+?); got a symbolic one ",
     lambda m: f"第 {m.group('i')} 个参数（{m.group('n')}）应有静态形状 {m.group('s')}，却是符号形状 "),
    (r" \(shape (?P<l>[^)]*)\)$", lambda m: f"（形状 {m.group('l')}）"),
    (_S + r'no answer cell for (?P<g>\w+) \(a cell assigning ANSWER\["\w+"\]\)$',
     lambda m: f'没有 {m.group("g")} 的答案格（给 ANSWER["{m.group("g")}"] 赋值的格子）'),
    (_S + r'ANSWER\["(?P<g>\w+)"\] is not assigned in its answer cell$',
     lambda m: f'答案格里没有给 ANSWER["{m.group("g")}"] 赋值'),
    (_S + r"the answer cell ran past its (?P<s>[\d.]+) s limit$", lambda m: f"答案格超过了 {m.group('s')} 秒的上限"),
    (_S + r"the answer cell raised ", "答案格抛出了 "),
    # what the kernel workers found (autograder.kernelgrade.rubric, pipeline, worker, evaluate)
    (_S + r"the factory could not be elaborated$", "无法用工厂函数生成 kernel"),
    (_S + r"the factory failed for (?P<l>.+?): ", lambda m: f"工厂函数在 {m.group('l')} 上出错："),
    (_S + r"elaborating the factory for (?P<l>.+?) ran past (?P<s>[\d.]+) s$",
     lambda m: f"为 {m.group('l')} 运行工厂函数生成 kernel 超过了 {m.group('s')} 秒"),
    (_S + r"the lab's kernel setup cell failed: ", "实验的 kernel 设置格出错："),
    (_S + r"unknown mode (?P<m>.+)$", lambda m: f"未知的模式 {m.group('m')}"),
    (_S + r"the kernel crashed the GPU run: ", "kernel 让 GPU 上的运行崩溃了："),
    (_S + r"the GPU run ended before this kernel was checked$", "GPU 上的运行在检查这个 kernel 之前就结束了"),
    (_S + r"the kernel was not timed \(the GPU run ended early\)$", "kernel 没有计时（GPU 上的运行提前结束了）"),
    (_S + r"the outputs of the timed launches are wrong$", "计时的那几次启动输出不对"),
    (_S + r"too slow to time$", "太慢，无法计时"),
    (_S + r"one launch took (?P<t>[\d.]+) ms \((?P<x>[\d.]+)x the library\); not timed further$",
     lambda m: f"一次启动就用了 {m.group('t')} ms（库的 {m.group('x')} 倍），不再计时"),
    (_S + r"the timing gave no finite time \((?P<t>.*?) ms, metric (?P<x>.*)\)$",
     lambda m: f"计时没有得到有限的时间（{m.group('t')} ms，指标 {m.group('x')}）"),
    (r"^(?P<t>[\d.]+) us at (?P<s>.+?): (?P<m>.+?) \(library (?P<b>[\d.]+) us, copy (?P<c>[\d.]+) GB/s\); "
     r"levels: (?P<l>.*)$", _speed),
    (r"(?P<t>[\d.]+) us is below the copy bound: (?P<b>[\d.]+) MB \(ledger\) at the measured (?P<g>[\d.]+) GB/s "
     r"\+ (?P<p>\S+) needs (?P<n>[\d.]+) us",
     lambda m: f"{m.group('t')} us 低于拷贝的下界：账本（ledger）的 {m.group('b')} MB 按实测的 {m.group('g')} GB/s"
               f"（再加 {m.group('p')}）至少要 {m.group('n')} us"),
    (r"(?P<t>[\d.]+) us is below the FLOP bound: (?P<f>[\d.]+) GFLOP \(ledger\) at (?P<p>[\d.]+) TFLOP/s "
     r"\+ (?P<m>\S+) needs (?P<n>[\d.]+) us",
     lambda m: f"{m.group('t')} us 低于算力的下界：账本（ledger）的 {m.group('f')} GFLOP 按 {m.group('p')} TFLOP/s"
               f"（再加 {m.group('m')}）至少要 {m.group('n')} us"),
    (r"(?P<u>\d+) unwritten, (?P<n>\d+) NaN/inf, (?P<k>\d+) of (?P<t>\S+) outside (?P<a>atol=\S+ rtol=\S+) "
     r"\(max \|err\| (?P<e>[^)]*)\)",
     lambda m: (f"{m.group('u')} 个未写入、{m.group('n')} 个 NaN/inf、{m.group('t')} 个元素中有 {m.group('k')} 个超出 "
                f"{m.group('a')}（最大 |err| "
                + ("不是有限值：没有可比较的元素" if m.group("e") == "not finite: no element compares" else m.group("e"))
                + "）")),
    (r"overwrote its input\(s\) ", "改写了输入 "),
    (r"(^|: )not built\b", lambda m: ("：" if m.group(1) else "") + "没有编译出来"),
    (_S + r"the generated code could not be read: (?P<e>.*)$",
     lambda m: "无法读取生成的代码：" + ("没有编译结果" if m.group("e") == "no build" else m.group("e"))),
    (_S + r"nvcc is not installed here \((?P<e>.*)\)$", lambda m: f"这里没有安装 nvcc（{m.group('e')}）"),
    (_S + r"the Ascend lowering did not run$", "Ascend 的降级没有运行"),
    (_S + r"lowering failed before the bisheng call$", "在调用 bisheng 之前降级就失败了"),
    (_S + r"the grader did not grant the GPU$", "评分程序没有分配到 GPU"),
    (_S + r"the grader's evaluation failed: ", "评分程序的评估出错："),
    (_S + r"the kernel elaboration flooded the result channel$", "生成 kernel 时向结果通道写得太多"),
    (r"\bthe kernel elaboration process ", "生成 kernel 的进程"),
    (r"\bthe evaluation process ", "评估进程"),
    (r"\bthe evaluation ", "评估"),
    (r"(?:(?<=进程)|(?<=评估))(?P<k>timed out|exited|ended|died)(?=: |$)", lambda m: ENDINGS_ZH[m.group("k")]),
    # how a process ended (autograder.sandbox._exit_text), inside the sentences above
    (r"(?<![A-Za-z])exited with status (?P<c>\d+)", lambda m: f"退出（状态码 {m.group('c')}）"),
    (r"(?<![A-Za-z])was stopped at its CPU-time limit \((?P<s>[\d.]+) s of CPU time\)",
     lambda m: f"用完了 CPU 时间上限（{m.group('s')} 秒），被停止"),
    (r"(?<![A-Za-z])was killed for writing a file over (?P<n>\d+) MiB", lambda m: f"因写出超过 {m.group('n')} MiB 的文件被杀死"),
    (r"(?<![A-Za-z])was killed \(SIGKILL\) near its memory limit \((?P<a>\d+) of (?P<b>\d+) MiB\): out of memory",
     lambda m: f"在内存上限附近被杀死（SIGKILL，{m.group('a')} / {m.group('b')} MiB）：内存不足"),
    (r"(?<![A-Za-z])was killed \(SIGKILL\) by the code itself or by the system", "被杀死（SIGKILL，来自代码自己或系统）"),
    (r"(?<![A-Za-z])crashed \((?P<w>[a-z ]+)\)", lambda m: f"崩溃（{CRASHES_ZH.get(m.group('w'), m.group('w'))}）"),
    (r" near its memory limit \((?P<a>\d+) of (?P<b>\d+) MiB\): out of memory",
     lambda m: f"，接近内存上限（{m.group('a')} / {m.group('b')} MiB）：内存不足"),
    (r"(?<![A-Za-z])was killed by (?:signal (?P<n>\d+)|(?P<s>\w+))",
     lambda m: f"被{'信号 ' + m.group('n') if m.group('n') else ' ' + m.group('s')} 杀死"),
    (r"(?<![A-Za-z])timeout after (?P<s>[\d.]+) s\b", lambda m: f"超时（{m.group('s')} 秒）"),
    (r"\bnon-finite float (?P<x>\S+)", lambda m: f"非有限的浮点数 {m.group('x')}"),
    # the labels of the shapes a kernel is checked and timed on (kernelgrade.tasks, pipeline, selfcheck)
    (r"(?<![\w-])variant (?=\w+=)", "个人变体 "),
    (r"(?<![\w-])timing (?=\w+=)", "计时 "),
    (r"(?<=[（(])timing(?=[)）])", "计时形状"),
    # the interface and safety checks of the TIR (autograder.kernelgrade.tirsafe)
    (r"the elaborated kernel is not a TIR function \(or is larger than 32 MiB\)", "生成的 kernel 不是 TIR 函数（或大于 32 MiB）"),
    (r"the elaborated kernel could not be read back \((?P<e>[^()]*)\)", lambda m: f"无法读回生成的 kernel（{m.group('e')}）"),
    (r"the factory must produce a T\.prim_func, got ", "工厂函数必须产生 T.prim_func，却是 "),
    (r"the kernel must take (?P<n>\d+) parameters \((?P<p>[^)]*)\), in this order; it takes (?P<k>\d+)",
     lambda m: f"kernel 必须按顺序接受 {m.group('n')} 个参数（{m.group('p')}），它却接受 {m.group('k')} 个"),
    (r"the kernel allocates its own output \(T\.empty / out_idx\); the interface passes every output as a parameter, "
     r"pre-filled by the grader",
     "kernel 自己分配了输出（T.empty / out_idx）；接口要求每个输出都作为参数传入，由评分程序预先填好"),
    (r"the kernel uses what the grader does not build: (?P<p>.*?) \(host calls, pasted C source and non-identifier "
     r"extern names are refused\)",
     lambda m: f"kernel 用到了评分程序不编译的东西：{_refused(m.group('p'))}（主机端调用、粘贴的 C 源码、"
               f"不是标识符的 extern 名字都会被拒绝）"),
    (r"the jit options of the factory could not be read", "无法读取工厂函数的 jit 选项"),
    (r"out_idx must be left unset: the grader passes every output buffer \(pre-filled with a poison value\)",
     "out_idx 必须留空：评分程序会传入每个输出缓冲区（预先填好毒值）"),
    (r"compile_flags (?P<b>.+?) are not allowed; allowed: ", lambda m: f"不允许的 compile_flags {m.group('b')}；允许的有："),
    (r"pass_configs must be a dict", "pass_configs 必须是字典"),
    (r"pass_configs entry (?P<k>.+?): only tilelang's tl\.\* options with plain values",
     lambda m: f"pass_configs 条目 {m.group('k')}：只允许 tilelang 的 tl.* 选项，且取值是普通数据"),
    (r"pass_configs entry (?P<k>.+?): value not allowed", lambda m: f"pass_configs 条目 {m.group('k')}：取值不允许"),
    # what the structure checks found (autograder.kernelgrade.structure), each after "[ok] " or "[--] "
    (r"widest global (?P<v>load|store) per thread \((?P<w>[^)]*)\); expected >= (?P<n>\d+) B",
     lambda m: f"每个线程最宽的全局{'读取' if m.group('v') == 'load' else '写入'}（{m.group('w')}）；要求 ≥ {m.group('n')} B"),
    (r"operand tiles staged in shared memory", "操作数分块经共享内存暂存"),
    (r"no shared-memory staging of the operands found", "没有找到操作数经共享内存的暂存"),
    (r"tensor-core instruction: (?P<w>[\w.]+)", lambda m: f"张量核指令：{'无' if m.group('w') == 'none' else m.group('w')}"),
    (r"no T\.Pipelined loop with num_stages found", "没有找到带 num_stages 的 T.Pipelined 循环"),
    (r"asynchronous global->shared copies: (?P<w>[\w.]+)( with mbarriers)?",
     lambda m: f"全局→共享内存的异步拷贝：{'无' if m.group('w') == 'none' else m.group('w')}"
               + ("（配合 mbarrier）" if m.group(2) else "")),
    (r"a block or warp reduction per row \((?P<r>[^()]*)\)",
     lambda m: f"每行一次 block 或 warp 级归约（{REDUCTIONS_ZH.get(m.group('r'), m.group('r'))}）"),
    (r"no per-row reduction found", "没有找到按行的归约"),
    (r"does not read the cos/sin tables", "没有读取 cos/sin 表"),
    (r"reads the cos/sin tables", "读取了 cos/sin 表"),
    (r"lowered to AscendC up to the bisheng call", "降级到 AscendC，直到调用 bisheng 之前"),
    (r"kernel kind: ", "kernel 类型："),
    (r"a SIMT/SIMD vector-function region is missing", "缺少 SIMT/SIMD 向量函数区域"),
    (r"a SIMT/SIMD vector-function region", "SIMT/SIMD 向量函数区域"),
    (r"buffer versions after AutoSchedule: (?P<v>.*?) \(expected a double-buffered tile\)",
     lambda m: f"AutoSchedule 之后的缓冲区版本数：{'无' if m.group('v') == 'none' else m.group('v')}（应为双缓冲的分块）"),
    (r"a reduction over each row is missing", "缺少每行上的归约"),
    (r"a reduction over each row \((?P<r>[^()]*)\)",
     lambda m: f"每行上的归约（{REDUCTIONS_ZH.get(m.group('r'), m.group('r'))}）"),
    (r"(?P<n>\d+) pipe-to-pipe flag notifications inserted", lambda m: f"插入了 {m.group('n')} 个流水线之间的同步标志通知"),
    # the notebook's self-check of a kernel (autograder.kernelgrade.selfcheck)
    (r"^cannot check a kernel here \((?P<e>.*)\); is the course environment active\?$",
     lambda m: f"这里无法检查 kernel（{m.group('e')}）；课程的 Python 环境激活了吗？"),
]
_COMPILED = [(re.compile(p), r) for p, r in PHRASES]


def zh(message: str) -> str:
    """``message`` with every known fixed phrase in Chinese (unknown text is kept)."""
    out = str(message)
    for pat, rep in _COMPILED:
        out = pat.sub(rep, out)
    return out
