"""m64load: the load path alone (the module's ``loadonly`` probe: the consumers only wait for each stage and release
it) at M = 64 in the forms that move fewer activation bytes through L2, beside the same at M = 16.

With ``split="k"`` each of the 128 blocks owns 64 weight rows and reads all of the 64 x 8192 activations: 128 MB
through L2 at M = 64 beside 32 MB of int4 weights from DRAM (at M = 16, 32 MB).  ``kpair`` (two blocks of a cluster on
128 weight rows, each on half of K) and a two-block TMA multicast (``cluster=2``) halve the activation traffic.  If
the load path at M = 64 is bound by that traffic, these forms' load paths are faster; the probe's results are wrong
by design and only timed.  Two write-flush searches and one clean, 7 alternating rounds, cuBLAS beside them."""
import json, os, sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights, label

N = K = 8192
W = dict(wide=True, perm=True, fuse=True)
FORMS = {64: [config(64, 256, 4, stages_w=8, **W), config(64, 256, 4, stages_w=8, cluster=2, **W),
              config(64, 256, 4, stages_w=8, cluster=4, **W),
              config(64, 256, 3, "n", stages_w=4, kpair=True, **W), config(64, 128, 8, stages_w=8, **W)],
         16: [config(16, 256, 4, stages_w=8, **W), config(16, 256, 8, stages_w=8, **W)]}
MODES = ("write", "write", "clean")


def main(out):
    built = {(M, label(c)): build(M, N, K, 128, c, probe="loadonly") for M, cs in FORMS.items() for c in cs}
    if out == "--prebuild":
        return
    from measure.harness import Harness
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "probe": "loadonly", "searches": {}}
    for rep, mode in enumerate(MODES):
        cc = {}
        for M, cs in FORMS.items():
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            for c in cs:
                k, w, o = built[(M, label(c))], kernel_weights(packed, c), h.poisoned((M, N), torch.float16)
                cc[f"M={M} {label(c)}:loadonly"] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
            cc[f"M={M} cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush: m64load #{rep}", cc, rounds=7)
        res["searches"][f"{mode} #{rep}"] = {"us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
        print(mode, rep, json.dumps(res["searches"][f"{mode} #{rep}"]), flush=True)
        json.dump(res, open(out, "w"), indent=1)
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
