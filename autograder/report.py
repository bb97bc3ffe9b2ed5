"""Turn grading records into the outputs: grades.csv, feedback, log, plot.

``out/records/*.json``  one instructor record per student (written by :mod:`grade`)
``out/grades.csv``      a row per student: ``assignment`` (the lab), ``student``, ``status``,
                        ``auto_score``, ``auto_max`` (the points actually graded), ``graded_at``,
                        then a column per part (its points; blank when not graded: manual
                        parts, and kernel parts that need a GPU the grading machine lacks)
``out/parts.csv``       a row per part: ``assignment``, ``grade_id``, ``exercise``, ``kind``
                        (``auto``/``manual``), ``max_points`` -- the maxima of the columns above
``out/feedback/<id>.md|.html``   the student's copy: what passed, what failed and why
``out/instructor/<id>.md``       the same with expected values, raw answers, cell errors
``out/log.json``        run summary (shards, timings, peak memory) and per-student status
``out/scores_by_exercise.png``   score distribution per exercise (instructor)
"""
from __future__ import annotations

import csv
import html
import io
import json
import os
import sys
import tempfile
from pathlib import Path

from .labs import load_lab
from .messages import zh
from .parts import LabSpec

__all__ = ["merge", "student_markdown", "load_records"]

_ICON = {"right": "✅", "wrong": "❌", "malformed": "⚠️", "missing": "⬜", "timeout": "⏱️",
         "error": "💥", "manual": "📝"}
_WORD = {"right": "正确", "wrong": "错误", "malformed": "格式不对", "missing": "未作答", "timeout": "超时",
         "error": "运行出错", "manual": "待人工批改"}
# kernel labs (autograder.kernelgrade): partial speed/structure points, parts that need a GPU, impossible times
_ICON.update({"partial": "◐", "skipped": "⏭️", "flagged": "🚩"})
_WORD.update({"partial": "部分得分", "skipped": "需要 GPU，未评", "flagged": "已标记，待教师复核"})
# record statuses: graded, flagged, unreadable, pending_gpu (graded except the parts that need a GPU
# this machine lacks: they count in neither auto_score nor auto_max), grader-error
STATUSES = ("graded", "flagged", "pending_gpu", "unreadable", "grader-error")


def pending_points(rec: dict, spec: LabSpec) -> float:
    """Points of the parts not graded for lack of a GPU (status ``skipped``)."""
    return sum(p.points for p in spec.parts
               if p.auto and (rec.get("parts", {}).get(p.grade_id) or {}).get("status") == "skipped")


def auto_max(rec: dict, spec: LabSpec) -> float:
    """The auto-graded points this record was actually graded on (the lab's, less pending GPU parts)."""
    return spec.auto_points - pending_points(rec, spec)


