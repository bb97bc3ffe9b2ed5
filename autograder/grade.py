"""Grade submissions: run each confined (:mod:`autograder.sandbox`), compare its answers
with references computed here (:mod:`autograder.parts`), and write the records.

The student's code never sees the references: they are computed in this process after
the sandbox has exited, from the lab spec (for the ``pytorch`` lab by calling ``ledger``)
and the student's variant (:mod:`autograder.variants`).

Student ids come from file names (:func:`student_id`); two files that give the same id are
an error naming both.  A rerun skips a submission only when its record was made from the
same bytes by the same grader, lab spec, ``ledger``, limits and variant mode
(:func:`versions`) -- for a lab with kernel parts also the same ``kernels`` and ``measure``
and the same GPU (or none: a record graded on the CPU is regraded when a GPU is there,
:func:`autograder.kernelgrade.pipeline.gpu_state`); ``--force`` regrades everything.

Kernel parts (:mod:`autograder.kernelgrade`) are graded apart from the notebook's other
cells: their answer cells never run in the notebook sandbox; the factory is elaborated by a
worker in the same sandbox and evaluated by a second one (GPU policy, trusted uid).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .extract import NotebookError, Submission, display_path, read_regular_file, read_submission
from .labs import canonical_lab, lab_file_digest, load_lab
from .parts import LabSpec, Verdict, compare, unserializable
from .sandbox import IsolationError, Limits, RunResult, Sandbox
from .variants import course_key, variant_digest, variant_for, verify_tag

__all__ = ["GradeError", "compute_references", "grade_batch", "parse_shard", "student_id",
           "student_ids", "write_json_atomic", "limits_for", "versions", "VARIANT_MODES"]

VARIANT_MODES = ("auto", "student", "common", "tag")


class GradeError(RuntimeError):
    """The grading itself cannot proceed (bad spec, reference failing, bad arguments)."""


# ----------------------------------------------------------------------------- text safety
def clean_text(s: str) -> tuple[str, bool]:
    """``s`` writable as UTF-8: lone surrogates become ``\\udcXX`` text; ``(text, changed)``."""
    try:
        s.encode("utf-8")
        return s, False
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8"), True


def _clean(obj, hits: list):
    if isinstance(obj, str):
        text, changed = clean_text(obj)
        if changed:
            hits.append(text)
        return text
    if isinstance(obj, dict):
        return {_clean(k, hits) if isinstance(k, str) else k: _clean(v, hits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v, hits) for v in obj]
    return obj


def _umask_mode() -> int:
    """0o666 less the process umask: what a plain open() would create (mkstemp makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_json_atomic(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, _umask_mode())
    try:
        text = json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True)
        with os.fdopen(fd, "wb") as f:  # a lone surrogate left anywhere is written escaped, never a crash
            f.write(text.encode("utf-8", "backslashreplace"))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------------------- ids
def student_id(path: str | os.PathLike) -> tuple[str, str | None]:
    """``(id, note)`` from a file name: the stem, NFC-normalised, with letters and digits
    (any script), ``-``, ``_`` and ``.`` kept and every other character written as ``_``.
    Bytes that are not UTF-8 (a name from a zip made on another system) become ``%XX``;
    ``note`` then says so (and how the name reads as GB18030, the common case)."""
    raw = os.fsencode(os.path.basename(os.fspath(path)))
    if raw.endswith(b".ipynb"):
        raw = raw[: -len(b".ipynb")]
    note = None
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        name = raw.decode("utf-8", "surrogateescape")
        guess = ""
        try:
            guess = raw.decode("gb18030")
        except UnicodeDecodeError:
            pass
        note = ("the file name is not valid UTF-8; its bytes were kept as %XX in the student id"
                + (f" (read as GB18030 it is {guess!r})" if guess else ""))
    name = unicodedata.normalize("NFC", name)
    out = []
    for ch in name:
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"%{ord(ch) - 0xDC00:02X}")
        elif ch.isalnum() or ch in "-_.":
            out.append(ch)
        else:
            out.append("_")
    sid = "".join(out) or "_"
    if sid.startswith("."):
        sid = "_" + sid[1:]
    if len(sid) > 120:
        sid = sid[:100] + "~" + hashlib.sha256(raw).hexdigest()[:12]
    return sid, note


