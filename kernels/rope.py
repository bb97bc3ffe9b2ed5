"""Rotary position embedding (RoPE), both pairing conventions (chapter "elementwise").

``x (S, H, D)`` (tokens, heads, head_dim) in fp16/bf16; ``cos, sin (S, R // 2)`` fp32
with ``R = rope_dim <= D``.  Only the last ``R`` channels of each head are rotated
(``start = D - R``; the first ``start`` pass through).  With ``r = j - start``:

* NeoX / half-split: pair ``(p, p + R/2)``, ``y_p = x_p c_p - x_{p+R/2} s_p``,
  ``y_{p+R/2} = x_{p+R/2} c_p + x_p s_p``;
* interleaved (RoFormer / GPT-J): pair ``(2p, 2p+1)``, same rotation.

Everything is computed in fp32 and cast once.  The naive kernel writes every element
as ``y_j = x_j c + sign_j x_partner(j) s``; indices are clamped so that the
pass-through channels never form an out-of-range partner.

* ``rope_naive``   -- one token per block, x and the tables read straight from global;
* ``rope_blocked`` -- ``blk_s`` tokens per block, x and cos/sin staged in shared memory,
  one loop iteration per pair writing both outputs into a shared tile that one
  ``T.copy`` stores (a TMA store on sm_90).  Its tiling constraints are checked by
  :func:`_threads_for` (ValueError); the naive kernel serves any shape.
"""
import tilelang
import tilelang.language as T

from kernels.common import TARGET, validate_tensor

ACC = "float32"
STYLES = ("neox", "interleaved")


# ----------------------------------------------------------------- reference
def ref_rope(x, cos, sin, rope_dim: int, style: str = "neox"):
    """PyTorch reference: rotate the last rope_dim channels, fp32 math, one cast."""
    import torch

    D = x.shape[-1]
    start = D - rope_dim
    xf = x.float()
    head, tail = xf[..., :start], xf[..., start:]
    c = cos.float()[:, None, :]
    s = sin.float()[:, None, :]
    if style == "neox":
        a, b = tail[..., : rope_dim // 2], tail[..., rope_dim // 2:]
        rot = torch.cat([a * c - b * s, b * c + a * s], dim=-1)
    else:
        a, b = tail[..., 0::2], tail[..., 1::2]
        rot = torch.stack([a * c - b * s, b * c + a * s], dim=-1).flatten(-2)
    return torch.cat([head, rot], dim=-1).to(x.dtype)


def rope_tables(S: int, rope_dim: int, base: float = 10000.0, device="cpu"):
    """cos/sin (S, rope_dim/2) fp32 for positions 0..S-1 (the kernel does not care how)."""
    import torch

    inv = base ** (-torch.arange(0, rope_dim, 2, dtype=torch.float64, device=device) / rope_dim)
    ang = torch.arange(S, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return ang.cos().float(), ang.sin().float()


def _pair(j, start, half, style):
    """(p, partner channel, sign) of channel j; indices clamped for pass-through channels."""
    r = T.max(j - start, 0)
    if style == "neox":
        p = r % half
        partner = start + T.if_then_else(r < half, r + half, r - half)
        sign = T.if_then_else(r < half, -1.0, 1.0)
    else:
        p = r // 2
        partner = start + r + 1 - 2 * (r % 2)
        sign = T.if_then_else(r % 2 == 0, -1.0, 1.0)
    return p, partner, sign


# ------------------------------------------------------------ kernel factories
@tilelang.jit(target=TARGET)
def rope_naive(S: int, H: int, D: int, rope_dim: int, style: str = "neox", dtype: str = "float16",
               threads: int = 256):
    """One token per block; every element reads its partner and the tables from global."""
    start, half = D - rope_dim, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((S, H, D), dtype), C: T.Tensor((S, half), ACC), Sn: T.Tensor((S, half), ACC),
             Y: T.Tensor((S, H, D), dtype)):
        with T.Kernel(S, threads=threads) as s:
            for h, j in T.Parallel(H, D):
                p, partner, sign = _pair(j, start, half, style)
                xv = T.cast(X[s, h, j], ACC)
                rot = xv * C[s, p] + sign * T.cast(X[s, h, partner], ACC) * Sn[s, p]
                Y[s, h, j] = T.cast(T.if_then_else(j >= start, rot, xv), dtype)

    return main


@tilelang.jit(target=TARGET)
def rope_blocked(S: int, H: int, D: int, rope_dim: int, style: str = "neox", dtype: str = "float16",
                 blk_s: int = 2, threads: int = 256):
    """blk_s tokens per block; x, cos and sin staged in shared; one loop iteration per
    *pair* writes both rotated channels into a shared output tile, copied out at once.

    NeoX pairs (p, p + R/2) are two contiguous runs, so loads, math and stores
    vectorize; interleaved pairs (2p, 2p + 1) are stride-2 and stay scalar on chip.
    """
    start, half = D - rope_dim, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((S, H, D), dtype), C: T.Tensor((S, half), ACC), Sn: T.Tensor((S, half), ACC),
             Y: T.Tensor((S, H, D), dtype)):
        with T.Kernel(T.ceildiv(S, blk_s), threads=threads) as bs:
            xs = T.alloc_shared((blk_s, H, D), dtype)
            ys = T.alloc_shared((blk_s, H, D), dtype)
            cs = T.alloc_shared((blk_s, half), ACC)
            ss = T.alloc_shared((blk_s, half), ACC)
            T.copy(X[bs * blk_s, 0, 0], xs)
            T.copy(C[bs * blk_s, 0], cs)
            T.copy(Sn[bs * blk_s, 0], ss)
            for i, h, p in T.Parallel(blk_s, H, half):
                if style == "neox":
                    ja = start + p
                    jb = start + p + half
                else:
                    ja = start + 2 * p
                    jb = start + 2 * p + 1
                a = T.cast(xs[i, h, ja], ACC)
                b = T.cast(xs[i, h, jb], ACC)
                ys[i, h, ja] = T.cast(a * cs[i, p] - b * ss[i, p], dtype)
                ys[i, h, jb] = T.cast(b * cs[i, p] + a * ss[i, p], dtype)
            if start > 0:
                for i, h, j in T.Parallel(blk_s, H, start):
                    ys[i, h, j] = xs[i, h, j]
            T.copy(ys, Y[bs * blk_s, 0, 0])

    return main