def _umask_mode() -> int:
    """0o666 less the process umask: what a plain open() would create (mkstemp makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _atomic_write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, _umask_mode())
    with os.fdopen(fd, "wb") as f:  # never a crash on a stray surrogate: written escaped
        f.write(text.encode("utf-8", "backslashreplace") if isinstance(text, str) else text)
    os.replace(tmp, path)


def load_records(dirs: list[Path]) -> list[dict]:
    recs: dict[str, dict] = {}
    for d in dirs:
        rd = d / "records"
        if not rd.is_dir():
            raise FileNotFoundError(f"{d}: no records/ folder (was it graded with --out {d}?)")
        for f in sorted(rd.glob("*.json")):
            try:
                rec = json.loads(f.read_text(encoding="utf-8"))
            except ValueError:
                continue
            recs[rec.get("student", f.stem)] = rec
    return [recs[k] for k in sorted(recs)]


def student_markdown(rec: dict, spec: LabSpec, instructor: bool = False) -> str:
    say = (lambda t: t) if instructor else zh  # the student reads Chinese; the instructor the grader's English
    total, amax, pending = rec.get("auto_score", 0.0), auto_max(rec, spec), pending_points(rec, spec)
    variant = (rec.get("variant") or {}).get("params") or spec.default_variant()
    head = (f"自动判分：**{total:g} / {amax:g}**（另有 {sum(p.points for p in spec.parts if not p.auto):g} "
            f"分由助教人工批改")
    if pending:
        head += f"；{pending:g} 分需要 GPU，这台机器上未评，不计入上面的满分"
    lines = [f"# {spec.title} · {rec['student']}", "", head + "）", ""]
    if rec.get("status") == "flagged":
        lines += ["**这份作业已标记待教师核对**（见下面的注意事项）。", ""]
    if rec.get("problems"):
        lines += ["**注意**", ""] + [f"- {say(str(p))}" for p in rec["problems"]] + [""]
    for ex in spec.exercises:
        lines += [f"## {ex}", "", "| 小问 | 分数 | 结果 | 说明 | 容差 |", "|---|---|---|---|---|"]
        for p in (q for q in spec.parts if q.exercise == ex):
            v = rec.get("parts", {}).get(p.grade_id, {"status": "missing", "message": "not graded", "score": 0})
            st = v.get("status", "missing")
            msg = say(str(v.get("message", ""))).replace("|", "\\|").replace("\n", " ")
            if instructor and v.get("detail"):
                msg += " — *" + str(v["detail"]).replace("|", "\\|").replace("\n", " ")[:400] + "*"
            pts = "—" if st in ("manual", "skipped") else f"{v.get('score', 0):g}/{p.points:g}"
            try:
                prompt = p.prompt_for(variant)
            except Exception:  # noqa: BLE001 - a record from another version of the lab
                prompt = p.prompt
            tol = (p.tolerance or "—").replace("|", "\\|")
            lines.append(f"| `{p.grade_id}` {prompt} | {pts} | {_ICON.get(st, '')} {_WORD.get(st, st)} | {msg} "
                         f"| {tol} |")
        lines.append("")
    if instructor:
        lines += ["## 评分过程（仅教师可见）", "", "```json",
                  json.dumps({k: rec.get(k) for k in ("file", "sha256", "variant", "versions", "sandbox", "cells",
                                                      "stray_output")},
                             ensure_ascii=False, indent=1)[:20000], "```", ""]
    return "\n".join(lines)


def _markdown_table_html(md: str) -> str:
    """Minimal Markdown -> HTML for our own feedback (headings, lists, tables, code)."""
    out, in_table, in_code = [], False, False
    for ln in md.splitlines():
        if ln.startswith("```"):
            out.append("</pre>" if in_code else "<pre>")
            in_code = not in_code
            continue
        if in_code:
            out.append(html.escape(ln))
            continue
        if ln.startswith("|"):
            cells = [c.strip() for c in ln.strip("|").split(" | ")]
            if set(ln.replace("|", "").strip()) <= {"-"}:
                continue
            if not in_table:
                out.append("<table>")
                in_table = True
                out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in cells) + "</tr>")
            else:
                out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if ln.startswith("## "):
            out.append(f"<h2>{_inline(ln[3:])}</h2>")
        elif ln.startswith("# "):
            out.append(f"<h1>{_inline(ln[2:])}</h1>")
        elif ln.startswith("- "):
            out.append(f"<p>• {_inline(ln[2:])}</p>")
        elif ln.strip():
            out.append(f"<p>{_inline(ln)}</p>")
    if in_table:
        out.append("</table>")
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}code{background:#f4f4f4}")
    return ("<!DOCTYPE html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>feedback</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def _inline(s: str) -> str:
    import re

    s = html.escape(s.replace("\\|", "|"))
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    s = re.sub(r"`(.+?)`", r"<code>\1</code>", s)
    s = re.sub(r"(?<![\w*])\*(.+?)\*(?![\w*])", r"<i>\1</i>", s)
    return s


#: Why ``merge`` wrote no plot although asked to (grades, feedback and log are written either way).
PLOT_SKIPPED = ("scores_by_exercise.png not drawn: matplotlib is not installed here (the grades, feedback and log "
                "are complete; pip install matplotlib, or pass --no-plot)")


def _plot(recs: list[dict], spec: LabSpec, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exs = spec.exercises
    data = []
    for ex in exs:
        parts = [p for p in spec.parts if p.exercise == ex and p.auto]
        mx = sum(p.points for p in parts)
        vals = []
        for r in recs:
            graded = [p for p in parts if (r.get("parts") or {}).get(p.grade_id, {}).get("status") != "skipped"]
            mx_r = sum(p.points for p in graded)  # parts pending a GPU are not zeros
            if mx and mx_r and r.get("parts"):
                vals.append(100 * sum(r["parts"].get(p.grade_id, {}).get("score", 0) for p in graded) / mx_r)
        data.append(vals)
    fig, ax = plt.subplots(figsize=(10, 4), dpi=110)
    shown = [(ex, d) for ex, d in zip(exs, data) if d]
    if shown:
        ax.boxplot([d for _, d in shown], showmeans=True)
        ax.set_xticks(range(1, len(shown) + 1), [ex for ex, _ in shown])
        for k, (_, d) in enumerate(shown, start=1):
            jitter = [k + ((j * 37) % 21 - 10) / 60 for j in range(len(d))]
            ax.scatter(jitter, d, s=6, alpha=0.35)
    ax.set_ylim(-5, 105)
    ax.set_ylabel("score (% of auto-graded points)")
    ax.set_title(f"{spec.name}: score distribution per exercise ({len(recs)} submissions)")
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    _atomic_write(path, buf.getvalue())


def _kernel_times(rec: dict) -> dict | None:
    """The kernel phase's times of a record (kernel labs): elaborate, evaluate, GPU lock, total."""
    k = rec.get("kernels")
    if not isinstance(k, dict):
        return None
    return {key: k.get(key) for key in ("elaborate_s", "evaluate_s", "lock_wait_s", "gpu_s", "wall_s") if key in k}


