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

from kernels.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, TARGET, check_cuda, check_matrix, check_tiles, check_wgmma_n, require

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


#: Two-level (promoted) kernel: tiles whose accumulator + partial fit the consumer registers
#: (128x192: 2 x 96 fp32 per thread; 128x128: 2 x 64), both warp partitions of 128x192,
#: promotion every 2 K blocks (half the FADDs, a 256-long wgmma chain), and the 128x256
#: tile that needs 2 x 128 registers and spills (measured to show what the spill costs).
#: 5 compiles per shape, in parallel with the rest of the suite.
FP8_PROMOTED_CANDIDATES: list[dict[str, Any]] = [
    dict(block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, promote=1, policy="row"),
    dict(block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, promote=2, policy="row"),
    dict(block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, promote=1, policy="square"),
    dict(block_M=128, block_N=128, block_K=128, stages=4, threads=256, panel=8, promote=1, policy="square"),
    dict(block_M=128, block_N=256, block_K=128, stages=4, threads=256, panel=8, promote=1, policy="row"),
    # added for 4096^3, where 128x192 tiles leave 704 tiles = 5.33 waves on 132 SMs (the
    # 22nd tile column is a third full): 128-wide tiles divide 4096 (7.76 waves), fewer
    # promotions per K (256x128 with four consumer warpgroups was tried on the CPU: it
    # spills 448 bytes at the 96 registers each of 640 threads can have, so it is not searched)
    dict(block_M=128, block_N=128, block_K=128, stages=4, threads=256, panel=8, promote=1, policy="row"),
    dict(block_M=128, block_N=128, block_K=128, stages=5, threads=256, panel=8, promote=2, policy="row"),
    dict(block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, promote=4, policy="row"),
]

#: The hand-written pipeline of :mod:`kernels.gemm.ws` for fp8 (same two-level contract, promote
#: every K block), all persistent on one block per SM: 128x192 with one partial per consumer
#: (4 stages, or 5 with C stored in 96-column halves), 128x128 with two partials used in turn
#: (``inflight=1``: a warpgroup's adds overlap its own next wgmma; 3 x 64 fp32 per thread), and
#: the B multicast to clusters of two.  ``workers`` is the SM count, filled in by the suite.
FP8_WS_CANDIDATES: list[dict[str, Any]] = [
    dict(ws=True, block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, inflight=0, persistent=True),
    dict(ws=True, block_M=128, block_N=192, block_K=128, stages=5, threads=256, panel=8, inflight=0, epi_cols=96,
         persistent=True),
    dict(ws=True, block_M=128, block_N=192, block_K=128, stages=4, threads=256, panel=8, inflight=0, persistent=True,
         cluster=2),
    dict(ws=True, block_M=128, block_N=128, block_K=128, stages=6, threads=256, panel=8, inflight=0, persistent=True),
    dict(ws=True, block_M=128, block_N=128, block_K=128, stages=6, threads=256, panel=8, inflight=1, persistent=True),
    dict(ws=True, block_M=128, block_N=128, block_K=128, stages=6, threads=256, panel=8, inflight=1, persistent=True,
         cluster=2),
]


#: Ragged check of the hand-written fp8 kernels: 1100 rows = 9 blocks of 128 (a cluster of two is
#: padded), 1016 columns end inside a tile, K = 1024 = 8 blocks of 128 (an even count, which
#: two partials used in turn need).
FP8_RAGGED = (1100, 1016, 1024)
FP8_WS_RAGGED: list[dict[str, Any]] = []  # filled below: one candidate of each partial scheme


def build_fp8_promoted(M: int, N: int, K: int, cfg: dict[str, Any], workers: int = 132) -> Any:
    """Compile one two-level fp8 candidate: :func:`kernels.gemm.ws.fp8_ws` when ``cfg["ws"]``
    (on ``workers`` blocks when persistent), else :func:`fp8_gemm_promoted`."""
    if cfg.get("ws"):
        from kernels.gemm.ws import WS_BLOCK_M, fp8_ws

        require(cfg["block_M"] == WS_BLOCK_M, f"the hand-written pipeline is {WS_BLOCK_M} rows")
        kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "panel", "cluster", "inflight", "epi_cols") if k in cfg}
        return fp8_ws(M, N, K, workers=workers if cfg.get("persistent") else 0, **kw)
    return fp8_gemm_promoted(M, N, K, **cfg)


FP8_WS_RAGGED[:] = [FP8_WS_CANDIDATES[2], FP8_WS_CANDIDATES[5]]  # cluster-two forms, one and two partials


#: Single-level teaching variant: the search list of the first H200 run, unchanged.
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


