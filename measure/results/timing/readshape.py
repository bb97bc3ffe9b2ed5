"""readshape: where the M = 64 load path loses against the plain read, walked one step at a time.  ``readhot``
(H100) found the M = 64 rings 4.9-5.3 us above the plain read of the weights' bytes, about half of it the
activations' bytes through L2 and half the rings' shape.  Here, in the same rounds: the plain read (132 blocks); the
same with M = 64's activation bytes in the ring (``plain_read_hot``, four slots) at 132 and at 128 blocks (the
kernel's grid: one block per 64 weight rows); the kernel's own operands in its own tiles (``plain_read_tiles``:
two-dimensional tensor copies into swizzled shared memory, 256-k stages x 4 and 128-k x 8, one ``T.Pipelined``
ring, 128 blocks); the same reads with 128 weight rows a block over half of K (``kpair``'s, which halve the
activations' trip, but without a cluster) and the load path of ``kglob``, the kernel form that reads so; and the kernel's load paths (``loadonly``: its warp-specialized rings, a weight ring of 8 slots
beside the activation ring), with cuBLAS at M = 64.  Each step's difference names one cost: the grid, the tiles'
shape, the activations' trip without a cluster, the kernel's two rings.  Every reader's sums are checked against torch's first.  Write flush, then clean;
each search is written out as it ends."""
import sys
import torch
from kernels.gemm.plainread import (WORDS, check_hot_config, hot_checksum, plain_read, plain_read_hot,
                                    plain_read_tiles, read_checksum, read_rows, tiles_checksum)
from kernels.gemm.w4a16 import build, config, label
from ledger.w4a16 import weight_bytes
import probekit
import readhot

M, N, K, GROUP = 64, 8192, 8192, 128
ROWS = read_rows(weight_bytes(N, K))
#: the kernel's M = 64 load paths (``m64loadr``'s two) and that of ``kglob`` (128 rows a block over half of K, 256-k)
FORMS = readhot.FORMS + [config(64, 256, 3, "n", stages_w=4, kglob=True, **readhot.W)]
#: name -> ("read", blocks, slots) | ("hot", blocks, slots) | ("tiles", block_K, slots, rows, ksplit)
READERS = {"read, 132 blocks, 8 KB x 8": ("read", 132, 8),
           "read + M = 64's activation bytes, 132 blocks, 4 slots": ("hot", 132, 4),
           "read + M = 64's activation bytes, 128 blocks, 4 slots": ("hot", 128, 4),
           "the kernel's tiles, 256-k x 4": ("tiles", 256, 4, 64, 1),
           "the kernel's tiles, 128-k x 8": ("tiles", 128, 8, 64, 1),
           "128 rows a block over half of K (kpair's reads, no cluster), 128-k x 8": ("tiles", 128, 8, 128, 2)}
MODES = ("write", "clean")


def reader(kind, a, b, rows=64, ksplit=1):
    if kind == "read":
        return plain_read(ROWS, a, 64, b)
    if kind == "hot":
        return plain_read_hot(ROWS, a, 4, 64, b)
    return plain_read_tiles(M, N, K, GROUP, a, b, rows, ksplit)


def main(out):
    built = {(M, label(c), "loadonly"): build(M, N, K, GROUP, c, probe="loadonly") for c in FORMS}
    kerns = {n: reader(*x) for n, x in READERS.items()}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(probe="loadonly", searches={}, checks={}, readers={n: list(x) for n, x in READERS.items()})
    rnd = lambda *shape: torch.randint(-2**31, 2**31 - 1, shape, dtype=torch.int32, device="cuda")  # noqa: E731
    X = rnd(ROWS, WORDS)
    Wq, A, S = rnd(N, K // 8), rnd(M, K // 2), rnd(N, K // GROUP // 2)
    runs = {}
    for n, (kind, a, b, *rk) in READERS.items():
        k = kerns[n]
        rows, ksplit = rk or (64, 1)
        o = torch.full((N // rows * ksplit if kind == "tiles" else a, rows), 12345, dtype=torch.int32, device="cuda")
        if kind == "read":
            args, want = (X, o), read_checksum(X)
        elif kind == "hot":
            H = rnd(check_hot_config(ROWS, a, 4, 64, b), WORDS)
            args, want = (X, H, o), hot_checksum(X, H, a)
        else:
            args, want = (Wq, A, S, o), tiles_checksum(Wq, A, S, rows)
        k(*args)
        torch.cuda.synchronize()
        res["checks"][n] = ok = read_checksum(o) == want
        if ok:
            runs[n] = (lambda k=k, args=args: k(*args))
    for rep, mode in enumerate(MODES):
        cc = dict(runs)
        cc.update(probekit.shape_candidates(h, res, M, N, K, [(c, "loadonly") for c in FORMS], built, rep,
                                            prefix="M=64 "))
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: readshape #{rep}", cc, mode, out)


if __name__ == "__main__":
    main(sys.argv[1])
