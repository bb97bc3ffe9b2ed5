"""CPU checks of the GEMM variants: split-K, stream-K, grouped and batched GEMM for sm_90a."""

import math

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import batched, grouped, splitk, streamk  # noqa: E402
from kernels.common import SMS as H200_SMS  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info  # noqa: E402
from measure.suites.gemm import splitk as splitk_suite, streamk as streamk_suite  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    """Kernels loaded from a cache carry no device module (launch config); compile afresh."""
    yield


# ------------------------------------------------------------------ split-K


@pytest.fixture(scope="module")
def splitk_kernels():
    out = {}
    for form in ("tile", "element"):
        k = splitk.splitk_gemm(1024, 1024, 16384, 4, form=form, **splitk.DEFAULT)
        out[form] = (k.get_kernel_source(), launch_info(k))
    return out


@pytest.mark.slow
def test_splitk_grid_has_one_z_slice_per_split(splitk_kernels):
    for form, (_, info) in splitk_kernels.items():
        assert info.grid == (8, 8, 4), form


@pytest.mark.slow
def test_splitk_forms_differ_in_the_atomic_they_emit(splitk_kernels):
    tile_src, _ = splitk_kernels["tile"]
    elem_src, _ = splitk_kernels["element"]
    # the tile form adds a staged fp32 tile from shared memory, 4 floats at a time
    assert "AtomicAddx4" in tile_src and "C_s" in tile_src
    # the element form adds straight from the accumulator registers (pairs of floats)
    assert "AtomicAddx4" not in elem_src
    assert "AtomicAddx2" in elem_src or "AtomicAdd(" in elem_src
    for src in (tile_src, elem_src):
        p = instruction_path(src)
        assert p["wgmma"] and p["tma_load"] and p["warp_specialized"]


def test_splitk_wave_prediction_for_the_skinny_shape():
    pred, w = splitk_suite.predicted_speedup(1024, 1024, 1)
    assert pred == 1.0 and w["grid"] == 64 and w["waves"] == 1
    assert w["last_wave_fill"] == pytest.approx(64 / H200_SMS)
    pred2, w2 = splitk_suite.predicted_speedup(1024, 1024, 2)
    assert w2["grid"] == 128 and w2["waves"] == 1 and pred2 == pytest.approx(2.0)


def test_splitk_rejects_a_split_that_does_not_divide_k():
    a = torch.zeros((128, 1000), dtype=torch.float16)
    b = torch.zeros((128, 1000), dtype=torch.float16)
    with pytest.raises(ValueError, match="split_k\\*block_K"):
        splitk.check_inputs(a, b, 4)
    with pytest.raises(ValueError, match="form"):
        splitk.check_inputs(a, b, 4, form="row")
    with pytest.raises(ValueError, match="positive"):
        splitk.check_inputs(a, b, 0)


# ----------------------------------------------------------------- stream-K


def _simulate(s: streamk.Schedule, sms: int) -> dict[int, list[int]]:
    """Replay the kernel's tail loop in Python: which K steps of each tail tile each block does."""
    cover: dict[int, list[int]] = {t: [] for t in range(s.sk_tiles)}
    ipt = s.iters_per_tile
    for pid in range(sms):
        begin = pid * s.iters_per_block + min(pid, s.extra)
        end = begin + s.iters_per_block + (1 if pid < s.extra else 0)
        first = begin // ipt
        for seg in range(s.max_segments):
            lt = first + seg
            it0, it1 = max(begin, lt * ipt), min(end, (lt + 1) * ipt)
            if it0 < it1:
                cover[lt].extend(range(it0 - lt * ipt, it1 - lt * ipt))
        # nothing of the range may be left beyond max_segments
        last = first + s.max_segments
        assert end <= last * ipt or end <= begin, (pid, begin, end, last)
    return cover


@pytest.mark.parametrize(
    "shape,tile",
    [((1536, 1536, 8192), (128, 128, 64)), ((1024, 1024, 1024), (128, 128, 64)), ((4224, 256, 4096), (128, 128, 64)),
     ((384, 640, 512), (128, 128, 64)), ((2048, 2048, 256), (128, 128, 64))],
)
def test_streamk_schedule_covers_every_tail_step_exactly_once(shape, tile):
    s = streamk.schedule(*shape, *tile)
    assert s.dp_tiles % H200_SMS == 0 and s.dp_tiles + s.sk_tiles == s.tiles
    cover = _simulate(s, H200_SMS)
    for t, steps in cover.items():
        assert sorted(steps) == list(range(s.iters_per_tile)), t


