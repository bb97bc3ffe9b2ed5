"""lagd: at M = 64, two stages' wgmma left running (``lag=2``: three register buffers a consumer, each activation
slot freed two of its consumer's stages late) against the gemm.flush kernel (``lag``: one left running, two buffers),
at eight and ten activation slots, beside run59's winner (256-k stages, no lag) and cuBLAS on the fp16 weights.
Every kernel checked first against the fp32 reference with a poisoned output at a ragged M and at the shape, and
again after 30 more launches; then three searches on fresh inputs, 7 alternating rounds, under the write flush, and
one under the clean flush."""
import json, sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS
import probekit

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
CANDS = {64: [W4A16_WINNERS[(64, N, K)], config(64, 128, 10, stages_w=8, lag=True, **W),
              config(64, 128, 8, stages_w=8, lag=2, **W), config(64, 128, 10, stages_w=8, lag=2, **W),
              config(64, 256, 4, stages_w=8, **W)]}
RAGGED = {64: 50}
MODES = ("write", "write", "write", "clean")

def main(out, CANDS=CANDS, RAGGED=RAGGED, MODES=MODES, name="lagd", first=None):
    """Checks and searches of ``CANDS`` (the probe as it ran; ``c2m64`` passes its own forms); ``first(h, res)``, if
    given, runs before them (more checks, recorded in the same ``res``)."""
    built = {}
    for M, cs in CANDS.items():
        for c in cs:
            for m in (M, RAGGED[M]):
                built[f"{label(c)}@{m}"] = build(m, N, K, 128, c)
    if out == "--prebuild":
        return
    from measure.harness import Harness
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = probekit.header(errors={}, searches={})
    if first is not None:
        first(h, res)
    for M, cs in CANDS.items():
        r = RAGGED[M]
        a, packed, scales, w16 = make_inputs(h, r, N, K, 128)
        for c in cs:
            o = h.poisoned((r, N), torch.float16)
            built[f"{label(c)}@{r}"](a, kernel_weights(packed, c), scales, o)
            res["errors"][f"{label(c)} ragged {r}"] = rel_fro_err(o, torch.matmul(a.float(), w16.float().t()))
        for rep, mode in enumerate(MODES):
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            ref = torch.matmul(a.float(), w16.float().t())
            cc = {}
            for c in cs:
                lab, k, w = label(c), built[f"{label(c)}@{M}"], kernel_weights(packed, c)
                o = h.poisoned((M, N), torch.float16)
                k(a, w, scales, o)
                e1 = rel_fro_err(o, ref)
                for _ in range(30):
                    k(a, w, scales, o)
                torch.cuda.synchronize()
                res["errors"][f"{lab} @{M} #{rep}"] = e = max(e1, rel_fro_err(o, ref))
                if e < 1e-2 and res["errors"][f"{lab} ragged {r}"] < 1e-2:
                    cc[lab] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
            cc["cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
            probekit.flush_search(h, res, f"M={M} {mode} #{rep}", f"{mode} flush: {name} at M={M} #{rep}", cc, mode,
                                  out)
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