def _fp8_label(c: dict[str, Any]) -> str:
    tag = f"_prom{c['promote']}_{c.get('policy', 'square')}" if "promote" in c else ""
    if c.get("ws"):
        tag = ("_ws" + (f"_e{c['epi_cols']}" if c.get("epi_cols") else "") + f"_if{c.get('inflight', 0)}"
               + ("_pers" if c.get("persistent") else "") + (f"_c{c['cluster']}" if c.get("cluster", 1) > 1 else ""))
    return f"{c['block_M']}x{c['block_N']}x{c['block_K']}_s{c['stages']}_t{c['threads']}{tag}"


def tolerance_stats(got: Any, want: Any, atol: float, rtol: float) -> dict[str, Any]:
    """What ``h.check`` would count (max |err|, elements outside ``atol + rtol*|want|``), without recording a check.

    Used for the single-level teaching variant, whose failure of the fp8 tolerance is
    the point of the comparison: it is reported (in its bench record, key ``tolerance``,
    with the same ``ok`` / ``mismatched`` / ``max_abs_err`` keys as a check record), not
    recorded as a check, so the suite's status reflects the kernel of record.
    """
    import torch

    g = got.detach().to(torch.float64)
    w = want.detach().to(torch.float64)
    diff = (g - w).abs()
    over = ~(diff <= atol + rtol * w.abs())  # NaN counts as outside
    return dict(max_abs_err=float(diff.nan_to_num(float("inf")).max()), mismatched=int(over.sum()),
                atol=atol, rtol=rtol, ok=int(over.sum()) == 0)


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
    sms = torch.cuda.get_device_properties(h.device).multi_processor_count if h.is_cuda else 132
    dq_shapes = [(256, 1024, 1024)] if h.quick else [(4096, 4096, 4096), (128, 8192, 8192)]
    thunks: dict[str, Any] = {}
    for (M, N, K) in fp8_shapes:
        for c in FP8_PROMOTED_CANDIDATES + FP8_WS_CANDIDATES:
            thunks[f"fp8p:{_fp8_label(c)}@{M}"] = (lambda c=c, m=M, n=N, k=K: build_fp8_promoted(m, n, k, c, sms))
        for c in FP8_CANDIDATES:
            thunks[f"fp8:{_fp8_label(c)}@{M}"] = (lambda c=c, m=M, n=N, k=K: fp8_gemm(m, n, k, **c))
    for c in FP8_WS_RAGGED:
        thunks[f"fp8ws:{_fp8_label(c)}@ragged"] = (lambda c=c: build_fp8_promoted(*FP8_RAGGED, c, sms))
    for (M, N, K) in dq_shapes:
        thunks[f"dq@{M}x{N}"] = (lambda m=M, n=N, k=K: dequant_gemm(m, n, k, **DEQUANT_DEFAULT))
    built = par_build(thunks)
    h.note("lowp compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})

    # ---- the hand-written fp8 pipeline on a ragged shape (a padded cluster, ragged N, K)
    Mr, Nr, Kr = FP8_RAGGED
    a = h.rand((Mr, Kr), torch.float16).to(torch.float8_e4m3fn)
    b = h.rand((Nr, Kr), torch.float16).to(torch.float8_e4m3fn)
    sa = torch.tensor([0.5], dtype=torch.float32, device=a.device)
    sb = torch.tensor([2.0], dtype=torch.float32, device=a.device)
    ref = fp8_ref(a, b, sa, sb)
    for cfg in FP8_WS_RAGGED:
        rec = built[f"fp8ws:{_fp8_label(cfg)}@ragged"]
        name = f"fp8 {_fp8_label(cfg)} ragged {Mr}x{Nr}x{Kr}"
        if rec["kernel"] is None:
            h.error(name, RuntimeError(rec["error"]))
            continue
        c = h.poisoned((Mr, Nr), torch.bfloat16)
        rec["kernel"](a, b, sa, sb, c)
        h.check(name, c, ref, rel_fro_err=rel_fro_err(c, ref),
                atol=float(2.0 ** -8 * Kr ** 0.5 * float(sa * sb)), rtol=1.6e-2)

    for (M, N, K) in fp8_shapes:
        a = h.rand((M, K), torch.float16).to(torch.float8_e4m3fn)
        b = h.rand((N, K), torch.float16).to(torch.float8_e4m3fn)
        sa = torch.tensor([0.5], dtype=torch.float32, device=a.device)
        sb = torch.tensor([2.0], dtype=torch.float32, device=a.device)
        ref = fp8_ref(a, b, sa, sb)
        # Unit-variance e4m3 inputs: |C| ~ sqrt(K). Absolute part: ~2^-8 * sqrt(K) covers a
        # per-128-K promoted accumulation (partials of size ~sqrt(128), ~14-bit wgmma adds);
        # relative part: bf16 output rounding (2^-9) with margin. Unchanged since the first run.
        fp8_tol = dict(atol=float(2.0 ** -8 * K ** 0.5 * float(sa * sb)), rtol=1.6e-2)
        flops, nbytes, src = gemm_cost(M, N, K, "float8_e4m3fn", "bf16")
        # the floor any bf16-output kernel has: the fp32 reference rounded to bf16
        floor = rel_fro_err(ref.to(torch.bfloat16), ref)
        baseline = None
        ts_err = None
        try:
            torch_scaled_mm(a, b, sa, sb)
            baseline = lambda: torch_scaled_mm(a, b, sa, sb)  # noqa: E731
            ts = torch_scaled_mm(a, b, sa, sb)
            ts_err = rel_fro_err(ts, ref)
            h.check(f"torch._scaled_mm {M}^3", ts, ref, rel_fro_err=ts_err, **fp8_tol)
            del ts
        except Exception as exc:
            h.error(f"torch._scaled_mm {M}^3", exc)

        def search(kind: str, cfgs: list[dict[str, int]], key: str) -> tuple[str | None, Any]:
            cands: dict[str, Any] = {}
            for cfg in cfgs:
                rec = built[f"{key}:{_fp8_label(cfg)}@{M}"]
                if rec["kernel"] is None:
                    h.error(f"fp8 {kind} {_fp8_label(cfg)} {M}^3", RuntimeError(rec["error"]))
                    continue
                c = h.poisoned((M, N), torch.bfloat16)
                rec["kernel"](a, b, sa, sb, c)
                e = rel_fro_err(c, ref)
                if e < 2e-2:  # a wrong or unwritten tile gives O(1) (or NaN): not timed
                    cands[_fp8_label(cfg)] = (lambda k=rec["kernel"], c=c: k(a, b, sa, sb, c))
                else:
                    h.note(f"fp8 {kind} {_fp8_label(cfg)} {M}^3 rejected", f"rel_fro_err={e:.3g}")
            if not cands:
                h.error(f"fp8 {kind} {M}^3", RuntimeError(f"no valid fp8 {kind} candidate"))
                return None, None
            best, _ = h.search(f"fp8 {kind} {M}^3", cands, rounds=SEARCH_ROUNDS)
            return best, built[f"{key}:{best}@{M}"]["kernel"]

        # two-level accumulation: the kernel of record, checked with the fp8 tolerance
        best, kern = search("promoted", FP8_PROMOTED_CANDIDATES + FP8_WS_CANDIDATES, "fp8p")
        prom = None
        if kern is not None:
            c = h.poisoned((M, N), torch.bfloat16)
            kern(a, b, sa, sb, c)
            err = rel_fro_err(c, ref)
            h.check(f"fp8 e4m3 {M}^3", c, ref, rel_fro_err=err, config=best, accumulation="two-level", **fp8_tol)
            prom = record_bench(h, f"fp8 e4m3 {M}^3", lambda k=kern, c=c: k(a, b, sa, sb, c), flops=flops, bytes=nbytes,
                                ledger_source=src, baselines={"torch._scaled_mm": baseline},
                                targets={"speedup:torch._scaled_mm": 0.9}, rounds=BENCH_ROUNDS, config=best,
                                accumulation="two-level",
                                rel_fro_err=err, shape=[M, N, K])
            del c

        # single-level teaching variant: timed, its error against the same tolerance reported (it fails it)
        best1, kern1 = search("single-level", FP8_CANDIDATES, "fp8")
        if kern1 is not None:
            c = h.poisoned((M, N), torch.bfloat16)
            kern1(a, b, sa, sb, c)
            err1 = rel_fro_err(c, ref)
            stats = dict(tolerance_stats(c, ref, **fp8_tol), rel_fro_err=err1, config=best1)
            single = record_bench(h, f"fp8 e4m3 single-level {M}^3", lambda k=kern1, c=c: k(a, b, sa, sb, c), flops=flops,
                                  bytes=nbytes, ledger_source=src, baselines={"torch._scaled_mm": baseline},
                                  config=best1, accumulation="single-level (teaching variant)", rel_fro_err=err1,
                                  tolerance=stats, shape=[M, N, K])
            h.note(f"fp8 accumulation {M}^3",
                   f"rel. Frobenius error vs fp32: single-level {err1:.3g} ({stats['mismatched']} outside the fp8 "
                   f"tolerance), two-level {prom['rel_fro_err'] if prom else float('nan'):.3g}, "
                   f"torch._scaled_mm {ts_err if ts_err is not None else float('nan'):.3g}, bf16 rounding floor {floor:.3g}",
                   rel_fro_err={"single-level": err1, "two-level": prom["rel_fro_err"] if prom else None,
                                "torch._scaled_mm": ts_err, "bf16 floor": floor},
                   single_level_tolerance=stats,
                   ms={"single-level": single["ms"], "two-level": prom["ms"] if prom else None,
                       "torch._scaled_mm": single["baselines"].get("torch._scaled_mm")})
            del c
        del a, b, ref
        torch.cuda.empty_cache()

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
