"""The two worker processes of kernel grading (see :mod:`autograder.kernelgrade.pipeline`).

Started by :meth:`autograder.sandbox.Sandbox.run_program` as
``python -I -S -X utf8 worker.py MODE RESULT_FD CONTROL_FD`` with a JSON job on stdin,
inside the grader's isolation (bubblewrap, or the uid drop); :func:`confine.bootstrap`
finishes it, then the worker adds its own layers.  Results go back as JSON lines on
RESULT_FD (a pipe the parent owns), never through files; the parent answers on
CONTROL_FD (the GPU lock).

``elaborate``
    Imports tilelang, then confines itself (:mod:`confine`: Landlock, seccomp -- no
    processes, no exec --, the runner's audit hook, resource limits), runs the lab's
    locked kernel-setup cell and then each kernel part's answer cell in a namespace of its
    own, takes the factory from ``ANSWER[grade_id]`` and elaborates it for every shape
    (``factory.get_tir(**shape)`` for a ``@tilelang.jit`` factory).  It sends back the
    TIR as TVM's JSON and the jit options -- data, which is all that leaves this process.
``evaluate``
    Never runs the student's Python.  Reads the TIR back, refuses what it will not build
    (:mod:`tirsafe`), compiles for sm_90a, reads the structure of the generated code,
    lowers Ascend kernels on the CPU, and -- where a GPU is present -- asks the parent for
    the GPU (one submission at a time per device), checks every shape against the fp64
    reference and times the kernel and the library baseline with the course's protocol in
    this same process (:mod:`evaluate`).
"""
from __future__ import annotations

import io
import json
import math
import os
import signal
import sys
import time

_FD = -1
_CTL = -1
_SENT = [0]
_CAP = 96 << 20


def finite_json(x, depth: int = 0):
    """``x`` with every non-finite float replaced by its name (``"nan"``, ``"inf"``, ``"-inf"``).

    JSON has no NaN, and the results carry some: the max |err| of an output the kernel never
    wrote is NaN (every element is still poison).  The rubric reads such a number as a failed
    comparison (:func:`autograder.kernelgrade.rubric.number`)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else "nan" if x != x else "inf" if x > 0 else "-inf"
    if depth > 40:
        return str(x)[:200]
    if isinstance(x, dict):
        return {k: finite_json(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_json(v, depth + 1) for v in x]
    return x


def send(obj) -> None:
    try:
        text = json.dumps(obj, ensure_ascii=True, allow_nan=False, default=str)
    except ValueError:  # a non-finite number: sent by name, never refused (the result would be lost)
        text = json.dumps(finite_json(obj), ensure_ascii=True, allow_nan=False, default=str)
    data = (text + "\n").encode()
    if _SENT[0] + len(data) > _CAP:
        data = b'{"event": "overflow"}\n'
    _SENT[0] += len(data)
    try:
        os.write(_FD, data)
    except OSError:
        os._exit(3)


def wait_reply() -> str:
    """One line from the parent on the control pipe ('' when it closed it)."""
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(_CTL, 1)
        if not chunk:
            return ""
        buf += chunk
    return buf.decode().strip()


class Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise Timeout()


class _Capped(io.TextIOBase):
    def __init__(self, cap=4000):
        self.cap, self.parts, self.kept = cap, [], 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        room = self.cap - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(room, len(s))
        return len(s)

    def text(self):
        return "".join(self.parts)


def _compiled(source: str, name: str):
    """Compile a cell with its source registered in linecache (``@tilelang.jit`` reads it back,
    as it does from a Jupyter cell)."""
    import linecache

    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)  # no __future__ flags of this file


def _timed(seconds, fn, *args, **kwargs):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _jsonable(x, depth=0):
    if depth > 4:
        return str(x)
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in x][:64]
    if isinstance(x, dict):
        return {str(getattr(k, "value", k)): _jsonable(v, depth + 1) for k, v in list(x.items())[:64]}
    return str(getattr(x, "value", x))[:200]


# ----------------------------------------------------------------------------- elaborate
def _describe(obj) -> str:
    t = type(obj)
    mod = getattr(t, "__module__", "") or ""
    what = f"{mod + '.' if mod and mod != 'builtins' else ''}{t.__qualname__}"
    if mod.startswith("torch") or getattr(obj, "__module__", "") and str(getattr(obj, "__module__", "")).startswith("torch"):
        what += " (a PyTorch object)"
    return what


def _elaborate_one(f, kwargs: dict, kind: str):
    from tilelang.jit import JITImpl
    from tvm.tirx import PrimFunc

    jit = None
    if isinstance(f, JITImpl) and kind == "cuda":
        jit = {"out_idx": _jsonable(f.out_idx), "compile_flags": _jsonable(f.compile_flags),
               "pass_configs": _jsonable(f.pass_configs)}
        tir = f.get_tir(**kwargs)
    elif isinstance(f, JITImpl):
        raise TypeError("an Ascend factory returns a T.prim_func; do not decorate it with @tilelang.jit")
    elif callable(f) and type(f).__name__ == "function":
        tir = f(**kwargs)
        if type(tir).__name__ == "JITKernel":
            raise TypeError("the factory compiled the kernel itself; decorate it with @tilelang.jit and "
                            "return the T.prim_func (the grader compiles it)")
    else:
        raise TypeError(f"expected a @tilelang.jit factory, got {_describe(f)}")
    if not isinstance(tir, PrimFunc):
        raise TypeError(f"the factory must return a T.prim_func, it returned {_describe(tir)}")
    return tir, jit


class _NoShell:
    """``get_ipython()`` in a kernel answer cell: magics are not part of a kernel's definition."""

    def __getattr__(self, name):
        def refuse(*args, **kwargs):
            raise RuntimeError("IPython magics and shell commands are not run in kernel answer cells "
                               "(the factory is elaborated outside Jupyter)")
        return refuse


