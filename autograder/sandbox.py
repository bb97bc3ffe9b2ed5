"""Run one submission's code cells in a confined child process (see :mod:`autograder.runner`).

Layers, each independent of the others:

* a fresh Python process per submission (``python -I``), its own session and process
  group, its own scratch directory (the only writable place) and a stripped environment;
* resource limits set by the runner before any student code: address space (``RLIMIT_AS``), CPU seconds,
  file size, open files, core dumps, processes (``RLIMIT_NPROC``, enforced by the
  kernel only for non-root users, so the runner also refuses process creation);
* no network: a new network namespace when the OS allows it (root, or unprivileged
  user namespaces), Landlock TCP rules (Linux >= 6.7), and an audit hook refusing sockets;
* file system: Landlock read-only rules for the interpreter, its libraries and
  ``ledger`` only (Linux >= 5.13), plus the audit hook's path check as a second fence;
* wall clock: SIGALRM per cell inside the child, and the parent's watchdog per cell and
  per notebook; a cell that ignores the alarm or kills the process is recorded, the
  process tree is killed and the notebook re-run without that cell, so the other parts
  are still graded.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "RunResult", "run_cells", "default_read_paths"]

RUNNER = Path(__file__).with_name("runner.py")


@dataclass(frozen=True)
class Limits:
    cell_timeout: float = 10.0
    notebook_timeout: float = 60.0
    memory_mb: int = 1024
    nproc: int = 32  # extra processes allowed (non-root graders)
    output_cap: int = 4000  # characters kept per cell
    fsize_mb: int = 16
    max_restarts: int = 4
    grace: float = 1.5  # parent watchdog slack after the in-process alarm


@dataclass
class RunResult:
    cells: dict[int, dict] = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)
    has_answer_dict: bool = False
    confinement: str = ""
    network: str = ""
    restarts: int = 0
    notebook_timed_out: bool = False
    finished: bool = False
    wall_s: float = 0.0
    peak_rss_kb: int = 0
    stray_output: str = ""
    problems: list[str] = field(default_factory=list)


def default_read_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    # /proc is not listed: the runner adds its own /proc/self (other processes stay hidden)
    for p in ("/usr", "/lib", "/lib64", "/bin", "/etc", "/dev", "/sys"):
        paths.add(p)
    try:  # the course's ledger package (students may import it), nothing else of the repo
        import ledger  # noqa: F401

        paths.update(ledger.__path__)
    except ImportError:  # pragma: no cover
        pass
    return sorted(os.path.realpath(p) for p in paths if os.path.exists(p))


def _user_processes() -> int:
    uid, n = os.getuid(), 0
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.stat(f"/proc/{d}").st_uid == uid:
                        n += 1
                except OSError:
                    pass
    except OSError:
        pass
    return n


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat", "rb") as f:
                        stat = f.read().rsplit(b")", 1)[1].split()
                    children.setdefault(int(stat[1]), []).append(int(d))
                except (OSError, IndexError, ValueError):
                    pass
    except OSError:
        pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(pid: int) -> None:
    victims = _descendants(pid)
    for sig_target in [pid] + victims:
        try:
            os.kill(sig_target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = {"SIGKILL": "was killed (SIGKILL: by the code itself, or for running out of memory)",
               "SIGXCPU": "was killed for using more CPU time than allowed",
               "SIGXFSZ": "was killed for writing more output than allowed",
               "SIGSEGV": "crashed (segmentation fault)"}.get(name, f"was killed by {name}")
        return why
    return f"exited with status {os.WEXITSTATUS(status)}"


def _one_run(cells, probes, limits, read_paths, skip, deadline, python, result, nproc):
    scratch = tempfile.mkdtemp(prefix="ag-scratch-")
    os.chmod(scratch, 0o700)
    out_path = os.path.join(scratch, ".stdout")
    rfd, wfd = os.pipe()
    job = {"cells": cells, "skip": sorted(skip), "probes": probes, "cell_timeout": limits.cell_timeout,
           "read_paths": read_paths, "scratch": scratch, "output_cap": limits.output_cap,
           "limits": {"memory_bytes": limits.memory_mb << 20, "cpu_s": int(limits.notebook_timeout) + 5,
                      "fsize_bytes": limits.fsize_mb << 20, "nproc": nproc}}
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": scratch,
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    import subprocess

    with open(out_path, "wb") as out_f:
        proc = subprocess.Popen([python, "-I", "-X", "utf8", str(RUNNER), str(wfd)],
                                stdin=subprocess.PIPE, stdout=out_f, stderr=subprocess.STDOUT,
                                cwd=scratch, env=env, pass_fds=(wfd,), close_fds=True,
                                start_new_session=True)
    os.close(wfd)
    current: int | None = None
    phase = "cells"
    state = "running"
    buf = b""
    try:
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        cell_deadline = None
        received = 0
        while True:
            now = time.monotonic()
            limit = deadline if cell_deadline is None else min(deadline, cell_deadline)
            if now >= limit:
                state = "notebook_timeout" if now >= deadline else "cell_hung"
                break
            ready, _, _ = select.select([rfd], [], [], min(limit - now, 1.0))
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                state = "eof"
                break
            received += len(chunk)
            if received > (16 << 20):
                state = "flood"
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if len(line) > (8 << 20):
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                kind = ev.get("event") if isinstance(ev, dict) else None
                if kind == "hello":
                    result.confinement = str(ev.get("confinement", ""))[:200]
                    result.network = str(ev.get("network", ""))[:200]
                elif kind == "start" and phase == "cells":
                    current = ev.get("cell")
                    cell_deadline = time.monotonic() + limits.cell_timeout + limits.grace
                elif kind == "end" and phase == "cells" and ev.get("cell") == current:
                    result.cells[current] = {
                        "status": ev.get("status"), "error": str(ev.get("error", ""))[:500],
                        "output": str(ev.get("output", ""))[: limits.output_cap],
                        "output_chars": ev.get("output_chars", 0)}
                    current, cell_deadline = None, None
                elif kind == "answers":
                    phase = "probes"
                    result.answers = ev.get("answers") or {}
                    result.kinds = ev.get("kinds") or {}
                    result.has_answer_dict = bool(ev.get("has_answer_dict"))
                    n_calls = sum(len(v) for v in probes.values())
                    cell_deadline = time.monotonic() + (n_calls + 1) * (limits.cell_timeout + limits.grace)
                elif kind == "probe" and phase == "probes":
                    result.probes[ev.get("grade_id")] = ev.get("outputs")
                elif kind == "done":
                    state = "done"
                    hwm = ev.get("vmhwm_kb")
                    if isinstance(hwm, int) and hwm > 0:
                        result.peak_rss_kb = max(result.peak_rss_kb, hwm)
                    break
            if state == "done":
                break
    finally:
        os.close(rfd)
        if state != "done":
            _kill_tree(proc.pid)
        else:
            _kill_tree_if_alive(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = status
        if state != "done":  # no self-report: fall back to the kernel's (includes the forked parent)
            result.peak_rss_kb = max(result.peak_rss_kb, int(usage.ru_maxrss))
        try:
            with open(out_path, "rb") as f:
                stray = f.read(limits.output_cap)
            if stray:
                result.stray_output = stray.decode("utf-8", "replace")
        except OSError:
            pass
        shutil.rmtree(scratch, ignore_errors=True)
    return state, current, phase, status


def _kill_tree_if_alive(pid: int) -> None:
    try:  # the runner has exited or is exiting; children it left (none expected) go too
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_cells(cells: list[dict], probes: dict, limits: Limits = Limits(),
              read_paths: list[str] | None = None, python: str | None = None) -> RunResult:
    """Execute ``cells`` ([{"index", "source"}]) confined; return what came back as data."""
    result = RunResult()
    python = python or sys.executable
    read_paths = default_read_paths() if read_paths is None else read_paths
    nproc = _user_processes() + limits.nproc if os.getuid() != 0 else limits.nproc
    t0 = time.monotonic()
    deadline = t0 + limits.notebook_timeout
    skip: set[int] = set()
    while True:
        state, current, phase, status = _one_run(cells, probes, limits, read_paths, skip, deadline,
                                                 python, result, nproc)
        if state == "done":
            result.finished = True
            break
        if state == "notebook_timeout":
            result.notebook_timed_out = True
            if current is not None:
                result.cells[current] = {"status": "timeout", "output": "", "output_chars": 0,
                                         "error": f"the notebook ran past its {limits.notebook_timeout:g} s limit in this cell"}
            result.problems.append(f"notebook ran past its {limits.notebook_timeout:g} s limit")
            break
        if state == "flood":
            result.problems.append("the submission flooded the result channel; stopped")
            break
        if phase == "cells" and current is not None:
            if state == "cell_hung":
                err = f"cell ran past its {limits.cell_timeout:g} s limit and ignored the alarm; it was killed"
                st = "timeout"
            else:
                err = "the process " + _describe_exit(status) + " while running this cell"
                st = "crashed"
            result.cells[current] = {"status": st, "error": err, "output": "", "output_chars": 0}
            skip.add(current)
            if result.restarts >= limits.max_restarts:
                result.problems.append("too many cells hung or crashed; stopped re-running")
                break
            result.restarts += 1
            continue
        # died or hung outside a cell (start-up, answers, function calls)
        where = "while evaluating answers" if phase == "probes" else "before running the cells"
        result.problems.append(("timed out " if state == "cell_hung" else "the process " + _describe_exit(status) + " ") + where)
        break
    result.wall_s = time.monotonic() - t0
    return result
