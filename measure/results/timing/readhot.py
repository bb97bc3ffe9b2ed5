"""readhot: what the activations' trip through L2 costs a kernel that reads the int4 weights once.  The plain read of
the weights' and scales' bytes (:mod:`kernels.gemm.plainread`), and the same read with a hot stream beside it
(:func:`~kernels.gemm.plainread.plain_read_hot`): each block also reads a buffer of ``ratio`` times its share of the
weights, the activations' bytes of an M = 16 x ratio kernel (every block of the W4A16 kernel reads all of them),
from L2 after the first miss.  Beside them, in the same rounds, the M = 64 load paths of ``m64loadr`` and cuBLAS at
M = 64.  If the read with four hot slots a slot takes what the M = 64 load path takes, the L2 traffic is the gap
and a form that reads fewer activation bytes a weight byte without a cluster's wait is the lever; if it takes what
the plain read takes, the gap is in the kernel's rings.  Write flush first, then clean; each search is written out
as it ends.  Every reader's sums are checked before any timing."""
import sys
import torch
from kernels.gemm.plainread import (WORDS, check_hot_config, hot_checksum, plain_read, plain_read_hot, read_checksum,
                                    read_rows)
from kernels.gemm.w4a16 import build, config, label
from ledger.w4a16 import weight_bytes
import probekit

N = K = 8192
BLOCKS = 132
ROWS = read_rows(weight_bytes(N, K))
W = dict(perm=True, fuse=True, wide=True)
#: the M = 64 load paths: gemm.flush's form (128-k stages, 8 + 8 slots) and the fastest of m64loadr (256-k, 4 + 8)
FORMS = [config(64, 128, 8, stages_w=8, **W), config(64, 256, 4, stages_w=8, **W)]
#: (ratio of hot to weight bytes, slots): 0 = the plain read
READERS = [(0, 8), (0, 4), (1, 8), (1, 4), (2, 4), (4, 4)]
MODES = ("write", "clean")


def reader(ratio, slots):
    return plain_read(ROWS, BLOCKS, 64, slots) if ratio == 0 else plain_read_hot(ROWS, BLOCKS, ratio, 64, slots)


def name(ratio, slots):
    return f"read, 8 KB x {slots}" + (f", hot x{ratio} (M = {16 * ratio})" if ratio else "")


def main(out):
    built = {(64, label(c), "loadonly"): build(64, N, K, 128, c, probe="loadonly") for c in FORMS}
    kerns = {name(*x): reader(*x) for x in READERS}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(probe="loadonly", searches={}, checks={}, bytes=ROWS * WORDS * 4, blocks=BLOCKS,
                          readers={name(*x): {"ratio": x[0], "slots": x[1]} for x in READERS})
    X = h.rand((ROWS * WORDS * 2,), torch.float16).view(torch.int32).reshape(ROWS, WORDS)
    runs = {}
    for (ratio, slots), (n, k) in zip(READERS, kerns.items()):
        o = torch.full((BLOCKS, 64), 12345, dtype=torch.int32, device="cuda")
        if ratio:
            H = torch.randint(-2**31, 2**31 - 1, (check_hot_config(ROWS, BLOCKS, ratio, 64, slots), WORDS),
                              dtype=torch.int32, device="cuda")
            k(X, H, o)
            want = hot_checksum(X, H, BLOCKS)
            run = (lambda k=k, H=H, o=o: k(X, H, o))
        else:
            k(X, o)
            want = read_checksum(X)
            run = (lambda k=k, o=o: k(X, o))
        torch.cuda.synchronize()
        res["checks"][n] = ok = read_checksum(o) == want
        if ok:
            runs[n] = run
    for rep, mode in enumerate(MODES):
        cc = dict(runs)
        cc.update(probekit.shape_candidates(h, res, 64, N, K, [(c, "loadonly") for c in FORMS], built, rep,
                                            prefix="M=64 "))
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: readhot #{rep}", cc, mode, out)


if __name__ == "__main__":
    main(sys.argv[1])
