"""CPU checks of the bf16 and batched forms of the hand-written pipeline (kernels/gemm/ws.py with
``dtype`` / ``batch``; suites ``gemm.bf16`` and ``gemm.batched_ws``): bf16 tiles
reach bf16 wgmma and a bf16 output; a batched tile takes its B rows from its own batch; the
fp16 single-GEMM program is unchanged by the new arguments."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import batched, ladder, ws  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info  # noqa: E402
from measure.suites.gemm import batched_ws as batched_ws_suite, bf16 as bf16_suite  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.mark.slow
def test_bf16_candidates_are_hand_written_and_lower_to_bf16_wgmma():
    cands = bf16_suite.bf16_candidates()
    assert len(cands) == len(bf16_suite.BF16_LABELS) == 4
    k = ladder.build_tuned(1024, 1024, 1024, cands[0], 132, dtype="bfloat16")
    src = k.get_kernel_source()
    shapes = set(re.findall(r"wgmma_ss<tl::DataType::(\w+), tl::DataType::(\w+), tl::DataType::kFloat32, 64, 256, 16",
                            src))
    assert shapes == {("kBFloat16", "kBFloat16")}
    assert "bfloat16_t" in src and "half_t" not in src  # tiles, staging and output all bf16
    assert instruction_path(src)["tma_store"]


@pytest.mark.slow
def test_dtype_is_checked():
    with pytest.raises(ValueError, match="dtype must be"):
        ws.rung4_ws(1024, 1024, 1024, dtype="float32")
    plain = next(c for c in bf16_suite.TUNE_CANDIDATES if not c.get("ws"))
    with pytest.raises(ValueError, match="needs the hand-written pipeline"):
        ladder.build_tuned(1024, 1024, 1024, plain, 132, dtype="bfloat16")


@pytest.mark.slow
def test_batched_tile_reads_the_b_rows_of_its_batch():
    batch, M, N, K = 4, 256, 512, 128
    cfg = batched_ws_suite.CANDIDATES["scores"][0]
    k = batched.build_ws(batch, M, N, K, cfg, workers=8)
    src = k.get_kernel_source()
    # the B row of a tile: (tile row // rows per batch) * N + the tile's column
    loads = [ln for ln in src.splitlines() if "tma_load(B_desc" in ln]
    assert loads and all(f"(m0 >> {M.bit_length() - 1}) * {N})" in ln for ln in loads), loads
    info = launch_info(k)
    assert info.grid == (8, 1, 1)  # persistent: the workers walk batch * M / 128 x N / block_N tiles


@pytest.mark.slow
def test_batch_must_split_into_whole_tiles():
    with pytest.raises(ValueError, match="batches of a multiple of 128"):
        ws.rung4_ws(4 * 200, 512, 128, batch=4)
    with pytest.raises(ValueError, match="batches of a multiple of 256"):
        ws.rung4_ws(4 * 128, 512, 128, batch=4, cluster=2, workers=8)


def test_batched_input_checks_name_the_constraint():
    a = torch.zeros((2, 256, 64), dtype=torch.float16)
    with pytest.raises(ValueError, match="K must agree"):
        batched.check_ws_inputs(a, torch.zeros((2, 128, 32), dtype=torch.float16))
    with pytest.raises(ValueError, match="multiple of the tile size 128"):
        batched.check_ws_inputs(a[:, :200].contiguous(), torch.zeros((2, 128, 64), dtype=torch.float16))
    with pytest.raises(ValueError, match="CUDA device"):
        batched.check_ws_inputs(a, torch.zeros((2, 128, 64), dtype=torch.float16))


@pytest.mark.slow
def test_fp16_program_is_unchanged_by_the_new_arguments():
    """dtype=float16 and batch=1 are the old kernel: the same CUDA source as without them."""
    kw = dict(block_N=256, block_K=64, stages=3, inflight=0)
    a = ws.rung4_ws(1024, 1024, 1024, **kw).get_kernel_source()
    b = ws.rung4_ws(1024, 1024, 1024, dtype="float16", batch=1, **kw).get_kernel_source()
    assert a == b and "half_t" in a and "bfloat16" not in a
