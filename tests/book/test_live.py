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


# ------------------------------------------------------------------ the committed proof, told to the reader
def _committed():
    got = live.notebook_record("elementwise")
    if got is None:
        pytest.skip("no live-notebook record of the elementwise chapter committed")
    return got


def test_public_command_leaves_out_the_machines_paths():
    cmd = "python -m tools.live_notebook run --topic elementwise --out /root/out/live --timeout 300"
    assert live.public_command(cmd) == \
        "python -m tools.live_notebook run --topic elementwise --out <输出目录> --timeout 300"
    assert live.public_command("x --out=/tmp/a --cache /home/u/c") == "x --out <输出目录> --cache <路径>"


def test_the_note_is_generated_from_the_committed_record():
    from coursebook import leaks

    rec, raw = _committed()
    note = live.notebook_proof_markdown("elementwise")
    head = note.split("\n")[0]
    v = rec["versions"]
    for word in (rec["device"], rec["date"][:10], rec["date"][11:16], v["torch"], v["tilelang"], v["cuda"], v["driver"]):
        assert word in head, word
    assert "`python -m tools.live_notebook run --topic elementwise --out <输出目录>" in head
    assert not leaks.find_leaks(note, kinds=("path", "key", "test", "draft")), leaks.find_leaks(note)
    assert "/root" not in note and "measure" not in note
    # the counts are the record's
    assert f"共粘贴 {sum(p['glued'] for p in rec['pages'])} 个值" in head
    assert f"全部 {len(rec['pages'])} 个页面" in head and "没有报错" in head
    gpu = [p for p in rec["pages"] if any(k.startswith("rec.") for k in p["values"])]
    assert gpu and all(p["header"].startswith("现场实测（live）") for p in gpu)
    assert f"显示 GPU 数字的 {len(gpu)} 个页面，页首的来源说明全部写着“现场实测（live）”" in head
    assert "、".join(sorted(raw["suites"])) in head
    # one row per page, titled as the reader sees it, and one per timed kernel of the live suites
    rows = [ln for ln in note.splitlines() if ln.startswith("| ") and not ln.startswith("| 页面") and not ln.startswith("| 测量项")]
    from measure.results import records

    assert len(rows) == len(rec["pages"]) + len(records(raw, "bench"))
    assert "| 逐元素、归一化与 RoPE |" in note and "ch_elementwise" not in note


def test_the_live_times_beside_the_recorded_ones_are_the_pages_values():
    rec, raw = _committed()
    from coursebook.measured import slug

    proof = live.notebook_proof("elementwise")
    shown = {k: v for p in rec["pages"] for k, v in p["values"].items()}
    assert proof["kernels"] and all(k["live_us"] is not None and k["recorded_us"] for k in proof["kernels"])
    for k in proof["kernels"]:
        assert f"{k['live_us']:.1f}" == shown[f"rec.{slug(k['name'])}.us"]
    assert proof["live_values"] == sum(1 for key in shown if any(key.startswith(f"rec.{slug(k['name'])}.")
                                                                 for k in proof["kernels"]))


def test_the_note_follows_a_record_that_is_not_all_live(tmp_path):
    rec, raw = _committed()
    rec = json.loads(json.dumps(rec))
    gpu = [p for p in rec["pages"] if any(k.startswith("rec.") for k in p["values"])]
    gpu[0]["header"] = "记录结果（recorded）：…"
    gpu[1]["errors"] = ["CellExecutionError: boom"]
    (tmp_path / "nvidia-h200.elementwise.notebook.json").write_text(json.dumps(rec), encoding="utf-8")
    note = live.notebook_proof_markdown("elementwise", folder=tmp_path)
    assert f"只有 {len(gpu) - 1} 个写着" in note and "1 个报错" in note
    assert "未标注现场实测" in note
    assert "| 测量项 |" not in note, "without the suites' raw results there is no comparison"
    assert live.notebook_proof_markdown("gemm", folder=tmp_path).startswith("本章还没有")
    assert live.notebook_proof_sentence("gemm", folder=tmp_path).startswith("本章还没有")


def test_the_chapter_and_the_appendix_point_to_the_note():
    from pathlib import Path

    book = Path(live.ROOT) / "book"
    measured = (book / "elementwise" / "measured.md").read_text(encoding="utf-8")
    appendix = (book / "appendix" / "records" / "elementwise.md").read_text(encoding="utf-8")
    assert "{glue:text}`derived.elementwise.live_proof`" in measured and "records-elementwise-live>`" in measured
    assert "(records-elementwise-live)=" in appendix and 'live.notebook_proof_markdown("elementwise")' in appendix
    _committed()
    s = live.notebook_proof_sentence("elementwise")
    assert s.startswith("本章在 NVIDIA H200 上作为 Jupyter 笔记本整章现场执行过一次")
    assert "页面" not in s and "标注为现场实测" not in s, "the page count belongs to the records appendix, not under a recorded header"


def test_the_recorded_header_names_the_copy_bandwidth_of_each_run():
    """Several runs: the header gives the range over the runs and says each share divides by its own
    run's bandwidth; one run: that run's figure."""
    from coursebook.measured import provenance_line

    prov = {"device": "NVIDIA H200", "sm_count": 132}
    many = {"provenance": prov, "runs": [{"date": "2026-11-29", "copy_gbps": 4257.2}, {"date": "2026-12-05", "copy_gbps": 4285.1}]}
    line = provenance_line(many)
    assert "同一次运行" not in line and "4257–4285 GB/s 之间" in line and "它所在那次运行" in line
    same = {"provenance": prov, "runs": [{"date": "2026-11-29", "copy_gbps": 4257.2}, {"date": "2026-12-05", "copy_gbps": 4257.3}]}
    assert "都是 4257 GB/s" in provenance_line(same)
    one = {"provenance": prov, "runs": [{"date": "2026-11-29", "copy_gbps": 4257.2}]}
    assert "同一次运行实测的显存拷贝带宽 4257 GB/s" in provenance_line(one)
