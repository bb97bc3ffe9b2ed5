"""Helpers of the TileLang primer page (book/ch_primer.md), run at build time on the CPU.

Everything the page says about generated code is computed here from a real lowering
(:func:`kernels.primer.lower`, :func:`kernels.primer.trace_lowering`,
:func:`ascend_trace`) -- lowered on the CPU for ``sm_90a`` (and for
the Ascend target), never run.  Measured numbers are read from the recorded results
(:func:`measure.results.load_results`); nothing here types a number.

* :func:`html` renders Markdown (tables included) for a cell output;
* :func:`source_md` shows a kernel factory's real source;
* :func:`kernel_lines` picks lines of a generated kernel;
* :func:`copy_lowerings` is the table of what ``T.copy`` became;
* :func:`pass_table`, :func:`diff_lines`, :func:`pipeline_facts`, :func:`ws_facts`,
  :func:`ascend_facts` read a lowering trace;
* :func:`attempt` runs a cell's failing example and returns the real, shortened message;
* :func:`measured_block` shows the primer suite's recorded numbers, or says that there
  are none yet;
* :func:`page_values` are the ``calc.primer.*`` texts the page glues.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import re
import textwrap
from pathlib import Path

__all__ = [
    "NOT_RECORDED", "PRIMER_SUITE", "html", "provenance_md", "source_md", "body", "kernel_lines", "lowered", "trace",
    "copy_lowerings", "pass_table", "diff_lines", "pipeline_facts", "ws_facts", "ascend_trace",
    "ascend_facts", "layout_table", "attempt", "shorten", "primer_records", "measured_block",
    "page_values", "kib", "glued_keys", "scopes_table", "record_claims", "record_values", "checks_line",
    "primer_checks", "GEMM_PLACEMENTS", "record_label",
]

ROOT = Path(__file__).resolve().parent.parent
NOT_RECORDED = "尚无记录结果 / no recorded result yet"
PRIMER_SUITE = "primer"
ROW_SUM = (4096, 4096)  # the shape the page lowers (the IR does not depend on it beyond constants)
NO_WS = {"tl.disable_warp_specialized": True}


# ------------------------------------------------------------------ rendering
def html(text: str):
    """Markdown (with tables) as an HTML cell output: notebook outputs are CommonMark."""
    from IPython.display import HTML
    from markdown_it import MarkdownIt

    return HTML(MarkdownIt("commonmark").enable("table").render(text).replace("<table>", '<table class="table">'))


def source_md(factory, first: str | None = None, last: str | None = None) -> str:
    """The real source of a kernel factory (read from the package), as a Markdown code block."""
    fn = getattr(factory, "func", factory)
    fn = getattr(fn, "orig_func", fn)
    lines = inspect.getsource(fn).splitlines()
    if first is not None:
        i = next((n for n, ln in enumerate(lines) if first in ln), None)
        j = None
        if i is not None:
            j = next((n for n, ln in enumerate(lines) if n >= i and last and last in ln), len(lines) - 1)
        if i is not None and j is not None:
            lines = lines[i:j + 1]
    code = textwrap.dedent("\n".join(lines))
    return f"`{fn.__module__}.{fn.__name__}`（读自已安装的课程包）\n\n```python\n{code}\n```"


def body(source: str) -> str:
    """The kernel function of a generated CUDA source (from its definition on)."""
    i = source.find("__global__ void __launch_bounds__")
    return source[i:] if i >= 0 else source[source.find("__global__"):]


def kernel_lines(source: str, tokens, limit: int = 8, width: int = 150) -> list[str]:
    """Stripped lines of the kernel body that contain any of ``tokens``, in order."""
    out = []
    for ln in body(source).splitlines():
        if any(t in ln for t in tokens):
            s = ln.strip()
            out.append(s if len(s) <= width else s[:width - 3] + "...")
            if len(out) >= limit:
                break
    return out


# --------------------------------------------------------------- lowerings
@functools.lru_cache(maxsize=None)
def _lowered(name: str, args: tuple, kwargs: tuple, configs: tuple):
    from kernels import primer as P

    return P.lower(getattr(P, name), *args, pass_configs=dict(configs), **dict(kwargs))


def lowered(name: str, *args, pass_configs: dict | None = None, **kwargs):
    """``kernels.primer.lower`` of factory ``name`` (memoised for one page build)."""
    return _lowered(name, tuple(args), tuple(sorted(kwargs.items())), tuple(sorted((pass_configs or {}).items())))


@functools.lru_cache(maxsize=None)
def _trace(name: str, args: tuple, configs: tuple):
    from kernels import primer as P

    return P.trace_lowering(getattr(P, name), *args, pass_configs=dict(configs))


def trace(name: str = "row_sum_kernel", *args, pass_configs: dict | None = None):
    """The lowering trace of factory ``name`` (default: the row sum), memoised."""
    return _trace(name, tuple(args or ROW_SUM), tuple(sorted((pass_configs or {}).items())))


_COPY_ROWS = (
    ("`T.copy(X[...], xf)`：显存 → 寄存器", "row_sum_kernel", dict(via="registers"), {}),
    ("`T.copy(X[...], xs)`：显存 → 共享内存，`T.Pipelined` 中，关闭 warp 专门化", "row_sum_kernel", {}, NO_WS),
    ("同上，sm_90a 默认（warp 专门化）", "row_sum_kernel", {}, {}),
    ("`T.copy(xs, xf)`：共享内存 → 寄存器", "row_sum_kernel", {}, {}),
)
_EVIDENCE = {
    "uint4 global load": r"\*\(uint4\*\)\([^=]*\) = \*\(uint4\*\)\(X \+",
    "cp.async": r"tl::cp_async_gs",
    "TMA load": r"tl::tma_load\(",
    "mbarrier": r"mbarrier\[",
    "uint4 shared load": r"= \*\(uint4\*\)\(xs \+",
}


def evidence(source: str) -> dict[str, int]:
    """How often each piece of evidence of a copy lowering occurs in a kernel body."""
    b = body(source)
    return {k: len(re.findall(p, b)) for k, p in _EVIDENCE.items()}


def copy_lowerings() -> str:
    """Markdown table: each ``T.copy`` of the row sum, what sm_90a code it became (lowered on CPU)."""
    lines = ["| 写法 | 生成代码里的证据 | 每个 block 的线程 | 动态共享内存 |", "|---|---|---:|---:|"]
    wanted = ("uint4 global load", "cp.async", "TMA load", "uint4 shared load")
    for label, name, kw, cfg in _COPY_ROWS:
        low = lowered(name, *ROW_SUM, pass_configs=cfg, **kw)
        ev = evidence(low.source)
        if "共享内存 → 寄存器" in label:
            shown = f"uint4 shared load × {ev['uint4 shared load']}"
        else:
            shown = "，".join(f"{k} × {ev[k]}" for k in wanted if ev[k] and k != "uint4 shared load") or "—"
        lines.append(f"| {label} | {shown} | {low.threads[0]} | {low.dyn_smem_bytes} B |")
    return "\n".join(lines)


def pass_table(tr, only: tuple | None = None) -> str:
    """Markdown table of the passes that changed the IR: order, phase, name, lines added/removed."""
    lines = ["| 序号 | 阶段 | pass | +行 | −行 |", "|---:|---|---|---:|---:|"]
    for r in tr.records:
        if not r.changed or r.name in ("Simplify",) or (only and r.name not in only):
            continue
        lines.append(f"| {r.index} | {r.phase} | `{r.name}` | {r.added} | {r.deleted} |")
    return "\n".join(lines)


def diff_lines(rec, tokens=None, limit: int = 10, width: int = 140, side: str = "both") -> list[str]:
    """``-``/``+`` lines of one pass's diff (optionally only those with a token)."""
    out = []
    for ln in difflib.unified_diff(rec.before.splitlines(), rec.after.splitlines(), lineterm="", n=0):
        if ln.startswith(("---", "+++", "@@")):
            continue
        if side == "after" and not ln.startswith("+") or side == "before" and not ln.startswith("-"):
            continue
        if tokens and not any(t in ln for t in tokens):
            continue
        s = ln[0] + " " + ln[1:].strip()
        out.append(s if len(s) <= width else s[:width - 3] + "...")
        if len(out) >= limit:
            break
    return out


