"""Grade submissions: run each confined (:mod:`autograder.sandbox`), compare its answers
with references computed here (:mod:`autograder.parts`), and write the records.

The student's code never sees the references: they are computed in this process after
the sandbox has exited, from the lab spec (for lab 02 by calling ``ledger``).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Iterable

from .extract import NotebookError, read_submission
from .labs import load_lab, spec_digest
from .parts import LabSpec, Verdict, compare
from .sandbox import Limits, RunResult, default_read_paths, run_cells

__all__ = ["GradeError", "compute_references", "grade_notebook", "grade_batch", "parse_shard",
           "student_ids", "write_json_atomic", "limits_for"]


class GradeError(RuntimeError):
    """The grading itself cannot proceed (bad spec, reference failing, bad arguments)."""


def write_json_atomic(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def compute_references(spec: LabSpec) -> dict:
    refs = {}
    for p in spec.parts:
        if p.auto:
            try:
                refs[p.grade_id] = p.reference()
            except Exception as exc:  # the instructor's side: stop with a clear message
                raise GradeError(f"reference of part {p.grade_id} failed: {type(exc).__name__}: {exc}") from exc
    return refs


def limits_for(spec: LabSpec, **override) -> Limits:
    base = {"cell_timeout": spec.cell_timeout, "notebook_timeout": spec.notebook_timeout,
            "memory_mb": spec.memory_mb}
    base.update({k: v for k, v in override.items() if v is not None})
    return Limits(**base)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _charge(spec: LabSpec, sub, run: RunResult, gid: str) -> Verdict | None:
    """If part ``gid`` has no answer because its cell failed, say so (and which cell)."""
    for idx in sub.cells_for(gid):
        c = run.cells.get(idx)
        if c and c["status"] in ("timeout", "crashed", "error"):
            status = {"timeout": "timeout", "crashed": "error", "error": "error"}[c["status"]]
            return Verdict(status, f"the cell that answers it (cell {idx}) failed: {c['error']}",
                           f"cell {idx} output: {c.get('output', '')[:300]}")
    return None


_IDS: dict[str, set] = {}


def _instructor_ids(lab: str) -> set:
    """Every grade_id of the instructor notebook (and of the spec)."""
    if lab not in _IDS:
        spec, source = load_lab(lab)
        ids = {p.grade_id for p in spec.parts} | {f"{p.grade_id}_answer" for p in spec.parts}
        try:
            ids |= set(read_submission(source, "").meta_ids)
        except (NotebookError, OSError):
            pass
        _IDS[lab] = ids
    return _IDS[lab]


def grade_notebook(path: Path, lab: str, refs: dict, limits: Limits, read_paths: list[str],
                   student: str | None = None) -> dict:
    """Grade one notebook; returns the instructor's record (details included)."""
    spec, _ = load_lab(lab)
    path = Path(path)
    student = student or path.stem
    rec = {"student": student, "file": str(path), "lab": lab, "spec": spec_digest(lab),
           "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "parts": {}, "problems": [],
           "auto_max": spec.auto_points, "manual_max": sum(p.points for p in spec.parts if not p.auto)}
    try:
        rec["sha256"] = _sha256(path)
        sub = read_submission(path, rec["sha256"])
    except (NotebookError, OSError) as exc:
        msg = str(exc) if isinstance(exc, NotebookError) else f"cannot read the file: {exc}"
        rec.update(auto_score=0.0, status="unreadable")
        rec["problems"].append(msg)
        for p in spec.parts:
            rec["parts"][p.grade_id] = Verdict("malformed" if p.auto else "manual",
                                               f"notebook not graded: {msg}").to_json()
        return rec
    tampered = {g: v for g, v in sub.meta_points.items()
                if g in {p.grade_id for p in spec.parts} and v != spec.part(g).points}
    if tampered:
        rec["problems"].append("nbgrader metadata changed (points ignored; the grader's spec decides): "
                               + ", ".join(f"{g}={v!r}" for g, v in sorted(tampered.items())))
    strangers = sorted(set(sub.meta_ids) - _instructor_ids(lab))
    if strangers:
        rec["problems"].append("nbgrader metadata names grade_ids this lab does not have (ignored): "
                               + ", ".join(strangers[:10]))
    # --- kernel labs (autograder.kernelgrade): kernel cells are graded apart, not run here
    from .kernelgrade import analytic_cells, grade_kernel_parts, has_kernel_parts

    kernel_verdicts: dict = {}
    if has_kernel_parts(spec):
        kernel_verdicts, rec["kernels"] = grade_kernel_parts(lab, spec, sub, student, load_lab(lab)[1])
        rec["problems"] += rec["kernels"].pop("problems", [])
    cells = analytic_cells(spec, sub) if has_kernel_parts(spec) else \
        [{"index": c["index"], "source": c["source"]} for c in sub.cells]
    # --- end kernel labs
    run = run_cells(cells, spec.probes(), limits, read_paths)
    rec["sandbox"] = {"confinement": run.confinement, "network": run.network, "restarts": run.restarts,
                      "wall_s": round(run.wall_s, 3), "peak_rss_kb": run.peak_rss_kb,
                      "finished": run.finished}
    rec["problems"] += run.problems
    rec["cells"] = {str(i): {k: v for k, v in c.items() if k != "output" or c["status"] != "ok"}
                    for i, c in sorted(run.cells.items()) if c["status"] != "ok" or c.get("output_chars", 0) > limits.output_cap}
    if run.stray_output:
        rec["stray_output"] = run.stray_output[:2000]
    score = 0.0
    for p in spec.parts:
        if p.kind == "kernel":  # kernel labs: verdict from autograder.kernelgrade
            v = kernel_verdicts[p.grade_id]
            score += v.score
        elif not p.auto:
            text = sub.markdown.get(p.grade_id)
            v = Verdict("manual", "graded by hand" if text else "graded by hand (answer cell not found)",
                        (text or "")[:4000])
        else:
            if p.kind == "function":
                ans = run.probes.get(p.grade_id)
                if ans is None and run.kinds.get(p.grade_id) == "data":
                    ans = {"not_callable": True, "type": "data"}
            else:
                ans = run.answers.get(p.grade_id)
            present = p.grade_id in run.answers or p.grade_id in run.probes
            if not present:
                v = _charge(spec, sub, run, p.grade_id) or Verdict(
                    "missing", f'no answer: ANSWER["{p.grade_id}"] was never assigned')
                if run.notebook_timed_out and v.status == "missing":
                    v = Verdict("timeout", "not reached: the notebook ran out of time before this answer")
            elif isinstance(ans, dict) and set(ans) == {"__unserializable__"}:
                v = Verdict("malformed", f"the answer is not plain data ({ans['__unserializable__']})")
            else:
                v = compare(p, ans, refs[p.grade_id])
            score += v.score
        rec["parts"][p.grade_id] = v.to_json()
    rec["auto_score"] = round(score, 6)
    rec["status"] = "graded"
    return rec


