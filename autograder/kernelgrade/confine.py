"""Confinement of the kernel-grading workers (standard library only).

Two workers run per submission, each a fresh process started by
:mod:`autograder.kernelgrade.pipeline`:

* ``elaborate`` runs the student's kernel cell and calls the factory.  It may not
  create processes or exec anything (seccomp), has no network, reads only the Python
  installation, the compiler packages and the course's packages, writes only its
  scratch directory (Landlock), under CPU-time, memory, file-size and open-file limits.
* ``evaluate`` never runs the student's Python: it compiles the TIR that came back
  (nvcc runs here, so process creation stays allowed), checks and times it.  It has no
  network, reads the same trees plus the CUDA toolkit, writes only its scratch and its
  kernel cache, and may open the GPU's device files (read, write, ioctl).

Each function returns a line saying what it achieved; the record keeps those lines, so
a machine that lacks a mechanism (an old kernel without Landlock, a container without
user namespaces) says so instead of pretending.  The parent adds the outer layers: a
new session and process group, a stripped environment, a wall-clock watchdog that ends
the whole group.
"""
from __future__ import annotations

import ctypes
import os

__all__ = ["limit", "private_network", "landlock", "no_new_processes", "gpu_device_paths"]

_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def limit(*, cpu_s: int | None = None, memory_bytes: int | None = None, fsize_bytes: int | None = None,
          nofile: int = 1024, nproc: int | None = None) -> str:
    import resource

    done = []
    for name, val in (("RLIMIT_CPU", cpu_s), ("RLIMIT_AS", memory_bytes), ("RLIMIT_FSIZE", fsize_bytes),
                      ("RLIMIT_NOFILE", nofile), ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", nproc)):
        if val is None:
            continue
        try:
            resource.setrlimit(getattr(resource, name), (int(val), int(val)))
            done.append(name[7:].lower())
        except (ValueError, OSError):
            pass
    return "limits: " + (", ".join(done) or "none")


def private_network() -> str:
    """A new network namespace (only loopback, down) where the OS allows it."""
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
    if libc.unshare(CLONE_NEWNET) != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return "network: host namespace (unshare not permitted)"
    return "network: private namespace (no interfaces)"


def gpu_device_paths() -> list[str]:
    """The NVIDIA device files a CUDA process opens (read, write and ioctl)."""
    try:
        names = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join("/dev", n)
        out.append(p)
        if os.path.isdir(p):  # /dev/nvidia-caps
            out += [os.path.join(p, m) for m in sorted(os.listdir(p))]
    return out


def landlock(read_paths, write_paths, device_paths=()) -> str:
    """Read-only ``read_paths``, read-write ``write_paths``, read-write-ioctl ``device_paths``."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except Exception as exc:  # pragma: no cover - non-Linux
        return f"landlock: unavailable ({exc})"
    if abi < 1:
        return "landlock: unavailable (kernel)"
    fs_all = (1 << 13) - 1
    if abi >= 2:
        fs_all |= 1 << 13
    if abi >= 3:
        fs_all |= _TRUNCATE
    if abi >= 5:
        fs_all |= _IOCTL_DEV
    file_bits = _EXECUTE | _WRITE_FILE | _READ_FILE | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    attr = _RulesetAttr(fs_all, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = (1 << 0) | (1 << 1)  # no TCP bind or connect at all
        size = 16
    fd = libc.syscall(_SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        return f"landlock: ruleset failed (errno {ctypes.get_errno()})"
    read_dir = _EXECUTE | _READ_FILE | _READ_DIR
    dev = _READ_FILE | _WRITE_FILE | (_IOCTL_DEV if abi >= 5 else 0)
    try:
        for paths, rights in ((read_paths, read_dir), (write_paths, fs_all), (device_paths, dev)):
            for p in paths:
                try:
                    pfd = os.open(p, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    r = rights if os.path.isdir(p) else rights & file_bits
                    rule = _PathBeneath(r, pfd)
                    libc.syscall(_SYS_ADD, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
                finally:
                    os.close(pfd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return "landlock: no_new_privs failed"
        if libc.syscall(_SYS_RESTRICT, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"landlock: restrict failed (errno {ctypes.get_errno()})"
    finally:
        os.close(fd)
    return f"landlock ABI {abi}: file system" + (" and TCP" if abi >= 4 else "")


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def no_new_processes() -> str:
    """seccomp: fork, vfork, execve, execveat and process-creating clone fail with EPERM (x86-64)."""
    import platform

    if platform.machine() != "x86_64":
        return "seccomp: not installed (x86-64 only)"
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050001, 0x00050026
    prog = [(LD, 4, None, None), (JEQ, 0xC000003E, None, "kill"), (LD, 0, None, None),
            (JGE, 0x40000000, "eperm", None), (JEQ, 57, "eperm", None), (JEQ, 58, "eperm", None),
            (JEQ, 59, "eperm", None), (JEQ, 322, "eperm", None), (JEQ, 435, "enosys", None),
            (JEQ, 56, None, "allow"), (LD, 16, None, None), (JSET, 0x10000, "allow", "eperm")]
    labels = {"allow": len(prog), "eperm": len(prog) + 1, "enosys": len(prog) + 2, "kill": len(prog) + 3}
    rets = [ALLOW, EPERM, ENOSYS, KILL]
    arr = (_SockFilter * (len(prog) + len(rets)))()
    for i, (op, k, t, f) in enumerate(prog):
        arr[i] = _SockFilter(op, labels[t] - i - 1 if t else 0, labels[f] - i - 1 if f else 0, k)
    for j, r in enumerate(rets):
        arr[len(prog) + j] = _SockFilter(RET, 0, 0, r)
    fprog = _SockFprog(len(arr), arr)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        return f"seccomp: failed (errno {ctypes.get_errno()})"
    return "seccomp: no new processes, no exec"
