"""q4m64: at M = 64, four consumer warpgroups taking the 128-k blocks in turn (``consumers=4``) on the interleaved
expansion with one lop3 per pair (``perm``, ``fuse``), against the gemm.flush kernel (lag), run59's search winner
(256-k stages, 4 + 8 slots) and cuBLAS on the fp16 weights.  The profile of the M = 64 kernels found no unit
saturated (tensor pipe ~50 % of the active cycles, shared-memory pipe ~45 %, DRAM ~35 %) and the warps stalled on
latencies: twice the consumer warps is the remedy this probe measures.  Every kernel checked first against the fp32
reference with a poisoned output at a ragged M and at the shape, and again after 30 more launches; then three
searches on fresh inputs, 7 alternating rounds, under the write flush, and one under the clean flush."""
import json, os, sys
import torch
from kernels.gemm.w4a16 import build, config, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS

N = K = 8192
M, RAGGED = 64, 50
W = dict(wide=True, perm=True, fuse=True)
CANDS = [W4A16_WINNERS[(M, N, K)], config(M, 256, 4, stages_w=8, **W),
         config(M, 128, 8, consumers=4, **W), config(M, 128, 8, consumers=4, tiled=True, **W)]
# (256-k stages with four consumers spill 448 bytes at the 96 registers of a 640-thread launch: not built)
MODES = ("write", "write", "write", "clean")

if __name__ == "__main__":
    out = sys.argv[1]
    built = {}
    for c in CANDS:
        for m in (M, RAGGED):
            built[f"{label(c)}@{m}"] = build(m, N, K, 128, c)
    if out == "--prebuild":
        sys.exit(0)
    from measure.harness import Harness
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "searches": {}}
    a, packed, scales, w16 = make_inputs(h, RAGGED, N, K, 128)
    for c in CANDS:
        o = h.poisoned((RAGGED, N), torch.float16)
        built[f"{label(c)}@{RAGGED}"](a, kernel_weights(packed, c), scales, o)
        res["errors"][f"{label(c)} ragged {RAGGED}"] = rel_fro_err(o, torch.matmul(a.float(), w16.float().t()))
    for rep, mode in enumerate(MODES):
        a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
        ref = torch.matmul(a.float(), w16.float().t())
        cc = {}
        for c in CANDS:
            lab, k, w = label(c), built[f"{label(c)}@{M}"], kernel_weights(packed, c)
            o = h.poisoned((M, N), torch.float16)
            k(a, w, scales, o)
            e1 = rel_fro_err(o, ref)
            for _ in range(30):
                k(a, w, scales, o)
            torch.cuda.synchronize()
            res["errors"][f"{lab} @{M} #{rep}"] = e = max(e1, rel_fro_err(o, ref))
            if e < 1e-2 and res["errors"][f"{lab} ragged {RAGGED}"] < 1e-2:
                cc[lab] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
        cc["cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush: q4m64 #{rep}", cc, rounds=7)
        key = f"M={M} {mode} #{rep}"
        res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
        print(key, json.dumps(res["searches"][key]), flush=True)
        json.dump(res, open(out, "w"), indent=1)
        h.protocol["flush_mode"] = "write"
    print(json.dumps(res["errors"]))
    json.dump(res, open(out, "w"), indent=1)