def test_streamk_plan_for_the_poor_last_wave():
    s = streamk.schedule(1536, 1536, 8192, 128, 128, 64)
    assert (s.tiles, s.dp_tiles, s.sk_tiles) == (144, 132, 12)
    pred, w = streamk_suite.predicted_speedup(1536, 1536)
    assert w["waves"] == 2 and w["last_wave_fill"] == pytest.approx(12 / 132)
    assert pred == pytest.approx(2 / (144 / 132))


@pytest.fixture(scope="module")
def streamk_kernel():
    k = streamk.streamk_gemm(1536, 1536, 8192, **streamk.DEFAULT)
    f = streamk.streamk_fixup(1536, 1536, 8192)
    return k.get_kernel_source(), launch_info(k), launch_info(f)


@pytest.mark.slow
def test_streamk_is_persistent_over_132_sms_with_atomic_tail(streamk_kernel):
    src, info, fix = streamk_kernel
    assert info.grid == (H200_SMS, 1, 1)
    p = instruction_path(src)
    assert p["wgmma"] and p["tma_load"] and p["atomic_add"]
    assert "AtomicAddx4" in src
    assert fix.grid == (12, 1, 1)
    assert info.smem_bytes <= 232448


# ------------------------------------------------------------------ grouped


def test_grouped_tables():
    rows, sizes, tiles, n = grouped.tables([100, 0, 300, 128], 128)
    assert rows == [0, 100, 100, 400] and sizes == [100, 0, 300, 128]
    assert tiles == [0, 1, 1, 4] and n == 5


@pytest.fixture(scope="module")
def grouped_kernels():
    sizes = [100, 700, 33, 1200]
    _, _, _, n = grouped.tables(sizes, 128)
    kc = grouped.grouped_concat(sum(sizes), 1024, 512, 4, n, **grouped.DEFAULT)
    kp = grouped.grouped_ptr(1280, 1024, 512, 4, n, block_M=128, block_N=128, block_K=64, threads=128)
    return n, (kc.get_kernel_source(), launch_info(kc)), (kp.get_kernel_source(), launch_info(kp))


@pytest.mark.slow
def test_grouped_concat_scans_the_offset_table_and_masks_the_last_tile(grouped_kernels):
    n, (src, info), _ = grouped_kernels
    assert n == sum(math.ceil(s / 128) for s in [100, 700, 33, 1200])
    assert info.grid == (1024 // 128, n, 1)
    assert "tile_off[i]" in src and "rows[g]" in src
    assert "< (left + " in src  # rows past the expert's last row are not stored
    p = instruction_path(src)
    assert p["tma_load"] and p["wgmma"]


@pytest.mark.slow
def test_grouped_ptr_builds_views_from_the_pointer_table_without_tma(grouped_kernels):
    _, _, (src, info) = grouped_kernels
    assert "A_ptrs[g]" in src and "B_ptrs[g]" in src and "C_ptrs[g]" in src
    p = instruction_path(src)
    # no TMA descriptor can be built on the host for a pointer read inside the kernel
    assert not p["tma_load"] and not p["warp_specialized"]
    assert p["wgmma"]


def test_grouped_check_inputs():
    a = torch.zeros((10, 64), dtype=torch.float16)
    b = torch.zeros((2, 128, 64), dtype=torch.float16)
    with pytest.raises(ValueError, match="2 weight matrices"):
        grouped.check_inputs(a, b, [10])
    with pytest.raises(ValueError, match="shape"):
        grouped.check_inputs(a, b, [4, 5])
    with pytest.raises(ValueError, match=">= 0"):
        grouped.check_inputs(a, b, [12, -2])
    with pytest.raises(ValueError, match="CUDA"):
        grouped.check_inputs(a, b, [4, 6])


# ------------------------------------------------------------------ batched


@pytest.mark.slow
def test_batched_uses_the_batch_as_grid_z_and_ragged_m():
    k = batched.batched_gemm(8, 1000, 1024, 128, **batched.DEFAULT)
    info = launch_info(k)
    assert info.grid == (8, 8, 8)
    p = instruction_path(k.get_kernel_source())
    assert p["tma_load"] and p["wgmma"] and p["warp_specialized"]


def test_batched_check_inputs():
    a = torch.zeros((4, 64, 128), dtype=torch.float16)
    with pytest.raises(ValueError, match="batch sizes differ"):
        batched.check_inputs(a, torch.zeros((3, 64, 128), dtype=torch.float16))
    with pytest.raises(ValueError, match="K must agree"):
        batched.check_inputs(a, torch.zeros((4, 64, 64), dtype=torch.float16))
    with pytest.raises(ValueError, match="batch, M, K"):
        batched.check_inputs(a[0], a[0])
