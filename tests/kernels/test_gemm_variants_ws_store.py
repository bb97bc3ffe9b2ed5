"""CPU checks of the two epilogue forms added to the hand-written pipeline (kernels/gemm/ws.py) for
issue 21's last gaps: the batched scores' store issued without a wait into staging buffers used in
turn (``store_bufs``, ``evict_first``), and split-K summed inside the kernel by the blocks of one
tile as a thread-block cluster (``cluster_reduce``).  The work division of the cluster sum is
emulated with numpy; the candidates of the suites lower and compile for sm_90a."""

import numpy as np
import pytest

from kernels.gemm import batched, splitk, ws
from measure.suites.gemm import batched_ws as batched_ws_suite, splitk_ws as splitk_ws_suite


# ------------------------------------------------------------------ the cluster sum's index math
@pytest.mark.parametrize("splits,epi", [(2, 64), (2, 128), (4, 64), (4, 128), (8, 128)])
def test_cluster_sum_slots_cover_every_element_once(splits, epi):
    """Every (row, 8-column vector) of a consumer's 64 x epi chunk is summed by exactly one thread
    of exactly one block, and block ``r`` takes rows ``[r * 64 / splits, (r + 1) * 64 / splits)``."""
    ws.check_cluster_reduce(splits, epi)
    seen = np.zeros((64, epi // 8), dtype=int)
    rq = 64 // splits
    for rank in range(splits):
        for v in range(ws.reduce_vectors(splits, epi) // 128):
            for tid in range(128):
                i, j = ws.reduce_slot(rank, v, tid, splits, epi)
                assert j % 8 == 0 and 0 <= j < epi
                assert rank * rq <= i < (rank + 1) * rq
                seen[i, j // 8] += 1
    assert (seen == 1).all()


def test_cluster_sum_emulated_equals_the_sum_of_the_partials():
    """The epilogue's addressing, run in numpy: chunks of ``epi`` columns, two consumers of 64 rows,
    every block summing its slots from the staging of every block in rank order."""
    rng = np.random.default_rng(0)
    splits, block_n, epi, M, N = 4, 256, 64, 256, 512
    parts = rng.standard_normal((splits, M, N)).astype(np.float32)  # the K slices' partials
    C = np.full((M, N), np.nan, dtype=np.float32)
    for tm in range(M // 128):
        for tn in range(N // block_n):
            for wg in range(2):
                r0 = tm * 128 + wg * 64
                for h in range(block_n // epi):
                    c0 = tn * block_n + h * epi
                    staging = parts[:, r0:r0 + 64, c0:c0 + epi]  # staging[r] = block r's chunk
                    for rank in range(splits):
                        for v in range(ws.reduce_vectors(splits, epi) // 128):
                            for tid in range(128):
                                i, j = ws.reduce_slot(rank, v, tid, splits, epi)
                                acc = np.zeros(8, dtype=np.float32)
                                for r in range(splits):
                                    acc += staging[r, i, j:j + 8]
                                C[r0 + i, c0 + j:c0 + j + 8] = acc
    assert not np.isnan(C).any()
    np.testing.assert_allclose(C, parts.sum(axis=0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ configuration errors
def test_cluster_reduce_errors_name_the_constraint():
    with pytest.raises(ValueError, match="must divide the 64 rows"):
        ws.check_cluster_reduce(3, 64)
    with pytest.raises(ValueError, match="not a multiple of the 128 threads"):
        ws.check_cluster_reduce(8, 64)
    with pytest.raises(ValueError, match="multiple of 8"):
        ws.check_cluster_reduce(4, 60)
    kw = dict(fp8=False, block_N=256, block_K=64, stages=4, panel=8, inflight=0, epi_cols=64)
    with pytest.raises(ValueError, match="cluster=1"):
        ws._ws_program(1024, 1024, 16384, cluster=2, workers=132, splits=4, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="splits > 1"):
        ws._ws_program(1024, 1024, 16384, cluster=1, workers=132, splits=1, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="multiple of splits=4"):
        ws._ws_program(1024, 1024, 16384, cluster=1, workers=130, splits=4, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="without clipping"):
        ws._ws_program(1000, 1024, 16384, cluster=1, workers=132, splits=4, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="at most 8"):
        ws._ws_program(1024, 1024, 16384, cluster=1, workers=128, splits=16, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="no reduction kernel"):
        splitk.ws_splitk_config(4, reduce_rows=32, cluster_reduce=True)


def test_deferred_store_errors_name_the_constraint():
    kw = dict(fp8=False, block_N=256, block_K=64, stages=3, panel=8, cluster=2, inflight=0, epi_cols=128, workers=132)
    with pytest.raises(ValueError, match="store_bufs must be 1 or 2"):
        ws._ws_program(4096, 2048, 128, store_bufs=3, **kw)
    with pytest.raises(ValueError, match="not split-K"):
        ws._ws_program(1024, 1024, 16384, splits=4, store_bufs=2, **{**kw, "cluster": 1})
    with pytest.raises(ValueError, match="not fp8"):
        ws._ws_program(1024, 1024, 1024, evict_first=True, **{**kw, "fp8": True, "block_N": 192, "block_K": 128, "epi_cols": 0})


def test_cluster_reduce_input_checks_name_the_constraint():
    torch = pytest.importorskip("torch")
    cfg = splitk.ws_splitk_config(2, block_N=128, stages=5, epi_cols=128, cluster_reduce=True)
    a = torch.zeros((1040, 1024), dtype=torch.float16)  # 1040 rows: whole 16-row pieces, not 128-row tiles
    b = torch.zeros((1024, 1024), dtype=torch.float16)
    with pytest.raises(ValueError, match="128"):
        splitk.check_ws_inputs(a, b, cfg)
    with pytest.raises(ValueError, match="CUDA device"):
        splitk.check_ws_inputs(torch.zeros((1024, 1024), dtype=torch.float16), b, cfg)


def test_new_settings_leave_earlier_configurations_and_labels_alone():
    old = batched.ws_config(256, 64, 3, 128, cluster=2)
    assert "store_bufs" not in old and "evict_first" not in old
    assert batched.ws_label(old) == "n256_k64_s3_e128_if0_pers_c2"  # the recorded best's label
    new = [batched.ws_label(c) for c in batched_ws_suite.CANDIDATES["scores"]]
    assert len(set(new)) == len(new) and {"n256_k64_s3_e128_if0_pers_c2_b2_ef", "n256_k64_s3_e128_if0_pers_c2_ef"} <= set(new)
    assert "cluster_reduce" not in splitk.ws_splitk_config(4, reduce_rows=32)
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, reduce_rows=32)) == "ws s=4 128x256 st4 e64 r32"
    labels = [splitk.ws_splitk_label(c) for c in splitk_ws_suite.CANDIDATES]
    assert len(set(labels)) == len(labels)
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, cluster_reduce=True)) == "ws s=4 128x256 st4 e64 dsmem"


# ------------------------------------------------------------------ the candidates compile
@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
def test_deferred_store_candidate_compiles_with_hint_and_one_store_in_flight(_fresh):
    from kernels.gemm.lowered import launch_info

    cfg = batched.ws_config(256, 64, 3, 128, cluster=2, store_bufs=2, evict_first=True)
    k = batched.build_ws(4, 256, 2048, 128, cfg, 8)
    src = k.get_kernel_source()
    assert "tma_store<tl::CacheHintSm90::EVICT_FIRST>" in src
    # before a staging buffer is rewritten: at most one store (the other buffer's) still reading
    assert src.count("tl::tma_store_wait<1, true>();") == 2 and src.count("tl::tma_store_wait<0, true>();") == 1
    # two 64 x 128 fp16 buffers per consumer beside three stages: 208 KiB
    assert launch_info(k).dyn_smem_bytes >= 3 * (128 + 256) * 64 * 2 + 4 * 64 * 128 * 2


@pytest.mark.slow
def test_cluster_reduce_candidate_compiles_to_one_kernel_summing_in_the_cluster(_fresh):
    from kernels.gemm.lowered import launch_info

    gemm, red = splitk.build_ws(1024, 1024, 16384, splitk.ws_splitk_config(4, cluster_reduce=True), 132)
    assert red is None
    src = gemm.get_kernel_source()
    assert "mapa.shared::cluster" in src and "skq::cluster_sum8<4>" in src
    assert "half_t* __restrict__ C" in src and "P_desc" not in src and "tma_store" not in src
    assert "tile[2] = (((int)blockIdx.x) & 3);" in src  # K slice = cluster rank
    assert launch_info(gemm).grid == (132, 1, 1)
    (_, func), *_ = list(gemm.artifact.device_mod.functions.items())
    assert tuple(int(x) for x in func.attrs["cluster_dims"]) == (4, 1, 1)  # the 4 slices of a tile
