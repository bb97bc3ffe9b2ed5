"""foldsim (CPU, 2026-12-05): would folding the W4A16 scale into the expansion's HFMA2 pass the suite's check?

The fold: the nibble q in the top four mantissa bits of an fp16 1.0 gives h = 1 + q/16 exactly; one fused
multiply-add h * (16 s) + round_fp16(-24 s) gives (q - 8) * s with the offset rounded once per (row, group), which
would remove the HMUL2 by the scale.  Emulated in fp64 (a fused multiply-add rounds once: the exact value rounded to
fp16), against the reference's weights ((q - 8) * s rounded once) and the suite's tolerance (gemm_tolerance).
    .venv/bin/python measure/results/timing/foldsim.py
"""
import torch

from kernels.gemm.lowp import dequant_weight, pack_int4
from measure.suites.gemm.common import gemm_tolerance

torch.manual_seed(0)
M, N, K, G = 64, 1024, 8192, 128
a = torch.randn(M, K).half()
q = torch.randint(0, 16, (N, K))
s = (torch.randn(N, K // G).abs() * 0.02 + 0.01).half()  # the suite's scales, 0.01..~0.05
w32 = dequant_weight(pack_int4((q - 8).to(torch.int8)), s, G)  # the reference's fp32 weights, (q - 8) * s
ref = a.double() @ w32.double().t()
tol = gemm_tolerance(K)


def check(w16: torch.Tensor) -> tuple[float, float]:
    """(relative Frobenius error, worst |error| / tolerance) of the fp16 output with these fp16 weights."""
    d = (a.double() @ w16.double().t()).half().double() - ref
    return (d.norm() / ref.norm()).item(), (d.abs() / (tol["atol"] + tol["rtol"] * ref.abs())).max().item()


def per_k(x: torch.Tensor) -> torch.Tensor:
    return x.half().double().repeat_interleave(G, 1)


if __name__ == "__main__":
    print("reference rounding", check(w32.half()))
    h = 1 + q.double() / 16
    print("fold (nibble in mantissa bits 6-9)", check((h * per_k(16 * s.double()) + per_k(-24 * s.double())).half()))
