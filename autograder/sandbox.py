"""Run one submission's code cells confined (the child side is :mod:`autograder.runner`).

Isolation modes (``grade --isolation``; ``auto`` takes the first that works here):

``bwrap``    bubblewrap (Debian package ``bubblewrap``): new user, mount, PID, network,
             IPC and UTS namespaces; the file system is an empty root with read-only
             binds of ``/usr``, the Python installation and its virtual environment, the
             grader's own ``ledger`` (at ``/course/ledger``) and the runner; ``/proc`` of
             the sandbox's own PID namespace; a minimal ``/dev`` (null, zero, full,
             random, urandom, tty), read-only; ``/tmp`` is the scratch directory, a tmpfs
             of ``Limits.scratch_mb``.  Nothing else of the host exists inside: not
             ``/etc`` (so no ``/etc/shadow``), not the grader's files, the labs, the
             references or the other submissions.  When the grader runs as root, each
             worker slot first drops to its own unprivileged uid (``AUTOGRADER_SANDBOX_UID``
             + slot, default 1700000000 + slot) with no capabilities (``setpriv``), and only
             then starts bubblewrap; paths the sandbox needs that lie below a directory that
             uid may not search (a pyenv Python under ``/root``) are made reachable in a
             private mount namespace held by a helper (``runner.py --stage``), entered with
             ``nsenter``, never on the host.
``uid``      fallback without bubblewrap, root only: the runner starts as root, makes a
             private mount, network, IPC and UTS namespace, mounts the size-limited tmpfs
             scratch, then drops for good to the slot's unprivileged uid (no groups, no
             capabilities) before any student code.
``process``  no privilege to drop (a non-root grader without bubblewrap): the runner keeps
             the grader's uid; a user namespace gives the tmpfs scratch and the private
             network where the kernel allows it.  Refused when the grader runs as root.

The sandbox's Python starts without ``site`` (``-I -S``): the runner puts the grader's
``ledger`` first on ``sys.path``, then the standard library and the environment's
site-packages; no ``.pth`` file runs, so an editable install pointing at another checkout
cannot change what the sandbox imports.

Inside every mode the runner adds its own fences before the first cell: resource limits
(address space, CPU seconds, file size, open files, processes, no core dumps), Landlock
(read-only paths, the scratch directory, no TCP, no signals outside), a seccomp filter
(no fork, no exec) and a Python audit hook that refuses the same with readable messages.

The parent's watchdog never trusts the child: results come back as JSON lines over a pipe
the grader created, the child's stdout/stderr over another (drained, capped), and the job
goes in as an anonymous file; the grader never opens a path inside the scratch directory.
Every run has a wall-clock deadline per cell and per notebook; at either the parent kills
the whole process group (and, in bubblewrap, the PID namespace with it).  A kill is
reported as what it was: the cell's time limit, the notebook's time limit, the CPU-time
limit (SIGXCPU), memory (``MemoryError`` under the address-space limit, or a crash near it).

For labs that need more (the future GPU labs): :class:`SandboxPolicy` in a lab's spec
(``LabSpec.sandbox``) lists extra read-only paths and device nodes, by glob::

    SandboxPolicy(read_paths=("/usr/local/cuda", "/proc/driver/nvidia"),
                  devices=("/dev/nvidia*",), env=(("CUDA_HOME", "/usr/local/cuda"),))

Read paths are bound read-only at the same path (after the scratch tmpfs, so they may lie
under ``/tmp``); device nodes are bound into the sandbox's ``/dev`` (``--dev-bind``) and
granted read, write and ioctl by Landlock; ``env`` is added to the student code's
environment.  Nothing else changes.  Keep such lists short and reviewed.

Trusted programs of the grader run the same way (:meth:`Sandbox.run_program`): the kernel
labs (:mod:`autograder.kernelgrade`) elaborate a student's kernel factory, and compile and
time what came back, in a program of the grader's own started inside the same isolation
(bubblewrap, or as root a private mount and network namespace and a one-way drop to an
unprivileged uid), which then adds its own layers (Landlock, seccomp) before it runs
anything else.  The first-party packages it needs are bound read-only at
``/course/<package>``; a kernel cache may be bound writable; device nodes come from the
policy as above.

Programmatic use (what ``grade`` does)::

    with Sandbox("auto", spec.sandbox, jobs=4) as sb:      # probes the chain once
        result = sb.run(cells, probes, Limits(...), preset={"P": variant})
        result.answers, result.probes, result.cells, result.isolation, ...
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "RunResult", "ProgramResult", "Sandbox", "SandboxPolicy", "IsolationError", "run_cells",
           "ISOLATIONS", "bwrap_binary", "REPO", "PROGRAM_PACKAGES", "TRUSTED_UID"]

RUNNER = Path(__file__).with_name("runner.py")
REPO = Path(__file__).resolve().parents[1]
#: first-party packages a grader program may import inside the sandbox (bound at /course/<name>)
PROGRAM_PACKAGES = ("autograder", "kernels", "measure", "ledger")
ISOLATIONS = ("auto", "bwrap", "uid", "process")
UID_BASE = int(os.environ.get("AUTOGRADER_SANDBOX_UID", "1700000000"))
#: the one uid of the grader's own confined programs that run no student Python (the kernel
#: labs' compile-and-time step), kept apart from the per-slot uids of student code
TRUSTED_UID = UID_BASE + 0xFFFF
_DEV_BASIC = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class IsolationError(RuntimeError):
    """The requested isolation is not available here, or would run student code as root."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What a lab adds to the sandbox's default view (see the module docstring)."""
    read_paths: tuple[str, ...] = ()  # host paths, bound read-only at the same path
    devices: tuple[str, ...] = ()  # glob patterns of device nodes, e.g. "/dev/nvidia*"
    env: tuple[tuple[str, str], ...] = ()  # extra environment of the student code, e.g. (("CUDA_HOME", ...),)


