"""Grade the kernel parts of one submission: two confined workers, a watchdog, the rubric.

Called by :mod:`autograder.grade` for a lab whose spec has kernel parts.  For each kernel
part the source of its answer cell is taken from the submission (the cell carrying the
part's ``<grade_id>_answer`` metadata, else the cell that assigns ``ANSWER["<grade_id>"]``)
and the lab's locked kernel-setup cell from the *instructor's* notebook.  The shapes are
the task's fixed ones plus the student's variant shape -- the lab's per-student parameters
(``K1.N`` ...), drawn and tag-checked by the grader like every variant.  Then:

1. ``elaborate`` (student code): :meth:`Sandbox.run_program` starts the worker inside the
   same isolation as the notebook's cells (bubblewrap, or the uid drop), where it adds
   Landlock, seccomp and the runner's audit hook; the factory is elaborated for every
   shape and the TIR comes back as data;
2. ``evaluate`` (no student code): a second sandbox -- the lab's GPU policy (device nodes,
   the CUDA toolkit), one unprivileged uid for the grader's trusted programs, the kernel
   cache bound writable -- compiles for sm_90a, reads the structure, lowers Ascend kernels,
   and on a GPU asks for the GPU (the parent holds a lock file: one submission on a GPU at a
   time), checks correctness and times the kernels.  A kernel that hangs or loses the CUDA
   context is charged to its own part and a fresh worker continues with the others;
3. :mod:`rubric` turns the findings into verdicts.

Environment knobs (instructor): ``KERNELGRADE_GPU=off`` (never use a GPU),
``KERNELGRADE_CACHE`` (root of the kernel caches; default ``~/.cache/tilelang-course/kernelgrade``,
``/var/tmp/tilelang-course-kernelgrade`` for a grader running as root),
``KERNELGRADE_SHARED_CACHE=1`` (one kernel cache for the whole lab: a kernel two students
wrote the same way compiles once; written only by the evaluate worker, from TIR that passed
:mod:`tirsafe`), ``KERNELGRADE_EVAL_ISOLATION`` (``auto``/``bwrap``/``uid``/``process``: the
evaluate worker's isolation, default the grade's), ``KERNELGRADE_LANDLOCK=0`` (evaluate
without its Landlock layer), ``KERNELGRADE_ELAB_TIMEOUT`` / ``KERNELGRADE_BUILD_TIMEOUT`` /
``KERNELGRADE_GPU_TIMEOUT`` / ``KERNELGRADE_CALL_TIMEOUT`` (seconds: the whole elaboration,
default 300; the build of one part, default 120 -- the reference solutions build in a few
seconds on a CPU; the GPU work of one part, default 180; one call of a factory, default 30),
``KERNELGRADE_SUBMISSION_TIMEOUT`` (seconds, default 300: one submission's whole kernel phase,
elaboration and evaluation together, not counting the wait for the GPU lock; parts not finished
by then are ``timeout``),
``KERNELGRADE_COMPILE_WORKERS`` (parallel compiles per submission), ``KERNELGRADE_COMPILE_ALL=1``
(without a GPU, compile every shape anyway: a dry run that costs what a GPU run compiles), ``KERNELGRADE_ROUNDS``
(timing rounds, kernel and library alternating; default 3).
"""
from __future__ import annotations

import fcntl
import os
import re
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..parts import Verdict
from .rubric import score
from .tasks import get_task, variant_values

__all__ = ["KernelRef", "kernel_refs", "has_kernel_parts", "analytic_cells", "grade_kernel_parts",
           "answer_cell", "WORKER", "cache_root", "eval_policy", "gpu_state", "elab_limits", "eval_limits"]

WORKER = "autograder/kernelgrade/worker.py"
ELAB_PACKAGES = ("autograder", "kernels", "ledger")
# of the grader, the elaboration (student code) sees only the worker and what it imports: not the
# grader's other sources (tasks, rubric, the lab specs stay out of reach as in the notebook sandbox)
ELAB_FILES = {"autograder": ("kernelgrade/worker.py", "kernelgrade/confine.py", "runner.py")}
EVAL_PACKAGES = ("autograder", "kernels", "measure", "ledger")
MAX_RESTARTS = 4
# default limits in seconds (environment variables of the same names override them); see the module docstring
ELAB_TIMEOUT, BUILD_TIMEOUT, GPU_TIMEOUT, CALL_TIMEOUT, SUBMISSION_TIMEOUT = 300, 120, 180, 30, 300
TOTAL_LIMIT_MSG = "the submission's kernel phase ran past its total time limit"


