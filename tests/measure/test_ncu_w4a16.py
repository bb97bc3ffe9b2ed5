"""measure.ncu.w4a16 on the CPU: the ncu command it runs, the launches it profiles, and the
summary a (fabricated) ncu CSV gives."""
import json
import subprocess

import pytest

from measure.ncu import driver
from measure.ncu import w4a16 as nw


def _row(i, kname, metric, unit, value, block="(256, 1, 1)", grid="(64, 8, 1)"):
    return ",".join(f'"{x}"' for x in (i, "7", "python3.12", "127.0.0.1", kname, "1", "7", block, grid, "0", "9.0",
                                       "Command line profiler metrics", metric, unit, value))


HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _kernel_metrics(t_ns, read_b, stalls, lsu=(0, 0), l2=(1000, 250)):
    m = {"gpu__time_duration.sum": ("ns", f"{t_ns:,}"), "gpc__cycles_elapsed.max": ("cycle", f"{t_ns * 2:,}"),
         "sm__cycles_elapsed.avg.per_second": ("hz", "1,755,000,000"),
         "dram__bytes_read.sum": ("byte", f"{read_b:,}"), "dram__bytes_write.sum": ("byte", "32,768"),
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "61.5"),
         "lts__t_sector_hit_rate.pct": ("%", "12.5"),
         "lts__t_sectors_srcunit_tex_op_read.sum": ("sector", f"{l2[0]:,}"),
         "lts__t_requests_srcunit_tex_op_read.sum": ("request", f"{l2[1]:,}"),
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("sector", f"{lsu[0]:,}"),
         "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("request", f"{lsu[1]:,}"),
         "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "23.4"),
         "sm__maximum_warps_per_active_cycle_pct": ("%", "25"),
         "launch__grid_size": ("", "512"), "launch__block_size": ("", "256"),
         "launch__registers_per_thread": ("register/thread", "128")}
    for r in nw.STALLS:
        m[nw.stall_metric(r)] = ("", str(stalls.get(r, 0.0)))
    return m


def fabricated_csv(split_cublas_m1=True):
    """Every launch of PROFILED; cuBLAS at M = 1 as a GEMM plus a split-K reduction."""
    lines = ["==PROF== Connected to process 7 (/usr/bin/python3.12)", HEADER]
    i = 0
    for name, M, lab, probe in nw.PROFILED:
        if lab == "cuBLAS":
            kernels = [("nvjet_hsh_64x8_sm90", 30_000, 134_000_000)]
            if M == 1 and split_cublas_m1:
                kernels.append(("splitKreduce_kernel", 2_000, 500_000))
        else:
            kernels = [("main_kernel", 22_000 if "loadonly" not in name else 20_000, 34_700_000)]
        for kname, t, rd in kernels:
            stalls = {"long_scoreboard": 6.0, "barrier": 2.0, "wait": 1.0, "selected": 1.0, "misc": 0.5}
            lsu = (4_000_000, 1_000_000) if lab.startswith("dec") else (4_096, 4_096)
            for metric, (unit, val) in _kernel_metrics(t, rd, stalls, lsu=lsu).items():
                lines.append(_row(i, kname, metric, unit, val))
            i += 1
    return "\n".join(lines) + "\n"


def test_profiled_launches_separate_the_cublas_calls_and_match_the_suite():
    labs = [lab for _, _, lab, _ in nw.PROFILED]
    # a cuBLAS call (possibly several kernels) is never next to another one, so grouping by
    # the TileLang kernel name is unambiguous
    assert all(not (a == b == "cuBLAS") for a, b in zip(labs, labs[1:]))
    assert len(set(nw.ORDER)) == len(nw.ORDER)
    thunks = nw.build_thunks()  # raises when a label left the suite's tables
    assert set(thunks) == {n for n, _, lab, _ in nw.PROFILED if lab != "cuBLAS"}
    probes = {(lab, probe, M) for _, M, lab, probe in nw.PROFILED if probe}
    assert {("m16_k512_s4_k", "nomma", 16), ("m16_k512_s4_k", "noexpand", 16),
            ("dec_r64_kw1_sk8_d4", "loadonly", 1)} <= probes
    assert {M for _, M, _, _ in nw.PROFILED} == {1, 16}


def test_a_label_missing_from_the_suite_is_an_error(monkeypatch):
    monkeypatch.setattr(nw, "PROFILED", nw.PROFILED + (("ghost", 1, "m16_k999_s9_k", ""),))
    with pytest.raises(KeyError, match="m16_k999_s9_k"):
        nw.build_thunks()


