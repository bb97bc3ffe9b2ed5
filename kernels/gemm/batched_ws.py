"""Batched GEMM on the hand-written pipeline: the batch folded into M, one persistent grid.

``C[b] = A[b] @ B[b]^T`` (A ``[batch, M, K]``, B ``[batch, N, K]``, C ``[batch, M, N]``) is one
GEMM of ``batch * M`` rows whose tiles take their B rows from their own batch
(:func:`kernels.gemm.ws.rung4_ws` with ``batch``): A and C are viewed as ``[batch * M, ...]``
without a copy, B as ``[batch * N, K]``.  :mod:`kernels.gemm.batched` launches one block per
tile, and every block waits for its own loads, computes, then writes its tile: for
attention's ``Q @ K^T`` (K = 128, two 64-deep K steps per tile) the block is mostly waiting,
and the 512 MB of scores -- the bulk of the bytes -- are written one tile at a time.  Here
132 blocks walk the tiles; the producer loads the next tile while the consumers store the
last one (TMA stores, the consumer waits only until its staging tile has been read).

The bound: ``Q @ K^T`` at 64 x 2048 x 2048 x 128 writes 512 MB and reads 64 MB; the suite
times a plain 512 MB write (``zero_``) of the output in the same rounds, a floor under any
kernel that writes those scores.
"""

from typing import Any

from kernels.gemm.common import check_cuda, check_matrix, require

#: (batch, M, N, K) of the two attention products: scores Q @ K^T and context P @ V.
SCORES = (64, 2048, 2048, 128)
CONTEXT = (64, 2048, 128, 2048)


def _c(block_N: int, block_K: int, stages: int, epi_cols: int = 0, inflight: int = 0, persistent: bool = True,
       cluster: int = 1, panel: int = 8) -> dict[str, Any]:
    return dict(block_N=block_N, block_K=block_K, stages=stages, epi_cols=epi_cols, inflight=inflight,
                persistent=persistent, cluster=cluster, panel=panel)


#: Scores (N = 2048, K = 128): 256-wide tiles sharing B in clusters of two (the winner of the
#: first two H200 searches), the whole K = 128 in one stage (one full/empty round trip per tile
#: instead of two), and C stored in 64-column chunks, which frees room for a fourth stage: the
#: producer then holds both K steps of the next tile while the consumers store this one.
#: Context (N = 128, K = 2048): one tile column, a long K loop, the A stream the bound.
CANDIDATES: dict[str, list[dict[str, Any]]] = {
    "scores": [_c(256, 64, 3, 128, cluster=2), _c(256, 128, 2, 128, cluster=2), _c(128, 128, 3, 0, cluster=2),
               _c(256, 64, 4, 64, cluster=2), _c(256, 64, 4, 64)],
    "context": [_c(128, 64, 4, 0), _c(128, 64, 6, 0), _c(128, 64, 6, 0, inflight=1), _c(128, 128, 3, 0),
                _c(128, 64, 4, 0, persistent=False)],
}


def label(cfg: dict[str, Any]) -> str:
    return (f"n{cfg['block_N']}_k{cfg['block_K']}_s{cfg['stages']}" + (f"_e{cfg['epi_cols']}" if cfg["epi_cols"] else "")
            + f"_if{cfg['inflight']}" + ("_pers" if cfg["persistent"] else "")
            + (f"_c{cfg['cluster']}" if cfg["cluster"] > 1 else "") + (f"_p{cfg['panel']}" if cfg["panel"] != 8 else ""))


def build(batch: int, M: int, N: int, K: int, cfg: dict[str, Any], workers: int = 132) -> Any:
    from kernels.gemm.ws import rung4_ws

    kw = {k: cfg[k] for k in ("block_N", "block_K", "stages", "epi_cols", "inflight", "cluster", "panel")}
    return rung4_ws(batch * M, N, K, workers=workers if cfg["persistent"] else 0, batch=batch, **kw)


