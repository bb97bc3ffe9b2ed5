"""Low-precision GEMMs on Hopper: fp8 e4m3 with per-tensor scales, and an int4-weight dequantize GEMM.

* :func:`fp8_gemm` -- ``C = (A @ B^T) * scale_a * scale_b`` with A ``[M, K]`` and B ``[N, K]``
  in ``float8_e4m3fn``, fp32 accumulation, bf16 output: the contract of
  ``torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)``.
  Same body as the fp16 rung 4; only the dtype and the wider block_K (fp8 wgmma
  steps 32 in K) change.
* :func:`dequant_gemm` -- W4A16: activations fp16 ``[M, K]``; weights int4, two per
  byte (low nibble = even k), stored offset-binary (``q = w + 8``) as ``[N, K/2]``
  uint8, with one fp16 scale per ``group`` consecutive k of each row
  (``scales[N, K/group]``). Every K step loads the packed tile, expands it to fp16
  in shared memory (``(q - 8) * scale``) and feeds ``T.gemm``: global traffic for B
  drops 4x, the expansion costs ALU work inside the main loop.

The int4 x int4 tensor-core GEMM and the MX block-scaled GEMM are audited in
:mod:`kernels.gemm.support` (what tilelang 0.1.15 lowers for sm_90a).
"""

from typing import Any

import tilelang
import tilelang.language as T

from kernels.gemm.common import TARGET, check_cuda, check_matrix, check_tiles, check_wgmma_n, require

# ------------------------------------------------------------------- fp8


def fp8_ref(a: Any, b: Any, scale_a: Any, scale_b: Any) -> Any:
    """fp32 reference of the scaled fp8 product."""
    import torch

    return torch.matmul(a.to(torch.float32), b.to(torch.float32).t()) * (scale_a.float() * scale_b.float())


@tilelang.jit(target=TARGET)
def fp8_gemm(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 256,
    block_K: int = 128,
    stages: int = 3,
    threads: int = 256,
    panel: int = 8,
):
    """e4m3 x e4m3 -> fp32 accumulate -> scale -> bf16."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float8_e4m3fn),
        B: T.Tensor((N, K), T.float8_e4m3fn),
        SA: T.Tensor((1,), T.float32),
        SB: T.Tensor((1,), T.float32),
        C: T.Tensor((M, N), T.bfloat16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float8_e4m3fn)
            B_s = T.alloc_shared((block_N, block_K), T.float8_e4m3fn)
            C_s = T.alloc_shared((block_M, block_N), T.bfloat16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.use_swizzle(panel_size=panel)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = acc[i, j] * SA[0] * SB[0]
            T.copy(acc, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return main


FP8_CANDIDATES: list[dict[str, int]] = [
    dict(block_M=128, block_N=256, block_K=128, stages=3, threads=256, panel=8),
    dict(block_M=128, block_N=256, block_K=128, stages=4, threads=256, panel=8),
    dict(block_M=256, block_N=128, block_K=128, stages=3, threads=256, panel=8),
    dict(block_M=128, block_N=128, block_K=128, stages=4, threads=128, panel=10),
]


def check_fp8_inputs(a: Any, b: Any, scale_a: Any, scale_b: Any, block_N: int = 256) -> tuple[int, int, int]:
    """Validate fp8 operands and scales; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    require(hasattr(a, "shape") and len(a.shape) == 2 and hasattr(b, "shape") and len(b.shape) == 2,
            "a must be [M, K] and b must be [N, K]")
    M, K = a.shape
    N, Kb = b.shape
    require(K == Kb, f"K must agree ({K} != {Kb})")
    check_matrix(a, "a", (M, K), torch.float8_e4m3fn)
    check_matrix(b, "b", (N, K), torch.float8_e4m3fn)
    check_matrix(scale_a, "scale_a", (1,), torch.float32)
    check_matrix(scale_b, "scale_b", (1,), torch.float32)
    require(K % 16 == 0 and N % 8 == 0, f"K={K} must be a multiple of 16 and N={N} of 8 (16-byte TMA rows)")
    check_wgmma_n(block_N)
    check_cuda(a=a, b=b, scale_a=scale_a, scale_b=scale_b)
    return M, N, K


