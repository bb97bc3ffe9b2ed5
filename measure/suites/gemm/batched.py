"""Suite ``gemm.batched``: batched GEMM on attention-like shapes against ``torch.bmm``."""
from typing import Any

from ledger.gemm import gemm_cost

from kernels.gemm.batched import DEFAULT, batched_gemm, batched_ref, check_inputs
from measure.cost import source_of
from measure.search import par_build
from measure.suites.gemm.common import gemm_tolerance, record_bench, rel_fro_err

#: Attention-like batches (batch x heads = 64, sequence 2048, head dim 128).
SHAPES = {
    "scores Q@K^T": (64, 2048, 2048, 128),
    "context P@V": (64, 2048, 128, 2048),
}


def gpu_suite(h: Any) -> None:
    """Batched GEMM on attention-like shapes vs ``torch.bmm``."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    shapes = {"small": (4, 256, 256, 128)} if h.quick else SHAPES
    built = par_build({k: (lambda s=s: batched_gemm(*s, **DEFAULT)) for k, s in shapes.items()})
    # ragged M and N (TMA clips the edge tiles)
    bt, M, N, K = 3, 1000, 200, 136
    try:
        a = h.rand((bt, M, K), torch.float16)
        b = h.rand((bt, N, K), torch.float16)
        c = h.poisoned((bt, M, N), torch.float16)
        check_inputs(a, b)
        batched_gemm(bt, M, N, K, **DEFAULT)(a, b, c)
        ref = batched_ref(a, b)
        h.check(f"batched ragged {bt}x{M}x{N}x{K}", c, ref, rel_fro_err=rel_fro_err(c, ref), **gemm_tolerance(K))
    except Exception as exc:
        h.error(f"batched ragged {bt}x{M}x{N}x{K}", exc)
    for label, (bt, M, N, K) in shapes.items():
        rec = built[label]
        if rec["kernel"] is None:
            h.error(f"batched {label}", RuntimeError(rec["error"]))
            continue
        kern = rec["kernel"]
        a = h.rand((bt, M, K), torch.float16)
        b = h.rand((bt, N, K), torch.float16)
        ref = batched_ref(a, b)
        c = h.poisoned((bt, M, N), torch.float16)
        kern(a, b, c)
        err = rel_fro_err(c, ref)
        name = f"batched {label} {bt}x{M}x{N}x{K}"
        h.check(name, c, ref, rel_fro_err=err, **gemm_tolerance(K))
        cost = gemm_cost(M, N, K, "fp16").scaled(bt)
        record_bench(h, name, lambda k=kern, a=a, b=b, c=c: k(a, b, c), flops=float(cost.flops), bytes=float(cost.bytes),
                     ledger_source=source_of(gemm_cost) + "(...).scaled(batch)",
                     baselines={"torch.bmm": lambda a=a, b=b: torch.bmm(a, b.transpose(1, 2))},
                     shape=[bt, M, N, K], rel_fro_err=err, compile_s=rec["compile_s"])
        del a, b, ref, c
