"""CPU checks of the stream-K decode kernel (kernels/gemm/w4a16_sk.py): the units' schedule covers every unit once,
each block's range touches at most two tiles and the counts of contributors are those the kernel computes from its
closed forms; the configuration errors name their constraint; the routing through ``kernels.gemm.w4a16``; in the
sm_90a code (slow) the count, two segments' meets and stores, and the register budget without spills."""

import re
from collections import Counter

import pytest

from kernels.gemm import w4a16, w4a16_sk as sk


@pytest.mark.parametrize("N, K, B", [(8192, 8192, 132), (8192, 8192, 128), (1024, 2048, 20), (1024, 2048, 37),
                                     (512, 1024, 9), (4096, 11008, 132)])
def test_schedule_covers_every_unit_once_in_at_most_two_segments(N, K, B):
    ut, U = sk.units(N, K)
    sched = sk.schedule(N, K, B)
    seen = Counter()
    for segs in sched:
        assert 1 <= len(segs) <= 2
        for tile, a, e in segs:
            assert 0 <= a < e <= ut
            seen.update(tile * ut + u for u in range(a, e))
    assert seen == Counter(range(U))
    # the kernel's closed forms: a block's first tile, its first unit there, where segment 0 ends, segment 1's length
    for b, segs in enumerate(sched):
        u0, u1 = b * U // B, (b + 1) * U // B
        tile0 = u0 // ut
        e0 = min(u1 - tile0 * ut, ut)
        len1 = u1 - tile0 * ut - e0
        assert segs[0] == (tile0, u0 - tile0 * ut, e0)
        assert (segs[1] if len(segs) == 2 else None) == ((tile0 + 1, 0, len1) if len1 else None)
    # contributors: the blocks whose segments touch each tile, and the slot each one writes
    touch = Counter(tile for segs in sched for tile, _, _ in segs)
    assert sk.contributors(N, K, B) == [touch[t] for t in range(N // 64)]
    for b, segs in enumerate(sched):
        for tile, _, _ in segs:
            first = sk.block_of(tile * ut, U, B)
            assert first <= b < first + touch[tile]


def test_the_issue_shape_gives_every_sm_62_or_63_units():
    sched = sk.schedule(8192, 8192, 132)
    assert Counter(sum(e - a for _, a, e in segs) for segs in sched) == Counter({62: 124, 63: 8})
    assert set(sk.contributors(8192, 8192, 132)) == {2}
    assert sk.workspace(16, 8192, 8192, 132) == ((128 * 2 * 64, 16), (128,))
    assert sk.workspace(16, 8192, 8192, 128) == ((128 * 64, 16), (128,))  # one contributor a tile


@pytest.mark.parametrize("kw, words", [
    (dict(M=17), "M=17 must be <= block_M=16"),
    (dict(block_M=32), "block_M is the decode batch's tile, 8 or 16"),
    (dict(group=64), "group must be 128"),
    (dict(block_K=512), "block_K is one or two units"),
    (dict(stages=5), "stages=5 must be even"),
    (dict(blocks=100), "between the 128 tiles"),
    (dict(N=8100), "multiple of the 64 weight rows"),
    (dict(stages=16), "bytes of shared memory exceed"),
])
def test_errors_name_the_constraint(kw, words):
    args = dict(M=16, N=8192, K=8192, group=128, block_M=16, block_K=256, stages=8, blocks=132)
    args.update(kw)
    M, N, K = args.pop("M"), args.pop("N"), args.pop("K")
    with pytest.raises(ValueError, match=re.escape(words)):
        sk.check_config(M, N, K, **args)


def test_routed_through_the_w4a16_module():
    cfg = sk.config(16, 256, 8, 132)
    assert w4a16.label(cfg) == "sk_m16_k256_s8_b132" and cfg["perm"]
    with pytest.raises(ValueError, match="no timing probes"):
        w4a16.build(16, 8192, 8192, 128, cfg, probe="loadonly")


@pytest.mark.slow
@pytest.mark.parametrize("blocks, block_K, stages, segs", [(132, 256, 8, 2), (128, 256, 8, 1), (132, 128, 16, 2)])
def test_lowers_to_the_segments_meets_without_spills(blocks, block_K, stages, segs):
    from kernels.gemm.lowered import ptxas_report

    k = w4a16.build(16, 8192, 8192, 128, sk.config(16, block_K, stages, blocks))
    assert isinstance(k, w4a16.WithWorkspace) and k.ws_shape == sk.workspace(16, 8192, 8192, blocks)[0]
    src = k.get_kernel_source()
    assert "main_kernel" in src and "cluster" not in src.lower()
    # each consumer's code is written out for each segment (on 128 blocks a range is one tile: the second is
    # simplified away); consumer 0 counts and may store once a segment
    assert src.count("AtomicAddRet(") == segs and src.count("tma_store(C_desc") == segs
    assert src.count("__sync_thread_partial(1, 256)") == 2 * segs  # the two consumers meet once a segment
    assert src.count("warpgroup_reg_alloc<") == 2 and src.count("warpgroup_reg_dealloc<") == 1
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0, rep["text"][-400:]
    launched = rep["registers"]
    assert 2 * 128 * (w4a16.CONSUMER_REGS - launched) <= 128 * (launched - w4a16.PRODUCER_REGS), launched