def pipeline_facts(tr=None) -> dict:
    """What InjectSoftwarePipeline did to the row-sum loop (warp specialisation off)."""
    tr = tr or trace(pass_configs=NO_WS)
    r = tr.find("InjectSoftwarePipeline")
    ext_before = re.findall(r"for k in T\.serial\((\d+)", r.before)
    ext_after = re.findall(r"for k in T\.serial\((\d+)", r.after)
    loop = r.after[r.after.find("for k in T.serial("):]
    return {
        "loop_before": int(ext_before[0]) if ext_before else None,
        "loop_after": int(ext_after[0]) if ext_after else None,
        "commit_groups": r.after.count("T.ptx_commit_group()"),
        "prologue_copies": r.after[:r.after.find("for k in T.serial(")].count("T.copy(T.region(X["),
        "waits": re.findall(r"T\.ptx_wait_group\((\d+)\)", r.after),
        "loop_waits": re.findall(r"T\.ptx_wait_group\((\d+)\)", loop[:loop.find("acc[i] = acc[i] + part[i]")]),
        "planning_changed": tr.find("PipelinePlanning").changed,
        "stages_annotation": "num_stages" in tr.find("PipelinePlanning").before,
    }


def ws_facts(tr=None) -> dict:
    """What warp specialisation did on sm_90a: threads, producer branch, barriers, registers."""
    tr = tr or trace()
    r = tr.find("ProducerConsumerWarpSpecialized")
    src = tr.source
    m_alloc = re.search(r"warpgroup_reg_alloc<(\d+)>", src)
    m_dealloc = re.search(r"warpgroup_reg_dealloc<(\d+)>", src)
    m_lb = re.search(r"__launch_bounds__\((\d+)", src)
    m_tx = re.findall(r'T\.launch_thread\("threadIdx\.x", (\d+)\)', r.before)
    m_tx2 = re.findall(r'T\.launch_thread\("threadIdx\.x", (\d+)\)', r.after)
    m_prod = re.search(r"if \(\(\(int\)threadIdx\.x\) (<|>=) (\d+)\)", body(src))
    m_buf = re.search(r'xs = T\.sblock_alloc_buffer\(\((\d+), (\d+), (\d+)\)', r.after)
    m_bar = re.search(r'mbarrier_mem\[(\d+)\]', src)
    m_tx_bytes = re.search(r"arrive_and_expect_tx\((\d+)\)", src)
    return {
        "threads_before": int(m_tx[0]) if m_tx else None,
        "threads_after": int(m_tx2[0]) if m_tx2 else None,
        "launch_bounds": int(m_lb.group(1)) if m_lb else None,
        "producer_split": int(m_prod.group(2)) if m_prod else None,
        "buffers": int(m_buf.group(1)) if m_buf else None,
        "mbarriers": int(m_bar.group(1)) if m_bar else None,
        "reg_alloc": int(m_alloc.group(1)) if m_alloc else None,
        "reg_dealloc": int(m_dealloc.group(1)) if m_dealloc else None,
        "tma_bytes": int(m_tx_bytes.group(1)) if m_tx_bytes else None,
        "tma_copy_after_ws": "T.tma_copy(" in r.after and "T.tma_copy(" not in r.before,
        "tma_load_after_lower": "T.tma_load(" in tr.find("LowerTileOp").after,
        "pipelining_noop": not tr.find("InjectSoftwarePipeline").changed,
    }


