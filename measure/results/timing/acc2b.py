"""acc2b: acc2's question with the slot count held fixed: the lag form at 8 and at 10 activation slots, each with one
and with two accumulators (``accs=2``), beside 256-k stages without lag (lagd's checks and searches: ragged M = 50 and
the shape with a poisoned output, again after 30 launches; two write-flush searches and one clean, 7 alternating
rounds, cuBLAS on the fp16 weights)."""
import sys
from kernels.gemm.w4a16 import config
from measure.suites.gemm.flush import W4A16_WINNERS
import lagd

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
CANDS = {64: [W4A16_WINNERS[(64, N, K)], config(64, 128, 8, stages_w=8, lag=True, accs=2, **W),
              config(64, 128, 10, stages_w=8, lag=True, **W), config(64, 128, 10, stages_w=8, lag=True, accs=2, **W),
              config(64, 256, 4, stages_w=8, **W)]}
MODES = ("write", "write", "clean")

if __name__ == "__main__":
    lagd.main(sys.argv[1], CANDS, lagd.RAGGED, MODES, name="acc2b")
