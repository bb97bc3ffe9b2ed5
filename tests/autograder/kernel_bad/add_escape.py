# Known-bad (elementwise K1): tries to leave its sandbox while the factory runs -- reads a
# system file, lists the grader's cache, starts a process.  Every attempt must fail.
import os
import subprocess


@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):
    found = []
    for path in ("/etc/shadow", os.path.expanduser("~/.cache")):
        try:
            found.append(open(path).read(10) if os.path.isfile(path) else os.listdir(path))
        except OSError:
            pass
    subprocess.run(["id"], check=True)
    raise RuntimeError(f"escaped: {found}")


ANSWER["k1_add"] = add_kernel
