"""The decode W4A16 kernel's ledger entries (ledger/w4a16.py): its shared memory, and the bytes it
moves on chip besides the DRAM floor (activations re-read from L2 by every weight tile, split-K
partials handed over through distributed shared memory), which leave the floor unchanged."""

import pytest

from ledger import w4a16 as lw


def test_shared_memory_is_the_padded_activation_slice_plus_the_partials():
    # 16 activation rows x (8192/4 + 32) fp16, plus one 128 x 17 fp32 partial tile
    assert lw.dec_smem_bytes(8192, nt=2, rows=128, wk=1, split=4) == 16 * 2080 * 2 + 128 * 17 * 4 == 75264
    # M <= 8: one n8 tile of activations; two K warps: two partial tiles
    assert lw.dec_smem_bytes(8192, nt=1, rows=64, wk=2, split=4) == 8 * 2080 * 2 + 2 * 64 * 9 * 4
    # twice the split, half the activation slice
    a, b = (lw.dec_smem_bytes(8192, nt=2, rows=128, wk=1, split=s) for s in (4, 8))
    assert a - b == 16 * 1024 * 2
    with pytest.raises(ValueError):
        lw.dec_smem_bytes(8192, nt=0, rows=128, wk=1, split=4)


def test_on_chip_bytes_of_the_decode_kernel():
    m, n, k = 16, 8192, 8192
    b = lw.dec_onchip_bytes(m, n, k, rows=128, split=4)
    # 64 weight tiles each read the 256 KB activation matrix from L2
    assert b["activations_l2"] == 64 * m * k * 2 == 16 * 2**20
    # 3 of the 4 blocks of a tile hand over a 16 x 128 fp32 partial
    assert b["partials_dsmem"] == 64 * 3 * m * 128 * 4
    # halving the tile doubles the L2 re-reads; no split, no hand-over
    assert lw.dec_onchip_bytes(m, n, k, rows=64, split=4)["activations_l2"] == 2 * b["activations_l2"]
    assert lw.dec_onchip_bytes(m, n, k, rows=128, split=1)["partials_dsmem"] == 0
    # the DRAM floor counts the weights once: the partials stay a small fraction of it
    w4 = lw.w4a16_cost(m, n, k)
    assert b["partials_dsmem"] < 0.1 * w4.bytes
    with pytest.raises(ValueError):
        lw.dec_onchip_bytes(0, n, k, rows=128, split=4)


def test_littles_law_plan_of_the_design_point():
    d = lw.DEC_DESIGN
    p = lw.dec_plan(d["m"], d["n"], d["k"], rows=d["rows"], wk=d["wk"], split=d["split"], depth=d["depth"],
                    regs=d["regs"], machine="h200-calibrated")
    # 64 tiles of 128 rows x 4 K blocks; 256 threads x 128 registers: two blocks in the 64 K registers
    assert p["blocks"] == 256 and p["blocks_per_sm"] == 2 and p["warps_per_sm"] == 16
    # every warp: 4 groups x 16 rows x 64 packed bytes in flight
    assert p["inflight_bytes_per_sm"] == 16 * 4 * 16 * 64
    mach = lw.get_machine("h200-calibrated")
    assert p["latency_covered_s"] == pytest.approx(p["inflight_bytes_per_sm"] * 132 / mach.memory_rate(None))
    # a loaded DRAM round trip is around a microsecond: the design covers more than that
    assert p["latency_covered_s"] > 1e-6
    # twice the registers a thread: one block per SM, half the bytes in flight
    q = lw.dec_plan(d["m"], d["n"], d["k"], rows=d["rows"], wk=d["wk"], split=d["split"], depth=d["depth"],
                    regs=256, machine="h200-calibrated")
    assert q["blocks_per_sm"] == 1 and q["inflight_bytes_per_sm"] == p["inflight_bytes_per_sm"] // 2
    # fewer blocks than SMs: the SM count, not the registers, caps the blocks an SM gets
    r = lw.dec_plan(16, 8192, 8192, rows=128, wk=1, split=1, depth=4, machine="h200-calibrated")
    assert r["blocks"] == 64 and r["blocks_per_sm"] == 1


def test_the_kernel_caps_registers_as_the_plan_assumes():
    pytest.importorskip("tilelang")
    from kernels.gemm import w4a16_dec as dec

    d = lw.DEC_DESIGN
    assert dec.MAX_REGS == d["regs"]
    p = lw.dec_plan(d["m"], d["n"], d["k"], rows=d["rows"], wk=d["wk"], split=d["split"], depth=d["depth"],
                    regs=d["regs"], machine="h200-calibrated")
    assert dec.min_blocks(d["rows"], d["wk"]) == p["blocks_per_sm"]
    assert dec.grid(d["n"], rows=d["rows"], split=d["split"]) == (d["split"], p["blocks"] // d["split"])
