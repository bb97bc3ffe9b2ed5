"""ledger.primer: memory scopes of the H200 and the primer kernels' costs, launches and tiles."""
import math

import pytest

from ledger import primer as LP
from ledger.figures import collect
from ledger.machines import get_machine


def test_clock_is_the_one_implied_by_the_calibrated_fp32_rate():
    """One SM clock in the book: the shared-memory rate and the instruction-issue bound both use the
    clock the calibrated fp32 rate implies, not the datasheet's boost clock."""
    from ledger import issue

    c, spec = get_machine("h200-calibrated"), get_machine("h200-spec")
    clock = LP.sm_clock_hz()
    assert math.isclose(clock * c.resource("sms") * 128 * 2, c.roof("cuda_core.fp32"))
    assert clock == issue.sm_clock_hz() and 1.5e9 < clock < 2.5e9
    assert clock < LP.sm_clock_hz("h200-spec") and math.isclose(
        LP.sm_clock_hz("h200-spec") * spec.resource("sms") * 256, spec.compute["cuda_core.fp32"].theoretical)
    assert collect()["primer.mem.clock_ghz"].value == round(clock / 1e9, 2)


def test_memory_scopes_capacities_and_rates():
    scopes = {s.name: s for s in LP.memory_scopes()}
    m = get_machine("h200-spec")
    c = get_machine("h200-calibrated")
    reg, sh = scopes["registers"], scopes["shared memory"]
    assert reg.per_sm_bytes == m.resource("regs_per_sm") * 4 and reg.total_bytes == reg.per_sm_bytes * m.resource("sms")
    assert sh.per_sm_bytes == m.resource("smem_per_sm_kb") * 1024
    assert math.isclose(sh.rate_bytes_s, m.resource("sms") * 32 * 4 * LP.sm_clock_hz("h200-calibrated"))
    assert scopes["HBM (global)"].rate_bytes_s == c.memory_rate("hbm")
    assert scopes["HBM, pure copy"].rate_bytes_s == c.memory_rate("hbm.copy")
    assert sh.rate_bytes_s > scopes["HBM (global)"].rate_bytes_s  # on-chip delivers more bytes per second
    assert [s.visible_to for s in LP.memory_scopes()] == ["one thread", "one block", "every block", "every block"]


def test_kernel_costs():
    n = 1 << 20
    assert LP.copy_cost(n).bytes == 2 * n * 2 and LP.copy_cost(n).flops == 0
    assert LP.scale_cost(n, "float32").bytes == 2 * n * 4 and LP.scale_cost(n).flops == n
    r = LP.row_sum_cost(16, 32)
    assert r.bytes == 16 * 32 * 2 + 16 * 4 and r.flops == 16 * 31
    assert LP.row_sum_cost(16, 32, "float32").bytes == 16 * 32 * 4 + 16 * 4
    for bad in (lambda: LP.copy_cost(0), lambda: LP.row_sum_cost(-1, 4), lambda: LP.scale_cost(8, "fp13")):
        with pytest.raises(ValueError):
            bad()


def test_row_sum_tile_budget():
    t = LP.row_sum_tile(64, 128, 128, 2)
    assert t.stage_bytes == 64 * 128 * 2 and t.smem_bytes == 2 * t.stage_bytes
    assert t.values_per_thread == 64
    assert t.blocks_by_smem == (228 * 1024) // t.smem_bytes
    assert LP.row_sum_tile(64, 128, 128, 2, "float32").smem_bytes == 2 * t.smem_bytes
    with pytest.raises(ValueError):
        LP.row_sum_tile(0, 128)


def test_launch_shape_and_ragged_tail():
    s = LP.launch_shape(1_000_003, 256)
    assert s.blocks == 3907 and s.idle_threads_last_block == 3907 * 256 - 1_000_003
    big = LP.launch_shape(1 << 28, 256)
    assert big.blocks == (1 << 20) and big.resident_blocks_per_sm == 8
    assert math.isclose(big.waves, (1 << 20) / (8 * 132))
    v = LP.launch_shape(1 << 20, 256, 8)
    assert v.blocks == (1 << 20) // 2048 and v.idle_threads_last_block == 0


def test_grid_fill_and_split():
    assert LP.grid_fill(4) == 4 / 132 and LP.grid_fill(1000) == 1.0
    s = LP.split_for(256, 64, 262144 // 128)
    assert s == 32 and 4 * s >= 0.9 * 132 and (262144 // 128) % s == 0
    assert LP.split_for(16384, 64, 32) == 1  # enough rows: no split
    assert LP.split_for(64, 64, 3) == 1  # the split must divide the tiles


def test_figures_are_registered_under_primer_and_agree_with_the_functions():
    figs = {k: f for k, f in collect().items() if k.startswith("primer.")}
    assert figs and all(f.chapter == "primer" for f in figs.values())
    assert figs["primer.mem.sms"].value == 132
    assert figs["primer.rowsum.smem_kib"].value == 32
    assert figs["primer.long.split"].value == LP.split_for(*LP.LONG_ROWS_SHAPE[:1], 64, LP.LONG_ROWS_SHAPE[1] // 128)
    assert figs["primer.copy.blocks"].text == f"{(1 << 28) // 256:,}"
    t = LP.row_sum_cost(*LP.ROW_SUM_SHAPE).bytes / get_machine("h200-calibrated").memory_rate("hbm") * 1e6
    assert math.isclose(figs["primer.rowsum.t_us"].value, round(t, 1))
    assert figs["primer.mem.smem_over_hbm"].value > 1


def test_cli_prints_the_tables(capsys):
    assert LP.main([]) == 0
    out = capsys.readouterr().out
    assert "shared memory" in out and "memory-bound" in out