@functools.lru_cache(maxsize=None)
def ascend_trace():
    """The row sum in the Ascend dialect, lowered on the CPU (stopped at the ``bisheng`` call) under
    the same lowering trace as the CUDA kernels: ``(Trace, AscendCapture)``; the capture holds the
    AscendC source and what the scheduling passes decided (see :mod:`measure.ascend`)."""
    import contextlib

    from kernels import primer as P
    from measure.ascend import capture

    with P._tracing() as (session, chatter):
        with contextlib.redirect_stdout(chatter):
            cap = capture("row_sum", P.row_sum_ascend())
        recs = P._records(session())
    return P.Trace("ascend", recs, cap.source), cap


def ascend_facts() -> dict:
    tr, cap = ascend_trace()
    changed = [r.name for r in tr.records if r.changed]
    return {
        "passes": len([r for r in tr.records if r.phase not in ("codegen",)]),
        "changed": changed,
        "x_versions": cap.buffer_versions.get("x_ub"),
        "kind": cap.kernel_kind,
        "notify": cap.sync.get("asc_sync_notify", 0),
        "wait": cap.sync.get("asc_sync_wait", 0),
        "stopped_at": cap.stopped_at,
    }


def layout_table(layouts: dict) -> str:
    """Markdown table of the layouts tilelang printed for the row sum's fragments."""
    lines = ["| fragment | 形状 → 每线程 | 哪个线程（Thread） | 线程里的下标（Index） | 副本数 |", "|---|---|---|---|---:|"]
    for name, rows in layouts.items():
        d = {r.split(":", 1)[0].strip(): r.split(":", 1)[1].strip() for r in rows if ":" in r}
        lines.append(f"| `{name}` | `{d.get('Shape', '')}` | `{d.get('Thread', '')}` | `{d.get('Index', '')}` | "
                     f"{d.get('Replicate', '')} |")
    return "\n".join(lines)


#: how the ledger's scopes are allocated, in the page's words (a plain construct is shown as code)
_ALLOC_ZH = {"T.Tensor arguments": "`T.Tensor` 参数"}