def elaborate(job: dict, who: str) -> None:
    from autograder.kernelgrade import confine

    box = job["sandbox"]
    scratch = box["scratch"]
    import tilelang  # noqa: F401  (before the file system closes: its native libraries load here)
    import tilelang.language  # noqa: F401
    import tvm

    try:
        import tilelang.ascend.language  # noqa: F401  (the Ascend dialect, for the Ascend parts)
    except Exception:  # pragma: no cover - a tilelang without the dialect
        pass
    lim = box.get("limits") or {}
    lines = [who, f"limits: {(lim.get('memory_bytes') or 0) >> 20} MiB address space, {lim.get('cpu_s')} s CPU, "
                  f"{lim.get('nproc')} processes"]
    lines.append(confine.landlock(box["read_paths"], [scratch], []))
    lines.append(confine.no_new_processes())
    lines.append(confine.audit_hook(box["read_paths"], scratch))
    send({"event": "hello", "confinement": lines})
    import builtins

    import autograder  # the elaboration sees a narrowed copy of the grader (worker, confine, runner)

    autograder.check = lambda *a, **k: None  # an answer cell that imports the notebook's check gets a no-op
    autograder.checker = lambda *a, **k: autograder.check
    builtins.get_ipython = lambda: _NoShell()
    builtins.display = lambda *a, **k: None
    timeout = float(job.get("call_timeout", 30))
    before = set(sys.modules)
    out, err = sys.stdout, sys.stderr
    base = {"__name__": "__kernel_lab__", "__builtins__": __builtins__, "ANSWER": {},
            "check": lambda *a, **k: None, "P": dict(job.get("preset") or {})}
    try:
        _timed(timeout, exec, _compiled(job.get("setup", ""), "kernel setup cell"), base)
    except BaseException as exc:  # the instructor's cell: a broken environment
        send({"event": "fatal", "error": f"the lab's kernel setup cell failed: {type(exc).__name__}: {exc}"})
        return
    for part in job["parts"]:
        gid = part["gid"]
        ns = dict(base)
        ns["ANSWER"] = {}
        ns["P"] = dict(base["P"])
        buf = _Capped()
        sys.stdout = sys.stderr = buf
        t0 = time.monotonic()
        try:
            _timed(timeout, exec, _compiled(part["cell"], f"answer cell of {gid}"), ns)
        except Timeout:
            sys.stdout, sys.stderr = out, err
            send({"event": "error", "gid": gid, "status": "timeout",
                  "error": f"the answer cell ran past its {timeout:g} s limit"})
            continue
        except BaseException as exc:
            sys.stdout, sys.stderr = out, err
            send({"event": "error", "gid": gid, "status": "error",
                  "error": f"the answer cell raised {type(exc).__name__}: {str(exc)[:300]}", "output": buf.text()})
            continue
        finally:
            sys.stdout, sys.stderr = out, err
        answers = ns.get("ANSWER")
        f = answers.get(gid) if isinstance(answers, dict) else None
        if f is None:
            send({"event": "error", "gid": gid, "status": "missing",
                  "error": f'ANSWER["{gid}"] is not assigned in its answer cell'})
            continue
        for call in part["calls"]:
            sys.stdout = sys.stderr = buf
            try:
                tir, jit = _timed(timeout, _elaborate_one, f, dict(call["kwargs"]), part["kind"])
                text = _timed(timeout, tvm.ir.save_json, tir)
            except Timeout:
                sys.stdout, sys.stderr = out, err
                send({"event": "error", "gid": gid, "label": call["label"], "status": "timeout",
                      "error": f"elaborating the factory for {call['label']} ran past {timeout:g} s"})
                break
            except BaseException as exc:
                sys.stdout, sys.stderr = out, err
                msg = str(exc).strip().splitlines()
                send({"event": "error", "gid": gid, "label": call["label"],
                      "status": "malformed" if isinstance(exc, TypeError) else "error",
                      "error": f"{type(exc).__name__}: {(msg[-1] if msg else '')[:300]}"})
                if isinstance(exc, TypeError):
                    break  # an interface error is the same for every shape
                continue
            finally:
                sys.stdout, sys.stderr = out, err
            send({"event": "tir", "gid": gid, "label": call["label"], "json": text, "jit": jit})
        send({"event": "part_done", "gid": gid, "seconds": round(time.monotonic() - t0, 3), "output": buf.text()})
    used = sorted(m for m in set(sys.modules) - before if m == "kernels" or m.startswith("kernels."))
    send({"event": "done", "course_modules": used})


