"""CPU checks of the plain-read probe (measure/results/timing/readbound.py): its buffer is exactly the bytes the ledger
gives the int4 weights and scales of the 8192 x 8192 W4A16 product, every reader's grid and slots split that buffer
evenly, and a reader lowers to a ring of bulk copies whose consumer adds every word."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import readbound  # noqa: E402

from ledger.w4a16 import w4a16_cost  # noqa: E402


@pytest.mark.parametrize("m", [1, 16, 64])
def test_reads_the_weight_and_scale_bytes_of_the_ledger(m):
    n, k = readbound.N, readbound.K
    activations_and_output = (m * k + m * n) * 2
    assert readbound.ROWS * readbound.WORDS * 4 == w4a16_cost(m, n, k).bytes - activations_and_output


@pytest.mark.parametrize("blocks,rows,slots", readbound.READERS)
def test_every_reader_splits_the_buffer_evenly(blocks, rows, slots):
    per = readbound.ROWS // blocks
    assert per * blocks == readbound.ROWS and per % rows == 0
    assert rows * readbound.WORDS * 4 * slots <= 200 * 1024  # the ring fits a block's shared memory


@pytest.mark.slow
def test_reader_lowers_to_a_bulk_copy_ring_and_adds_every_word():
    kern = readbound.reader(132, 64, 8)
    src = kern.get_kernel_source()
    assert "tl::tma_load" in src and "arrive_and_expect_tx(8192)" in src  # one 8 KB slot a copy
    assert "(it & 7)" in src  # eight slots used in turn
    per_block_iters = readbound.ROWS // 132 // 64
    assert f"< {per_block_iters}; ++it" in src
    assert src.count("v__1.") >= 4  # the consumer adds the slot's words (int4 vector adds)


def test_reader_refuses_an_uneven_split():
    with pytest.raises(AssertionError):
        readbound.reader(128, 256, 4)
