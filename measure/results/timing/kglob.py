"""kglob: at M = 64, ``kpair``'s split of K (two blocks on the same 128 weight rows, each half of K, so every
activation byte that reaches an SM feeds 128 weight rows: half the activations' trip through L2) without its
cluster: the two halves meet in a global workspace, the second to arrive adding the other's fp32 partial.  ``readhot``
(H100) put about half of the M = 64 load path's gap to the plain read in the activations' bytes, and ``m64load`` /
``c2m64`` found the forms that halved them with a cluster slower.  Candidates: gemm.flush's kernel, the 256-k form
without lag, and ``kglob`` with 256-k stages (with and without lag) and 128-k stages with lag; cuBLAS beside them.
``lagd``'s checks (a ragged M and the shape, poisoned outputs, again after 30 more launches: the counters must come
back to zero) and searches: two under the write flush, one under the clean flush."""
import sys
from kernels.gemm.w4a16 import config
from measure.suites.gemm.flush import W4A16_WINNERS
import lagd

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
CANDS = {64: [W4A16_WINNERS[(64, N, K)], config(64, 256, 4, stages_w=8, **W),
              config(64, 256, 3, "n", stages_w=4, kglob=True, **W),
              config(64, 256, 4, "n", stages_w=4, lag=True, kglob=True, **W),
              config(64, 128, 8, "n", stages_w=8, lag=True, kglob=True, **W)]}
MODES = ("write", "write", "clean")

if __name__ == "__main__":
    lagd.main(sys.argv[1], CANDS=CANDS, MODES=MODES, name="kglob")
