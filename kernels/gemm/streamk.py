"""Stream-K GEMM for a Hopper of ``SMS`` SMs (132 on the H200): data-parallel full waves + K-split tail tiles + fix-up.

When the number of output tiles ``T`` is a little more than a multiple of the SM
count, the last wave runs a handful of tiles on a mostly idle GPU. Stream-K
launches exactly ``sms`` persistent blocks:

1. **data-parallel part** -- the first ``T - T % sms`` tiles, ``T // sms`` per
   block, each computed whole and stored in fp16;
2. **stream-K part** -- the ``T % sms`` tail tiles are cut along K into their
   ``iters_per_tile`` K-steps, and the ``tail * iters_per_tile`` steps are dealt
   out evenly to all ``sms`` blocks; a block whose range crosses a tile boundary
   works on up to ``max_segments`` tile pieces. Each piece's fp32 partial is added
   tile-wise (atomically) into an fp32 workspace of ``tail`` tiles;
3. **fix-up** -- a second small kernel casts the tail tiles from the workspace to
   fp16 C.

The schedule is computed on the host (:func:`schedule`) and baked into the kernel.
Convention: ``C[M, N] = A[M, K] @ B[N, K]^T``, fp16 in/out, fp32 accumulate.
"""

import math
from dataclasses import dataclass
from typing import Any

import tilelang
import tilelang.language as T

from kernels.common import SMS
from kernels.gemm.common import TARGET, check_inputs as check_operands


@dataclass(frozen=True)
class Schedule:
    """Host-side stream-K plan for one shape."""

    tiles: int  # output tiles
    tiles_n: int  # tiles along N
    iters_per_tile: int  # K steps per tile
    dp_tiles: int  # tiles computed whole (full waves)
    sk_tiles: int  # tail tiles split along K
    sk_iters: int  # tail K steps in all
    iters_per_block: int  # floor share of the tail steps per block
    extra: int  # the first `extra` blocks take one more step
    max_segments: int  # most tile pieces one block may touch
    dp_rounds: int  # whole tiles per block

    @property
    def waves_data_parallel(self) -> float:
        return self.tiles / SMS


