"""CPU checks of ``lag`` in the W4A16 kernel (kernels/gemm/w4a16.py): each consumer leaves one stage's wgmma
running while it expands the next into its other register buffer, and frees an activation slot one stage late.
The configuration errors name their constraint; the release schedule frees every slot once per fill, after the
wgmma that read it can have completed; sm_90a code waits with ``wait_wgmma<1>`` between the stages, keeps the
register budget and has no serialised wgmma."""

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
    (dict(block_M=128, block_K=128, stages=4, split="n", stages_w=8, kpair=True), "split='k'"),
    (dict(block_M=64, block_K=256, stages=2, split="k", stages_w=8), "stages=2 must be >= 4"),
])
def test_lag_errors_name_the_constraint(kw, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        w4a16.check_config(64, 8192, 8192, group=128, cluster=1, lag=True, **kw)


def test_lag_needs_k_blocks_in_fours():
    # K = 1536 at block_K = 256: 6 K blocks, 3 per consumer, not pairs of stages
    with pytest.raises(ValueError, match="multiple of 4"):
        w4a16.check_config(64, 8192, 1536, group=128, block_M=64, block_K=256, stages=4, split="k", cluster=1,
                           stages_w=8, lag=True)
    w4a16.check_config(64, 8192, 2048, group=128, block_M=64, block_K=256, stages=4, split="k", cluster=1,
                       stages_w=8, lag=True)


def schedule(n_k: int, stages: int) -> list[tuple[str, int, int]]:
    """The activation ring as the two lag consumers drive it, in one consumer's program order each:
    ('issue', c, t) when the wgmma of K block t is issued, ('free', c, t) when its slot is released."""
    ev = []
    for c in (0, 1):
        for t in range(c, n_k, 2):
            ev.append(("issue", c, t))
            if t >= 2:
                ev.append(("free", c, t - 2))
        ev.append(("free", c, n_k - 2 + c))
    return ev


@pytest.mark.parametrize("n_k, stages", [(32, 4), (64, 6), (64, 8), (16, 4)])
def test_every_slot_is_freed_once_per_fill_after_the_next_issue(n_k, stages):
    ev = schedule(n_k, stages)
    freed = [t for kind, _, t in ev if kind == "free"]
    assert sorted(freed) == list(range(n_k))  # each K block's slot freed exactly once
    for c in (0, 1):
        mine = [(k, t) for k, cc, t in ev if cc == c]
        for i, (k, t) in enumerate(mine):
            if k == "free" and t + 2 < n_k:  # freed only after the consumer's next stage was issued (wait<1>)
                assert ("issue", t + 2) in mine[:i]
            if k == "issue" and t >= stages:  # the slot it reads was freed by its previous user, this consumer
                assert (t - stages) % 2 == c % 2 and ("free", t - stages) in mine[:i]


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
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
    assert rep["registers"] <= w4a16.CONSUMER_REGS


@pytest.mark.parametrize("probe", ["nomma", "loadonly"])
def test_lag_refuses_the_probes_without_tensor_core_work(probe):
    cfg = w4a16.config(64, 128, 8, stages_w=8, lag=True)  # the per-element expansion (nomma refuses wide)
    with pytest.raises(ValueError, match=f"the '{probe}' probe"):
        w4a16.build(64, 8192, 8192, 128, cfg, probe=probe)
