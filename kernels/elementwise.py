"""Elementwise add at four levels, and a scale + cast (chapter "elementwise").

Levels (same semantics, :func:`ref_add`):

1. ``add_parallel``   -- ``T.Parallel(threads)``: one element per thread per block.
2. ``add_per_thread`` -- ``T.Parallel(threads, npt)``: ``npt`` contiguous elements
   per thread; with 16-byte ``npt * itemsize`` the compiler emits ``uint4`` accesses.
3. ``add_fragment``   -- ``T.copy`` global -> register fragments, compute, copy back.
4. ``scale_cast``     -- ``y = cast(x * scale)``, fp32 in, fp16 (or bf16) out.

``rmw_group_sum`` is not a kernel to use: it is the chapter's example of a
read-modify-write store (``acc[i // g] += v[i]``) that the vectorizer scalarizes.

A length that is not a multiple of the block is served by predicated code (the
compiler inserts the bound check); tests pin the generated source.
"""


import tilelang
import tilelang.language as T

from kernels.common import TARGET, validate_tensor

INT32_MAX = 2**31 - 1


# ----------------------------------------------------------------- references
def ref_add(a, b):
    """c = a + b, computed in fp32 (the test reference is fp64 of the same inputs)."""
    return (a.float() + b.float()).to(a.dtype)


def ref_scale_cast(x, scale: float, out_dtype):
    """y = (x * scale) rounded once to out_dtype."""
    return (x.float() * scale).to(out_dtype)


# ------------------------------------------------------------ kernel factories
@tilelang.jit(target=TARGET)
def add_parallel(N: int, dtype: str = "float16", threads: int = 256):
    """Level 1: T.Parallel(threads); one element per thread, one block per `threads`."""

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):
                C[bx * threads + i] = A[bx * threads + i] + B[bx * threads + i]

    return main


@tilelang.jit(target=TARGET)
def add_per_thread(N: int, dtype: str = "float16", threads: int = 256, npt: int = 8):
    """Level 2: T.Parallel(threads, npt); each thread owns npt contiguous elements."""
    blk = threads * npt

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                C[idx] = A[idx] + B[idx]

    return main


@tilelang.jit(target=TARGET)
def add_fragment(N: int, dtype: str = "float16", threads: int = 256, npt: int = 8):
    """Level 3: T.copy into register fragments, add there, T.copy out."""
    blk = threads * npt

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            a = T.alloc_fragment((blk,), dtype)
            b = T.alloc_fragment((blk,), dtype)
            T.copy(A[bx * blk:(bx + 1) * blk], a)
            T.copy(B[bx * blk:(bx + 1) * blk], b)
            for i in T.Parallel(blk):
                a[i] = a[i] + b[i]
            T.copy(a, C[bx * blk:(bx + 1) * blk])

    return main


@tilelang.jit(target=TARGET)
def scale_cast(N: int, in_dtype: str = "float32", out_dtype: str = "float16",
               threads: int = 256, npt: int = 8):
    """Level 4: y = cast(x * scale, out_dtype); `scale` is a runtime fp32 argument."""
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), in_dtype), Y: T.Tensor((N,), out_dtype), scale: T.float32):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                Y[idx] = T.cast(X[idx] * scale, out_dtype)

    return main


@tilelang.jit(target=TARGET)
def rmw_group_sum(N: int, group: int = 8, dtype: str = "float32", threads: int = 128):
    """Pitfall demo: S[i // group] += X[i] -- the store index is invariant inside a
    group, so the vectorizer scalarizes the store (tests pin the generated code)."""
    G = N // group

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), S: T.Tensor((G,), dtype)):
        with T.Kernel(1, threads=threads) as _bx:
            x = T.alloc_fragment((N,), dtype)
            acc = T.alloc_fragment((G,), dtype)
            T.copy(X, x)
            T.clear(acc)
            for i in T.Parallel(N):
                acc[i // group] += x[i]
            T.copy(acc, S)

    return main


LEVELS = {"parallel": add_parallel, "per_thread": add_per_thread, "fragment": add_fragment}


def _dtype_str(t) -> str:
    return str(t.dtype).replace("torch.", "")


# -------------------------------------------------------------- input checks
def check_inputs(a, b, out=None, *, threads: int = 256, npt: int = 8) -> None:
    """ValueError naming the constraint, before any launch."""
    import torch

    allowed = (torch.float16, torch.bfloat16, torch.float32)
    validate_tensor("a", a, dtype=allowed, ndim=1, device=None)
    validate_tensor("b", b, dtype=a.dtype, shape=tuple(a.shape), device=None)
    if out is not None:
        validate_tensor("out", out, dtype=a.dtype, shape=tuple(a.shape), device=None)
    if a.numel() == 0:
        raise ValueError("a: must have at least one element")
    if a.numel() + threads * npt > INT32_MAX:
        raise ValueError(f"a: at most 2**31 - 1 - threads*npt elements (int32 indexing), got {a.numel()}")
    if threads % 32 or not 32 <= threads <= 1024:
        raise ValueError(f"threads must be a multiple of 32 in [32, 1024], got {threads}")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t is not None:
            validate_tensor(name, t)  # device last


def check_scale_cast(x, out_dtype, out=None, *, threads: int = 256, npt: int = 8) -> None:
    import torch

    validate_tensor("x", x, dtype=(torch.float32,), ndim=1, device=None)
    if out_dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"out_dtype must be float16 or bfloat16, got {out_dtype}")
    if out is not None:
        validate_tensor("out", out, dtype=out_dtype, shape=tuple(x.shape), device=None)
    if x.numel() == 0:
        raise ValueError("x: must have at least one element")
    if x.numel() + threads * npt > INT32_MAX:
        raise ValueError(f"x: at most 2**31 - 1 - threads*npt elements (int32 indexing), got {x.numel()}")
    validate_tensor("x", x)
    if out is not None:
        validate_tensor("out", out)


# ---------------------------------------------------------------- launchers
def add(a, b, out=None, *, level: str = "fragment", threads: int = 256, npt: int = 8):
    """c = a + b with the kernel of `level` ("parallel", "per_thread", "fragment")."""
    import torch

    if level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)}, got {level!r}")
    check_inputs(a, b, out, threads=threads, npt=npt)
    if out is None:
        out = torch.empty_like(a)
    n, dt = a.numel(), _dtype_str(a)
    if level == "parallel":
        k = add_parallel(n, dt, threads)
    else:
        k = LEVELS[level](n, dt, threads, npt)
    k(a, b, out)
    return out


def scale_to(x, scale: float, out_dtype=None, out=None, *, threads: int = 256, npt: int = 8):
    """y = cast(x * scale, out_dtype) (fp32 -> fp16 by default)."""
    import torch

    out_dtype = out_dtype or torch.float16
    check_scale_cast(x, out_dtype, out, threads=threads, npt=npt)
    if out is None:
        out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    k = scale_cast(x.numel(), "float32", str(out_dtype).replace("torch.", ""), threads, npt)
    k(x, out, float(scale))
    return out
