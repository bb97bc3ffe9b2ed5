"""The kernel labs inside the grader's isolation: grader programs run by the sandbox
(Sandbox.run_program), the GPU lock the parent hands over, the nbgrader partial credit of
kernel parts, and the rerun key that remembers whether a record was graded on a GPU."""

import json
import os
import threading
import time
from pathlib import Path

import pytest

from autograder.kernelgrade import pipeline as KP
from autograder.parts import Verdict
from autograder.sandbox import IsolationError, Limits, Sandbox, TRUSTED_UID

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox("auto", jobs=1) as sb:
        yield sb


def test_only_the_graders_own_programs_run_and_only_with_listed_packages(sandbox):
    with pytest.raises(IsolationError, match="not a file"):
        sandbox.run_program("autograder/no_such.py", [], {}, Limits())
    with pytest.raises(IsolationError, match="labs"):
        sandbox.run_program("autograder/kernelgrade/worker.py", ["elaborate"], {}, Limits(), packages=("labs",))
    with pytest.raises(IsolationError, match="not a file of the packages"):
        sandbox.run_program("kernels/primer.py", [], {}, Limits(), packages=("autograder", "ledger"))


def _elaborate(sandbox, cell: str, timeout: float, call_timeout: float = 30):
    job = {"parts": [{"gid": "k", "kind": "cuda", "cell": cell,
                      "calls": [{"label": "one", "kwargs": {"N": 64, "dtype": "float16"}}]}],
           "setup": "import tilelang\nimport tilelang.language as T\nTARGET = {'kind': 'cuda', 'arch': 'sm_90a'}",
           "call_timeout": call_timeout}
    lim = Limits(cell_timeout=timeout, notebook_timeout=timeout, cpu_s=timeout, memory_mb=16384, scratch_mb=64,
                 nproc=256, nofile=1024)
    return sandbox.run_program(KP.WORKER, ["elaborate"], job, lim, packages=KP.ELAB_PACKAGES, files=KP.ELAB_FILES)


def test_the_elaboration_runs_confined_and_sends_tir_back_as_data(sandbox):
    pytest.importorskip("tilelang")
    cell = ("import os\n"
            "@tilelang.jit(target=TARGET)\n"
            "def f(N, dtype):\n"
            "    leaks = []\n"
            "    for path in ('/etc/hostname', " + repr(str(ROOT / 'labs')) + ", "
            + repr(str(ROOT / 'autograder' / 'kernelgrade' / 'tasks.py')) + ", "
            + repr(str(ROOT / 'autograder' / 'parts.py')) + "):\n"
            "        try:\n"
            "            import autograder.kernelgrade.tasks as _t\n"  # not importable: a narrowed copy
            "            leaks.append(_t.__file__)\n"
            "        except ImportError:\n"
            "            pass\n"
            "        try:\n"
            "            leaks.append(os.listdir(path) if os.path.isdir(path) else open(path).read())\n"
            "        except OSError:\n"
            "            pass\n"
            "    assert not leaks, leaks\n"
            "    @T.prim_func\n"
            "    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):\n"
            "        with T.Kernel(1, threads=64) as bx:\n"
            "            for i in T.Parallel(64):\n"
            "                C[i] = A[i] + B[i]\n"
            "    return main\n"
            "ANSWER['k'] = f\n")
    res = _elaborate(sandbox, cell, 120)
    assert res.state == "done", res.output_tail
    hello = next(e for e in res.events if e["event"] == "hello")
    conf = " | ".join(hello["confinement"])
    assert "landlock" in conf and "seccomp: no new processes" in conf and "audit hook" in conf
    assert res.isolation in ("bwrap", "uid", "process") and (res.isolation != "process" or os.geteuid() != 0)
    tir = next(e for e in res.events if e["event"] == "tir")
    from autograder.kernelgrade import tirsafe

    assert tir["gid"] == "k" and type(tirsafe.load(tir["json"])).__name__ == "PrimFunc"
    assert not [e for e in res.events if e["event"] == "error"], res.events


