"""The runner: discovery, recorded-mode rendering, results I/O, and a CPU dry run of
every suite of the elementwise topic (kernels replaced by fakes that check each launch's
arguments against the kernel's PrimFunc signature: count, shapes, dtypes)."""
import json

import pytest
import torch

from kernels.common import validate_tensor
from measure import render, results, runner
from measure.harness import Harness

ELEMENTWISE = ("elementwise", "quant", "norm", "rope", "fused")


def test_discovery_finds_every_suite_and_topics_select():
    names = runner.suite_names()
    for n in ELEMENTWISE + ("pytorch", "gemm.ladder", "case_study", "carver"):
        assert n in names
    assert "common" not in names and "gemm.common" not in names
    assert runner.select(names, topics="elementwise") == list(ELEMENTWISE)  # in the topic's order
    assert runner.select(names, suites="gemm") == [n for n in names if n.startswith("gemm.")]
    assert runner.select(names, suites="norm") == ["norm"]
    # every topic selects something, and the topics together cover every suite
    covered = {n for t in runner.TOPICS for n in runner.select(names, topics=t)}
    assert covered == set(names)
    with pytest.raises(ValueError, match="no suite"):
        runner.select(names, suites="ch13")  # an old chapter id is no suite  # rename_ids: keep
    with pytest.raises(ValueError, match="unknown topic"):
        runner.select(names, topics="ch13")  # rename_ids: keep
    found = runner.discover(topics="elementwise")
    assert sorted(n for n, fn, err in found if fn is not None) == sorted(ELEMENTWISE)


def test_device_slug():
    assert results.device_slug("NVIDIA H200") == "nvidia-h200"
    assert results.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def _fake_results():
    return {
        "schema": 1,
        "provenance": {"device": "NVIDIA H200", "sm_count": 132, "driver": "580.1", "cuda": "13.0",
                       "torch": "2.11.0", "tilelang": "0.1.15", "date": "2026-11-29T16:00:00Z",
                       "command": "python -m measure.runner --topic elementwise"},
        "protocol": {"describe": "warm-up 25 ms, median"},
        "copy_bandwidth_gbps": 4000.0,
        "suites": {"norm": {"status": "ok", "seconds": 12.0, "records": [
            {"kind": "check", "name": "rmsnorm[rows]", "ok": True},
            {"kind": "bench", "name": "rmsnorm[rows] fp16", "ms": 0.08, "gbps": 3500.0, "frac_copy_bw": 0.875,
             "speedup": {"F.rms_norm": 1.5}, "targets": {"frac_copy_bw": {"target": 0.85, "value": 0.875, "met": True},
                                                        "speedup:eager": {"target": 8, "value": 7, "met": False}}},
        ]}},
    }


def test_load_and_render_recorded_results(tmp_path):
    results.write_results(tmp_path / "nvidia-h200.json", _fake_results())
    data = results.load_results("NVIDIA H200", results_dir=tmp_path)
    text = render.render(data, "recorded")
    assert text.startswith("RECORDED results")
    assert "recorded on NVIDIA H200 (132 SMs) 2026-11-29T16:00:00Z" in text
    assert "python -m measure.runner --topic elementwise" in text
    rows = render.table_rows(data)
    assert rows[0]["% copy"] == "87.5" and rows[0]["us"] == "80.0"
    assert rows[0]["targets"] == "missed: speedup:eager"
    assert render.check_summary(data)[0]["checks"] == "1/1"
    assert render.render(data, "live").startswith("LIVE results")
    with pytest.raises(FileNotFoundError, match="nvidia-h200"):
        results.load_results("NVIDIA A100", results_dir=tmp_path)
    with pytest.raises(ValueError, match="needs a device"):
        results.load_results(None, results_dir=tmp_path)