@dataclass(frozen=True)
class KernelRef:
    """The ``reference`` of a kernel part: which task, which aspect, which ANSWER key, and the
    exercise whose parameters (``K1.N`` ...) make the student's variant shape."""

    task: str
    aspect: str
    answer: str
    exercise: str = ""

    def __call__(self, variant: dict | None = None) -> "KernelRef":
        return self

    @property
    def tolerance_text(self) -> str:
        """The tolerance shown beside this part: the task's for correctness, none for speed,
        structure and the Ascend lowering (they are not compared with a reference)."""
        if self.aspect != "correct":
            return ""
        task = get_task(self.task)
        return getattr(task, "tolerance_words", "")


def kernel_refs(spec) -> dict[str, KernelRef]:
    return {p.grade_id: p.reference() for p in spec.parts if p.kind == "kernel"}


def has_kernel_parts(spec) -> bool:
    return any(p.kind == "kernel" for p in spec.parts)


def _answers(spec) -> dict[str, KernelRef]:
    """ANSWER key -> its reference (one per kernel answer cell)."""
    out: dict[str, KernelRef] = {}
    for r in kernel_refs(spec).values():
        out.setdefault(r.answer, r)
    return out


def _is_kernel_cell(cell: dict, answers: dict) -> bool:
    gid = cell.get("grade_id") or ""
    if gid == "kernel_setup" or gid.removesuffix("_answer") in answers:
        return True
    return bool(set(cell.get("keys", [])) & set(answers))


def analytic_cells(spec, sub) -> list[dict]:
    """The code cells the notebook sandbox runs: every cell except the kernel ones."""
    answers = _answers(spec) if has_kernel_parts(spec) else {}
    return [{"index": c["index"], "source": c["source"], "keys": c["keys"]} for c in sub.cells
            if not _is_kernel_cell(c, answers)]


def answer_cell(sub, answer: str) -> str | None:
    """Source of the cell that answers kernel part ``answer`` (metadata first, then the assignment)."""
    for c in sub.cells:
        if c.get("grade_id") == f"{answer}_answer":
            return c["source"]
    for c in sub.cells:
        if answer in c.get("keys", []):
            return c["source"]
    return None


# ----------------------------------------------------------------------------- machine facts
def cache_root() -> Path:
    env = os.environ.get("KERNELGRADE_CACHE")
    if env:
        return Path(env)
    if os.geteuid() == 0:  # reachable by the unprivileged uid the evaluate worker runs as
        return Path("/var/tmp/tilelang-course-kernelgrade")
    return Path.home() / ".cache" / "tilelang-course" / "kernelgrade"


def _safe_id(s: str) -> str:
    return re.sub(r"[^\w.-]", "_", s)[:80] or "_"


def use_gpu() -> bool:
    from .confine import gpu_device_paths

    return os.environ.get("KERNELGRADE_GPU", "auto") != "off" and bool(gpu_device_paths())


def gpu_state() -> str:
    """What the kernel parts are graded on here, for the rerun key: ``cpu`` (no GPU, or
    ``KERNELGRADE_GPU=off``) or ``gpu:<models>`` -- a record graded on the CPU is regraded
    when a GPU appears, and one graded on another GPU model too."""
    from .confine import gpu_models

    if not use_gpu():
        return "cpu"
    return "gpu:" + (",".join(sorted(set(gpu_models()))) or "nvidia")


def eval_policy():
    """The evaluate worker's extra view: the GPU's device nodes, the CUDA toolkit, /sys and
    /etc (read by the driver and the toolkit), ``CUDA_HOME``."""
    from ..sandbox import SandboxPolicy
    from .confine import GPU_DEVICE_GLOBS

    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    reads = tuple(p for p in (cuda, os.path.realpath(cuda), "/sys", "/etc", "/opt") if os.path.exists(p))
    env = (("CUDA_HOME", cuda),) if os.path.exists(cuda) else ()
    for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if os.environ.get(k):
            env += ((k, os.environ[k]),)
    return SandboxPolicy(read_paths=reads, devices=GPU_DEVICE_GLOBS if use_gpu() else (), env=env)


