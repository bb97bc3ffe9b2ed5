"""Input checks and launchers of the fused kernels."""
from kernels.common import validate_tensor
from kernels.fused.fragment import rmsnorm_rope, rmsnorm_rope_fp8
from kernels.fused.vec import rmsnorm_rope_fp8_vec, vec_supported


def check_inputs(x, weight, cos, sin, rope_dim: int, group: int | None = None, *, blk_m: int = 1,
                 threads: int = 256, outs=()) -> None:
    import torch

    validate_tensor("x", x, dtype=(torch.float16, torch.bfloat16), ndim=2, device=None)
    M, N = x.shape
    if M == 0 or N == 0:
        raise ValueError(f"x: needs at least one row and one column, got {tuple(x.shape)}")
    validate_tensor("weight", weight, dtype=x.dtype, shape=(N,), device=None)
    if not (2 <= rope_dim <= N) or rope_dim % 2:
        raise ValueError(f"rope_dim must be even and in [2, N={N}], got {rope_dim}")
    validate_tensor("cos", cos, dtype=(torch.float32,), shape=(M, rope_dim // 2), device=None)
    validate_tensor("sin", sin, dtype=(torch.float32,), shape=(M, rope_dim // 2), device=None)
    if group is not None and (group <= 0 or N % group or group % 8):
        raise ValueError(f"N={N} must be a multiple of group={group}, itself a multiple of 8")
    if (blk_m * N) % threads:
        raise ValueError(f"blk_m*N={blk_m * N} must be a multiple of threads={threads} (fragment layout)")
    if blk_m * N // threads > 64:
        raise ValueError(f"blk_m*N/threads must be <= 64 elements per thread (rows live in registers), "
                         f"got {blk_m * N // threads}")
    for name, t in outs:
        validate_tensor(name, t, device=None)
    for name, t in (("x", x), ("weight", weight), ("cos", cos), ("sin", sin), *outs):
        validate_tensor(name, t)


def fused_rmsnorm_rope(x, weight, cos, sin, rope_dim: int, eps: float = 1e-6, out=None, *,
                       blk_m: int = 1, threads: int = 256):
    import torch

    outs = () if out is None else (("out", out),)
    check_inputs(x, weight, cos, sin, rope_dim, None, blk_m=blk_m, threads=threads, outs=outs)
    if out is not None and (out.shape != x.shape or out.dtype != x.dtype):
        raise ValueError(f"out: must match x (shape {tuple(x.shape)}, dtype {x.dtype})")
    M, N = x.shape
    out = torch.empty_like(x) if out is None else out
    k = rmsnorm_rope(M, N, rope_dim, str(x.dtype).replace("torch.", ""), blk_m, threads, float(eps))
    k(x, weight, cos, sin, out)
    return out


VEC_DEFAULT = (128, 1, 8, 9)  # (tpr, rows, seg, min_blocks): the fastest recorded vec configuration


def fused_rmsnorm_rope_fp8(x, weight, cos, sin, rope_dim: int, group: int = 128, eps: float = 1e-6,
                           q=None, scale=None, *, schedule: str = "auto", blk_m: int = 1, threads: int = 256):
    """(q, scale) of RMSNorm + RoPE + per-group FP8.  ``schedule``: ``"vec"``
    (:func:`rmsnorm_rope_fp8_vec` at :data:`VEC_DEFAULT`, the fastest recorded on the H200),
    ``"fragment"`` (:func:`rmsnorm_rope_fp8` with ``blk_m`` and ``threads``) or ``"auto"``
    (vec where :func:`vec_supported` serves the shape, else fragment)."""
    import torch

    if schedule not in ("auto", "vec", "fragment"):
        raise ValueError(f"schedule must be 'auto', 'vec' or 'fragment', got {schedule!r}")
    validate_tensor("x", x, dtype=(torch.float16, torch.bfloat16), ndim=2, device=None)
    M, N = x.shape
    dt = str(x.dtype).replace("torch.", "")
    tpr, rows, seg, mb = VEC_DEFAULT
    vec_ok = vec_supported(N, rope_dim, group, dt, tpr, seg)
    if schedule == "vec" and not vec_ok:
        raise ValueError(f"schedule 'vec' does not serve N={N}, rope_dim={rope_dim}, group={group}, dtype={dt} "
                         f"(see vec_supported)")
    outs = tuple((n, t) for n, t in (("q", q), ("scale", scale)) if t is not None)
    check_inputs(x, weight, cos, sin, rope_dim, group, blk_m=blk_m, threads=threads, outs=outs)
    if q is not None and (tuple(q.shape) != (M, N) or q.dtype != torch.float8_e4m3fn):
        raise ValueError(f"q: must be float8_e4m3fn of shape {(M, N)}")
    if scale is not None and (tuple(scale.shape) != (M, N // group) or scale.dtype != torch.float32):
        raise ValueError(f"scale: must be float32 of shape {(M, N // group)}")
    q = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device) if q is None else q
    scale = torch.empty((M, N // group), dtype=torch.float32, device=x.device) if scale is None else scale
    if vec_ok and schedule != "fragment":
        rmsnorm_rope_fp8_vec(M, N, rope_dim, group, dt, tpr, rows, seg, float(eps), mb)(x, weight, cos, sin, q, scale)
        return q, scale
    k = rmsnorm_rope_fp8(M, N, rope_dim, group, dt, blk_m, threads, float(eps))
    k(x.view(M, N // group, group), weight.view(N // group, group), cos, sin, q.view(M, N // group, group), scale)
    return q, scale
