"""measure.ncu.rows on the CPU: the committed Nsight Compute log parses into the figures
chapter 13 quotes (issue-bound vs memory-bound row kernels)."""
import json
from pathlib import Path

import pytest

from measure.ncu import rows as nr

CSV = Path(nr.RESULTS) / "ncu_rows.csv"


def test_committed_log_parses_into_named_kernels(tmp_path, capsys):
    assert nr.main(["--parse", str(CSV), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "ncu_rows.json").read_text())
    ks = data["kernels"]
    assert list(ks) == list(nr.ORDER)
    for k in ks.values():
        # every profiled kernel reads x (16384 x 4096 bf16 = 134.2 MB) once from DRAM
        assert 0.95 * 134.2 < k["dram_read_mb"] < 1.1 * 134.2
        assert k["time_us"] > 0 and 0 < k["issue_pct_of_peak"] <= 100
    # the finding the chapter states: the original fused body is issue-bound (issue slots
    # near full, DRAM well below), the lean body executes fewer instructions per element
    f, lean, vec = ks["fused fp8"], ks["fused fp8 lean"], ks["fused fp8 vec"]
    assert f["issue_pct_of_peak"] > 80 and f["dram_pct_of_peak"] < 70
    assert lean["instructions_per_element"] < 0.8 * f["instructions_per_element"]
    assert ks["rmsnorm rows"]["issue_pct_of_peak"] < 40  # RMSNorm alone is not issue-bound
    # the vec schedule: about as few instructions per element as the quantizer alone, well
    # clear of the issue limit, DRAM busier than any other fused body, and the fastest of them
    assert vec["instructions_per_element"] < 1.05 * ks["quant_fp8"]["instructions_per_element"]
    assert vec["issue_pct_of_peak"] < 65 and vec["dram_pct_of_peak"] > lean["dram_pct_of_peak"] + 10
    assert vec["time_us"] == min(k["time_us"] for n, k in ks.items() if n.startswith("fused"))
    assert "instr/elem" in capsys.readouterr().out


def test_summary_rejects_a_wrong_kernel_count():
    with pytest.raises(ValueError, match=f"expected {len(nr.ORDER)} profiled kernels"):
        nr.summarize([{"metrics": {}}])
