"""acc2: at M = 64, the lag form with the two stages a consumer has in flight accumulating into two fp32 accumulators
(``accs=2``), against gemm.flush's lag form (one accumulator) and 256-k stages without lag.

Why: m64parts timed the tensor cores alone (no memory traffic) on an H100: two consumer warpgroups each issuing
64 x 64 x 128 wgmma on one accumulator ran about 15 % slower when each left one call in flight (``wait_wgmma<1>``, the
lag form's pattern) than when each waited for its call (``wait_wgmma<0>``).  Here the same tensor-only kernel with
the calls alternating between two accumulators (m64parts's ``tensor_only`` with ``accs=2``), then the whole kernels.
Every kernel checked against the fp32 reference with a poisoned output at a ragged M and at the shape, and again after
30 more launches (lagd's checks and searches); two write-flush searches and one clean, 7 alternating rounds."""
import json, sys
import torch
from kernels.gemm.w4a16 import config
from measure.suites.gemm.flush import W4A16_WINNERS
import lagd
import m64parts
import probekit

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
CANDS = {64: [W4A16_WINNERS[(64, N, K)], config(64, 128, 8, stages_w=8, lag=True, accs=2, **W),
              config(64, 128, 10, stages_w=8, lag=True, accs=2, **W), config(64, 256, 4, stages_w=8, **W)]}
MODES = ("write", "write", "clean")
TENSOR = [(64, 2, 1, 1), (64, 2, 1, 2), (64, 2, 0, 1)]  # (n, consumers, wait, accs)


def main(out):
    tens = {f"n{n} x{c} wait{w} acc{a}": m64parts.tensor_only(n, c, w, a) for n, c, w, a in TENSOR}
    if out != "--prebuild":
        from measure.harness import Harness
        h = Harness(log=print)
        res = probekit.header(tensor_only={})
        for name, (k, iters) in tens.items():
            cons, n = int(name.split()[1][1:]), int(name.split()[0][1:])
            o = torch.empty((m64parts.BLOCKS * 64 * cons, n), device="cuda", dtype=torch.float32)
            k(o)
            torch.cuda.synchronize()
            res["tensor_only"][name] = {"iters": iters, "us": round(h.time(lambda k=k, o=o: k(o)) * 1e3, 3)}
            print(name, json.dumps(res["tensor_only"][name]), flush=True)
        json.dump(res, open(out.replace(".json", "-tensor.json"), "w"), indent=1)
    lagd.main(out, CANDS, lagd.RAGGED, MODES, name="acc2")


if __name__ == "__main__":
    main(sys.argv[1])
