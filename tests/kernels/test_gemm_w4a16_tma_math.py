"""CPU emulation of the TMA decode kernel's math (kernels/gemm/w4a16_tma.py), no compile: the expansion
of one byte (prmt / lop3 / fma.rn.f16x2 with the module's own constants) gives (q_lo - 8, q_hi - 8)
exactly for all 256 bytes; and the index mapping (weight plane reads, the activation fill layout, the
m16n8k16 fragment layout of the PTX ISA, the accumulator layout) reproduces the reference product
(q - 8) @ A^T of one 128-k group on random bytes.  A wrong selector, mask, constant, byte order or
k mapping makes these fail."""

import numpy as np
import pytest

from kernels.gemm import w4a16_tma as tk

EX = tk.EXPAND


def prmt(a: int, b: int, sel: int) -> int:
    """PTX prmt.b32 (default mode): byte lane l of the result is byte (sel >> 4l) & 7 of {b, a}."""
    src = a.to_bytes(4, "little") + b.to_bytes(4, "little")
    return int.from_bytes(bytes(src[(sel >> (4 * lane)) & 7] for lane in range(4)), "little")


def f16(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def fma_f16x2(x: int, m: int, c: int) -> tuple[float, float]:
    """fma.rn.f16x2 on (low, high) halves: one rounding of the exact x * m + c to fp16."""
    out = []
    for sh in (0, 16):
        exact = f16((x >> sh) & 0xFFFF) * f16((m >> sh) & 0xFFFF) + f16((c >> sh) & 0xFFFF)
        out.append(float(np.float16(exact)))
    return out[0], out[1]


def expand(w: int, b: int) -> tuple[float, float]:
    """w4t::expand<b>(w, MAGIC, MUL) as the CUDA text computes it."""
    x = prmt(w, EX["MAGIC"], EX["SEL"] | b | (b << 8)) & EX["MASK"]
    return fma_f16x2(x, EX["MUL"], EX["ADD"])


def test_constants_are_the_fp16_values_the_docstring_names():
    assert (f16(EX["MUL"] & 0xFFFF), f16(EX["MUL"] >> 16)) == (1.0, 1 / 16)
    assert (f16(EX["ADD"] & 0xFFFF), f16(EX["ADD"] >> 16)) == (-1032.0, -72.0)
    for k, v in EX.items():
        assert f"0x{v:08X}u" in tk._SRC, k  # the CUDA text carries the same constants
    assert "@" not in tk._SRC


@pytest.mark.parametrize("b", range(4))
def test_expansion_of_every_byte_is_exact(b):
    rng = np.random.default_rng(b)
    for byte in range(256):
        other = [int(x) for x in rng.integers(0, 256, 3)]  # the word's other bytes must not leak in
        word_bytes = other[:b] + [byte] + other[b:]
        w = int.from_bytes(bytes(word_bytes), "little")
        lo, hi = expand(w, b)
        assert (lo, hi) == ((byte & 15) - 8, (byte >> 4) - 8), (b, byte)


def a_frag_pos(g: int, t: int, reg: int, e: int) -> tuple[int, int]:
    """PTX ISA, mma.m16n8k16 .f16 A fragment: (row, logical k) of element e of register a<reg>."""
    return g + 8 * (reg % 2), 2 * t + e + 8 * (reg // 2)


def b_frag_pos(g: int, t: int, reg: int, e: int) -> tuple[int, int]:
    """B fragment: (logical k, column) of element e of register b<reg>."""
    return 2 * t + e + 8 * reg, g


def c_frag_pos(g: int, t: int, c: int) -> tuple[int, int]:
    """C/D fragment (fp32): (row, column) of c<c>."""
    return g + 8 * (c // 2), 2 * t + c % 2


def fill_layout(ks: int) -> np.ndarray:
    """Position in a row of the activation tile of each k of the block's slice (w4t::fill's formula):
    source chunk q = idx % QR (8 halves, k = 8q + e) goes to (q/16)*128 + (q%4)*32 + ((q/4)%4)*8 + e."""
    pos = np.empty(ks, dtype=np.int64)
    for q in range(ks // 8):
        base = (q // 16) * 128 + (q % 4) * 32 + ((q // 4) % 4) * 8
        pos[8 * q:8 * q + 8] = base + np.arange(8)
    return pos


def test_fill_layout_is_the_documented_permutation():
    pos = fill_layout(512)
    assert sorted(pos.tolist()) == list(range(512))  # a permutation of the slice
    for k in range(512):
        c, r = divmod(k, 128)
        t, j, e = r // 32, (r % 32) // 8, r % 8
        assert pos[k] == c * 128 + 32 * j + 8 * t + e


def emulate_group(wbytes: np.ndarray, act: np.ndarray, nt: int) -> np.ndarray:
    """One warp, one 128-k group: wbytes [16 rows, 64] (the plane rows of the warp), act [8 nt, 128]
    (natural k order); returns the fp32 tile [16, 8 nt] the mma steps accumulate, built only from the
    thread-level formulas of w4t::slot and the PTX fragment layout."""
    tile = np.zeros((8 * nt, 128), dtype=np.float64)
    pos = fill_layout(128)
    tile[:, pos] = act  # the shared-memory tile after w4t::fill
    out = np.zeros((16, 8 * nt))
    for n in range(nt):
        for i in range(8):  # mma step i
            A = np.full((16, 16), np.nan)
            B = np.full((16, 8), np.nan)
            for lane in range(32):
                g, t = lane // 4, lane % 4
                # ld.shared.v4 of row g / g + 8 at byte 16t of the plane
                r0 = wbytes[g, 16 * t:16 * t + 16].tobytes()
                r1 = wbytes[g + 8, 16 * t:16 * t + 16].tobytes()
                j, half = divmod(i, 2)
                w0 = int.from_bytes(r0[4 * j:4 * j + 4], "little")
                w1 = int.from_bytes(r1[4 * j:4 * j + 4], "little")
                # step 2j: bytes 0, 1 of word j; step 2j + 1: bytes 2, 3 (a0 = e?0, a1 = e1?, a2 = e0?+1, a3)
                regs_a = [expand(w0, 2 * half), expand(w1, 2 * half), expand(w0, 2 * half + 1),
                          expand(w1, 2 * half + 1)]
                # 128-bit activation load j at 32j + 8t of row 8n + g: (x, y) step 2j, (z, w) step 2j + 1
                x = tile[8 * n + g, 32 * j + 8 * t:32 * j + 8 * t + 8]
                regs_b = [x[4 * half:4 * half + 2], x[4 * half + 2:4 * half + 4]]
                for reg in range(4):
                    for e in range(2):
                        r, k = a_frag_pos(g, t, reg, e)
                        assert np.isnan(A[r, k])
                        A[r, k] = regs_a[reg][e]
                for reg in range(2):
                    for e in range(2):
                        k, c = b_frag_pos(g, t, reg, e)
                        assert np.isnan(B[k, c])
                        B[k, c] = regs_b[reg][e]
            assert not np.isnan(A).any() and not np.isnan(B).any()  # every fragment element written once
            D = A @ B
            for lane in range(32):
                g, t = lane // 4, lane % 4
                for c in range(4):
                    r, col = c_frag_pos(g, t, c)
                    out[r, 8 * n + col] += D[r, col]
    return out


@pytest.mark.parametrize("nt", [1, 2])
def test_fragments_reproduce_the_reference_group_product(nt):
    rng = np.random.default_rng(21 + nt)
    wbytes = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    act = rng.standard_normal((8 * nt, 128))
    # reference dequant: byte k // 2 of a row, low nibble = even k, offset-binary q - 8
    q = np.empty((16, 128))
    q[:, 0::2] = (wbytes & 15).astype(np.float64) - 8
    q[:, 1::2] = (wbytes >> 4).astype(np.float64) - 8
    ref = q @ act.T
    got = emulate_group(wbytes, act, nt)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9)


def test_a_swapped_k_mapping_is_caught():
    """The emulation is sensitive: the same bytes with the activation tile in natural order (no fill
    permutation) give a different product."""
    rng = np.random.default_rng(5)
    wbytes = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    act = rng.standard_normal((8, 128))
    q = np.empty((16, 128))
    q[:, 0::2] = (wbytes & 15).astype(np.float64) - 8
    q[:, 1::2] = (wbytes >> 4).astype(np.float64) - 8
    wrong = act[:, np.argsort(fill_layout(128))]  # undo the fill: the kernel would read the wrong k
    assert not np.allclose(emulate_group(wbytes, wrong, 1), q @ act.T)
