"""CPU checks of stream-K's shared-memory guard (kernels/gemm/streamk.py, :func:`ws_smem_bytes`): a configuration
whose ring and stagings need more than one block may use on an SM is refused before lowering, with the bytes and the
knobs named, instead of being refused by the driver at launch (on the H200 such a form, whole tiles staged 128
columns at a time beside a separate fp32 tail staging at five stages, failed with "Failed to set the allowed dynamic
shared memory size to 262144").  The count agrees with what the lowered kernels declare."""

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import streamk  # noqa: E402
from kernels.gemm.lowered import launch_info  # noqa: E402

AWKWARD = (1536, 1536, 8192)
LEVERS = dict(panel=0, fix_vec=True, fix_rows=4, pdl=True, pdl_at="end", aligned=True)


def test_ring_and_stagings_are_counted():
    # five 32 KB stages, the fp16 staging of 64 columns (16 KB), the fp32 staging of 64 (32 KB)
    assert streamk.ws_smem_bytes(128, 64, 5, 64, 64, has_dp=True, f32_staging=True) == 5 * 32768 + 16384 + 32768
    # no whole tiles: no fp16 staging; no separate tail buffer: no fp32 staging
    assert streamk.ws_smem_bytes(128, 64, 6, 64, 64, has_dp=False, f32_staging=False) == 6 * 32768
    assert streamk.ws_smem_bytes(128, 64, 5, 128, 128, has_dp=True, f32_staging=True) == 262144


def test_a_form_past_the_sm_is_refused_before_lowering():
    with pytest.raises(ValueError, match=r"stages=5, block_K=64, epi_cols=128, tail_cols=128: 262144 bytes of shared "
                                         r"memory, past the 232448 one block may use"):
        streamk.streamk_ws(*AWKWARD, block_N=128, stages=5, panel=0, epi_cols=128, dp_waves=-1, aligned=True)


def test_share_fits_where_the_separate_stagings_do_not():
    """Six stages with the whole tiles staged 128 columns at a time fit only when the tail pieces reuse that buffer."""
    with pytest.raises(ValueError, match=r"stages=6, .* past the 232448"):
        streamk.streamk_ws(*AWKWARD, block_N=128, stages=6, panel=0, epi_cols=128, dp_waves=-1, tail_cols=64,
                           aligned=True)
    # the same widths with one buffer pass the guard (the program is built, not lowered)
    streamk._streamk_ws_program(*AWKWARD, block_N=128, block_K=64, stages=6, panel=0, inflight=0, epi_cols=128,
                                workers=132, dp_waves=-1, tail_cols=64, aligned=True, share=True)


def test_the_limit_is_the_machine_models():
    from kernels.gemm import w4a16, w4a16_dec, w4a16_tma
    from ledger.machines import get_machine

    assert streamk.SMEM_LIMIT == get_machine("h200-spec").resource("smem_per_block_kb") * 1024 == 232448
    for mod in (w4a16, w4a16_dec, w4a16_tma):  # every kernel family checks against the same limit
        assert mod.SMEM_LIMIT == streamk.SMEM_LIMIT


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
@pytest.mark.parametrize("cfg, f32", [(streamk.ws_config(128, 5, 64, -1, **LEVERS), True),
                                      (streamk.ws_config(128, 6, 64, -1, reg_store=True, **LEVERS), False)],
                         ids=["tail staged", "tail from registers"])
def test_the_count_is_what_the_kernel_declares(_fresh, cfg, f32):
    gemm, _ = streamk.build_ws(*AWKWARD, cfg, 132)
    want = streamk.ws_smem_bytes(128, cfg["block_K"], cfg["stages"], cfg["epi_cols"], cfg["epi_cols"], has_dp=True,
                                 f32_staging=f32)
    assert launch_info(gemm).dyn_smem_bytes == want
