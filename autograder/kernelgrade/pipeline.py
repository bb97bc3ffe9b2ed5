"""Grade the kernel parts of one submission: two worker processes, a watchdog, the rubric.

Called by :func:`autograder.grade.grade_notebook` for a lab whose spec has kernel parts.
For each kernel part the source of its answer cell is taken from the submission (the cell
carrying the part's ``<grade_id>_answer`` metadata, else the cell that assigns
``ANSWER["<grade_id>"]``) and the lab's locked kernel-setup cell from the *instructor's*
notebook.  Then:

1. ``elaborate`` worker (confined, student code): the factory is elaborated for every
   shape -- the fixed ones, the student's variant, the timing shape -- and the TIR comes
   back as data;
2. ``evaluate`` worker (no student code): compile for sm_90a, structural reading, Ascend
   lowering, and on a GPU correctness and speed.  On a GPU the phase holds a lock so that
   one submission at a time is timed per device; a kernel that hangs or loses the CUDA
   context is charged to its own part and a fresh worker continues with the others;
3. :mod:`rubric` turns the findings into verdicts.

Environment knobs (instructor): ``KERNELGRADE_GPU=off`` (never use a GPU),
``KERNELGRADE_CACHE`` (root of the per-student kernel caches, default
``~/.cache/tilelang-course/kernelgrade``), ``KERNELGRADE_LANDLOCK=0`` (evaluate without
Landlock, for a GPU node whose driver needs paths the rules do not grant),
``KERNELGRADE_EVAL_TIMEOUT`` / ``KERNELGRADE_ELAB_TIMEOUT`` / ``KERNELGRADE_CALL_TIMEOUT`` (seconds),
``KERNELGRADE_SHARED_CACHE=1`` (one kernel cache for the whole lab: a kernel every student
wrote the same way compiles once; the cache is written only by the evaluate worker, from TIR
that passed :mod:`tirsafe`), ``KERNELGRADE_VARIANT_ID`` (draw every variant shape from this
id instead of the student's: benchmarks and the recorded grading run only).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..parts import Verdict
from .rubric import score
from .tasks import get_task, variant

__all__ = ["KernelRef", "kernel_refs", "has_kernel_parts", "analytic_cells", "grade_kernel_parts",
           "answer_cell", "WORKER"]

WORKER = Path(__file__).with_name("worker.py")
REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("autograder", "kernels", "ledger")
MAX_RESTARTS = 4


@dataclass(frozen=True)
class KernelRef:
    """The ``reference`` of a kernel part: which task, which aspect, which ANSWER key."""

    task: str
    aspect: str
    answer: str

    def __call__(self) -> "KernelRef":
        return self


def kernel_refs(spec) -> dict[str, KernelRef]:
    return {p.grade_id: p.reference() for p in spec.parts if p.kind == "kernel"}


def has_kernel_parts(spec) -> bool:
    return any(p.kind == "kernel" for p in spec.parts)


def _answers(spec) -> dict[str, str]:
    """ANSWER key -> task key, one per kernel answer cell."""
    return {r.answer: r.task for r in kernel_refs(spec).values()}


def _is_kernel_cell(cell: dict, answers: dict) -> bool:
    gid = cell.get("grade_id") or ""
    if gid == "kernel_setup" or gid.removesuffix("_answer") in answers:
        return True
    return bool(set(cell.get("keys", [])) & set(answers))


def analytic_cells(spec, sub) -> list[dict]:
    """The code cells the analytic sandbox runs: every cell except the kernel ones."""
    answers = _answers(spec) if has_kernel_parts(spec) else {}
    return [{"index": c["index"], "source": c["source"]} for c in sub.cells if not _is_kernel_cell(c, answers)]


def answer_cell(sub, answer: str) -> str | None:
    """Source of the cell that answers kernel part ``answer`` (metadata first, then the assignment)."""
    for c in sub.cells:
        if c.get("grade_id") == f"{answer}_answer":
            return c["source"]
    for c in sub.cells:
        if answer in c.get("keys", []):
            return c["source"]
    return None


# ----------------------------------------------------------------------------- worker plumbing
def _read_paths(extra: list[str], proc: str) -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    for p in sys.path:  # site directories (an unpacked offline bundle on PYTHONPATH too), never the repo
        rp = os.path.realpath(p or ".")
        if os.path.isdir(rp) and rp != str(REPO) and not str(REPO).startswith(rp + os.sep) and not rp.startswith(str(REPO) + os.sep):
            paths.add(rp)
    for pkg in PACKAGES:
        paths.add(str(REPO / pkg))
    for p in ("/usr", "/lib", "/lib64", "/bin", "/etc", "/dev", "/sys", "/opt"):
        paths.add(p)
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda:
        paths.add(cuda)
    if proc == "all":
        paths.add("/proc")
    else:
        paths.update(("/proc/self", "/proc/thread-self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat"))
    paths.update(extra)
    return sorted(os.path.realpath(p) for p in paths if os.path.exists(p))


def _shim(scratch: str) -> str:
    """A directory of symlinks to the course packages: importable without reading the repo root."""
    d = os.path.join(scratch, ".pkgs")
    os.makedirs(d, exist_ok=True)
    for pkg in PACKAGES:
        link = os.path.join(d, pkg)
        if not os.path.lexists(link):
            os.symlink(REPO / pkg, link)
    return d


def _sys_path(shim: str) -> list[str]:
    out = [shim]
    for p in sys.path:
        rp = os.path.realpath(p or ".")
        if p and os.path.isdir(rp) and rp != str(REPO) and not rp.startswith(str(REPO) + os.sep):
            out.append(p)
    return out


def _env(scratch: str) -> dict:
    env = {"PATH": "/usr/local/cuda/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": scratch,
           "TMPDIR": scratch, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    for k in ("CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    if os.environ.get("CUDA_HOME"):
        env["PATH"] = os.environ["CUDA_HOME"] + "/bin:" + env["PATH"]
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_worker(mode: str, job: dict, timeout: float, scratch: str) -> tuple[list[dict], str]:
    """Start a worker, feed it ``job``, collect its events until it finishes or the watchdog fires.

    Returns ``(events, state)`` with state ``done``, ``timeout``, ``died`` or ``flood``."""
    rfd, wfd = os.pipe()
    out_path = os.path.join(scratch, ".worker-output")
    with open(out_path, "wb") as out_f:
        proc = subprocess.Popen([sys.executable, "-I", "-X", "utf8", str(WORKER), mode, str(wfd)],
                                stdin=subprocess.PIPE, stdout=out_f, stderr=subprocess.STDOUT, cwd=scratch,
                                env=_env(scratch), pass_fds=(wfd,), close_fds=True, start_new_session=True)
    os.close(wfd)
    events: list[dict] = []
    buf, state, received = b"", "died", 0
    deadline = time.monotonic() + timeout
    try:
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                state = "timeout"
                break
            ready, _, _ = select.select([rfd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            received += len(chunk)
            if received > (128 << 20):
                state = "flood"
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    events.append(ev)
                    if ev.get("event") == "done":
                        state = "done"
    finally:
        os.close(rfd)
        _kill_group(proc)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
    return events, state


def _tail(scratch: str, n: int = 1500) -> str:
    try:
        with open(os.path.join(scratch, ".worker-output"), "rb") as f:
            return f.read()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


class _GpuLock:
    """One submission at a time per GPU: an exclusive lock on a file under the cache root."""

    def __init__(self, root: Path, active: bool):
        self.active = active
        dev = re.sub(r"[^\w,-]", "_", os.environ.get("CUDA_VISIBLE_DEVICES", "all"))
        self.path = root / f"gpu-{dev}.lock"
        self.f = None

    def __enter__(self):
        if self.active:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.path, "a+")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.f is not None:
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self.f.close()


def cache_root() -> Path:
    env = os.environ.get("KERNELGRADE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tilelang-course" / "kernelgrade"


def _safe_id(s: str) -> str:
    return re.sub(r"[^\w.-]", "_", s)[:80] or "_"


# ----------------------------------------------------------------------------- grading
def _jobs_for(spec, lab: str, sub, student: str) -> tuple[dict, dict]:
    """(elaboration parts, per-answer bookkeeping)."""
    parts, info = [], {}
    for answer, task_key in _answers(spec).items():
        task = get_task(task_key)
        src = answer_cell(sub, answer)
        shapes = task.shapes_for(variant(lab, student, task_key))
        calls = [{"label": lb, "kwargs": {k: s[k] for k in task.factory_args}, "shape": s, "role": "check"}
                 for lb, s in shapes]
        if task.kind == "cuda":
            calls.append({"label": "timing " + ",".join(f"{k}={v}" for k, v in task.time_shape.items()),
                          "kwargs": {k: task.time_shape[k] for k in task.factory_args}, "shape": dict(task.time_shape),
                          "role": "time"})
        else:
            calls[0]["role"] = "time"
        info[answer] = {"task": task_key, "calls": calls, "cell": src}
        if src is not None:
            parts.append({"gid": answer, "kind": task.kind, "cell": src, "calls": calls})
    return {"parts": parts}, info


def _fold_elaborate(events: list[dict], info: dict, R: dict, state: str, scratch: str) -> dict:
    tirs: dict[str, list] = {a: [] for a in info}
    meta: dict[str, Any] = {"confinement": [], "course_modules": []}
    for ev in events:
        kind = ev.get("event")
        gid = ev.get("gid")
        if kind == "hello":
            meta["confinement"] = ev.get("confinement", [])
        elif kind == "fatal":
            for a in info:
                R[a]["elaborate"]["fatal"] = ev.get("error")
        elif kind == "error" and gid in R:
            R[gid]["elaborate"]["errors"][str(ev.get("label", "*"))[:200]] = {
                "status": str(ev.get("status"))[:20], "error": str(ev.get("error"))[:600]}
        elif kind == "tir" and gid in R:
            call = next((c for c in info[gid]["calls"] if c["label"] == ev.get("label")), None)
            if call is None or call["label"] in R[gid]["elaborate"]["tirs"]:
                continue  # the elaboration process runs student code: ignore what it was not asked for
            tirs[gid].append({"label": call["label"], "shape": call["shape"], "role": call["role"],
                              "json": ev.get("json"), "jit": ev.get("jit")})
            R[gid]["elaborate"]["tirs"].append(call["label"])
        elif kind == "part_done" and gid in R:
            R[gid]["elaborate"]["seconds"] = ev.get("seconds")
            if ev.get("output"):
                R[gid]["elaborate"]["output"] = ev["output"][:1000]
        elif kind == "done":
            meta["course_modules"] = ev.get("course_modules", [])
    if state != "done":
        why = {"timeout": "the kernel elaboration ran past its time limit",
               "flood": "the kernel elaboration flooded the result channel"}.get(
            state, "the kernel elaboration process died: " + _tail(scratch, 300).strip().replace("\n", " ")[-200:])
        for a in info:
            el = R[a]["elaborate"]
            if not el["tirs"] and not el["errors"] and not el.get("missing"):
                el["fatal"] = why
    return {"tirs": tirs, **meta}


def _fold_evaluate(events: list[dict], R: dict, meta: dict) -> tuple[set, str | None]:
    """Fold events into R; return (finished answers, the answer in progress when it stopped)."""
    finished, current = set(), None
    for ev in events:
        kind, gid = ev.get("event"), ev.get("gid")
        if kind == "hello":
            meta.update(gpu=ev.get("gpu"), device=ev.get("device"), versions=ev.get("versions"),
                        evaluate_confinement=ev.get("confinement"))
            for r in R.values():
                r["gpu"] = bool(ev.get("gpu"))
        elif kind == "fatal":
            meta["evaluate_fatal"] = ev.get("error")
        elif gid not in R:
            continue
        elif kind == "start":
            current = gid
        elif kind == "interface":
            R[gid]["interface"].update(ev.get("errors") or {})
        elif kind == "build":
            R[gid]["build"].update(ev.get("errors") or {})
            R[gid]["compile_s"] = ev.get("compile_s")
        elif kind == "structure":
            R[gid]["structure"] = {k: ev.get(k) for k in ("checks", "analysis", "error", "label")}
        elif kind == "ascend":
            R[gid]["ascend"] = {k: v for k, v in ev.items() if k not in ("event", "gid")}
        elif kind == "correct":
            R[gid]["correct"] = ev.get("shapes")
        elif kind == "speed":
            R[gid]["speed"] = {k: v for k, v in ev.items() if k not in ("event", "gid")}
        elif kind == "crash":
            R[gid]["crash"] = ev.get("error")
        elif kind == "part_done":
            finished.add(gid)
            R[gid]["seconds"] = ev.get("seconds")
            current = None
    return finished, current


def _evaluate_pass(parts: list, base: dict, timeout: float, R: dict, detail: dict, scratch: str) -> bool:
    """Run the evaluate worker over ``parts``; a part that hangs or kills the worker is charged
    to itself and a fresh worker continues with the others.  Returns whether a worker said hello."""
    done: set = set()
    restarts, hello = 0, False
    t0 = time.monotonic()
    while True:
        todo = [p for p in parts if p["gid"] not in done]
        if not todo:
            break
        left = timeout - (time.monotonic() - t0)
        events, state = run_worker("evaluate", {**base, "parts": todo}, max(left, 1.0), scratch)
        hello = hello or any(e.get("event") == "hello" for e in events)
        finished, current = _fold_evaluate(events, R, detail)
        done |= finished
        if state == "done" or detail.get("evaluate_fatal"):
            break
        if current is None or restarts >= MAX_RESTARTS or left <= 1.0:
            why = "timed out" if state == "timeout" else "died: " + _tail(scratch, 300).strip()[-200:]
            for p in todo:
                if p["gid"] not in done:
                    R[p["gid"]]["timeout" if state == "timeout" else "crash"] = f"the evaluation {why}"
            break
        if state == "timeout":
            R[current]["timeout"] = "the kernel did not finish (a hang?): the evaluation was stopped"
        elif not R[current].get("crash"):
            R[current]["crash"] = "the evaluation process died while checking it: " + _tail(scratch, 300).strip()[-200:]
        done.add(current)
        restarts += 1
    detail["restarts"] = detail.get("restarts", 0) + restarts
    return hello


def grade_kernel_parts(lab: str, spec, sub, student: str, instructor_source: Path, *,
                       gpu: str | None = None, elab_timeout: float | None = None,
                       eval_timeout: float | None = None) -> tuple[dict[str, Verdict], dict]:
    """Verdicts of every kernel part of ``spec`` for submission ``sub``, and the instructor's detail."""
    from ..extract import read_submission

    gpu = gpu or os.environ.get("KERNELGRADE_GPU", "auto")
    elab_timeout = elab_timeout or float(os.environ.get("KERNELGRADE_ELAB_TIMEOUT", 300))
    eval_timeout = eval_timeout or float(os.environ.get("KERNELGRADE_EVAL_TIMEOUT", 1500))
    t0 = time.monotonic()
    try:
        setup = next((c["source"] for c in read_submission(instructor_source, "").cells
                      if c.get("grade_id") == "kernel_setup"), "")
    except Exception:
        setup = ""
    elab, info = _jobs_for(spec, lab, sub, os.environ.get("KERNELGRADE_VARIANT_ID") or student)
    R = {a: {"elaborate": {"errors": {}, "tirs": []}, "interface": {}, "build": {}, "structure": None,
             "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": False}
         for a in info}
    for a, i in info.items():
        if i["cell"] is None:
            R[a]["elaborate"]["missing"] = f'no answer cell for {a} (a cell assigning ANSWER["{a}"])'
    detail: dict[str, Any] = {"seed": None, "gpu": False}
    scratch = tempfile.mkdtemp(prefix="kg-")
    os.chmod(scratch, 0o700)
    try:
        root = cache_root()
        if elab["parts"]:
            shim = _shim(scratch)
            job = {**elab, "setup": setup, "scratch": scratch, "sys_path": _sys_path(shim),
                   "read_paths": _read_paths([scratch], "self"),
                   "call_timeout": float(os.environ.get("KERNELGRADE_CALL_TIMEOUT", 30)),
                   "memory_bytes": int(os.environ.get("KERNELGRADE_ELAB_MEMORY_MB", 16384)) << 20}
            ta = time.monotonic()
            events, state = run_worker("elaborate", job, elab_timeout, scratch)
            folded = _fold_elaborate(events, info, R, state, scratch)
            detail.update(elaborate_s=round(time.monotonic() - ta, 2), elaborate_confinement=folded["confinement"],
                          course_modules=folded["course_modules"])
            parts = [{"gid": a, "task": info[a]["task"], "tirs": folded["tirs"][a]} for a in info if folded["tirs"][a]]
            confined = any(ln.startswith("landlock ABI") for ln in folded["confinement"])
            owner = "_shared" if os.environ.get("KERNELGRADE_SHARED_CACHE") == "1" else _safe_id(student)
            cache = root / _safe_id(lab) / owner if confined else Path(scratch) / ".cache-once"
            if not confined:
                detail.setdefault("problems", []).append(
                    "kernel elaboration ran without Landlock: compiled with a throw-away kernel cache")
            cache.mkdir(parents=True, exist_ok=True)
            seed = secrets.randbits(62)
            detail["seed"] = seed
            from .confine import gpu_device_paths

            use_gpu = gpu != "off" and bool(gpu_device_paths())
            base = {"scratch": scratch, "cache_dir": str(cache), "seed": seed,
                    "sys_path": _sys_path(_shim(scratch)), "read_paths": _read_paths([scratch, str(cache)], "all"),
                    "landlock": os.environ.get("KERNELGRADE_LANDLOCK", "1") != "0"}
            te = time.monotonic()
            # pass 1 (no lock, CPU): interface, build (every shape when a GPU pass follows), structure, Ascend
            _evaluate_pass(parts, {**base, "gpu": "off", "compile_all": use_gpu, "read": True}, eval_timeout,
                           R, detail, scratch)
            detail["build_s"] = round(time.monotonic() - te, 2)
            if use_gpu and not detail.get("evaluate_fatal"):
                # pass 2 (one submission per GPU at a time): correctness and speed, kernels from the cache
                with _GpuLock(root, True):
                    tg = time.monotonic()
                    detail["lock_wait_s"] = round(tg - te - detail["build_s"], 2)
                    ok = [p for p in parts if not R[p["gid"]]["interface"] and not R[p["gid"]]["build"]
                          and get_task(p["task"]).kind == "cuda"]
                    seen = _evaluate_pass(ok, {**base, "gpu": gpu, "compile_all": True, "read": False},
                                          eval_timeout, R, detail, scratch)
                    if ok and not seen:
                        for p in ok:
                            R[p["gid"]]["crash"] = "the GPU evaluation did not start: " + _tail(scratch, 300).strip()[-200:]
                    detail["gpu_s"] = round(time.monotonic() - tg, 2)
            detail["evaluate_s"] = round(time.monotonic() - te, 2)
            if detail.get("evaluate_fatal"):
                for r in R.values():
                    r["elaborate"].setdefault("fatal", "the grader's evaluation failed: " + str(detail["evaluate_fatal"])[:300])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    verdicts: dict[str, Verdict] = {}
    for p in spec.parts:
        if p.kind != "kernel":
            continue
        ref = p.reference()
        v = score(ref.aspect, p.points, get_task(ref.task), R[ref.answer])
        verdicts[p.grade_id] = v
    detail["results"] = {a: _public(r) for a, r in R.items()}
    detail["wall_s"] = round(time.monotonic() - t0, 2)
    return verdicts, detail


def _public(r: dict) -> dict:
    """The instructor's copy of one part's findings (without the TIR)."""
    out = {k: v for k, v in r.items() if k != "elaborate"}
    el = dict(r.get("elaborate") or {})
    out["elaborate"] = el
    return out