@dataclass(frozen=True)
class Limits:
    cell_timeout: float = 10.0
    notebook_timeout: float = 60.0
    memory_mb: int = 1024
    cpu_s: float | None = None  # CPU seconds per run of the notebook (default: notebook_timeout)
    scratch_mb: int = 64  # the writable scratch directory (tmpfs size)
    nproc: int = 32  # processes/threads of the sandbox user
    output_cap: int = 4000  # characters kept per cell
    fsize_mb: int = 16
    nofile: int = 256  # open files
    max_restarts: int = 4
    grace: float = 1.5  # parent watchdog slack after the in-process alarm

    @property
    def cpu_budget(self) -> float:
        return float(self.cpu_s if self.cpu_s is not None else self.notebook_timeout)


@dataclass
class RunResult:
    cells: dict[int, dict] = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)
    has_answer_dict: bool = False
    isolation: str = ""  # the mode the grader chose (not what the child says)
    who: str = ""  # the child's account of its uid and scratch
    confinement: str = ""
    network: str = ""
    ledger: str = ""
    restarts: int = 0
    notebook_timed_out: bool = False
    gave_up: bool = False  # stopped after Limits.max_restarts hung or crashed cells: later cells never ran
    finished: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_kb: int = 0
    stray_output: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class ProgramResult:
    """What a grader program sent back (:meth:`Sandbox.run_program`)."""
    events: list = field(default_factory=list)
    state: str = ""  # done / timeout / died / flood
    isolation: str = ""
    exit: str = ""  # how the process ended (when it did not say done)
    wall_s: float = 0.0
    output_tail: str = ""  # the last characters it wrote to stdout/stderr


def bwrap_binary() -> str | None:
    """``AUTOGRADER_BWRAP`` (a path, or ``none`` to pretend it is missing), else ``bwrap`` on PATH."""
    env = os.environ.get("AUTOGRADER_BWRAP")
    if env is not None:
        return None if env.strip().lower() in ("", "none", "0", "no") else env
    return shutil.which("bwrap")


def _sig_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _outermost(paths) -> list[str]:
    out: list[str] = []
    for p in sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)}, key=len):
        if not any(p == q or p.startswith(q.rstrip("/") + "/") for q in out):
            out.append(p)
    return out