# ----------------------------------------------------------------------------- batch
def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return 0, 1
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise GradeError(f"--shard {text!r}: expected I/N, e.g. 0/4 (I from 0 to N-1)") from None
    if n < 1 or not 0 <= i < n:
        raise GradeError(f"--shard {text!r}: need 0 <= I < N")
    return i, n


def student_ids(paths: list[Path]) -> dict[Path, str]:
    """File stem as the student id; stems used twice get their folder name prefixed."""
    stems: dict[str, int] = {}
    for p in paths:
        stems[p.stem] = stems.get(p.stem, 0) + 1
    out = {}
    for p in paths:
        sid = p.stem if stems[p.stem] == 1 else f"{p.parent.name}__{p.stem}"
        out[p] = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in sid)
    return out


class Progress:
    def __init__(self, total: int, stream=sys.stderr, enabled: bool = True):
        self.total, self.done, self.stream, self.enabled = total, 0, stream, enabled
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.last_pct = -1

    def step(self, label: str = "") -> None:
        with self.lock:
            self.done += 1
            if not self.enabled:
                return
            rate = self.done / max(time.monotonic() - self.t0, 1e-9)
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            line = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                    f"{rate * 60:.0f}/min {label[:30]}")
            pct = 100 * self.done // max(self.total, 1)
            if self.tty:
                self.stream.write("\r" + line.ljust(90))
                if self.done == self.total:
                    self.stream.write("\n")
            elif pct // 10 != self.last_pct // 10 or self.done == self.total:
                self.stream.write(line + "\n")
            self.last_pct = pct
            self.stream.flush()


def grade_batch(paths: Iterable[str | Path], lab: str, out: Path, *, jobs: int = 2,
                shard: str | None = None, limits: Limits | None = None, progress: bool = True,
                force: bool = False) -> dict:
    """Grade ``paths`` (this shard of them) into ``out/records``; returns a summary."""
    spec, _ = load_lab(lab)
    i, n = parse_shard(shard)
    all_paths = sorted({Path(p).resolve() for p in paths})
    missing = [str(p) for p in all_paths if not p.is_file()]
    if missing:
        raise GradeError(f"no such submission file(s): {', '.join(missing[:5])}")
    ids = student_ids(all_paths)
    mine = [p for k, p in enumerate(all_paths) if k % n == i]
    limits = limits or limits_for(spec)
    refs = compute_references(spec)
    read_paths = default_read_paths()
    digest = spec_digest(lab)
    records_dir = out / "records"
    records_dir.mkdir(parents=True, exist_ok=True)
    todo, skipped = [], []
    for p in mine:
        rec_path = records_dir / f"{ids[p]}.json"
        if not force and rec_path.exists():
            try:
                old = json.loads(rec_path.read_text(encoding="utf-8"))
                if old.get("sha256") == _sha256(p) and old.get("spec") == digest:
                    skipped.append(ids[p])
                    continue
            except (OSError, ValueError):
                pass
        todo.append(p)
    bar = Progress(len(todo), enabled=progress)
    t0 = time.monotonic()
    peak = 0
    results = []

    def work(p: Path) -> dict:
        rec = grade_notebook(p, lab, refs, limits, read_paths, ids[p])
        write_json_atomic(records_dir / f"{ids[p]}.json", rec)
        return rec

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {pool.submit(work, p): p for p in todo}
        for fut in as_completed(futs):
            try:
                rec = fut.result()
            except Exception as exc:  # never lose the batch for one submission
                p = futs[fut]
                rec = {"student": ids[p], "file": str(p), "status": "grader-error",
                       "problems": [f"{type(exc).__name__}: {exc}"], "auto_score": 0.0, "parts": {}}
                write_json_atomic(records_dir / f"{ids[p]}.json", rec)
            peak = max(peak, rec.get("sandbox", {}).get("peak_rss_kb", 0))
            results.append(rec)
            bar.step(rec["student"])
    wall = time.monotonic() - t0
    summary = {"lab": lab, "shard": f"{i}/{n}", "graded": len(todo), "skipped": sorted(skipped),
               "wall_s": round(wall, 3), "jobs": jobs,
               "per_minute": round(60 * len(todo) / wall, 1) if todo and wall > 0 else None,
               "peak_rss_kb_per_worker": peak,
               "limits": limits.__dict__}
    write_json_atomic(out / "shards" / f"shard-{i}-of-{n}.json", summary)
    return summary
