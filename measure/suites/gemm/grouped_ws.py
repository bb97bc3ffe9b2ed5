"""Suite ``gemm.grouped_ws``: grouped GEMM (MoE experts) against a loop of ``torch.matmul`` whose
time is stable from run to run.

Baselines, all timed in the same alternating rounds as the kernel (their spread across the
rounds is recorded): the eager loop of one ``torch.matmul`` per expert; the same loop captured
in a CUDA graph (no launch gaps: the stable baseline the targets use); and one dense
``torch.matmul`` of all rows against one expert's weights -- the same FLOPs in a single large
GEMM, which no grouped kernel can beat by much (``speedup_bound`` = graph loop / dense).

Kernels: the padded form on the hand-written persistent pipeline
(:func:`kernels.gemm.grouped.build_ws`: each expert's rows start on a tile, a table names every
tile's expert), and the two forms of :mod:`kernels.gemm.grouped` (offset tables over the
concatenated rows; pointer tables).  Two routings of 6144 tokens over G = 8 experts: the
skewed MoE mix of ``gemm.grouped`` and a uniform one.
"""
import math
from typing import Any

from kernels.gemm.grouped import (DEFAULT, build_ws, grouped_concat, grouped_ptr, grouped_ref, make_concat_runner,
                                  make_ptr_runner, make_ws_runner, pad_rows, padded_tables, tables,
                                  ws_config as _c, ws_label as label)
from ledger.gemm import gemm_cost
from measure.cost import source_of
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, gemm_tolerance, rel_fro_err
from measure.suites.gemm.grouped import MOE_SIZES

#: Routings (G = 8, 6144 tokens): the skewed MoE mix and a uniform one.
MIXES = {"skewed": MOE_SIZES, "uniform": (768,) * 8}
N, K = 4096, 2048
#: The issue's target: the grouped kernel over the CUDA-graph loop.
TARGET = 1.2
#: Padded-form candidates: 128 x 256 tiles (the tuned GEMM's), alone or in clusters of two (B
#: multicast; each expert padded to 256 rows), panels of 8 or 4.
CANDIDATES = [_c(), _c(cluster=2), _c(panel=4), _c(block_N=128, stages=6, epi_cols=0)]


