"""``check(ANSWER, "<kernel part>")`` in the student's own notebook.

Runs in the student's process (their own code, their own machine): elaborates the
factory for the task's fixed shapes, the student's variant shape (from the ``P`` the
notebook was released with) and the timing shape, applies the same interface and safety
checks as the grader, compiles for sm_90a and reads the structure; with a GPU it also
checks correctness and times the kernel once against the library (one round: a
self-check, not the graded measurement).  Without a GPU it says so for the parts that
need one.  The aspects of a kernel share one evaluation per factory object and variant.
Whatever tilelang or nvcc print goes to a buffer, not to the cell's stderr (nbgrader
scores a grade cell with stderr output 0).
"""
from __future__ import annotations

import contextlib
import io
import os
from typing import Any

from ..parts import Part, Verdict
from .pipeline import _fold_evaluate
from .rubric import score
from .tasks import get_task, variant_values

__all__ = ["check_kernel_part", "evaluate_factory"]

_MEMO: dict[str, tuple[Any, str, dict]] = {}


def evaluate_factory(factory: Any, task_key: str, gid: str = "self", gpu: str = "auto",
                     values: dict | None = None) -> dict:
    """The findings (the rubric's input) for one factory, computed in this process."""
    import tvm

    from .evaluate import evaluate_part
    from .worker import _elaborate_one

    task = get_task(task_key)
    R = {"elaborate": {"errors": {}, "tirs": []}, "interface": {}, "build": {}, "structure": None, "correct": None,
         "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": False}
    shapes = [(lb, s, "check") for lb, s in task.shapes_for(values)]
    if task.kind == "cuda":
        shapes.append(("timing", dict(task.time_shape), "time"))
    else:
        shapes = [(lb, s, "time") for lb, s, _ in shapes]
    tirs = []
    for lb, s, role in shapes:
        try:
            tir, jit = _elaborate_one(factory, {k: s[k] for k in task.factory_args}, task.kind)
        except Exception as exc:
            R["elaborate"]["errors"][lb] = {"status": "malformed" if isinstance(exc, TypeError) else "error",
                                            "error": f"{type(exc).__name__}: {exc}"[:400]}
            if isinstance(exc, TypeError):
                break
            continue
        tirs.append({"label": lb, "shape": s, "role": role, "json": tvm.ir.save_json(tir), "jit": jit})
        R["elaborate"]["tirs"].append(lb)
    if not tirs:
        return R
    use_gpu = False
    h = None
    if gpu != "off" and task.kind == "cuda":
        import torch

        use_gpu = torch.cuda.is_available()
        if use_gpu:
            from .measure import make_harness

            h = make_harness(int.from_bytes(os.urandom(7), "big"), "cuda")
    events: list[dict] = [{"event": "hello", "gpu": use_gpu}]
    try:
        evaluate_part({"gid": gid, "task": task_key, "tirs": tirs}, h, use_gpu, max(1, min(8, os.cpu_count() or 1)),
                      events.append, rounds=1)
    except Exception as exc:  # a lost CUDA context: restart the kernel of the notebook
        events.append({"event": "crash", "gid": gid, "error": f"{type(exc).__name__}: {exc}"[:400]})
    _fold_evaluate(events, {gid: R}, {})
    return R


def check_kernel_part(answers: dict, part: Part, variant: dict | None = None) -> Verdict:
    ref = part.reference()
    if not isinstance(answers, dict) or ref.answer not in answers:
        return Verdict("missing", f'ANSWER["{ref.answer}"] is not assigned yet')
    factory = answers[ref.answer]
    values = variant_values(ref.exercise, ref.task, variant) if ref.exercise else None
    key = repr(sorted((values or {}).items()))
    memo = _MEMO.get(ref.answer)
    if memo is None or memo[0] is not factory or memo[1] != key:
        sink = io.StringIO()
        try:
            with contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
                R = evaluate_factory(factory, ref.task, ref.answer, values=values)
        except ImportError as exc:
            return Verdict("error", f"cannot check a kernel here ({exc}); is the course environment active?")
        _MEMO[ref.answer] = (factory, key, R)
    else:
        R = memo[2]
    v = score(ref.aspect, part.points, get_task(ref.task), R)
    if v.status == "skipped":
        v.message = "需要 GPU：本机没有 GPU，这一项在评分机上评（结构与编译已在本机检查）"
    v.detail = ""
    return v