def _python_paths(python: str) -> list[str]:
    """The Python installation and its environment (host paths)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(python)), os.path.dirname(os.path.abspath(python))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    return _outermost(paths)


def _site_dirs() -> list[str]:
    """The environment's site-packages (the sandbox's Python runs without ``site``), then any
    other directory on the grader's ``sys.path`` outside the checkout and the standard library
    (an offline bundle unpacked and put on ``PYTHONPATH``, e.g. ``/tmp/site``)."""
    out = []
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p and os.path.isdir(p) and p not in out:
            out.append(p)
    std = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    repo = str(REPO)
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        rp = os.path.realpath(p)
        if (rp in std or rp == repo or rp.startswith(repo + os.sep) or repo.startswith(rp + os.sep)
                or rp.endswith(".zip") or any(os.path.realpath(q) == rp for q in out)
                or any(rp.startswith(s + os.sep) for s in std)):
            continue
        out.append(rp)
    return out


def _default_ledger_dir() -> str:
    import ledger

    return os.path.realpath(list(ledger.__path__)[0])


class Sandbox:
    """One configured isolation for a batch; :meth:`run` grades one submission's cells.

    ``jobs`` worker slots may run at once; each has its own sandbox uid when the grader
    is root.  Use as a context manager (or call :meth:`close`).
    """

    def __init__(self, isolation: str = "auto", policy: SandboxPolicy | None = None, *,
                 ledger_dir: str | None = None, python: str | None = None, jobs: int = 1,
                 uid: int | None = None, trusted: bool = False):
        if isolation not in ISOLATIONS:
            raise IsolationError(f"unknown isolation {isolation!r}; choose from {', '.join(ISOLATIONS)}")
        self.policy = policy or SandboxPolicy()
        python = python or sys.executable
        # the directory with symbolic links resolved (a virtual environment reached through a link is
        # bound at its real path), the interpreter's own link kept (it is what makes the venv a venv)
        self.python = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(python))), os.path.basename(python))
        self.root = os.geteuid() == 0
        self.fixed_uid = uid  # every slot runs as this uid (the grader's trusted programs), else one per slot
        self.trusted = trusted  # runs only the grader's own programs: 'process' is allowed as root
        self.ledger_dir = os.path.realpath(ledger_dir or _default_ledger_dir())
        self.tmp = tempfile.mkdtemp(prefix="ag-sandbox-")
        os.chmod(self.tmp, 0o755)  # the sandbox uid must reach its scratch mount point
        self.stager: subprocess.Popen | None = None
        self.slots: queue.Queue[int] = queue.Queue()
        for k in range(max(1, jobs)):
            self.slots.put(k)
        self._seq = 0
        self.runner_cpu = 0.0  # CPU seconds the bubblewrapped runners reported (not in our rusage)
        self._cpu_lock = threading.Lock()
        self._stage_lock = threading.Lock()
        self.devices = sorted({os.path.realpath(d) if not os.path.islink(d) else d
                               for pat in self.policy.devices for d in glob.glob(pat)})
        self.extra_read = _outermost(self.policy.read_paths)
        self._site_dirs = _site_dirs()
        self.mode, self.why = "", ""
        self._launch = ""  # the mode being set up (and probed), then the mode in use
        try:
            self._choose(isolation)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ set-up
    def _choose(self, requested: str) -> None:
        reasons = []
        if requested in ("auto", "bwrap"):
            b = bwrap_binary()
            if not b:
                reasons.append("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
            else:
                try:
                    self._setup_bwrap(b)
                    self._probe()
                    self.mode = "bwrap"
                    return
                except IsolationError as exc:
                    reasons.append(f"bubblewrap does not work here: {exc}")
                    self._stop_stager()
            if requested == "bwrap":
                raise IsolationError("; ".join(reasons))
        if requested in ("auto", "uid"):
            if not self.root:
                if requested == "uid":
                    raise IsolationError("isolation 'uid' switches to an unprivileged uid and needs a "
                                         "grader running as root")
            else:
                try:
                    self._setup_direct("uid")
                    self._probe()
                    self.mode = "uid"
                    self.why = "; ".join(reasons)
                    return
                except IsolationError as exc:
                    reasons.append(f"dropping to an unprivileged uid failed: {exc}")
                if requested == "uid":
                    raise IsolationError("; ".join(reasons))
        if self.root and not self.trusted:
            raise IsolationError("refusing to run student code as root without isolation: "
                                 + ("; ".join(reasons) or "isolation 'process' keeps the grader's uid")
                                 + ". Install bubblewrap, or run the grader as an unprivileged user.")
        self._setup_direct("process")
        self._probe()
        self.mode = "process"
        self.why = "; ".join(reasons)

    def _slot_uid(self, slot: int) -> int:
        if not self.root:
            return os.getuid()
        return self.fixed_uid if self.fixed_uid is not None else UID_BASE + slot

    def _setup_bwrap(self, bwrap: str) -> None:
        py = _python_paths(self.python)
        binds = _outermost([p for p in py if not p.startswith("/usr/")])
        args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                "--new-session", "--hostname", "sandbox", "--clearenv",
                "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
                "--setenv", "HOME", "/tmp", "--setenv", "OMP_NUM_THREADS", "1",
                "--ro-bind", "/usr", "/usr"]
        inside = ["/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
                inside.append(top)
        for p in binds:
            args += ["--ro-bind", p, p]
            inside.append(p)
        for f in ("/etc/ld.so.cache", "/etc/localtime"):
            if os.path.exists(f):
                args += ["--ro-bind", f, f]
                inside.append(f)
        args += ["--ro-bind", self.ledger_dir, "/course/ledger",
                 "--ro-bind", str(RUNNER), "/sandbox/runner.py",
                 "--proc", "/proc", "--dev", "/dev"]
        for d in self.devices:
            args += ["--dev-bind", d, d]
        args += ["--remount-ro", "/dev"]
        # a lab's own read-only paths come after the scratch tmpfs (which may not hide them)
        late = []
        for p in self.extra_read + self._extra_sites(py):
            late += ["--ro-bind", p, p]
            inside.append(p)
        self._launch = "bwrap"
        self._bwrap_args = args
        self._bwrap_late = late
        self._inside_read = inside + ["/course", "/sandbox"] + list(_DEV_BASIC)
        self._expected_ledger = "/course/ledger"
        sources = binds + self.extra_read + ["/usr", self.ledger_dir, str(RUNNER)] + self.devices
        if self.root:
            for tool in ("setpriv", "nsenter"):
                if not shutil.which(tool):
                    raise IsolationError(f"{tool} (util-linux) is needed to drop root before bubblewrap")
            sources += [str(REPO / p) for p in PROGRAM_PACKAGES if p != "ledger"] + self._site_dirs
            uid = self._slot_uid(0)
            blocked = [p for p in sources if _blocked_for(p, uid)]
            if blocked:
                self._start_stager(sources, uid)

    def _setup_direct(self, mode: str) -> None:
        self._launch = mode
        course = os.path.join(self.tmp, "course")
        os.makedirs(course, exist_ok=True)
        link = os.path.join(course, "ledger")
        if not os.path.islink(link):
            os.symlink(self.ledger_dir, link)
        os.chmod(course, 0o755)
        self._course_dir = course
        read = _python_paths(self.python) + ["/usr", "/bin", "/lib", "/lib64", course, self.ledger_dir,
                                             "/etc/ld.so.cache", "/etc/localtime"]
        read += self.extra_read + self._extra_sites(_python_paths(self.python)) + list(_DEV_BASIC)
        self._inside_read = sorted({os.path.realpath(p) for p in read if os.path.exists(p)} | {course})
        self._expected_ledger = self.ledger_dir

    def _extra_sites(self, python_paths: list[str]) -> list[str]:
        """Site directories outside the Python installation (an unpacked offline bundle)."""
        return [d for d in self._site_dirs
                if not any(d == p or d.startswith(p.rstrip("/") + "/") for p in python_paths + ["/usr"])]

    def _start_stager(self, paths: list[str], uid: int) -> None:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        self.stager = subprocess.Popen([self.python, "-I", "-X", "utf8", str(RUNNER), "--stage"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=env, cwd="/", start_new_session=True)
        self.stager.stdin.write((json.dumps({"expose": paths, "uid": uid}) + "\n").encode())
        self.stager.stdin.flush()
        ready, _, _ = select.select([self.stager.stdout], [], [], 20)
        line = self.stager.stdout.readline() if ready else b""
        if not line:
            err = b""
            if self.stager.poll() is not None:
                err = self.stager.stderr.read()[-500:]
            raise IsolationError("the mount-namespace helper did not start: "
                                 + err.decode("utf-8", "replace").strip())

    def _stop_stager(self) -> None:
        if self.stager is not None:
            try:
                self.stager.stdin.close()
                self.stager.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.stager.kill()
                self.stager.wait()
            self.stager = None

    def _probe(self) -> None:
        """One empty run: the chain starts, confines itself and imports the grader's ledger."""
        r = self.run([{"index": 0, "source": "import ledger"}], {},
                     Limits(cell_timeout=30, notebook_timeout=60, memory_mb=1024), probe=True)
        if not r.finished or r.cells.get(0, {}).get("status") != "ok":
            why = "; ".join(r.problems) or r.cells.get(0, {}).get("error") or "no result"
            said = r.stray_output.strip()[-600:]  # what the launcher (bwrap, the runner) wrote on stderr
            if said and said not in why:
                why += f"; it said: {said}"
            if self._launch == "bwrap" and "Permission denied" in said and self.root:
                why += (f" (the sandbox runs as uid {self._slot_uid(0)} and up: the Python installation, the "
                        "virtual environment and the course checkout must be reachable (every directory above "
                        "them searchable, o+x) by that uid; set AUTOGRADER_SANDBOX_UID or move them)")
            raise IsolationError(why.strip())
        if os.path.realpath(r.ledger) != os.path.realpath(self._expected_ledger):
            raise IsolationError(f"the sandbox would import ledger from {r.ledger!r}, the grader's is "
                                 f"{self.ledger_dir!r}")

    def describe(self) -> str:
        return self.mode + (f" (not bwrap: {self.why})" if self.why and self.mode != "bwrap" else "")

    def close(self) -> None:
        self._stop_stager()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ one submission
    def run(self, cells: list[dict], probes: dict, limits: Limits = Limits(), probe: bool = False,
            preset: dict | None = None) -> RunResult:
        """Execute ``cells`` ([{"index", "source"}]) confined; return what came back as data.

        ``preset``: names (JSON data) defined before the first cell, like ``ANSWER`` and
        ``check`` are (the grader passes the student's parameters ``P``)."""
        slot = self.slots.get()
        try:
            return self._run(cells, probes, limits, slot, probe, preset or {})
        finally:
            self.slots.put(slot)

    def _run(self, cells, probes, limits, slot, probe, preset) -> RunResult:
        result = RunResult(isolation=self._launch)
        t0 = time.monotonic()
        deadline = t0 + limits.notebook_timeout
        skip: set[int] = set()
        while True:
            cpu_left = limits.cpu_budget  # per run: a cell stopped by it is charged, the rest re-run
            state, current, phase, kill = self._one_run(cells, probes, limits, skip, deadline, slot,
                                                        result, cpu_left, preset)
            if state == "done":
                result.finished = True
                break
            if state == "notebook_timeout":
                result.notebook_timed_out = True
                if current is not None:
                    result.cells[current] = {"status": "timeout", "output": "", "output_chars": 0,
                                             "error": f"the notebook ran past its {limits.notebook_timeout:g} s "
                                                      "wall-clock limit in this cell"}
                result.problems.append(f"the notebook ran past its {limits.notebook_timeout:g} s wall-clock "
                                       "limit; it was stopped")
                break
            if state == "flood":
                result.problems.append("the submission flooded the result channel; stopped")
                break
            if phase == "cells" and current is not None:
                if state == "cell_hung":
                    err = f"cell ran past its {limits.cell_timeout:g} s limit and ignored the alarm; it was killed"
                    st = "timeout"
                else:
                    err = "the process " + kill + " while running this cell"
                    st = "crashed"
                result.cells[current] = {"status": st, "error": err, "output": "", "output_chars": 0}
                skip.add(current)
                if result.restarts >= limits.max_restarts:
                    result.gave_up = True
                    result.problems.append("too many cells hung or crashed; stopped re-running")
                    break
                result.restarts += 1
                continue
            where = "while evaluating answers" if phase == "probes" else "before running the cells"
            result.problems.append(("timed out " if state == "cell_hung" else "the process " + kill + " ") + where)
            break
        result.wall_s = time.monotonic() - t0
        return result

    # ------------------------------------------------------------------ grader programs
    def run_program(self, program: str, args: list[str], job: dict, limits: Limits, *,
                    packages: tuple[str, ...] = ("autograder", "ledger"), write_dirs: tuple[str, ...] = (),
                    env: dict | None = None, on_event=None,
                    files: dict[str, tuple[str, ...]] | None = None) -> ProgramResult:
        """Run one of the grader's own programs inside this sandbox's isolation.

        ``program`` is a file of the checkout (``autograder/kernelgrade/worker.py``) started as
        ``python -I -S -X utf8 PROGRAM *args RESULT_FD CONTROL_FD`` with ``job`` (JSON) on its
        standard input, extended by ``job["sandbox"]``: what the program must do first to finish
        the isolation (``mode``; in ``uid`` mode it is started as root and drops, as the runner
        does, with :func:`autograder.runner._as_root_then_drop`), its scratch directory, the
        course directory to put first on ``sys.path`` (the ``packages`` it may import, read-only),
        the site directories, the paths it may read and the device nodes it may open (for its own
        Landlock layer).  ``write_dirs`` are bound writable at the same path (a kernel cache).
        ``files`` narrows a package to some of its files (``{"autograder": ("runner.py", ...)}``,
        paths inside the package): the program sees a copy holding only those, with empty
        ``__init__.py`` files, instead of the whole package (the elaboration of student code
        needs three modules of the grader, not its sources).

        The program writes JSON lines on RESULT_FD and ends with ``{"event": "done"}``.
        ``on_event(ev)`` sees every event as it arrives and may return ``{"reply": bytes}``
        (written to the program's CONTROL_FD) and/or ``{"deadline": t}`` (a new
        ``time.monotonic()`` deadline; the initial one is ``limits.notebook_timeout``).  At the
        deadline, or when the result channel passes 256 MiB, the whole process group is killed."""
        for pkg in packages:
            if pkg not in PROGRAM_PACKAGES:
                raise IsolationError(f"package {pkg!r} is not one a grader program may import")
        if program.split("/", 1)[0] not in packages or not (REPO / program).is_file():
            raise IsolationError(f"program {program!r} is not a file of the packages {packages}")
        files = {k: tuple(v) for k, v in (files or {}).items()}
        for pkg, names in files.items():
            if pkg not in packages or pkg == "ledger":
                raise IsolationError(f"files: {pkg!r} is not one of the packages {packages} (or is ledger)")
            for rel in names:
                if rel.startswith("/") or ".." in rel.split("/") or not (REPO / pkg / rel).is_file():
                    raise IsolationError(f"files: {pkg}/{rel} is not a file of the package")
        top, _, rest = program.partition("/")
        if top in files and rest not in files[top]:
            raise IsolationError(f"program {program!r} is not among the files of {top!r} it may see")
        slot = self.slots.get()
        try:
            return self._run_program(program, list(args), job, limits, packages, write_dirs, env or {},
                                     on_event, slot, files)
        finally:
            self.slots.put(slot)

    def _package_host(self, pkg: str, files: dict) -> str:
        """The host directory a program sees as package ``pkg`` (a narrowed copy, see ``files``)."""
        if pkg == "ledger":
            return self.ledger_dir
        if not files.get(pkg):
            return str(REPO / pkg)
        names = tuple(sorted(set(files[pkg])))
        key = hashlib.sha256(repr((pkg, names)).encode()).hexdigest()[:12]
        top = os.path.join(self.tmp, f"stage-{key}")
        d = os.path.join(top, pkg)
        with self._stage_lock:
            if not os.path.isdir(d):
                part = os.path.join(top, pkg + ".part")
                shutil.rmtree(part, ignore_errors=True)
                for rel in names:
                    dst = os.path.join(part, rel)
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copyfile(REPO / pkg / rel, dst)
                for here, _dirs, fnames in os.walk(part):  # packages, with nothing run on import
                    if "__init__.py" not in fnames:
                        open(os.path.join(here, "__init__.py"), "w").close()
                    os.chmod(here, 0o755)
                    for f in os.listdir(here):
                        if os.path.isfile(os.path.join(here, f)):
                            os.chmod(os.path.join(here, f), 0o644)
                os.chmod(top, 0o755)
                os.rename(part, d)
        return d

    def _program_course(self, packages, hosts) -> str:
        """The course directory for the direct modes: a link per package to its host directory."""
        key = hashlib.sha256(repr(list(zip(packages, hosts))).encode()).hexdigest()[:12]
        d = os.path.join(self.tmp, "course-" + "-".join(sorted(packages)) + "-" + key)
        with self._stage_lock:
            if not os.path.isdir(d):
                os.makedirs(d + ".part", exist_ok=True)
                for pkg, host in zip(packages, hosts):
                    os.symlink(host, os.path.join(d + ".part", pkg))
                os.chmod(d + ".part", 0o755)
                os.rename(d + ".part", d)
        return d

    def _run_program(self, program, args, job, limits, packages, write_dirs, env, on_event, slot,
                     files=None) -> ProgramResult:
        res = ProgramResult(isolation=self._launch)
        t0 = time.monotonic()
        self._seq += 1
        scratch = os.path.join(self.tmp, f"prog-{slot}-{self._seq}")
        os.mkdir(scratch, 0o700)
        uid = self._slot_uid(slot)
        bw = self._launch == "bwrap"
        write_dirs = [os.path.realpath(d) for d in write_dirs]
        nproc = limits.nproc if self.root else _user_processes() + limits.nproc
        lim = {"memory_bytes": (limits.memory_mb << 20) if limits.memory_mb else None,
               "cpu_s": int(limits.cpu_budget + 0.999), "fsize_bytes": limits.fsize_mb << 20,
               "nproc": nproc, "nofile": limits.nofile, "scratch_bytes": limits.scratch_mb << 20}
        hosts = [self._package_host(p, files or {}) for p in packages]
        if bw:
            course = "/course"
            read = self._inside_read + [f"/course/{p}" for p in packages] + write_dirs
            py = "/course/" + program
        else:
            course = self._program_course(packages, hosts)
            read = self._inside_read + [os.path.realpath(h) for h in hosts] + [course]
            top, _, rest = program.partition("/")
            py = os.path.join(hosts[list(packages).index(top)], rest)
        box = {"mode": self._launch, "scratch": "/tmp" if bw else scratch, "course_dir": course,
               "site_dirs": self._site_dirs, "read_paths": sorted(set(read)), "devices": self.devices,
               "write_dirs": write_dirs, "env": {**dict(self.policy.env), **env}, "limits": lim}
        if self._launch == "uid":
            box["drop"] = {"uid": uid, "gid": uid}
            box["expose"] = sorted(set(read)) + [scratch, py] + write_dirs
            if self.root:
                for d in write_dirs:  # the unprivileged uid writes its cache there
                    _chown_tree(d, uid)
        elif self.root and bw:
            for d in write_dirs:
                _chown_tree(d, uid)
        rfd, wfd = os.pipe()
        cr, cw = os.pipe()
        ofd_r, ofd_w = os.pipe()
        jobf = tempfile.TemporaryFile()
        jobf.write(json.dumps({**job, "sandbox": box}).encode())
        jobf.flush()
        jobf.seek(0)
        tail = [self.python, "-I", "-S", "-X", "utf8", py] + args + [str(wfd), str(cr)]
        if bw:
            prefix = []
            if self.root:
                if self.stager is not None:
                    prefix = ["nsenter", f"--mount=/proc/{self.stager.pid}/ns/mnt", "--"]
                prefix += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--"]
            binds = []
            for pkg, host in zip(packages, hosts):
                if pkg != "ledger":
                    binds += ["--ro-bind", host, f"/course/{pkg}"]
            rw = []
            for d in write_dirs:
                rw += ["--bind", d, d]
            argv = (prefix + self._bwrap_args + binds
                    + ["--size", str(limits.scratch_mb << 20), "--perms", "0700", "--tmpfs", "/tmp"]
                    + self._bwrap_late + rw + ["--remount-ro", "/", "--chdir", "/tmp", "--"] + tail)
        else:
            argv = tail
        penv = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": scratch}
        try:
            proc = subprocess.Popen(argv, stdin=jobf, stdout=ofd_w, stderr=subprocess.STDOUT, cwd="/", env=penv,
                                    pass_fds=(wfd, cr), close_fds=True, start_new_session=True)
        finally:
            os.close(wfd)
            os.close(cr)
            os.close(ofd_w)
            jobf.close()
        deadline = t0 + limits.notebook_timeout
        buf, out, received, state = b"", bytearray(), 0, "died"
        try:
            os.set_blocking(ofd_r, False)
            fds = [rfd, ofd_r]
            while True:
                now = time.monotonic()
                if now >= deadline:
                    state = "timeout"
                    break
                ready, _, _ = select.select(fds, [], [], min(deadline - now, 1.0))
                if ofd_r in ready:
                    try:
                        chunk = os.read(ofd_r, 1 << 16)
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        fds.remove(ofd_r)
                    elif chunk:
                        out += chunk
                        del out[:-8000]
                if rfd not in ready:
                    continue
                chunk = os.read(rfd, 1 << 20)
                if not chunk:
                    break
                received += len(chunk)
                if received > (256 << 20):
                    state = "flood"
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(ev, dict):
                        continue
                    res.events.append(ev)
                    if ev.get("event") == "done":
                        state = "done"
                    if on_event is not None:
                        act = on_event(ev) or {}
                        if act.get("deadline"):
                            deadline = float(act["deadline"])
                        if act.get("reply"):
                            try:
                                os.write(cw, act["reply"])
                            except OSError:
                                pass
                if state == "done":
                    break
        finally:
            os.close(rfd)
            os.close(cw)
            status = None
            if state == "done":
                status, _ = _reap(proc.pid, limits.grace)
            if status is None:
                _kill_group(proc.pid)
                _, status, _ = os.wait4(proc.pid, 0)
            proc.returncode = status
            try:
                while True:
                    chunk = os.read(ofd_r, 1 << 16)
                    if not chunk:
                        break
                    out += chunk
                    del out[:-8000]
            except OSError:
                pass
            os.close(ofd_r)
            shutil.rmtree(scratch, ignore_errors=True)
        res.state = state
        if state != "done":
            res.exit = self._exit_text(status, 0.0, limits.cpu_budget, 0, limits)
        res.output_tail = bytes(out).decode("utf-8", "replace")
        res.wall_s = time.monotonic() - t0
        return res

    def _argv(self, slot: int, limits: Limits, fd: int) -> list[str]:
        # -S: no site module, so no .pth file runs (the editable install's finder would point
        # at whichever checkout installed the venv); the runner sets sys.path itself
        tail = [self.python, "-I", "-S", "-X", "utf8"]
        if self._launch == "bwrap":
            uid = self._slot_uid(slot)
            prefix = []
            if self.root:
                if self.stager is not None:
                    prefix = ["nsenter", f"--mount=/proc/{self.stager.pid}/ns/mnt", "--"]
                prefix += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                           "--inh-caps=-all", "--"]
            return (prefix + self._bwrap_args
                    + ["--size", str(limits.scratch_mb << 20), "--perms", "0700", "--tmpfs", "/tmp"]
                    + self._bwrap_late + ["--remount-ro", "/", "--chdir", "/tmp", "--"]
                    + tail + ["/sandbox/runner.py", str(fd)])
        return tail + [str(RUNNER), str(fd)]

    def _job(self, cells, probes, limits, skip, slot, cpu_left, scratch, preset) -> dict:
        bw = self._launch == "bwrap"
        uid = self._slot_uid(slot)
        nproc = limits.nproc if self.root else _user_processes() + limits.nproc
        job = {"mode": self._launch,
               "cells": cells, "skip": sorted(skip), "probes": probes, "preset": preset,
               "cell_timeout": limits.cell_timeout, "output_cap": limits.output_cap,
               "read_paths": self._inside_read, "devices": self.devices,
               "scratch": "/tmp" if bw else scratch,
               "course_dir": "/course" if bw else self._course_dir,
               "site_dirs": self._site_dirs,
               "env": dict(self.policy.env),
               "limits": {"memory_bytes": limits.memory_mb << 20, "cpu_s": int(cpu_left + 0.999),
                          "fsize_bytes": limits.fsize_mb << 20, "nproc": nproc,
                          "scratch_bytes": limits.scratch_mb << 20}}
        if job["mode"] == "uid":
            job["drop"] = {"uid": uid, "gid": uid}
            job["expose"] = self._inside_read + [scratch, str(RUNNER)]
        return job

    def _one_run(self, cells, probes, limits, skip, deadline, slot, result, cpu_left, preset):
        self._seq += 1
        scratch = os.path.join(self.tmp, f"scratch-{slot}-{self._seq}")
        os.mkdir(scratch, 0o700)
        rfd, wfd = os.pipe()
        ofd_r, ofd_w = os.pipe()
        jobf = tempfile.TemporaryFile()
        jobf.write(json.dumps(self._job(cells, probes, limits, skip, slot, cpu_left, scratch, preset)).encode())
        jobf.flush()
        jobf.seek(0)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": scratch,
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        try:
            proc = subprocess.Popen(self._argv(slot, limits, wfd), stdin=jobf, stdout=ofd_w,
                                    stderr=subprocess.STDOUT, cwd="/", env=env, pass_fds=(wfd,),
                                    close_fds=True, start_new_session=True)
        finally:
            os.close(wfd)
            os.close(ofd_w)
            jobf.close()
        current: int | None = None
        phase, state, buf = "cells", "running", b""
        stray, stray_total = bytearray(), 0
        cell_deadline = None
        received = 0
        saw_hello = False
        reported_cpu = 0.0  # the runner's own account (bubblewrap's PID-1 reaper hides it from wait4)
        partial = {"answers": {}, "kinds": {}, "probes": {}}  # as of the last finished cell of this run
        try:
            os.set_blocking(ofd_r, False)
            open_fds = [rfd, ofd_r]
            while True:
                now = time.monotonic()
                limit = deadline if cell_deadline is None else min(deadline, cell_deadline)
                if now >= limit:
                    state = "notebook_timeout" if now >= deadline else "cell_hung"
                    break
                ready, _, _ = select.select(open_fds, [], [], min(limit - now, 1.0))
                if ofd_r in ready:
                    try:
                        chunk = os.read(ofd_r, 1 << 16)
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        open_fds.remove(ofd_r)
                    elif chunk:
                        stray_total += len(chunk)
                        if len(stray) < limits.output_cap:
                            stray += chunk[: limits.output_cap - len(stray)]
                if rfd not in ready:
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
                    if kind == "hello" and not saw_hello:  # sent before any student code
                        saw_hello = True
                        result.who = str(ev.get("who", ""))[:300]
                        result.confinement = str(ev.get("confinement", ""))[:300]
                        result.network = str(ev.get("network", ""))[:200]
                        result.ledger = str(ev.get("ledger", ""))[:500]
                    elif kind == "start" and phase == "cells":
                        current = ev.get("cell")
                        cell_deadline = time.monotonic() + limits.cell_timeout + limits.grace
                    if kind in ("end", "done") and isinstance(ev.get("cpu"), (int, float)):
                        reported_cpu = max(reported_cpu, min(float(ev["cpu"]), 1e6))
                    if kind == "end" and phase == "cells" and ev.get("cell") == current:
                        notes = ev.get("notes") if isinstance(ev.get("notes"), list) else []
                        result.cells[current] = {
                            "status": ev.get("status"), "error": str(ev.get("error", ""))[:500],
                            "output": str(ev.get("output", ""))[: limits.output_cap],
                            "output_chars": ev.get("output_chars", 0),
                            "notes": [str(n)[:300] for n in notes[:20]]}
                        current, cell_deadline = None, None
                    if kind == "partial_probe" and phase == "cells" and isinstance(ev.get("grade_id"), str):
                        partial["probes"][ev["grade_id"]] = ev.get("outputs")
                    if kind == "partial" and phase == "cells" and isinstance(ev.get("answers"), dict):
                        partial["answers"].update(ev["answers"])
                        if isinstance(ev.get("kinds"), dict):
                            partial["kinds"].update(ev["kinds"])
                    if kind == "answers":
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
            if state in ("eof", "done"):  # the child is ending by itself: an honest status and CPU time
                status, usage = _reap(proc.pid, limits.grace)
            else:
                status, usage = None, None
            if status is None:
                _kill_group(proc.pid)
                _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = status
            try:  # what is left in the output pipe (the writer is gone: no blocking)
                while len(stray) < limits.output_cap:
                    chunk = os.read(ofd_r, 1 << 16)
                    if not chunk:
                        break
                    stray += chunk[: limits.output_cap - len(stray)]
            except OSError:
                pass
            os.close(ofd_r)
            shutil.rmtree(scratch, ignore_errors=True)
        cpu = usage.ru_utime + usage.ru_stime
        if self._launch == "bwrap":
            with self._cpu_lock:
                self.runner_cpu += reported_cpu
            cpu += reported_cpu
        else:
            cpu = max(cpu, reported_cpu)
        if state != "done":
            result.peak_rss_kb = max(result.peak_rss_kb, int(usage.ru_maxrss))
        if stray:
            text = bytes(stray).decode("utf-8", "replace")
            result.stray_output = (result.stray_output + text)[: limits.output_cap]
        kill = ""
        if state == "eof":
            kill, cpu_kill = self._describe_exit(status, cpu, cpu_left, result.peak_rss_kb, limits)
            if cpu_kill:
                cpu = max(cpu, cpu_left)
        result.cpu_s += cpu
        if phase == "cells":  # stopped before the final answers: keep what finished cells assigned
            result.answers, result.kinds, result.probes = partial["answers"], partial["kinds"], partial["probes"]
        elif state != "done":  # stopped while calling functions: the early calls stand in for the rest
            for gid, outs in partial["probes"].items():
                result.probes.setdefault(gid, outs)
        return state, current, phase, kill

    def _describe_exit(self, status: int, cpu: float, cpu_limit: float, peak_kb: int,
                       limits: Limits) -> tuple[str, bool]:
        """``(what happened, was it the CPU-time limit)``."""
        text = self._exit_text(status, cpu, cpu_limit, peak_kb, limits)
        return text, "CPU-time limit" in text

    def _exit_text(self, status, cpu, cpu_limit, peak_kb, limits) -> str:
        sig = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
            if self._launch == "bwrap" and code > 128:  # bubblewrap passes on a child's signal as 128 + n
                sig = code - 128
            elif code:
                return f"exited with status {code}"
            else:
                return "exited"
        near_memory = limits.memory_mb > 0 and peak_kb >= 0.9 * (limits.memory_mb << 10)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= cpu_limit - 0.05):
            return f"was stopped at its CPU-time limit ({cpu_limit:g} s of CPU time)"
        if sig == signal.SIGXFSZ:
            return f"was killed for writing a file over {limits.fsize_mb} MiB"
        if sig == signal.SIGKILL:
            if near_memory:
                return (f"was killed (SIGKILL) near its memory limit ({peak_kb >> 10} of {limits.memory_mb} MiB): "
                        "out of memory")
            return "was killed (SIGKILL) by the code itself or by the system"
        if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT):
            what = {signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error",
                    signal.SIGABRT: "abort"}[sig]
            if near_memory:
                return f"crashed ({what}) near its memory limit ({peak_kb >> 10} of {limits.memory_mb} MiB): out of memory"
            return f"crashed ({what})"
        return f"was killed by {_sig_name(sig)}" if sig else "ended"


