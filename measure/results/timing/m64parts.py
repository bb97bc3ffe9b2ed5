"""m64parts: where the M = 64 W4A16 kernel's time goes, and whether wgmma at N = 64 is a bottleneck by itself.

Part 1 (the kernel taken apart): the two forms that have led at M = 64 (gemm.flush's ``lag`` form, and 256-k stages
without lag) each whole and as the module's timing probes, which give wrong results and are only timed:
``mmaonly`` (the rings and the tensor-core work, the register fragment left as it is: no packed-tile reads, no
expansion), ``noexpand`` (the fragment filled from the scales alone, per element) and, for the form without lag,
``loadonly`` (the rings alone).  The whole kernels are checked against the fp32 reference with a poisoned output
first.  Then two write-flush searches and one clean, 7 alternating rounds, cuBLAS on the fp16 weights beside them.

Part 2 (the tensor cores alone, no memory traffic): 128 blocks of one idle producer warpgroup and one or two consumer
warpgroups, each consumer issuing ``iters`` register-operand wgmma of 64 weight rows x ``n`` activation rows x 128 k
(8 instructions of k 16 each) on the same accumulator, waiting after each issue until at most ``wait`` are in flight
(1: the lag form's pattern, 0: the form without lag).  The instruction count a consumer issues is that of the real
kernel's consumer times ``REP``; the same multiply-adds at n = 64 and n = 128.  Timed under the write flush (the
kernel reads nothing); the result is the rate of multiply-adds each SM's tensor cores reach in each pattern.
"""
import json, os, sys
import torch
import tilelang
import tilelang.language as T
from kernels.gemm.common import TARGET
from kernels.gemm.w4a16 import W4_PASS_CONFIGS, build, config, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
LAG = W4A16_WINNERS[(64, N, K)]
NOLAG = config(64, 256, 4, stages_w=8, **W)
PARTS = [(LAG, ""), (LAG, "mmaonly"), (LAG, "noexpand"),
         (NOLAG, ""), (NOLAG, "mmaonly"), (NOLAG, "noexpand"), (NOLAG, "loadonly")]
MODES = ("write", "write", "clean")
BLOCKS = 128
REP = 8  # part 2: each consumer issues REP times the 32 stages of 8 wgmma of the real kernel's consumer
TENSOR = [(64, 2, 1), (64, 2, 0), (64, 1, 1), (128, 2, 1), (128, 2, 0), (128, 1, 1)]  # (n, consumers, wait)


def tensor_only(n: int, consumers: int, wait: int, accs: int = 1):
    """Part 2's kernel: ``consumers`` warpgroups each issue 32 * REP * 64 / n wgmma calls of 64 x n x 128
    (``accs=2``, probe ``acc2``: the calls alternate between two accumulators, added at the end)."""
    iters = 32 * REP * 64 // n
    threads = 128 * (consumers + 1)

    @tilelang.jit(target=TARGET, pass_configs=W4_PASS_CONFIGS)
    def make():
        @T.prim_func
        def main(C: T.Tensor((BLOCKS * 64 * consumers, n), T.float32)):
            with T.Kernel(BLOCKS, threads=threads) as bx:
                A_s = T.alloc_shared((n, 128), T.float16)
                W0 = T.alloc_fragment((64, 128), T.float16)
                W1 = T.alloc_fragment((64, 128), T.float16)
                acc0 = T.alloc_fragment((64, n), T.float32)
                acc1 = T.alloc_fragment((64, n), T.float32)
                acc0b = T.alloc_fragment((64, n), T.float32) if accs == 2 else None
                acc1b = T.alloc_fragment((64, n), T.float32) if accs == 2 else None
                tx = T.get_thread_binding()
                if tx < 128:
                    pass
                elif tx < 256:
                    for i, k in T.Parallel(n, 128):
                        A_s[i, k] = T.cast((i * 7 + k) % 5, T.float16) * T.float16(0.125)
                    T.fence_proxy_async()
                    T.sync_threads(barrier_id=1, arrive_count=128 * consumers)
                    T.fill(W0, 0.01)
                    T.clear(acc0)
                    if accs == 1:
                        for _ in T.serial(iters):
                            T.wgmma_gemm(W0, A_s, acc0, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                    else:
                        T.clear(acc0b)
                        for _ in T.serial(iters // 2):
                            T.wgmma_gemm(W0, A_s, acc0, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                            T.wgmma_gemm(W0, A_s, acc0b, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                        for i, j in T.Parallel(64, n):
                            acc0[i, j] = acc0[i, j] + acc0b[i, j]
                    T.wait_wgmma(0)
                    T.copy(acc0, C[bx * 64 * consumers:bx * 64 * consumers + 64, 0:n])
                else:
                    T.sync_threads(barrier_id=1, arrive_count=128 * consumers)
                    T.fill(W1, 0.02)
                    T.clear(acc1)
                    if accs == 1:
                        for _ in T.serial(iters):
                            T.wgmma_gemm(W1, A_s, acc1, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                    else:
                        T.clear(acc1b)
                        for _ in T.serial(iters // 2):
                            T.wgmma_gemm(W1, A_s, acc1, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                            T.wgmma_gemm(W1, A_s, acc1b, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                            T.wait_wgmma(wait)
                        for i, j in T.Parallel(64, n):
                            acc1[i, j] = acc1[i, j] + acc1b[i, j]
                    T.wait_wgmma(0)
                    T.copy(acc1, C[bx * 64 * consumers + 64:bx * 64 * consumers + 128, 0:n])

        return main

    return make(), iters


def main(out):
    built = {}
    for c, p in PARTS:
        built[f"{label(c)}:{p or 'whole'}"] = build(64, N, K, 128, c, probe=p)
    tens = {f"n{n} x{cons} wait{w}": tensor_only(n, cons, w) for n, cons, w in TENSOR}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}, "tensor_only": {}}
    for rep, mode in enumerate(MODES):
        a, packed, scales, w16 = make_inputs(h, 64, N, K, 128)
        ref = torch.matmul(a.float(), w16.float().t())
        cc = {}
        for c, p in PARTS:
            key = f"{label(c)}:{p or 'whole'}"
            k, w = built[key], kernel_weights(packed, c)
            o = h.poisoned((64, N), torch.float16)
            k(a, w, scales, o)
            if not p:
                torch.cuda.synchronize()
                res["errors"][f"{key} #{rep}"] = e = rel_fro_err(o, ref)
                if e >= 1e-2:
                    continue
            cc[key] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
        cc["cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush: m64parts #{rep}", cc, rounds=7)
        res["searches"][f"{mode} #{rep}"] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
        print(mode, rep, json.dumps(res["searches"][f"{mode} #{rep}"]), flush=True)
        json.dump(res, open(out, "w"), indent=1)
    h.protocol["flush_mode"] = "write"
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, (k, iters) in tens.items():
        n, cons = int(name.split()[0][1:]), int(name.split()[1][1:])
        o = torch.empty((BLOCKS * 64 * cons, n), device="cuda", dtype=torch.float32)
        k(o)
        torch.cuda.synchronize()
        t = h.time(lambda k=k, o=o: k(o))  # ms
        macs_sm = cons * iters * 64 * n * 128  # one block an SM
        res["tensor_only"][name] = {"iters": iters, "us": round(t * 1e3, 3), "sms": sms,
                                    "macs_per_sm_cycle_at_1.98GHz": round(macs_sm / (t * 1e-3 * 1.98e9), 1)}
        print(name, json.dumps(res["tensor_only"][name]), flush=True)
        json.dump(res, open(out, "w"), indent=1)
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
