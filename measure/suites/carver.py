"""Suite ``carver``: tilelang's carver and Analyzer on the real device model, checked against
the ledger's walk, and the top hints compiled (:func:`measure.carver.hint_kernel`) and timed."""
import math
import time

from ledger.gemm import gemm_cost

from measure.carver import (TIME_TOP, TOPK, SHAPE, analyzer_capture, analyzer_vs_ledger, arch_fields, compare,
                            hand_built_arch, hint_config, hint_kernel, ledger_view, real_arch, recommend)


def gpu_suite(h) -> None:
    import torch
    from concurrent.futures import ThreadPoolExecutor

    M, N, K = (1024, 1024, 1024) if h.quick else SHAPE
    t0 = time.perf_counter()
    arch = real_arch()
    fields = arch_fields(arch)
    hints = recommend(arch, M, N, K, topk=TOPK)
    carver_s = time.perf_counter() - t0
    h.note("carver device model", f"{fields['name']}: smem_cap {fields['smem_cap']} B, "
           f"{fields['compute_max_core']} SMs, cc {fields['compute_capability']}", **{"fields": fields})
    h.note("carver hints", f"{len(hints)} hints in {carver_s:.1f} s; tensor-core policy: "
           f"{all(x['use_tc'] for x in hints)}", hints=hints, shape=[M, N, K], carver_s=carver_s)
    cmp = compare(hints, ledger_view(arch, M, N, K))
    h.note("carver vs ledger.carver", f"same order: {cmp['same_order']}, same set: {cmp['same_set']}, "
           f"tie groups among the hints: {len(cmp['tie_groups'])}", **cmp)
    # the CPU prediction: hand-built model, tensor-core path
    cpu = recommend(hand_built_arch(smem_cap=int(arch.smem_cap), sms=int(arch.compute_max_core)),
                    M, N, K, topk=TOPK, tensor_core_path=True)
    h.note("carver GPU vs CPU hand-built model", f"identical hints: {cpu == hints}",
           identical=cpu == hints, cpu_hints_differing=[c for c, g in zip(cpu, hints) if c != g][:5])

    # Analyzer on the real device model
    cap = analyzer_capture(arch)
    cap.update(analyzer_vs_ledger(cap))
    h.note("Analyzer sm_90", f"expected_tflops={cap['expected_tflops']}, bandwidth "
           f"{cap['expected_bandwidth_GBps']} GB/s, estimated {cap['estimated_time_s'] * 1e3:.3f} ms "
           f"(memory only: {math.isclose(cap['estimated_time_s'], cap['memory_only_time_s'], rel_tol=1e-6)})", **cap)

    # compile and time the top hints
    cost = gemm_cost(M, N, K, "fp16")
    flops, nbytes = float(cost.flops), float(cost.bytes)
    top = hints[:TIME_TOP]

    def build(hint):
        t = time.perf_counter()
        try:
            cfg = hint_config(hint)
            return hint, cfg, hint_kernel(M, N, K, **cfg), None, time.perf_counter() - t
        except Exception as exc:
            return hint, None, None, f"{type(exc).__name__}: {str(exc)[:300]}", time.perf_counter() - t

    with ThreadPoolExecutor(max_workers=TIME_TOP) as pool:
        built = list(pool.map(build, top))
    torch.backends.cuda.matmul.allow_tf32 = False
    a = h.rand((M, K), torch.float16)
    b = h.rand((N, K), torch.float16)
    ref = a.float() @ b.float().t()
    cublas = lambda: torch.matmul(a, b.t())  # noqa: E731
    for rank, (hint, cfg, kern, err, cs) in enumerate(built, 1):
        label = f"carver #{rank} {hint['block'][0]}x{hint['block'][1]}x{hint['rstep'][0]}"
        if kern is None:
            h.error(label, RuntimeError(err))
            continue
        c = h.poisoned((M, N), torch.float16)
        kern(a, b, c)
        h.check(label, c, ref, atol=0.25, rtol=1e-2)
        h.bench(f"{label} {M}^3", lambda k=kern, c=c: k(a, b, c), flops=flops, bytes=nbytes,
                ledger_source="ledger.gemm.gemm_cost", baselines={"cuBLAS": cublas},
                hint=hint, config=cfg, compile_s=cs, carver_rank=rank)
