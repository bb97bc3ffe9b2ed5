"""Chapter 13: fused RMSNorm + RoPE, and fused RMSNorm + RoPE + per-token FP8 quant.

``x (M, N)`` fp16/bf16 (M tokens, hidden N), ``weight (N,)``, ``cos, sin (M, R/2)``
fp32.  Semantics = the three separate steps, each rounding to the input dtype:

    y1 = rmsnorm(x, weight)                  (fp32 math, cast to dtype)
    y2 = rope(y1, last R channels, NeoX)     (fp32 math, cast to dtype)
    q, scale = quant_fp8(y2, group)          (per token and group of channels)

Data flow of the fused kernel, ``blk_m`` tokens per block: x -> shared (one global
read) -> fp32 squares in a fragment -> ``T.reduce_sum`` -> normalized value cast to
dtype and written back to the *same* shared tile -> RoPE rotates the tail of that
tile in place, one iteration per pair (channel p and p + R/2 may sit in different
threads' registers, so the pairing goes through shared memory) -> either the tile
copied out (RMSNorm + RoPE), or an fp32 ``(blk_m, N / group, group)`` fragment
reduced with ``T.reduce_absmax`` and cast to e4m3 (the FP8 variant): one read of
x, one write of 1 byte per element plus the scales.
"""
import tilelang
import tilelang.language as T

from kernels.harness import ledger_cost, validate_tensor
from kernels.quant import EPS, FP8, FP8_MAX

TARGET = {"kind": "cuda", "arch": "sm_90a"}
ACC = "float32"


# ----------------------------------------------------------------- references
def ref_rmsnorm_rope(x, weight, cos, sin, rope_dim: int, eps: float = 1e-6):
    """Reference: RMSNorm then NeoX RoPE on the last rope_dim channels (each step cast to dtype)."""
    from kernels.norm import ref_rmsnorm
    from kernels.rope import ref_rope

    y1 = ref_rmsnorm(x, weight, eps)
    return ref_rope(y1[:, None, :], cos, sin, rope_dim, "neox")[:, 0, :]


def ref_rmsnorm_rope_fp8(x, weight, cos, sin, rope_dim: int, group: int = 128, eps: float = 1e-6):
    from kernels.quant import ref_quant_fp8

    return ref_quant_fp8(ref_rmsnorm_rope(x, weight, cos, sin, rope_dim, eps), group)


# ------------------------------------------------------------ kernel factories
@tilelang.jit(target=TARGET)
def rmsnorm_rope(M: int, N: int, rope_dim: int, dtype: str = "bfloat16", blk_m: int = 2,
                 threads: int = 256, eps: float = 1e-6):
    start, half = N - rope_dim, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            xs = T.alloc_shared((blk_m, N), dtype)
            ws = T.alloc_shared((N,), dtype)
            cs = T.alloc_shared((blk_m, half), ACC)
            ss = T.alloc_shared((blk_m, half), ACC)
            sq = T.alloc_fragment((blk_m, N), ACC)
            rs = T.alloc_fragment((blk_m,), ACC)
            T.copy(X[bx * blk_m, 0], xs)
            T.copy(W[0], ws)
            T.copy(C[bx * blk_m, 0], cs)
            T.copy(Sn[bx * blk_m, 0], ss)
            for i, j in T.Parallel(blk_m, N):
                sq[i, j] = T.cast(xs[i, j], ACC) * T.cast(xs[i, j], ACC)
            T.reduce_sum(sq, rs, dim=1)
            for i in T.Parallel(blk_m):
                rs[i] = T.rsqrt(rs[i] / N + eps)
            for i, j in T.Parallel(blk_m, N):
                xs[i, j] = T.cast(T.cast(xs[i, j], ACC) * rs[i] * T.cast(ws[j], ACC), dtype)
            for i, p in T.Parallel(blk_m, half):  # RoPE on the tail, in place, one pair per iteration
                a = T.cast(xs[i, start + p], ACC)
                b = T.cast(xs[i, start + p + half], ACC)
                xs[i, start + p] = T.cast(a * cs[i, p] - b * ss[i, p], dtype)
                xs[i, start + p + half] = T.cast(b * cs[i, p] + a * ss[i, p], dtype)
            T.copy(xs, Y[bx * blk_m, 0])

    return main


