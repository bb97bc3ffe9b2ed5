"""CPU checks of the programmatic dependent launch (``pdl``) of split-K's reduction and stream-K's
fix-up: the configuration and its label, the errors that name the constraint, and, compiled for
sm_90a, that the first kernel signals its dependents once per thread at its start
(``cudaTriggerProgrammaticLaunchCompletion``), that the second kernel waits for the first one
(``cudaGridDependencySynchronize``) before it reads a partial and is marked for a PDL launch
(``has_cuda_pdl_sync``, which tilelang's CUDA runtime turns into the launch attribute), and that
the configurations without ``pdl`` compile exactly as before (neither call)."""

import pytest

from kernels.gemm import splitk, streamk
from measure.suites.gemm import splitk_ws as sk_suite
from measure.suites.gemm import streamk_ws as st_suite

TRIGGER = "cudaTriggerProgrammaticLaunchCompletion();"
SYNC = "cudaGridDependencySynchronize();"


def test_pdl_config_and_labels_leave_earlier_ones_alone():
    assert "pdl" not in splitk.ws_splitk_config(4, reduce_rows=32)
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, reduce_rows=32)) == "ws s=4 128x256 st4 e64 r32"
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, reduce_rows=32, pdl=True)) == \
        "ws s=4 128x256 st4 e64 r32 pdl"
    assert "pdl" not in streamk.ws_config(128, 5, 64, -1)
    assert streamk.ws_label(streamk.ws_config(128, 5, 64, -1, pdl=True)) == "dp+sk 128x128 st5 e64 pdl"
    # each suite runs the pdl form next to the same schedule without it, in the same run
    sk = {splitk.ws_splitk_label(c) for c in sk_suite.CANDIDATES}
    assert "ws s=4 128x256 st4 e64 r32 pdl" in sk and "ws s=4 128x256 st4 e64 r32" in sk
    st = {streamk.ws_label(c) for c in st_suite.CANDIDATES[(1536, 1536, 8192)]}
    assert "dp+sk 128x128 st5 e64 pdl" in st and "dp+sk 128x128 st5 e64" in st


def test_pdl_errors_name_the_constraint():
    with pytest.raises(ValueError, match="fixup have none"):
        splitk.ws_splitk_config(4, fixup=True, pdl=True)
    with pytest.raises(ValueError, match="fixup have none"):
        splitk.ws_splitk_config(2, cluster_reduce=True, pdl=True)
    with pytest.raises(ValueError, match="with fixup there is none"):
        streamk.ws_config(128, 5, 64, -1, fixup=True, pdl=True)


@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


def _pdl_marked(kernel) -> bool:
    return any(int(f.attrs.get("has_cuda_pdl_sync", 0)) for f in kernel.artifact.device_mod.functions.values())


def _body(src: str) -> str:
    return src[src.index("extern \"C\" __global__"):]


@pytest.mark.slow
def test_splitk_pdl_trigger_first_then_the_reduction_waits_before_reading(_fresh):
    gemm, red = splitk.build_ws(1024, 1024, 16384, splitk.ws_splitk_config(4, reduce_rows=32, pdl=True))
    g, r = _body(gemm.get_kernel_source()), _body(red.get_kernel_source())
    assert g.count(TRIGGER) == 1 and SYNC not in g
    # the trigger is reached by every thread: before the warp roles split (the producer's register release)
    assert g.index(TRIGGER) < g.index("if (((int)threadIdx.x) < 128)") < g.index("warpgroup_reg_dealloc")
    assert r.count(SYNC) == 1 and TRIGGER not in r
    assert r.index(SYNC) < r.index("(P + ")  # waits before the first read of a partial
    assert _pdl_marked(red) and not _pdl_marked(gemm)
    # without pdl: the same kernels as recorded before, neither call, no PDL launch
    gemm0, red0 = splitk.build_ws(1024, 1024, 16384, splitk.ws_splitk_config(4, reduce_rows=32))
    for k in (gemm0, red0):
        assert TRIGGER not in k.get_kernel_source() and SYNC not in k.get_kernel_source() and not _pdl_marked(k)


@pytest.mark.slow
def test_streamk_pdl_fixup_waits_for_the_streamk_kernel(_fresh):
    gemm, fix = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1, pdl=True))
    g, f = _body(gemm.get_kernel_source()), _body(fix.get_kernel_source())
    assert g.count(TRIGGER) == 1 and SYNC not in g
    assert g.index(TRIGGER) < g.index("if (((int)threadIdx.x) < 128)") < g.index("warpgroup_reg_dealloc")
    assert f.count(SYNC) == 1 and TRIGGER not in f and f.index(SYNC) < f.index("(W + ")
    assert _pdl_marked(fix) and not _pdl_marked(gemm)
    _, fix0 = streamk.build_ws(1536, 1536, 8192, streamk.ws_config(128, 5, 64, -1))
    assert SYNC not in fix0.get_kernel_source() and not _pdl_marked(fix0)


def test_pdl_at_is_kept_only_when_it_moves_the_signal():
    assert "pdl_at" not in streamk.ws_config(128, 5, 64, -1, pdl=True)
    assert streamk.ws_config(128, 5, 64, -1, pdl=True, pdl_at="end")["pdl_at"] == "end"
    assert streamk.ws_label(streamk.ws_config(128, 5, 64, -1, panel=0, pdl=True, pdl_at="tail", fix_vec=True,
                                              fix_rows=4)) == "dp+sk 128x128 st5 e64 p0 pdl@tail fr4 fv"
    with pytest.raises(ValueError, match="pdl_at='end' places the signal of pdl: it needs pdl=True"):
        streamk.ws_config(128, 5, 64, -1, pdl_at="end")
    with pytest.raises(ValueError, match="pdl_at must be one of"):
        streamk.ws_config(128, 5, 64, -1, pdl=True, pdl_at="middle")


def _consumers(src: str) -> list[str]:
    """The two consumer warpgroups' code of a stream-K kernel (after each one's register raise)."""
    parts = src.split("tl::warpgroup_reg_alloc<232>();")
    assert len(parts) == 3
    return parts[1:]


@pytest.mark.slow
def test_pdl_at_moves_the_signal_to_each_consumers_end_or_tail(_fresh):
    """``pdl_at="end"``: each consumer signals once, after its last tail piece's store (the producer never does, so
    a block's first signal comes when a consumer is done); ``"tail"``: after the consumer's whole tiles went to C and
    before its first tail piece.  Either way the fix-up waits for the whole kernel, as with the signal at the start."""
    for at in ("end", "tail"):
        cfg = streamk.ws_config(128, 5, 64, -1, panel=0, pdl=True, pdl_at=at, fix_vec=True, fix_rows=4)
        gemm, fix = streamk.build_ws(1536, 1536, 8192, cfg, 132)
        g, f = _body(gemm.get_kernel_source()), _body(fix.get_kernel_source())
        assert g.count(TRIGGER) == 2 and SYNC not in g
        assert TRIGGER not in g[:g.index("warpgroup_reg_alloc<232>")]  # not at the start, not in the producer
        for c in _consumers(g):
            assert c.count(TRIGGER) == 1
            t = c.index(TRIGGER)
            if at == "end":
                assert c.rindex("tma_store(W_desc") < t
            else:
                assert c.rindex("tma_store(C_desc") < t < c.index("tma_store(W_desc")
        assert f.count(SYNC) == 1 and f.index(SYNC) < f.index("sksp::reduce_rows<") and _pdl_marked(fix)