def test_the_ncu_command_and_the_written_summary(tmp_path, monkeypatch, capsys):
    """main() runs ncu once: clocks left alone, profiling only inside the child's range (one
    launch of each PROFILED entry), the metric list of the module, the child as the target;
    the CSV it leaves is summarized into one row per launch."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        if cmd[-1] == "--version":
            return subprocess.CompletedProcess(cmd, 0, "NVIDIA (R) Nsight Compute\nVersion 2025.3.1.0\n", "")
        log = cmd[cmd.index("--log-file") + 1]
        with open(log, "w") as f:
            f.write(fabricated_csv())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(driver, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(driver.subprocess, "run", fake_run)
    monkeypatch.setenv("COURSE_GIT_COMMIT", "abc123")
    monkeypatch.setenv("COURSE_GIT_DIRTY", "0")
    assert nw.main(["--out", str(tmp_path)]) == 0
    prof = [c for c in calls if c[-1] != "--version"]
    assert len(prof) == 1  # no fallback retry when the first tier worked
    cmd = prof[0]
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(nw.METRICS)
    assert cmd[-3:] == ["-m", "measure.ncu.w4a16", "--child"]
    assert "--cache-control" not in cmd  # ncu's default: caches flushed before every kernel
    data = json.loads((tmp_path / "ncu_w4a16.json").read_text())
    assert (tmp_path / "ncu_w4a16.csv").exists()
    assert list(data["kernels"]) == list(nw.ORDER)
    prov = data["provenance"]
    assert prov["clock_control"] == "none" and prov["git"] == {"commit": "abc123", "dirty": False}
    assert "ncu --clock-control none" in prov["command"]
    out = capsys.readouterr().out
    assert "decode best M=1" in out and "long_scoreboard" in out


def test_summary_keys_and_values_from_a_fabricated_csv():
    s = nw.summarize(driver.read_csv(fabricated_csv(), nw.METRICS), {"device": "test"})
    ks = s["kernels"]
    cub = ks["cuBLAS fp16 M=1"]
    assert cub["kernel_names"] == ["nvjet_hsh_64x8_sm90", "splitKreduce_kernel"]
    assert cub["duration_us"] == pytest.approx(32.0)  # both kernels of the call
    assert cub["dram_read_mb"] == pytest.approx(134.5)
    assert cub["elapsed_cycles"] == pytest.approx(64_000)
    assert ks["cuBLAS fp16 M=16"]["kernel_names"] == ["nvjet_hsh_64x8_sm90"]
    dec = ks["decode best M=1"]
    assert dec["duration_us"] == pytest.approx(22.0) and dec["config"] == "dec_r64_kw1_sk8_d4"
    assert dec["global_load_sectors_per_request"] == pytest.approx(4.0)
    assert dec["l2_sectors_per_read_request"] == pytest.approx(4.0)
    assert dec["dram_read_tb_per_s"] == pytest.approx(34.7e6 / 22e-6 / 1e12)
    assert dec["dram_throughput_pct_of_peak"] == 61.5 and dec["l2_hit_rate_pct"] == 12.5
    assert dec["achieved_occupancy_pct"] == 23.4 and dec["theoretical_occupancy_pct"] == 25
    # stalls: share of all warp-state cycles; 'selected' (issuing) is not a stall
    total = 6.0 + 2.0 + 1.0 + 1.0 + 0.5
    assert [t["reason"] for t in dec["top_stalls"]] == ["long_scoreboard", "barrier", "wait"]
    assert dec["top_stalls"][0]["pct"] == pytest.approx(100 * 6.0 / total)
    assert dec["issue_pct"] == pytest.approx(100 * 1.0 / total)
    # the floors are the ledger's: int4 bytes for W4A16, fp16 bytes for cuBLAS
    from ledger.w4a16 import fp16_cost, roofline, w4a16_cost

    assert dec["floor_us"] == pytest.approx(roofline(w4a16_cost(1, 8192, 8192, 128)).bound_s * 1e6)
    assert cub["floor_us"] == pytest.approx(roofline(fp16_cost(1, 8192, 8192)).bound_s * 1e6)
    assert dec["fraction_of_floor"] == pytest.approx(dec["floor_us"] / 22.0)
    assert ks["wgmma nomma M=16"]["probe"] == "nomma" and ks["wgmma winner M=1"]["probe"] is None
    assert set(s["legend"]) <= set(dec)


def test_a_csv_with_a_missing_or_extra_kernel_is_rejected():
    text = fabricated_csv()
    kernels = driver.read_csv(text, nw.METRICS)
    with pytest.raises(ValueError, match="left over"):
        nw.summarize(kernels + [dict(kernels[-1], id=999)])
    # drop the TileLang kernel after the first cuBLAS call: the next entry finds none
    broken = [k for k in kernels if k["id"] != 2]
    with pytest.raises(ValueError, match="expected a TileLang kernel"):
        nw.group_launches(broken)


def test_the_committed_h200_profile_parses_into_the_committed_summary():
    """measure/results/ncu/ncu_w4a16.csv (the H200 run) read back gives the committed JSON's rows, and
    the numbers the GEMM page quotes are what the counters say."""
    import json
    from pathlib import Path

    from measure.ncu import driver
    from measure.ncu import w4a16 as nw

    root = Path(driver.RESULTS)
    committed = json.loads((root / "ncu_w4a16.json").read_text(encoding="utf-8"))
    rows = driver.read_csv((root / "ncu_w4a16.csv").read_text(encoding="utf-8"), nw.METRICS)
    again = nw.summarize(rows, committed["provenance"])

    def rounded(x):  # the last bits of a float sum differ between interpreters
        if isinstance(x, float):
            return round(x, 9)
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        return [rounded(v) for v in x] if isinstance(x, list) else x

    assert rounded(again["kernels"]) == rounded(committed["kernels"])
    k = committed["kernels"]
    # every W4A16 kernel reads its ~34.6 MB of int4 weights from DRAM once; cuBLAS reads 4x that in fp16
    assert all(34 < r["dram_read_mb"] < 36 for n, r in k.items() if not n.startswith("cuBLAS"))
    assert k["cuBLAS fp16 M=16"]["dram_read_mb"] > 4 * 33
