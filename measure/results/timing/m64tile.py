"""m64tile: the load path alone (``loadonly``) with the weights repacked so that each stage's tile is one contiguous
run (``tiled``) against the row-strided tiles (64 runs of block_K/2 bytes, 4 KB apart), on the one-ring producer that
``tiled`` is written for, at M = 64 and M = 16; and the M = 16 kernel of gemm.flush (post on mma.sync) whole and as
``loadonly`` beside its tiled twin.  The whole kernels are checked against the fp32 reference first.  Two
write-flush searches and one clean, 7 alternating rounds, cuBLAS beside them."""
import json, sys
from kernels.gemm.w4a16 import build, config, label
from measure.suites.gemm.flush import W4A16_WINNERS
import probekit

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
W16 = W4A16_WINNERS[(16, N, K)]
W16T = {**W16, "tiled": True}
PARTS = {64: [(config(64, 256, 4, **W), "loadonly"), (config(64, 256, 4, tiled=True, **W), "loadonly"),
              (config(64, 128, 8, **W), "loadonly"), (config(64, 128, 8, tiled=True, **W), "loadonly"),
              (config(64, 128, 8, tiled=True, **W), ""), (W4A16_WINNERS[(64, N, K)], "")],
         16: [(W16, ""), (W16T, ""), (W16, "loadonly"), (W16T, "loadonly")]}
MODES = ("write", "write", "clean")


def main(out):
    built = {(M, label(c), p): build(M, N, K, 128, c, probe=p) for M, cs in PARTS.items() for c, p in cs}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(errors={}, searches={})
    for rep, mode in enumerate(MODES):
        cc = {}
        for M, cs in PARTS.items():
            cc.update(probekit.shape_candidates(h, res, M, N, K, cs, built, rep, prefix=f"M={M} "))
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: m64tile #{rep}", cc, mode, out)
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)

if __name__ == "__main__":
    main(sys.argv[1])