def test_a_program_that_outlives_its_deadline_is_killed(sandbox):
    pytest.importorskip("tilelang")
    t0 = time.monotonic()
    res = _elaborate(sandbox, "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass",
                     timeout=4, call_timeout=600)
    # the set-up imports tilelang (2-3 s here), then the loop spins until the watchdog ends it; on a
    # loaded machine the watchdog may end it during the import, which is the same kill
    assert res.state == "timeout" and time.monotonic() - t0 < 40


def test_the_gpu_lock_lets_one_submission_at_a_time_and_moves_the_deadline(tmp_path):
    order = []
    a, b = KP.GpuGrant(tmp_path, build_s=10, gpu_s=20), KP.GpuGrant(tmp_path, build_s=10, gpu_s=20)
    act = a({"event": "gpu_wait"})
    assert act["reply"] == b"go\n" and act["deadline"] > time.monotonic() + 19
    assert b({"event": "start", "gid": "k", "phase": "build"})["deadline"] < time.monotonic() + 11

    def second():
        b({"event": "gpu_wait"})
        order.append("b")
        b.release()

    th = threading.Thread(target=second)
    th.start()
    time.sleep(0.5)
    order.append("a")  # b is still waiting for the lock a holds
    a({"event": "gpu_release"})
    th.join(10)
    assert order == ["a", "b"] and a.held_s >= 0.5 and b.wait_s >= 0.4


def test_kernel_parts_give_nbgrader_partial_credit_and_never_unearned_points(monkeypatch):
    """check(..., points=True) is what a kernel part's hidden test ends with: the points earned
    (nbgrader reads a number as partial credit); strict raises for nothing earned -- and for a
    GPU part a machine without a GPU could not grade."""
    import importlib

    C = importlib.import_module("autograder.check")  # the module (autograder.check the name is the function)
    verdicts = {"k1_add_speed": Verdict("partial", "70 % of copy", score=1.0),
                "k1_add": Verdict("skipped", "needs a GPU"), "k1_add_struct": Verdict("right", "ok", score=1.0)}
    monkeypatch.setattr(C, "check_part", lambda answers, part, variant: verdicts[part.grade_id])
    assert C.check({}, "k1_add_speed", "elementwise", strict=True, quiet=True, points=True) == 1.0
    assert C.check({}, "k1_add_struct", "elementwise", strict=True, quiet=True, points=True) == 1.0
    with pytest.raises(AssertionError, match="skipped"):
        C.check({}, "k1_add", "elementwise", strict=True, quiet=True, points=True)
    verdicts["k1_add_speed"] = Verdict("wrong", "too slow")
    with pytest.raises(AssertionError, match="wrong"):
        C.check({}, "k1_add_speed", "elementwise", strict=True, quiet=True, points=True)


