"""CPU checks of ``kglob`` in the W4A16 kernel (kernels/gemm/w4a16.py): two blocks split K for the same 128 weight
rows, as ``kpair`` does, but without a cluster; each consumer leaves its fp32 partial in the block's slot of a global
workspace and counts on its tile's counter, and the second of the pair to count adds the other's partial and
stores.  The configuration errors name their constraint; the workspace shapes; the caller's wrapper; in the sm_90a
code (slow) an acq_rel count, the reset, the pair's other slot read back, and no cluster."""

import re

import pytest

from kernels.gemm import w4a16

KG = dict(wide=True, perm=True, fuse=True, kglob=True)


def test_label_config_and_grid():
    cfg = w4a16.config(64, 256, 4, "n", stages_w=4, lag=True, **KG)
    assert cfg["kglob"] is True and w4a16.label(cfg) == "m64_k256_s4_w4_n_il_lg_fu_kg_wd"
    assert "kglob" not in w4a16.config(64, 256, 4, "n", stages_w=4, wide=True)
    assert w4a16.grid(64, 8192, block_M=64, split="n", kglob=True) == (128, 1)  # 64 tiles of 128 rows, 2 halves
    assert w4a16.grid(64, 8192, block_M=64, split="n") == (64, 1)


def test_workspace_is_a_slot_a_block_and_a_counter_a_tile_and_consumer():
    ws, cnt = w4a16.kglob_workspace(64, 8192, block_M=64)
    assert ws == (128 * 128, 64) and cnt == (128,)
    ws, cnt = w4a16.kglob_workspace(130, 8192, block_M=64)  # three rows of activation tiles
    assert ws == (3 * 128 * 128, 64) and cnt == (3 * 128,)


@pytest.mark.parametrize("kw, words", [
    (dict(split="k", stages_w=8), "needs split='n'"),
    (dict(split="n", stages_w=0), "a weight ring"),
    (dict(split="n", stages_w=4, cluster=2), "cluster=1"),
    (dict(split="n", stages_w=4, kpair=True), "no kpair"),
    (dict(split="n", stages_w=4, inst="mma"), "inst='wgmma'"),
])
def test_kglob_errors_name_the_constraint(kw, words):
    args = dict(group=128, block_M=64, block_K=256, stages=4, cluster=1)
    args.update(kw)
    with pytest.raises(ValueError, match=re.escape(words)):
        w4a16.check_config(64, 8192, 8192, kglob=True, **args)


def test_kglob_halves_an_even_number_of_k_blocks():
    with pytest.raises(ValueError, match="kglob halves the 3 K blocks"):
        w4a16.check_config(64, 8192, 768, group=128, block_M=64, block_K=256, stages=4, split="n", cluster=1,
                           stages_w=4, kglob=True)


def test_wrapper_allocates_zeroed_buffers_once_and_forwards():
    torch = pytest.importorskip("torch")
    calls = []

    class Kern:
        def __call__(self, *args):
            calls.append(args)

        def get_kernel_source(self):
            return "src"

    k = w4a16.WithWorkspace(Kern(), (256, 64), (4,))
    c = torch.empty((2, 2))
    k(1, 2, 3, c)
    k(1, 2, 3, c)
    (a1, b1, s1, c1, ws1, l1), (*_, ws2, l2) = calls
    assert (a1, b1, s1) == (1, 2, 3) and c1 is c
    assert ws1 is ws2 and l1 is l2  # allocated once a device
    assert ws1.shape == (256, 64) and ws1.dtype == torch.float32 and not ws1.any()
    assert l1.shape == (4,) and l1.dtype == torch.int32 and not l1.any()
    assert k.get_kernel_source() == "src"


@pytest.mark.slow
def test_kglob_lowers_to_a_count_and_a_read_of_the_other_half():
    cfg = w4a16.config(64, 256, 4, "n", stages_w=4, lag=True, **KG)
    k = w4a16.build(64, 8192, 8192, 128, cfg)
    assert isinstance(k, w4a16.WithWorkspace)
    src = k.get_kernel_source()
    assert "main_kglob_kernel" in src and "cluster" not in src.lower()
    counts = re.findall(r"AtomicAddRet\(\(&\(L\[([^\]]+)\]\)\), 1, (\d)\)", src)
    assert len(counts) == 2 and {m for _, m in counts} == {"4"}  # one a consumer, memory order acq_rel
    assert src.count("= 0;") >= 2 and re.search(r"L\[[^\]]+\] = 0;", src)  # the second resets the counter
    assert "(((int)blockIdx.x) ^ 1) * 8192)" in src  # the pair's other slot of 128 x 64 fp32
    assert "((int)blockIdx.x) & 1" in src or "(((int)blockIdx.x) & 1)" in src  # each half its K blocks


def test_the_suite_searches_kglob_at_m64_and_checks_it_on_a_ragged_m():
    from measure.suites.gemm import w4a16 as suite

    forms = [c for c in suite.CANDIDATES["m64"] if c.get("kglob")]
    assert forms, "no kglob form in the M = 64 search"
    for cfg in forms:  # every searched form passes the configuration's checks at the shape
        w4a16.check_config(64, 8192, 8192, group=128, **cfg)
    ragged = [(shape, c) for shape, c in suite.RAGGED if c.get("kglob")]
    assert ragged and all(M % c["block_M"] for (M, _, _), c in ragged)  # M not a multiple of the tile