def _env_f(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def elab_limits():
    from ..sandbox import Limits

    t = min(_env_f("KERNELGRADE_ELAB_TIMEOUT", ELAB_TIMEOUT), _env_f("KERNELGRADE_SUBMISSION_TIMEOUT", SUBMISSION_TIMEOUT))
    return Limits(cell_timeout=t, notebook_timeout=t, cpu_s=t, memory_mb=int(_env_f("KERNELGRADE_ELAB_MEMORY_MB", 16384)),
                  scratch_mb=256, nproc=256, nofile=1024, fsize_mb=64)


def eval_limits():
    from ..sandbox import Limits

    # no address-space limit: a CUDA context reserves far more virtual memory than it uses
    return Limits(cell_timeout=600, notebook_timeout=600, cpu_s=36000, memory_mb=0, scratch_mb=4096,
                  nproc=8192, nofile=8192, fsize_mb=2048)


# ----------------------------------------------------------------------------- the GPU lock
class GpuGrant:
    """One submission on a GPU at a time: the evaluate worker asks (``gpu_wait``), the parent
    takes an exclusive lock on a file under the cache root and answers ``go``; the worker
    says ``gpu_release`` (or dies) and the lock goes.  It also sets the watchdog's deadline:
    a build phase gets ``build_s`` per part, a GPU phase ``gpu_s`` per part, and no deadline
    passes ``total_s`` from now plus the time spent waiting for the lock (the submission's whole
    evaluation, :meth:`over`)."""

    def __init__(self, root: Path, build_s: float, gpu_s: float, total_s: float = float("inf")):
        dev = re.sub(r"[^\w,-]", "_", os.environ.get("CUDA_VISIBLE_DEVICES", "all"))
        self.path = root / f"gpu-{dev}.lock"
        self.build_s, self.gpu_s = build_s, gpu_s
        self.total_s, self.t_start = total_s, time.monotonic()
        self.f = None
        self.wait_s = 0.0
        self.held_s = 0.0
        self._t = 0.0
        self.current: tuple[str, str] | None = None  # (gid, phase) in progress

    @property
    def end(self) -> float:
        """The ``time.monotonic()`` by which the submission's evaluation must be over."""
        return self.t_start + self.total_s + self.wait_s

    def over(self) -> bool:
        return time.monotonic() >= self.end

    def _cap(self, deadline: float) -> float:
        return min(deadline, self.end)

    def __call__(self, ev: dict) -> dict | None:
        kind = ev.get("event")
        now = time.monotonic()
        if kind == "start":
            self.current = (str(ev.get("gid")), str(ev.get("phase", "build")))
            return {"deadline": self._cap(now + (self.gpu_s if ev.get("phase") == "gpu" else self.build_s))}
        if kind == "gpu_wait":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.path, "a+")
            fcntl.flock(self.f, fcntl.LOCK_EX)
            self._t = time.monotonic()
            self.wait_s += self._t - now
            return {"reply": b"go\n", "deadline": self._cap(self._t + self.gpu_s)}
        if kind == "gpu_release":
            self.release()
            return {"deadline": self._cap(now + 60)}
        if kind == "part_done":
            self.current = None
        return None

    def release(self) -> None:
        if self.f is not None:
            self.held_s += time.monotonic() - self._t
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self.f.close()
            self.f = None


# ----------------------------------------------------------------------------- grading
def _jobs_for(spec, sub, variant: dict | None) -> tuple[dict, dict]:
    """(elaboration parts, per-answer bookkeeping)."""
    parts, info = [], {}
    for answer, ref in _answers(spec).items():
        task = get_task(ref.task)
        src = answer_cell(sub, answer)
        shapes = task.shapes_for(variant_values(ref.exercise, ref.task, variant) if ref.exercise else None)
        calls = [{"label": lb, "kwargs": {k: s[k] for k in task.factory_args}, "shape": s, "role": "check"}
                 for lb, s in shapes]
        if task.kind == "cuda":
            calls.append({"label": "timing " + ",".join(f"{k}={v}" for k, v in task.time_shape.items()),
                          "kwargs": {k: task.time_shape[k] for k in task.factory_args}, "shape": dict(task.time_shape),
                          "role": "time"})
        else:
            calls[0]["role"] = "time"
        info[answer] = {"task": ref.task, "calls": calls, "cell": src}
        if src is not None:
            parts.append({"gid": answer, "kind": task.kind, "cell": src, "calls": calls})
    return {"parts": parts}, info