@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                     blk_m: int = 2, threads: int = 256, eps: float = 1e-6):
    start, half = N - rope_dim, rope_dim // 2
    G = N // group

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, G, group), FP8), S: T.Tensor((M, G), ACC)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            xs = T.alloc_shared((blk_m, N), dtype)
            ws = T.alloc_shared((N,), dtype)
            cs = T.alloc_shared((blk_m, half), ACC)
            ss = T.alloc_shared((blk_m, half), ACC)
            sq = T.alloc_fragment((blk_m, N), ACC)
            rs = T.alloc_fragment((blk_m,), ACC)
            t = T.alloc_fragment((blk_m, G, group), ACC)
            amax = T.alloc_fragment((blk_m, G), ACC)
            q = T.alloc_fragment((blk_m, G, group), FP8)
            T.copy(X[bx * blk_m, 0], xs)
            T.copy(W[0], ws)
            T.copy(C[bx * blk_m, 0], cs)
            T.copy(Sn[bx * blk_m, 0], ss)
            for i, j in T.Parallel(blk_m, N):
                sq[i, j] = T.cast(xs[i, j], ACC) * T.cast(xs[i, j], ACC)
            T.reduce_sum(sq, rs, dim=1)
            for i in T.Parallel(blk_m):
                rs[i] = T.rsqrt(rs[i] / N + eps)
            for i, j in T.Parallel(blk_m, N):
                xs[i, j] = T.cast(T.cast(xs[i, j], ACC) * rs[i] * T.cast(ws[j], ACC), dtype)
            for i, p in T.Parallel(blk_m, half):  # RoPE on the tail, in place, one pair per iteration
                a = T.cast(xs[i, start + p], ACC)
                b = T.cast(xs[i, start + p + half], ACC)
                xs[i, start + p] = T.cast(a * cs[i, p] - b * ss[i, p], dtype)
                xs[i, start + p + half] = T.cast(b * cs[i, p] + a * ss[i, p], dtype)
            for i, g, k in T.Parallel(blk_m, G, group):
                # xs holds dtype values: the same numbers the unfused chain hands the quantizer
                t[i, g, k] = T.cast(xs[i, g * group + k], ACC)
            T.reduce_absmax(t, amax, dim=2)
            for i, g in T.Parallel(blk_m, G):
                amax[i, g] = T.max(amax[i, g], EPS) / FP8_MAX
            for i, g, k in T.Parallel(blk_m, G, group):
                q[i, g, k] = T.cast(T.clamp(t[i, g, k] / amax[i, g], -FP8_MAX, FP8_MAX), FP8)
            T.copy(q, Q[bx * blk_m, 0, 0])
            T.copy(amax, S[bx * blk_m, 0])

    return main