def torch_scaled_mm(a: Any, b: Any, scale_a: Any, scale_b: Any) -> Any:
    """cuBLASLt fp8 baseline; ``b.t()`` of a row-major [N, K] tensor is the column-major operand it wants."""
    import torch

    return torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)


# --------------------------------------------------------------- dequant


def pack_int4(w_int: Any) -> Any:
    """Pack signed int4 values in [-8, 7] ([N, K] int8/int16/int32) as offset-binary, two per byte -> [N, K/2] uint8."""
    import torch

    require(w_int.shape[-1] % 2 == 0, "K must be even to pack two int4 per byte")
    require(int(w_int.min()) >= -8 and int(w_int.max()) <= 7, "int4 values must lie in [-8, 7]")
    q = (w_int.to(torch.int16) + 8).to(torch.uint8)
    return (q[..., 0::2] | (q[..., 1::2] << 4)).contiguous()


def unpack_int4(packed: Any) -> Any:
    """Inverse of :func:`pack_int4`: [N, K/2] uint8 -> [N, K] int8 in [-8, 7]."""
    import torch

    lo = (packed & 0xF).to(torch.int16) - 8
    hi = (packed >> 4).to(torch.int16) - 8
    return torch.stack([lo, hi], dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2).to(torch.int8)


def dequant_weight(packed: Any, scales: Any, group: int) -> Any:
    """fp32 weights ``(q - 8) * scale`` from packed int4 + per-group scales."""
    import torch

    w = unpack_int4(packed).to(torch.float32)
    return w * scales.to(torch.float32).repeat_interleave(group, dim=1)


def dequant_ref(a: Any, packed: Any, scales: Any, group: int) -> Any:
    """fp32 reference ``a @ dequant(W)^T``."""
    import torch

    return torch.matmul(a.to(torch.float32), dequant_weight(packed, scales, group).t())


