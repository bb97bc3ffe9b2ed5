"""measure.ncu.gemm on the CPU: the committed Nsight Compute log parses into the four named
8192^3 GEMMs whose counters chapter 14 quotes."""
import json
from pathlib import Path

import pytest

from measure.ncu import gemm as ng

CSV = Path(ng.RESULTS) / "ncu_gemm.csv"


def test_committed_log_parses_into_the_four_gemms(tmp_path, capsys):
    assert ng.main(["--parse", str(CSV), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "ncu_gemm.json").read_text())
    ks = data["kernels"]
    assert list(ks) == list(ng.ORDER)
    assert ks["cuBLAS"]["kernel"].startswith("nvjet_sm90") and ks["automatic"]["kernel"] == "main_kernel"
    for k in ks.values():
        # 2 * 8192^3 flops in about 1.3-1.8 ms, at a clock the H200 can run
        assert 1200 < k["time_us"] < 1900 and 1000 < k["sm_mhz"] <= 1980
        # every kernel reads A and B (2 x 134 MB) from DRAM at least once
        assert k["dram_read_mb"] > 2 * 134
        assert 0 < k["l2_read_mb"] < k["l2_mb"]
    # the observation the chapter states: the multicast kernel's L2 read counter is not lower
    assert ks["hand-written multicast"]["l2_read_mb"] > ks["hand-written"]["l2_read_mb"]
    assert ks["hand-written multicast"]["dram_read_mb"] < ks["hand-written"]["dram_read_mb"]
    assert data["configs"]["hand-written multicast"].endswith("_pers_c2")
    assert "L2 read" in capsys.readouterr().out


def test_summary_rejects_a_wrong_kernel_count():
    with pytest.raises(ValueError, match=f"expected {len(ng.ORDER)} profiled kernels"):
        ng.summarize([{"metrics": {}}])


def test_the_profiled_range_holds_one_launch_of_each_kernel_in_order(monkeypatch):
    """warm_up / profile_once (shared by the three ncu modules): warm-up launches fall outside the
    profiled range, inside it each kernel runs once, in ORDER -- the order summarize() names them."""
    import torch

    from measure.ncu import driver as ncu_case

    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: events.append("sync"))
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: events.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: events.append("stop"))
    launches = {n: (lambda n=n: events.append(n)) for n in reversed(ng.ORDER)}
    ncu_case.warm_up(launches, rounds=2)
    ncu_case.profile_once(launches, ng.ORDER)
    inside = events[events.index("start") + 1:events.index("stop")]
    assert [e for e in inside if e != "sync"] == list(ng.ORDER)
    assert events[:events.index("start")].count(ng.ORDER[0]) == 2 and events[-1] == "stop"
