"""m64load: the load path alone (the module's ``loadonly`` probe: the consumers only wait for each stage and release
it) at M = 64 in the forms that move fewer activation bytes through L2, beside the same at M = 16.

With ``split="k"`` each of the 128 blocks owns 64 weight rows and reads all of the 64 x 8192 activations: 128 MB
through L2 at M = 64 beside 32 MB of int4 weights from DRAM (at M = 16, 32 MB).  ``kpair`` (two blocks of a cluster on
128 weight rows, each on half of K) and a two-block TMA multicast (``cluster=2``) halve the activation traffic.  If
the load path at M = 64 is bound by that traffic, these forms' load paths are faster; the probe's results are wrong
by design and only timed.  Two write-flush searches and one clean, 7 alternating rounds, cuBLAS beside them."""
import sys
from kernels.gemm.w4a16 import build, config, label
import probekit

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
FORMS = {64: [config(64, 256, 4, stages_w=8, **W), config(64, 256, 4, stages_w=8, cluster=2, **W),
              config(64, 256, 4, stages_w=8, cluster=4, **W),
              config(64, 256, 3, "n", stages_w=4, kpair=True, **W), config(64, 128, 8, stages_w=8, **W)],
         16: [config(16, 256, 4, stages_w=8, **W), config(16, 256, 8, stages_w=8, **W)]}
MODES = ("write", "write", "clean")


def main(out):
    built = {(M, label(c), "loadonly"): build(M, N, K, 128, c, probe="loadonly") for M, cs in FORMS.items() for c in cs}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(probe="loadonly", searches={})
    for rep, mode in enumerate(MODES):
        cc = {}
        for M, cs in FORMS.items():
            cc.update(probekit.shape_candidates(h, res, M, N, K, [(c, "loadonly") for c in cs], built, rep,
                                                prefix=f"M={M} "))
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: m64load #{rep}", cc, mode, out)

if __name__ == "__main__":
    main(sys.argv[1])
