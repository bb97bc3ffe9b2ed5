"""Split-K GEMM: the K loop is cut into ``split_k`` slices, each slice a separate block.

For skinny problems (few output tiles, long K) one output tile per block leaves
most of the 132 SMs idle; cutting K multiplies the number of blocks by
``split_k``. Each block adds its fp32 partial tile into a zero-initialised fp32
C with atomics, in one of two forms:

* ``form="element"`` -- one ``T.atomic_add`` per accumulator element (scalar
  ``atomicAdd`` on fp32, straight from registers);
* ``form="tile"``    -- the fragment is staged through shared memory and added as
  one tile region (``T.atomic_add(C[...], C_shared)``), which tilelang vectorises.

Same convention as :mod:`kernels.gemm.ladder`: ``C[M, N] += A[M, K] @ B[N, K]^T``.
"""



from typing import Any

import tilelang
import tilelang.language as T

from kernels.gemm.common import TARGET, check_cuda, check_matrix, check_tiles, check_wgmma_n, rel_fro_err, require


def splitk_ref(a: Any, b: Any) -> Any:
    """fp32 reference of ``a @ b.T``."""
    import torch

    return torch.matmul(a.to(torch.float32), b.to(torch.float32).t())


@tilelang.jit(target=TARGET)
def splitk_gemm(
    M: int,
    N: int,
    K: int,
    split_k: int,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 64,
    stages: int = 3,
    threads: int = 128,
    form: str = "tile",
):
    """Split-K kernel; C (fp32, zeroed by the caller) receives ``split_k`` atomic partial sums."""
    k_slice = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(k_slice // block_K, num_stages=stages):
                T.copy(A[by * block_M, bz * k_slice + ko * block_K], A_s)
                T.copy(B[bx * block_N, bz * k_slice + ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            if form == "element":
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[by * block_M + i, bx * block_N + j], acc[i, j])
            else:
                C_s = T.alloc_shared((block_M, block_N), T.float32)
                T.copy(acc, C_s)
                T.atomic_add(C[by * block_M, bx * block_N], C_s)

    return main


DEFAULT = dict(block_M=128, block_N=128, block_K=64, stages=3, threads=128)
#: The tuned rung-4 tile (two consumer warpgroups): 32 output tiles at 1024x1024, so the
#: splits 1/2/4 fill 24 / 48 / 97 % of one wave.  Element form only: staging a 128x256
#: fp32 tile for the tile-wise atomics would need 128 KiB of shared memory on top of the
#: operand stages.
WIDE = dict(block_M=128, block_N=256, block_K=64, stages=3, threads=256)


def check_inputs(a: Any, b: Any, split_k: int, block_M: int = 128, block_N: int = 128, block_K: int = 64, form: str = "tile") -> tuple[int, int, int]:
    """Validate operands and the split; returns (M, N, K). Raises ValueError naming the constraint."""
    import torch

    require(form in ("tile", "element"), f"form must be 'tile' or 'element', got {form!r}")
    require(isinstance(split_k, int) and split_k >= 1, f"split_k must be a positive int, got {split_k!r}")
    require(hasattr(a, "shape") and len(a.shape) == 2 and hasattr(b, "shape") and len(b.shape) == 2,
            "a must be [M, K] and b must be [N, K]")
    M, K = a.shape
    N, Kb = b.shape
    require(K == Kb, f"a is [M, K] and b is [N, K]: K must agree ({K} != {Kb})")
    check_matrix(a, "a", (M, K), torch.float16)
    check_matrix(b, "b", (N, K), torch.float16)
    check_tiles(M=(M, block_M), N=(N, block_N))
    require(K % (split_k * block_K) == 0, f"K={K} must be a multiple of split_k*block_K = {split_k}*{block_K}")
    check_wgmma_n(block_N)
    check_cuda(a=a, b=b)
    return M, N, K


def run(a: Any, b: Any, split_k: int, form: str = "tile", out: Any = None, **cfg: Any) -> Any:
    """``a @ b.T`` in fp32 by split-K; zeroes ``out`` (or a new tensor) first."""
    import torch

    cfg = {**DEFAULT, **cfg}
    M, N, K = check_inputs(a, b, split_k, cfg["block_M"], cfg["block_N"], cfg["block_K"], form)
    kern = splitk_gemm(M, N, K, split_k, form=form, **cfg)
    c = torch.zeros((M, N), dtype=torch.float32, device=a.device) if out is None else out.zero_()
    kern(a, b, c)
    return c


# ------------------------------------------------------------------ GPU suite

SPLITS = (1, 2, 4, 8)
SHAPE = (1024, 1024, 16384)  # (M, N, K) of the suite: few output tiles, long K


def predicted_speedup(M: int, N: int, split: int, block_M: int = 128, block_N: int = 128) -> tuple[float, dict[str, Any]]:
    """Wave-count prediction of split-K's speedup over no split (same tile, compute-bound blocks).

    A block with ``K/split`` of the work takes ``1/split`` of the time, so the kernel
    takes ``waves(split) / split`` of one full-K wave; the ratio to ``waves(1)``
    is the prediction. Waves come from :func:`ledger.gemm.grid_waves`.
    """
    from ledger.gemm import grid_waves

    g1, w1, f1 = grid_waves(M, N, block_M, block_N, split=1)
    gs, ws, fs = grid_waves(M, N, block_M, block_N, split=split)
    return (w1 * split) / ws, dict(grid=gs, waves=ws, last_wave_fill=fs, grid_no_split=g1, waves_no_split=w1, fill_no_split=f1)


def gpu_suite(h: Any) -> None:
    """Split-K on the skinny 1024x1024x16384 GEMM: every split, both atomic forms, vs no split and cuBLAS."""
    import torch

    from kernels.gemm.common import fp32_tolerance, gemm_cost, par_build, record_bench
    from ledger.gemm import split_k_bytes

    torch.backends.cuda.matmul.allow_tf32 = False
    M, N, K = (256, 256, 4096) if h.quick else SHAPE
    forms = ("tile", "element")
    thunks = {f"{f}:{s}": (lambda f=f, s=s: splitk_gemm(M, N, K, s, form=f, **DEFAULT)) for f in forms for s in SPLITS}
    thunks.update({f"wide:{s}": (lambda s=s: splitk_gemm(M, N, K, s, form="element", **WIDE)) for s in SPLITS})
    built = par_build(thunks)
    a = h.rand((M, K), torch.float16)
    b = h.rand((N, K), torch.float16)
    ref = splitk_ref(a, b)
    flops, nbytes, src = gemm_cost(M, N, K, "fp16", "fp32")
    atol, rtol = fp32_tolerance(K)
    cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
    base: dict[str, Any] = {}
    variants = [(form, DEFAULT, f"{form}:{{s}}", f"split-K {form} s={{s}} {M}x{N}x{K}") for form in forms]
    variants.append(("element", WIDE, "wide:{s}", f"split-K element 128x256 s={{s}} {M}x{N}x{K}"))
    for form, cfg, key, label in variants:
        for s in SPLITS:
            rec = built[key.format(s=s)]
            name = label.format(s=s)
            if rec["kernel"] is None:
                h.error(name, RuntimeError(rec["error"]))
                continue
            kern = rec["kernel"]
            c = h.poisoned((M, N), torch.float32)

            def fn(k=kern, c=c):
                c.zero_()
                k(a, b, c)

            fn()
            err = rel_fro_err(c, ref)
            h.check(name, c, ref, atol=atol, rtol=rtol, rel_fro_err=err)
            pred, waves = predicted_speedup(M, N, s, cfg["block_M"], cfg["block_N"])
            baselines = {"cuBLAS": cublas}
            if s > 1 and key in base:
                baselines["no-split"] = base[key]
            r = record_bench(h, name, fn, flops=flops, bytes=nbytes, ledger_source=src, baselines=baselines,
                             split_k=s, form=form, predicted_speedup_vs_no_split=pred, waves=waves,
                             partial_bytes=split_k_bytes(M, N, split=s, separate_reduce=False), rel_fro_err=err,
                             compile_s=rec["compile_s"], config=cfg)
            if s == 1:
                base[key] = fn
            elif "no-split" in r.get("speedup", {}):
                h.note(name + " prediction", f"predicted {pred:.2f}x vs no split, measured {r['speedup']['no-split']:.2f}x",
                       predicted=pred, measured=r["speedup"]["no-split"])