def test_the_hidden_tests_of_kernel_parts_end_with_their_points():
    for lab in ("elementwise", "gemm", "primer"):
        nb = json.loads((ROOT / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        for c in nb["cells"]:
            m = c["metadata"].get("nbgrader", {})
            if m.get("grade") and c["cell_type"] == "code":
                hidden = "".join(c["source"]).split("### BEGIN HIDDEN TESTS\n")[1].split("\n")[0]
                kernel = m["grade_id"].startswith(("k", "a")) and m["grade_id"][1].isdigit()
                assert ("points=True" in hidden) == kernel, (lab, m["grade_id"], hidden)


def test_a_record_graded_on_the_cpu_is_regraded_when_a_gpu_appears(tmp_path, monkeypatch, kernel_cache):
    from autograder.grade import grade_batch

    monkeypatch.setenv("KERNELGRADE_GPU", "off")
    sub = tmp_path / "alice.ipynb"
    sub.write_text("{not json", encoding="utf-8")  # cheap to grade: unreadable, still a record with its key
    out = tmp_path / "out"
    s1 = grade_batch([sub], "primer", out, jobs=1, progress=False, variants="common")
    assert s1["graded"] == 1
    s2 = grade_batch([sub], "primer", out, jobs=1, progress=False, variants="common")
    assert s2["graded"] == 0 and s2["skipped"] == ["alice"]
    monkeypatch.setattr(KP, "gpu_state", lambda: "gpu:NVIDIA H200")
    s3 = grade_batch([sub], "primer", out, jobs=1, progress=False, variants="common")
    assert s3["graded"] == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="the cache is handed to another uid only by a root grader")
def test_a_kernel_cache_the_unprivileged_uid_cannot_reach_is_refused_with_a_clear_error(tmp_path, monkeypatch):
    from autograder.grade import GradeError, grade_batch

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("KERNELGRADE_CACHE", str(private / "cache"))
    monkeypatch.setenv("KERNELGRADE_GPU", "off")
    sub = tmp_path / "alice.ipynb"
    sub.write_text("{}", encoding="utf-8")
    with pytest.raises(GradeError, match="KERNELGRADE_CACHE"):
        grade_batch([sub], "primer", tmp_path / "out", jobs=1, progress=False, variants="common")


def test_the_evaluate_sandbox_is_a_separate_trusted_uid():
    assert TRUSTED_UID not in range(TRUSTED_UID - 0xFFFF, TRUSTED_UID - 0xFFFF + 4096)
    pol = KP.eval_policy()
    assert all(not d.startswith("/dev/nvidia") for d in pol.devices) or KP.use_gpu()


class _FakeSandbox:
    """Plays back evaluate workers: the first hangs in the GPU phase of one part, the second
    finishes the rest."""

    def __init__(self, scripts):
        self.scripts, self.jobs = list(scripts), []

    def run_program(self, program, args, job, limits, **kw):
        from autograder.sandbox import ProgramResult

        self.jobs.append([p["gid"] for p in job["parts"]])
        events, state = self.scripts.pop(0)
        for ev in events:
            if kw.get("on_event"):
                kw["on_event"](ev)
        return ProgramResult(events=events, state=state, isolation="fake", exit="killed")


def test_a_hanging_kernel_is_charged_to_itself_and_the_others_are_still_graded(tmp_path):
    hello = {"event": "hello", "gpu": True, "device": "fake"}
    first = [hello, {"event": "start", "gid": "a", "phase": "build"}, {"event": "interface", "gid": "a", "errors": {}},
             {"event": "build", "gid": "a", "errors": {}}, {"event": "start", "gid": "b", "phase": "build"},
             {"event": "build", "gid": "b", "errors": {}}, {"event": "gpu_wait"},
             {"event": "start", "gid": "a", "phase": "gpu"}]
    second = [hello, {"event": "start", "gid": "b", "phase": "build"}, {"event": "gpu_wait"},
              {"event": "start", "gid": "b", "phase": "gpu"}, {"event": "correct", "gid": "b", "shapes": []},
              {"event": "part_done", "gid": "b"}, {"event": "gpu_release", "seconds": 1.0}, {"event": "done"}]
    sb = _FakeSandbox([(first, "timeout"), (second, "done")])
    R = {g: {"elaborate": {"errors": {}, "tirs": ["x"]}, "interface": {}, "build": {}, "structure": None,
             "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": False}
         for g in ("a", "b")}
    grant = KP.GpuGrant(tmp_path, 10, 10)
    detail: dict = {}
    KP._evaluate([{"gid": "a", "task": "ew_add", "tirs": []}, {"gid": "b", "task": "ew_add", "tirs": []}],
                 {}, sb, R, detail, grant, tmp_path)
    assert sb.jobs == [["a", "b"], ["b"]]  # the restart leaves the hanging part out
    assert "did not finish on the GPU" in R["a"]["timeout"] and R["b"]["correct"] == [] and not R["b"]["timeout"]
    assert detail["restarts"] == 1 and grant.f is None  # the lock went with the killed worker


def test_the_recorded_batch_is_one_signed_student_per_submission():
    from autograder.kernelgrade.gpurun import batch_for
    from autograder.labs import load_lab
    from autograder.variants import TAG_KEY, verify_tag

    key = b"k" * 32
    spec, _ = load_lab("primer")
    subs = batch_for("primer", key)
    names = [s["name"] for s in subs]
    assert names[:2] == ["reference", "starter"] and len(set(names)) == len(names)
    for s in subs:
        tag = s["nb"]["metadata"][TAG_KEY]
        assert verify_tag(spec, tag, s["name"], key) == ("ok", "")
        setup = next(c for c in s["nb"]["cells"] if c["metadata"]["nbgrader"]["grade_id"] == "setup")
        assert repr(tag["params"]["K1.N"]) in "".join(setup["source"])  # the student's own P


def test_the_submissions_total_limit_caps_every_deadline_and_ends_the_kernel_phase(tmp_path):
    grant = KP.GpuGrant(tmp_path, build_s=100, gpu_s=100, total_s=5)
    t = time.monotonic()
    assert grant({"event": "start", "gid": "a", "phase": "build"})["deadline"] <= t + 5.5
    assert grant({"event": "gpu_wait"})["deadline"] <= time.monotonic() + 5.5
    grant.release()
    # a build that ran into the total: the part in progress and every part not started are timeouts
    grant = KP.GpuGrant(tmp_path, build_s=100, gpu_s=100, total_s=5)
    hello = {"event": "hello", "gpu": False, "device": None}

    class Spending(_FakeSandbox):  # the worker's build of part a runs into the submission's total
        def run_program(self, *a, **kw):
            grant.t_start -= 10
            return super().run_program(*a, **kw)

    sb = Spending([([hello, {"event": "start", "gid": "a", "phase": "build"}], "timeout")] * 3)
    R = {g: {"elaborate": {"errors": {}, "tirs": ["x"]}, "interface": {}, "build": {}, "structure": None,
             "correct": None, "speed": None, "crash": None, "timeout": None, "ascend": None, "gpu": False}
         for g in ("a", "b")}
    KP._evaluate([{"gid": "a", "task": "ew_add", "tirs": []}, {"gid": "b", "task": "ew_add", "tirs": []}],
                 {}, sb, R, {}, grant, tmp_path)
    assert sb.jobs == [["a", "b"]]  # no fresh worker for b past the total
    for g in ("a", "b"):
        assert KP.TOTAL_LIMIT_MSG in (R[g]["timeout"] or ""), R[g]
    from autograder.kernelgrade import rubric
    from autograder.kernelgrade.tasks import get_task

    assert rubric.score("correct", 3, get_task("ew_add"), R["b"]).status == "timeout"


def test_the_default_kernel_limits_are_tight_enough_to_bound_a_compile_bomb(monkeypatch):
    for k in ("KERNELGRADE_BUILD_TIMEOUT", "KERNELGRADE_SUBMISSION_TIMEOUT", "KERNELGRADE_ELAB_TIMEOUT"):
        monkeypatch.delenv(k, raising=False)
    # the reference solutions build a part in under 20 s on the H200 run's CPUs (labs/results) and in
    # about 6 s on a 2-core CPU machine: 120 s per part, 300 s for the whole kernel phase of a submission
    assert KP.BUILD_TIMEOUT <= 120 and KP.SUBMISSION_TIMEOUT <= 300
    assert KP.elab_limits().notebook_timeout <= KP.SUBMISSION_TIMEOUT
    monkeypatch.setenv("KERNELGRADE_SUBMISSION_TIMEOUT", "40")
    assert KP.elab_limits().notebook_timeout == 40


def test_the_elaboration_sees_a_narrowed_copy_of_the_grader(sandbox, tmp_path):
    """Only the modules the worker imports, copied; the grader's other sources stay out of reach."""
    host = sandbox._package_host("autograder", KP.ELAB_FILES)
    found = sorted(str(p.relative_to(host)) for p in Path(host).rglob("*.py"))
    assert found == ["__init__.py", "kernelgrade/__init__.py", "kernelgrade/confine.py", "kernelgrade/worker.py",
                     "runner.py"]
    assert Path(host, "__init__.py").read_text() == "" and not Path(host).is_relative_to(ROOT)
    with pytest.raises(IsolationError, match="not a file of the package"):
        sandbox.run_program(KP.WORKER, ["elaborate"], {}, Limits(), packages=KP.ELAB_PACKAGES,
                            files={"autograder": ("../labs/pytorch/spec.py",)})
    with pytest.raises(IsolationError, match="not among the files"):
        sandbox.run_program(KP.WORKER, ["elaborate"], {}, Limits(), packages=KP.ELAB_PACKAGES,
                            files={"autograder": ("runner.py",)})
