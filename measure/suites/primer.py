"""Suite ``primer``: the TileLang primer's copy, vectorised scale and row sum (and the
``T.gemm`` teaching tile, checked, not timed); shapes and the split come from
:mod:`ledger.primer`, the kernels from :mod:`kernels.primer`."""
from ledger import primer as LP

from kernels import primer as P
from measure.cost import priced


def gpu_suite(h) -> None:
    """Verify the three primer kernels (aligned and ragged shapes, poisoned outputs) and the
    T.gemm teaching kernel, then time copy, scale and row sum at the ledger's bench shapes.

    Records (names as the book glues them): ``copy fp16 n=2^28``, ``scale fp16 n=2^28``,
    ``row_sum fp16 16384x4096``, ``row_sum[registers] fp16 16384x4096``,
    ``row_sum fp16 256x262144`` (split=1) and ``row_sum[split] fp16 256x262144``
    (the ledger's split, atomics).  Shapes and the split come from :mod:`ledger.primer`.
    """
    import torch

    f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
    n = (1 << 22) if h.quick else LP.COPY_N
    rm, rn = (1024, 4096) if h.quick else LP.ROW_SUM_SHAPE
    lm, ln = (64, 65536) if h.quick else LP.LONG_ROWS_SHAPE
    cfg = dict(LP.ROW_SUM_CONFIG)
    split = LP.split_for(lm, cfg["blk_m"], ln // cfg["blk_n"])
    jobs = [(P.copy_kernel, (m, dt)) for m in (1 << 20, 1_000_003, n) for dt in ("float16",)]
    jobs += [(P.copy_kernel, (65_537, "float32"))]
    jobs += [(P.scale_kernel, (m, "float16", 256, 8)) for m in (1 << 20, 1_000_003, n)]
    jobs += [(P.scale_kernel, (77_777, "bfloat16", 256, 8)), (P.scale_kernel, (1 << 20, "float32", 256, 4))]
    rs_cases = [(1024, 4096, "float16", 1), (1000, 1000, "float16", 1), (333, 4104, "bfloat16", 1),
                (200, 2048, "float32", 1), (64, 8192, "float16", 8), (100, 3000, "float16", 3)]
    jobs += [(P.row_sum_kernel, (m, k, dt, cfg["blk_m"], cfg["blk_n"], cfg["threads"], cfg["stages"], s, via))
             for m, k, dt, s in rs_cases for via in P.VIAS]
    jobs += [(P.row_sum_kernel, (m, k, "float16", cfg["blk_m"], cfg["blk_n"], cfg["threads"], cfg["stages"], s, v))
             for m, k, s, v in ((rm, rn, 1, "shared"), (rm, rn, 1, "registers"), (lm, ln, 1, "shared"),
                                (lm, ln, split, "shared"))]
    operands = (("shared", "shared"), ("fragment", "shared"), ("shared", "fragment"))
    jobs += [(P.gemm_tile_kernel, (256, 384, 512), {"a_in": a, "b_in": b}) for a, b in operands]
    # A in registers without warp specialisation: separates the operand placement from the pipeline
    jobs += [(P.gemm_tile_kernel_no_ws, (256, 384, 512), {"a_in": "fragment"})]
    jobs += [(P.mirror_kernel, (256, 128)), (P.mirror_kernel, (100, 64))]
    h.precompile(jobs)

    # --- correctness: fresh inputs, poisoned outputs, aligned and ragged shapes
    for m, dt in ((1 << 20, f16), (1_000_003, f16), (65_537, f32)):
        x = h.rand(m, dt)
        y = h.poisoned(m, dt)
        P.copy(x, y)
        h.check("copy", y, x.double())
    for m, dt, npt in ((1 << 20, f16, 8), (1_000_003, f16, 8), (77_777, bf16, 8), (1 << 20, f32, 4)):
        x = h.rand(m, dt, scale=3.0)
        y = h.poisoned(m, dt)
        P.scale(x, 0.37, y, npt=npt)
        h.check(f"scale npt={npt}", y, x.double() * 0.37)
    for via in P.VIAS:
        for m, k, dt, s in rs_cases:
            dtt = {"float16": f16, "bfloat16": bf16, "float32": f32}[dt]
            x = h.rand((m, k), dtt)
            y = h.poisoned(m, f32)
            P.row_sum(x, y, split=s, via=via)
            # fp32 sums of k terms: tolerance scaled by sqrt(k) ulps of the row's magnitude
            h.check(f"row_sum[{via}] split={s}", y, x.double().sum(-1), atol=1e-4 * k ** 0.5, rtol=1e-4)
    for m, k in ((256, 128), (100, 64)):
        x = h.rand((m, k), f32)
        y = h.poisoned((m, k), f32)
        P.mirror_kernel(m, k)(x, y)
        h.check("mirror (staged through shared)", y, P.ref_mirror(x.double()))
    for a_in, b_in in operands:
        a, b = h.rand((256, 512), f16), h.rand((384, 512), f16)
        c = h.poisoned((256, 384), f32)
        P.gemm_tile(a, b, c, a_in=a_in, b_in=b_in)
        h.check(f"gemm_tile a_in={a_in} b_in={b_in}", c, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)
    a, b = h.rand((256, 512), f16), h.rand((384, 512), f16)
    c = h.poisoned((256, 384), f32)
    P.gemm_tile(a, b, c, a_in="fragment", warp_specialized=False)
    h.check("gemm_tile a_in=fragment b_in=shared no_ws", c, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)

    # --- performance: kernels bound once, no Python launcher work inside the timing
    x = h.rand(n, f16)
    y = torch.empty_like(x)
    by, fl, src = priced(LP.copy_cost, n=n, dtype="float16")
    kc = P.copy_kernel(n, "float16", 256)
    h.bench(f"copy fp16 n=2^{n.bit_length() - 1}", lambda: kc(x, y), bytes=by, flops=fl, ledger_source=src,
            baselines={"torch copy_": lambda: y.copy_(x)},
            # step 1 is the teaching baseline (one 2-byte element per thread): no target
            config={"threads": 256, "npt": 1})
    by, fl, src = priced(LP.scale_cost, n=n, dtype="float16")
    ks = P.scale_kernel(n, "float16", 256, 8)
    h.bench(f"scale fp16 n=2^{n.bit_length() - 1}", lambda: ks(x, y, 0.5), bytes=by, flops=fl, ledger_source=src,
            baselines={"eager": lambda: torch.mul(x, 0.5, out=y)}, targets={"frac_copy_bw": 0.95},
            config={"threads": 256, "npt": 8})
    del x, y
    runs = ((rm, rn, 1, "shared", "row_sum"), (rm, rn, 1, "registers", "row_sum[registers]"),
            (lm, ln, 1, "shared", "row_sum"), (lm, ln, split, "shared", "row_sum[split]"))
    for (m, k, s, via, label) in runs:
        x = h.rand((m, k), f16)
        y = torch.zeros(m, dtype=f32, device=x.device)
        by, fl, src = priced(LP.row_sum_cost, m=m, n=k, dtype="float16")
        kr = P.row_sum_kernel(m, k, "float16", cfg["blk_m"], cfg["blk_n"], cfg["threads"], cfg["stages"], s, via)
        # split > 1 accumulates into y: timing it without re-zeroing only changes the values, not the work
        h.bench(f"{label} fp16 {m}x{k}", lambda kr=kr, x=x, y=y: kr(x, y), bytes=by, flops=fl, ledger_source=src,
                baselines={"eager": lambda x=x: x.sum(dim=-1, dtype=f32)},
                targets={"frac_copy_bw": 0.85} if (label == "row_sum" and m == rm) or s > 1 else None,
                config={**cfg, "split": s, "via": via})
        del x, y