def schedule(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, sms: int = SMS) -> Schedule:
    """Split ``ceil(M/bm) * ceil(N/bn)`` tiles into full waves and a K-split tail over ``sms`` blocks."""
    tiles_m, tiles_n = math.ceil(M / block_M), math.ceil(N / block_N)
    tiles = tiles_m * tiles_n
    ipt = math.ceil(K / block_K)
    sk_tiles = tiles % sms
    dp_tiles = tiles - sk_tiles
    sk_iters = sk_tiles * ipt
    q, r = divmod(sk_iters, sms)
    share = q + (1 if r else 0)
    # a range of `share` steps starting anywhere touches at most this many tiles
    max_segments = 0 if share == 0 else min(sk_tiles, (share + ipt - 2) // ipt + 1)
    return Schedule(tiles, tiles_n, ipt, dp_tiles, sk_tiles, sk_iters, q, r, max_segments, dp_tiles // sms)


@tilelang.jit(target=TARGET)
def streamk_gemm(
    M: int,
    N: int,
    K: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
    sms: int = SMS,
    tail_stages: int = 2,
):
    """Persistent stream-K kernel: writes DP tiles of C (fp16) and adds tail partials into W (fp32)."""
    s = schedule(M, N, K, block_M, block_N, block_K, sms)
    ipt = s.iters_per_tile
    tiles_n = s.tiles_n
    dp_tiles = s.dp_tiles
    q, r = s.iters_per_block, s.extra
    w_rows = max(s.sk_tiles, 1) * block_M

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((N, K), T.float16),
        C: T.Tensor((M, N), T.float16),
        W: T.Tensor((w_rows, block_N), T.float32),
    ):
        with T.Kernel(sms, threads=threads) as pid:
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            C_s = T.alloc_shared((block_M, block_N), T.float16)
            A_t = T.alloc_shared((block_M, block_K), T.float16)  # the tail loop has its own ring
            B_t = T.alloc_shared((block_N, block_K), T.float16)
            W_s = T.alloc_shared((block_M, block_N), T.float32)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            # 1. data-parallel full waves
            for rnd in T.serial(s.dp_rounds):
                tile = rnd * sms + pid
                tm = tile // tiles_n
                tn = tile % tiles_n
                T.clear(acc)
                for ko in T.Pipelined(ipt, num_stages=stages):
                    T.copy(A[tm * block_M, ko * block_K], A_s)
                    T.copy(B[tn * block_N, ko * block_K], B_s)
                    T.gemm(A_s, B_s, acc, transpose_B=True)
                T.copy(acc, C_s)
                T.copy(C_s, C[tm * block_M, tn * block_N])
            # 2. stream-K tail: steps [begin, end) of the tail's sk_iters steps
            begin = pid * q + T.min(pid, r)
            end = begin + q + T.if_then_else(pid < r, 1, 0)
            first = begin // ipt
            for seg in T.serial(s.max_segments):
                lt = first + seg  # local tail tile
                it0 = T.max(begin, lt * ipt)
                it1 = T.min(end, (lt + 1) * ipt)
                if it0 < it1:
                    tile = dp_tiles + lt
                    tm = tile // tiles_n
                    tn = tile % tiles_n
                    T.clear(acc)
                    for ko in T.Pipelined(it1 - it0, num_stages=tail_stages):
                        T.copy(A[tm * block_M, (it0 - lt * ipt + ko) * block_K], A_t)
                        T.copy(B[tn * block_N, (it0 - lt * ipt + ko) * block_K], B_t)
                        T.gemm(A_t, B_t, acc, transpose_B=True)
                    T.copy(acc, W_s)
                    T.atomic_add(W[lt * block_M, 0], W_s)

    return main


@tilelang.jit(target=TARGET)
def streamk_fixup(M: int, N: int, K: int, block_M: int = 128, block_N: int = 128, block_K: int = 64, sms: int = SMS):
    """Fix-up: cast the tail tiles from the fp32 workspace into fp16 C."""
    s = schedule(M, N, K, block_M, block_N, block_K, sms)
    tiles_n = s.tiles_n
    dp_tiles = s.dp_tiles
    w_rows = max(s.sk_tiles, 1) * block_M

    @T.prim_func
    def main(C: T.Tensor((M, N), T.float16), W: T.Tensor((w_rows, block_N), T.float32)):
        with T.Kernel(max(s.sk_tiles, 1), threads=256) as lt:
            tile = dp_tiles + lt
            tm = tile // tiles_n
            tn = tile % tiles_n
            for i, j in T.Parallel(block_M, block_N):
                C[tm * block_M + i, tn * block_N + j] = T.cast(W[lt * block_M + i, j], T.float16)

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)


def check_inputs(a: Any, b: Any, block_M: int = 128, block_N: int = 128, block_K: int = 64) -> tuple[int, int, int]:
    """Validate operands; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    return check_operands(a, b, torch.float16, tiles={"M": block_M, "N": block_N, "K": block_K}, block_N=block_N)


def make_runner(a: Any, b: Any, sms: int = SMS, **cfg: Any):
    """Compile both kernels for a's and b's shape; returns ``fn() -> C`` (allocates C and W per call)."""
    import torch

    cfg = {**DEFAULT, **cfg}
    M, N, K = check_inputs(a, b, cfg["block_M"], cfg["block_N"], cfg["block_K"])
    s = schedule(M, N, K, cfg["block_M"], cfg["block_N"], cfg["block_K"], sms)
    main = streamk_gemm(M, N, K, sms=sms, **cfg)
    fix = streamk_fixup(M, N, K, cfg["block_M"], cfg["block_N"], cfg["block_K"], sms)
    w_rows = max(s.sk_tiles, 1) * cfg["block_M"]
    c = torch.empty((M, N), dtype=torch.float16, device=a.device)
    w = torch.empty((w_rows, cfg["block_N"]), dtype=torch.float32, device=a.device)

    def fn(out: Any = None) -> Any:
        dst = c if out is None else out
        w.zero_()
        main(a, b, dst, w)
        if s.sk_tiles:
            fix(dst, w)
        return dst

    return fn
