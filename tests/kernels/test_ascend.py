"""Ascend kernels: lowered on the CPU through tilelang 0.1.15, never run on an NPU.

The module captures the four course kernels once (a few seconds) and checks what the
compiler produced and decided against the constants of the installed
``estimate_latency.h`` and against the committed record in measure/results/ascend/.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("tilelang")

from measure import ascend as C  # noqa: E402
from kernels.ascend import programs as P  # noqa: E402
from kernels.ascend import surface  # noqa: E402


@pytest.fixture(scope="module")
def caps():
    return C.capture_all()


@pytest.fixture(scope="module")
def hdr():
    """Integer constants of the installed Ascend latency model header."""
    import tilelang

    path = Path(tilelang.__file__).parent / "src" / "ascend" / "transform" / "estimate_latency.h"
    return {k: int(v) for k, v in re.findall(r"int64_t (\w+)\{(\d+)\};", path.read_text())}


def _task(cap, op):
    hits = [t for t in cap.tasks if t["op"] == op]
    assert hits, f"{cap.name}: no task {op!r} in {[t['op'] for t in cap.tasks]}"
    return hits[0]


@pytest.mark.slow
def test_every_kernel_stops_exactly_at_bisheng(caps):
    kinds = {"gemm_relu": "mix(1, 2)", "gemm_splitk": "cube", "rmsnorm": "vector", "vector_add_simt": "vector"}
    assert set(caps) == set(kinds)
    for name, cap in caps.items():
        assert "bisheng" in cap.stopped_at
        assert cap.bisheng["npu_arch"] == "dav-3510"
        assert cap.bisheng["target_format"] == "aibin"
        assert cap.kernel_kind == kinds[name]
        assert "tl.EstimateLatency" in cap.pass_order and "tl.InsertSync" in cap.pass_order
        assert cap.pass_order.index("tl.EstimateLatency") < cap.pass_order.index("tl.AutoSchedule") \
            < cap.pass_order.index("tl.InsertSync") < cap.pass_order.index("tl.MaterializeMultiBuffer")


@pytest.mark.slow
def test_sources_use_the_expected_ascendc_calls(caps):
    g = caps["gemm_relu"].source
    assert "ascend_gemm_l1<256, 128, 224" in g  # M, K, N of one Cube call
    assert "asc_copy_gm2l1_nd2nz" in g and "asc_copy_l0c2ub" in g and "asc_copy_ub2gm_align" in g
    assert "__simt_vf__ __launch_bounds__(128)" in g and "asc_vf_call" in g
    assert "if ASC_IS_AIC" in g and "if ASC_IS_AIV" in g
    s = caps["gemm_splitk"].source
    assert "asc_set_atomic_add_float" in s and "asc_set_atomic_none" in s
    assert "asc_sync_inter_arrive(PIPE_FIX, 0)" in s and "asc_copy_l0c2gm" in s
    r = caps["rmsnorm"].source
    assert "AscendAllReduce<tl::SumOp, 1024" in r and "rsqrtf" in r and "__bfloat1622float2" in r
    v = caps["vector_add_simt"].source
    assert "__launch_bounds__(1024)" in v and "asc_copy_gm2ub_align" in v


@pytest.mark.slow
def test_cube_and_mte2_estimates_follow_the_header(caps, hdr):
    """Cube: 2*M*N*K / throughput (+ base); GM->L1: bytes / bandwidth (+ base)."""
    bw, base = hdr["aic_mte2_to_l1_bandwidth"], hdr["mte2_gm_to_l1_base_latency"]
    for name, (m, n, k, a_rows, b_rows) in {"gemm_relu": (256, 224, 128, 256, 224),
                                            "gemm_splitk": (256, 256, 256, 256, 256)}.items():
        cap = caps[name]
        gemm = _task(cap, "gemm a_l1 x b_l1 -> acc")
        assert gemm["ii"] == 2 * m * n * k // hdr["cube_throughput_bf16"]
        assert gemm["latency"] == gemm["ii"] + hdr["cube_base_latency"]
        for op, rows in (("copy A -> a_l1", a_rows), ("copy B -> b_l1", b_rows)):
            t = _task(cap, op)
            assert t["ii"] == math.ceil(rows * k * 2 / bw)
            assert t["latency"] == t["ii"] + base
            assert t["core"] == "AIC"


@pytest.mark.slow
def test_vector_copies_charge_two_aivs(caps, hdr):
    """Pure-Vector kernels: bytes are the aggregate of the two AIVs (2x one core's tile)."""
    cap = caps["vector_add_simt"]
    tile_bytes = 8192 * 4
    load = _task(cap, "copy A -> a")
    assert load["ii"] == math.ceil(2 * tile_bytes / hdr["mte2_gm_to_ub_bandwidth"])
    assert load["latency"] == load["ii"] + hdr["mte2_gm_to_ub_base_latency"]
    store = _task(cap, "copy c -> C")
    assert store["ii"] == math.ceil(2 * tile_bytes / hdr["mte3_ub_to_gm_bandwidth"])
    assert store["latency"] == store["ii"] + hdr["mte3_ub_to_gm_base_latency"]
    assert all(t["core"] == "AIV" for t in cap.tasks)


@pytest.mark.slow
def test_gemm_relu_binds_on_the_cube(caps):
    """The README tile: Cube II exceeds the two GM->L1 loads together (the chapter's claim)."""
    cap = caps["gemm_relu"]
    cube = _task(cap, "gemm a_l1 x b_l1 -> acc")["ii"]
    mte2 = _task(cap, "copy A -> a_l1")["ii"] + _task(cap, "copy B -> b_l1")["ii"]
    assert (cube, mte2) == (1792, 1230)
    assert 1.0 < cube / mte2 < 1.5
    assert _task(cap, "SimtVF region")["core"] == "AIV"


@pytest.mark.slow
def test_multibuffer_decisions(caps):
    assert caps["gemm_relu"].buffer_versions == {"a_l1": 2, "b_l1": 2, "out_ub": 1}
    assert caps["gemm_splitk"].buffer_versions == {"a_l1": 2, "b_l1": 2}
    assert caps["rmsnorm"].buffer_versions == {"x_ub": 2, "y_ub": 2}
    # Only the output tile of the vector add is double-buffered by the scheduler.
    assert caps["vector_add_simt"].buffer_versions == {"a": 1, "b": 1, "c": 2}
    assert "(kk & 1) * 32768" in caps["gemm_relu"].source  # ping-pong A tile in L1
    assert "(step & 1) * 8192" in caps["vector_add_simt"].source


@pytest.mark.slow
def test_insert_sync_flags_pair_up(caps):
    g = caps["gemm_relu"]
    for f in ("MTE2_MTE1", "MTE1_MTE2", "M_FIX", "V_MTE3"):
        assert f"ascend_set_flag:{f}" in g.flags and f"ascend_wait_flag:{f}" in g.flags
    assert "ascend_cross_core_set_flag:PIPE_FIX" in g.flags
    assert g.sync["asc_sync_intra_arrive"] == 2 and g.sync["asc_sync_intra_wait"] == 1
    assert caps["gemm_splitk"].sync["asc_sync_inter_arrive"] == 1
    for name, cap in caps.items():
        notify = Counter(re.findall(r"asc_sync_notify\((PIPE_\w+), (PIPE_\w+)", cap.source))
        wait = Counter(re.findall(r"asc_sync_wait\((PIPE_\w+), (PIPE_\w+)", cap.source))
        assert set(notify) == set(wait), cap.name
        if name == "gemm_splitk":
            # M->FIX is awaited in two mutually exclusive branches (split 0 / the others).
            assert wait[("PIPE_M", "PIPE_FIX")] == 2 * notify[("PIPE_M", "PIPE_FIX")]
            assert "if ((((int32_t)block_idx) % 8) == 0)" in cap.source
        else:
            assert notify == wait, name
        assert cap.sync["pipe_pairs"] >= 2


@pytest.mark.slow
def test_committed_record_matches_a_fresh_capture(caps):
    idx = C.load_index()
    assert "never run on an NPU" in idx["label"]
    assert set(idx["kernels"]) == set(caps)
    for name, cap in caps.items():
        rec = idx["kernels"][name]
        assert rec["tasks"] == cap.tasks and rec["buffer_versions"] == cap.buffer_versions
        committed = (C.RESULTS_DIR / f"{name}.asc").read_text().split("\n", 1)[1]
        assert committed == cap.source
        assert "never run on an NPU" in (C.RESULTS_DIR / f"{name}.asc").read_text().splitlines()[0]


@pytest.mark.slow
def test_language_surface_audit():
    findings = surface.audit()
    bad = [f for f in findings if not f.ok]
    assert not bad, bad
    items = {f.item for f in findings}
    assert {"T.alloc_ub", "T.tile", "alloc_shared in AscendC"} <= items
    import tilelang.ascend.language as T

    with pytest.raises(AttributeError):
        T.alloc_ub  # noqa: B018  (the adapter's name, absent from mainline)


def test_rmsnorm_plan_fills_the_ub_budget():
    plan = P.plan_rmsnorm(4096)
    assert plan.budget_bytes == 248 * 1024 - 32 * 1024
    assert plan.rows == 4 and plan.used_bytes <= plan.budget_bytes
    assert plan.used_bytes + 2 * 2 * 4096 * 2 * plan.rows > plan.budget_bytes  # doubling would not fit
    assert P.plan_rmsnorm(1024).rows == 16
    with pytest.raises(ValueError, match="multiple of 128"):
        P.plan_rmsnorm(1000)
    with pytest.raises(ValueError, match="UB"):
        P.plan_rmsnorm(128 * 256)


def test_bad_configurations_raise_value_error():
    with pytest.raises(ValueError, match="block_N"):
        P.gemm_relu(N=7000)
    with pytest.raises(ValueError, match="L0C"):
        P.check_gemm_relu(512, 512, 128, 512, 256, 128, 32)
    with pytest.raises(ValueError, match="split_k"):
        P.gemm_splitk(split_k=1)
    with pytest.raises(ValueError, match="tile\\*split_k"):
        P.gemm_splitk(K=1000)
    with pytest.raises(ValueError, match="tile\\*num_blocks"):
        P.vector_add(n=1000)


def test_references_agree_with_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(7)
    a = torch.randn(16, 32, generator=g).bfloat16()
    b = torch.randn(8, 32, generator=g).bfloat16()
    assert torch.equal(P.ref_gemm_relu(a, b), torch.relu(P.ref_gemm(a, b)))
    assert (P.ref_gemm_relu(a, b) >= 0).all() and (P.ref_gemm_relu(a, b) == 0).any()
    x = torch.randn(4, 256, generator=g)
    w = torch.randn(256, generator=g)
    torch.testing.assert_close(P.ref_rmsnorm(x, w), torch.nn.functional.rms_norm(x, (256,), w, eps=1e-6))


@pytest.mark.slow
def test_compiler_estimates_against_ledger_pipe_model(caps):
    """ledger.ascend.pipe_ii (the chapter's teaching model) against what EstimateLatency emitted."""
    from ledger import ascend as la

    cap = caps["gemm_relu"]
    ii = la.pipe_ii(256, 224, 128, "bf16")
    gemm = _task(cap, "gemm a_l1 x b_l1 -> acc")
    assert ii.cube == gemm["ii"] == 1792 and ii.cube_latency == gemm["latency"]
    assert ii.binding == "Cube"
    compiler_mte2 = _task(cap, "copy A -> a_l1")["ii"] + _task(cap, "copy B -> b_l1")["ii"]
    # the ledger rounds the two loads together, the compiler rounds each copy up on its own
    assert (ii.mte2, compiler_mte2) == (1229, 1230)
    sk = caps["gemm_splitk"]
    ii2 = la.pipe_ii(256, 256, 256, "bf16")
    assert ii2.cube == _task(sk, "gemm a_l1 x b_l1 -> acc")["ii"] == 4096
    assert ii2.mte2 == _task(sk, "copy A -> a_l1")["ii"] + _task(sk, "copy B -> b_l1")["ii"] == 2622
