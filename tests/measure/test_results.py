"""Recorded results: the committed merged file is the merge of the manifest's inputs, names of
older runs are mapped when read, the repeats a page quotes are declared and are repeats."""
from __future__ import annotations

import json

import pytest

from measure import results as R


def test_committed_merged_file_is_the_merge_of_its_declared_inputs():
    entry = R.manifest()["nvidia-h200"]
    files = R.merge_inputs("nvidia-h200")
    assert [str(p.relative_to(R.RESULTS_DIR)) for p in files] == entry["inputs"]
    merged = R.merge_results(files, entry["inputs"])
    committed = (R.RESULTS_DIR / entry["merged"]).read_text(encoding="utf-8")
    assert R.dumps(merged) == committed, "re-merge: python -m measure.runner --merge --device nvidia-h200"
    data = json.loads(committed)
    # the merged file names its inputs (with their bytes' hash) and, per suite, the run it came from
    assert [i["file"] for i in data["inputs"]] == entry["inputs"]
    assert all(s["run"] in entry["inputs"] for s in data["suites"].values())


def test_every_raw_run_is_an_input_or_declared_archive():
    entry = R.manifest()["nvidia-h200"]
    raw = {f"raw/{p.name}" for p in R.RAW_DIR.glob("*.json")}
    assert set(entry["inputs"]) | set(entry.get("archive", [])) == raw


def test_declared_repeats_are_repeats_of_one_experiment():
    """The tuned GEMM search's repeats: every declared run searched the same candidates the same
    number of rounds as the merged file's run, and the merged file's own run is among them."""
    def search_key(res):
        out, rounds = set(), 0
        for r in res["suites"].get("gemm.ladder", {}).get("records", []):
            if r.get("kind") == "search" and r["name"].startswith("tuned rung4"):
                out |= set(r.get("ms") or {}) | set(r.get("errors") or {})
                rounds = max(rounds, int(r.get("rounds", 1)))
        return frozenset(out), rounds

    merged = R.load_results("nvidia-h200")
    runs = R.repeat_runs("nvidia-h200", "gemm.ladder tuned search")
    assert len(runs) >= 2
    assert all(search_key(res) == search_key(merged) for _, res in runs)
    assert merged["suites"]["gemm.ladder"]["run"].endswith(runs[-1][0])


def test_old_names_are_mapped_when_read(tmp_path):
    old = {"schema": 1, "provenance": {"device": "X"}, "suites": {"ch02_measure": {"records": [  # rename_ids: keep
        {"kind": "bench", "suite": "ch02_measure", "name": "ch02.sincos.eager", "ms": 1.0}]}}}  # rename_ids: keep
    p = tmp_path / "x.run1.json"
    p.write_text(json.dumps(old))
    data = R.read_results(p)
    assert list(data["suites"]) == ["pytorch"]
    rec = data["suites"]["pytorch"]["records"][0]
    assert rec["suite"] == "pytorch" and rec["name"] == "pytorch.sincos.eager"
    assert json.loads(p.read_text()) == old  # the file stays as recorded


def _run(device="X", quick=False, suites=("a",), date="2026-01-01T00:00:00Z", protocol=None):
    return {"schema": 1, "quick": quick, "copy_bandwidth_gbps": 4000.0, "protocol": protocol or {"describe": "p"},
            "provenance": {"device": device, "date": date, "command": "c", "torch": "2"},
            "suites": {s: {"status": "ok", "date": date, "records": []} for s in suites}}


def test_merge_keeps_the_later_suite_and_refuses_what_does_not_belong(tmp_path):
    a, b = tmp_path / "x.run1.json", tmp_path / "x.run2.json"
    a.write_text(json.dumps(_run(suites=("s", "t"))))
    b.write_text(json.dumps(_run(suites=("t",), date="2026-01-02T00:00:00Z")))
    m = R.merge_results([a, b])
    assert m["suites"]["s"]["run"] == "x.run1.json" and m["suites"]["t"]["run"] == "x.run2.json"
    assert m["provenance"]["first_date"] < m["provenance"]["last_date"] and "date" not in m["provenance"]
    for bad, match in ((_run(device="Y"), "device"), (_run(quick=True), "quick"),
                       (_run(protocol={"describe": "other"}), "protocol")):
        c = tmp_path / "x.run3.json"
        c.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=match):
            R.merge_results([a, c])


def test_a_protocol_from_before_flush_mode_reads_as_the_write_flush(tmp_path):
    a, b, c = tmp_path / "x.run1.json", tmp_path / "x.run2.json", tmp_path / "x.run3.json"
    a.write_text(json.dumps(_run(suites=("s",))))
    b.write_text(json.dumps(_run(suites=("t",), protocol={"describe": "p", "flush_mode": "write"})))
    c.write_text(json.dumps(_run(suites=("t",), protocol={"describe": "p", "flush_mode": "clean"})))
    assert set(R.merge_results([a, b])["suites"]) == {"s", "t"}
    with pytest.raises(ValueError, match="protocol"):
        R.merge_results([a, c])


def test_a_live_run_writes_the_next_raw_file_never_the_merged_one(tmp_path):
    (tmp_path / "raw").mkdir()
    assert R.next_raw_path("NVIDIA H200", tmp_path).name == "nvidia-h200.run1.json"
    for n in (1, 2, 10):
        (tmp_path / "raw" / f"nvidia-h200.run{n}.json").write_text("{}")
    assert R.next_raw_path("NVIDIA H200", tmp_path).name == "nvidia-h200.run11.json"


def test_loading_needs_a_named_device(tmp_path):
    with pytest.raises(ValueError, match="needs a device"):
        R.load_results("")
    with pytest.raises(FileNotFoundError, match="have"):
        R.load_results("nvidia-b200")


def test_a_suite_names_the_run_that_measured_it():
    """In the committed merge every suite's run is one of the inputs, and ``run_of`` returns that
    run's own provenance (not the summary's)."""
    data = R.load_results("nvidia-h200")
    files = {i["file"] for i in data["inputs"]}
    for name, suite in data["suites"].items():
        assert suite["run"] in files, name
        run = R.run_of(data, name)
        assert run["file"] == suite["run"] and run.get("command"), name
    single = {"provenance": {"device": "X", "command": "c"}, "suites": {"s": {"records": []}}}
    assert R.run_of(single, "s") == single["provenance"]
