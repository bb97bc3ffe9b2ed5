"""CPU check of the plain-read probe (measure/results/timing/readbound.py): every reader it times is one the package's
reader accepts (:func:`kernels.gemm.plainread.check_read_config`: an even split of the weights' bytes, a ring that
fits shared memory).  The reader itself, its byte count and its lowering are tested in
tests/kernels/test_gemm_plainread.py."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import readbound  # noqa: E402

from kernels.gemm.plainread import check_read_config  # noqa: E402


@pytest.mark.parametrize("blocks,rows,slots", readbound.READERS)
def test_every_reader_is_a_valid_configuration(blocks, rows, slots):
    assert readbound.ROWS == 270336
    assert check_read_config(readbound.ROWS, blocks, rows, slots) == readbound.ROWS // blocks // rows
