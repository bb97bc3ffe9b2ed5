"""CPU checks of the bf16 and batched forms of the hand-written pipeline (kernels/gemm/ws.py with
``dtype`` / ``batch``; suites kernels/gemm/bf16.py and kernels/gemm/batched_ws.py): bf16 tiles
reach bf16 wgmma and a bf16 output; a batched tile takes its B rows from its own batch; the
fp16 single-GEMM program is unchanged by the new arguments."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import batched_ws, bf16, ws  # noqa: E402
from kernels.gemm.common import instruction_path, launch_info  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


def test_bf16_candidates_are_hand_written_and_lower_to_bf16_wgmma():
    cands = bf16.bf16_candidates()
    assert len(cands) == len(bf16.BF16_LABELS) == 4
    k = bf16.build_bf16(1024, 1024, 1024, cands[0])
    src = k.get_kernel_source()
    shapes = set(re.findall(r"wgmma_ss<tl::DataType::(\w+), tl::DataType::(\w+), tl::DataType::kFloat32, 64, 256, 16",
                            src))
    assert shapes == {("kBFloat16", "kBFloat16")}
    assert "bfloat16_t" in src and "half_t" not in src  # tiles, staging and output all bf16
    assert instruction_path(src)["tma_store"]


def test_dtype_is_checked():
    with pytest.raises(ValueError, match="dtype must be"):
        ws.rung4_ws(1024, 1024, 1024, dtype="float32")


def test_batched_tile_reads_the_b_rows_of_its_batch():
    batch, M, N, K = 4, 256, 512, 128
    cfg = batched_ws.CANDIDATES["scores"][0]
    k = batched_ws.build(batch, M, N, K, cfg, workers=8)
    src = k.get_kernel_source()
    # the B row of a tile: (tile row // rows per batch) * N + the tile's column
    loads = [ln for ln in src.splitlines() if "tma_load(B_desc" in ln]
    assert loads and all(f"(m0 >> {M.bit_length() - 1}) * {N})" in ln for ln in loads), loads
    info = launch_info(k)
    assert info.grid == (8, 1, 1)  # persistent: the workers walk batch * M / 128 x N / block_N tiles


def test_batch_must_split_into_whole_tiles():
    with pytest.raises(ValueError, match="batches of a multiple of 128"):
        ws.rung4_ws(4 * 200, 512, 128, batch=4)
    with pytest.raises(ValueError, match="batches of a multiple of 256"):
        ws.rung4_ws(4 * 128, 512, 128, batch=4, cluster=2, workers=8)


def test_batched_input_checks_name_the_constraint():
    a = torch.zeros((2, 256, 64), dtype=torch.float16)
    with pytest.raises(ValueError, match=r"b must be \[2, N, 64\]"):
        batched_ws.check_inputs(a, torch.zeros((2, 128, 32), dtype=torch.float16))
    with pytest.raises(ValueError, match="multiple of 128"):
        batched_ws.check_inputs(a[:, :200].contiguous(), torch.zeros((2, 128, 64), dtype=torch.float16))
    with pytest.raises(ValueError, match="CUDA device"):
        batched_ws.check_inputs(a, torch.zeros((2, 128, 64), dtype=torch.float16))


def test_fp16_program_is_unchanged_by_the_new_arguments():
    """dtype=float16 and batch=1 are the old kernel: the same CUDA source as without them."""
    kw = dict(block_N=256, block_K=64, stages=3, inflight=0)
    a = ws.rung4_ws(1024, 1024, 1024, **kw).get_kernel_source()
    b = ws.rung4_ws(1024, 1024, 1024, dtype="float16", batch=1, **kw).get_kernel_source()
    assert a == b and "half_t" in a and "bfloat16" not in a