def student_ids(paths: list[Path]) -> dict[Path, str]:
    """Every file's student id; two files with the same id (ignoring case) are an error."""
    seen: dict[str, Path] = {}
    out = {}
    for p in paths:
        sid, _ = student_id(p)
        key = sid.casefold()
        if key in seen:
            raise GradeError(f"two submissions map to the same student id {sid!r}: "
                             f"{display_path(seen[key])!r} and {display_path(p)!r}. Rename one "
                             "(ids keep letters, digits, '-', '_' and '.'; any other character becomes '_', "
                             "and case is ignored when comparing)")
        seen[key] = p
        out[p] = sid
    return out


# ----------------------------------------------------------------------------- references
def compute_references(spec: LabSpec, variant: dict | None = None) -> dict:
    variant = spec.default_variant() if variant is None else variant
    refs = {}
    for p in spec.parts:
        if p.auto:
            try:
                refs[p.grade_id] = p.reference(variant)
            except Exception as exc:  # the instructor's side: stop with a clear message
                raise GradeError(f"reference of part {p.grade_id} failed: {type(exc).__name__}: {exc}") from exc
    return refs


def limits_for(spec: LabSpec, **override) -> Limits:
    base = {"cell_timeout": spec.cell_timeout, "notebook_timeout": spec.notebook_timeout,
            "memory_mb": spec.memory_mb, "scratch_mb": spec.scratch_mb}
    base.update({k: v for k, v in override.items() if v is not None})
    return Limits(**base)


def _tree_digest(root: Path, patterns=("*.py", "*.json")) -> str:
    h = hashlib.sha256()
    for pat in patterns:
        for f in sorted(root.rglob(pat)):
            if "__pycache__" in f.parts:
                continue
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def versions(lab: str, ledger_dir: str | None = None) -> dict:
    """Content hashes of what decides a grade besides the submission (for a kernel lab also
    the course's kernels and measurement code: references and the harness)."""
    if ledger_dir is None:
        import ledger

        ledger_dir = list(ledger.__path__)[0]
    out = {"grader": _tree_digest(Path(__file__).resolve().parent, ("*.py",)),
           "lab": lab_file_digest(lab), "ledger": _tree_digest(Path(ledger_dir))}
    spec, _ = load_lab(lab)
    if _has_kernels(spec):
        root = Path(__file__).resolve().parents[1]
        for pkg in ("kernels", "measure"):
            out[pkg] = _tree_digest(root / pkg, ("*.py",))
    return out


def _has_kernels(spec: LabSpec) -> bool:
    return any(p.kind == "kernel" for p in spec.parts)


# ----------------------------------------------------------------------------- one notebook
_IDS: dict[str, set] = {}


def _instructor_ids(spec: LabSpec, source: Path) -> set:
    """Every grade_id of the instructor notebook (and of the spec)."""
    if spec.name not in _IDS:
        ids = {p.grade_id for p in spec.parts} | {f"{p.grade_id}_answer" for p in spec.parts}
        try:
            ids |= set(read_submission(source).meta_ids)
        except (NotebookError, OSError):
            pass
        _IDS[spec.name] = ids
    return _IDS[spec.name]


def _charge(sub: Submission, run: RunResult, gid: str) -> Verdict | None:
    """If part ``gid`` has no answer because its cell failed, say so (and which cell)."""
    for idx in sub.cells_for(gid):
        c = run.cells.get(idx)
        if c and c["status"] in ("timeout", "crashed", "error"):
            status = {"timeout": "timeout", "crashed": "error", "error": "error"}[c["status"]]
            return Verdict(status, f"the cell that answers it (cell {idx}) failed: {c['error']}",
                           f"cell {idx} output: {c.get('output', '')[:300]}")
    return None


@dataclass
class _Item:
    path: Path
    student: str
    name_note: str | None
    raw: bytes | None
    error: str | None
    sha256: str


