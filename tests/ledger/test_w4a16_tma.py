"""The TMA decode kernel's ledger entries (ledger/w4a16.py): its shared memory by hand count, how many
blocks an SM holds (shared memory and registers), and Little's law for its weight ring."""
import pytest

from ledger import w4a16 as lw


def test_smem_is_ring_plus_activation_slice_plus_scales_plus_partials():
    # 4 slots x 1 plane x 128 rows x 64 B; 16 rows x (2048 + 32) halves; 128 x 16 scales; 128 x 17 floats
    assert lw.tma_smem_bytes(8192, nt=2, rows=128, split=4, stages=4, gps=1) == (
        4 * 128 * 64 + 16 * 2080 * 2 + 128 * 16 * 2 + 128 * 17 * 4)
    # M <= 8: half the activation rows, 9 floats a partial row
    assert lw.tma_smem_bytes(8192, nt=1, rows=128, split=4, stages=4, gps=1) == (
        4 * 128 * 64 + 8 * 2080 * 2 + 128 * 16 * 2 + 128 * 9 * 4)
    with pytest.raises(ValueError):
        lw.tma_smem_bytes(8192, nt=0, rows=128, split=4, stages=4, gps=1)


def test_resident_blocks_follow_shared_memory_and_registers():
    # 112 KB + 3 KB twice fits the 228 KB of an H200 SM; 114 KB does not
    assert lw.tma_resident(112128, 288) == 2
    assert lw.tma_resident(114 * 1024, 288) == 1
    # 544 threads x 96 registers twice exceeds the 64 K registers of an SM
    assert lw.tma_resident(50000, 544) == 1
    # never more than 2 (the kernel's launch bounds), never fewer than 1
    assert lw.tma_resident(10000, 64) == 2 and lw.tma_resident(300000, 288) == 1


def test_plan_of_the_suite_points():
    p = lw.tma_plan(16, 8192, 8192, rows=128, split=4, stages=4, gps=1)
    assert (p["blocks"], p["blocks_per_sm"]) == (256, 2) and p["waves"] < 1
    assert p["inflight_bytes_per_sm"] == 2 * 4 * 128 * 64
    # M = 16 with a 6-slot ring: 128 KB a block, one per SM, two waves of 256 blocks; M = 1 fits two
    assert lw.tma_plan(16, 8192, 8192, rows=128, split=4, stages=6, gps=1)["waves"] > 1.5
    assert lw.tma_plan(1, 8192, 8192, rows=128, split=4, stages=6, gps=1)["blocks_per_sm"] == 2
    # the ring's bytes on all SMs cover about 2 us of DRAM latency at the H200's bandwidth (> 1 us loaded latency)
    assert p["latency_covered_s"] > 1e-6
