"""The sandbox's interface: which ledger it imports, what a lab may add (read-only paths,
device nodes), ids from file names, IPython cells, and what decides a rerun."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.grade import GradeError, grade_batch, student_id, student_ids, versions
from autograder.ipython_cells import to_python
from autograder.sandbox import IsolationError, Limits, Sandbox, SandboxPolicy, run_cells

ROOT = Path(__file__).resolve().parents[2]
LIM = Limits(cell_timeout=10, notebook_timeout=60)
MODES = ["auto"] + (["uid"] if os.geteuid() == 0 else [])


def _cell(src):
    return [{"index": 0, "source": src}]


@pytest.fixture()
def other_ledger():
    """A second checkout's ledger (differs in one constant), somewhere the sandbox user can reach."""
    d = Path(tempfile.mkdtemp(prefix="ag-ledger-"))
    os.chmod(d, 0o755)
    shutil.copytree(ROOT / "ledger", d / "ledger", ignore=shutil.ignore_patterns("__pycache__"))
    with open(d / "ledger" / "__init__.py", "a", encoding="utf-8") as f:
        f.write('\nCHECKOUT_MARK = "second checkout"\n')
    for p in (d / "ledger").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    yield d / "ledger"
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("isolation", MODES)
def test_the_sandbox_imports_the_graders_ledger(other_ledger, isolation):
    """Grading from a second checkout: the sandbox sees that checkout's ledger, not the venv's."""
    src = "import ledger\nprint(getattr(ledger, 'CHECKOUT_MARK', 'venv ledger'))"
    r = run_cells(_cell(src), {}, LIM, isolation=isolation, ledger_dir=str(other_ledger))
    assert r.cells[0]["status"] == "ok", r.cells[0]
    assert "second checkout" in r.cells[0]["output"]
    assert os.path.realpath(r.ledger) in ("/course/ledger", str(other_ledger.resolve()))
    r = run_cells(_cell(src), {}, LIM, isolation=isolation)
    assert "venv ledger" in r.cells[0]["output"]
    assert versions("pytorch", str(other_ledger))["ledger"] != versions("pytorch")["ledger"]


def _bwrap_or_skip():
    try:
        Sandbox("bwrap").close()
    except IsolationError as exc:
        pytest.skip(f"bubblewrap is not usable here: {exc}")


def test_a_lab_can_add_read_only_paths_and_device_nodes(tmp_path):
    _bwrap_or_skip()
    extra = Path(tempfile.mkdtemp(prefix="ag-extra-"))
    try:
        os.chmod(extra, 0o755)
        (extra / "data.txt").write_text("shared data", encoding="utf-8")
        os.chmod(extra / "data.txt", 0o644)
        src = (f"import os\nprint(open({str(extra / 'data.txt')!r}).read())\n"
               "print('tty1', os.path.exists('/dev/tty1'), os.path.exists('/dev/tty19'), os.environ['LAB_HOME'])\n"
               f"open({str(extra / 'new.txt')!r}, 'w')")
        policy = SandboxPolicy(read_paths=(str(extra),), devices=("/dev/tty1*",), env=(("LAB_HOME", "/opt/lab"),))
        with Sandbox("bwrap", policy) as sb:
            assert "/dev/tty1" in sb.devices and "/dev/tty19" in sb.devices
            r = sb.run(_cell(src), {}, LIM)
        out = r.cells[0]["output"]
        assert "shared data" in out and "tty1 True True /opt/lab" in out
        assert r.cells[0]["status"] == "error"  # ... and read-only
        with Sandbox("bwrap") as sb:  # without the policy: no such device in the sandbox
            r = sb.run(_cell("import os\nprint([os.path.exists(d) for d in ('/dev/tty1', '/dev/kvm', '/dev/loop0', "
                             "'/dev/sda', '/dev/mem', '/dev/null')])"), {}, LIM)
        assert r.cells[0]["output"].strip() == "[False, False, False, False, False, True]", r.cells[0]
    finally:
        shutil.rmtree(extra, ignore_errors=True)


def test_unknown_or_impossible_isolation_is_a_clear_error(monkeypatch):
    with pytest.raises(IsolationError, match="unknown isolation"):
        Sandbox("chroot")
    monkeypatch.setenv("AUTOGRADER_BWRAP", "none")
    with pytest.raises(IsolationError, match="bubblewrap is not installed"):
        Sandbox("bwrap")
    if os.geteuid() == 0:
        with pytest.raises(IsolationError, match="refusing to run student code as root"):
            Sandbox("process")
        with Sandbox("auto") as sb:  # no bubblewrap, root: the uid fallback, and the log says why
            assert sb.mode == "uid" and "bubblewrap is not installed" in sb.describe()


def test_the_isolation_is_named_by_the_parent_not_by_the_student():
    src = ("import os, sys\nfd = int(sys.argv[1])  # the result pipe\n"
           "os.write(fd, b'{\"event\": \"hello\", \"who\": \"root\", \"confinement\": \"none\"}\\n')\n"
           "ANSWER['x'] = 1")
    r = run_cells(_cell(src), {}, LIM)
    assert r.cells[0]["status"] == "ok" and r.answers == {"x": 1}
    assert r.isolation in ("bwrap", "uid", "process") and r.confinement != "none" and r.who != "root"