def scopes_table() -> str:
    """Markdown table of ledger.primer.memory_scopes (capacities and rates, as the ledger computes them)."""
    from ledger.primer import memory_scopes

    name = {"registers": "寄存器（fragment / local）", "shared memory": "共享内存（shared）",
            "HBM (global)": "显存 HBM（global）", "HBM, pure copy": "显存 HBM，纯拷贝"}
    who = {"one thread": "一个线程", "one block": "一个 block", "every block": "所有 block"}
    lines = ["| 层级 | TileLang 写法 | 谁能看见 | 每个 SM | 整颗芯片 | 供数速率 |", "|---|---|---|---:|---:|---:|"]
    for s in memory_scopes():
        per = "—" if s.per_sm_bytes is None else f"{s.per_sm_bytes / 1024:.0f} KiB"
        tot = "—" if s.total_bytes is None else f"{s.total_bytes / 2**20:.1f} MiB"
        rate = "（不单独建模）" if s.rate_bytes_s is None else f"{s.rate_bytes_s / 1e9:,.0f} GB/s"
        how = "、".join(_ALLOC_ZH.get(w, f"`{w}`") for w in s.tilelang.split(" / "))
        lines.append(f"| {name[s.name]} | {how} | {who[s.visible_to]} | {per} | {tot} | {rate} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ errors
_NOISE = re.compile(r"^\s*(File |Traceback|\^|~|__tb|\s*$)")


_PATH = re.compile(r"(?:/[^\s:()\"'/]+)+/([^/\s:()\"']+)")


def shorten(exc: BaseException, keep: int = 3, width: int = 240, wrap: int = 96) -> str:
    """``Type: message`` cut to the lines a reader needs: the first line of the message,
    the source location tilelang attaches (``--> file:line``) and, for a compiler error, the
    compiler's own verdict line.  Paths are cut to the file name; lines are wrapped at ``wrap``
    columns so the cell output needs no horizontal scrolling."""
    text = str(exc)
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    picked: list[str] = []
    for ln in lines:
        if ln.startswith(("#", "extern", "}", "  ")) and "-->" not in ln and "fatal" not in ln:
            continue
        if "-->" in ln or "fatal" in ln or "error" in ln.lower() or not picked or "Check failed" in ln:
            s = _PATH.sub(r"\1", ln.strip())
            if s not in picked:
                picked.append(s if len(s) <= width else s[:width - 3] + "...")
        if len(picked) >= keep:
            break
    head = f"{type(exc).__name__}: "
    lines = []
    for i, s in enumerate(picked or [text[:width]]):
        lines += textwrap.wrap(head + s if i == 0 else s, wrap, initial_indent="" if i == 0 else "    ",
                               subsequent_indent="      ", break_long_words=True, break_on_hyphens=False)
    return "\n".join(lines)


def attempt(fn, keep: int = 3) -> str:
    """Run ``fn``; the shortened message of what it raised, or ``"(no error)"``."""
    import contextlib
    import io
    import logging

    lg = logging.getLogger("tilelang")
    old = lg.level
    lg.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
        return "(no error)"
    except Exception as exc:  # the point of the cell: show what a beginner sees
        return shorten(exc, keep)
    finally:
        lg.setLevel(old)


# ------------------------------------------------------------------ measured
def _load(device: str = "nvidia-h200"):
    """The results the page reads (live where the page chose live, see :mod:`coursebook.live`)."""
    from coursebook.records import load

    return load(device)


def primer_records(results: dict | None) -> list[dict]:
    """Bench records of the primer's suite (empty when it was never run)."""
    if not results:
        return []
    return [r for r in results.get("suites", {}).get(PRIMER_SUITE, {}).get("records", []) if r.get("kind") == "bench"]


def _run_of(results: dict, suite: str) -> dict:
    from measure.results import run_of

    return run_of(results, suite)


_KIND_ZH = {"copy": "拷贝", "scale": "缩放", "row_sum": "行求和", "mirror": "镜像差", "gemm_tile": "单块矩阵乘"}
_VIA_ZH = {"shared": "经共享内存", "registers": "跳过共享内存、直接读进寄存器"}


def _setting_zh(key: str, value) -> str | None:
    """One setting of a record or check in words (``None``: not one the reader needs)."""
    if key == "npt":
        return f"每线程 {value} 个元素"
    if key == "split":
        return "不切分" if int(value) == 1 else f"列切成 {value} 段"
    if key == "via":
        return _VIA_ZH.get(str(value), str(value))
    return None


def record_label(name: str, config: dict | None = None) -> str:
    """How the page names a record or check of the primer suite: ``row_sum[split] fp16 256x262144``
    (with its ``config``) reads ``行求和（列切成 32 段），fp16，256×262144``."""
    if name.startswith("gemm_tile "):
        rest = name[len("gemm_tile "):]
        no_ws = rest.endswith(" no_ws")
        rest = rest[:-len(" no_ws")] if no_ws else rest
        return "单块矩阵乘（" + GEMM_PLACEMENTS.get(rest, rest) + ("，关闭 warp 专门化" if no_ws else "") + "）"
    m = re.match(r"(\w+)(?:\[(\w+)\])?\s*(.*)$", name)
    kind, variant, rest = m.groups() if m else (name, None, "")
    cfg = dict(config or {})
    if variant in _VIA_ZH:
        cfg["via"] = variant
    elif variant == "split" and "split" not in cfg:
        cfg["split"] = 2  # more than one: the count is in the config when the record has one
    how = [_setting_zh(k, cfg[k]) for k in ("via", "npt", "split") if k in cfg]
    if rest.startswith("(staged through shared)"):
        how, rest = ["经共享内存"], rest[len("(staged through shared)"):]
    what = []
    for tok in rest.split():
        if (n := re.fullmatch(r"n=2\^(\d+)", tok)):
            what.append(f"2<sup>{n.group(1)}</sup> 个元素")
        elif (n := re.fullmatch(r"(\d+)x(\d+)", tok)):
            what.append(f"{n.group(1)}×{n.group(2)}")
        elif (n := re.fullmatch(r"(\w+)=(\w+)", tok)):
            words = _setting_zh(n.group(1), n.group(2))
            if words and words not in how:
                how.append(words)
        else:
            what.append(tok)
    head = _KIND_ZH.get(kind, kind) + (f"（{'，'.join(h for h in how if h)}）" if any(how) else "")
    return "，".join([head] + what)


def measured_block(results: dict | None = None) -> str:
    """The primer suite's recorded numbers as a Markdown table -- or the plain statement that
    there are none yet, with the command that records them."""
    results = results if results is not None else _load()
    recs = primer_records(results)
    cmd = "python -m measure.runner --topic primer"
    if not recs:
        return (f"**{NOT_RECORDED}**：本章三个 kernel 的 H200 计时还没有记录。在 GPU 机器上运行 `{cmd}`，"
                "把结果并入课程的记录文件后重建本页，这里就会出现耗时、带宽与拷贝带宽占比。")
    head = provenance_md(PRIMER_SUITE, results)
    lines = ["| kernel | 耗时 (µs) | 有效带宽 (GB/s) | 占拷贝带宽 | 相对 PyTorch 的加速比 |", "|---|---:|---:|---:|---|"]
    for r in recs:
        sp = "，".join(f"{k} {v:.2f}×" for k, v in (r.get("speedup") or {}).items() if v)
        pct = f"{100 * r['frac_copy_bw']:.1f}%" if r.get("frac_copy_bw") else "—"
        gb = f"{r['gbps']:.0f}" if r.get("gbps") else "—"
        lines.append(f"| {record_label(r['name'], r.get('config'))} | {r['ms'] * 1e3:.1f} | {gb} | {pct} | {sp or '—'} |")
    return head + "\n\n" + "\n".join(lines) + "\n\n" + checks_line(results)


def primer_checks(results: dict | None) -> list[dict]:
    """Check records of the primer's suite (empty when it was never run)."""
    if not results:
        return []
    return [r for r in results.get("suites", {}).get(PRIMER_SUITE, {}).get("records", []) if r.get("kind") == "check"]


def checks_line(results: dict | None) -> str:
    """How many of the suite's correctness checks passed, naming every one that failed."""
    checks = primer_checks(results)
    if not checks:
        return "正确性检查：尚无记录。"
    failed = [r for r in checks if not r.get("ok")]
    head = f"正确性检查：{len(checks)} 项中 {len(checks) - len(failed)} 项通过"
    if not failed:
        return head + "。"
    return head + "；未通过：" + "；".join(
        f"{record_label(r['name'])}，形状 {'×'.join(str(d) for d in r.get('shape', []))}，最大误差 "
        f"{r.get('max_abs_err', float('nan')):.3g}，{r.get('numel', '?')} 个元素中 {r.get('mismatched', '?')} 个超出容差"
        for r in failed) + "。"


def _bench(results, name_prefix: str, suite: str | None = None) -> dict | None:
    for sname, s in (results or {}).get("suites", {}).items():
        if suite and sname != suite:
            continue
        for r in s.get("records", []):
            if r.get("kind") == "bench" and r.get("name", "").startswith(name_prefix):
                return r
    return None


#: the operand placements of the T.gemm lesson, as the suite names its checks, and how the page says them
GEMM_PLACEMENTS = {"a_in=shared b_in=shared": "两个操作数都在共享内存", "a_in=fragment b_in=shared": "A 在 fragment",
                   "a_in=shared b_in=fragment": "B 在 fragment"}
GEMM_NO_WS = "gemm_tile a_in=fragment b_in=shared no_ws"


def _check(results, name: str) -> dict | None:
    return next((r for r in primer_checks(results) if r.get("name") == name), None)


def _target(rec: dict | None, key: str = "frac_copy_bw") -> float | None:
    t = ((rec or {}).get("targets") or {}).get(key)
    return t.get("target") if isinstance(t, dict) else None


def _failure(rec: dict) -> str:
    return (f"最大误差 {rec.get('max_abs_err', float('nan')):.3g}，{rec.get('numel', '?')} 个输出元素中 "
            f"{rec.get('mismatched', '?')} 个超出容差")


def record_claims(results: dict | None = None) -> list:
    """The sentences of the chapter that conclude from the primer suite's record, each chosen by it
    (:mod:`coursebook.claims`); with no record every one reads ``UNKNOWN``."""
    from coursebook import claims as K

    results = results if results is not None else _load()
    ms = lambda r: (r or {}).get("ms")  # noqa: E731
    base = lambda r, k: ((r or {}).get("baselines") or {}).get(k)  # noqa: E731
    frac = lambda r: (r or {}).get("frac_copy_bw")  # noqa: E731
    copy, scale = _bench(results, "copy fp16", PRIMER_SUITE), _bench(results, "scale fp16", PRIMER_SUITE)
    recs = {r["name"]: r for r in primer_records(results)}
    rs = next((r for n, r in recs.items() if n.startswith("row_sum fp16") and r.get("config", {}).get("split") == 1
               and not n.endswith("x262144")), None)
    rs_reg = _bench(results, "row_sum[registers] fp16", PRIMER_SUITE)
    long1 = next((r for n, r in recs.items() if n.startswith("row_sum fp16") and n.endswith("x262144")), None)
    split = _bench(results, "row_sum[split] fp16", PRIMER_SUITE)
    out = [
        K.compare("claim.primer.copy.vs_torch", ms(copy), base(copy, "torch copy_"), tol=0.05,
                  lower="比 PyTorch 的 copy_ 还快", higher="明显慢于 PyTorch 的 copy_",
                  tie="与 PyTorch 的 copy_ 相当"),
        K.threshold("claim.primer.scale.target", frac(scale), _target(scale) or 1.0, above="达到了", below="没有达到"),
        K.compare("claim.primer.scale.vs_eager", ms(scale), base(scale, "eager"), tol=0.03,
                  lower="比 PyTorch 的逐元素乘法快", higher="比 PyTorch 的逐元素乘法慢", tie="与 PyTorch 的逐元素乘法持平"),
        K.threshold("claim.primer.rowsum.target", frac(rs), _target(rs) or 1.0, above="达到了", below="没有达到"),
        K.compare("claim.primer.rowsum.vs_eager", ms(rs), base(rs, "eager"), tol=0.03,
                  lower="比 PyTorch eager 的 sum 快", higher="比 PyTorch eager 的 sum 慢",
                  tie="与 PyTorch eager 的 sum 相当"),
        K.compare("claim.primer.rowsum.registers", ms(rs_reg), ms(rs), tol=0.02,
                  lower="比默认的、经共享内存中转的写法快", higher="比默认的、经共享内存中转的写法慢",
                  tie="与默认的、经共享内存中转的写法相当"),
        K.compare("claim.primer.long.split", ms(split), ms(long1), lower="快得多", higher="反而更慢"),
        K.compare("claim.primer.long.vs_eager", ms(split), base(split, "eager"), tol=0.03,
                  lower="比 PyTorch eager 的 sum 快", higher="比 PyTorch eager 的 sum 慢",
                  tie="与 PyTorch eager 的 sum 相当"),
    ]
    # T.gemm: which operand placements computed the right tile on the GPU
    gem = {label: _check(results, f"gemm_tile {key}") for key, label in GEMM_PLACEMENTS.items()}
    if any(r is None for r in gem.values()):
        out.append(K.choose("claim.primer.gemm.checks", None, {}))
    else:
        bad = [label for label, r in gem.items() if not r.get("ok")]
        good = [label for label, r in gem.items() if r.get("ok")]
        case = "all" if not bad else ("none" if not good else "some")
        detail = _failure(gem[bad[0]]) if len(bad) == 1 else "；".join(f"“{b}”{_failure(gem[b])}" for b in bad)
        named = lambda ls: "与".join(f"“{x}”" for x in ls) + {1: "这种放法", 2: "这两种放法"}.get(len(ls), "这几种放法")  # noqa: E731
        out.append(K.choose("claim.primer.gemm.checks", case, {
            "all": "三种放法都算对了",
            "some": "{good}算对了，{bad}没有算对（{detail}）",
            "none": "三种放法都没有算对（{detail}）"},
            good=named(good), bad=named(bad), detail=detail))
    nows, rsf = _check(results, GEMM_NO_WS), gem.get("A 在 fragment")
    verdict = None if rsf is None else ("ok" if rsf.get("ok") else
                                        {None: "wrong", True: "wrong_ws", False: "wrong_both"}[None if nows is None
                                                                                              else bool(nows.get("ok"))])
    out.append(K.choose("claim.primer.gemm.rs_verdict", verdict, {
        "ok": "在 GPU 上核对，A 放寄存器的写法也算对了，不过这一点只有核对之后才知道",
        "wrong": "在 GPU 上核对，A 放寄存器的写法算错了",
        "wrong_ws": "在 GPU 上核对，A 放寄存器的写法在 tilelang 0.1.15 默认的 warp 专门化下算错了，"
                    "关掉 warp 专门化才算对",
        "wrong_both": "在 GPU 上核对，A 放寄存器的写法算错了，关掉 warp 专门化也没有算对"}))
    case = None if rsf is None else ("missing" if nows is None else ("ok" if nows.get("ok") else "fail"))
    out.append(K.choose("claim.primer.gemm.no_ws", case, {
        "missing": "这项对照还没有在 GPU 上记录",
        "ok": "它在 GPU 上算对了，所以问题出在 warp 专门化的流水线，而不在放法本身；要把 A 放进寄存器，先关掉 warp 专门化",
        "fail": "它仍然没有算对（{detail}），所以问题不只在 warp 专门化的流水线"},
        detail=_failure(nows) if nows else ""))
    return out


def record_values(results: dict | None = None) -> dict[str, str]:
    """``calc.primer.rec.*``: numbers the record's sentences need besides the ``rec.*`` ones (the
    targets the suite set, the long rows' speed-up from splitting), ``—`` where missing."""
    results = results if results is not None else _load()
    out = {k: "—" for k in ("calc.primer.rec.scale_target_pct", "calc.primer.rec.rowsum_target_pct",
                            "calc.primer.rec.long_speedup", "calc.primer.rec.registers_ratio",
                            "calc.primer.rec.date", "calc.primer.rec.device", "calc.primer.rec.copy_gbps")}
    if results and PRIMER_SUITE in results.get("suites", {}):
        live = bool(results["suites"][PRIMER_SUITE].get("live"))
        run = (results.get("live_provenance") if live else _run_of(results, PRIMER_SUITE)) or {}
        out["calc.primer.rec.date"] = str(run.get("date") or "—")[:10]
        out["calc.primer.rec.device"] = str(run.get("device") or "—")
        # the device copy bandwidth the suite's "share of copy bandwidth" divides by
        bw = results["suites"][PRIMER_SUITE].get("copy_bandwidth_gbps") or run.get("copy_bandwidth_gbps")
        if bw:
            out["calc.primer.rec.copy_gbps"] = f"{bw:.0f}"
    scale = _bench(results, "scale fp16", PRIMER_SUITE)
    rs = next((r for r in primer_records(results) if r["name"].startswith("row_sum fp16")
               and not r["name"].endswith("x262144")), None)
    reg = _bench(results, "row_sum[registers] fp16", PRIMER_SUITE)
    if rs and reg and rs.get("ms") and reg.get("ms"):
        out["calc.primer.rec.registers_ratio"] = f"{rs['ms'] / reg['ms']:.2f}"
    if _target(scale):
        out["calc.primer.rec.scale_target_pct"] = f"{100 * _target(scale):.0f}"
    if _target(rs):
        out["calc.primer.rec.rowsum_target_pct"] = f"{100 * _target(rs):.0f}"
    long1 = next((r for r in primer_records(results) if r["name"].startswith("row_sum fp16")
                  and r["name"].endswith("x262144")), None)
    split = _bench(results, "row_sum[split] fp16", PRIMER_SUITE)
    if long1 and split and split.get("ms"):
        out["calc.primer.rec.long_speedup"] = f"{long1['ms'] / split['ms']:.1f}"
    return out


def provenance_md(suite: str, results: dict | None = None) -> str:
    """Where one suite's records come from: device, date, versions and the exact command."""
    results = results if results is not None else _load()
    if not results or suite not in results.get("suites", {}):
        return f"**{NOT_RECORDED}**"
    live = bool(results["suites"][suite].get("live"))
    run = results.get("live_provenance") if live else _run_of(results, suite)
    head = "现场实测（live，本次构建）" if live else "记录结果（recorded）"
    return (f"{head}：{run.get('device', '?')}（{run.get('sm_count', '?')} 个 SM），"
            f"{str(run.get('date', '?'))[:10]}，驱动 {run.get('driver', '?')}，CUDA {run.get('cuda', '?')}，"
            f"torch {run.get('torch', '?')}，tilelang {run.get('tilelang', '?')}；运行的命令与配置见附录“测量记录”。")


def page_values(results: dict | None = None) -> dict[str, str]:
    """Every ``calc.primer.*`` text the page glues: facts of the CPU lowerings, of the trace, of the
    Ascend lowering, and of the records (``—`` where a record is missing)."""
    from kernels import primer as P

    results = results if results is not None else _load()
    out: dict[str, str] = {}

    # the launch: the copy kernel
    c = lowered("copy_kernel", 1 << 20)
    out["calc.primer.copy.threads"] = str(c.threads[0])
    out["calc.primer.copy.grid"] = str(c.grid[0])
    # vectorised scale: 16-byte accesses per thread
    s = lowered("scale_kernel", 1 << 20)
    out["calc.primer.scale.uint4"] = str(body(s.source).count("*(uint4*)"))
    for npt in (4, 8):
        m = re.search(r"= \*\((\w+)\*\)\(X \+", body(lowered("scale_kernel", 1 << 20, "float16", 256, npt).source))
        out[f"calc.primer.scale.npt{npt}_load"] = m.group(1) if m else "—"
    # the row sum: warp specialisation and the lowering of T.copy
    ws = ws_facts()
    for k in ("threads_before", "threads_after", "producer_split", "buffers", "mbarriers", "reg_alloc",
              "reg_dealloc", "tma_bytes"):
        out[f"calc.primer.ws.{k}"] = "—" if ws[k] is None else str(ws[k])
    out["calc.primer.ws.smem"] = str(lowered("row_sum_kernel", *ROW_SUM).dyn_smem_bytes)
    pf = pipeline_facts()
    out["calc.primer.pipe.loop_before"] = str(pf["loop_before"])
    out["calc.primer.pipe.loop_after"] = str(pf["loop_after"])
    out["calc.primer.pipe.prologue"] = str(pf["prologue_copies"])
    out["calc.primer.pipe.commits"] = str(pf["commit_groups"])
    out["calc.primer.pipe.loop_wait"] = pf["loop_waits"][0] if pf["loop_waits"] else "—"
    out["calc.primer.pipe.threads"] = str(lowered("row_sum_kernel", *ROW_SUM, pass_configs=NO_WS).threads[0])
    tr = trace()
    out["calc.primer.trace.passes"] = str(len([r for r in tr.records if r.phase != "codegen"]))
    out["calc.primer.trace.changed"] = str(len([r for r in tr.records if r.changed and r.phase != "codegen"]))
    lay = P.layouts(P.row_sum_kernel, *ROW_SUM)
    xf = {r.split(":", 1)[0].strip(): r.split(":", 1)[1].strip() for r in lay.get("xf", [])}
    acc = {r.split(":", 1)[0].strip(): r.split(":", 1)[1].strip() for r in lay.get("acc", [])}
    m = re.search(r"-> \((\d+),\)", xf.get("Shape", ""))
    out["calc.primer.layout.xf_per_thread"] = m.group(1) if m else "—"
    m = re.search(r"-> \((\d+),\)", acc.get("Shape", ""))
    out["calc.primer.layout.acc_per_thread"] = m.group(1) if m else "—"
    out["calc.primer.layout.acc_replicate"] = acc.get("Replicate", "—")
    big_m, big_n, big_bytes = 128, 256, 4  # the oversized row sum: fp32 tiles of 128 x 256
    big = lowered("row_sum_kernel", 4096, 4096, "float32", big_m, big_n, 128, 3)
    out["calc.primer.big.smem"] = str(big.dyn_smem_bytes)
    out["calc.primer.big.smem_kib"] = kib(big.dyn_smem_bytes)
    out["calc.primer.big.stage_kib"] = kib(big_m * big_n * big_bytes)
    af = ascend_facts()
    out["calc.primer.asc.x_versions"] = str(af["x_versions"])
    out["calc.primer.asc.notify"] = str(af["notify"])
    out["calc.primer.asc.passes"] = str(af["passes"])
    out["calc.primer.asc.kind"] = af["kind"]

    # measured: the recorded add kernels of the elementwise family, and the primer suite
    for k in ("calc.primer.add.ratio", "calc.primer.add.copy_gbps"):
        out[k] = "—"
    a1 = _bench(results, "add[parallel]", "elementwise")
    a2 = _bench(results, "add[per_thread]", "elementwise")
    if a1 and a2:
        out["calc.primer.add.ratio"] = f"{a1['ms'] / a2['ms']:.2f}"
        run = _run_of(results, "elementwise")
        bw = results["suites"]["elementwise"].get("copy_bandwidth_gbps") or run.get("copy_bandwidth_gbps")
        if bw:
            out["calc.primer.add.copy_gbps"] = f"{bw:.0f}"
    # the primer suite's own record: the sentences it decides and the numbers they need
    from coursebook.claims import claim_values

    out.update(record_values(results))
    out.update(claim_values(record_claims(results)))
    return out


def kib(n_bytes: int) -> str:
    """``n_bytes`` in KiB as the prose writes it: whole when exact, else to one decimal (393728 -> 384.5)."""
    v = n_bytes / 1024
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def glued_keys(page: str = "ch_primer.md", prefix: str = "primer.") -> list[str]:
    """Keys glued on ``book/<page>`` that start with ``prefix``, in order of first use."""
    text = (ROOT / "book" / page).read_text(encoding="utf-8")
    keys = re.findall(r"\{glue:text\}`([^`]+)`", text)
    return [k for k in dict.fromkeys(keys) if k.startswith(prefix)]


def page_values_cached(results: dict | None = None) -> dict[str, str]:
    """:func:`page_values`, computed once for all pages of the chapter: the texts are kept under
    ``_build/cache/`` by a digest of the code they come from (the ``kernels``, ``ledger`` and
    ``coursebook`` sources, the tilelang version) and of the results, so each section page reads
    what the first one lowered instead of lowering every kernel again."""
    import hashlib
    import json

    import tilelang

    root = Path(__file__).resolve().parent.parent
    results = results if results is not None else _load()
    h = hashlib.sha256(tilelang.__version__.encode())
    for top in ("kernels", "ledger", "coursebook"):
        for p in sorted((root / top).rglob("*.py")):
            h.update(p.relative_to(root).as_posix().encode())
            h.update(p.read_bytes())
    h.update(json.dumps(results, sort_keys=True, default=str).encode())
    path = root / "_build" / "cache" / f"primer_values.{h.hexdigest()[:16]}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    values = page_values(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values, ensure_ascii=False), encoding="utf-8")
    return values
