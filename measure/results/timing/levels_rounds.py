"""Two levels of the same kernel in alternating rounds: 15 rounds of the M = 16 bench winner, the best
four-consumer kernel and cuBLAS (the suite's protocol), then again on freshly allocated copies of the inputs."""
import json, os, sys, torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from kernels.gemm.w4a16 import build, config as _c, kernel_weights, label
h = Harness("cuda", log=lambda s: None)
M, N, K = 16, 8192, 8192
cfgs = [_c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True), _c(16, 256, 12, wide=True, consumers=4, perm=True)]
out = {}
for trial in range(2):
    a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
    fns = {}
    for cfg in cfgs:
        k = build(M, N, K, 128, cfg); w = kernel_weights(packed, cfg); c = torch.empty((M, N), dtype=torch.float16, device="cuda")
        fns[label(cfg)] = (lambda k=k, w=w, c=c: k(a, w, scales, c))
    fns["cuBLAS"] = lambda: torch.matmul(a, w16.t())
    rounds = {n: [] for n in fns}
    names = list(fns)
    for r in range(15):
        for n in (names if r % 2 == 0 else names[::-1]):
            rounds[n].append(round(h.time(fns[n]) * 1e3, 2))
    out[f"trial{trial}"] = rounds
    print(trial, json.dumps(rounds), flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "modes.json"), "w"), indent=1)