def _fold_elaborate(events: list[dict], info: dict, R: dict, res) -> dict:
    tirs: dict[str, list] = {a: [] for a in info}
    meta: dict[str, Any] = {"confinement": [], "course_modules": []}
    for ev in events:
        kind = ev.get("event")
        gid = ev.get("gid")
        if kind == "hello":
            meta["confinement"] = [str(x)[:300] for x in ev.get("confinement", [])][:10]
        elif kind == "fatal":
            for a in info:
                R[a]["elaborate"]["fatal"] = str(ev.get("error"))[:600]
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
                R[gid]["elaborate"]["output"] = str(ev["output"])[:1000]
        elif kind == "done":
            meta["course_modules"] = [str(m)[:80] for m in ev.get("course_modules", [])][:50]
    if res.state != "done":
        why = {"timeout": "the kernel elaboration ran past its time limit",
               "flood": "the kernel elaboration flooded the result channel"}.get(
            res.state, f"the kernel elaboration process {res.exit or 'died'}: "
            + res.output_tail.strip().replace("\n", " ")[-200:])
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
            meta.update(gpu=bool(ev.get("gpu")), device=ev.get("device"), versions=ev.get("versions"),
                        evaluate_confinement=ev.get("confinement"))
            for r in R.values():
                r["gpu"] = bool(ev.get("gpu"))
        elif kind == "fatal":
            meta["evaluate_fatal"] = str(ev.get("error"))[:1000]
        elif kind == "gpu_release":
            meta["gpu_work_s"] = round(meta.get("gpu_work_s", 0) + float(ev.get("seconds") or 0), 3)
        elif gid not in R:
            continue
        elif kind == "start":
            current = gid
            R[gid]["phase"] = ev.get("phase")
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


def _evaluate(parts: list, base: dict, sandbox, R: dict, detail: dict, grant: GpuGrant, cache: Path) -> None:
    """Run the evaluate worker over ``parts``; a part that hangs or kills the worker is charged
    to itself and a fresh worker continues with the others."""
    done: set = set()
    restarts = 0
    base_lim = eval_limits()
    while True:
        todo = [p for p in parts if p["gid"] not in done]
        if not todo:
            break
        if grant.over():  # a fresh worker would start past the submission's total limit
            for p in todo:
                R[p["gid"]]["timeout"] = f"{TOTAL_LIMIT_MSG} ({grant.total_s:g} s)"
            break
        # the first deadline (before any part starts) also stays within the submission's total
        lim = replace(base_lim, notebook_timeout=max(1.0, min(base_lim.notebook_timeout, grant.end - time.monotonic())))
        try:
            res = sandbox.run_program(WORKER, ["evaluate"], {**base, "parts": todo}, lim, packages=EVAL_PACKAGES,
                                      write_dirs=(str(cache),), on_event=grant)
        finally:
            grant.release()
        detail.setdefault("evaluate_isolation", res.isolation)
        finished, current = _fold_evaluate(res.events, R, detail)
        done |= finished
        if res.state == "done" or detail.get("evaluate_fatal"):
            if detail.get("evaluate_fatal") and res.output_tail:
                detail["evaluate_output"] = res.output_tail[-1500:]
            break
        phase = R[current].get("phase") if current else None
        why = ("timed out" if res.state == "timeout" else f"{res.exit or 'died'}: "
               + res.output_tail.strip().replace("\n", " ")[-200:])
        total = res.state == "timeout" and grant.over()  # the submission's whole budget is spent
        if current is None or restarts >= MAX_RESTARTS or total:
            for p in todo:
                if p["gid"] not in done:
                    R[p["gid"]]["timeout" if res.state == "timeout" else "crash"] = (
                        f"{TOTAL_LIMIT_MSG} ({grant.total_s:g} s)" if total else f"the evaluation {why}")
            break
        if res.state == "timeout":
            R[current]["timeout"] = ("the kernel did not finish on the GPU (a hang?): the evaluation was stopped"
                                     if phase == "gpu" else f"building the kernel ran past its time limit ({grant.build_s:g} s)")
        elif not R[current].get("crash"):
            R[current]["crash"] = f"the evaluation process {why}"
        done.add(current)
        restarts += 1
    detail["restarts"] = detail.get("restarts", 0) + restarts


