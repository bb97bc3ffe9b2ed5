"""den at M = 16: where its time goes (probes), beside post, both flushes, alternating rounds."""
import json, os, sys, time
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config, kernel_weights, label

N = K = 8192
POST = config(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True)
DEN = {**POST, "den": True}
ROWS = [("post", POST, ""), ("post loadonly", POST, "loadonly"), ("post mmaonly", POST, "mmaonly"),
        ("den", DEN, ""), ("den noasum", DEN, "noasum"), ("den mmaonly", DEN, "mmaonly"), ("den loadonly", DEN, "loadonly")]


def thunks():
    from measure.search import par_build
    return par_build({n: (lambda c=c, p=p: build(16, N, K, 128, c, probe=p)) for n, c, p in ROWS},
                     workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    h = Harness(log=print)
    a, packed, scales, w16 = make_inputs(h, 16, N, K, 128)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "searches": {}}
    cands = {}
    for n, c, p in ROWS:
        w = kernel_weights(packed, c)
        o = torch.empty((16, N), dtype=torch.float16, device="cuda")
        cands[n] = (lambda k=built[n]["kernel"], w=w, o=o: k(a, w, scales, o))
    for mode in ("write", "clean"):
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush: den probes", cands, rounds=7)
        res["searches"][mode] = {k: round(v * 1e3, 3) for k, v in ms.items()}
        print(mode, json.dumps(res["searches"][mode]), flush=True)
    json.dump(res, open(out, "w"), indent=1)