# -------------------------------------------------------------- input checks
def check_inputs(x, weight, cos, sin, rope_dim: int, group: int | None = None, *, blk_m: int = 2,
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
        raise ValueError(f"blk_m*N/threads must be <= 64 elements per thread, got {blk_m * N // threads}")
    if 2 * blk_m * N * x.element_size() + N * x.element_size() > 160 * 1024:
        raise ValueError(f"the (blk_m, N) tile must fit in shared memory; lower blk_m (N={N})")
    for name, t in outs:
        validate_tensor(name, t, device=None)
    for name, t in (("x", x), ("weight", weight), ("cos", cos), ("sin", sin), *outs):
        validate_tensor(name, t)


def fused_rmsnorm_rope(x, weight, cos, sin, rope_dim: int, eps: float = 1e-6, out=None, *,
                       blk_m: int = 2, threads: int = 256):
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


def fused_rmsnorm_rope_fp8(x, weight, cos, sin, rope_dim: int, group: int = 128, eps: float = 1e-6,
                           q=None, scale=None, *, blk_m: int = 2, threads: int = 256):
    import torch

    outs = tuple((n, t) for n, t in (("q", q), ("scale", scale)) if t is not None)
    check_inputs(x, weight, cos, sin, rope_dim, group, blk_m=blk_m, threads=threads, outs=outs)
    M, N = x.shape
    if q is not None and (tuple(q.shape) != (M, N) or q.dtype != torch.float8_e4m3fn):
        raise ValueError(f"q: must be float8_e4m3fn of shape {(M, N)}")
    if scale is not None and (tuple(scale.shape) != (M, N // group) or scale.dtype != torch.float32):
        raise ValueError(f"scale: must be float32 of shape {(M, N // group)}")
    q = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device) if q is None else q
    scale = torch.empty((M, N // group), dtype=torch.float32, device=x.device) if scale is None else scale
    k = rmsnorm_rope_fp8(M, N, rope_dim, group, str(x.dtype).replace("torch.", ""), blk_m, threads, float(eps))
    k(x, weight, cos, sin, q.view(M, N // group, group), scale)
    return q, scale


# ------------------------------------------------------------------ GPU suite
def gpu_suite(h) -> None:
    import torch

    from kernels import norm, quant, rope

    bf16, f16 = torch.bfloat16, torch.float16
    cases = [(bf16, 64, 4096, 128, 2), (f16, 37, 4096, 64, 2), (bf16, 5, 1024, 1024, 1)]
    Mp, Np, Rp, Gp = (2048, 4096, 128, 128) if h.quick else (16384, 4096, 128, 128)
    jobs = []
    for dt, M, N, R, bm in cases:
        dn = str(dt).replace("torch.", "")
        jobs += [(rmsnorm_rope, (M, N, R, dn, bm, 256, 1e-6)), (rmsnorm_rope_fp8, (M, N, R, 128, dn, bm, 256, 1e-6))]
    jobs += [(rmsnorm_rope_fp8, (Mp, Np, Rp, Gp, "bfloat16", bm, 256, 1e-6)) for bm in (1, 2)]
    jobs += [(norm.rmsnorm_rows, (Mp, Np, "bfloat16", 4, 256, 1e-6)),
             (rope.rope_blocked, (Mp, 1, Np, Rp, "neox", "bfloat16", 4, rope._threads_for(4, 1, Np, Rp))),
             (quant.quant_fp8, (Mp, Np, Gp, "bfloat16", 4, 256)),
             (rmsnorm_rope, (Mp, Np, Rp, "bfloat16", 2, 256, 1e-6))]
    h.precompile(jobs)
    for dt, M, N, R, bm in cases:
        x = h.rand((M, N), dt, scale=2.0)
        w = h.rand(N, dt)
        cos, sin = rope.rope_tables(M, R, device=h.device)
        # the fp32 reference of the chain: each step from the previous step's rounded output
        y1 = norm.ref_rmsnorm(x, w, 1e-6)
        want = rope._ref64(y1[:, None, :], cos, sin, R, "neox")[:, 0, :]
        # the kernel's rounded intermediate (y1) may differ from torch's by one ulp, and RoPE
        # can cancel: allow one ulp of the dtype at the largest magnitude of the result
        eps = torch.finfo(dt).eps
        atol = eps * float(want.abs().max())
        y = h.poisoned((M, N), dt)
        fused_rmsnorm_rope(x, w, cos, sin, R, 1e-6, y, blk_m=bm)
        h.check("fused rmsnorm+rope", y, want, atol=atol)
        q = h.poisoned((M, N), torch.float8_e4m3fn)
        s = h.poisoned((M, N // 128), torch.float32)
        fused_rmsnorm_rope_fp8(x, w, cos, sin, R, 128, 1e-6, q, s, blk_m=bm)
        G = N // 128
        wg = want.view(M, G, 128)
        s_ref = wg.abs().amax(-1).clamp_min(EPS) / FP8_MAX
        h.check("fused rmsnorm+rope+fp8 scale", s, s_ref, rtol=2 * eps, atol=0.0)
        # dequantized value against the fp64 chain: one e4m3 ulp relative, plus the
        # one-dtype-ulp slack above (and half the smallest e4m3 step of each group)
        deq = (q.double().view(M, G, 128) * s.double()[..., None]).view(M, N)
        h.check("fused rmsnorm+rope+fp8 dequantized", deq, want, dtype=torch.float8_e4m3fn,
                rtol=0.0625, atol=atol + float(s_ref.max()) * 2.0 ** -9)

    M, N, R, G = Mp, Np, Rp, Gp
    x = h.rand((M, N), bf16)
    w = h.rand(N, bf16)
    cos, sin = rope.rope_tables(M, R, device=h.device)
    y = torch.empty_like(x)
    q = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((M, N // G), dtype=torch.float32, device=x.device)
    qv = q.view(M, N // G, G)

    by, fl, src = ledger_cost("fusion.rmsnorm_rope_fp8_cost", m=M, n=N, dtype="bfloat16", rope_dim=R, group=G)
    ub, uf, usrc = ledger_cost("fusion.rmsnorm_rope_fp8_cost", m=M, n=N, dtype="bfloat16", rope_dim=R, group=G,
                               fused=False)
    usrc += " (fused=False)"
    ks = {bm: rmsnorm_rope_fp8(M, N, R, G, "bfloat16", bm, 256, 1e-6) for bm in (1, 2)}
    best, _ = h.search("fused rmsnorm+rope+fp8 blk_m", {f"blk_m={b}": (lambda b=b: ks[b](x, w, cos, sin, qv, s)) for b in ks})
    bm = int(best.split("=")[1])
    # the same three steps as separate TileLang kernels
    k1 = norm.rmsnorm_rows(M, N, "bfloat16", 4, 256, 1e-6)
    k2 = rope.rope_blocked(M, 1, N, R, "neox", "bfloat16", 4, rope._threads_for(4, 1, N, R))
    k3 = quant.quant_fp8(M, N, G, "bfloat16", 4, 256)
    y1, y2 = torch.empty_like(x), torch.empty_like(x)
    c3, s3 = cos, sin

    def three_steps():
        k1(x, w, y1)
        k2(y1.view(M, 1, N), c3, s3, y2.view(M, 1, N))
        k3(y2.view(M, N // G, G), qv, s)

    def eager():
        return ref_rmsnorm_rope_fp8(x, w, cos, sin, R, G)

    comp = h.warm_compiled(h.torch_compile(lambda a: ref_rmsnorm_rope_fp8(a, w, cos, sin, R, G), "fused fp8"), x,
                           name="fused fp8")
    ratio = (ub / by) if (ub and by) else None
    rec = h.bench(f"fused rmsnorm+rope+fp8 bf16 {M}x{N} R={R}", lambda: ks[bm](x, w, cos, sin, qv, s),
                  bytes=by, flops=fl, ledger_source=src,
                  baselines={"3 TileLang kernels": three_steps, "eager": eager, "torch.compile": comp},
                  targets={"frac_copy_bw": 0.85}, config={"blk_m": bm, "threads": 256, "group": G, "rope_dim": R},
                  ledger_byte_ratio=ratio, unfused_bytes=ub, unfused_ledger_source=usrc)
    sp = rec["speedup"].get("3 TileLang kernels")
    if ratio and sp:
        rec.setdefault("targets", {})["speedup_vs_byte_ratio"] = {
            "target": 0.8, "value": sp / ratio, "met": bool(sp / ratio >= 0.8)}
        h.note("fused fp8 vs 3 kernels", f"measured {sp:.2f}x, ledger byte ratio {ratio:.2f}x, "
                                         f"share {sp / ratio:.2f} (target >= 0.8)")
    kr = rmsnorm_rope(M, N, R, "bfloat16", 2, 256, 1e-6)
    by2, fl2, src2 = ledger_cost("fusion.rmsnorm_rope_cost", m=M, n=N, dtype="bfloat16", rope_dim=R)
    comp2 = h.warm_compiled(h.torch_compile(lambda a: ref_rmsnorm_rope(a, w, cos, sin, R), "fused rope"), x,
                            name="fused rope")
    h.bench(f"fused rmsnorm+rope bf16 {M}x{N} R={R}", lambda: kr(x, w, cos, sin, y), bytes=by2, flops=fl2,
            ledger_source=src2, baselines={"eager": lambda: ref_rmsnorm_rope(x, w, cos, sin, R),
                                           "torch.compile": comp2},
            targets={"frac_copy_bw": 0.85}, config={"blk_m": 2, "threads": 256, "rope_dim": R})