class _Batch:
    def __init__(self, spec: LabSpec, source: Path, limits: Limits, sandbox: Sandbox, mode: str,
                 key: bytes | None, vers: dict, eval_sandbox: Sandbox | None = None):
        self.spec, self.source, self.limits, self.sandbox = spec, source, limits, sandbox
        self.mode, self.key, self.versions = mode, key, vers
        self.eval_sandbox = eval_sandbox  # kernel labs: compiles and times (GPU policy, trusted uid)
        self._refs: dict[str, dict] = {}
        self._lock = threading.Lock()

    def refs(self, variant: dict) -> dict:
        d = variant_digest(variant)
        with self._lock:
            if d not in self._refs:
                self._refs[d] = compute_references(self.spec, variant)
            return self._refs[d]

    def grade(self, item: _Item) -> dict:
        t0 = time.monotonic()
        rec = self._grade(item)
        rec["grade_wall_s"] = round(time.monotonic() - t0, 3)  # the whole submission: notebook and kernels
        return rec

    def _grade(self, item: _Item) -> dict:
        spec = self.spec
        rec = {"student": item.student, "file": display_path(item.path), "lab": spec.name,
               "versions": self.versions, "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "parts": {}, "problems": [], "sha256": item.sha256,
               "auto_max": spec.auto_points, "manual_max": sum(p.points for p in spec.parts if not p.auto)}
        if item.name_note:
            rec["problems"].append(item.name_note)
        try:
            if item.error:
                raise NotebookError(item.error)
            raw = item.raw if item.raw is not None else read_regular_file(item.path)
            rec["sha256"] = item.sha256 = hashlib.sha256(raw).hexdigest()
            sub = read_submission(item.path, item.sha256, raw)
        except NotebookError as exc:
            rec.update(auto_score=0.0, status="unreadable")
            rec["problems"].append(str(exc))
            for p in spec.parts:
                rec["parts"][p.grade_id] = Verdict("malformed" if p.auto else "manual",
                                                   f"notebook not graded: {exc}").to_json()
            return rec
        rec["problems"] += sub.notes
        # the variant: whose numbers the answers are compared with
        flagged = False
        if self.mode == "common":
            variant, tag_state = spec.default_variant(), "common"
        elif self.mode == "tag":  # a student's self-check: the tag's own student, unverified
            who = sub.tag.get("student") if isinstance(sub.tag, dict) else None
            variant = variant_for(spec, who if isinstance(who, str) else None)
            tag_state = "self-check" if isinstance(who, str) else "common"
        else:
            variant = variant_for(spec, item.student)
            tag_state, msg = verify_tag(spec, sub.tag, item.student, self.key)
            if tag_state not in ("ok", "unverified"):
                flagged = True
                rec["problems"].append("flagged: " + msg)
            elif msg:
                rec["problems"].append(msg)
        rec["variant"] = {"mode": self.mode, "params": variant, "tag": tag_state}
        tampered = {g: v for g, v in sub.meta_points.items()
                    if g in {p.grade_id for p in spec.parts} and v != spec.part(g).points}
        if tampered:
            rec["problems"].append("nbgrader metadata changed (points ignored; the grader's spec decides): "
                                   + ", ".join(f"{g}={v!r}" for g, v in sorted(tampered.items())))
        strangers = sorted(set(sub.meta_ids) - _instructor_ids(spec, self.source))
        if strangers:
            rec["problems"].append("nbgrader metadata names grade_ids this lab does not have (ignored): "
                                   + ", ".join(strangers[:10]))
        refs = self.refs(variant)
        cells = [{"index": c["index"], "source": c["source"], "keys": c["keys"]} for c in sub.cells]
        kernel_verdicts: dict = {}
        if _has_kernels(spec):  # kernel answer cells are elaborated apart, never run in the notebook sandbox
            from .kernelgrade import analytic_cells, grade_kernel_parts

            kernel_verdicts, rec["kernels"] = grade_kernel_parts(spec, sub, variant, self.source, self.sandbox,
                                                                 self.eval_sandbox)
            rec["problems"] += rec["kernels"].pop("problems", [])
            cells = analytic_cells(spec, sub)
        run = self.sandbox.run(cells, spec.probes(), self.limits, preset={"P": variant} if spec.params else None)
        rec["sandbox"] = {"isolation": run.isolation, "who": run.who, "confinement": run.confinement,
                          "network": run.network, "ledger": run.ledger, "restarts": run.restarts,
                          "wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3),
                          "peak_rss_kb": run.peak_rss_kb, "finished": run.finished}
        rec["problems"] += run.problems
        for i, c in sorted(run.cells.items()):
            for note in c.get("notes") or []:
                rec["problems"].append(f"cell {i}: {note}")
            if clean_text(c.get("output", ""))[1] or clean_text(c.get("error", ""))[1]:
                rec["problems"].append(f"cell {i} printed text that is not valid Unicode (lone surrogates); "
                                       "it is kept escaped as \\udcXX")
        if run.stray_output and "\ufffd" in run.stray_output:
            rec["problems"].append("output written straight to the file descriptors was not UTF-8; the bad "
                                   "bytes are shown as U+FFFD")
        rec["cells"] = {str(i): {k: v for k, v in c.items() if k != "output" or c["status"] != "ok"}
                        for i, c in sorted(run.cells.items())
                        if c["status"] != "ok" or c.get("output_chars", 0) > self.limits.output_cap}
        if run.stray_output:
            rec["stray_output"] = run.stray_output[:2000]
        score = 0.0
        for p in spec.parts:
            if p.kind == "kernel":  # graded by autograder.kernelgrade above
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
                if (p.kind == "function" and not run.finished and p.grade_id not in run.probes
                        and run.kinds.get(p.grade_id) == "function"):
                    v = Verdict("timeout" if run.notebook_timed_out else "error",
                                "the function was assigned, but the notebook was stopped before the grader "
                                "could call it: " + "; ".join(run.problems)[:300])
                elif not present:
                    v = _charge(sub, run, p.grade_id) or Verdict(
                        "missing", f'no answer: ANSWER["{p.grade_id}"] was never assigned')
                    if run.notebook_timed_out and v.status == "missing":
                        v = Verdict("timeout", "not reached: the notebook ran out of time before this answer")
                    elif run.gave_up and v.status == "missing":
                        v = Verdict("timeout", "not reached: too many cells hung or crashed, so the notebook was "
                                               "not run to this answer")
                elif (unserializable(ans) is not None
                      and not unserializable(ans).startswith("non-finite float")):  # NaN/inf: compare names it
                    v = Verdict("malformed", f"the answer is not plain data ({ans['__unserializable__']})")
                else:
                    v = compare(p, ans, refs[p.grade_id])
                score += v.score
            rec["parts"][p.grade_id] = v.to_json()
        rec["auto_score"] = round(score, 6)
        pending = sum(p.points for p in spec.parts if p.auto and rec["parts"][p.grade_id]["status"] == "skipped")
        rec["auto_max"] = round(spec.auto_points - pending, 6)  # what was graded: parts pending a GPU are not zeros
        if pending:
            rec["pending_gpu_points"] = pending
        rec["status"] = "flagged" if flagged else "pending_gpu" if pending else "graded"
        hits: list = []
        rec = _clean(rec, hits)
        if hits:
            rec["problems"].append("some output or answer text was not valid Unicode; it is shown with "
                                   "\\udcXX escapes (e.g. " + hits[0][:60] + ")")
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