def _wall(rec: dict) -> float | None:
    """Wall-clock seconds of the whole submission: the record's own total where it has one
    (``grade_wall_s``), else the notebook sandbox's plus the kernel phase's."""
    if isinstance(rec.get("grade_wall_s"), (int, float)):
        return rec["grade_wall_s"]
    t = (rec.get("sandbox") or {}).get("wall_s")
    kt = (rec.get("kernels") or {}).get("wall_s") if isinstance(rec.get("kernels"), dict) else None
    if t is None and kt is None:
        return None
    return round((t or 0) + (kt or 0), 3)


def merge(dirs: list[Path], out: Path, lab: str | None = None, plot: bool = True) -> dict:
    """Join records (of one or more shard folders) into the outputs under ``out``."""
    recs = load_records(dirs)
    if not recs:
        raise FileNotFoundError("no graded records found")
    lab = lab or recs[0].get("lab") or ""
    spec, _ = load_lab(lab)
    if len(dirs) > 1 or dirs[0].resolve() != out.resolve():
        for r in recs:  # gather the shards' records into out/records
            from .grade import write_json_atomic

            write_json_atomic(out / "records" / f"{r['student']}.json", r)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["assignment", "student", "status", "auto_score", "auto_max", "graded_at"]
               + [p.grade_id for p in spec.parts])
    for r in recs:
        row = [spec.name, r["student"], r.get("status", ""), f"{r.get('auto_score', 0):g}",
               f"{auto_max(r, spec):g}", r.get("graded_at", "")]
        for p in spec.parts:
            v = r.get("parts", {}).get(p.grade_id)
            blank = not p.auto or v is None or v.get("status") == "skipped"  # not graded: no number
            row.append("" if blank else f"{v.get('score', 0):g}")
        w.writerow(row)
    _atomic_write(out / "grades.csv", buf.getvalue())
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["assignment", "grade_id", "exercise", "kind", "max_points"])
    for p in spec.parts:
        w.writerow([spec.name, p.grade_id, p.exercise, "auto" if p.auto else "manual", f"{p.points:g}"])
    _atomic_write(out / "parts.csv", buf.getvalue())
    for r in recs:
        md = student_markdown(r, spec)
        _atomic_write(out / "feedback" / f"{r['student']}.md", md)
        _atomic_write(out / "feedback" / f"{r['student']}.html", _markdown_table_html(md))
        imd = student_markdown(r, spec, instructor=True)
        _atomic_write(out / "instructor" / f"{r['student']}.md", imd)
        _atomic_write(out / "instructor" / f"{r['student']}.html", _markdown_table_html(imd))
    shards = []
    for d in dirs:
        for f in sorted((d / "shards").glob("*.json")) if (d / "shards").is_dir() else []:
            try:
                shards.append(json.loads(f.read_text(encoding="utf-8")))
            except ValueError:
                pass
    log = {"lab": spec.name, "students": len(recs), "auto_max": spec.auto_points, "shards": shards,
           "submissions": [{"student": r["student"], "status": r.get("status"),
                            "auto_score": r.get("auto_score"), "problems": r.get("problems", []),
                            "auto_max": auto_max(r, spec), "wall_s": _wall(r),
                            "kernel_s": _kernel_times(r),
                            "isolation": (r.get("sandbox") or {}).get("isolation", ""),
                            "variant": {k: v for k, v in (r.get("variant") or {}).items() if k != "params"},
                            "sandbox": r.get("sandbox", {})} for r in recs]}
    _atomic_write(out / "log.json", json.dumps(log, ensure_ascii=False, indent=1))
    if plot:
        try:
            import matplotlib  # noqa: F401  (a GPU node's offline bundle may not carry it)
        except ImportError:
            log["plot"] = PLOT_SKIPPED
            _atomic_write(out / "log.json", json.dumps(log, ensure_ascii=False, indent=1))
            print(f"note: {PLOT_SKIPPED}", file=sys.stderr)
        else:
            _plot(recs, spec, out / "scores_by_exercise.png")
    return log
