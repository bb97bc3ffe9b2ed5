"""c2m64: at M = 64, the activation tile shared by a cluster of blocks through a TMA multicast (``cluster``).

With ``split="k"`` each of the 128 blocks owns 64 weight rows and reads the whole 64 x 8192 activation matrix: 1 MB a
block, 128 MB through L2 against 32 MB of int4 weights from DRAM.  A cluster of 2 (4) neighbouring blocks loads each
activation stage once and multicasts it, halving (quartering) that traffic, at the price of a stage released only
when the consumers of every block in the cluster are done with it.  The two forms that have led at M = 64 (the lag
form ``gemm.flush`` times, and 256-k stages without lag), each alone and in clusters of 2, the lag form also of 4,
and cuBLAS on the fp16 weights.  Same checks as lagd (ragged M = 50 and the shape, poisoned outputs, again after 30
launches); two write-flush searches and one clean, 7 alternating rounds each (lagd's ``main``)."""
import sys
from kernels.gemm.w4a16 import config
from measure.suites.gemm.flush import W4A16_WINNERS
import lagd

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
CANDS = {64: [W4A16_WINNERS[(64, N, K)], config(64, 128, 8, stages_w=8, lag=True, cluster=2, **W),
              config(64, 128, 8, stages_w=8, lag=True, cluster=4, **W),
              config(64, 256, 4, stages_w=8, **W), config(64, 256, 4, stages_w=8, cluster=2, **W)]}
MODES = ("write", "write", "clean")

if __name__ == "__main__":
    lagd.main(sys.argv[1], CANDS, lagd.RAGGED, MODES, name="c2m64")
