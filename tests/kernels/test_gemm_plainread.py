"""kernels.gemm.plainread: the plain reader suite ``gemm.flush`` times beside the M = 16 W4A16 kernel (what any
kernel that reads the int4 weights and scales once pays).  CPU: the configuration and input checks name their
constraint, the checksum reference, the ledger's byte count, the suite's thunk; compiled for sm_90a (slow): a ring
of one-dimensional bulk copies of one slot each, used in turn, whose consumer adds every word."""

import pytest

torch = pytest.importorskip("torch")

from kernels.gemm import plainread  # noqa: E402
from ledger.w4a16 import w4a16_cost, weight_bytes  # noqa: E402


def test_weight_bytes_are_the_ledgers_cost_without_activations_and_output():
    for m in (1, 16, 64):
        assert weight_bytes(8192, 8192) == w4a16_cost(m, 8192, 8192).bytes - 2 * (m * 8192 + m * 8192)
    assert weight_bytes(8192, 8192) == 8192 * 8192 // 2 + 8192 * (8192 // 128) * 2
    assert weight_bytes(4096, 1024, 64) == 4096 * 1024 // 2 + 4096 * (1024 // 64) * 2


def test_h200_shape_splits_over_its_sms():
    rows = plainread.read_rows(weight_bytes(8192, 8192))
    assert rows == 270336
    assert plainread.check_read_config(rows, 132) == 32  # 2048 rows a block, 64-row slots


@pytest.mark.parametrize("args,msg", [
    ((270336, 128, 256, 4), "not a whole number of 256-row slots"),
    ((270336, 100), "do not split evenly over 100 blocks"),
    ((270336, 132, 256, 8), "exceed 200 KB"),
    ((270336, 132, 64, 1), "stages >= 2"),
])
def test_config_errors_name_the_constraint(args, msg):
    with pytest.raises(ValueError, match=msg):
        plainread.check_read_config(*args)


def test_read_rows_refuses_a_partial_row():
    with pytest.raises(ValueError, match="multiple of 128 bytes"):
        plainread.read_rows(130)


def test_checksum_wraps_modulo_2_32():
    x = torch.tensor([[2**31 - 1] * 32, [5] * 32], dtype=torch.int32)
    want = (32 * (2**31 - 1) + 32 * 5) % 2**32
    assert plainread.read_checksum(x) == want
    parts = torch.tensor([[2**31 - 1, 2**31 - 1], [2, 0]], dtype=torch.int32)
    assert plainread.read_checksum(parts) == (2 * (2**31 - 1) + 2) % 2**32


def test_input_checks_name_dtype_shape_and_device():
    x, out = torch.zeros((64, 32), dtype=torch.int32), torch.zeros((1, 64), dtype=torch.int32)
    with pytest.raises(ValueError, match="x must be torch.int32"):
        plainread.check_read_inputs(x.float(), out, 1)
    with pytest.raises(ValueError, match=r"out must have shape \(2, 64\)"):
        plainread.check_read_inputs(x, out, 2)
    with pytest.raises(ValueError, match="must live on a CUDA device"):
        plainread.check_read_inputs(x, out, 1)


def test_flush_suite_builds_the_reader_at_the_bound_shape():
    from measure.suites.gemm import flush

    th = flush.build_thunks(132)
    assert "plain read" in th and "w4a16 load path" in th


@pytest.mark.slow
def test_reader_is_a_bulk_copy_ring_whose_consumer_adds_every_word():
    src = plainread.plain_read(270336, 132).get_kernel_source()
    assert "tl::tma_load" in src and "arrive_and_expect_tx(8192)" in src  # one 8 KB slot a copy
    assert "(it & 7)" in src  # eight slots in turn
    assert "< 32; ++it" in src  # 32 slots a block
    assert src.count("v__1.") >= 4  # the consumer's vector adds of the slot's words


def test_hot_buffer_is_ratio_times_a_blocks_share_and_must_fit():
    assert plainread.check_hot_config(270336, 132, 4, 64, 4) == 8192  # 1 MB: the activations at M = 64
    assert plainread.check_hot_config(270336, 132, 1) == 2048
    with pytest.raises(ValueError, match="4 x 8192 B of hot rows exceed 200 KB"):
        plainread.check_hot_config(270336, 132, 4, 64, 8)
    with pytest.raises(ValueError, match="ratio must be a positive int"):
        plainread.check_hot_config(270336, 132, 0)


