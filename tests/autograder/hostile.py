"""The hostile battery: submissions that attack the grader or trip its edges, each with the
score and the message it must get.  Built from the instructor notebook (the book's numbers,
graded with ``--common``); used by ``test_hostile.py`` under every isolation mode.

``build(source, subs)`` writes the files (FIFOs, a device node, a symbolic link, a file
name that is not UTF-8 ...) and returns ``{file name: Case}``.
"""
from __future__ import annotations

import copy
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

# the battery's limits (CLI flags): the CPU budget is far below the cell limit, so a CPU
# burner is stopped by the CPU-time limit, not by a wall clock
FLAGS = ["--common", "--cell-timeout", "15", "--notebook-timeout", "30", "--cpu-s", "2",
         "--scratch-mb", "16", "--memory-mb", "2048", "--no-progress", "-j", "2"]
NOTEBOOK_TIMEOUT = 30.0
GBK_NAME = "张三".encode("gbk") + b".ipynb"  # a Chinese name from a zip made on Windows


@dataclass
class Case:
    lost: dict = field(default_factory=dict)  # grade_id -> status (others: right/manual)
    status: str = "graded"
    needles: dict = field(default_factory=dict)  # grade_id -> text its message contains
    problem: str = ""  # text one of the record's problems contains
    unreadable: bool = False


def _answer(nb, gid):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{gid}_answer")


def _prepend(nb, gid, code):
    c = _answer(nb, gid)
    c.source = code + "\n" + c.source


def _auto_after(spec, gid):
    ids = [p.grade_id for p in spec.parts if p.auto]
    return ids[ids.index(gid) + 1:]


