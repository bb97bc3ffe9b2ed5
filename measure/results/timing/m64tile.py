"""m64tile: the load path alone (``loadonly``) with the weights repacked so that each stage's tile is one contiguous
run (``tiled``) against the row-strided tiles (64 runs of block_K/2 bytes, 4 KB apart), on the one-ring producer that
``tiled`` is written for, at M = 64 and M = 16; and the M = 16 kernel of gemm.flush (post on mma.sync) whole and as
``loadonly`` beside its tiled twin.  The whole kernels are checked against the fp32 reference first.  Two
write-flush searches and one clean, 7 alternating rounds, cuBLAS beside them."""
import json, os, sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS

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
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}}
    for rep, mode in enumerate(MODES):
        cc = {}
        for M, cs in PARTS.items():
            a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
            ref = torch.matmul(a.float(), w16.float().t())
            for c, p in cs:
                k, w, o = built[(M, label(c), p)], kernel_weights(packed, c), h.poisoned((M, N), torch.float16)
                key = f"M={M} {label(c)}:{p or 'whole'}"
                k(a, w, scales, o)
                if not p:
                    torch.cuda.synchronize()
                    res["errors"][f"{key} #{rep}"] = e = rel_fro_err(o, ref)
                    if e >= 1e-2:
                        continue
                cc[key] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
            cc[f"M={M} cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush: m64tile #{rep}", cc, rounds=7)
        res["searches"][f"{mode} #{rep}"] = {"us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
        print(mode, rep, json.dumps(res["searches"][f"{mode} #{rep}"]), flush=True)
        json.dump(res, open(out, "w"), indent=1)
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
