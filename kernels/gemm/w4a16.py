"""W4A16 GEMM with the weights as wgmma's register operand ("swap AB").

``C[M, N] = A[M, K] @ W[N, K]^T`` with A fp16 and W stored as in :mod:`kernels.gemm.lowp`:
int4 two per byte (low nibble = even k), offset-binary ``q = w + 8``, ``[N, K/2]`` uint8,
one fp16 scale per ``group`` consecutive k of each weight row (``scales[N, K/group]``).

:func:`kernels.gemm.lowp.dequant_gemm` expands every packed tile into fp16 *shared memory*
and then runs an ordinary ``T.gemm``: each weight byte crosses shared memory three times
(TMA in, expanded out, wgmma in).  Hopper's ``wgmma`` can take its A operand from
registers (``wgmma ... A in registers``, lowered by tilelang as ``wgmma_rs``), and only its
A operand, whose rows are the instruction's M = 64.  So this kernel computes the
transposed product ``C^T[N, M] = W[N, K] @ A[M, K]^T``: the weights are A, expanded from
the packed tile straight into the register fragment wgmma reads, and the activations are
B, read from shared memory by descriptor.  The instruction's N is then the number of
activation rows a block handles (``block_M``): 16 for a decode step with M = 1..16 (the
rows past M are zeros loaded by the TMA unit and clipped on the store), up to 256 for a
square product.

Expansion of one packed byte (two weights of one row, the pair a register holds): OR each
nibble into the mantissa of the fp16 constant 0x6400 (1024.0), which gives ``1024 + q``
exactly; subtract 1032 (exact) and multiply by the row's scale: one rounding, the same
fp16 value as ``(q - 8) * s`` rounded once, which is what the reference expands.

Block layout (384 threads, written out with tilelang's explicit primitives like
:mod:`kernels.gemm.ws`): warpgroup 0 is the producer (TMA of the activation tile, of the
packed weight tile and, once, of the block's scales), warpgroups 1 and 2 consume.
``split`` says how the two consumers share the work:

* ``"k"``: the block owns 64 weight rows; consumer ``c`` takes the K blocks ``ko = c, c+2,
  ...`` and the two accumulators are added through shared memory at the end.  One block
  per 64 rows keeps ``N/64`` blocks (128 for N = 8192, on 132 SMs), and while one consumer
  expands its tile the other one's wgmma runs.
* ``"n"``: the block owns 128 weight rows, each consumer 64, both read every K block
  (the usual two-consumer tile, for large M).

``cluster`` > 1: that many neighbouring blocks along N form a cluster and share the
activation tile through a TMA multicast (each block still loads its own weights); a stage
is released by the consumers of every block in the cluster.  The activations are read by
every weight tile: without the multicast a 128-row decode batch moves ``N/64`` times 2 MB
through L2, more than the weights themselves.
"""


from typing import Any

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout

from kernels.gemm.common import TARGET, check_cuda, check_matrix, require

#: Pass configuration: the kernel places every barrier itself (as :mod:`kernels.gemm.ws`).
W4_PASS_CONFIGS = {
    "tl.disable_warp_specialized": True,
    tilelang.PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True,
}

#: Weight rows per consumer warpgroup: wgmma's M.
WG_ROWS = 64
#: One producer and two consumer warpgroups.
THREADS = 384
PRODUCER_REGS = 40
CONSUMER_REGS = 232
#: Shared memory one block may use on an H100/H200 SM (bytes).
SMEM_LIMIT = 232448
#: Named barriers: 1 = both consumers (split-K reduction), 2/3 = one consumer's epilogue.
_BAR_BOTH, _BAR_EPI = 1, (2, 3)


def block_rows(split: str) -> int:
    """Weight rows (columns of C) one block owns."""
    require(split in ("k", "n"), f"split must be 'k' or 'n', got {split!r}")
    return WG_ROWS if split == "k" else 2 * WG_ROWS


def smem_bytes(K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str) -> int:
    """Shared memory of one block, from the ledger (:func:`ledger.w4a16.smem_bytes`): the ring
    (activation tile fp16 + packed weight tile), the block's scales for the whole K, the C
    staging tile(s) and, for ``split="k"``, the fp32 tile the second consumer hands to the first."""
    from ledger.w4a16 import smem_bytes as ledger_smem

    return ledger_smem(K, group=group, block_m=block_M, block_k=block_K, stages=stages, rows=block_rows(split),
                       split_k=split == "k")


