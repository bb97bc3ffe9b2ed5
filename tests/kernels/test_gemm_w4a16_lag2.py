"""CPU checks of ``lag=2`` in the W4A16 kernel (kernels/gemm/w4a16.py): each consumer leaves two stages' wgmma
running, expands into three register buffers in turn, and frees an activation slot two of its stages late.  The
knob is kept as ``2`` (``lag=True`` keeps its form and its build), its errors name their constraint, and in the
sm_90a code every K block's slot is waited for full at its own ring position and freed exactly once, after
``wait_wgmma<2>`` has left only the two later stages of its consumer in flight (the last two after
``wait_wgmma<0>``); no spill, no serialised wgmma."""

import re

import pytest

from kernels.gemm import w4a16

LAG2 = dict(stages_w=8, wide=True, perm=True, lag=2, fuse=True)


def test_label_and_config_carry_lag2():
    cfg = w4a16.config(64, 128, 8, **LAG2)
    assert cfg["lag"] == 2 and w4a16.label(cfg) == "m64_k128_s8_w8_k_il_lg2_fu_wd"
    one = w4a16.config(64, 128, 8, **dict(LAG2, lag=True))
    assert one["lag"] is True and w4a16.label(one) == "m64_k128_s8_w8_k_il_lg_fu_wd"
    assert w4a16.config(64, 128, 8, **dict(LAG2, lag=1))["lag"] is True
    with pytest.raises(ValueError, match=re.escape("0, 1 or 2: got 3")):
        w4a16.config(64, 128, 8, **dict(LAG2, lag=3))


@pytest.mark.parametrize("kw, words", [
    (dict(K=8192, stages=8, split="n"), "lag=2 (two stages' wgmma left running, three register buffers) is written "
                                        "for split='k'"),
    (dict(K=8192, stages=4, split="k"), "each of the two consumers needs three slots, stages=4 must be >= 6"),
    (dict(K=512, stages=8, split="k"), "K/block_K=4 must be even and give each consumer at least 3"),
    (dict(K=8192, stages=8, split="k", lag=3), "lag is the number of stages' wgmma left running, 0, 1 or 2: got 3"),
])
def test_lag2_errors_name_the_constraint(kw, words):
    kw = dict(dict(lag=2), **kw)
    K = kw.pop("K")
    with pytest.raises(ValueError, match=re.escape(words)):
        w4a16.check_config(64, 8192, K, group=128, block_M=64, block_K=128, cluster=1, stages_w=8, wide=True,
                           perm=True, **kw)


def test_lag2_takes_k_blocks_that_do_not_come_in_turns_of_three():
    """Unlike ``lag`` (pairs of stages), the three buffers need no multiple: 64 K blocks are 32 a consumer, 10 whole
    turns and 2 left over; 24 are 4 whole turns; 8 are one turn and one left over."""
    for K in (8192, 3072, 1024):
        w4a16.check_config(64, 8192, K, group=128, block_M=64, block_K=128, stages=6, split="k", cluster=1,
                           **LAG2)


_EVENT = re.compile(r"(?<!w)full\[(.+?)\]\.wait\(|tl::wait_wgmma<(\d)>\(\);"
                    r"|if \((.*?)\) \{((?:\s*empty\[[^\]]+\]\.arrive\(\);)+)")


def _events(src: str, c: int, n_k: int) -> list[tuple[str, int]]:
    """Consumer ``c``'s events in program order, its loop unrolled over the passes: ``("full", slot)`` waited for,
    ``("wait", n)`` for ``wait_wgmma<n>``, ``("free", slot)``; the index expressions (and a free's guard) of the
    generated CUDA evaluated for each pass.  A pass has three steps (nine events); the rest follow the loop."""
    j = "j" if c == 0 else "j_1"
    body = src[src.index(f"for (int {j} = 0; {j} < {n_k // 6}; ++{j})"):]
    body = body[:body.index("__sync_thread_partial(1, 256)")]
    found = _EVENT.findall(body)
    out = []
    for jj in list(range(n_k // 6)) + [None]:
        for full, wait, cond, free in (found[:9] if jj is not None else found[9:]):
            env = {j: jj}
            if full:
                out.append(("full", eval(full, env)))
            elif wait:
                out.append(("wait", int(wait)))
            elif f"1 <= {j})" not in cond or jj >= 1:  # one guarded block may free several slots
                out += [("free", eval(x, env)) for x in re.findall(r"empty\[([^\]]+)\]", free)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("stages", [8, 10])
def test_lag2_frees_each_slot_two_of_its_stages_late(fresh_compiles, stages):
    from kernels.gemm.lowered import launch_info, ptxas_report

    n_k = 8192 // 128
    cfg = w4a16.config(64, 128, stages, **LAG2)
    k = w4a16.build(64, 8192, 8192, 128, cfg)
    src = k.get_kernel_source()
    for c in (0, 1):
        mine = list(range(c, n_k, 2))  # consumer c's K blocks
        expected = []
        for i, t in enumerate(mine):  # each issue leaves two in flight and frees the block two before it
            expected += [("full", t % stages), ("wait", 2)] + ([("free", mine[i - 2] % stages)] if i >= 2 else [])
        expected += [("wait", 0), ("free", mine[-2] % stages), ("free", mine[-1] % stages)]
        assert _events(src, c, n_k) == expected, c
    for buf in ("W0", "W0b", "W0c", "W1", "W1b", "W1c"):
        assert re.search(rf"expand<[^;]*, {buf}\);", src), buf
    assert src.count("tl::wait_wgmma<2>();") == 10 and src.count("tl::wait_wgmma<0>();") == 2
    assert launch_info(k).dyn_smem_bytes == w4a16.smem_bytes(8192, group=128, block_M=64, block_K=128, stages=stages,
                                                              split="k", stages_w=8, kpair=False, consumers=2)
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