def grade_kernel_parts(spec, sub, variant: dict | None, instructor_source: Path, sandbox=None, eval_sandbox=None,
                       *, isolation: str = "auto") -> tuple[dict[str, Verdict], dict]:
    """Verdicts of every kernel part of ``spec`` for submission ``sub`` (the student's
    ``variant``), and the instructor's detail.  ``sandbox`` runs the elaboration (the lab's
    notebook sandbox), ``eval_sandbox`` the evaluation; missing ones are made here."""
    from ..extract import read_submission
    from ..sandbox import Sandbox, TRUSTED_UID

    own = []
    if sandbox is None:
        sandbox = Sandbox(isolation, spec.sandbox)
        own.append(sandbox)
    if eval_sandbox is None:
        eval_sandbox = Sandbox(os.environ.get("KERNELGRADE_EVAL_ISOLATION", isolation), eval_policy(),
                               uid=TRUSTED_UID, trusted=True)
        own.append(eval_sandbox)
    try:
        return _grade(spec, sub, variant, instructor_source, sandbox, eval_sandbox, read_submission)
    finally:
        for sb in own:
            sb.close()


def _grade(spec, sub, variant, instructor_source, sandbox, eval_sandbox, read_submission):
    t0 = time.monotonic()
    try:
        setup = next((c["source"] for c in read_submission(instructor_source).cells
                      if c.get("grade_id") == "kernel_setup"), "")
    except Exception:
        setup = ""
    elab, info = _jobs_for(spec, sub, variant)
    R = {a: {"elaborate": {"errors": {}, "tirs": []}, "interface": {}, "build": {}, "structure": None,
             "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": False}
         for a in info}
    for a, i in info.items():
        if i["cell"] is None:
            R[a]["elaborate"]["missing"] = f'no answer cell for {a} (a cell assigning ANSWER["{a}"])'
    detail: dict[str, Any] = {"gpu": False, "variant_shapes": {a: i["calls"][-2 if get_task(i["task"]).kind == "cuda"
                                                                             else 0]["shape"]
                                                             for a, i in info.items()}}
    if elab["parts"]:
        job = {**elab, "setup": setup, "preset": dict(variant or {}),
               "call_timeout": _env_f("KERNELGRADE_CALL_TIMEOUT", CALL_TIMEOUT)}
        ta = time.monotonic()
        res = sandbox.run_program(WORKER, ["elaborate"], job, elab_limits(), packages=ELAB_PACKAGES, files=ELAB_FILES)
        folded = _fold_elaborate(res.events, info, R, res)
        detail.update(elaborate_s=round(time.monotonic() - ta, 2), elaborate_isolation=res.isolation,
                      elaborate_confinement=folded["confinement"], course_modules=folded["course_modules"])
        parts = [{"gid": a, "task": info[a]["task"], "tirs": folded["tirs"][a]} for a in info if folded["tirs"][a]]
        root = cache_root()
        owner = "_shared" if os.environ.get("KERNELGRADE_SHARED_CACHE") == "1" else _safe_id(sub.path.stem)
        cache = root / _safe_id(spec.name) / owner
        cache.mkdir(parents=True, exist_ok=True)
        gpu = use_gpu()
        base = {"cache_dir": str(cache), "seed": secrets.randbits(62), "gpu": "auto" if gpu else "off",
                "landlock": os.environ.get("KERNELGRADE_LANDLOCK", "1") != "0",
                "compile_workers": int(_env_f("KERNELGRADE_COMPILE_WORKERS", 0)) or None,
                "compile_all": os.environ.get("KERNELGRADE_COMPILE_ALL") == "1",
                "rounds": int(_env_f("KERNELGRADE_ROUNDS", 3))}
        left = _env_f("KERNELGRADE_SUBMISSION_TIMEOUT", SUBMISSION_TIMEOUT) - (time.monotonic() - t0)
        grant = GpuGrant(root, _env_f("KERNELGRADE_BUILD_TIMEOUT", BUILD_TIMEOUT),
                         _env_f("KERNELGRADE_GPU_TIMEOUT", GPU_TIMEOUT), max(left, 1.0))
        te = time.monotonic()
        if parts:
            _evaluate(parts, base, eval_sandbox, R, detail, grant, cache)
        detail.update(evaluate_s=round(time.monotonic() - te, 2), lock_wait_s=round(grant.wait_s, 2),
                      gpu_s=round(grant.held_s, 2))
        if detail.get("evaluate_fatal"):
            for r in R.values():
                r["elaborate"].setdefault("fatal", "the grader's evaluation failed: " + str(detail["evaluate_fatal"])[:300])
    verdicts: dict[str, Verdict] = {}
    for p in spec.parts:
        if p.kind != "kernel":
            continue
        ref = p.reference()
        verdicts[p.grade_id] = score(ref.aspect, p.points, get_task(ref.task), R[ref.answer])
    detail["results"] = {a: dict(r) for a, r in R.items()}
    detail["wall_s"] = round(time.monotonic() - t0, 2)
    return verdicts, detail
