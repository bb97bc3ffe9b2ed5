"""CPU check of the load-path walk (measure/results/timing/readshape.py): every reader it times is one the package
accepts, the hot readers carry M = 64's activation bytes (within the 3 % a 128-block split adds), and the tile
readers read the W4A16 kernel's operands at its M = 64 shape."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "measure" / "results" / "timing"))
import readshape  # noqa: E402

from kernels.gemm.plainread import ROW_BYTES, check_hot_config, check_read_config, check_tiles_config  # noqa: E402


@pytest.mark.parametrize("name", list(readshape.READERS))
def test_every_reader_is_valid(name):
    kind, a, b, *rk = readshape.READERS[name]
    if kind == "tiles":
        rows, ksplit = rk
        assert check_tiles_config(readshape.M, readshape.N, readshape.K, readshape.GROUP, a, b, rows,
                                  ksplit) * a * ksplit == readshape.K
        assert readshape.N // rows * ksplit == 128  # the kernel's grid
        return
    assert check_read_config(readshape.ROWS, a, 64, b) >= 32
    if kind == "hot":
        act = readshape.M * readshape.K * 2
        assert act <= check_hot_config(readshape.ROWS, a, 4, 64, b) * ROW_BYTES <= act * 1.04


def test_the_walk_ends_at_the_kernels_load_paths():
    assert [c["block_K"] for c in readshape.FORMS] == [128, 256, 256]
    assert readshape.FORMS[-1].get("kglob") and readshape.FORMS[-1]["split"] == "n"
    assert {k for k, *_ in readshape.READERS.values()} == {"read", "hot", "tiles"}
    assert ("tiles", 128, 8, 128, 2) in readshape.READERS.values()  # kpair's reads without the cluster
