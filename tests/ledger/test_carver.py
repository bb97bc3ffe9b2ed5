"""The carver re-computation against the drafts and against the installed carver itself."""
import math

import pytest

from ledger import carver
from ledger.carver import CarverDevice, BestFit, evaluate_tile, walk


def test_factors_and_coalescing():
    assert carver.get_all_factors(4096) == [2 ** i for i in range(13)]
    assert carver.get_all_factors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
    # a (1, 4096) row of a (4096, 4096) matrix is contiguous; a (4096, 1) column is not
    assert carver.coalesced_tensor_shape([1, 4096], [4096, 4096], 64) == 4096
    assert carver.coalesced_tensor_shape([4096, 1], [4096, 4096], 64) == 64 * 4096


def test_bestfit_aligns_to_32_and_reuses_freed_space():
    a = BestFit()
    x = a.malloc(33)
    assert a.limit == 64
    a.free(x)
    a.malloc(40)  # fits into the freed 64 bytes
    assert a.limit == 64
    a.malloc(100)
    assert a.limit == 64 + 128


def test_reduce_step_fills_one_read_transaction():
    assert carver.assign_reduce_step(4096, 2) == 64   # 128 B / 2 B
    assert carver.assign_reduce_step(4096, 1) == 128  # fp8: 128 elements
    assert carver.assign_reduce_step(4096, 4) == 32


def test_traffic_times_grid_is_the_chapter_formula():
    m = n = k = 4096
    for bm, bn in [(128, 128), (128, 256), (256, 256), (64, 128)]:
        e = evaluate_tile((bm, bn), m, n, k, rstep=64)
        formula = 2 * m * n * k * (1 / bm + 1 / bn) + 2 * m * n
        assert carver.total_traffic(e) == pytest.approx(formula, rel=0, abs=1e-6)


def test_block_k_has_no_resolution():
    a = evaluate_tile((128, 256), 4096, 4096, 4096, rstep=16)
    b = evaluate_tile((128, 256), 4096, 4096, 4096, rstep=128)
    assert a.traffic == b.traffic and a.priority == b.priority
    assert a.smem != b.smem  # only the footprint sees block_K


def test_rejections_and_residency():
    big = evaluate_tile((256, 256), 4096, 4096, 4096, rstep=64)
    assert not big.valid and big.reject == "regs"  # 2*65536 > 65536
    huge = evaluate_tile((4096, 4096), 4096, 4096, 4096, rstep=64)
    assert huge.reject == "smem"
    ok = evaluate_tile((128, 128), 4096, 4096, 4096, rstep=64)
    assert ok.block_per_sm == min(2 * 227 * 1024 // ok.smem, 65536 // ok.reg_usage, 4)
    assert ok.num_wave == math.ceil(ok.grid / (ok.block_per_sm * 132))


def test_book_walk_counts_pinned():
    w = carver.book_walk()
    assert w.n_visited == w.n_valid + w.n_rejected("regs") + w.n_rejected("smem")
    # ours, pinned; the draft printed 729 / 154 / 122 / 453 / 48 / 8 (erratum figures)
    assert (w.n_visited, w.n_valid, w.n_rejected("regs"), w.n_rejected("smem")) == (123, 106, 5, 12)
    assert (w.distinct_priorities, w.ties_at_top) == (91, 2)
    figs = {f.key: f for f in carver.figures()}
    assert figs["perfmodel.erratum.carver_visited"].value == 123
    assert "729" in figs["perfmodel.erratum.carver_visited"].conditions


def test_draft_grid_reading():
    # the draft's 729 and 453 are a full 3-D grid; its other counts are not reproduced
    assert carver.grid3d_counts() == {"visited": 729, "valid": 186, "regs": 90, "smem": 453}


def test_bad_input():
    with pytest.raises(ValueError, match="m"):
        walk(0, 16, 16)
    with pytest.raises(ValueError, match="smem_cap"):
        CarverDevice(smem_cap=0)


# --- the installed carver itself, on a hand-built device model (no GPU needed) ---------

def _installed_walk(trans_b: bool):
    pytest.importorskip("tilelang")
    tvm = pytest.importorskip("tvm")
    from tilelang.carver.arch.arch_base import TileDevice
    from tilelang.carver.roller.policy import DefaultPolicy
    from tilelang.carver.template import MatmulTemplate

    class Dev(TileDevice):
        def __init__(self):
            super().__init__()
            d = CarverDevice()
            self.platform = "CUDA"
            self.smem_cap = d.smem_cap
            self.compute_max_core = d.compute_max_core
            self.warp_size = d.warp_size
            self.reg_cap = d.reg_cap
            self.max_smem_usage = d.max_smem
            self.sm_partition = d.sm_partition
            self.transaction_size = list(d.transaction_size)
            self.bandwidth = list(d.bandwidth)
            self.compute_capability = "90"

    t = MatmulTemplate(M=4096, N=4096, K=4096, in_dtype="float16", out_dtype="float16",
                       accum_dtype="float32", trans_B=trans_b)
    pol = DefaultPolicy.from_prim_func(t.equivalent_function(), Dev())
    seen = []
    orig = pol.compute_tile_dict

    def spy(tile, rmap):
        td = orig(tile, rmap)
        seen.append((tuple(tile), td))
        return td

    pol.compute_tile_dict = spy
    rmap = {node: pol._assign_reduce_step(node) for node in pol.ordered_nodes}
    ranked = pol.dfs_smem_tile(pol.get_base_tile(), rmap)
    bits = pol.ordered_nodes[0].get_dtype().bits
    return seen, ranked, list(rmap.values())[0], bits


@pytest.mark.parametrize("trans_b", [True, False])
def test_matches_installed_carver(trans_b):
    seen, ranked, rstep, bits = _installed_walk(trans_b)
    assert bits == 16  # carver reads the output dtype: the assumption our book changes to 32
    ours = walk(4096, 4096, 4096, reg_bits=bits, trans_b=trans_b)
    assert [tuple(e.tile) for e in ours.visited] == [t for t, _ in seen]
    assert list(rstep.values()) == [ours.visited[0].rstep]
    for (tile, td), e in zip(seen, ours.visited):
        assert td.valid == e.valid, tile
        assert td.traffic == pytest.approx(e.traffic), tile
        assert td.smem_cost == e.smem, tile
        if e.valid:
            assert td.num_wave == e.num_wave and td.block_per_SM == e.block_per_sm, tile
    assert [tuple(td.output_tile) for td in ranked] == [e.tile for e in ours.ranked]
