"""Chapter 1's kernel: sin(cos(x)) fused into one TileLang kernel, and the eager chains it is
compared with (two ATen kernels for sin(cos(x)); LayerNorm as three torch passes).

The measurements of chapter 1 -- eager vs fused, and the kernels torch.compile generates --
are the suite :mod:`measure.suites.pytorch`.
"""
# No `from __future__ import annotations`: T.prim_func evaluates its parameter annotations,
# and on Python 3.10 typing rejects a string annotation that evaluates to a buffer.
import tilelang
import tilelang.language as T

from kernels.common import TARGET, validate_tensor

SINCOS_SHAPE = (4096, 4096)
LAYERNORM_SHAPE = (8192, 4096)


# ----------------------------------------------------------------- references
def eager_sincos(x):
    """The eager chain: two ATen ops, two kernels, the intermediate in memory."""
    import torch

    return torch.sin(torch.cos(x))


def layernorm_three_pass(x, weight, bias, eps: float = 1e-5):
    """LayerNorm written as separate torch ops: a mean pass, a variance pass, a normalise pass."""
    import torch

    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


# ------------------------------------------------------------ kernel factory
@tilelang.jit(target=TARGET)
def sincos_fused(N: int, dtype: str = "float16", threads: int = 256, npt: int = 8):
    """One kernel for sin(cos(x)): read x once, compute in fp32 registers, write y once."""
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                Y[idx] = T.cast(T.sin(T.cos(T.cast(X[idx], "float32"))), dtype)

    return main


def check_inputs(x, out=None) -> None:
    """ValueError naming the constraint: 1-D contiguous fp16/bf16, length a multiple of 2048."""
    import torch

    validate_tensor("x", x, dtype=(torch.float16, torch.bfloat16), ndim=1, device=None)
    if x.numel() % 2048:
        raise ValueError(f"x: length must be a multiple of 2048 (threads x npt), got {x.numel()}")
    if x.numel() >= 2**31:
        raise ValueError(f"x: fewer than 2**31 elements (int32 indexing), got {x.numel()}")
    if out is not None:
        validate_tensor("out", out, dtype=x.dtype, shape=tuple(x.shape), device=None)


def sincos(x, out=None):
    """Launch the fused TileLang kernel on a 1-D tensor."""
    import torch

    check_inputs(x, out)
    out = torch.empty_like(x) if out is None else out
    sincos_fused(x.numel(), str(x.dtype).replace("torch.", ""))(x, out)
    return out