def _check_kernel_cache(eval_sandbox: Sandbox) -> None:
    """A grader running as root hands the kernel cache to the evaluate worker's unprivileged uid,
    which must be able to reach it."""
    from .kernelgrade.pipeline import cache_root
    from .sandbox import blocked_for

    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    if eval_sandbox.root and eval_sandbox.mode != "process" and blocked_for(str(root / "x"), eval_sandbox.fixed_uid):
        eval_sandbox.close()
        raise IsolationError(f"the kernel cache {root} lies below a directory the grader's unprivileged uid cannot "
                             "enter; set KERNELGRADE_CACHE to a directory it can reach (e.g. under /var/tmp)")


def _resolve_mode(spec: LabSpec, variants: str) -> str:
    if variants not in VARIANT_MODES:
        raise GradeError(f"variants {variants!r}: choose from {', '.join(VARIANT_MODES)}")
    if variants == "auto":
        return "student" if spec.params else "common"
    return variants


def grade_batch(paths: Iterable[str | Path], lab: str, out: Path, *, jobs: int = 2,
                shard: str | None = None, limits: Limits | None = None, progress: bool = True,
                force: bool = False, isolation: str = "auto", variants: str = "auto",
                sandbox: Sandbox | None = None) -> dict:
    """Grade ``paths`` (this shard of them) into ``out/records``; returns a summary."""
    spec, source = load_lab(lab)
    lab = canonical_lab(lab)
    mode = _resolve_mode(spec, variants)
    i, n = parse_shard(shard)
    all_paths = sorted({Path(os.path.abspath(p)) for p in paths})
    missing = [display_path(p) for p in all_paths if not os.path.lexists(p)]
    if missing:
        raise GradeError(f"no such submission file(s): {', '.join(missing[:5])}")
    ids = student_ids(all_paths)
    key = None
    if mode == "student":
        key = course_key()
        if key is None:
            raise GradeError("this lab gives every student their own numbers, and the notebooks' variant "
                             "tags are checked with the course key, which is not on this machine (set "
                             "AUTOGRADER_KEY_FILE to the key `release --student` used), or grade with "
                             "--common to compare every submission with the book's numbers")
    mine = [p for k, p in enumerate(all_paths) if k % n == i]
    limits = limits or limits_for(spec)
    compute_references(spec)  # the instructor's side fails here, before any sandbox starts
    vers = versions(lab)
    key_of = {"versions": vers, "limits": limits.__dict__, "variants": mode}
    if _has_kernels(spec):  # graded on the CPU or on which GPU: a CPU-graded record is redone on a GPU
        from .kernelgrade.pipeline import gpu_state

        key_of["kernels_on"] = gpu_state()
    run_key = hashlib.sha256(json.dumps(key_of, sort_keys=True).encode()).hexdigest()[:16]
    records_dir = out / "records"
    records_dir.mkdir(parents=True, exist_ok=True)
    todo: list[_Item] = []
    skipped = []
    for p in mine:
        sid, note = student_id(p)
        try:
            raw, err = read_regular_file(p), None
            sha = hashlib.sha256(raw).hexdigest()
        except NotebookError as exc:
            raw, err, sha = None, str(exc), ""
        if raw is not None and len(raw) > (1 << 20):
            raw = None  # a big file is read again when its turn comes (and hashed again)
        rec_path = records_dir / f"{ids[p]}.json"
        if not force and raw is not None and rec_path.exists():
            try:
                old = json.loads(rec_path.read_text(encoding="utf-8"))
                if old.get("sha256") == sha and old.get("key") == run_key:
                    skipped.append(ids[p])
                    continue
            except (OSError, ValueError):
                pass
        todo.append(_Item(p, ids[p], note, raw, err, sha))
    own_sandbox = sandbox is None
    eval_sandbox = None
    try:
        if own_sandbox:
            sandbox = Sandbox(isolation, spec.sandbox, jobs=max(1, jobs))
        if _has_kernels(spec) and todo:
            from .kernelgrade.pipeline import eval_policy
            from .sandbox import TRUSTED_UID

            eval_sandbox = Sandbox(os.environ.get("KERNELGRADE_EVAL_ISOLATION", isolation), eval_policy(),
                                   jobs=max(1, jobs), uid=TRUSTED_UID, trusted=True)
            _check_kernel_cache(eval_sandbox)
    except IsolationError as exc:
        if own_sandbox and sandbox is not None:
            sandbox.close()
        raise GradeError(str(exc)) from None
    batch = _Batch(spec, source, limits, sandbox, mode, key, vers, eval_sandbox)
    bar = Progress(len(todo), enabled=progress)
    t0 = time.monotonic()
    peak = 0
    cpu_runs = 0.0

    def work(item: _Item) -> dict:
        rec = batch.grade(item)
        rec["key"] = run_key
        write_json_atomic(records_dir / f"{item.student}.json", rec)
        return rec

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futs = {pool.submit(work, it): it for it in todo}
            for fut in as_completed(futs):
                try:
                    rec = fut.result()
                except Exception as exc:  # never lose the batch for one submission
                    it = futs[fut]
                    rec = {"student": it.student, "file": display_path(it.path), "status": "grader-error",
                           "problems": [f"{type(exc).__name__}: {exc}"], "auto_score": 0.0, "parts": {},
                           "lab": spec.name, "key": run_key, "sha256": it.sha256}
                    write_json_atomic(records_dir / f"{it.student}.json", rec)
                peak = max(peak, rec.get("sandbox", {}).get("peak_rss_kb", 0))
                cpu_runs += rec.get("sandbox", {}).get("cpu_s", 0.0)
                bar.step(rec["student"])
        isolation_used = sandbox.describe()
        if eval_sandbox is not None:
            isolation_used += f"; kernel evaluation: {eval_sandbox.describe()}"
        runner_cpu = sandbox.runner_cpu
    finally:
        if own_sandbox:
            sandbox.close()
        if eval_sandbox is not None:
            eval_sandbox.close()
    wall = time.monotonic() - t0
    summary = {"lab": spec.name, "shard": f"{i}/{n}", "graded": len(todo), "skipped": sorted(skipped),
               "wall_s": round(wall, 3), "jobs": jobs, "isolation": isolation_used, "variants": mode,
               "versions": vers, "per_minute": round(60 * len(todo) / wall, 1) if todo and wall > 0 else None,
               "peak_rss_kb_per_worker": peak, "sandbox_cpu_s": round(cpu_runs, 3),
               "runner_cpu_s_outside_rusage": round(runner_cpu, 3), "limits": limits.__dict__}
    write_json_atomic(out / "shards" / f"shard-{i}-of-{n}.json", summary)
    return summary
