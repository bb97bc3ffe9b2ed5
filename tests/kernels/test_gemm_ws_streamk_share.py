"""CPU checks of stream-K's shared staging (kernels/gemm/streamk.py, ``share``): the whole tiles' fp16 staging and the
tail pieces' fp32 staging are one buffer per consumer, which leaves room for a sixth stage at the full 64-column tail
staging.  The knob is kept only when set, refused where one of the two stagings is missing or their bytes differ
(each error names its constraint), dropped where the suite runs a hybrid's parts alone, and in the sm_90a code both
kinds of store read the same shared bytes, after the whole tile's store has been read out."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import streamk  # noqa: E402
from kernels.gemm.lowered import launch_info, ptxas_report  # noqa: E402

BASE = dict(panel=0, fix_vec=True, fix_rows=4, pdl=True, pdl_at="end", aligned=True)


def test_share_is_kept_only_when_set_and_labelled():
    assert "share" not in streamk.ws_config(128, 6, 128, -1, tail_cols=64, **BASE)
    cfg = streamk.ws_config(128, 6, 128, -1, tail_cols=64, share=True, **BASE)
    assert cfg["share"] is True
    assert streamk.ws_label(cfg) == "dp+sk 128x128 st6 e128 p0 pdl@end fr4 fv te64 al sh"


@pytest.mark.parametrize("kw, msg", [
    (dict(epi_cols=64, tail_cols=64), r"epi_cols=64 .* tail_cols=64 only when epi_cols == 2 \* tail_cols"),
    (dict(epi_cols=128), r"epi_cols=128 .* tail_cols=0 only when epi_cols == 2 \* tail_cols"),
    (dict(epi_cols=128, reg_store=True), "share: the tail pieces must go through the fp32 staging"),
    (dict(epi_cols=64, spread=True), "share: the tail pieces must go through the fp32 staging"),
    (dict(epi_cols=64, red=True), "share: the tail pieces must go through the fp32 staging"),
    (dict(epi_cols=64, fixup=True), "share: the tail pieces must go through the fp32 staging"),
])
def test_share_is_refused_where_the_two_stagings_are_not_there_or_differ(kw, msg):
    epi = kw.pop("epi_cols")
    with pytest.raises(ValueError, match=msg):
        streamk.ws_config(128, 6, epi, -1, share=True, panel=0, **kw)


@pytest.mark.parametrize("plan, dp", [((1536, 1536, 8192), 0), ((1408, 1536, 8192), -1)],
                         ids=["all streamed", "nothing streamed"])
def test_share_needs_whole_tiles_and_a_tail(plan, dp):
    """A schedule with only one of the two parts has only one staging: the program, which knows the schedule, says
    which is missing (the configuration alone does not know the shape, so it takes the knob)."""
    with pytest.raises(ValueError, match=r"share: the schedule needs both whole tiles and a streamed tail"):
        streamk.streamk_ws(*plan, block_N=128, stages=6, panel=0, epi_cols=128, dp_waves=dp, tail_cols=64,
                           share=True)


def test_the_suites_parts_run_without_share():
    """A hybrid's wave and tail run alone in the suite's timeline; each has one staging only, so the knob goes."""
    from measure.suites.gemm import streamk_ws as suite

    cfg = streamk.ws_config(128, 6, 128, -1, tail_cols=64, share=True, panel=0, fix_vec=True, fix_rows=4)
    for dp in (-1, 0):
        assert "share" not in suite.part_config(cfg, dp)
    assert any(c.get("share") for c in suite.candidates((1536, 1536, 8192)))


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
def test_shared_staging_is_one_buffer_and_buys_the_sixth_stage(_fresh):
    """sm_90a code of the awkward shape's six-stage aligned hybrid: each consumer's whole-tile stores to C and its
    tail stores to the workspace read one shared buffer (16 KB), so six 32 KB stages fit beside the two buffers
    (229,376 bytes), where the unshared form of the same widths would need 64 KB of staging.  The
    whole tile's store is waited for (read out) by its issuing thread before the consumer's barrier that comes
    ahead of the first tail write.  No spill, no serialised wgmma."""
    cfg = streamk.ws_config(128, 6, 128, -1, tail_cols=64, share=True, **BASE)
    gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
    src = gemm.get_kernel_source()
    assert launch_info(gemm).dyn_smem_bytes == 6 * 32768 + 2 * 16384
    # each consumer's one staging buffer feeds both the fp16 tile (C) and the fp32 piece (W)
    c_buf = set(re.findall(r"tma_store\(C_desc, \(&\(\(\(half_t\*\)(\w+)\)", src))
    w_buf = set(re.findall(r"tma_store\(W_desc, \(&\(\(\(float\*\)(\w+)\)", src))
    assert c_buf == w_buf == {"F0_s", "F1_s"}
    assert not re.search(r"void\* H[01]_s", src)
    first_c = src.index("tma_store(C_desc")
    assert src.index("tma_store_wait<0, true>()", first_c) < src.index("tma_store(W_desc")
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"]