def _spread(rec: dict, label: str) -> float | None:
    """(max - min) / median of one timed function's per-round times."""
    xs = (rec.get("ms_per_round") or {}).get(label)
    if not xs:
        return None
    xs = sorted(xs)
    return (xs[-1] - xs[0]) / xs[len(xs) // 2]


def gpu_suite(h: Any) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = sm_count(h)
    n, k = (512, 256) if h.quick else (N, K)
    mixes = {"skewed": (100, 7, 260, 33)} if h.quick else MIXES
    bm = DEFAULT["block_M"]
    thunks: dict[str, Any] = {}
    for mix, sizes in mixes.items():
        for cfg in CANDIDATES:
            thunks[f"{mix}:{label(cfg)}"] = (lambda s=sizes, c=cfg: build_ws(s, n, k, c, sms))
        _, _, _, ntiles = tables(sizes, bm)
        max_m = math.ceil(max(sizes) / bm) * bm
        thunks[f"{mix}:concat"] = (lambda s=sizes, t=ntiles: grouped_concat(sum(s), n, k, len(s), t, **DEFAULT))
        thunks[f"{mix}:ptr"] = (lambda s=sizes, t=ntiles, mm=max_m: grouped_ptr(
            mm, n, k, len(s), t, block_M=bm, block_N=DEFAULT["block_N"], block_K=DEFAULT["block_K"],
            threads=DEFAULT["threads"]))
    built = par_build(thunks)
    h.note("grouped ws compile", f"{len(thunks)} kernels", compile_s={k_: round(v["compile_s"], 2) for k_, v in built.items()},
           errors={k_: v["error"] for k_, v in built.items() if v["error"]})

    for mix, sizes in mixes.items():
        G = len(sizes)
        tag = f"G={G} {mix} N={n} K={k}"
        a_cat = h.rand((sum(sizes), k), torch.float16)
        b = h.rand((G, n, k), torch.float16)
        offs = [0]
        for s in sizes[:-1]:
            offs.append(offs[-1] + s)
        a_list = [a_cat[o:o + s] for o, s in zip(offs, sizes)]
        ref_cat = torch.cat(grouped_ref(a_list, b), dim=0)
        cost = None
        for m in sizes:
            if m:
                c1 = gemm_cost(m, n, k, "fp16")
                cost = c1 if cost is None else cost + c1
        src = "sum over experts of " + source_of(gemm_cost)

        # baselines: eager loop, the loop in a CUDA graph, one dense GEMM of all rows
        outs = [torch.empty((s, n), dtype=torch.float16, device=a_cat.device) for s in sizes]

        def loop():
            for g, x in enumerate(a_list):
                torch.matmul(x, b[g].t(), out=outs[g])

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            loop()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            loop()
        graph.replay()
        torch.cuda.synchronize()
        got = torch.cat(outs, dim=0)
        h.check(f"torch.matmul loop (CUDA graph) {tag}", got, ref_cat, rel_fro_err=rel_fro_err(got, ref_cat),
                **gemm_tolerance(k))
        dense_out = torch.empty((sum(sizes), n), dtype=torch.float16, device=a_cat.device)
        baselines = {"torch.matmul loop (CUDA graph)": graph.replay, "torch.matmul loop": loop,
                     "one dense GEMM, same rows": lambda: torch.matmul(a_cat, b[0].t(), out=dense_out)}

        def bench(name: str, fn: Any, err: float, **meta: Any) -> None:
            rec = h.bench(name, fn, flops=float(cost.flops), bytes=float(cost.bytes), ledger_source=src,
                          baselines=baselines, targets={"speedup:torch.matmul loop (CUDA graph)": TARGET},
                          rounds=BENCH_ROUNDS, rel_fro_err=err, sizes=list(sizes), N=n, K=k, mix=mix, **meta)
            rec["baseline_spread"] = {lbl: _spread(rec, lbl) for lbl in ["kernel", *baselines]}
            gl, dn = rec["baselines"].get("torch.matmul loop (CUDA graph)"), rec["baselines"].get("one dense GEMM, same rows")
            if gl and dn:
                rec["speedup_bound"] = gl / dn

        # padded form on the hand-written pipeline: checked, searched, benched
        cands: dict[str, Any] = {}
        errs: dict[str, float] = {}
        rejected: dict[str, str] = {}
        pads: dict[int, Any] = {}
        for cfg in CANDIDATES:
            rec = built[f"{mix}:{label(cfg)}"]
            if rec["kernel"] is None:
                rejected[label(cfg)] = rec["error"]
                continue
            tile = 128 * cfg["cluster"]
            if tile not in pads:
                pads[tile] = pad_rows(a_cat, sizes, tile)
            starts, rows, _ = padded_tables(sizes, tile)
            fn = make_ws_runner(pads[tile], b, sizes, cfg, sms)
            c_pad = h.poisoned((rows, n), torch.float16)
            fn(c_pad)
            got = torch.cat([c_pad[s0:s0 + s] for s0, s in zip(starts, sizes)], dim=0)
            e = rel_fro_err(got, ref_cat)
            if e < 1e-2:
                cands[label(cfg)] = (lambda f=fn, c=c_pad: f(c))
                errs[label(cfg)] = e
                h.check(f"grouped ws {label(cfg)} {tag}", got, ref_cat, rel_fro_err=e, config=cfg, **gemm_tolerance(k))
            else:
                rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
        h.note(f"grouped ws {tag} candidates", f"{len(cands)} valid of {len(CANDIDATES)}", rejected=rejected)
        if cands:
            best, _ = h.search(f"grouped ws {tag}", cands, rounds=SEARCH_ROUNDS)
            cfg = next(c for c in CANDIDATES if label(c) == best)
            starts, rows, _ = padded_tables(sizes, 128 * cfg["cluster"])
            bench(f"grouped ws padded {tag}", cands[best], errs[best], config=cfg, label=best, padded_rows=rows)

        # the two forms of kernels.gemm.grouped under the same baselines
        if built[f"{mix}:concat"]["kernel"] is not None:
            fn = make_concat_runner(a_cat, b, sizes, **DEFAULT)
            c = h.poisoned((sum(sizes), n), torch.float16)
            fn(c)
            e = rel_fro_err(c, ref_cat)
            h.check(f"grouped concat {tag}", c, ref_cat, rel_fro_err=e, **gemm_tolerance(k))
            bench(f"grouped concat {tag}", lambda: fn(c), e, config=DEFAULT)
        if built[f"{mix}:ptr"]["kernel"] is not None:
            max_m = math.ceil(max(sizes) / bm) * bm
            a_pad = [torch.zeros((max_m, k), dtype=torch.float16, device=a_cat.device) for _ in sizes]
            for g, x in enumerate(a_list):
                a_pad[g][: x.shape[0]].copy_(x)
            b_list = [b[g].contiguous() for g in range(G)]
            c_list = [h.poisoned((max_m, n), torch.float16) for _ in sizes]
            fn = make_ptr_runner(a_pad, b_list, c_list, sizes, **DEFAULT)
            fn()
            got = torch.cat([c_list[g][:s] for g, s in enumerate(sizes)], dim=0)
            e = rel_fro_err(got, ref_cat)
            h.check(f"grouped ptr {tag}", got, ref_cat, rel_fro_err=e, **gemm_tolerance(k))
            bench(f"grouped ptr {tag}", fn, e, config=DEFAULT)
            del a_pad, b_list, c_list
        del a_cat, b, a_list, ref_cat, outs, graph, pads, dense_out
        torch.cuda.empty_cache()
