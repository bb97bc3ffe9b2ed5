"""The confinement layers the kernel-grading workers add themselves (standard library only).

Both workers are started by :meth:`autograder.sandbox.Sandbox.run_program`, inside the
isolation the grader uses for every submission (bubblewrap, or -- as root without it -- a
private mount, network, IPC and UTS namespace and a one-way drop to an unprivileged uid;
:func:`bootstrap` finishes that part exactly as the notebook runner does).  Then each
worker adds its own layers, with the same implementations as the runner
(:mod:`autograder.runner`):

* ``elaborate`` (runs the student's Python): resource limits, Landlock (read-only
  packages, a writable scratch directory, no TCP, no signals outside), a seccomp filter
  (no fork, no exec) and the runner's audit hook (the same refusals with readable
  messages);
* ``evaluate`` (never runs the student's Python; nvcc runs here, so processes stay
  allowed): resource limits and Landlock (read-only trees, the CUDA toolkit, writable
  scratch and kernel cache, the GPU's device files read-write-ioctl).

Every step returns a line saying what it achieved; the record keeps those lines, so a
machine that lacks a mechanism says so instead of pretending.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["bootstrap", "limit", "landlock", "no_new_processes", "audit_hook", "gpu_device_paths",
           "gpu_models", "GPU_DEVICE_GLOBS"]

#: the device nodes a CUDA process opens (read, write and ioctl)
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*")


def _runner():
    from autograder import runner  # standard library only, no grader state

    return runner


def bootstrap(box: dict) -> str:
    """Finish the sandbox's isolation (``job["sandbox"]`` of ``Sandbox.run_program``) and set
    up the environment; returns who we are now."""
    R = _runner()
    mode = box.get("mode", "process")
    libc = ctypes.CDLL(None, use_errno=True)
    if mode != "bwrap":  # end with the grader (bubblewrap's --die-with-parent does it there)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    if mode == "uid":
        who = R._as_root_then_drop(box)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # changing credentials cleared it
    elif mode == "process":
        who = R._userns_scratch(box)
        R._limit_self(box.get("limits", {}))
    else:
        who = f"uid {os.getuid()} in bubblewrap (user, mount, pid, net, ipc, uts namespaces)"
        R._limit_self(box.get("limits", {}))
    scratch = box["scratch"]
    os.chdir(scratch)
    env = {"HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
           "OMP_NUM_THREADS": "1", "PATH": "/usr/local/cuda/bin:/usr/bin:/bin"}
    env.update({str(k): str(v) for k, v in (box.get("env") or {}).items()})
    if env.get("CUDA_HOME"):
        env["PATH"] = env["CUDA_HOME"] + "/bin:" + env["PATH"]
    os.environ.clear()
    os.environ.update(env)
    return who


def limit(**lim) -> str:
    """Resource limits on top of the sandbox's (``R._limit_self`` keys: memory_bytes, cpu_s,
    fsize_bytes, nproc, nofile)."""
    _runner()._limit_self(lim)
    return "limits: " + ", ".join(k for k, v in lim.items() if v is not None)


def landlock(read_paths, write_paths, device_paths=()) -> str:
    """Read-only ``read_paths``, read-write ``write_paths``, read-write-ioctl ``device_paths``."""
    return _runner()._landlock(list(read_paths), list(write_paths), list(device_paths))


def no_new_processes() -> str:
    """seccomp: fork, vfork, execve, execveat and process-creating clone fail (x86-64)."""
    return _runner()._seccomp_no_processes()


def audit_hook(read_paths, scratch) -> str:
    """The runner's Python audit hook: processes, sockets, files outside ``read_paths`` refused."""
    _runner()._install_audit(list(read_paths), scratch)
    return "audit hook: processes, sockets, signals and files outside the sandbox refused"


def gpu_device_paths() -> list[str]:
    """The NVIDIA device files present on this machine."""
    import glob

    return sorted({p for g in GPU_DEVICE_GLOBS for p in glob.glob(g)})


def gpu_models() -> list[str]:
    """The GPU models the driver reports (``/proc/driver/nvidia/gpus/*/information``), without
    starting CUDA; ``[]`` on a machine without an NVIDIA driver."""
    import glob

    out = []
    for f in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Model:"):
                        out.append(line.split(":", 1)[1].strip())
        except OSError:
            pass
    return out


if __name__ == "__main__":  # pragma: no cover - a manual probe
    print(gpu_device_paths(), gpu_models(), file=sys.stderr)
