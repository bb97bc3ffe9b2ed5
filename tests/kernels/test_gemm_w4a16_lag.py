"""CPU checks of ``lag`` in the W4A16 kernel (kernels/gemm/w4a16.py): each consumer leaves one stage's wgmma
running while it expands the next into its other register buffer, and frees an activation slot one stage late.
The configuration errors name their constraint; in the sm_90a code each consumer frees its own activation slots
a stage late, after ``wait_wgmma<1>``, keeps the register budget and has no serialised wgmma."""

import re

import pytest

from kernels.gemm import w4a16

LAG = dict(wide=True, perm=True, lag=True)


def test_label_and_config_carry_lag():
    cfg = w4a16.config(64, 256, 4, stages_w=8, **LAG)
    assert cfg["lag"] is True and w4a16.label(cfg) == "m64_k256_s4_w8_k_il_lg_wd"
    assert "lag" not in w4a16.config(64, 256, 4, stages_w=8, wide=True, perm=True)


@pytest.mark.parametrize("kw, words", [
    (dict(block_M=64, block_K=256, stages=4, split="k", stages_w=0), "stages_w > 0"),
    (dict(block_M=64, block_K=256, stages=4, split="k", stages_w=8, inst="mma"), "inst='wgmma'"),
    (dict(block_M=64, block_K=256, stages=2, split="k", stages_w=8), "stages=2 must be >= 4"),
    (dict(block_M=64, block_K=128, stages=2, split="n", stages_w=8, kpair=True), "stages=2 must be >= 3"),
])
def test_lag_errors_name_the_constraint(kw, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        w4a16.check_config(64, 8192, 8192, group=128, cluster=1, lag=True, **kw)


def test_lag_with_split_n_needs_an_even_number_of_k_blocks_per_block():
    # K = 768 at block_K = 128 with kpair: 6 K blocks, 3 per block of the pair
    with pytest.raises(ValueError, match="3 K blocks per block must be even"):
        w4a16.check_config(64, 8192, 768, group=128, block_M=64, block_K=128, stages=4, split="n", cluster=1,
                           stages_w=8, kpair=True, lag=True)
    w4a16.check_config(64, 8192, 8192, group=128, block_M=64, block_K=128, stages=3, split="n", cluster=1,
                       stages_w=8, kpair=True, lag=True)


def test_lag_needs_k_blocks_in_fours():
    # K = 1536 at block_K = 256: 6 K blocks, 3 per consumer, not pairs of stages
    with pytest.raises(ValueError, match="multiple of 4"):
        w4a16.check_config(64, 8192, 1536, group=128, block_M=64, block_K=256, stages=4, split="k", cluster=1,
                           stages_w=8, lag=True)
    w4a16.check_config(64, 8192, 2048, group=128, block_M=64, block_K=256, stages=4, split="k", cluster=1,
                       stages_w=8, lag=True)


@pytest.mark.slow
def test_lag_lowers_to_two_buffers_and_one_wgmma_in_flight(fresh_compiles):
    from kernels.gemm.lowered import ptxas_report

    cfg = w4a16.config(64, 256, 4, stages_w=8, **LAG)
    src = w4a16.build(64, 8192, 8192, 128, cfg).get_kernel_source()
    # two consumers, each over pairs of its stages (32 K blocks: 8 pairs), expanding into W0 / W0b (W1 / W1b)
    assert src.count("for (int j = 0; j < 8; ++j)") + src.count("for (int j_1 = 0; j_1 < 8; ++j_1)") == 2
    for buf in ("W0", "W0b", "W1", "W1b"):
        assert len(re.findall(rf"w4p::expand<16, 64, 128, 128, 8192>\([^;]*, {buf}\);", src)) == 1, buf
    # after each issue only the previous stage's wgmma is waited for; the last one before the sum
    assert src.count("tl::wait_wgmma<1>();") == 4 and src.count("tl::wait_wgmma<0>();") == 2
    # the first stage of a pair frees the slot of K block t - 2 only from the second pair on
    assert len(re.findall(r"% 32\) == 0\) && \(1 <= j(_1)?\)\)", src)) == 2
    # each consumer frees its own two slots (consumer c: slots c and c + 2 of 4), each a stage late: after the
    # first issue of a pair the slot of K block t - 2 (c + 2, guarded), after the second that of t - 2 (c), and
    # after the loop the last block's (c + 2)
    for c, j in ((0, "j"), (1, "j_1")):
        body = src[src.index(f"for (int {j} = 0; {j} < 8; ++{j})"):]
        body = body[:body.index("__sync_thread_partial(1, 256)")]
        frees = re.findall(r"(?<!w)empty\[(\d)\]\.arrive\(\)", body)
        assert frees == [str(c + 2), str(c), str(c + 2)], (c, frees)
        assert body.index(f"empty[{c + 2}].arrive()") > body.index("tl::wait_wgmma<1>();")
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
    assert rep["registers"] <= w4a16.CONSUMER_REGS


@pytest.mark.slow
def test_lag_with_kpair_frees_each_slot_a_stage_late(fresh_compiles):
    """split='n' with kpair: both consumers read every stage; each frees the slot of K step t - 1 after
    ``wait_wgmma<1>`` (the slot index expressions of the generated CUDA evaluated for every pass of the loop),
    and the last step's slot after ``wait_wgmma<0>``."""
    from kernels.gemm.lowered import ptxas_report

    stages = 6
    cfg = w4a16.config(64, 128, stages, split="n", stages_w=8, kpair=True, **LAG)
    assert w4a16.label(cfg) == "m64_k128_s6_w8_n_kp_il_lg_wd"
    src = w4a16.build(64, 8192, 8192, 128, cfg).get_kernel_source()
    n_loc = 8192 // 128 // 2
    assert src.count("tl::wait_wgmma<1>();") == 4 and src.count("tl::wait_wgmma<0>();") == 2
    for j, bufs in (("j", ("W0", "W0b")), ("j_1", ("W1", "W1b"))):
        body = src[src.index(f"for (int {j} = 0; {j} < {n_loc // 2}; ++{j})"):]
        loop, tail = body[:body.index("tl::wait_wgmma<0>();")], body[body.index("tl::wait_wgmma<0>();"):]
        for b in bufs:  # one expansion into each of the consumer's two buffers per pass
            assert len(re.findall(rf"w4p::expand<[^;]*, {b}\);", loop)) == 1, b
        frees = re.findall(r"(\(\(\(int\)threadIdx.x\) % 32\) == 0\)(?: && \(1 <= j(?:_1)?\))?\)?) \{\s*empty\[(.+?)\]\.arrive\(\);",
                           loop)
        assert len(frees) == 2 and "1 <=" in frees[0][0] and "1 <=" not in frees[1][0], frees
        assert re.search(r"(?<!w)empty\[", loop).start() > loop.index("tl::wait_wgmma<1>();")
        got = []
        for jj in range(n_loc // 2):  # t = 2 jj and 2 jj + 1; the first has no earlier step
            got += ([eval(frees[0][1], {j: jj})] if jj >= 1 else []) + [eval(frees[1][1], {j: jj})]
        assert got == [(t - 1) % stages for t in range(1, n_loc)]
        last = re.search(r"empty\[(\d+)\]\.arrive\(\);", tail)
        assert last and int(last.group(1)) == (n_loc - 1) % stages
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
    assert rep["registers"] <= w4a16.CONSUMER_REGS


@pytest.mark.parametrize("probe", ["nomma", "loadonly"])
def test_lag_refuses_the_probes_without_tensor_core_work(probe):
    cfg = w4a16.config(64, 128, 8, stages_w=8, lag=True)  # the per-element expansion (nomma refuses wide)
    with pytest.raises(ValueError, match=f"the '{probe}' probe"):
        w4a16.build(64, 8192, 8192, 128, cfg, probe=probe)


def test_accs_config_label_and_errors():
    cfg = w4a16.config(64, 128, 8, stages_w=8, accs=2, **LAG)
    assert cfg["accs"] == 2 and w4a16.label(cfg) == "m64_k128_s8_w8_k_il_lg_a2_wd"
    assert "accs" not in w4a16.config(64, 128, 8, stages_w=8, **LAG)
    base = dict(group=128, block_M=64, block_K=128, stages=8, cluster=1, stages_w=8)
    with pytest.raises(ValueError, match="accs=2 alternates .* it needs lag=True, got lag=False"):
        w4a16.check_config(64, 8192, 8192, split="k", accs=2, **base)
    with pytest.raises(ValueError, match="accs=2 is written for split='k'"):
        w4a16.check_config(64, 8192, 8192, split="n", lag=True, accs=2, **base)
    with pytest.raises(ValueError, match="1 or 2: got 3"):
        w4a16.check_config(64, 8192, 8192, split="k", lag=True, accs=3, **base)
    w4a16.check_config(64, 8192, 8192, split="k", lag=True, accs=2, **base)


@pytest.mark.slow
def test_accs_alternates_two_accumulators_per_consumer(fresh_compiles):
    from kernels.gemm.lowered import ptxas_report

    cfg = w4a16.config(64, 128, 8, stages_w=8, accs=2, **LAG)
    src = w4a16.build(64, 8192, 8192, 128, cfg).get_kernel_source()
    for c in (0, 1):
        j = "j" if c == 0 else "j_1"
        body = src[src.index(f"for (int {j} = 0; {j} < 16; ++{j})"):]
        body = body[:body.index("tl::wait_wgmma<0>();")]
        # the first stage of each pair into acc<c>, the second into acc<c>b, each left running (wait_wgmma<1>)
        accs = re.findall(rf"warpgroup_fence_operand\(reinterpret_cast<float\*>\((acc{c}b?) \+ 0\)", body)
        assert accs == [f"acc{c}", f"acc{c}", f"acc{c}b", f"acc{c}b"], (c, accs)
        assert body.count("tl::wait_wgmma<1>();") == 2
        # after the last wgmma the second accumulator is added into the first
        tail = src[src.index(f"for (int {j} = 0; {j} < 16; ++{j})"):]
        tail = tail[tail.index("tl::wait_wgmma<0>();"):]
        assert re.search(rf"\*\(float4\*\)\(acc{c}b \+", tail[:2000]), c
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