# -------------------------------------------------------------- input checks
def check_inputs(x, cos, sin, rope_dim: int, style: str = "neox", out=None, *, device: bool = True) -> None:
    import torch

    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    validate_tensor("x", x, dtype=(torch.float16, torch.bfloat16), ndim=3, device=None)
    S, H, D = x.shape
    if S == 0 or H == 0 or D == 0:
        raise ValueError(f"x: needs S, H, D > 0, got {tuple(x.shape)}")
    if D % 2:
        raise ValueError(f"head_dim D must be even, got {D}")
    if not (2 <= rope_dim <= D) or rope_dim % 2:
        raise ValueError(f"rope_dim must be even and in [2, D={D}], got {rope_dim}")
    validate_tensor("cos", cos, dtype=(torch.float32,), shape=(S, rope_dim // 2), device=None)
    validate_tensor("sin", sin, dtype=(torch.float32,), shape=(S, rope_dim // 2), device=None)
    if out is not None:
        validate_tensor("out", out, dtype=x.dtype, shape=(S, H, D), device=None)
    if x.numel() >= 2**31:
        raise ValueError(f"x: fewer than 2**31 elements (int32 indexing), got {x.numel()}")
    if device:
        _check_device(x, cos, sin, out)


def _check_device(x, cos, sin, out):
    for name, t in (("x", x), ("cos", cos), ("sin", sin), ("out", out)):
        if t is not None:
            validate_tensor(name, t)


def _threads_for(blk_s: int, H: int, D: int, rope_dim: int, threads=None) -> int:
    """Thread count for the blocked kernel, or ValueError naming what the tiling needs.

    Layout inference in tilelang 0.1.15 needs both parallel loops (blk_s*H*rope_dim/2
    pairs, blk_s*H*(D - rope_dim) pass-through channels) to split evenly over the
    threads, and fails ("mapped indices are not independent") for a head count that
    is not a power of two when blk_s > 1.
    """
    pairs, rest = blk_s * H * (rope_dim // 2), blk_s * H * (D - rope_dim)
    if blk_s > 1 and H & (H - 1):
        raise ValueError(f"blocked RoPE: H={H} must be a power of two when blk_s > 1 "
                         f"(use blk_s=1 or blocked=False)")
    for t in ((threads,) if threads else (256, 128, 64, 32)):
        if pairs % t == 0 and rest % t == 0:
            return t
    raise ValueError(f"blocked RoPE: blk_s*H*rope_dim/2={pairs} and blk_s*H*(D-rope_dim)={rest} must be "
                     f"multiples of the thread count ({threads or '32..256'}); change blk_s or use blocked=False")


def rope(x, cos, sin, rope_dim: int | None = None, style: str = "neox", out=None, *,
         blocked: bool = True, blk_s: int = 2, threads: int | None = None):
    import torch

    rope_dim = x.shape[-1] if rope_dim is None else rope_dim
    check_inputs(x, cos, sin, rope_dim, style, out, device=False)
    S, H, D = x.shape
    if blocked:
        threads = _threads_for(blk_s, H, D, rope_dim, threads)
        if 2 * blk_s * H * D * x.element_size() > 160 * 1024:
            raise ValueError(f"2*blk_s*H*D*itemsize (x and y tiles) must fit 160 KiB of shared memory, "
                             f"got {2 * blk_s * H * D * x.element_size()} B; lower blk_s")
    threads = threads or 256
    _check_device(x, cos, sin, out)
    out = torch.empty_like(x) if out is None else out
    dt = str(x.dtype).replace("torch.", "")
    if blocked:
        k = rope_blocked(S, H, D, rope_dim, style, dt, blk_s, threads)
    else:
        k = rope_naive(S, H, D, rope_dim, style, dt, threads)
    k(x, cos, sin, out)
    return out
