"""Suite ``quant``: per-token FP8 quantization with a group amax."""
from ledger.fusion import fp8_quant_cost

from kernels.quant import EPS, FP8_MAX, quant_fp8, quantize_fp8, ref_quant_fp8
from measure.cost import priced


def check_quant(h, name, x, q, scale, group):
    """Scale against an fp64 amax; q against x / scale (fp64) with one e4m3 ulp."""
    import torch

    M, N = x.shape
    xg = x.double().view(M, N // group, group)
    s_ref = xg.abs().amax(-1).clamp_min(EPS) / FP8_MAX
    h.check(f"{name} scale", scale, s_ref)
    want = (xg / scale.double()[..., None]).clamp(-FP8_MAX, FP8_MAX).view(M, N)
    h.check(f"{name} q", q, want, dtype=torch.float8_e4m3fn)


def gpu_suite(h) -> None:
    import torch

    f16, bf16 = torch.float16, torch.bfloat16
    cases = [(f16, 64, 4096, 128, 4), (bf16, 37, 4096, 128, 4), (bf16, 5, 1024, 1024, 1), (f16, 3, 384, 128, 2)]
    Mp, Np = (2048, 4096) if h.quick else (16384, 4096)
    h.precompile([(quant_fp8, (M, N, g, str(dt).replace("torch.", ""), bm, 256)) for dt, M, N, g, bm in cases]
                 + [(quant_fp8, (Mp, Np, 128, "bfloat16", bm, 256)) for bm in (1, 2, 4)])
    for dt, M, N, group, bm in cases:
        x = h.rand((M, N), dt, scale=3.0)
        q = h.poisoned((M, N), torch.float8_e4m3fn)
        s = h.poisoned((M, N // group), torch.float32)
        quantize_fp8(x, group, q, s, blk_m=bm)
        check_quant(h, f"quant_fp8[group={group}]", x, q, s, group)

    M, N = Mp, Np
    x = h.rand((M, N), bf16)
    q = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((M, N // 128), dtype=torch.float32, device=x.device)
    by, fl, src = priced(fp8_quant_cost, m=M, n=N, in_dtype="bfloat16", group=128)
    ks = {bm: quant_fp8(M, N, 128, "bfloat16", bm, 256) for bm in (1, 2, 4)}
    xv, qv = x.view(M, N // 128, 128), q.view(M, N // 128, 128)
    best, _ = h.search("quant_fp8 blk_m", {f"blk_m={bm}": (lambda bm=bm: ks[bm](xv, qv, s)) for bm in ks})
    bm = int(best.split("=")[1])
    eager = lambda: ref_quant_fp8(x, 128)  # noqa: E731
    comp = h.warm_compiled(h.torch_compile(ref_quant_fp8, "quant_fp8"), x, name="quant_fp8")
    h.bench(f"quant_fp8 bf16 {M}x{N} group=128", lambda: ks[bm](xv, qv, s), bytes=by, flops=fl,
            ledger_source=src, baselines={"eager": eager, "torch.compile": comp},
            targets={"frac_copy_bw": 0.85}, config={"blk_m": bm, "threads": 256, "group": 128})
