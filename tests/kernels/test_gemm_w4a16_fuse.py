"""CPU checks of ``fuse`` in the W4A16 kernel (kernels/gemm/w4a16.py): each fp16 pair of the interleaved
expansion picked by one PTX ``lop3`` (mask and exponent bits of 1024 together) instead of the AND and OR that
nvcc emits for ``(w & mask) | 0x64006400``.  The truth table of the written ``lop3`` is evaluated bit by bit;
nvcc's PTX and ptxas's SASS (where nvdisasm is installed) are counted; the kernels build with the fused
expansion and keep their register budget."""

import re

import numpy as np
import pytest

from kernels.gemm import w4a16

W = dict(wide=True, perm=True)


def test_label_config_and_errors_carry_fuse():
    cfg = w4a16.config(64, 128, 8, stages_w=8, lag=True, fuse=True, **W)
    assert cfg["fuse"] is True and "fuse" not in w4a16.config(64, 128, 8, stages_w=8, lag=True, **W)
    assert w4a16.label(cfg) == "m64_k128_s8_w8_k_il_lg_fu_wd"
    base = dict(group=128, block_M=64, block_K=128, stages=8, split="k", cluster=1, stages_w=8, wide=True)
    w4a16.check_config(64, 8192, 8192, **base, perm=True, fuse=True)
    with pytest.raises(ValueError, match="fuse .* needs perm=True"):
        w4a16.check_config(64, 8192, 8192, **base, fuse=True)


def _lop3(a: np.ndarray, b: int, c: int, lut: int) -> np.ndarray:
    """PTX ``lop3.b32 d, a, b, c, lut``, bit by bit: bit i of d is bit (4 a_i + 2 b_i + c_i) of lut."""
    d = np.zeros_like(a)
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        d |= ((lut >> idx) & 1).astype(np.uint64) << i
    return d


def test_the_written_lop3_is_mask_then_exponent_bits():
    """The helper's immediate lut and operand order, read from the source, give ``(a & MASK) | 0x64006400``
    on random words, for both masks; the unfused C expression names the same masks."""
    helper = w4a16._FUSE_HELPER
    lut = int(re.search(r"lop3\.b32 %0, %1, %2, %3, (0x[0-9A-Fa-f]+);", helper).group(1), 16)
    assert '"r"(a), "n"(MASK), "n"(0x64006400u)' in helper
    masks = sorted({int(m, 16) for m in re.findall(r"and_or_exp<(0x[0-9A-Fa-f]+)u>", w4a16._PAIRS_PTX)})
    assert masks == sorted({int(m, 16) for m in re.findall(r"& (0x[0-9A-Fa-f]+)u\)", w4a16._PAIRS_C)})
    assert masks == [0x000F000F, 0x00F000F0]
    words = np.random.default_rng(3).integers(0, 2**32, size=4096, dtype=np.uint64)
    for m in masks:
        assert np.array_equal(_lop3(words, m, 0x64006400, lut), (words & m) | 0x64006400)
    assert not np.array_equal(_lop3(words, masks[0], 0x64006400, 0xF8), (words & masks[0]) | 0x64006400)


def test_fused_sources_differ_only_in_the_pair_masks():
    for plain, fused, ns in ((w4a16._PERM_SRC, w4a16._PERM_FUSED_SRC, "w4p"),
                             (w4a16._POST_SRC, w4a16._POST_FUSED_SRC, "w4u")):
        assert f"namespace {ns}f {{" in fused and f"namespace {ns} {{" not in fused
        back = fused.replace(w4a16._FUSE_HELPER, "").replace(w4a16._PAIRS_PTX, w4a16._PAIRS_C)
        assert back.replace(f"{ns}f", ns) == plain
        assert fused.count("and_or_exp<") == 4 and "| 0x64006400u" not in fused.replace(w4a16._FUSE_HELPER, "")


def _driver(ns: str, src: str) -> str:
    """One ``expand`` of 256 k of a thread's two rows (a 64 x 256 stage), its fragment stored."""
    return src + (f'\nextern "C" __global__ void k(const void* w, const void* s, unsigned* f, int r0, int cb, int kg) {{\n'
                  f"  unsigned frag[64];\n  {ns}::expand<16, 64, 128, 128, 8192>(w, s, r0, cb, kg, frag);\n"
                  "  for (int i = 0; i < 64; ++i) f[threadIdx.x * 64 + i] = frag[i];\n}\n")


#: fp16 pairs of one such expand in a thread's fragment: 16 steps of 16 k, four 32-bit registers each
PAIRS = 64


@pytest.mark.slow
@pytest.mark.parametrize("scaled", [True, False])
def test_ptx_picks_each_pair_with_one_lop3(scaled):
    from measure.instructions import nvcc

    src = {True: (w4a16._PERM_SRC, w4a16._PERM_FUSED_SRC), False: (w4a16._POST_SRC, w4a16._POST_FUSED_SRC)}[scaled]
    ns = "w4p" if scaled else "w4u"
    plain, fused = (nvcc(_driver(n, s), "ptx").decode() for n, s in ((ns, src[0]), (ns + "f", src[1])))
    count = lambda ptx, op: len(re.findall(rf"^\s+{op}\b", ptx, re.M))
    assert count(plain, r"lop3\.b32") == 0 and count(plain, r"or\.b32") >= PAIRS
    assert count(fused, r"lop3\.b32") == PAIRS
    assert count(plain, r"and\.b32") + count(plain, r"or\.b32") - count(fused, r"and\.b32") - count(fused, r"or\.b32") \
        == 2 * PAIRS


@pytest.mark.slow
def test_sass_has_one_lop3_per_pair_fewer():
    """ptxas keeps the PTX lop3 whole (one constant in a register); from the C form it emits two LOP3 per pair."""
    from measure.instructions import find_nvdisasm, nvcc, sass

    exe = find_nvdisasm()
    if not exe:
        pytest.skip("nvdisasm not installed: the SASS count is checked where it is")
    n = {}
    for ns, src in (("w4p", w4a16._PERM_SRC), ("w4pf", w4a16._PERM_FUSED_SRC)):
        n[ns] = len(re.findall(r"\bLOP3\.LUT\b", sass(nvcc(_driver(ns, src), "cubin"), exe)))
    from ledger.w4a16 import expand_ops

    # the ledger's count per 32-bit word (four pairs), over the driver's 16 words
    assert n["w4p"] - n["w4pf"] == (expand_ops(fused=False)["lop3"] - expand_ops()["lop3"]) * PAIRS // 4, n


@pytest.mark.slow
@pytest.mark.parametrize("M,cfg", [
    (64, w4a16.config(64, 128, 8, stages_w=8, lag=True, fuse=True, **W)),
    (16, w4a16.config(16, 256, 8, inst="mma", chunk=128, post=True, fuse=True, **W)),
])
def test_fused_kernels_call_the_fused_expansion_and_keep_the_budget(M, cfg, fresh_compiles):
    from kernels.gemm.lowered import ptxas_report

    src = w4a16.build(M, 8192, 8192, 128, cfg).get_kernel_source()
    ns = "w4uf" if cfg.get("post") else "w4pf"
    assert f"{ns}::expand<" in src and "w4p::expand<" not in src and "w4u::expand<" not in src
    assert src.count("lop3.b32 %0, %1, %2, %3, 0xEA;") == 1
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
    assert rep["registers"] <= w4a16.CONSUMER_REGS
