"""The Nsight Compute profile of the case study (measure.ncu.case) on the CPU: its CSV parser
puts the measured bytes next to the ledger's, in the launch order the workload fixes."""
from __future__ import annotations

import pytest

from measure.ncu.driver import read_csv

def _fake_ncu_csv(long_form: bool = True) -> str:
    from measure.ncu import case as nc

    grids = {"calibration": 65536, "A": 163840, "B": 20480, "C": 4096}
    dram = {"calibration": (67.2e6, 67.1e6), "A": (48.0e6, 21.7e6), "B": (47.5e6, 21.7e6), "C": (47.1e6, 21.6e6)}
    l2 = {"calibration": 134.4e6, "A": 330e6, "B": 100e6, "C": 72e6}
    ns = {"calibration": 33000, "A": 61000, "B": 21000, "C": 19000}
    head = ['"ID"', '"Process ID"', '"Kernel Name"', '"Block Size"', '"Grid Size"']
    lines = ["==PROF== Connected to process 123", "[ncu_case] program output"]
    if long_form:
        lines.append(",".join(head + ['"Section Name"', '"Metric Name"', '"Metric Unit"', '"Metric Value"']))
        for i, n in enumerate(nc.ORDER):
            vals = {"dram__bytes_read.sum": dram[n][0], "dram__bytes_write.sum": dram[n][1],
                    "gpu__time_duration.sum": ns[n], "lts__t_bytes.sum": l2[n], "launch__grid_size": grids[n]}
            for m, v in vals.items():
                lines.append(f'"{i}","123","main_kernel","(128, 1, 1)","({grids[n]}, 1, 1)","Command line profiler '
                             f'metrics","{m}","byte","{v:,.0f}"')
    else:
        ms = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "launch__grid_size"]
        lines.append(",".join(head + [f'"{m}"' for m in ms]))
        lines.append(",".join(['""'] * len(head) + ['"byte"', '"byte"', '"nsecond"', '""']))
        for i, n in enumerate(nc.ORDER):
            vals = [dram[n][0], dram[n][1], ns[n], grids[n]]
            lines.append(f'"{i}","123","main_kernel","(128, 1, 1)","({grids[n]}, 1, 1)",'
                         + ",".join(f'"{v:.0f}"' for v in vals))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("long_form", [True, False])
def test_ncu_parser_puts_measured_bytes_next_to_the_ledger(long_form):
    from measure.ncu import case as nc

    s = nc.summarize(read_csv(_fake_ncu_csv(long_form), nc.METRICS), {"device": "fake"})
    a, c = s["designs"]["A"], s["designs"]["C"]
    assert a["dram_mb"] == pytest.approx(69.7) and a["ledger_mb"] == pytest.approx(315.228160)
    assert a["measured_over_ledger"] == pytest.approx(69.7 / 315.22816)
    assert c["measured_over_ideal"] == pytest.approx(68.7 / 67.76, rel=1e-3)
    assert a["time_us"] == pytest.approx(61.0) and s["time_ratio_A_over_C"] == pytest.approx(61 / 19)
    assert s["calibration"]["expected_mb_each_way"] == pytest.approx(67.108864)
    if long_form:
        assert a["l2_over_ledger"] == pytest.approx(330 / 315.22816)


def test_ncu_parser_rejects_a_mixed_up_order():
    from measure.ncu import case as nc

    ks = read_csv(_fake_ncu_csv(), nc.METRICS)
    ks[1], ks[3] = ks[3], ks[1]
    with pytest.raises(ValueError, match="order"):
        nc.summarize(ks)
    with pytest.raises(ValueError, match="expected 4"):
        nc.summarize(ks[:3])
    with pytest.raises(ValueError, match="header"):
        read_csv("no csv here")


def test_ncu_command_profiles_only_the_marked_range():
    from measure.ncu import case as nc

    from measure.ncu.driver import ncu_command

    cmd = ncu_command("ncu", "log.csv", nc.METRICS, "measure.ncu.case")
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--print-units") + 1] == "base"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert {"dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"} <= set(metrics)
    assert cmd[-2:] == ["measure.ncu.case", "--child"]


def test_ncu_parse_mode_writes_the_results_json(tmp_path, capsys):
    import json

    from measure.ncu import case as nc

    csv_path = tmp_path / "ncu_case.csv"
    csv_path.write_text(_fake_ncu_csv())
    assert nc.main(["--parse", str(csv_path), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "ncu_case.json").read_text())
    assert set(data["designs"]) == {"A", "B", "C"} and data["provenance"]["parsed_from"].endswith("ncu_case.csv")
    assert "design A: DRAM 69.70 MB" in capsys.readouterr().out
    from coursebook.ncu import design_rows

    rows = design_rows(data, {})
    assert rows[0]["dram_mb"] == pytest.approx(69.7) and rows[2]["ledger_mb"] == pytest.approx(69.861376)