# ----------------------------------------------------------------------------- ids
def test_student_ids_are_deterministic_and_collisions_name_both_files(tmp_path):
    assert student_id("alice smith.ipynb") == ("alice_smith", None)
    assert student_id("张三.ipynb") == ("张三", None)
    assert student_id("e\u0301mile.ipynb")[0] == "\u00e9mile"  # NFC: a name zipped on macOS
    assert student_id(".hidden.ipynb")[0] == "_hidden"
    sid, note = student_id(os.fsdecode("张三".encode("gbk") + b".ipynb"))
    assert sid == "%D5%C5%C8%FD" and "GB18030" in note and "张三" in note
    long = student_id("x" * 300 + ".ipynb")[0]
    assert len(long) <= 120 and long == student_id("x" * 300 + ".ipynb")[0]
    for a, b in (("alice smith.ipynb", "alice_smith.ipynb"), ("Bob.ipynb", "bob.ipynb")):
        with pytest.raises(GradeError) as err:
            student_ids([tmp_path / a, tmp_path / "sub" / b])
        assert a in str(err.value) and b in str(err.value)


def test_a_collision_stops_the_cli_before_grading(tmp_path, lab):
    _, source = lab
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(source, subs / "alice smith.ipynb")
    shutil.copy(source, subs / "alice_smith.ipynb")
    r = subprocess.run([sys.executable, "-m", "autograder", "grade", "pytorch", str(subs), "--out",
                        str(tmp_path / "out"), "--common"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "alice smith.ipynb" in r.stderr and "alice_smith.ipynb" in r.stderr
    assert not (tmp_path / "out" / "records").exists() or not list((tmp_path / "out" / "records").iterdir())


# ----------------------------------------------------------------------------- IPython
@pytest.mark.parametrize("src,needle", [
    ("%time x = 1", "run_line_magic('time', 'x = 1')"),
    ("%%time\nx = 2\n%time y = 3", "run_cell_magic('time', ''"),
    ("files = !ls", "getoutput('ls')"),
    ("!pip install ledger", "system('pip install ledger')"),
    ("len?", "run_line_magic('pinfo', 'len')"),
])
def test_ipython_syntax_is_transformed_as_ipython_does(src, needle):
    assert needle in to_python(src)


@pytest.mark.parametrize("src", ["a = 5 % 3\nb = a != 2", "s = '%d!' % 3", "x = {'a': 1}  # 100%"])
def test_plain_python_is_left_alone(src):
    assert to_python(src) == src


def test_magics_run_and_shell_lines_are_named():
    cells = [to_python(s) for s in (
        "%%time\nANSWER['t'] = sum(range(10))",
        "%timeit -n 5 -r 2 ANSWER.setdefault('ti', 1)",
        "%%capture cap\nprint('hidden')\nANSWER['c'] = 1",
        "display({'d': 1})\n%matplotlib inline\n%config InlineBackend.figure_format = 'svg'",
        "!ls /\nANSWER['after_shell'] = True",
        "out = !ls",
        "%%bash\necho hi",
        "%load_ext autoreload\n%autoreload 2\n%who",
        "%reset -f",
        "%%writefile notes.txt\nhello\n",
        "ANSWER['file'] = open('notes.txt').read()",
    )]
    r = run_cells([{"index": i, "source": s} for i, s in enumerate(cells)], {}, LIM)
    assert r.answers == {"t": 45, "ti": 1, "c": 1, "after_shell": True, "file": "hello\n"}, r.cells
    st = {i: c["status"] for i, c in r.cells.items()}
    assert [st[i] for i in (0, 1, 2, 3, 4, 7, 9, 10)] == ["ok"] * 8
    assert "CPU times" in r.cells[0]["output"] and "hidden" not in r.cells[2]["output"]
    assert "not allowed in graded cells" in r.cells[4]["notes"][0] and "!ls /" in r.cells[4]["notes"][0]
    assert st[5] == "error" and "not allowed in graded cells" in r.cells[5]["error"]
    assert "%%bash" in r.cells[6]["notes"][0]
    assert st[8] == "error" and "%reset is not allowed in graded cells" in r.cells[8]["error"]


# ----------------------------------------------------------------------------- reruns
def test_rerun_regrades_when_grader_lab_or_ledger_change(tmp_path, lab, limits, monkeypatch):
    import autograder.grade as g

    _, source = lab
    sub = tmp_path / "s.ipynb"
    shutil.copy(source, sub)
    out = tmp_path / "out"
    kw = dict(jobs=1, limits=limits, progress=False, variants="common")
    assert grade_batch([sub], "pytorch", out, **kw)["graded"] == 1
    assert grade_batch([sub], "pytorch", out, **kw)["graded"] == 0  # unchanged: skipped
    assert grade_batch([sub], "pytorch", out, force=True, **kw)["graded"] == 1
    real = g.versions
    for part in ("grader", "lab", "ledger"):
        monkeypatch.setattr(g, "versions", lambda lab, ledger_dir=None, part=part: {**real(lab), part: "changed"})
        assert grade_batch([sub], "pytorch", out, **kw)["graded"] == 1, part
        monkeypatch.setattr(g, "versions", real)
        assert grade_batch([sub], "pytorch", out, **kw)["graded"] == 1, part  # and back
    rec = json.loads((out / "records" / "s.json").read_text(encoding="utf-8"))
    assert set(rec["versions"]) == {"grader", "lab", "ledger"}
    nb = nbformat.read(str(sub), as_version=4)
    nb.cells[2].source += "\n"
    nbformat.write(nb, str(sub))
    assert grade_batch([sub], "pytorch", out, **kw)["graded"] == 1  # the submission changed