def build(spec, source: Path, subs: Path, repo: Path) -> dict[str, Case]:
    base = nbformat.read(str(source), as_version=4)
    cases: dict[str, Case] = {}

    def new(name, case):
        cases[name] = case
        return copy.deepcopy(base)

    def write(name, nb):
        p = subs / name
        nbformat.write(nb, str(p))
        os.chmod(p, 0o644)

    write("instructor.ipynb", new("instructor.ipynb", Case()))

    # FIFOs in the scratch directory, in place of every file a grader might read back
    nb = new("fifo_in_scratch.ipynb", Case())
    _prepend(nb, "e03_a", "import os\nfor name in ('.stdout', 'stdout', 'result.json', 'answers.json', 'out'):\n"
                          "    os.mkfifo(name)\nprint(sorted(os.listdir('.')))")
    write("fifo_in_scratch.ipynb", nb)

    # submissions that are not regular files
    os.mkfifo(subs / "fifo.ipynb")
    cases["fifo.ipynb"] = Case(status="unreadable", unreadable=True, problem="is a FIFO (named pipe)")
    if os.geteuid() == 0:  # only root can make a device node
        os.mknod(subs / "device.ipynb", stat.S_IFCHR | 0o644, os.makedev(1, 3))
        cases["device.ipynb"] = Case(status="unreadable", unreadable=True, problem="is a character device")
    os.symlink("/etc/shadow", subs / "symlink.ipynb")
    cases["symlink.ipynb"] = Case(status="unreadable", unreadable=True, problem="is a symbolic link")

    # a device node made in the scratch directory, and a write through it
    nb = new("device_node.ipynb", Case(lost={"e05_c": "error"}, needles={"e05_c": "Operation not permitted"}))
    _prepend(nb, "e05_c", "import os, stat\nos.mknod('mem', stat.S_IFCHR | 0o666, os.makedev(1, 1))\n"
                          "open('mem', 'wb').write(b'x')")
    write("device_node.ipynb", nb)

    # system files and the grader's own files
    nb = new("system_files.ipynb", Case(lost={"e07_c": "error", "e07_b": "error", "e08_b": "error",
                                              "e11_c": "error"}))
    _prepend(nb, "e07_c", "print(open('/etc/shadow').read())")
    _prepend(nb, "e07_b", "import os\nprint(os.listdir('/etc'), open('/etc/passwd').read())")
    _prepend(nb, "e08_b", f"print(open({str(repo / 'labs' / 'pytorch' / 'spec.py')!r}).read()[:2000])")
    _prepend(nb, "e11_c", "import autograder.grade")
    write("system_files.ipynb", nb)

    # a file name that is not UTF-8
    nb = copy.deepcopy(base)
    p = os.path.join(os.fsencode(subs), GBK_NAME)
    with open(p, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.chmod(p, 0o644)
    cases[os.fsdecode(GBK_NAME)] = Case(problem="张三")

    # output and answers that are not valid Unicode
    nb = new("surrogates.ipynb", Case(lost={"e05_g": "malformed"}, problem="not valid Unicode"))
    _answer(nb, "e01_a").source += ("\nprint('lone \\udcff surrogate')\nimport sys, os\nsys.stderr.write('\\ud800')\n"
                                    "os.write(1, b'raw \\xff\\xfe bytes')")
    _answer(nb, "e05_g").source = 'ANSWER["e05_g"] = "memory-bound\\udcff"'
    write("surrogates.ipynb", nb)

    # IPython as Jupyter runs it: magics, display, shell lines
    nb = new("ipython.ipynb", Case(lost={"e04_b": "error"},
                                   needles={"e04_b": "not allowed in graded cells"}, problem="!ls"))
    _prepend(nb, "e02_a", "%%time")
    _prepend(nb, "e03_a", "%time x = sum(range(1000))\n%matplotlib inline\ndisplay(x)\nlen?")
    _prepend(nb, "e03_b", "!ls -la\n%pip install ledger")
    _prepend(nb, "e04_b", "files = !ls")
    _prepend(nb, "e05_a", "%%capture captured")
    _prepend(nb, "e06_a", "%timeit -n 3 sum(range(100))")
    _answer(nb, "e08_a").source = ("async def five():\n    return 5\n\nANSWER['e08_a'] = await five()")
    write("ipython.ipynb", nb)

    # fills the scratch directory (16 MiB)
    nb = new("scratch_fill.ipynb", Case(lost={"e05_d": "error"}, needles={"e05_d": "scratch directory is full"}))
    _prepend(nb, "e05_d", "for i in range(100):\n    open(f'blob{i}', 'wb').write(b'x' * (4 << 20))")
    write("scratch_fill.ipynb", nb)

    # burns CPU in C, where no alarm can interrupt it: the CPU-time limit ends it
    nb = new("cpu_kill.ipynb", Case(lost={"e13_d": "error"}, needles={"e13_d": "CPU-time limit"}))
    _prepend(nb, "e13_d", "x = sum(range(10**13))")
    write("cpu_kill.ipynb", nb)

    # sleeps past the notebook's wall-clock limit (each cell under its own)
    after = _auto_after(spec, "e12_c")
    nb = new("wall_kill.ipynb", Case(lost={"e12_c": "timeout", **{g: "timeout" for g in after}},
                                     needles={"e12_c": "wall-clock limit", after[0]: "not reached"},
                                     problem="wall-clock limit"))
    for gid in ("e12_a", "e12_b", "e12_c"):
        _prepend(nb, gid, "import time\ntime.sleep(12)")
    write("wall_kill.ipynb", nb)

    # five cells that kill their process: after Limits.max_restarts re-runs the grader stops, and the
    # answers it never reached are "timeout / not reached", not "never assigned"
    crashers = ("e02_a", "e03_a", "e04_a", "e05_g", "e06_a")
    after = _auto_after(spec, "e06_a")
    nb = new("restart_cap.ipynb", Case(lost={**{g: "error" for g in crashers}, **{g: "timeout" for g in after}},
                                       needles={"e06_a": "exited with status 7", after[0]: "too many cells",
                                                after[-1]: "not reached"},
                                       problem="too many cells hung or crashed"))
    for gid in crashers:
        _prepend(nb, gid, "import os\nos._exit(7)")
    write("restart_cap.ipynb", nb)

    # closes every descriptor it can find, the result pipe included
    nb = new("closes_pipe.ipynb", Case(lost={"e11_c": "error"}, needles={"e11_c": "exited with status 3"}))
    _prepend(nb, "e11_c", "import os\nfor fd in range(3, 256):\n    try:\n        os.close(fd)\n"
                          "    except OSError:\n        pass")
    write("closes_pipe.ipynb", nb)

    # an old notebook format
    p = subs / "format3.ipynb"
    p.write_text(nbformat.writes(nbformat.convert(copy.deepcopy(base), 3)), encoding="utf-8")
    os.chmod(p, 0o644)
    cases["format3.ipynb"] = Case(problem="converted to format 4")

    # a dict answer half right: the feedback must not name the missing key
    nb = new("mapping.ipynb", Case(lost={"e09_c": "wrong", "e04_b": "wrong"}))
    _answer(nb, "e09_c").source = 'ANSWER["e09_c"] = {"kind": "cuda"}'
    _answer(nb, "e04_b").source = 'ANSWER["e04_b"] = 1.01'
    write("mapping.ipynb", nb)
    return cases
