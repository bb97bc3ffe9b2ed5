"""CPU check of the hot-stream probe (measure/results/timing/readhot.py): every reader it times is one the package
accepts, the hot buffer of ratio r holds the activations' bytes of an M = 16 r kernel at 8192 x 8192 (what each block
of the W4A16 kernel reads), and the load paths it times beside them are the M = 64 forms of the suite and of
``m64loadr``."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import m64load  # noqa: E402
import readhot  # noqa: E402

from kernels.gemm.plainread import ROW_BYTES, check_hot_config, check_read_config  # noqa: E402
from kernels.gemm.w4a16 import label  # noqa: E402
from measure.suites.gemm.flush import W4A16_WINNERS  # noqa: E402


@pytest.mark.parametrize("ratio,slots", readhot.READERS)
def test_every_reader_is_valid_and_its_hot_buffer_is_an_activation_matrix(ratio, slots):
    assert check_read_config(readhot.ROWS, readhot.BLOCKS, 64, slots) == 32
    if ratio:
        assert check_hot_config(readhot.ROWS, readhot.BLOCKS, ratio, 64, slots) * ROW_BYTES == 16 * ratio * 8192 * 2


def test_the_load_paths_are_the_suites_and_m64loadrs_forms():
    labels = {label(c) for c in readhot.FORMS}
    assert label(W4A16_WINNERS[(64, 8192, 8192)]).replace("_lg", "") in labels
    assert labels <= {label(c) for c in m64load.FORMS[64]}