def test_main_without_gpu_shows_recorded_mode(tmp_path, monkeypatch, capsys):
    import measure.results as mr

    monkeypatch.setattr(mr, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(runner, "current_mode", lambda: "recorded")
    assert runner.main([]) == 1  # nothing recorded yet: says so
    assert "no recorded results" in capsys.readouterr().out
    results.write_results(tmp_path / "nvidia-h200.json", _fake_results())
    assert runner.main(["--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "No CUDA GPU here" in out and "RECORDED results" in out and "| suite | kernel |" in out


def test_results_json_is_strict(tmp_path):
    d = _fake_results()
    d["suites"]["norm"]["records"][1]["gbps"] = float("nan")
    results.write_results(tmp_path / "x.json", d)
    text = (tmp_path / "x.json").read_text()
    assert "NaN" not in text and json.loads(text)["suites"]["norm"]["records"][1]["gbps"] is None


# ------------------------------------------------------------------ dry run
class FakeKernel:
    def __init__(self, impl, args, kwargs):
        self.func = impl.get_tir(*args, **kwargs)
        self.calls = 0

    def __call__(self, *vals):
        params = list(self.func.params)
        assert len(vals) == len(params), (len(vals), len(params))
        for p, v in zip(params, vals):
            if p in self.func.buffer_map:
                buf = self.func.buffer_map[p]
                assert isinstance(v, torch.Tensor)
                assert tuple(int(s) for s in buf.shape) == tuple(v.shape), (buf.name, buf.shape, v.shape)
                assert str(buf.dtype) == str(v.dtype).replace("torch.", ""), (buf.name, buf.dtype, v.dtype)
                assert v.is_contiguous()
            else:
                assert isinstance(v, (int, float)), type(v)
        self.calls += 1


@pytest.mark.slow
@pytest.mark.parametrize("family", ELEMENTWISE)
def test_gpu_suite_dry_run_on_cpu(family, monkeypatch):
    import importlib

    from tilelang.jit import JITImpl

    cache = {}

    def fake_call(self, *args, **kwargs):
        key = (id(self), args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = FakeKernel(self, args, kwargs)
        return cache[key]

    monkeypatch.setattr(JITImpl, "__call__", fake_call)
    pre = set()

    def fake_precompile(jobs, num_workers=None):
        for job in jobs:
            kw = job[2] if len(job) > 2 else {}
            job[0].get_tir(*job[1], **kw)  # elaboration checks the argument list
            pre.add((id(job[0]), tuple(job[1]), tuple(sorted(kw.items()))))
        return 0

    import kernels.common

    monkeypatch.setattr(kernels.common, "validate_tensor",
                        lambda *a, device="cuda", **k: validate_tensor(*a, device=None, **k))
    for name in ("elementwise", "quant", "norm", "rope", "fused.launch"):
        mod = importlib.import_module(f"kernels.{name}")
        monkeypatch.setattr(mod, "validate_tensor",
                            lambda *a, device="cuda", **k: validate_tensor(*a, device=None, **k))
    h = Harness("cpu", quick=True, log=None)
    h.time = lambda fn, **kw: (fn(), 1.0)[1]
    h.torch_compile = lambda fn, name="": fn
    h.precompile = fake_precompile
    h.suite = family
    importlib.import_module(f"measure.suites.{family}").gpu_suite(h)
    errors = [r for r in h.records if r["kind"] == "error"]
    assert not errors, errors[0]["traceback"]
    benches = [r for r in h.records if r["kind"] == "bench"]
    checks = [r for r in h.records if r["kind"] == "check"]
    assert benches and checks
    assert all(k.calls for k in cache.values())
    missing = set(cache) - pre
    assert not missing, f"{len(missing)} kernels used but not precompiled: {sorted(str(m[1]) for m in missing)}"
    for r in benches:
        assert r["bytes"] and r["ledger_source"].startswith("ledger."), r["name"]


def test_live_run_records_every_suite_and_survives_a_failing_one(tmp_path, monkeypatch, capsys):
    """run_live on CPU: a fake device, three fake suites (ok, raising, failing check)."""
    import measure.harness as harness_mod

    def ok_suite(h):
        x = h.rand(100, torch.float32)
        h.check("good", x.clone(), x.double())
        h.bench("fast", lambda: x + 1, bytes=800, ledger_source="ledger.test")

    def raising_suite(h):
        raise RuntimeError("kernel exploded")

    def failing_suite(h):
        h.check("bad", torch.zeros(4), torch.ones(4, dtype=torch.float64))

    class CpuHarness(harness_mod.Harness):
        def __init__(self, device="cuda", **kw):
            super().__init__("cpu", log=None, **{k: v for k, v in kw.items() if k != "log"})

    monkeypatch.setattr(harness_mod, "Harness", CpuHarness)
    monkeypatch.setattr(runner, "provenance", lambda argv=None: {"device": "Fake GPU", "sm_count": 1,
                                                                 "date": "2026-01-01T00:00:00Z",
                                                                 "command": "python -m measure.runner"})
    monkeypatch.setattr(runner, "discover", lambda suites=None, topics=None: [
        ("a", ok_suite, None), ("b", raising_suite, None), ("c", failing_suite, None),
        ("d", None, ImportError("no module named acl"))])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a, **k: None)
    out = tmp_path / "fake-gpu.json"
    data = runner.run_live(None, out, quick=True, argv=[])
    saved = json.loads(out.read_text())
    assert saved["provenance"]["device"] == "Fake GPU" and saved["copy_bandwidth_gbps"] > 0
    st = {k: v["status"] for k, v in saved["suites"].items()}
    assert st == {"a": "ok", "b": "error", "c": "check-failed", "d": "import-error"}
    err = [r for r in saved["suites"]["b"]["records"] if r["kind"] == "error"][0]
    assert "kernel exploded" in err["traceback"]
    assert render.table_rows(data)[0]["kernel"] == "fast"
    # every suite says what code it ran
    for suite in saved["suites"].values():
        assert set(suite["git"]) == {"commit", "dirty"} and len(suite["kernels_sha256"]) == 64


def test_an_explicit_commit_names_the_code_even_inside_another_checkout(monkeypatch):
    """A copied tree can sit inside some other git checkout (the GPU machine's copy of main): the
    commit the copy was made from, when given, is what the records name."""
    from measure import runner

    monkeypatch.setenv("COURSE_GIT_COMMIT", "0123abc")
    monkeypatch.setenv("COURSE_GIT_DIRTY", "0")
    assert runner.git_state() == {"commit": "0123abc", "dirty": False}
    monkeypatch.setenv("COURSE_GIT_DIRTY", "1")
    assert runner.git_state()["dirty"] is True
    monkeypatch.delenv("COURSE_GIT_COMMIT")
    assert runner.git_state()["commit"] != "0123abc"