# ----------------------------------------------------------------------------- evaluate
def eval_landlock_paths(box: dict, scratch: str, cache: str) -> tuple[list, list, list]:
    """(read-only, read-write, device) paths of the evaluate worker's Landlock layer.

    /proc and /sys read-only: the CUDA driver reads its own entries and the PCI/NUMA topology
    there (no student code runs here).  /proc/self/task writable: cuInit names the threads it
    starts (pthread_setname_np writes /proc/self/task/<tid>/comm); on the H200 (2026-12-01)
    cuInit failed with 304 under this layer without it, and with it the preflight saw the GPU."""
    return (list(box["read_paths"]) + ["/proc", "/sys"],
            [scratch, cache, "/proc/self/task"] + list(box.get("write_dirs", [])), list(box.get("devices", [])))


def evaluate_job(job: dict, who: str) -> None:
    from autograder.kernelgrade import confine

    box = job["sandbox"]
    scratch, cache = box["scratch"], job["cache_dir"]
    os.environ["TILELANG_CACHE_DIR"] = cache
    os.environ["CUDA_CACHE_PATH"] = os.path.join(scratch, ".nv")
    lines = [who]
    if job.get("landlock", True):
        lines.append(confine.landlock(*eval_landlock_paths(box, scratch, cache)))
    else:
        lines.append("landlock: switched off by the instructor (KERNELGRADE_LANDLOCK=0)")
    from autograder.kernelgrade.evaluate import run_evaluation

    run_evaluation(job, send, lines, wait_reply)


def main() -> None:
    global _FD, _CTL
    mode, _FD, _CTL = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    box = job["sandbox"]
    # started with -I -S: the course packages (read-only, /course) first, then the site directories
    sys.path[:] = [box["course_dir"]] + [p for p in sys.path if p] + list(box.get("site_dirs", []))
    signal.signal(signal.SIGALRM, _alarm)
    sys.dont_write_bytecode = True
    try:
        from autograder.kernelgrade import confine

        who = confine.bootstrap(box)
        if mode == "elaborate":
            elaborate(job, who)
        elif mode == "evaluate":
            evaluate_job(job, who)
        else:
            send({"event": "fatal", "error": f"unknown mode {mode!r}"})
    except BaseException as exc:  # the grader's own failure: report it, never hang
        import traceback

        send({"event": "fatal", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]})
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