def test_hot_checksum_counts_the_hot_buffer_once_a_block():
    x = torch.tensor([[3] * 32], dtype=torch.int32)
    hot = torch.tensor([[2**31 - 1] * 32] * 2, dtype=torch.int32)
    assert plainread.hot_checksum(x, hot, 5) == (96 + 5 * 64 * (2**31 - 1)) % 2**32


@pytest.mark.slow
def test_hot_reader_carries_the_hot_slots_in_the_same_ring():
    src = plainread.plain_read_hot(270336, 132, 4, 64, 4).get_kernel_source()
    assert "arrive_and_expect_tx(8192)" in src and "arrive_and_expect_tx(32768)" in src  # 8 KB + 4 x 8 KB a slot
    assert "(&(H[(it * 8192)]))" in src  # every block walks the whole hot buffer
    assert "(it & 3)" in src and "< 32; ++it" in src


@pytest.mark.parametrize("args,msg", [
    ((50, 8192, 8192), "multiple of 16 up to 256"),
    ((64, 8100, 8192), "multiple of 64"),
    ((64, 8192, 8192, 128, 256, 4, 96), "rows must be 64 or 128"),
    ((64, 8192, 8192, 128, 256, 4, 64, 3), "ksplit must be 1, 2 or 4"),
    ((64, 8192, 8192, 2048, 256, 4, 64, 4), "whole multiple of 2 x ksplit"),
    ((64, 8192, 8192, 128, 192), r"multiple of block_K \(128 or 256"),
    ((64, 8192, 8192, 128, 256, 8), "exceed 200 KB"),
    ((64, 8192, 8192, 128, 256, 1), "stages must be >= 2"),
])
def test_tiles_config_errors_name_the_constraint(args, msg):
    with pytest.raises(ValueError, match=msg):
        plainread.check_tiles_config(*args)


def test_tiles_config_counts_the_kernels_stages():
    assert plainread.check_tiles_config(64, 8192, 8192) == 32
    assert plainread.check_tiles_config(64, 8192, 8192, 128, 128, 8) == 64
    assert plainread.check_tiles_config(64, 8192, 8192, 128, 128, 8, 128, 2) == 32  # half of K a block


def test_tiles_checksum_counts_the_activations_once_a_block():
    wq = torch.ones((128, 4), dtype=torch.int32)  # two blocks of 64 rows
    a = torch.full((16, 2), 7, dtype=torch.int32)
    s = torch.full((128, 1), 2**31 - 1, dtype=torch.int32)
    assert plainread.tiles_checksum(wq, a, s) == (512 + 128 * (2**31 - 1) + 2 * 32 * 7) % 2**32
    assert plainread.tiles_checksum(wq, a, s, 128) == (512 + 128 * (2**31 - 1) + 32 * 7) % 2**32


@pytest.mark.slow
def test_tiles_reader_copies_the_kernels_tiles():
    src = plainread.plain_read_tiles(64, 8192, 8192).get_kernel_source()
    assert "tl::tma_load(Wq_desc" in src and "arrive_and_expect_tx(8192)" in src  # 64 rows x 128 B of weights
    assert "arrive_and_expect_tx(32768)" in src and src.count("tl::tma_load(A_desc") == 1  # 64 x 256 fp16 ...
    assert "((ko * 128) + (i_1 * 32))" in src  # ... as four 128-byte-wide boxes, the swizzled layout's
    assert "< 32; ++ko" in src and "(ko & 3)" in src
    src = plainread.plain_read_tiles(64, 8192, 8192, 128, 128, 8, 128, 2).get_kernel_source()
    assert "arrive_and_expect_tx(16384)" in src and "arrive_and_expect_tx(8192)" in src  # 64 x 128 k of activations, 128 rows x 64 B of weights
    assert "((((int)blockIdx.x) & 1) * 512)" in src  # the odd block of a pair reads the second half of K
    assert "cluster" not in src.lower()


def test_make_reader_poisons_the_sums_and_launches_the_given_kernel(monkeypatch):
    monkeypatch.setattr(plainread, "check_cuda", lambda **kw: None)  # CPU tensors stand in for the device's
    calls = []
    x = torch.zeros((128, 32), dtype=torch.int32)
    run, out = plainread.make_reader(x, 2, kernel=lambda *a: calls.append(a))
    assert out.shape == (2, 64) and bool((out == plainread.POISON).all())
    run()
    assert len(calls) == 1 and calls[0][0] is x and calls[0][1] is out
