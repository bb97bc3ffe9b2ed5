"""Suite ``gemm.support``: the sm_90a audit recorded with the GPU run, and the two probes that
compile run for real: the int8 GEMM (exact) and the block_N = 24 wgmma case."""
from typing import Any

from kernels.gemm.ladder import gemm_ref, rung4_annotated
from kernels.gemm.lowered import wgmma_shapes
from kernels.gemm.support import audit, probe_int
from measure.suites.gemm.common import gemm_tolerance, rel_fro_err


def gpu_suite(h: Any) -> None:
    """Record the sm_90a audit, and run the two probes that compile: int8 GEMM and the block_N=24 wgmma case."""
    import torch

    res = audit()
    h.note("hopper lowp audit", "; ".join(f"{k}: {'ok' if v['supported'] else v['error']}" for k, v in res.items()),
           audit=res)
    # int8 -> int32 must be exact
    M = N = K = 256
    a = torch.randint(-128, 128, (M, K), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (N, K), dtype=torch.int8, device="cuda")
    c = h.poisoned((M, N), torch.int32)
    probe_int(M, N, K, "int8")(a, b, c)
    ref = (a.to(torch.float64) @ b.to(torch.float64).t())
    h.check("int8 wgmma 256^3 (exact)", c, ref)
    # block_N = 24: the shape class of the 0.1.x wgmma bug -- is the result right?
    M, N, K = 256, 240, 256
    kern = rung4_annotated(M, N, K, block_M=128, block_N=24, block_K=64, stages=2, threads=128, panel=0)
    a = h.rand((M, K), torch.float16)
    b = h.rand((N, K), torch.float16)
    c = h.poisoned((M, N), torch.float16)
    kern(a, b, c)
    ref = gemm_ref(a, b)
    err = rel_fro_err(c, ref)
    h.check("wgmma block_N=24 (8 mod 16)", c, ref, rel_fro_err=err, wgmma_shapes=wgmma_shapes(kern.get_kernel_source()),
            **gemm_tolerance(K))
