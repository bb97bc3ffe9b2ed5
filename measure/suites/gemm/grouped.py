"""Suite ``gemm.grouped``: grouped GEMM for MoE (offset-table and pointer-table forms) on uneven
expert sizes, against a loop of ``torch.matmul`` per expert."""
import math
from typing import Any

from kernels.gemm.grouped import DEFAULT, grouped_concat, grouped_ptr, grouped_ref, make_concat_runner, make_ptr_runner, tables
from measure.search import par_build
from measure.suites.gemm.common import gemm_cost, gemm_tolerance, record_bench, rel_fro_err

#: MoE-like routing of 6144 tokens (top-k dispatch) over 8 experts: very uneven, one tiny expert.
MOE_SIZES = (1536, 64, 960, 2048, 300, 1100, 17, 119)


def gpu_suite(h: Any) -> None:
    """Grouped GEMM (both forms) on uneven expert sizes vs a loop of ``torch.matmul`` per expert."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = (100, 7, 260, 33) if h.quick else MOE_SIZES
    N, K = (256, 512) if h.quick else (4096, 2048)
    G = len(sizes)
    bm = DEFAULT["block_M"]
    max_M = math.ceil(max(sizes) / bm) * bm
    _, _, _, ntiles = tables(sizes, bm)
    total = sum(sizes)
    built = par_build({
        "concat": lambda: grouped_concat(total, N, K, G, ntiles, **DEFAULT),
        "ptr": lambda: grouped_ptr(max_M, N, K, G, ntiles, block_M=bm, block_N=DEFAULT["block_N"],
                                   block_K=DEFAULT["block_K"], threads=DEFAULT["threads"]),
    })
    a_cat = h.rand((total, K), torch.float16)
    b = h.rand((G, N, K), torch.float16)
    starts = [0]
    for s in sizes[:-1]:
        starts.append(starts[-1] + s)
    a_list = [a_cat[s0:s0 + s] for s0, s in zip(starts, sizes)]
    refs = grouped_ref(a_list, b)
    ref_cat = torch.cat(refs, dim=0)
    flops = sum(gemm_cost(m, N, K, "fp16")[0] for m in sizes if m > 0)
    nbytes = sum(gemm_cost(m, N, K, "fp16")[1] for m in sizes if m > 0)
    src = "sum over experts of ledger.gemm.gemm_cost"

    def torch_loop():
        return [torch.matmul(x, b[g].t()) for g, x in enumerate(a_list)]

    meta = dict(sizes=list(sizes), N=N, K=K, tiles=ntiles)
    if built["concat"]["kernel"] is None:
        h.error("grouped concat", RuntimeError(built["concat"]["error"]))
    else:
        fn = make_concat_runner(a_cat, b, sizes, **DEFAULT)
        c = h.poisoned((total, N), torch.float16)
        fn(c)
        err = rel_fro_err(c, ref_cat)
        h.check(f"grouped concat G={G}", c, ref_cat, rel_fro_err=err, **gemm_tolerance(K), **meta)
        record_bench(h, f"grouped concat G={G} N={N} K={K}", lambda: fn(c), flops=flops, bytes=nbytes, ledger_source=src,
                     baselines={"torch.matmul loop": torch_loop}, rel_fro_err=err, **meta)
    if built["ptr"]["kernel"] is None:
        h.error("grouped ptr", RuntimeError(built["ptr"]["error"]))
        return
    a_pad = [torch.zeros((max_M, K), dtype=torch.float16, device=a_cat.device) for _ in sizes]
    for g, x in enumerate(a_list):
        a_pad[g][: x.shape[0]].copy_(x)
    b_list = [b[g].contiguous() for g in range(G)]
    c_list = [h.poisoned((max_M, N), torch.float16) for _ in sizes]
    fn = make_ptr_runner(a_pad, b_list, c_list, sizes, **DEFAULT)
    fn()
    got = torch.cat([c_list[g][:s] for g, s in enumerate(sizes)], dim=0)
    err = rel_fro_err(got, ref_cat)
    try:
        h.check(f"grouped ptr G={G}", got, ref_cat, rel_fro_err=err, **gemm_tolerance(K), **meta)
    except Exception as exc:  # e.g. an all-poison output
        h.error(f"grouped ptr G={G} check (rel_fro_err={err:.3g})", exc)
    record_bench(h, f"grouped ptr G={G} N={N} K={K}", fn, flops=flops, bytes=nbytes, ledger_source=src,
                 baselines={"torch.matmul loop": torch_loop}, rel_fro_err=err, **meta)