def grid(M: int, N: int, *, block_M: int, split: str) -> tuple[int, int]:
    """(blocks along N, blocks along M)."""
    return N // block_rows(split), -(-M // block_M)


def check_config(M: int, N: int, K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str,
                 cluster: int) -> None:
    """Every constraint of one configuration, each failure naming it (ValueError)."""
    rows = block_rows(split)
    for name, v in (("M", M), ("N", N), ("K", K), ("group", group), ("block_K", block_K), ("stages", stages)):
        require(isinstance(v, int) and v > 0, f"{name}={v} must be a positive integer")
    require(block_M % 16 == 0 and 16 <= block_M <= 256,
            f"block_M={block_M} is wgmma's N here: a multiple of 16 from 16 to 256 "
            f"(N = 8 mod 16 hits the 0.1.x wgmma bug, see common.check_wgmma_n)")
    require(group % 2 == 0 and K % group == 0, f"K={K} must be a multiple of the (even) scale group {group}")
    require(K % block_K == 0 and block_K % 16 == 0, f"K={K} must be a multiple of block_K={block_K} (itself of 16)")
    require(group % block_K == 0 or block_K % group == 0, f"group={group} and block_K={block_K} must nest")
    require(N % rows == 0, f"N={N} must be a multiple of the {rows} weight rows of a block (split={split!r})")
    require(cluster in (1, 2, 4), f"cluster must be 1, 2 or 4 blocks, got {cluster}")
    require((N // rows) % cluster == 0, f"the {N // rows} blocks along N must fill clusters of {cluster}")
    n_k = K // block_K
    if split == "k":
        require(n_k % 2 == 0, f"split='k' alternates K blocks between two consumers: K/block_K={n_k} must be even")
    require(stages >= 2, f"stages={stages} must be >= 2")
    g = K // group
    require((rows * g * 2) % 16 == 0, f"the block's scales ({rows} x {g} fp16) must be a multiple of 16 bytes")
    sm = smem_bytes(K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split)
    require(sm <= SMEM_LIMIT, f"{sm} bytes of shared memory exceed the {SMEM_LIMIT} a block may use")


def _program(M: int, N: int, K: int, *, group: int, block_M: int, block_K: int, stages: int, split: str,
             cluster: int):
    check_config(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split,
                 cluster=cluster)
    rows = block_rows(split)
    KP, G = K // 2, K // group
    n_k = K // block_K
    grid_n, grid_m = grid(M, N, block_M=block_M, split=split)
    arrivals = 4 * cluster * (1 if split == "k" else 2)  # lane 0 of each warp that read a stage

    @T.macro
    def release(empty, s):
        if cluster > 1:
            for r in T.serial(cluster):
                T.mbarrier_arrive(empty[s], r)
        else:
            T.mbarrier_arrive(empty[s])

    @T.macro
    def expand(W_s, S_s, Wf, s, ko, r0):
        # two weights of one row per byte: 1024 + q by the 0x6400 mantissa trick, minus 1032, times the scale
        for j, k in T.Parallel(WG_ROWS, block_K):
            byte = T.cast(W_s[s, r0 + j, k // 2], T.uint16)
            q = T.if_then_else(k % 2 == 0, byte & T.uint16(15), byte >> T.uint16(4))
            Wf[j, k] = ((T.reinterpret(T.float16, q | T.uint16(0x6400)) - T.float16(1032.0))
                        * S_s[r0 + j, (ko * block_K + k) // group])

    @T.macro
    def step(A_s, W_s, S_s, Wf, acc, full, empty, ko, r0, lane):
        s = ko % stages
        T.barrier_wait(full[s], ko // stages % 2)
        expand(W_s, S_s, Wf, s, ko, r0)
        T.wgmma_gemm(Wf, A_s[s, :, :], acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
        T.wait_wgmma(0)
        if lane == 0:
            release(empty, s)

    @T.macro
    def store(acc, C_s, C, m0, c0, wg):
        for j, m in T.Parallel(WG_ROWS, block_M):
            C_s[m, j] = T.cast(acc[j, m], T.float16)
        T.fence_proxy_async()
        T.sync_threads(barrier_id=_BAR_EPI[wg], arrive_count=128)
        T.copy(C_s, C[m0:m0 + block_M, c0:c0 + WG_ROWS])

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        Bq: T.Tensor((N, KP), T.uint8),
        S: T.Tensor((N, G), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(grid_n, grid_m, threads=THREADS, cluster_dims=(cluster, 1, 1)) as (bx, by):
            A_s = T.alloc_shared((stages, block_M, block_K), T.float16)
            W_s = T.alloc_shared((stages, rows, block_K // 2), T.uint8)
            S_s = T.alloc_shared((rows, G), T.float16)
            C0_s = T.alloc_shared((block_M, WG_ROWS), T.float16)
            W0 = T.alloc_fragment((WG_ROWS, block_K), T.float16)
            W1 = T.alloc_fragment((WG_ROWS, block_K), T.float16)
            acc0 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            acc1 = T.alloc_fragment((WG_ROWS, block_M), T.float32)
            if split == "k":
                R_s = T.alloc_shared((WG_ROWS, block_M), T.float32)
                C1_s = C0_s
            else:
                R_s = None
                C1_s = T.alloc_shared((block_M, WG_ROWS), T.float16)
            T.annotate_layout({A_s: make_swizzled_layout(A_s), W_s: make_swizzled_layout(W_s),
                               C0_s: make_swizzled_layout(C0_s)})
            full = T.alloc_barrier([128] * stages)
            if cluster > 1:
                empty = T.alloc_cluster_barrier([arrivals] * stages)
            else:
                empty = T.alloc_barrier([arrivals] * stages)
            sbar = T.alloc_barrier([128])
            tx = T.get_thread_binding()
            n0 = bx * rows
            m0 = by * block_M
            if tx < 128:
                T.dec_max_nreg(PRODUCER_REGS)
                T.tma_copy(S[n0:n0 + rows, 0:G], S_s, barrier=sbar)
                T.barrier_arrive(sbar)
                for ko in T.serial(n_k):
                    s = ko % stages
                    T.barrier_wait(empty[s], ko // stages % 2 ^ 1)
                    k0 = ko * block_K
                    if cluster > 1:
                        T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s],
                                   cluster_mask=(1 << cluster) - 1)
                    else:
                        T.tma_copy(A[m0:m0 + block_M, k0:k0 + block_K], A_s[s, :, :], barrier=full[s])
                    T.tma_copy(Bq[n0:n0 + rows, k0 // 2:(k0 + block_K) // 2], W_s[s, :, :], barrier=full[s])
                    T.barrier_arrive(full[s])
            elif tx < 256:
                T.inc_max_nreg(CONSUMER_REGS)
                lane = tx % 32
                T.barrier_wait(sbar, 0)
                T.clear(acc0)
                if split == "k":
                    for i in T.serial(n_k // 2):
                        step(A_s, W_s, S_s, W0, acc0, full, empty, 2 * i, 0, lane)
                    T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                    for j, m in T.Parallel(WG_ROWS, block_M):
                        acc0[j, m] = acc0[j, m] + R_s[j, m]
                else:
                    for ko in T.serial(n_k):
                        step(A_s, W_s, S_s, W0, acc0, full, empty, ko, 0, lane)
                store(acc0, C0_s, C, m0, n0, 0)
            else:
                T.inc_max_nreg(CONSUMER_REGS)
                lane = tx % 32
                T.barrier_wait(sbar, 0)
                T.clear(acc1)
                if split == "k":
                    for i in T.serial(n_k // 2):
                        step(A_s, W_s, S_s, W1, acc1, full, empty, 2 * i + 1, 0, lane)
                    T.copy(acc1, R_s)
                    T.sync_threads(barrier_id=_BAR_BOTH, arrive_count=256)
                else:
                    for ko in T.serial(n_k):
                        step(A_s, W_s, S_s, W1, acc1, full, empty, ko, WG_ROWS, lane)
                    store(acc1, C1_s, C, m0, n0 + WG_ROWS, 1)
            if cluster > 1:
                T.cluster_sync()  # no block leaves while a peer may still arrive on its barriers

    return main


@tilelang.jit(target=TARGET, pass_configs=W4_PASS_CONFIGS)
def w4a16_gemm(
    M: int,
    N: int,
    K: int,
    group: int = 128,
    block_M: int = 16,
    block_K: int = 256,
    stages: int = 4,
    split: str = "k",
    cluster: int = 1,
):
    """W4A16 with the weights expanded into wgmma's register operand (see the module docstring).

    ``block_M`` = activation rows per block (wgmma's N, 16..256); ``block_K`` = K per stage;
    ``split`` = ``"k"`` (two consumers on alternate K blocks of 64 weight rows) or ``"n"``
    (each consumer its own 64 rows); ``cluster`` = blocks along N sharing the activation
    tile by TMA multicast.
    """
    return _program(M, N, K, group=group, block_M=block_M, block_K=block_K, stages=stages, split=split,
                    cluster=cluster)


def w4a16_ref(a: Any, packed: Any, scales: Any, group: int) -> Any:
    """fp32 reference on the weights the kernel expands: ``(q - 8) * s`` rounded to fp16 once."""
    import torch

    from kernels.gemm.lowp import dequant_weight

    w16 = dequant_weight(packed, scales, group).to(torch.float16)
    return torch.matmul(a.to(torch.float32), w16.to(torch.float32).t())


def check_w4a16_inputs(a: Any, packed: Any, scales: Any, group: int = 128) -> tuple[int, int, int]:
    """Validate the operands (shapes, dtypes, contiguity, one CUDA device); returns (M, N, K)."""
    import torch

    require(isinstance(a, torch.Tensor) and a.dim() == 2, "a must be a [M, K] tensor")
    require(isinstance(packed, torch.Tensor) and packed.dim() == 2, "packed weights must be a [N, K/2] uint8 tensor")
    M, K = a.shape
    N, KP = packed.shape
    require(KP * 2 == K, f"packed weights hold two int4 per byte: [N, K/2] = [N, {K // 2}], got [N, {KP}]")
    require(group > 0 and K % group == 0, f"K={K} must be a multiple of the scale group {group}")
    check_matrix(a, "a", (M, K), torch.float16)
    check_matrix(packed, "packed", (N, KP), torch.uint8)
    check_matrix(scales, "scales", (N, K // group), torch.float16)
    check_cuda(a=a, packed=packed, scales=scales)
    return M, N, K


def pick_config(M: int) -> dict[str, Any]:
    """The configuration of record for M activation rows (from the H200 search, see the suite)."""
    if M <= 16:
        return dict(block_M=16, block_K=256, stages=4, split="k", cluster=1)
    if M <= 64:
        return dict(block_M=64, block_K=256, stages=4, split="k", cluster=2)
    if M <= 128:
        return dict(block_M=128, block_K=128, stages=4, split="k", cluster=2)
    return dict(block_M=256, block_K=64, stages=4, split="n", cluster=1)


def run_w4a16(a: Any, packed: Any, scales: Any, group: int = 128, out: Any = None, **cfg: Any) -> Any:
    """Check the operands, compile (or load) the kernel for their shape and run it."""
    import torch

    M, N, K = check_w4a16_inputs(a, packed, scales, group)
    cfg = {**pick_config(M), **cfg}
    check_config(M, N, K, group=group, **cfg)
    if out is None:
        out = torch.empty((M, N), dtype=torch.float16, device=a.device)
    check_matrix(out, "out", (M, N), torch.float16)
    w4a16_gemm(M, N, K, group, **cfg)(a, packed, scales, out)
    return out


# ------------------------------------------------------------------ GPU suite

#: The measured shapes (from the ledger: four decode batches on 8192 x 8192 weights, one square).
def _shapes() -> list[tuple[int, int, int]]:
    from ledger.w4a16 import DECODE_SHAPES, SQUARE_SHAPE

    return [*DECODE_SHAPES, SQUARE_SHAPE]


#: The issue's targets: speed-up over cuBLAS on the fp16 weights, by M.
TARGETS = {1: 2.5, 16: 2.5, 64: 2.0, 128: 1.3, 4096: 0.9}


def _c(block_M: int, block_K: int, stages: int, split: str = "k", cluster: int = 1) -> dict[str, Any]:
    return dict(block_M=block_M, block_K=block_K, stages=stages, split=split, cluster=cluster)


#: A small, aimed search per regime (each list compiled in parallel, checked, then timed in
#: rounds).  M <= 16: 16 activation rows, memory-bound, more bytes in flight per SM (deeper or
#: longer stages); M = 64 / 128: the activation tile is shared by 2 or 4 blocks (multicast),
#: or not; 4096^3: the two-consumer 128-row tile against 128/256 activation rows.
CANDIDATES: dict[str, list[dict[str, Any]]] = {
    "decode": [_c(16, 256, 4), _c(16, 256, 6), _c(16, 512, 4), _c(16, 128, 8)],
    "m64": [_c(64, 256, 4), _c(64, 256, 4, cluster=2), _c(64, 128, 6, cluster=2), _c(64, 128, 6, cluster=4)],
    "m128": [_c(128, 128, 4, cluster=2), _c(128, 128, 4, cluster=4), _c(128, 64, 8, cluster=2),
             _c(128, 128, 4), _c(128, 128, 4, "n", 2)],
    "square": [_c(256, 64, 4, "n"), _c(128, 64, 6, "n"), _c(256, 64, 4, "n", 2), _c(128, 128, 4, "n")],
}

#: Ragged checks: M not a multiple of the activation tile (rows past M are TMA zeros, the
#: store is clipped), K a few groups, N a few blocks; one per split scheme and multicast.
RAGGED: list[tuple[tuple[int, int, int], dict[str, Any]]] = [
    ((5, 1024, 2048), _c(16, 256, 4)),
    ((100, 2048, 1024), _c(64, 128, 6, cluster=2)),
    ((300, 1024, 1536), _c(256, 64, 4, "n")),
]


def regime(M: int) -> str:
    return "decode" if M <= 16 else "m64" if M <= 64 else "m128" if M <= 128 else "square"


def label(cfg: dict[str, Any]) -> str:
    return (f"m{cfg['block_M']}_k{cfg['block_K']}_s{cfg['stages']}_{cfg['split']}"
            + (f"_c{cfg['cluster']}" if cfg.get("cluster", 1) > 1 else ""))


def make_inputs(h: Any, M: int, N: int, K: int, group: int = 128) -> tuple[Any, Any, Any, Any]:
    """Fresh activations, int4 weights, scales (0.01..~0.05) and their fp16 expansion."""
    import torch

    from kernels.gemm.lowp import dequant_weight, pack_int4

    a = h.rand((M, K), torch.float16)
    w_int = torch.randint(-8, 8, (N, K), dtype=torch.int8, device=a.device)
    packed = pack_int4(w_int)
    scales = (h.rand((N, K // group), torch.float32, scale=0.02).abs() + 0.01).to(torch.float16)
    w16 = dequant_weight(packed, scales, group).to(torch.float16)
    return a, packed, scales, w16


def gpu_suite(h: Any, skip: tuple[str, ...] = ()) -> None:
    """W4A16 (swap AB) vs cuBLAS on the fp16 weights: search, check, alternating-round bench,
    fraction of the ledger's floor; ragged checks.  ``skip``: labels not to build (a driver
    that found them hanging)."""
    import os

    import torch

    from kernels.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, gemm_tolerance, par_build, rel_fro_err
    from ledger.w4a16 import fp16_cost, gain_bound, roofline, w4a16_cost

    group = 128
    skip = tuple(skip) + tuple(s for s in os.environ.get("W4A16_SKIP", "").split(",") if s)
    shapes = [(16, 1024, 1024), (128, 1024, 2048)] if h.quick else _shapes()
    thunks: dict[str, Any] = {}
    for (M, N, K) in shapes:
        for cfg in CANDIDATES[regime(M)]:
            if label(cfg) not in skip:
                thunks[f"{label(cfg)}@{M}x{N}x{K}"] = (lambda m=M, n=N, k=K, c=cfg: w4a16_gemm(m, n, k, group, **c))
    for (M, N, K), cfg in RAGGED:
        if label(cfg) not in skip:
            thunks[f"{label(cfg)}@{M}x{N}x{K}"] = (lambda m=M, n=N, k=K, c=cfg: w4a16_gemm(m, n, k, group, **c))
    built = par_build(thunks)
    h.note("w4a16 compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]}, skipped=list(skip))

    for (M, N, K), cfg in RAGGED:
        key = f"{label(cfg)}@{M}x{N}x{K}"
        name = f"w4a16 {label(cfg)} ragged {M}x{N}x{K}"
        if key not in built or built[key]["kernel"] is None:
            h.skip(name, built.get(key, {}).get("error") or "skipped")
            continue
        a, packed, scales, w16 = make_inputs(h, M, N, K, group)
        ref = torch.matmul(a.float(), w16.float().t())
        c = h.poisoned((M, N), torch.float16)
        h.log(f"  launch {label(cfg)} {M}x{N}x{K}")
        built[key]["kernel"](a, packed, scales, c)
        torch.cuda.synchronize()
        h.check(name, c, ref, rel_fro_err=rel_fro_err(c, ref), config=cfg, **gemm_tolerance(K))
        del a, packed, scales, w16, ref, c

    for (M, N, K) in shapes:
        shape = f"{M}x{N}x{K}"
        a, packed, scales, w16 = make_inputs(h, M, N, K, group)
        ref = torch.matmul(a.float(), w16.float().t())
        cands: dict[str, Any] = {}
        rejected: dict[str, str] = {}
        outs: dict[str, Any] = {}
        for cfg in CANDIDATES[regime(M)]:
            rec = built.get(f"{label(cfg)}@{shape}")
            if rec is None or rec["kernel"] is None:
                rejected[label(cfg)] = (rec or {}).get("error") or "skipped"
                continue
            c = h.poisoned((M, N), torch.float16)
            h.log(f"  launch {label(cfg)} {shape}")  # a driver that sees a hang skips this label next time
            rec["kernel"](a, packed, scales, c)
            torch.cuda.synchronize()
            e = rel_fro_err(c, ref)
            if e < 1e-2:  # a wrong or unwritten tile gives O(1) or NaN
                outs[label(cfg)] = c
                cands[label(cfg)] = (lambda k=rec["kernel"], c=c: k(a, packed, scales, c))
            else:
                rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
        h.note(f"w4a16 {shape} candidates", f"{len(cands)} valid of {len(CANDIDATES[regime(M)])}", rejected=rejected)
        if not cands:
            h.error(f"w4a16 {shape}", RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(f"w4a16 {shape}", cands, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in CANDIDATES[regime(M)] if label(c) == best)
        kern = built[f"{best}@{shape}"]["kernel"]
        c = h.poisoned((M, N), torch.float16)
        kern(a, packed, scales, c)
        err = rel_fro_err(c, ref)
        h.check(f"w4a16 {shape}", c, ref, rel_fro_err=err, config=cfg, **gemm_tolerance(K))
        w4 = roofline(w4a16_cost(M, N, K, group))
        f16 = roofline(fp16_cost(M, N, K))
        rec = h.bench(f"w4a16 {shape}", lambda: kern(a, packed, scales, c), flops=w4.cost.flops, bytes=w4.cost.bytes,
                      ledger_source="ledger.w4a16.w4a16_cost",
                      baselines={"cuBLAS fp16 weights": lambda: torch.matmul(a, w16.t())},
                      targets={"speedup:cuBLAS fp16 weights": TARGETS.get(M, 1.0)}, rounds=BENCH_ROUNDS,
                      config=cfg, label=best, shape=[M, N, K], group=group, rel_fro_err=err,
                      floor_us=w4.bound_s * 1e6, floor_bound=w4.bound, fp16_floor_us=f16.bound_s * 1e6,
                      gain_bound=gain_bound(M, N, K, group), machine=w4.machine, floor_source="ledger.w4a16.roofline")
        rec["frac_floor"] = w4.bound_s * 1e3 / rec["ms"]
        base = rec["baselines"].get("cuBLAS fp16 weights")
        if base:
            rec["cublas_frac_floor"] = f16.bound_s * 1e3 / base
        h.log(f"    floor {w4.bound_s * 1e6:.1f} us ({w4.bound}); reached {100 * rec['frac_floor']:.0f} %; "
              f"gain bound {rec['gain_bound']:.2f}x")
        del a, packed, scales, w16, ref, c, outs
        torch.cuda.empty_cache()