@tilelang.jit(target=TARGET)
def dequant_gemm(
    M: int,
    N: int,
    K: int,
    group: int = 128,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 256,
):
    """W4A16 GEMM: packed int4 weights and per-group fp16 scales expanded in shared memory."""
    KP = K // 2
    G = K // group

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        Bq: T.Tensor((N, KP), T.uint8),
        S: T.Tensor((N, G), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            Bq_s = T.alloc_shared((block_N, block_K // 2), T.uint8)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.use_swizzle(panel_size=10)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(Bq[bx * block_N, ko * (block_K // 2)], Bq_s)
                for j, k in T.Parallel(block_N, block_K):
                    B_s[j, k] = T.cast(
                        T.cast((Bq_s[j, k // 2] >> T.cast((k % 2) * 4, T.uint8)) & T.uint8(15), T.int32) - 8, T.float16
                    ) * S[bx * block_N + j, (ko * block_K + k) // group]
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return main


DEQUANT_DEFAULT = dict(group=128, block_M=128, block_N=128, block_K=64, stages=3, threads=256)


def check_dequant_inputs(a: Any, packed: Any, scales: Any, group: int = 128, block_M: int = 128, block_N: int = 128, block_K: int = 64) -> tuple[int, int, int]:
    """Validate W4A16 operands; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    require(hasattr(a, "shape") and len(a.shape) == 2, "a must be [M, K]")
    require(hasattr(packed, "shape") and len(packed.shape) == 2, "packed weights must be [N, K/2] uint8")
    M, K = a.shape
    N, KP = packed.shape
    require(KP * 2 == K, f"packed weights hold two int4 per byte: [N, K/2] = [N, {K // 2}], got [N, {KP}]")
    require(K % group == 0, f"K={K} must be a multiple of the scale group {group}")
    require(group % block_K == 0 or block_K % group == 0, f"group={group} and block_K={block_K} must nest")
    check_matrix(a, "a", (M, K), torch.float16)
    check_matrix(packed, "packed", (N, KP), torch.uint8)
    check_matrix(scales, "scales", (N, K // group), torch.float16)
    check_tiles(M=(M, block_M), N=(N, block_N), K=(K, block_K))
    check_wgmma_n(block_N)
    check_cuda(a=a, packed=packed, scales=scales)
    return M, N, K


def run_dequant(a: Any, packed: Any, scales: Any, **cfg: Any) -> Any:
    cfg = {**DEQUANT_DEFAULT, **cfg}
    M, N, K = check_dequant_inputs(a, packed, scales, cfg["group"], cfg["block_M"], cfg["block_N"], cfg["block_K"])
    return dequant_gemm(M, N, K, **cfg)(a, packed, scales)


# ------------------------------------------------------------------ GPU suite


def _fp8_label(c: dict[str, int]) -> str:
    return f"{c['block_M']}x{c['block_N']}x{c['block_K']}_s{c['stages']}_t{c['threads']}"


def _dequant_cost(M: int, N: int, K: int, group: int) -> tuple[float, float, str]:
    """FLOPs 2MNK; bytes: fp16 A, int4 W, fp16 scales, fp16 C -- element sizes from ``ledger.cost``."""
    from ledger.cost import dtype_bytes
    from ledger.gemm import gemm_flops

    nbytes = (dtype_bytes("fp16") * M * K + dtype_bytes("int4") * N * K
              + dtype_bytes("fp16") * N * (K // group) + dtype_bytes("fp16") * M * N)
    return float(gemm_flops(M, N, K)), float(nbytes), "ledger.gemm.gemm_flops + ledger.cost.dtype_bytes"


def gpu_suite(h: Any) -> None:
    """fp8 e4m3 GEMM vs ``torch._scaled_mm`` and the W4A16 dequantize GEMM vs fp16 cuBLAS."""
    import torch

    from kernels.gemm.common import gemm_cost, gemm_tolerance, par_build, rel_fro_err, record_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    fp8_shapes = [(1024, 1024, 1024)] if h.quick else [(4096, 4096, 4096), (8192, 8192, 8192)]
    dq_shapes = [(256, 1024, 1024)] if h.quick else [(4096, 4096, 4096), (128, 8192, 8192)]
    thunks: dict[str, Any] = {}
    for (M, N, K) in fp8_shapes:
        for c in FP8_CANDIDATES:
            thunks[f"fp8:{_fp8_label(c)}@{M}"] = (lambda c=c, m=M, n=N, k=K: fp8_gemm(m, n, k, **c))
    for (M, N, K) in dq_shapes:
        thunks[f"dq@{M}x{N}"] = (lambda m=M, n=N, k=K: dequant_gemm(m, n, k, **DEQUANT_DEFAULT))
    built = par_build(thunks)
    h.note("lowp compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})

    # ---- fp8
    for (M, N, K) in fp8_shapes:
        a = h.rand((M, K), torch.float16).to(torch.float8_e4m3fn)
        b = h.rand((N, K), torch.float16).to(torch.float8_e4m3fn)
        sa = torch.tensor([0.5], dtype=torch.float32, device=a.device)
        sb = torch.tensor([2.0], dtype=torch.float32, device=a.device)
        ref = fp8_ref(a, b, sa, sb)
        # Hopper's fp8 wgmma accumulates with a reduced-width adder: allow ~2^-8 * sqrt(K) absolute
        fp8_tol = dict(atol=float(2.0 ** -8 * K ** 0.5 * float(sa * sb)), rtol=1.6e-2)
        flops, nbytes, src = gemm_cost(M, N, K, "float8_e4m3fn", "bf16")
        baseline = None
        try:
            torch_scaled_mm(a, b, sa, sb)
            baseline = lambda: torch_scaled_mm(a, b, sa, sb)  # noqa: E731
            ts = torch_scaled_mm(a, b, sa, sb)
            h.check(f"torch._scaled_mm {M}^3", ts, ref, rel_fro_err=rel_fro_err(ts, ref), **fp8_tol)
        except Exception as exc:
            h.error(f"torch._scaled_mm {M}^3", exc)
        cands: dict[str, Any] = {}
        for cfg in FP8_CANDIDATES:
            rec = built[f"fp8:{_fp8_label(cfg)}@{M}"]
            if rec["kernel"] is None:
                h.error(f"fp8 {_fp8_label(cfg)} {M}^3", RuntimeError(rec["error"]))
                continue
            c = h.poisoned((M, N), torch.bfloat16)
            rec["kernel"](a, b, sa, sb, c)
            e = rel_fro_err(c, ref)
            if e < 2e-2:
                cands[_fp8_label(cfg)] = (lambda k=rec["kernel"], c=c: k(a, b, sa, sb, c))
            else:
                h.note(f"fp8 {_fp8_label(cfg)} {M}^3 rejected", f"rel_fro_err={e:.3g}")
        if not cands:
            h.error(f"fp8 {M}^3", RuntimeError("no valid fp8 candidate"))
            continue
        best, _ = h.search(f"fp8 {M}^3", cands)
        kern = built[f"fp8:{best}@{M}"]["kernel"]
        c = h.poisoned((M, N), torch.bfloat16)
        kern(a, b, sa, sb, c)
        err = rel_fro_err(c, ref)
        h.check(f"fp8 e4m3 {M}^3", c, ref, rel_fro_err=err, config=best, **fp8_tol)
        record_bench(h, f"fp8 e4m3 {M}^3", lambda: kern(a, b, sa, sb, c), flops=flops, bytes=nbytes, ledger_source=src,
                     baselines={"torch._scaled_mm": baseline}, targets={"speedup:torch._scaled_mm": 0.9},
                     config=best, rel_fro_err=err, shape=[M, N, K])
        del a, b, ref, c

    # ---- W4A16 dequantize GEMM
    group = DEQUANT_DEFAULT["group"]
    for (M, N, K) in dq_shapes:
        rec = built[f"dq@{M}x{N}"]
        name = f"dequant W4A16 g{group} {M}x{N}x{K}"
        if rec["kernel"] is None:
            h.error(name, RuntimeError(rec["error"]))
            continue
        kern = rec["kernel"]
        a = h.rand((M, K), torch.float16)
        w_int = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=a.device)
        packed = pack_int4(w_int)
        scales = (h.rand((N, K // group), torch.float32, scale=0.02).abs() + 0.01).to(torch.float16)
        w16 = dequant_weight(packed, scales, group).to(torch.float16)
        # the kernel expands (q - 8) * s in fp16, exactly what w16 holds: fp32 product of those
        ref = torch.matmul(a.to(torch.float32), w16.to(torch.float32).t())
        c = h.poisoned((M, N), torch.float16)
        kern(a, packed, scales, c)
        err = rel_fro_err(c, ref)
        h.check(name, c, ref, rel_fro_err=err, **gemm_tolerance(K))
        flops, nbytes, src = _dequant_cost(M, N, K, group)
        record_bench(h, name, lambda: kern(a, packed, scales, c), flops=flops, bytes=nbytes, ledger_source=src,
                     baselines={"cuBLAS fp16 weights": lambda: torch.matmul(a, w16.t())},
                     rel_fro_err=err, shape=[M, N, K], group=group)
        h.note(name + " weight error", "relative Frobenius error of fp16-expanded vs fp32 dequantized weights",
               rel_fro_err_weights=rel_fro_err(w16, dequant_weight(packed, scales, group)))
        del a, packed, scales, ref, w16, c
