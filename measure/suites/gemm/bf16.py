"""Suite ``gemm.bf16``: the tuned GEMM in bf16, the dtype LLM training uses, against cuBLAS bf16;
and repeats of the fp16 8192^3 comparison.

The hand-written pipeline of :mod:`kernels.gemm.ws` with ``dtype="bfloat16"``: the same TMA
producer and two wgmma consumers, bf16 tiles in, fp32 accumulate, bf16 out.  The candidates
are hand-written ones of the fp16 search (:data:`measure.suites.gemm.ladder.TUNE_CANDIDATES`
with ``ws``, :data:`BF16_LABELS`): bf16 has the same width, so the same tiles, stages and
shared memory apply.

The suite also times the fp16 kernel of record at 8192^3 against cuBLAS ``FP16_REPEATS``
times, each an alternating-round bench of its own, so "at least cuBLAS in every repeat" is
read from one run's records rather than from one bench.
"""

from typing import Any

from kernels.gemm.ladder import build_tuned, label
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import BENCH_ROUNDS, SEARCH_ROUNDS, gemm_cost, gemm_tolerance, rel_fro_err
from measure.suites.gemm.ladder import TUNE_CANDIDATES

#: Shapes of the bf16 comparison (as the fp16 tuned rung).
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
#: Repeats of the fp16 8192^3 bench in one run.
FP16_REPEATS = 3

#: The four hand-written candidates that won or came within 1 % in the recorded fp16 searches.
BF16_LABELS = ("128x256x64_s4_t256_p8_ws_e128_if0", "128x256x64_s4_t256_p8_ws_e128_if0_pers",
               "128x256x64_s4_t256_p8_ws_e128_if0_pers_c2", "128x256x64_s4_t256_p8_ws_e128_if1_pers_c2")
#: The fp16 kernel of record at 8192^3 (the recorded search's winner), timed in the repeats.
FP16_LABEL = "128x256x64_s4_t256_p8_ws_e128_if1_pers_c2"


def bf16_candidates() -> list[dict[str, Any]]:
    return [c for c in TUNE_CANDIDATES if c.get("ws") and label(c) in BF16_LABELS]


def bf16_tolerance(K: int) -> dict[str, float]:
    """bf16 output: 8 significant bits (relative 2^-8 with margin); entries near zero get an
    absolute part that covers two fp32 summation orders of K unit-variance products."""
    return dict(atol=float(2.0 ** -8 * K ** 0.5), rtol=1.6e-2)


def gpu_suite(h: Any) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = sm_count(h)
    shapes = [(1024, 1024, 1024)] if h.quick else SHAPES
    cands = bf16_candidates()
    thunks = {f"{label(c)}@{M}": (lambda c=c, m=M, n=N, k=K: build_tuned(m, n, k, c, sms, dtype="bfloat16"))
              for (M, N, K) in shapes for c in cands}
    fp16_cfg = next(c for c in cands if label(c) == FP16_LABEL)
    big = shapes[-1]
    thunks["fp16@big"] = lambda: build_tuned(*big, fp16_cfg, sms)
    built = par_build(thunks)
    h.note("bf16 compile", f"{len(thunks)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})

    for (M, N, K) in shapes:
        a = h.rand((M, K), torch.bfloat16)
        b = h.rand((N, K), torch.bfloat16)
        ref = torch.matmul(a.float(), b.float().t())
        tol = bf16_tolerance(K)
        cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
        c_cub = cublas()
        h.check(f"cuBLAS bf16 {M}^3", c_cub, ref, rel_fro_err=rel_fro_err(c_cub, ref), **tol)
        timed: dict[str, Any] = {}
        rejected: dict[str, str] = {}
        for cfg in cands:
            rec = built[f"{label(cfg)}@{M}"]
            if rec["kernel"] is None:
                rejected[label(cfg)] = rec["error"]
                continue
            c = h.poisoned((M, N), torch.bfloat16)
            rec["kernel"](a, b, c)
            e = rel_fro_err(c, ref)
            if e < 2e-2:
                timed[label(cfg)] = (lambda k=rec["kernel"], c=c: k(a, b, c))
            else:
                rejected[label(cfg)] = f"rel_fro_err={e:.3g}"
        h.note(f"bf16 {M}^3 candidates", f"{len(timed)} valid of {len(cands)}", rejected=rejected)
        if not timed:
            h.error(f"bf16 {M}^3", RuntimeError(f"no valid candidate: {rejected}"))
            continue
        best, _ = h.search(f"bf16 {M}^3", timed, rounds=SEARCH_ROUNDS)
        cfg = next(c for c in cands if label(c) == best)
        kern = built[f"{best}@{M}"]["kernel"]
        c = h.poisoned((M, N), torch.bfloat16)
        kern(a, b, c)
        err = rel_fro_err(c, ref)
        h.check(f"tuned bf16 {M}^3", c, ref, rel_fro_err=err, config=cfg, **tol)
        flops, nbytes, src = gemm_cost(M, N, K, "bf16")
        h.bench(f"tuned bf16 {M}^3", lambda: kern(a, b, c), flops=flops, bytes=nbytes, ledger_source=src,
                baselines={"cuBLAS bf16": cublas}, targets={"speedup:cuBLAS bf16": 0.95}, rounds=BENCH_ROUNDS,
                config=cfg, label=best, shape=[M, N, K], rel_fro_err=err, dtype="bfloat16")
        del a, b, ref, c, c_cub, timed
        torch.cuda.empty_cache()

    # fp16 at the large shape, the kernel of record, FP16_REPEATS alternating-round benches
    M, N, K = big
    rec = built["fp16@big"]
    if rec["kernel"] is None:
        h.error(f"tuned rung4 fp16 {M}^3 repeats", RuntimeError(rec["error"]))
        return
    kern = rec["kernel"]
    a = h.rand((M, K), torch.float16)
    b = h.rand((N, K), torch.float16)
    ref = torch.matmul(a.float(), b.float().t())
    c = h.poisoned((M, N), torch.float16)
    kern(a, b, c)
    err = rel_fro_err(c, ref)
    h.check(f"tuned rung4 fp16 {M}^3 (repeats)", c, ref, rel_fro_err=err, config=fp16_cfg, **gemm_tolerance(K))
    flops, nbytes, src = gemm_cost(M, N, K, "fp16")
    for r in range(FP16_REPEATS if not h.quick else 1):
        h.bench(f"tuned rung4 fp16 {M}^3 repeat {r + 1}", lambda: kern(a, b, c), flops=flops, bytes=nbytes,
                ledger_source=src, baselines={"cuBLAS": lambda: torch.matmul(a, b.t())},
                targets={"speedup:cuBLAS": 1.0}, rounds=BENCH_ROUNDS, config=fp16_cfg, label=label(fp16_cfg),
                shape=[M, N, K], repeat_index=r + 1)