def _chown_tree(path: str, uid: int) -> None:
    """Hand a directory the grader made (a kernel cache) to the program's uid."""
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            try:
                if os.lstat(name).st_uid != uid:
                    os.lchown(name, uid, uid)
            except OSError:
                pass


def blocked_for(path: str, uid: int) -> bool:
    """Is there a directory above ``path`` that ``uid`` (no groups) may not search?"""
    return _blocked_for(path, uid)


def _blocked_for(path: str, uid: int) -> bool:
    """Is there a directory above ``path`` that ``uid`` (no groups) may not search?"""
    cur = ""
    for name in os.path.abspath(path).split("/")[1:-1]:
        cur += "/" + name
        try:
            st = os.stat(cur)
        except OSError:
            return True
        bits = (st.st_mode >> 6) if st.st_uid == uid else st.st_mode
        if not bits & 1:
            return True
    return False


def _reap(pid: int, timeout: float):
    """Wait up to ``timeout`` for ``pid`` to exit by itself: ``(status, rusage)`` or ``(None, None)``."""
    end = time.monotonic() + timeout
    try:  # a pidfd is readable once the process has exited: no polling delay
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            got, status, usage = os.wait4(pid, os.WNOHANG)
            if got:
                return status, usage
            left = end - time.monotonic()
            if left <= 0:
                return None, None
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, 0.002))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _kill_group(pid: int) -> None:
    """SIGKILL the child's process group, the child, and anything it started."""
    for target in [pid] + _descendants(pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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


def run_cells(cells: list[dict], probes: dict, limits: Limits = Limits(), *, isolation: str = "auto",
              policy: SandboxPolicy | None = None, ledger_dir: str | None = None) -> RunResult:
    """One-off: set up a :class:`Sandbox`, run ``cells``, tear it down."""
    with Sandbox(isolation, policy, ledger_dir=ledger_dir) as sb:
        return sb.run(cells, probes, limits)
