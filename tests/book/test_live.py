"""Live or recorded (coursebook.live): LIVE decides, a topic runs once per build and code, the
live suites replace the recorded ones and every table and header says which numbers are live."""
from __future__ import annotations

import json

import pytest

from coursebook import live


@pytest.fixture(autouse=True)
def _no_current(monkeypatch):
    monkeypatch.setattr(live, "_CURRENT", None)


def test_mode_follows_live_and_the_gpu(monkeypatch):
    monkeypatch.setattr(live, "_cuda_available", lambda: False)
    assert live.mode({}) == "recorded"
    assert live.mode({"LIVE": "0"}) == "recorded"
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        live.mode({"LIVE": "1"})
    with pytest.raises(ValueError, match="LIVE="):
        live.mode({"LIVE": "maybe"})
    monkeypatch.setattr(live, "_cuda_available", lambda: True)
    assert live.mode({}) == "live"
    assert live.mode({"LIVE": "0"}) == "recorded", "make book LIVE=0 forces recorded on a GPU machine"


def _fake_live(quick=False):
    return {"schema": 1, "quick": quick, "copy_bandwidth_gbps": 4300.0,
            "provenance": {"device": "NVIDIA H200", "sm_count": 132, "date": "2026-12-02T10:00:00Z",
                           "driver": "580", "cuda": "13.0", "torch": "2.11", "tilelang": "0.1.15"},
            "suites": {"pytorch": {"status": "ok", "date": "2026-12-02T10:00:00Z", "records": [
                {"kind": "bench", "name": "pytorch.sincos.tilelang", "ms": 0.030, "gbps": 2236.0,
                 "frac_copy_bw": 0.52, "ledger_bytes": 67108864, "lower_bound_ms": 0.0149, "shape": [4096, 4096],
                 "copy_gbps": 4300.0, "variant": "TileLang"}]}}}


def test_live_run_once_per_code_and_laid_over_the_recorded(monkeypatch, tmp_path):
    calls = []

    def fake_run(topic, out, quick):
        calls.append((topic, quick))
        data = _fake_live(quick)
        out.write_text(json.dumps(data), encoding="utf-8")
        return data

    monkeypatch.setattr(live, "_cuda_available", lambda: True)
    monkeypatch.setattr(live, "_run_topic", fake_run)
    env = {"COURSE_LIVE_DIR": str(tmp_path)}
    a = live.results_for("pytorch", env=env)
    b = live.results_for("pytorch", env=env)
    assert calls == [("pytorch", False)], "every page of a chapter reads the same live run"
    assert a.mode == b.mode == "live" and a.live_suites == ["pytorch"]
    suites = a.results["suites"]
    assert suites["pytorch"]["live"] and suites["pytorch"]["records"][0]["ms"] == 0.030
    assert "gemm.ladder" in suites and not suites["gemm.ladder"].get("live"), "other topics stay recorded"
    head = live.header(a)
    assert head.startswith("现场实测（live）") and "NVIDIA H200" in head and "4300" in head
    with pytest.raises(ValueError, match="unknown topic"):
        live.results_for("nope", env=env)


def test_recorded_mode_reads_the_recorded_file(monkeypatch):
    monkeypatch.setattr(live, "_cuda_available", lambda: True)
    src = live.results_for("pytorch", env={"LIVE": "0"})
    assert src.mode == "recorded" and src.live_suites == []
    assert live.header(src).startswith("记录结果（recorded）")


def test_tables_and_glue_say_live(monkeypatch, tmp_path):
    from coursebook import measured, records

    glued = {}
    monkeypatch.setattr("coursebook.glue.glue", lambda k, v, display=True: glued.__setitem__(k, repr(v)))
    monkeypatch.setattr(live, "_CURRENT", live.overlay(records.load(), _fake_live(), "pytorch"))
    md = records.measured_table("pytorch.sincos")
    assert "本次构建现场实测（live）于 NVIDIA H200" in md and "30.0" in md
    monkeypatch.setattr(live, "use", lambda topic, device="nvidia-h200": live._CURRENT)
    vals = measured.glue_measured(topic="pytorch")
    assert vals["rec.mode"] == "live" and vals["rec.pytorch-sincos-tilelang.us"] == "30.0"
    assert glued["rec.header"].startswith("现场实测（live）")
