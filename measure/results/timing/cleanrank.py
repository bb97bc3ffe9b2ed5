"""The run44 top twelve W4A16 candidates at M = 1 and M = 16, searched again under both L2 flushes
(write = the protocol's, clean = the write then a read of a second 256 MB buffer) beside cuBLAS, and the
M = 16 bench winner split by its probes (load path alone; load path and tensor-core work, no expansion)."""
import json, os, sys, time
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import CANDIDATES, make_inputs
from measure.suites.gemm.common import rel_fro_err
from kernels.gemm.w4a16 import build, kernel_weights, label

TOP = {1: ["m16_k256_s12_k_q4_tl_il_wd", "m16_k256_s12_k_mma_x128_q4_tl_il_po_wd", "m16_k256_s12_k_mma_x128_q4_il_po_wd",
           "m16_k256_s12_k_q4_il_wd", "m16_k256_s12_k_mma_x128_tl_il_po_wd", "m16_k512_s6_k_mma_il_wd",
           "m16_k256_s8_k_mma_x128_il_po_wd", "m16_k256_s12_k_mma_q4_il_wd", "m16_k512_s6_k_tl_il_wd",
           "m16_k256_s12_k_mma_x128_il_po_wd", "m16_k512_s6_k_il_wd", "m16_k512_s6_k_mma_x128_il_po_wd"],
       16: ["m16_k256_s8_k_mma_x128_il_po_wd", "m16_k256_s12_k_mma_x128_tl_il_po_wd", "m16_k256_s12_k_mma_x128_il_po_wd",
            "m16_k256_s12_k_q4_il_wd", "m16_k512_s6_k_il_wd", "m16_k512_s6_k_mma_x128_il_po_wd",
            "m16_k256_s12_k_mma_x128_q4_tl_il_po_wd", "m16_k256_s12_k_q4_tl_il_wd", "m16_k256_s12_k_mma_x128_q4_il_po_wd",
            "m16_k512_s6_k_mma_x128_tl_il_po_wd", "m16_k512_s6_k_tl_il_wd", "m16_k256_s8_k_mma_x128_q4_il_po_wd"]}
PROBED = "m16_k256_s8_k_mma_x128_il_po_wd"
BY = {label(c): c for c in CANDIDATES["decode"]}


def thunks():
    from measure.search import par_build
    th = {f"{lab}@{M}": (lambda M=M, c=BY[lab]: build(M, 8192, 8192, 128, c)) for M, labs in TOP.items() for lab in labs}
    for p in ("loadonly", "mmaonly"):
        th[f"{p}@16"] = (lambda p=p: build(16, 8192, 8192, 128, BY[PROBED], probe=p))
    return par_build(th, workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 5, "errors": {}, "searches": {}}
    t0 = time.time()
    for M, labs in TOP.items():
        a, packed, scales, w16 = make_inputs(h, M, 8192, 8192, 128)
        ref = torch.matmul(a.float(), w16.float().t())
        cands, tiles = {}, {}
        for lab in labs:
            k, cfg = built[f"{lab}@{M}"]["kernel"], BY[lab]
            key = (cfg["split"], cfg["block_K"] if cfg.get("tiled") else 0, bool(cfg.get("perm")))
            w = tiles.setdefault(key, kernel_weights(packed, cfg))
            c = h.poisoned((M, 8192), torch.float16)
            k(a, w, scales, c)
            res["errors"][f"{lab}@{M}"] = e = rel_fro_err(c, ref)
            assert e < 1e-2, (lab, M, e)
            cands[lab] = (lambda k=k, a=a, w=w, s=scales, c=c: k(a, w, s, c))
        cands["cuBLAS fp16 weights"] = lambda a=a, w=w16: torch.matmul(a, w.t())
        if M == 16:
            probes = dict(full=cands[PROBED])
            w = tiles[(BY[PROBED]["split"], 0, True)]
            for p in ("loadonly", "mmaonly"):
                cp = torch.empty((M, 8192), dtype=torch.float16, device="cuda")
                probes[p] = (lambda k=built[f"{p}@16"]["kernel"], a=a, w=w, s=scales, c=cp: k(a, w, s, c))
        for mode in ("write", "clean"):
            h.protocol["flush_mode"] = mode
            best, ms = h.search(f"{mode} flush: w4a16 {M}x8192x8192", cands, rounds=5)
            res["searches"][f"{mode} {M}"] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
            if M == 16:
                _, pm = h.search(f"{mode} flush: probes {PROBED}", probes, rounds=5)
                res["searches"][f"{mode} probes"] = {k: round(v * 1e3, 3) for k, v in pm.items()}
            print(mode, M, best, f"{time.time() - t0:.0f}s", flush=True)
        del a, packed, scales, w16, ref, cands, tiles
        torch.cuda.empty_cache()
    for k, v in res["searches"].items():
        print(k, json.dumps(v)[:600])
    json.dump(res, open(out, "w"), indent=1)
