"""m64loadr: ``m64load`` (the load path alone at M = 64 in the forms that move fewer activation bytes through L2,
and at M = 16) with the plain read of the same weights' bytes beside it (:mod:`kernels.gemm.plainread`, checked by the
sum of every word first), for the device where the M = 64 load path was found 4.2-4.4 us above that read
(``m64parts`` and ``readbound`` on the H200, 2026-12-06): which part of the gap the activations' trip is.  Two
write-flush searches and one clean, 7 alternating rounds, cuBLAS beside them."""
import sys
import torch
from kernels.gemm.plainread import WORDS, make_reader, read_checksum, read_rows
from kernels.gemm.w4a16 import build, label
from ledger.w4a16 import weight_bytes
import m64load
import probekit

N = K = 8192
BLOCKS = 132
MODES = ("write", "write", "clean")


def main(out):
    built = {(M, label(c), "loadonly"): build(M, N, K, 128, c, probe="loadonly")
             for M, cs in m64load.FORMS.items() for c in cs}
    if out == "--prebuild":
        from kernels.gemm.plainread import plain_read
        plain_read(read_rows(weight_bytes(N, K)), BLOCKS)
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(probe="loadonly", searches={}, checks={})
    nbytes = weight_bytes(N, K)
    words = h.rand((nbytes // 2,), torch.float16).view(torch.int32).reshape(read_rows(nbytes), WORDS)
    run, sums = make_reader(words, BLOCKS)
    run()
    torch.cuda.synchronize()
    res["checks"]["plain read"] = ok = read_checksum(sums) == read_checksum(words)
    for rep, mode in enumerate(MODES):
        cc = {}
        for M, cs in m64load.FORMS.items():
            cc.update(probekit.shape_candidates(h, res, M, N, K, [(c, "loadonly") for c in cs], built, rep,
                                                prefix=f"M={M} "))
        if ok:
            cc["plain read, same bytes"] = run
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: m64loadr #{rep}", cc, mode, out)


if __name__ == "__main__":
    main(sys.argv[1])
