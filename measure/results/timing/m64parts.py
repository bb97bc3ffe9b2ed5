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
import json, sys
import torch
import tilelang
import tilelang.language as T
from kernels.gemm.common import TARGET
from kernels.gemm.w4a16 import W4_PASS_CONFIGS, build, config, label
from measure.suites.gemm.flush import W4A16_WINNERS
import probekit

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

    @T.macro
    def consume(A_s, C, W, acc, accb, value, r0):
        """One consumer: its register tile, ``iters`` calls on ``acc`` (``accs=2``: in turn with ``accb``), the
        store of its 64 rows from ``r0``."""
        T.fill(W, value)
        T.clear(acc)
        if accs == 1:
            for _ in T.serial(iters):
                T.wgmma_gemm(W, A_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.wait_wgmma(wait)
        else:
            T.clear(accb)
            for _ in T.serial(iters // 2):
                T.wgmma_gemm(W, A_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.wait_wgmma(wait)
                T.wgmma_gemm(W, A_s, accb, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.wait_wgmma(wait)
            for i, j in T.Parallel(64, n):
                acc[i, j] = acc[i, j] + accb[i, j]
        T.wait_wgmma(0)
        T.copy(acc, C[r0:r0 + 64, 0:n])

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
                    consume(A_s, C, W0, acc0, acc0b, 0.01, bx * 64 * consumers)
                else:
                    T.sync_threads(barrier_id=1, arrive_count=128 * consumers)
                    consume(A_s, C, W1, acc1, acc1b, 0.02, bx * 64 * consumers + 64)

        return main

    return make(), iters


def main(out):
    built = {(64, label(c), p): build(64, N, K, 128, c, probe=p) for c, p in PARTS}
    tens = {f"n{n} x{cons} wait{w}": tensor_only(n, cons, w) for n, cons, w in TENSOR}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(errors={}, searches={}, tensor_only={})
    for rep, mode in enumerate(MODES):
        cc = probekit.shape_candidates(h, res, 64, N, K, PARTS, built, rep)
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: m64parts #{rep}", cc, mode, out)
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
