"""CPU checks of split-K and grouped GEMM on the hand-written pipeline (kernels/gemm/ws.py with
``splits`` / ``groups``; kernels/gemm/splitk.py and kernels/gemm/grouped.py): what each work item
loads and stores, the reduction, the padded routing tables, the operand checks."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import grouped, splitk, ws  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.mark.slow
def test_split_k_items_read_their_k_slice_and_store_fp32_partials():
    M, N, K, S = 1024, 1024, 16384, 4
    gemm, red = splitk.build_ws(M, N, K, splitk.ws_splitk_config(S, cluster=2), 132)
    src = gemm.get_kernel_source()
    p = instruction_path(src)
    assert p["tma_load"] and p["tma_store"] and p["wgmma"] and set(wgmma_shapes(src)) == {(64, 256, 16)}
    # 16 cluster tiles of 256 x 256 times 4 slices = 64 items for 66 clusters: one round
    info = launch_info(gemm)
    assert info.grid == (132, 1, 1) and "for (int t" not in src
    # slice = item // tiles (cluster item = block // 2, 16 cluster tiles), its K starts at slice * K / S
    assert "tile[2] = (((int)blockIdx.x) >> 5);" in src
    assert f"int k0 = ((tile[2] * {K // S}) + (ko * 64));" in src
    # the partial goes to P rows slice * M + row, in fp32
    assert f"(tile[2] * {M}) + r0" in src and "tma_store(P_desc, (&(((float*)C0_s)" in src
    assert "half_t*)C0_s" not in src
    # the reduction: every slice of its piece, 16-byte loads, one fp16 store
    rsrc = red.get_kernel_source()
    assert f"for (int s = 0; s < {S}; ++s)" in rsrc and "float4" in rsrc and "half_t" in rsrc
    assert launch_info(red).grid == (N // 256, M // 16, 1)


@pytest.mark.slow
def test_grouped_tiles_take_the_b_rows_of_their_group_from_the_table():
    sizes = (300, 17, 1100)
    k = grouped.build_ws(sizes, 1024, 512, grouped.ws_config(), 8)
    src = k.get_kernel_source()
    _, rows, tg = grouped.padded_tables(sizes)
    assert re.search(rf"E\[tile\[\(int64_t\)0\]\]", src)
    assert "(condval * 1024)" in src  # B row = group * N + the tile's column
    assert f"< {rows // 128}" in src  # the table is bounds-checked by the tile count
    assert launch_info(k).grid == (8, 1, 1)


@pytest.mark.slow
def test_split_and_group_forms_leave_the_plain_pipeline_alone():
    with pytest.raises(ValueError, match="persistent"):
        ws.splitk_ws(1024, 1024, 16384, 4, workers=0)
    with pytest.raises(ValueError, match="must divide"):
        ws.splitk_ws(1024, 1024, 1024, 3, workers=8)


def test_padded_tables_start_every_group_on_a_tile():
    starts, rows, tg = grouped.padded_tables((300, 0, 17, 128), 128)
    assert starts == [0, 384, 384, 512] and rows == 640
    assert tg == [0, 0, 0, 2, 3]
    starts2, rows2, tg2 = grouped.padded_tables((300, 17), 256)
    assert starts2 == [0, 512] and rows2 == 768 and tg2 == [0, 0, 1]
    with pytest.raises(ValueError, match="no rows"):
        grouped.padded_tables((0, 0))
    with pytest.raises(ValueError, match=">= 0"):
        grouped.padded_tables((5, -1))


def test_pad_rows_places_each_group_at_its_start():
    a = torch.arange(6 * 4, dtype=torch.float16).reshape(6, 4)
    sizes = (2, 4)
    out = grouped.pad_rows(a, sizes, tile=4)
    assert out.shape == (8, 4)
    assert torch.equal(out[0:2], a[0:2]) and torch.equal(out[4:8], a[2:6])
    assert not out[2:4].any()


def test_operand_checks_name_the_constraint():
    b = torch.zeros((2, 256, 64), dtype=torch.float16)
    with pytest.raises(ValueError, match="3 group sizes for 2"):
        grouped.check_ws_inputs(torch.zeros((256, 64), dtype=torch.float16), b, (1, 2, 3))
    with pytest.raises(ValueError, match=r"a_pad must have shape \(384, 64\)"):
        grouped.check_ws_inputs(torch.zeros((256, 64), dtype=torch.float16), b, (200, 5))
    with pytest.raises(ValueError, match="CUDA device"):
        grouped.check_ws_inputs(torch.zeros((384, 64), dtype=torch.float16), b, (200, 5))
    a = torch.zeros((1024, 1000), dtype=torch.float16)
    bb = torch.zeros((1024, 1000), dtype=torch.float16)
    cfg = splitk.ws_splitk_config(4)
    with pytest.raises(ValueError, match="multiple of splits\\*block_K"):
        splitk.check_ws_inputs(a, bb, cfg)
    with pytest.raises(ValueError, match="CUDA device"):
        splitk.check_ws_inputs(torch.zeros((1024, 1024), dtype=torch.float16),
                               torch.zeros((1024, 1024), dtype=torch.float16), cfg)
