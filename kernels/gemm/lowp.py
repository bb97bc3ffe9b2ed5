"""Low-precision GEMMs on Hopper: fp8 e4m3 with per-tensor scales, and an int4-weight dequantize GEMM.

* :func:`fp8_gemm_promoted` -- ``C = (A @ B^T) * scale_a * scale_b`` with A ``[M, K]`` and
  B ``[N, K]`` in ``float8_e4m3fn``, bf16 output: the contract of
  ``torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)``.
  Two-level accumulation: Hopper's fp8 wgmma adds its products into the accumulator
  with a reduced-width adder (about 14 significant bits instead of fp32's 24), so
  the error of one long wgmma chain grows with K. Each K block therefore runs its
  wgmma chain into a fresh partial tile (``clear_accum``: the first wgmma of the
  block gets scale-d = 0, no extra instruction) and the partial is then added into
  an fp32 main accumulator with ordinary FADDs -- the promotion cuBLAS and DeepGEMM
  do every 128 K. ``promote=n`` promotes every n K blocks.
* :func:`fp8_gemm` -- the single-level teaching variant: the fp16 rung 4 body with
  fp8 operands, one accumulator carried by wgmma through the whole K loop. Faster
  by the promotion FADDs and by the registers the partial tile costs (it can use
  128x256 tiles), and measurably less accurate: at 4096^3 and 8192^3 it misses the
  fp8 tolerance that ``torch._scaled_mm`` and the promoted kernel meet. The suite
  records both, error and speed.
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

from kernels.common import SMS
from kernels.gemm.common import (TARGET, check_cuda, check_inputs as check_operands, check_matrix, check_tiles,
                                 check_wgmma_n, require)

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
    """Single-level (teaching variant): e4m3 x e4m3 -> one wgmma-carried accumulator -> scale -> bf16."""

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


@tilelang.jit(target=TARGET)
def fp8_gemm_promoted(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 192,
    block_K: int = 128,
    stages: int = 4,
    threads: int = 256,
    panel: int = 8,
    promote: int = 1,
    policy: str = "square",
):
    """Two-level accumulation: wgmma into a per-block partial, promoted into fp32 every ``promote`` K blocks.

    The partial tile doubles the accumulator registers: with 2 consumer warpgroups a
    128x192 tile holds 96 + 96 fp32 per thread (fits the 240 registers tilelang gives
    a consumer thread); 128x256 needs 128 + 128 and spills a little. ``policy`` is the
    warp partition of ``T.gemm`` (``"square"``: the warpgroups split N, each issues
    m64n96 on both 64-row halves; ``"row"``: each warpgroup owns 64 whole rows, one
    m64n192 wgmma per k32 step, fewer shared-memory operand reads).
    """
    warp_policy = {"square": T.GemmWarpPolicy.Square, "row": T.GemmWarpPolicy.FullRow}[policy]
    nk = -(-K // block_K)
    require(promote >= 1 and nk % promote == 0,
            f"promote={promote} must be >= 1 and divide the {nk} K blocks (else the last partial is never promoted)")

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
            part = T.alloc_fragment((block_M, block_N), T.float32)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.use_swizzle(panel_size=panel)
            T.clear(acc)
            for ko in T.Pipelined(nk, num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                if promote == 1:
                    # fresh partial every K block, then promote it into the fp32 accumulator
                    T.gemm(A_s, B_s, part, transpose_B=True, clear_accum=True, policy=warp_policy)
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] += part[i, j]
                else:
                    T.gemm(A_s, B_s, part, transpose_B=True, clear_accum=(ko % promote == 0), policy=warp_policy)
                    if ko % promote == promote - 1:
                        for i, j in T.Parallel(block_M, block_N):
                            acc[i, j] += part[i, j]
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = acc[i, j] * SA[0] * SB[0]
            T.copy(acc, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return main


def build_fp8_promoted(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = SMS) -> Any:
    """Compile one two-level fp8 candidate: :func:`kernels.gemm.ws.fp8_ws` when ``cfg["ws"]``
    (on ``workers`` blocks when persistent), else :func:`fp8_gemm_promoted`."""
    if cfg.get("ws"):
        from kernels.gemm.ws import WS_BLOCK_M, fp8_ws

        require(cfg["block_M"] == WS_BLOCK_M, f"the hand-written pipeline is {WS_BLOCK_M} rows")
        kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "panel", "cluster", "inflight", "epi_cols") if k in cfg}
        return fp8_ws(M, N, K, workers=workers if cfg.get("persistent") else 0, **kw)
    return fp8_gemm_promoted(M, N, K, **cfg)



def fp8_label(c: dict[str, Any]) -> str:
    """Short printable name of an fp8 configuration (the suite's candidate labels)."""
    tag = f"_prom{c['promote']}_{c.get('policy', 'square')}" if "promote" in c else ""
    if c.get("ws"):
        tag = ("_ws" + (f"_e{c['epi_cols']}" if c.get("epi_cols") else "") + f"_if{c.get('inflight', 0)}"
               + ("_pers" if c.get("persistent") else "") + (f"_c{c['cluster']}" if c.get("cluster", 1) > 1 else ""))
    return f"{c['block_M']}x{c['block_N']}x{c['block_K']}_s{c['stages']}_t{c['threads']}{tag}"



def check_fp8_inputs(a: Any, b: Any, scale_a: Any, scale_b: Any, block_N: int = 256) -> tuple[int, int, int]:
    """Validate fp8 operands and scales; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    M, N, K = check_operands(a, b, torch.float8_e4m3fn, cuda=False)
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


