"""CPU checks of split-K's in-kernel fix-up on the hand-written pipeline (``fixup``, kernels/gemm/ws.py):
every item stores its fp32 partial chunk to the workspace and counts it on the chunk's counter; the
arrival that sees ``splits - 1`` earlier ones resets the counter and writes the chunk of C.  The counter
and addressing logic is emulated in numpy (any arrival order, several launches, a launch cut short);
configuration errors name their constraint; the suite's new candidates compile for sm_90a."""

import itertools

import numpy as np
import pytest

from kernels.gemm import splitk, ws
from measure.suites.gemm import splitk_ws as splitk_ws_suite


# ------------------------------------------------------------------ addressing of one chunk
@pytest.mark.parametrize("cols", [64, 128])
def test_fixup_slots_cover_the_chunk_once_in_register_order(cols):
    """The 128 threads of a consumer, 8-column groups ``c`` and row halves ``r``: every (row, column
    pair) of a 64 x cols chunk exactly once, and each thread's register pairs ``4c + 2r`` distinct."""
    seen = np.zeros((64, cols // 2), dtype=int)
    for tid in range(128):
        regs = set()
        for c in range(cols // 8):
            for r in range(2):
                row, col, reg = ws.fixup_slot(tid, c, r)
                assert col % 2 == 0 and 0 <= col < cols and 0 <= row < 64
                seen[row, col // 2] += 1
                regs.add(reg)
        assert regs == set(range(0, cols // 2, 2))  # the chunk's cols / 2 registers, in pairs
    assert (seen == 1).all()


def test_fixup_counters_are_one_per_chunk_and_distinct():
    M, N, block_n, epi = 512, 768, 256, 64
    n = ws.fixup_counters(M, N, block_n, epi)
    grid_n, chunks = N // block_n, block_n // epi
    idx = [ws.fixup_counter(tm, tn, wg, h, grid_n, chunks)
           for tm in range(M // 128) for tn in range(grid_n) for wg in range(2) for h in range(chunks)]
    assert sorted(idx) == list(range(n)) and n == (M // 128) * grid_n * 2 * chunks


# ------------------------------------------------------------------ the counter protocol
def _launch(parts, P, C, L, block_n, epi, order, stop_after=None):
    """One launch in numpy: the (tile, slice, consumer, chunk) arrivals in ``order``; each stores its
    partial chunk into P, adds 1 to the counter (the value before: ``old``) and, if ``old == S - 1``,
    resets it and writes C's chunk as the left-to-right sum of the S slices (its own from the
    accumulator, the others read from P).
    ``stop_after``: the launch dies after that many arrivals (the rest never run)."""
    S, M, N = parts.shape
    grid_n, chunks = N // block_n, block_n // epi
    reducers = {}
    for n, (tm, tn, s, wg, h) in enumerate(order):
        if stop_after is not None and n == stop_after:
            break
        r0, c0 = tm * 128 + wg * 64, tn * block_n + h * epi
        P[s, r0:r0 + 64, c0:c0 + epi] = parts[s, r0:r0 + 64, c0:c0 + epi]
        k = ws.fixup_counter(tm, tn, wg, h, grid_n, chunks)
        old = L[k]
        L[k] += 1
        if old == S - 1:
            L[k] = 0
            total = None
            for j in range(S):  # its own slice from the registers, the others from P
                x = parts[s, r0:r0 + 64, c0:c0 + epi] if j == s else P[j, r0:r0 + 64, c0:c0 + epi]
                total = x.copy() if total is None else total + x
            C[r0:r0 + 64, c0:c0 + epi] = total.astype(np.float16)
            reducers[k] = reducers.get(k, 0) + 1
    return reducers


def _arrivals(M, N, S, block_n, epi, rng):
    items = list(itertools.product(range(M // 128), range(N // block_n), range(S), range(2), range(block_n // epi)))
    return [items[i] for i in rng.permutation(len(items))]


@pytest.mark.parametrize("splits,epi", [(2, 64), (4, 64), (4, 128)])
def test_fixup_emulated_any_order_one_reducer_exact_sum_counters_back_to_zero(splits, epi):
    rng = np.random.default_rng(splits * 1000 + epi)
    M, N, block_n = 256, 512, 256
    parts = rng.standard_normal((splits, M, N)).astype(np.float32)
    want = parts[0].copy()
    for j in range(1, splits):
        want = want + parts[j]
    want = want.astype(np.float16)
    L = np.zeros(ws.fixup_counters(M, N, block_n, epi), dtype=np.int32)  # zeroed once
    P = np.full((splits, M, N), np.nan, dtype=np.float32)
    for _ in range(3):  # launches in different arrival orders, counters kept between them
        C = np.full((M, N), np.nan, dtype=np.float16)
        reducers = _launch(parts, P, C, L, block_n, epi, _arrivals(M, N, splits, block_n, epi, rng))
        assert sorted(reducers) == list(range(L.size)) and set(reducers.values()) == {1}
        assert not (L != 0).any()
        np.testing.assert_array_equal(C, want)  # bit-identical: the order of the adds is fixed


def test_fixup_emulated_launch_cut_short_leaves_counters_and_the_next_launch_sums_too_early():
    """The reason every check of a fix-up runner also checks its counters: a launch that dies midway
    leaves counts behind, and the next launch, with the same inputs, writes the right C from the
    stale workspace while its counters stay off zero -- only the counters show it."""
    rng = np.random.default_rng(7)
    S, M, N, block_n, epi = 4, 128, 256, 256, 64
    parts = rng.standard_normal((S, M, N)).astype(np.float32)
    L = np.zeros(ws.fixup_counters(M, N, block_n, epi), dtype=np.int32)
    P = np.full((S, M, N), np.nan, dtype=np.float32)
    C = np.full((M, N), np.nan, dtype=np.float16)
    _launch(parts, P, C, L, block_n, epi, _arrivals(M, N, S, block_n, epi, rng))
    _launch(parts, P, C, L, block_n, epi, _arrivals(M, N, S, block_n, epi, rng), stop_after=5)
    assert (L != 0).any()
    C2 = np.full((M, N), np.nan, dtype=np.float16)
    _launch(parts, P, C2, L, block_n, epi, _arrivals(M, N, S, block_n, epi, rng))
    assert not np.isnan(C2).any() and (L != 0).any()


def test_check_counters_counts_what_a_runner_left_behind():
    torch = pytest.importorskip("torch")

    def fn(c):
        return c

    assert splitk.check_counters(fn) == 0  # a runner without counters
    fn.counters = torch.zeros(8, dtype=torch.int32)
    assert splitk.check_counters(fn) == 0
    fn.counters[3] = 2
    assert splitk.check_counters(fn) == 1


# ------------------------------------------------------------------ configuration errors
def test_fixup_errors_name_the_constraint():
    kw = dict(fp8=False, block_N=256, block_K=64, stages=4, panel=8, inflight=0, epi_cols=64)
    with pytest.raises(ValueError, match="fixup needs splits > 1"):
        ws._ws_program(1024, 1024, 16384, cluster=1, workers=132, splits=1, fixup=True, **kw)
    with pytest.raises(ValueError, match="no cluster_reduce"):
        ws._ws_program(1024, 1024, 16384, cluster=1, workers=132, splits=4, fixup=True, cluster_reduce=True, **kw)
    with pytest.raises(ValueError, match="without clipping: M=1000 must be a multiple of 128"):
        ws._ws_program(1000, 1024, 16384, cluster=1, workers=132, splits=4, fixup=True, **kw)
    with pytest.raises(ValueError, match="multiple of 128\\*cluster = 256"):
        ws._ws_program(1152, 1024, 16384, cluster=2, workers=132, splits=4, fixup=True, **kw)
    with pytest.raises(ValueError, match="fewer than 2\\^31"):
        ws._ws_program(32768, 32768, 1024, cluster=1, workers=132, splits=2, fixup=True, **kw)
    with pytest.raises(ValueError, match="fixup has no reduction kernel"):
        splitk.ws_splitk_config(4, reduce_rows=32, fixup=True)
    with pytest.raises(ValueError, match="fixup has no reduction kernel and no cluster sum"):
        splitk.ws_splitk_config(4, cluster_reduce=True, fixup=True)


def test_fixup_input_checks_name_the_constraint():
    torch = pytest.importorskip("torch")
    cfg = splitk.ws_splitk_config(4, fixup=True)
    b = torch.zeros((1024, 1024), dtype=torch.float16)
    with pytest.raises(ValueError, match="128"):  # 1040 rows: whole 16-row pieces, not 128-row tiles
        splitk.check_ws_inputs(torch.zeros((1040, 1024), dtype=torch.float16), b, cfg)
    with pytest.raises(ValueError, match="CUDA device"):
        splitk.check_ws_inputs(torch.zeros((1024, 1024), dtype=torch.float16), b, cfg)


def test_fixup_config_and_label_leave_earlier_ones_alone():
    assert "fixup" not in splitk.ws_splitk_config(4, reduce_rows=32)
    assert splitk.ws_splitk_label(splitk.ws_splitk_config(4, fixup=True)) == "ws s=4 128x256 st4 e64 last"
    labels = [splitk.ws_splitk_label(c) for c in splitk_ws_suite.CANDIDATES]
    assert "ws s=4 128x256 st4 e64 r32" in labels and "ws s=2 128x256 st4 e64" in labels  # the recorded bests
    assert len(set(labels)) == len(labels) and sum(lab.endswith(" last") for lab in labels) == 4


# ------------------------------------------------------------------ the candidates compile
@pytest.fixture(scope="module")
def _fresh(fresh_compiles):
    yield


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [c for c in splitk_ws_suite.CANDIDATES if c.get("fixup")],
                         ids=lambda c: splitk.ws_splitk_label(c).replace(" ", "_"))
def test_fixup_candidates_compile_to_one_kernel_with_the_counter_protocol(_fresh, cfg):
    from kernels.gemm.lowered import launch_info

    M, N, K = splitk_ws_suite.SHAPES[0]
    gemm, red = splitk.build_ws(M, N, K, cfg, 132)
    assert red is None  # no second kernel
    src = gemm.get_kernel_source()
    # the partial and the sum use the chunk's columns and the split; the count is an acq_rel atomic
    # (memory order 4) whose previous value decides, and the reducer resets the counter
    assert src.count(f"skqf::store_partial<{cfg['epi_cols']}>") == 2
    assert src.count(f"skqf::sum_store<{cfg['epi_cols']}, {cfg['splits']}>") == 2
    assert "tile[2], (((int)threadIdx.x) & 127));" in src  # the reducer's own slice: its K slice index
    assert "@q ld.global.cg.v2.f32" in src  # the other slices' loads are predicated, not branched around
    assert src.count("AtomicAddRet(") == 2 and src.count(", 1, 4);") == 2
    assert src.count(f"((int*)F)[0] == {cfg['splits'] - 1}") >= 1 and src.count("] = 0;") >= 2
    assert "tma_store" not in src and "half_t* __restrict__ C" in src and "int* __restrict__ L" in src
    assert launch_info(gemm).grid == (132, 1, 1)
    # four (or seven) operand stages, no C staging: the fix-up stores from registers
    assert launch_info(gemm).dyn_smem_bytes < cfg["stages"] * (128 + cfg["block_N"]) * 64 * 2 + 1024


def test_suite_counter_check_fails_on_a_counter_left_behind():
    """The suites' check of a fix-up runner's counters is an ordinary check record: ok when all are
    zero, failing when a launch left one behind; nothing is recorded for a runner without counters."""
    torch = pytest.importorskip("torch")
    from measure.check import Checking

    class H(Checking):
        def __init__(self):
            self.torch, self.device, self.suite, self.records = torch, "cpu", "gemm.splitk_ws", []

        def log(self, msg):
            pass

    h = H()

    def fn(c):
        return c

    splitk_ws_suite.check_fixup_counters(h, "no counters", fn)
    assert h.records == []
    fn.counters = torch.zeros(16, dtype=torch.int32)
    splitk_ws_suite.check_fixup_counters(h, "zero", fn)
    fn.counters[5] = 1
    splitk_ws_suite.check_fixup_counters(h, "left behind", fn)
    assert [r["ok"] for r in h.records] == [True, False] and h.records[1]["mismatched"] == 1
