"""CPU checks of the word-wide expansion of the W4A16 kernel (``wide``, kernels/gemm/w4a16.py).

The fast tests emulate the inline CUDA word by word in numpy (the byte selector, the mask, the
f16x2 fma and multiply, the fragment index) on random packed tiles and compare every fragment
register with the per-element expansion of the same weights; the compile-tier tests read the
swizzle of the packed tile out of the per-element kernel tilelang generates and check that
:func:`wide_offset` (the address the inline CUDA computes) is that layout, and that the wide
kernels lower with the word-wide path and no byte loads."""

import re

import numpy as np
import pytest

from kernels.gemm import w4a16


def _byte_perm(x: int, y: int, sel: int) -> int:
    b = [(x >> (8 * i)) & 0xFF for i in range(4)] + [(y >> (8 * i)) & 0xFF for i in range(4)]
    return sum(b[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def _h(bits: int) -> np.float16:
    return np.array([bits], dtype=np.uint16).view(np.float16)[0]


def _emulate(tile: np.ndarray, scales: np.ndarray, *, rows: int, row_bytes: int, nki: int, row0: int, cb0: int,
             kg: int, group: int, tx: int) -> dict[int, tuple[np.float16, np.float16]]:
    """The inline CUDA ``w4w::expand`` of thread ``tx`` (0..127 of its warpgroup), word by word:
    fragment register index -> its two fp16 halves."""
    lane, g, t = tx & 31, (tx & 31) >> 2, tx & 3
    rb = row0 + 16 * ((tx >> 5) & 3) + g
    sel = 0x7050 | (0x0101 * t)
    out = {}
    for h in range(2):
        r = rb + 8 * h
        for c in range(nki // 2):
            b = cb0 + 16 * c
            off = w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes)
            words = [int.from_bytes(tile[off + 4 * j:off + 4 * j + 4].tobytes(), "little") for j in range(4)]
            s = scales[r, (kg + 32 * c) // group]
            for j in range(4):
                x = _byte_perm(words[j], 0x64006400, sel) & 0xFFF0FF0F
                lo, hi = _h(x & 0xFFFF), _h(x >> 16)
                # fma.rn.f16x2 with (1, 1/16) and (-1032, -72): exact in fp32, one rounding
                qlo = np.float16(np.float32(lo) * np.float32(1.0) - np.float32(1032.0))
                qhi = np.float16(np.float32(hi) * np.float32(0.0625) - np.float32(72.0))
                out[(2 * c + (j >> 1)) * 4 + h + 2 * (j & 1)] = (np.float16(np.float32(qlo) * np.float32(s)),
                                                                np.float16(np.float32(qhi) * np.float32(s)))
    return out


def _expected(logical: np.ndarray, scales: np.ndarray, *, nki: int, row0: int, cb0: int, kg: int, group: int,
              tx: int) -> dict[int, tuple[np.float16, np.float16]]:
    """wgmma's A fragment of thread ``tx`` (register 4 ki + reg: rows g / g+8 at k 2t.., then
    2t+8..), filled with ``(q - 8) * s`` rounded once, as the per-element expansion does."""
    g, t = (tx & 31) >> 2, tx & 3
    out = {}
    for ki in range(nki):
        for reg in range(4):
            row = row0 + 16 * ((tx >> 5) & 3) + g + 8 * (reg & 1)
            vals = []
            for e in range(2):
                k = 2 * cb0 + 16 * ki + 2 * t + 8 * (reg >> 1) + e
                byte = int(logical[row, k // 2])
                q = byte & 15 if k % 2 == 0 else byte >> 4
                s = scales[row, (kg - 2 * cb0 + k) // group]
                vals.append(np.float16(np.float32(q - 8) * np.float32(s)))
            out[ki * 4 + reg] = tuple(vals)
    return out


@pytest.mark.parametrize("rows,row_bytes,nki,row0,cb0", [
    (64, 128, 16, 0, 0),     # split K, stages of 256 k, one piece
    (64, 128, 8, 0, 64),     # ... its second piece of 128 k
    (64, 256, 16, 0, 128),   # stages of 512 k: the second 128-byte plane
    (64, 64, 4, 0, 32),      # stages of 128 k (64-byte rows), second piece of 64 k
    (128, 128, 16, 64, 0),   # split N: the second consumer's 64 rows
])
def test_word_wide_expansion_fills_the_fragment_like_the_per_element_one(rows, row_bytes, nki, row0, cb0):
    rng = np.random.default_rng(rows * 1000 + row_bytes + cb0)
    group, G = 128, 64
    logical = rng.integers(0, 256, size=(rows, row_bytes), dtype=np.uint8)
    scales = (rng.random((rows, G), dtype=np.float32) * 0.04 + 0.01).astype(np.float16)
    tile = np.zeros(rows * row_bytes, dtype=np.uint8)
    for r in range(rows):
        for b in range(row_bytes):
            tile[w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes)] = logical[r, b]
    kg = 3 * 2 * row_bytes + 2 * cb0  # the stage's first k (stage 3) plus the piece's offset
    for tx in range(128):
        got = _emulate(tile, scales, rows=rows, row_bytes=row_bytes, nki=nki, row0=row0, cb0=cb0, kg=kg, group=group,
                       tx=tx)
        want = _expected(logical, scales, nki=nki, row0=row0, cb0=cb0, kg=kg, group=group, tx=tx)
        assert set(got) == set(want) == set(range(4 * nki)), tx
        for f in want:
            assert got[f][0].view(np.uint16) == want[f][0].view(np.uint16), (tx, f)
            assert got[f][1].view(np.uint16) == want[f][1].view(np.uint16), (tx, f)


@pytest.mark.parametrize("rows,row_bytes", [(64, 64), (64, 128), (64, 256), (128, 128)])
def test_wide_offset_is_a_bank_conflict_free_permutation_of_16_byte_runs(rows, row_bytes):
    offs = [w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes) for r in range(rows) for b in range(row_bytes)]
    assert sorted(offs) == list(range(rows * row_bytes))
    for r in range(rows):  # a 16-byte run stays contiguous and aligned: one 128-bit load
        for b in range(0, row_bytes, 16):
            o = w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes)
            assert o % 16 == 0 and all(w4a16.wide_offset(r, b + i, rows=rows, row_bytes=row_bytes) == o + i
                                       for i in range(16))
    # one phase of a 128-bit load: the 8 threads of rows g, g+1 (4 threads each read the same run)
    # touch 2 runs in distinct banks
    for g in range(0, rows - 1, 2):
        for b in range(0, row_bytes, 16):
            banks = {(w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes) // 16) % 8 for r in (g, g + 1)}
            assert len(banks) == 2


def test_wide_configuration_errors_name_the_constraint():
    with pytest.raises(ValueError, match="inst must be 'wgmma' or 'mma'"):
        w4a16.check_config(16, 8192, 8192, group=128, block_M=16, block_K=256, stages=4, split="k", cluster=1,
                           wide=True, inst="dec")
    with pytest.raises(ValueError, match="block_K must be 128, 256 or 512"):
        w4a16.check_config(16, 8192, 8192, group=128, block_M=16, block_K=64, stages=4, split="k", cluster=1,
                           wide=True)
    with pytest.raises(ValueError, match="multiple of 32"):
        w4a16.check_config(16, 8192, 8192, group=16, block_M=16, block_K=256, stages=4, split="k", cluster=1,
                           wide=True)
    assert w4a16.label(w4a16.config(16, 256, 4, wide=True)) == "m16_k256_s4_k_wd"
    assert "wide" not in w4a16.config(16, 256, 4)  # the recorded configurations keep their form


# --- compile tier: the layout tilelang gives the packed tile, and the lowered wide kernels ---

_W_INDEX = re.compile(r"for \(int (i_\d+) = 0; \1 < (\d+); \+\+\1\) \{\s*ushort byte\w* = \(\(ushort\)\(\(uchar\*\)W_s\)"
                      r"\[(.*?)\]\);")


def _layout_from_lowered(M: int, cfg: dict) -> tuple[str, str, int]:
    src = w4a16.build(M, 8192, 8192, 128, cfg).get_kernel_source()
    m = _W_INDEX.search(src)
    assert m, "the per-element expansion's byte load was not found in the generated CUDA"
    return m.group(1), m.group(3), int(m.group(2))


@pytest.mark.slow
@pytest.mark.parametrize("M,cfg", [(16, w4a16.config(16, 256, 4)), (16, w4a16.config(16, 512, 4)),
                                   (128, w4a16.config(128, 128, 4, chunk=64)),
                                   (16, w4a16.config(16, 512, 4, inst="mma")),
                                   (4096, w4a16.config(256, 128, 2, "n"))])
def test_wide_offset_is_the_swizzle_tilelang_gives_the_packed_tile(M, cfg, fresh_compiles):
    """Evaluate the byte address of the per-element expansion (consumer 0, stage 0) for every
    thread and fragment element, and compare it with wide_offset of the element's (row, byte)."""
    var, expr, n = _layout_from_lowered(M, cfg)
    rows, row_bytes = w4a16.block_rows(cfg["split"]), cfg["block_K"] // 2
    code = compile(re.sub(r"\(\(int\)threadIdx\.x\)", "tx", expr).replace(var, "i"), "<index>", "eval")
    outer = {v: 0 for v in re.findall(r"\b(?:i|ko)(?:_\d+)?\b", expr) if v != var}  # the K loop: stage 0
    base = None
    for tx in range(128, 256):
        for i in range(n):
            ki, reg, e = i >> 3, (i & 7) >> 1, i & 1
            g, t = (tx & 31) >> 2, tx & 3
            row = 16 * ((tx >> 5) & 3) + g + 8 * (reg & 1)
            byte = (16 * ki + 2 * t + 8 * (reg >> 1) + e) // 2
            got = eval(code, {}, {**outer, "tx": tx, "i": i})
            want = w4a16.wide_offset(row, byte, rows=rows, row_bytes=row_bytes)
            base = got - want if base is None else base
            assert got - want == base, (tx, i, got, want)


@pytest.mark.slow
def test_wide_kernels_lower_to_word_loads_and_f16x2_math(fresh_compiles):
    for M, cfg in [(16, w4a16.config(16, 256, 4, wide=True)), (64, w4a16.config(64, 256, 4, chunk=128, wide=True)),
                   (128, w4a16.config(128, 128, 4, chunk=64, wide=True))]:
        src = w4a16.build(M, 8192, 8192, 128, cfg).get_kernel_source()
        assert "w4w::expand<" in src and "ushort byte" not in src, w4a16.label(cfg)
        assert "wgmma_rs<" in src, w4a16.label(cfg)


def _emulate_perm(tile: np.ndarray, scales: np.ndarray, *, rows: int, row_bytes: int, nki: int, row0: int, cb0: int,
                  kg: int, group: int, tx: int) -> dict[int, tuple[np.float16, np.float16]]:
    """The inline CUDA ``w4p::expand`` (``perm``) of thread ``tx``: its own 16-byte unit of each 64-byte
    run, four masks per 32-bit word, the same f16x2 arithmetic as ``w4w``."""
    g, t = (tx & 31) >> 2, tx & 3
    rb = row0 + 16 * ((tx >> 5) & 3) + g
    out = {}
    for h in range(2):
        r = rb + 8 * h
        for u in range(nki // 8):
            off = w4a16.wide_offset(r, cb0 + 64 * u + 16 * t, rows=rows, row_bytes=row_bytes)
            words = [int.from_bytes(tile[off + 4 * c:off + 4 * c + 4].tobytes(), "little") for c in range(4)]
            s = scales[r, (kg + 128 * u) // group]
            for c in range(4):
                w = words[c]
                xs = [(w & 0x000F000F) | 0x64006400, (w & 0x00F000F0) | 0x64006400,
                      ((w >> 8) & 0x000F000F) | 0x64006400, ((w >> 8) & 0x00F000F0) | 0x64006400]
                for j, x in enumerate(xs):
                    lo, hi = _h(x & 0xFFFF), _h(x >> 16)
                    mul, add = (0.0625, 72.0) if j & 1 else (1.0, 1032.0)
                    qlo = np.float16(np.float32(lo) * np.float32(mul) - np.float32(add))
                    qhi = np.float16(np.float32(hi) * np.float32(mul) - np.float32(add))
                    out[(2 * (4 * u + c) + (j >> 1)) * 4 + h + 2 * (j & 1)] = (
                        np.float16(np.float32(qlo) * np.float32(s)), np.float16(np.float32(qhi) * np.float32(s)))
    return out


@pytest.mark.parametrize("rows,row_bytes,nki,row0,cb0", [
    (64, 128, 16, 0, 0),     # split K, stages of 256 k
    (64, 256, 32, 0, 0),     # stages of 512 k: both 128-byte planes
    (64, 256, 8, 0, 192),    # ... a piece of 128 k in the second plane
    (64, 64, 8, 0, 0),       # stages of 128 k (64-byte rows)
    (128, 128, 16, 64, 0),   # split N: the second consumer's 64 rows
])
def test_interleaved_expansion_fills_the_fragment_like_the_per_element_one(rows, row_bytes, nki, row0, cb0):
    """interleave_weights + w4p::expand give every fragment register the bits the per-element expansion of
    the original packed weights gives (the offline repacking changes where a nibble is, not its value)."""
    import torch

    rng = np.random.default_rng(rows * 1000 + row_bytes + cb0 + 7)
    group, G = 128, 64
    logical = rng.integers(0, 256, size=(rows, row_bytes), dtype=np.uint8)
    scales = (rng.random((rows, G), dtype=np.float32) * 0.04 + 0.01).astype(np.float16)
    inter = w4a16.interleave_weights(torch.from_numpy(logical)).numpy()
    assert inter.shape == logical.shape and not np.array_equal(inter, logical)
    tile = np.zeros(rows * row_bytes, dtype=np.uint8)
    for r in range(rows):
        for b in range(row_bytes):
            tile[w4a16.wide_offset(r, b, rows=rows, row_bytes=row_bytes)] = inter[r, b]
    kg = 3 * 2 * row_bytes + 2 * cb0
    for tx in range(128):
        got = _emulate_perm(tile, scales, rows=rows, row_bytes=row_bytes, nki=nki, row0=row0, cb0=cb0, kg=kg,
                            group=group, tx=tx)
        want = _expected(logical, scales, nki=nki, row0=row0, cb0=cb0, kg=kg, group=group, tx=tx)
        assert set(got) == set(want) == set(range(4 * nki)), tx
        for f in want:
            assert got[f][0].view(np.uint16) == want[f][0].view(np.uint16), (tx, f)
            assert got[f][1].view(np.uint16) == want[f][1].view(np.uint16), (tx, f)


def test_interleaving_permutes_nibbles_inside_each_run_and_perm_configurations_are_checked():
    import torch

    src = w4a16.perm_source_k()
    assert sorted(src) == list(range(128))  # a permutation of the run's 128 k
    packed = torch.randint(0, 256, (64, 512), dtype=torch.uint8)
    inter = w4a16.interleave_weights(packed)
    nib = lambda p: torch.stack((p & 15, p >> 4), -1).reshape(p.shape[0], -1, 128)  # noqa: E731
    assert torch.equal(nib(inter), nib(packed)[:, :, torch.tensor(src)])
    cfg = w4a16.config(16, 512, 4, wide=True, tiled=True, perm=True)
    assert w4a16.label(cfg) == "m16_k512_s4_k_tl_il_wd"
    assert torch.equal(w4a16.kernel_weights(packed, cfg), w4a16.tile_weights(inter, cfg))
    assert w4a16.kernel_weights(packed, w4a16.config(16, 512, 4, wide=True)) is packed
    base = dict(group=128, block_M=16, block_K=256, stages=4, split="k", cluster=1)
    with pytest.raises(ValueError, match="needs wide=True"):
        w4a16.check_config(16, 8192, 8192, **base, perm=True)
    with pytest.raises(ValueError, match="multiples of 128"):
        w4a16.check_config(16, 8192, 8192, **{**base, "group": 64}, wide=True, perm=True)
    with pytest.raises(ValueError, match="multiples of 128"):
        w4a16.check_config(16, 8192, 8192, **base, chunk=64, wide=True, perm=True)
    with pytest.raises(ValueError, match="K a multiple of 128"):
        w4a16.interleave_weights(torch.zeros((8, 96), dtype=torch.uint8))


def _ptx_ops(ns: str, src: str, tmp_path) -> int:
    """Instructions of one ``expand`` of 512 k of two rows (a thread's share of a 64 x 512 tile), from
    nvcc's PTX for sm_90a (the arch the kernels are built for), without the wrapper's own stores."""
    import subprocess

    cu = tmp_path / f"{ns}.cu"
    cu.write_text(src + "\n__global__ void k(unsigned* out, int kg) {\n"
                  "  __shared__ __align__(128) unsigned char ws[64 * 256];\n  __shared__ unsigned short ss[64 * 64];\n"
                  "  unsigned frag[128];\n"
                  f"  {ns}::expand<32, 64, 128, 128, 8192>(ws, ss, 0, 0, kg, frag);\n"
                  "  for (int i = 0; i < 128; ++i) out[threadIdx.x * 128 + i] = frag[i];\n}\n")
    ptx = tmp_path / f"{ns}.ptx"
    subprocess.run(["nvcc", "-arch=sm_90a", "-ptx", str(cu), "-o", str(ptx)], check=True, capture_output=True)
    body = ptx.read_text().split("{", 1)[1]
    # the f16x2 arithmetic comes from cuda_fp16's inline asm, one instruction per "{op ...;" block
    lines = (ln.strip().lstrip("{").strip() for ln in body.splitlines() if ln.startswith("\t"))
    ops = [ln.split()[0] for ln in lines if ln and not ln.startswith(("//", ".", "}", "$", "ret", "st.global"))]
    return len(ops)


@pytest.mark.slow
def test_interleaved_expansion_takes_fewer_instructions_per_weight(tmp_path):
    """The claim beside the ``perm`` candidates: per weight, the interleaved expansion issues fewer
    instructions than the byte-lane one (nvcc's PTX of the same 64 x 512 share, same arithmetic)."""
    wide = _ptx_ops("w4w", w4a16._WIDE_SRC, tmp_path)
    perm = _ptx_ops("w4p", w4a16._PERM_SRC, tmp_path)
    assert perm < 0.75 * wide, (perm, wide)


@pytest.mark.slow
def test_interleaved_kernels_call_the_interleaved_expansion(fresh_compiles):
    for M, cfg in [(16, w4a16.config(16, 512, 4, wide=True, perm=True)),
                   (64, w4a16.config(64, 256, 4, chunk=128, wide=True, perm=True))]:
        src = w4a16.build(M, 1024, 2048, 128, cfg).get_kernel_source()
        assert "w4p::expand<" in src and "w4w::expand<" not in src and "ushort byte" not in src, w4a16.label(cfg)
        assert "wgmma_rs<" in src, w4a16.label(cfg)


def test_post_expansion_is_the_interleaved_one_without_its_scale():
    """``post``'s expansion (``w4u``) is ``w4p`` with the scale read and the ``mul.f16x2`` taken out and
    nothing else changed: its fragment holds ``q - 8`` (exact in fp16) where ``w4p``'s holds ``(q - 8) * s``."""
    scaled, post = w4a16._PERM_SRC.splitlines(), w4a16._POST_SRC.replace("w4u", "w4p").splitlines()
    assert w4a16._PERM_SRC.count("__hmul2(") == 1 and "__hmul2(" not in w4a16._POST_SRC
    assert "ss[" in w4a16._PERM_SRC and "ss[" not in w4a16._POST_SRC
    gone = [ln for ln in scaled if ln not in post]
    new = [ln for ln in post if ln not in scaled]
    assert len(gone) == 4 and len(post) == len(scaled) - 3, gone  # a comment, the scale read (2), the mul
    assert [ln.split("//")[0].strip() for ln in new] == ["const __half2 z = q;"]


def test_post_configurations_are_checked():
    base = dict(group=128, block_M=16, block_K=512, stages=6, split="k", cluster=1, wide=True)
    ok = dict(base, chunk=128, perm=True, inst="mma", post=True)
    w4a16.check_config(16, 8192, 8192, **ok)
    assert w4a16.label(w4a16.config(16, 512, 6, inst="mma", chunk=128, wide=True, perm=True, post=True)) \
        == "m16_k512_s6_k_mma_x128_il_po_wd"
    with pytest.raises(ValueError, match="needs perm=True and inst='mma'"):
        w4a16.check_config(16, 8192, 8192, **{**ok, "inst": "wgmma"})
    with pytest.raises(ValueError, match="needs perm=True and inst='mma'"):
        w4a16.check_config(16, 8192, 8192, **{**ok, "perm": False})
    with pytest.raises(ValueError, match="chunk=256 must equal group=128"):
        w4a16.check_config(16, 8192, 8192, **{**ok, "chunk": 256})
    with pytest.raises(ValueError, match="chunk=0 must equal group=128"):
        w4a16.check_config(16, 8192, 8192, **{**ok, "chunk": 0})
    q4 = dict(base, block_K=256, stages=12, consumers=4, chunk=128, perm=True, inst="mma")
    w4a16.check_config(16, 8192, 8192, **q4, post=True)  # four consumers take post's pieces
    with pytest.raises(ValueError, match="chunk \\(but post's\\)"):
        w4a16.check_config(16, 8192, 8192, **q4)


@pytest.mark.slow
def test_post_expansion_takes_fewer_instructions_than_the_scaled_one(tmp_path):
    """The lowp page's claim on ``post``: without the scale the expansion issues over a quarter fewer
    instructions per weight (nvcc's PTX of the same 64 x 512 share)."""
    perm = _ptx_ops("w4p", w4a16._PERM_SRC, tmp_path)
    post = _ptx_ops("w4u", w4a16._POST_SRC, tmp_path)
    assert post < 0.75 * perm, (post, perm)


@pytest.mark.slow
def test_post_kernels_multiply_each_groups_partial_by_its_scale(fresh_compiles):
    """A ``post`` kernel calls the unscaled expansion, starts every scale group's partial at zero and
    adds it to the accumulator times the scale, converted to fp32."""
    cfg = w4a16.config(16, 512, 4, inst="mma", chunk=128, wide=True, perm=True, post=True)
    src = w4a16.build(16, 1024, 2048, 128, cfg).get_kernel_source()
    expands = src.count("w4u::expand<")
    assert expands == 4 and "w4p::expand<" not in src and "mma_sync<" in src  # 2 pieces x 2 consumers
    assert len(re.findall(r"\*\(float4\*\)\(g[01] \+ \(i_\d+ \* 4\)\) = make_float4\(broadcast", src)) == expands
    assert src.count("__half22float2(") == expands


def test_eight_row_activation_tiles_are_for_mma_and_at_most_eight_rows():
    """``block_M=8`` (one n8 tile of mma.sync a k16 step) is accepted for the warp-level path and M <= 8 only;
    each refusal names its constraint."""
    from measure.suites.gemm import w4a16 as suite

    kw = dict(group=128, block_M=8, block_K=256, stages=12, split="k", cluster=1, inst="mma", chunk=128, wide=True,
              perm=True, post=True)
    for M in (1, 5, 8):
        w4a16.check_config(M, 8192, 8192, **kw)
    with pytest.raises(ValueError, match="at most 8 rows: M=9"):
        w4a16.check_config(9, 8192, 8192, **kw)
    with pytest.raises(ValueError, match="or 8 with inst='mma'"):
        w4a16.check_config(1, 8192, 8192, **{**kw, "inst": "wgmma", "chunk": 0, "post": False})
    with pytest.raises(ValueError, match="a multiple of 16 from 16 to 256"):
        w4a16.check_config(1, 8192, 8192, **{**kw, "block_M": 24})
    eight = [c for c in suite.CANDIDATES["decode"] if c.get("block_M") == 8]
    assert eight and all(w4a16.label(c).startswith("m8_") for c in eight)
    assert any(cfg.get("block_M") == 8 and M <= 8 for (M, _, _), cfg in suite.RAGGED)  # checked on a ragged M
    # the suite builds them for M = 1 only, not at M = 16, where the configuration check would refuse them
    keys = suite.build_thunks(suite.DECODE_SHAPES[:2])
    labels = {w4a16.label(c) for c in eight}
    assert suite.DECODE_SHAPES[0][0] == 1 and suite.DECODE_SHAPES[1][0] == 16
    assert {k.split("@")[0] for k in keys if k.endswith("@1x8192x8192")} >= labels
    assert not {k.split("@")[0] for k in keys if k.endswith("@16x8192x8192")} & labels


@pytest.mark.slow
def test_eight_row_tiles_issue_one_mma_per_k16_step(fresh_compiles):
    """At M = 1 the 8-row tile loads its activations with ldmatrix.x2 and issues one m16n8k16 per k16 step of each
    scale group, where the 16-row tile loads x4 and issues two."""
    counts = {}
    for bm in (8, 16):
        cfg = w4a16.config(bm, 256, 4, inst="mma", chunk=128, wide=True, perm=True, post=True)
        src = w4a16.build(1, 1024, 2048, 128, cfg).get_kernel_source()
        counts[bm] = (src.count("mma_sync<"), src.count("ptx_ldmatrix_x2("), src.count("ptx_ldmatrix_x4("))
    assert counts[8][1] > 0 and counts[8][2] == 0 and counts[16][1] == 0 and counts[16][2] > 0, counts
    assert 2 * counts[8][0] == counts[16][0], counts