def check_inputs(a: Any, b: Any) -> tuple[int, int, int, int]:
    """a ``[batch, M, K]``, b ``[batch, N, K]`` fp16, contiguous, one CUDA device; M a multiple of 128."""
    import torch

    require(hasattr(a, "dim") and a.dim() == 3 and hasattr(b, "dim") and b.dim() == 3,
            "a must be [batch, M, K] and b [batch, N, K]")
    batch, M, K = a.shape
    require(b.shape[0] == batch and b.shape[2] == K, f"b must be [{batch}, N, {K}], got {tuple(b.shape)}")
    N = b.shape[1]
    check_matrix(a, "a", (batch, M, K), torch.float16)
    check_matrix(b, "b", (batch, N, K), torch.float16)
    require(M % 128 == 0, f"M={M} must be a multiple of 128 (a tile never crosses a batch)")
    require(K % 8 == 0 and N % 8 == 0, f"K={K} and N={N} must be multiples of 8 (16-byte TMA rows)")
    check_cuda(a=a, b=b)
    return batch, M, N, K


def run(kernel: Any, a: Any, b: Any, c: Any) -> Any:
    """Launch on the flattened views (no copies)."""
    batch, M, K = a.shape
    N = b.shape[1]
    kernel(a.view(batch * M, K), b.view(batch * N, K), c.view(batch * M, N))
    return c


def gpu_suite(h: Any) -> None:
    import torch

    from kernels.gemm.batched import batched_ref
    from kernels.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, gemm_tolerance, par_build, rel_fro_err
    from ledger.gemm import gemm_cost

    sms = torch.cuda.get_device_properties(h.device).multi_processor_count if h.is_cuda else 132
    problems = {"scores": SCORES, "context": CONTEXT}
    if h.quick:
        problems = {"scores": (4, 256, 512, 128), "context": (4, 256, 128, 512)}
    thunks = {f"{kind}:{label(c)}": (lambda c=c, p=p: build(*p, c, sms))
              for kind, p in problems.items() for c in CANDIDATES[kind]}
    built = par_build(thunks)
    h.note("batched ws compile", f"{len(thunks)} kernels",
           compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})
    for kind, (batch, M, N, K) in problems.items():
        name = f"batched ws {kind} {batch}x{M}x{N}x{K}"
        a = h.rand((batch, M, K), torch.float16)
        b = h.rand((batch, N, K), torch.float16)
        check_inputs(a, b)
        ref = batched_ref(a, b)
        bmm = lambda: torch.bmm(a, b.transpose(1, 2))  # noqa: E731
        timed: dict[str, Any] = {}
        rejected: dict[str, str] = {}
        for cfg in CANDIDATES[kind]:
            rec = built[f"{kind}:{label(cfg)}"]
            if rec["kernel"] is None:
                rejected[label(cfg)] = rec["error"]
                continue
            c = h.poisoned((batch, M, N), torch.float16)
            run(rec["kernel"], a, b, c)
            e = rel_fro_err(c, ref)
            if e < 1e-2:
                timed[label(cfg)] = (lambda k=rec["kernel"], c=c: run(k, a, b, c))
            else:
                rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
        h.note(f"{name} candidates", f"{len(timed)} valid of {len(CANDIDATES[kind])}", rejected=rejected)
        if not timed:
            h.error(name, RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(name, timed, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in CANDIDATES[kind] if label(c) == best)
        kern = built[f"{kind}:{best}"]["kernel"]
        c = h.poisoned((batch, M, N), torch.float16)
        run(kern, a, b, c)
        err = rel_fro_err(c, ref)
        h.check(name, c, ref, rel_fro_err=err, config=cfg, **gemm_tolerance(K))
        cost = gemm_cost(batch * M, N, K)  # flops 2*batch*M*N*K; bytes: every operand once, C once
        nbytes = float(2 * batch * (M * K + N * K + M * N))
        out = torch.empty((batch, M, N), dtype=torch.float16, device=a.device)
        rec = h.bench(name, lambda: run(kern, a, b, c), flops=float(cost.flops), bytes=nbytes,
                      ledger_source="ledger.gemm.gemm_flops; bytes 2*batch*(MK+NK+MN)",
                      baselines={"torch.bmm": bmm, "write C (zero_)": lambda: out.zero_()},
                      targets={"speedup:torch.bmm": 0.95}, rounds=BENCH_ROUNDS, config=cfg, label=best,
                      shape=[batch, M, N, K], rel_fro_err=err)
        wr = rec["baselines"].get("write C (zero_)")
        if wr and rec["baselines"].get("torch.bmm"):
            rec["speedup_bound"] = rec["baselines"]["torch.bmm"] / wr
        del a, b, ref, c, out, timed
        torch.cuda.empty_cache()
