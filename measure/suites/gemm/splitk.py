"""Suite ``gemm.splitk``: split-K on a skinny GEMM (few output tiles, long K), every split and
both atomic forms, against no split and cuBLAS, next to the wave-count prediction."""
from typing import Any

from ledger.gemm import grid_waves, split_k_bytes

from kernels.gemm.splitk import DEFAULT, WIDE, splitk_gemm, splitk_ref
from measure.search import par_build
from measure.suites.gemm.common import fp32_tolerance, gemm_cost, record_bench, rel_fro_err

SPLITS = (1, 2, 4, 8)
SHAPE = (1024, 1024, 16384)  # (M, N, K) of the suite: few output tiles, long K


def predicted_speedup(M: int, N: int, split: int, block_M: int = 128, block_N: int = 128) -> tuple[float, dict[str, Any]]:
    """Wave-count prediction of split-K's speedup over no split (same tile, compute-bound blocks).

    A block with ``K/split`` of the work takes ``1/split`` of the time, so the kernel
    takes ``waves(split) / split`` of one full-K wave; the ratio to ``waves(1)``
    is the prediction. Waves come from :func:`ledger.gemm.grid_waves`.
    """
    g1, w1, f1 = grid_waves(M, N, block_M, block_N, split=1)
    gs, ws, fs = grid_waves(M, N, block_M, block_N, split=split)
    return (w1 * split) / ws, dict(grid=gs, waves=ws, last_wave_fill=fs, grid_no_split=g1, waves_no_split=w1, fill_no_split=f1)


def gpu_suite(h: Any) -> None:
    """Split-K on the skinny 1024x1024x16384 GEMM: every split, both atomic forms, vs no split and cuBLAS."""
    import torch

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
