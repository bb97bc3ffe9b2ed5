"""kgparts: where ``kglob`` loses under the clean flush.  In ``kglob`` (H100) its 128-k form with ``lag`` was the
fastest M = 64 kernel under the write flush and 2.2 us slower than gemm.flush's kernel under the clean one, where the
SMs' own work, not the rings, sets the time.  Here both taken apart as ``m64parts`` did: whole, ``mmaonly`` (the rings
and the tensor-core work, no expansion), ``noexpand`` (the fragment filled from the scales alone) and, for each form's
twin without ``lag`` (the probe has no tensor-core work to leave running), ``loadonly`` (the rings alone).  The whole
kernels are checked against the fp32 reference with a poisoned output first; the probes give wrong results by design
and are only timed.  One search under the clean flush, then one under the write flush; cuBLAS beside them."""
import sys
from kernels.gemm.w4a16 import build, config, label
from measure.suites.gemm.flush import W4A16_WINNERS
import probekit

M = 64
N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
LAG = W4A16_WINNERS[(M, N, K)]
KG = config(64, 128, 8, "n", stages_w=8, lag=True, kglob=True, **W)
FORMS = [(LAG, ""), (LAG, "mmaonly"), (LAG, "noexpand"), (config(64, 128, 8, stages_w=8, **W), "loadonly"),
         (KG, ""), (KG, "mmaonly"), (KG, "noexpand"), (config(64, 128, 8, "n", stages_w=8, kglob=True, **W), "loadonly")]
MODES = ("clean", "write")


def main(out):
    built = {(M, label(c), p): build(M, N, K, 128, c, probe=p) for c, p in FORMS}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    res = probekit.header(probe="parts", searches={}, errors={})
    for rep, mode in enumerate(MODES):
        cc = probekit.shape_candidates(h, res, M, N, K, FORMS, built, rep)
        probekit.flush_search(h, res, f"{mode} #{rep}", f"{mode} flush: kgparts #{rep}", cc, mode, out)


if __name__ == "__main__":
    main(sys.argv[1])
