"""The run log: the appendix of measurement records, generated from the recorded results.

Chapters quote a number and its conclusion; how it was found lives here -- which GPU runs the book
reads, every timed kernel with its configuration, every search with its candidates, and the
repeated runs of one experiment.  Configuration labels (``128x256x64_s4_t256_p8_ws_e128_if0_pers``,
``blk_m=2,threads=256``) appear only here and are explained once (:func:`legend_markdown`,
:func:`explain`).  Every table reads :func:`measure.results.load_results` and the manifest, nothing
is typed; all headers are Chinese.
"""
from __future__ import annotations

import json
import re
from typing import Iterable

__all__ = ["TOKENS", "explain", "legend_markdown", "runs_markdown", "bench_markdown", "searches_markdown",
           "checks_markdown", "repeats_markdown", "run_number", "topic_suites"]

#: (pattern of one token of a label, what it means; ``{0}``… are the pattern's groups)
TOKENS: tuple[tuple[str, str], ...] = (
    (r"(\d+)x(\d+)x(\d+)", "输出分块 {0}×{1}，每步沿 K 读入 {2}（block_M×block_N×block_K）"),
    (r"(\d+)x(\d+)", "输出分块 {0}×{1}（block_M×block_N）"),
    (r"s(\d+)", "{0} 级流水（stages）"),
    (r"st(\d+)", "{0} 级流水（stages）"),
    (r"s=(\d+)", "沿 K 切成 {0} 段（split-K），各段的 fp32 部分和最后归并"),
    (r"t(\d+)", "每个线程块 {0} 个线程"),
    (r"p(\d+)", "光栅化分组宽 {0} 个分块（panel：相邻线程块成组扫过输出以复用 L2，p0 为关闭）"),
    (r"ws", "手写的 warp 专门化流水：生产者 warp 用 TMA 搬数据，消费者 warp 做 wgmma"),
    (r"e0", "结尾把整块输出一次暂存并写回"),
    (r"e(\d+)", "结尾每次暂存并写回 {0} 列输出"),
    (r"if(\d+)", "消费者释放一级流水之前保留 {0} 批未等待的 wgmma（inflight）"),
    (r"pers", "persistent：每个 SM 一个线程块，依次处理多个输出分块"),
    (r"b(\d+)", "每个消费者 {0} 块结尾暂存缓冲轮流使用，TMA 写回只在缓冲要再用时才等待"),
    (r"ef", "输出只写一次：写回时给 L2 加 evict-first 提示"),
    (r"last", "最后到达的线程块归并：各段把 fp32 部分和写进工作区，在原子计数器上报到，最后报到的一块按段的顺序相加后写 C，不需要第二个 kernel"),
    (r"spread", "修正分摊到 kernel 里：写过同一分块的各线程块把 fp32 部分和写进工作区并在计数器上报到，到齐后各自把其中几行的各段按顺序相加后写 C，不需要第二个 kernel"),
    (r"tf", "stream-K 的尾部各段先算，整块后算（只与 spread 合用）"),
    (r"fr(\d+)", "修正 kernel 的每个线程块处理一个尾部分块的 {0} 行"),
    (r"fv", "修正 kernel 的求和是手写的：每个线程先把各段同一位置的四个数全部读进寄存器，再按段的顺序相加，各段的读同时发出"),
    (r"pdl", "第二个 kernel（归并或修正）以程序化依赖启动（programmatic dependent launch）：前一个 kernel 一开始就放行，第二个在它运行时已经启动，各线程块先等前一个完成、写入可见，再读部分和"),
    (r"pdl@tail", "修正 kernel 以程序化依赖启动，但 stream-K kernel 的各消费者写完整块之后才放行"),
    (r"pdl@end", "修正 kernel 以程序化依赖启动，但 stream-K kernel 的各消费者写完尾部各段之后才放行"),
    (r"te(\d+)", "尾部各段的 fp32 部分和每次暂存并写回 {0} 列（整块仍按 e 后的列数）"),
    (r"sh", "整块的 fp16 暂存与尾部各段的 fp32 暂存共用同一块共享内存（先写完整块，再暂存尾部），省下的空间多放一级流水"),
    (r"al", "尾部按分块对齐切分：每个尾部分块的 K 步只分给它自己的几个线程块，没有线程块跨两个分块，各写一段部分和"),
    (r"dsmem", "沿 K 的各段组成一个簇，部分和经分布式共享内存相加，C 只写一次，不用工作区，也没有第二个 kernel"),
    (r"sk", "stream-K：全部分块的 K 步排成一条序列，平均分给与 SM 数相等的常驻线程块，被切开的分块经 fp32 部分和与修正 kernel 合并"),
    (r"dp\+sk", "数据并行加 stream-K：先按整波算完整的分块，只把最后不满的一波切成 stream-K"),
    (r"nfast", "分块顺序先沿 N 走（缺省先沿 M）"),
    (r"c(\d+)", "{0} 个线程块组成一个簇（cluster），共享 TMA 多播"),
    (r"inferred", "共享内存布局不手工标注，由编译器推断"),
    (r"square|row|col", "T.gemm 的 warp 划分策略（square 为缺省的方形划分，row / col 整行 / 整列）"),
    (r"prom(\d+)", "fp8 两级累加：每 {0} 个 K 分块把张量核的部分和加进 fp32 累加器"),
    (r"npt=(\d+)", "每个线程处理 {0} 个元素"),
    (r"blk_m=(\d+)", "每个线程块处理 {0} 行"),
    (r"blk_s=(\d+)", "每个线程块处理 {0} 个序列位置"),
    (r"blk_k=(\d+)", "沿归约维每段 {0} 个元素（split-K）"),
    (r"threads=(\d+)", "每个线程块 {0} 个线程"),
    (r"min_blocks=(\d+)", "要求每个 SM 至少驻留 {0} 个线程块（编译器据此限制寄存器）"),
    (r"max_regs=(\d+)", "每个线程至多 {0} 个寄存器"),
    (r"rows=(\d+)", "每个线程块 {0} 行"),
    (r"rpb=(\d+)", "每个线程块 {0} 行"),
    (r"rows", "按行写法：一个线程块处理若干整行"),
    (r"tpr=(\d+)", "每行 {0} 个线程"),
    (r"seg=(\d+)", "每个线程处理 {0} 个连续通道"),
    (r"stages=(\d+)", "{0} 级流水"),
    (r"warp", "一个 warp 处理一行"),
    (r"vecp?", "向量化写法：一行分给多个线程，每线程连续读写"),
    (r"prefetch", "用 cp.async 预取下一批 token"),
    (r"pipe", "行内分段流水"),
    (r"lean", "精简写法（少一趟共享内存）"),
    # the W4A16 kernel (kernels.gemm.w4a16.label) and the batched form (kernels.gemm.batched.ws_label)
    (r"m(\d+)", "每个线程块处理 {0} 行激活（block_M）"),
    (r"n(\d+)", "每个线程块算 {0} 列输出（block_N）"),
    (r"k(\d+)", "每步沿 K 读入 {0} 个元素（block_K）"),
    (r"w(\d+)", "权重分块另有自己的 {0} 级环形缓冲，展开进寄存器后即释放"),
    (r"k", "两个消费者 warpgroup 沿 K 分工：轮流取 K 块各自累加，最后经共享内存相加"),
    (r"n", "两个消费者 warpgroup 沿 N 分工：各算 64 行权重，都读每个 K 块"),
    (r"kp", "簇里两个线程块沿 K 分摊同一组 128 行权重，部分和经 SM 之间的拷贝相加"),
    (r"mma", "张量核指令用 warp 级的 mma.sync（m16n8k16），不用 wgmma"),
    (r"x(\d+)", "每级流水按 {0} 个 K 分段展开进两块轮用的寄存器缓冲，一段的张量核乘法与下一段的展开重叠"),
    (r"q(\d+)", "{0} 个消费者 warpgroup 轮流取 K 块（各自累加，最后经共享内存相加）"),
    (r"tl", "权重在加载时离线重排成按块连续：每个线程块每一级要的那一片在显存里是连续的一段"),
    (r"il", "权重在加载时离线重排成半字节交错：每行每 128 个 K 里重排 int4 的位置，一个线程读自己的 16 字节，一次掩码取出一对权重"),
    (r"fu", "每一对权重的掩码与 1024 的指数位用一条直接写在 PTX 里的 lop3 完成（C 写法下 nvcc 发出与、或两条）"),
    (r"po", "缩放因子放到张量核乘法之后：每组 128 个 K 的 mma.sync 部分和单独以 fp32 累加，再乘这一行的缩放因子加进总和，展开里不再有乘法"),
    (r"lg(\d+)", "每个消费者让 {0} 级的 wgmma 在后台跑着，同时把下一级展开进另一块寄存器缓冲（比在跑的级数多一块，轮用），这一级的激活缓冲格晚 {0} 级才放回"),
    (r"lg", "每个消费者让一级的 wgmma 在后台跑着，同时把下一级展开进另一块寄存器缓冲（两块轮用），这一级的激活缓冲格晚一级才放回"),
    (r"wd", "int4 展开按 32 位字做：每次从共享内存读 16 字节，一条 prmt、一条 lop3 和两条 f16x2 指令得到两个权重"),
    # the decode-shaped W4A16 kernel (kernels.gemm.w4a16_dec.label)
    (r"dec", "解码形状（M ≤ 16）的 W4A16 写法：权重以 128 位访存直接读进寄存器，不经共享内存，张量核用 mma.sync"),
    (r"r(\d+)", "每个线程块处理 {0} 行（W4A16 解码写法里是权重行，split-K 的归并 kernel 里是输出行）"),
    (r"kw(\d+)", "同一组权重行沿 K 由 {0} 个 warp 分担（多于一个时，部分和在共享内存里相加）"),
    (r"sk(\d+)", "K 分给 {0} 个线程块，组成一个簇，部分和经分布式共享内存相加，不写回显存"),
    (r"d(\d+)", "每个 warp 提前发出 {0} 组（每组 128 个 k）权重的读取"),
    (r"nt(\d+)", "激活按 {0} 个 8 行的分块参与 mma"),
    # the TMA-ring decode kernel (kernels.gemm.w4a16_tma.label)
    (r"tma", "解码形状的 W4A16 写法：权重经 TMA 按每行 64 字节一片搬进共享内存，按字展开进 mma.sync 的片段"),
    (r"g(\d+)", "环形缓冲每一格装 {0} 组（每组 128 个 k）权重"),
    (r"loadonly", "计时探针：只剩把权重读进来（寄存器直读的写法读进寄存器，TMA 写法读进共享内存再读出，wgmma 写法只剩环形缓冲、计算 warpgroup 等到一级就放掉，结果不对，只计时）"),
    (r"mmaonly", "计时探针：只剩环形缓冲与张量核乘法，寄存器里的权重从不填写，连缩放因子也不读（结果不对，只计时）"),
    (r"full", "完整的 kernel（计时探针的对照）"),
    (r"nomma", "计时探针：去掉张量核乘法，只剩搬运与 int4 展开（结果不对，只计时）"),
    (r"noexpand", "计时探针：跳过 int4 展开，只剩搬运与张量核乘法（结果不对，只计时）"),
)
_COMPILED = tuple((re.compile("(?:" + p + r")\Z"), text) for p, text in TOKENS)

#: Keys of a recorded ``config`` dict, in Chinese (every key the recorded benches use: tests/book/test_runlog.py).
CONFIG_KEYS = {
    "block_M": "block_M", "block_N": "block_N", "block_K": "block_K", "stages": "流水级数", "threads": "线程数",
    "panel": "光栅化分组", "ws": "warp 专门化", "inflight": "在途 wgmma 批数", "epi_cols": "结尾列数",
    "persistent": "持久化（每个 SM 一个线程块）", "cluster": "簇大小", "schedule": "写法", "blk_m": "每块行数",
    "blk_n": "每步列数", "blk_k": "每段长度", "blk_s": "每块位置数", "rows": "每块行数", "tpr": "每行线程数",
    "seg": "每线程通道数", "min_blocks": "每 SM 最少块数", "max_regs": "寄存器上限", "npt": "每线程元素数",
    "group": "量化分组", "rope_dim": "RoPE 维数", "prefetch": "预取", "order": "分块顺序", "policy": "warp 划分",
    "level": "层级", "promote": "提升间隔", "split": "切分", "splits": "沿 K 段数", "via": "输入分块",
    "aligned": "尾部按分块对齐切分", "block_col_warps": "列方向 warp 数", "block_row_warps": "行方向 warp 数",
    "warp_col_tiles": "每 warp 列数", "warp_row_tiles": "每 warp 行数", "chunk": "展开分段长度",
    "consumers": "消费者 warpgroup 数", "dp_waves": "数据并行整波数", "evict_first": "写回加 evict-first 提示",
    "fix_rows": "修正 kernel 每块行数", "fix_vec": "修正求和手写", "fuse": "掩码与指数位合成一条 lop3",
    "inst": "张量核指令", "kpair": "簇内两块沿 K 分摊", "lag": "wgmma 在后台多跑一级", "pdl": "程序化依赖启动",
    "pdl_at": "放行时机", "perm": "权重半字节交错", "post": "缩放放到乘法之后", "reduce_rows": "归并 kernel 每块行数",
    "share": "整块与尾部共用暂存", "stages_w": "权重环形缓冲级数", "store_bufs": "结尾暂存缓冲数",
    "tail_cols": "尾部暂存列数", "tiled": "权重按块连续重排", "wide": "int4 按 32 位字展开",
}
#: Values of a few keys, in Chinese (a value not listed prints as it is).
CONFIG_VALUES = {
    ("split", "k"): "沿 K（消费者分工）", ("split", "n"): "沿 N（消费者分工）",
    ("via", "shared"): "经共享内存", ("via", "registers"): "直接进寄存器",
    ("dp_waves", -1): "全部整波", ("dp_waves", 0): "无（全部 stream-K）",
    ("order", "column"): "先沿列", ("pdl_at", "end"): "尾部各段写完之后",
}


def _tokens(label: str) -> list[str]:
    # "128x256x64_s4_t256_p8_ws_e128_if0_pers", "warp,rows=2,max_regs=128" and
    # "ws s=4 128x256 st4 e64 c2" alike: split on ",", blanks, then "_" -- but keep k=v whole
    # (blk_m=2 is one token)
    out = []
    for part in re.split(r",", label):
        for piece in part.split():
            out += [t for t in (piece.split("_") if "=" not in piece else [piece]) if t]
    return out


def explain(label: str) -> str:
    """A configuration label in words, token by token (an unknown token is kept as it is)."""
    if not label:
        return "—"
    words = []
    for tok in _tokens(str(label)):
        for pat, text in _COMPILED:
            m = pat.match(tok)
            if m:
                words.append(text.format(*m.groups()))
                break
        else:
            words.append(tok)
    return "；".join(words)


def legend_markdown() -> str:
    """The table that explains every token of a configuration label, once."""
    shown = {
        r"(\d+)x(\d+)x(\d+)": "128x256x64", r"s(\d+)": "s4", r"t(\d+)": "t256", r"p(\d+)": "p8", r"e(\d+)": "e128",
        r"if(\d+)": "if0", r"c(\d+)": "c2", r"prom(\d+)": "prom1", r"npt=(\d+)": "npt=8", r"blk_m=(\d+)": "blk_m=2",
        r"blk_s=(\d+)": "blk_s=1", r"blk_k=(\d+)": "blk_k=2048", r"threads=(\d+)": "threads=256",
        r"min_blocks=(\d+)": "min_blocks=9", r"max_regs=(\d+)": "max_regs=128", r"rows=(\d+)": "rows=2",
        r"rpb=(\d+)": "rpb=4", r"tpr=(\d+)": "tpr=128", r"seg=(\d+)": "seg=8", r"stages=(\d+)": "stages=2",
        r"square|row|col": "square / row / col", r"vecp?": "vec / vecp",
        r"(\d+)x(\d+)": "128x256", r"st(\d+)": "st4", r"s=(\d+)": "s=4", r"m(\d+)": "m16", r"n(\d+)": "n256",
        r"k(\d+)": "k512", r"w(\d+)": "w8", r"x(\d+)": "x128", r"r(\d+)": "r128", r"kw(\d+)": "kw1",
        r"sk(\d+)": "sk4", r"d(\d+)": "d4", r"nt(\d+)": "nt2", r"lg(\d+)": "lg2",
        r"b(\d+)": "b2", r"fr(\d+)": "fr4", r"te(\d+)": "te32", r"dp\+sk": "dp+sk", r"q(\d+)": "q4", r"g(\d+)": "g2",
    }
    lines = ["| 标签片段 | 含义 |", "|---|---|"]
    for pat, text in TOKENS:
        example = shown.get(pat, pat)
        m = re.match("(?:" + pat + r")\Z", example.split(" ")[0])
        meaning = text.format(*m.groups()) if m else text
        lines.append(f"| `{example}` | {meaning} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ reading
def _load(device: str) -> dict:
    from measure.results import load_results

    return load_results(device)


def run_number(file: str | None) -> str:
    """The run's name in the appendix tables: ``raw/nvidia-h200.run19.json`` -> ``"19"``; a run
    recorded on a helper branch keeps the name it was recorded under
    (``raw/nvidia-h200.gemmvar4.json`` -> ``"gemmvar4"``); ``"—"`` when the name has neither."""
    name = str(file or "")
    m = re.search(r"\.run(\d+)\.json$", name) or re.search(r"run(\d+)", name)
    if m:
        return m.group(1)
    m = re.search(r"\.([A-Za-z]+\d+)\.json$", name)
    return m.group(1) if m else "—"


def topic_suites(topic: str) -> tuple[str, ...]:
    from measure.runner import TOPICS

    return tuple(TOPICS[topic])


def _in_topic(suite: str, prefixes: Iterable[str]) -> bool:
    return any(suite == p or suite.startswith(p + ".") for p in prefixes)


def _suites(results: dict, topic: str) -> list[tuple[str, dict]]:
    pre = topic_suites(topic)
    return [(n, s) for n, s in (results.get("suites") or {}).items() if _in_topic(n, pre)]


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _config(cfg) -> str:
    if not cfg:
        return "—"
    if isinstance(cfg, str):
        return f"`{cfg}`"
    items = []
    for k, v in cfg.items():
        if v is None or v is False:
            continue
        if v is True:
            items.append(CONFIG_KEYS.get(k, k))
        elif k == "split" and isinstance(v, int):  # the row sum's split: the blocks sharing a row block's columns
            items.append(f"每组行的列分给 {v} 个线程块")
        else:
            try:
                shown = CONFIG_VALUES.get((k, v), v)
            except TypeError:  # an unhashable value (a list) prints as it is
                shown = v
            items.append(f"{CONFIG_KEYS.get(k, k)} {shown}")
    return "，".join(items) or "—"


#: Every suite of the runner, in Chinese: what it measures (the appendix's legend of suite names; a test
#: checks that every suite of ``measure.runner`` and every suite of the recorded results has one).
SUITES_ZH: dict[str, str] = {
    "pytorch": "同一个算子的 eager、torch.compile 与 TileLang 三种写法（sin/cos、LayerNorm）",
    "primer": "入门一章的拷贝、向量化缩放、按行求和与 T.gemm 操作数放法的核对",
    "elementwise": "逐元素加法的四种写法与 fp32→fp16 的缩放加转换",
    "quant": "按 token 分组取 amax 的 FP8 量化",
    "norm": "RMSNorm 的几种调度（按行、共享内存、split-K 与搜索出的写法）与 LayerNorm",
    "rope": "RoPE 的两种配对约定，朴素与分块两种调度",
    "fused": "RMSNorm + RoPE（+ FP8）的融合 kernel，与三个 kernel 串联、eager、torch.compile 对比",
    "gemm.ladder": "GEMM 的五级阶梯与调优后的第四级，对比 cuBLAS",
    "gemm.bf16": "调优后的 GEMM 换成 bf16，对比 cuBLAS bf16；fp16 在 8192³ 上的重复对比",
    "gemm.lowp": "低精度 GEMM：fp8 对比 torch._scaled_mm，W4A16 对比 fp16 权重的 cuBLAS",
    "gemm.w4a16": "W4A16（int4 权重、fp16 激活）GEMM 在解码与其他形状上的搜索与计时探针",
    "gemm.splitk": "细长 GEMM 上的 split-K（各种段数与两种原子写法）",
    "gemm.splitk_ws": "手写持久化流水上的 split-K，对比 cuBLAS 与不切分",
    "gemm.streamk": "最后一波几乎空着的网格上的 stream-K",
    "gemm.streamk_ws": "手写持久化流水上的 stream-K，对比 cuBLAS 与数据并行分块",
    "gemm.batched": "注意力形状上的 batched GEMM，对比 torch.bmm",
    "gemm.batched_ws": "把 batch 并进 M、用手写持久化流水的 batched GEMM，对比 torch.bmm",
    "gemm.grouped": "MoE 的 grouped GEMM（偏移表与指针表两种写法），对比逐个专家的 torch.matmul",
    "gemm.grouped_ws": "grouped GEMM 的补齐写法与两种表写法，对比逐个专家的 torch.matmul（含 CUDA Graph 版）",
    "gemm.support": "sm_90a 指令路径的核查，以及 int8 GEMM 与 block_N = 24 两个真正运行的探针",
    "gemm.flush": "两种 L2 冲刷方式下，GEMM 各变体的胜者与库的对比",
    "case_study": "性能模型一章的设计案例（QK-norm + RoPE + FP8）的设计 A、B、C",
    "carver": "tilelang 的 carver 与 Analyzer 在真实设备模型上的推荐，前几名编译后计时",
}

#: The declared repeated experiments (the manifest's ``repeats``), titled in Chinese.
REPEAT_TITLES: dict[str, str] = {
    "gemm.ladder tuned search": "调优后的第四级 GEMM：候选搜索",
    "gemm.w4a16 search": "W4A16：候选搜索",
    "gemm.batched_ws search": "batched GEMM（手写流水）：候选搜索",
    "gemm.w4a16 search, interleaved weights": "W4A16：权重半字节交错以后的搜索",
    "gemm.w4a16 search, scale after the MMA": "W4A16：缩放因子移到张量核乘法之后的搜索",
    "gemm.w4a16 search, kpair on interleaved weights": "W4A16：交错权重上、簇里两块沿 K 分摊的搜索",
    "gemm.splitk_ws search, measured again": "split-K（手写流水）：同一搜索再测一次",
    "gemm.streamk_ws search, measured again": "stream-K（手写流水）：同一搜索再测一次",
    "gemm.flush under two flushes, measured twice": "两种 L2 冲刷下的对比，测两次",
    "gemm.flush with the 8-row tile at M = 1, measured twice": "两种冲刷：M = 1 改用 8 行的分块，测两次",
    "gemm.streamk_ws with the row order and the full-wave tiling, measured twice":
        "stream-K：按行的分块顺序，加上整波的分块，测两次",
    "gemm.streamk_ws with the spread fix-up, measured twice": "stream-K：修正分摊到 kernel 里（spread），测两次",
    "gemm.flush with lag at M = 64, measured twice": "两种冲刷：M = 64 让 wgmma 在后台多跑一级（lg），测两次",
    "gemm.flush with fuse, measured twice": "两种冲刷：掩码与指数位合成一条 lop3（fu），测两次",
    "gemm.flush with the hand-written stream-K fix-up, measured twice":
        "两种冲刷：stream-K 的修正求和手写（fv），测两次",
    "gemm.streamk_ws with the kernel timeline, measured twice": "stream-K：加上每次调用的 kernel 时间线，测两次",
    "gemm.streamk_ws with the wave and the tail run alone, measured twice": "stream-K：整波与尾部各自单独运行，测两次",
    "gemm.streamk_ws with the aligned tail split, measured twice": "stream-K：尾部按分块对齐切分（al），测两次",
    "gemm.flush with the aligned stream-K form, measured twice": "两种冲刷：对齐切分的 stream-K 写法，测两次",
    "gemm.flush with the six-stage stream-K form, measured twice": "两种冲刷：六级流水的 stream-K 写法，测两次",
    "gemm.streamk_ws with the six-stage shared-staging form, measured twice":
        "stream-K：六级流水、整块与尾部共用暂存（sh），测两次",
}


#: A check that the records show failing, and where the book discusses it (printed under the checks table
#: only while the record says it failed; a test wants a note for every failing check).
CHECK_NOTES: dict[str, str] = {
    "gemm_tile a_in=fragment b_in=shared": ("`T.gemm` 的 A 放在寄存器、B 放在共享内存、开着 warp 专门化的那种放法在 GPU 上"
                                            "没有算对；{ref}`primer-gemm` 一节讨论它，并把放法与它周围的流水线分开核对"),
}


def suite_zh(suite: str) -> str:
    """What ``suite`` measures, in Chinese (the suite's own name where none is written)."""
    return SUITES_ZH.get(suite, suite)


def suites_markdown() -> str:
    """The legend of suite names: each suite of the runner, the chapter it belongs to, what it measures."""
    from measure.runner import TOPICS

    chapter = {"pytorch": "从 PyTorch 到 kernel", "primer": "TileLang 入门", "elementwise": "逐元素、归一化与 RoPE",
               "gemm": "GEMM", "perfmodel": "性能模型"}
    lines = ["| 套件 | 所属章节 | 测的是什么 |", "|---|---|---|"]
    for topic, prefixes in TOPICS.items():
        for suite in [n for n in SUITES_ZH if _in_topic(n, prefixes)]:
            lines.append(f"| `{suite}` | {chapter.get(topic, topic)} | {SUITES_ZH[suite]} |")
    return "\n".join(lines)


def runs_note(device: str = "nvidia-h200") -> str:
    """Why the run numbers have gaps and why a few runs have names instead of numbers (from the manifest)."""
    from measure.results import device_slug, manifest

    m = manifest().get(device_slug(device)) or {}
    archived = sorted({run_number(f) for f in m.get("archive") or []}, key=lambda x: (not x.isdigit(), int(x) if x.isdigit() else 0, x))
    named = [run_number(f) for f in m.get("inputs") or [] if not run_number(f).isdigit()]
    out = []
    if archived:
        out.append(f"编号跳过的 {'、'.join(archived)} 是只存档、不参与合并的运行。")
    if named:
        out.append(f"以名字而不是编号出现的 {'、'.join(named)} 是在另一条开发分支上录制的运行，沿用录制时的名字。")
    return "".join(out)


# ------------------------------------------------------------------ tables
def runs_markdown(device: str = "nvidia-h200") -> str:
    """Every GPU run the book reads: number, date, command, copy bandwidth, and the suites the
    merged results take from it."""
    res = _load(device)
    took: dict[str, list[str]] = {}
    for name, s in (res.get("suites") or {}).items():
        took.setdefault(s.get("run"), []).append(name)
    lines = ["| 运行 | 日期（UTC） | 命令 | 拷贝带宽 (GB/s) | 书中采用它的套件 |", "|---:|---|---|---:|---|"]
    for r in res.get("runs") or []:
        bw = r.get("copy_bandwidth_gbps")
        suites = "、".join(took.get(r.get("file"), [])) or "（已被后来的运行取代）"
        date = str(r.get("date", "?"))[:16].replace("T", " ")
        cmds = _run_commands(r.get("file"), r.get("command", "?"))
        lines.append(f"| {run_number(r.get('file'))} | {date} | {'；'.join(f'`{_cell(c)}`' for c in cmds)} | "
                     + (f"{bw:.0f}" if bw else "—") + f" | {suites} |")
    return "\n".join(lines)


def _run_commands(file: str | None, command: str) -> list[str]:
    """The commands of one run: a run that invoked the runner once per suite (the helper-branch
    runs) records each suite's command in its raw file; the merged ``runs`` entry keeps the last."""
    from measure.results import RESULTS_DIR

    try:
        raw = json.loads((RESULTS_DIR / str(file)).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return [command]
    cmds = [s.get("command") for s in (raw.get("suites") or {}).values() if isinstance(s, dict) and s.get("command")]
    out = list(dict.fromkeys(cmds)) or [command]
    return out if command in out or not cmds else [*out, command]


def bench_markdown(topic: str, device: str = "nvidia-h200") -> str:
    """Every timed kernel of ``topic``'s suites: time, bandwidth, share of copy, TFLOP/s, speedups,
    configuration (in words) and the run that measured it."""
    res = _load(device)
    lines = ["| 测量项 | 时间 (µs) | 有效带宽 (GB/s) | 占拷贝带宽 | TFLOP/s | 加速比（基线时间 ÷ 本项时间） | 配置 | 运行 |",
             "|---|---:|---:|---:|---:|---|---|---:|"]
    n = 0
    for sname, s in _suites(res, topic):
        for r in s.get("records", []):
            if r.get("kind") != "bench":
                continue
            n += 1
            sp = "；".join(f"{b} {v:.2f}×" for b, v in (r.get("speedup") or {}).items() if v is not None) or "—"
            ms = r.get("ms")
            lines.append(
                f"| {_cell(r.get('name'))} | {ms * 1e3:.1f} | " if ms else f"| {_cell(r.get('name'))} | — | ")
            lines[-1] += (f"{r['gbps']:.0f} | " if r.get("gbps") else "— | ")
            lines[-1] += (f"{100 * r['frac_copy_bw']:.1f}% | " if r.get("frac_copy_bw") else "— | ")
            lines[-1] += (f"{r['tflops']:.1f} | " if r.get("tflops") else "— | ")
            lines[-1] += f"{_cell(sp)} | {_config(r.get('config'))} | {run_number(s.get('run'))} |"
    return "\n".join(lines) if n else "本主题尚无计时记录。"


def checks_markdown(topic: str, device: str = "nvidia-h200") -> str:
    """Per suite of ``topic``: how many correctness checks were recorded and how many passed."""
    res = _load(device)
    lines = ["| 套件 | 测的是什么 | 正确性检查 | 通过 | 未通过的检查 | 运行 |", "|---|---|---:|---:|---|---:|"]
    notes: list[str] = []
    if not _suites(res, topic):
        return "本主题尚无检查记录。"
    for sname, s in _suites(res, topic):
        checks = [r for r in s.get("records", []) if r.get("kind") == "check"]
        bad = [r.get("name", "?") for r in checks if not r.get("ok")]
        lines.append(f"| `{sname}` | {suite_zh(sname)} | {len(checks)} | {len(checks) - len(bad)} | "
                     f"{_cell('、'.join(bad)) or '无'} | {run_number(s.get('run'))} |")
        notes += [f"未通过的“{b}”：{CHECK_NOTES[b]}。" for b in bad if b in CHECK_NOTES]
    return "\n".join(lines) + ("\n\n" + "\n\n".join(notes) if notes else "")


def _search_block(r: dict, run: str, top: int | None = None) -> str:
    ms = r.get("ms") or {}
    best = r.get("best")
    rows = sorted(((k, v) for k, v in ms.items() if v is not None), key=lambda kv: kv[1])
    best_ms = ms.get(best) if best in ms else (rows[0][1] if rows else None)
    rounds = r.get("rounds")
    head = (f"**{_cell(r.get('name'))}**（运行 {run}；候选 {len(ms)} 个"
            + (f"，每个计时 {rounds} 轮，取各轮中位数的中位数" if rounds else "，各计时一次") + "）。"
            f"胜出：`{best}`，读作：{explain(best)}。")
    errs = r.get("errors") or {}
    if errs:
        head += f" 未通过检查而被剔除的候选：{'、'.join(f'`{k}`' for k in errs)}。"
    lines = [head, "", "| 配置 | 时间 (µs) | 相对胜者 |", "|---|---:|---:|"]
    for k, v in rows[:top] if top else rows:
        rel = f"{v / best_ms:.3f}×" if best_ms else "—"
        lines.append(f"| `{k}` | {v * 1e3:.1f} | {rel} |")
    return "\n".join(lines)


#: The tuned-GEMM and low-precision suites, whose searches fill one appendix page; the variants' another.
GEMM_TUNED_SEARCHES = ("gemm.ladder", "gemm.bf16", "gemm.lowp")


def searches_markdown(topic: str, device: str = "nvidia-h200", suites: tuple[str, ...] | None = None,
                      skip: tuple[str, ...] = (), names: str | None = None) -> str:
    """Every search of ``topic``'s suites: its candidates sorted by time, the winner in words.
    ``suites`` keeps only the suites named there, ``skip`` leaves those out, ``names`` (a regular
    expression) keeps the searches whose name it matches from the start (a topic with many searches
    spreads them over pages of readable length)."""
    res = _load(device)
    blocks = []
    for sname, s in _suites(res, topic):
        if (suites is not None and sname not in suites) or sname in skip:
            continue
        for r in s.get("records", []):
            if r.get("kind") == "search" and (names is None or re.match(names, r.get("name", ""))):
                blocks.append(_search_block(r, run_number(s.get("run"))))
    return "\n\n".join(blocks) if blocks else "本主题没有搜索记录。"


#: Suites whose declared repeats have a page of their own (the split-K / stream-K variants and the two flushes), so
#: that neither page of repeats grows past a readable length.
VARIANT_REPEAT_SUITES = ("gemm.splitk_ws", "gemm.streamk_ws", "gemm.flush")


def repeats_markdown(device: str = "nvidia-h200", part: str | None = None) -> str:
    """The declared repeats of the manifest: per experiment and run, each search's winner and the
    timed winner against its baselines (timing probes left out).  ``part``: ``"variants"`` only the
    experiments of :data:`VARIANT_REPEAT_SUITES`, ``"main"`` all the others, None every experiment."""
    from measure.results import repeat_runs
    from measure.results import manifest as read_manifest

    from measure.results import device_slug

    if part not in (None, "main", "variants"):
        raise ValueError(f"part must be None, 'main' or 'variants', got {part!r}")
    exps = (read_manifest().get(device_slug(device)) or {}).get("repeats") or {}
    if part is not None:
        exps = {e: v for e, v in exps.items() if (e.split(" ")[0] in VARIANT_REPEAT_SUITES) == (part == "variants")}
    if not exps:
        return "没有声明重复运行。"
    out = []
    for exp in exps:
        suite = exp.split(" ")[0]
        runs = repeat_runs(device, exp)
        lines = [f"**{_cell(REPEAT_TITLES.get(exp, exp))}**：同一实验独立运行 {len(runs)} 次。", "",
                 "| 运行 | 日期（UTC） | 搜索 | 胜出配置 | 胜者时间 (µs) | 复测时间 (µs) | 加速比（基线时间 ÷ 复测时间） |",
                 "|---:|---|---|---|---:|---:|---|"]
        for fname, data in runs:
            s = (data.get("suites") or {}).get(suite) or {}
            benches = {r.get("name"): r for r in s.get("records", []) if r.get("kind") == "bench"}
            for r in s.get("records", []):
                if r.get("kind") != "search" or " probe " in r.get("name", ""):
                    continue  # timing probes (a pipeline with a part left out) are not repeats of a winner
                b = benches.get(r.get("name")) or {}
                best = r.get("best")
                bms = (r.get("ms") or {}).get(best)
                sp = "；".join(f"{k} {v:.3f}×" for k, v in (b.get("speedup") or {}).items() if v is not None) or "—"
                date = str(s.get('date', '?'))[:16].replace('T', ' ')
                lines.append(f"| {run_number(fname)} | {date} | {_cell(r.get('name'))} | `{best}` | "
                             + (f"{bms * 1e3:.1f} | " if bms else "— | "))
                lines[-1] += (f"{b['ms'] * 1e3:.1f} | " if b.get("ms") else "— | ") + f"{sp} |"
            searched = {r.get("name") for r in s.get("records", []) if r.get("kind") == "search"}
            alone = [b for n, b in benches.items() if n not in searched and b.get("ms")]
            if alone:  # benches with no search before them (fixed kernels timed again): one row a run, so the page
                # stays short; their speed-ups over the first baseline (the library) as a range
                xs = [next((v for v in (b.get("speedup") or {}).values() if v is not None), None) for b in alone]
                xs = [x for x in xs if x is not None]
                rng = f"对第一个基线 {min(xs):.3f}×–{max(xs):.3f}×" if xs else "—"
                lines.append(f"| {run_number(fname)} | {str(s.get('date', '?'))[:16].replace('T', ' ')} | "
                             f"{len(alone)} 次计时，未搜索 | — | — | — | {rng} |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def config_json(cfg) -> str:
    """A recorded config dict as compact JSON (for tests and the maintainers' appendix)."""
    return json.dumps(cfg, ensure_ascii=False, sort_keys=True)
