"""The subnormal expansion (``den``) against its ``post`` twins, the bench winners and cuBLAS at M = 1, 16, 64,
under both L2 flushes, alternating rounds; every kernel checked first against the fp32 reference (poisoned
output, fresh inputs, and a ragged M)."""
import json, os, sys, time
import torch
from measure.harness import Harness
from measure.suites.gemm.w4a16 import make_inputs
from measure.suites.gemm.flush import W4A16_WINNERS
from measure.suites.gemm.common import rel_fro_err
from kernels.gemm.w4a16 import build, config, kernel_weights, label

N = K = 8192


def _twins(bm, bk, st, **kw):
    post = config(bm, bk, st, inst="mma", chunk=128, wide=True, perm=True, post=True, **kw)
    return [post, {**post, "den": True}]


CANDS = {
    1: [W4A16_WINNERS[(1, N, K)], *_twins(16, 256, 8), *_twins(16, 256, 12), *_twins(16, 256, 12, tiled=True)],
    16: [W4A16_WINNERS[(16, N, K)], *_twins(16, 256, 12), *_twins(16, 256, 12, tiled=True),
         *_twins(16, 256, 8, consumers=4)[1:]],
    64: [W4A16_WINNERS[(64, N, K)], *_twins(64, 256, 4)[:1], *_twins(64, 128, 6)[1:], *_twins(64, 128, 4)[1:]],
}
CANDS[16] = [CANDS[16][0], {**CANDS[16][0], "den": True}, *CANDS[16][1:]]
RAGGED = {13: config(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True, den=True),
          50: config(64, 128, 6, inst="mma", chunk=128, wide=True, perm=True, post=True, den=True)}


def thunks():
    from measure.search import par_build
    th = {f"{label(c)}@{M}": (lambda M=M, c=c: build(M, N, K, 128, c)) for M, cs in CANDS.items() for c in cs}
    th.update({f"{label(c)}@{M}": (lambda M=M, c=c: build(M, N, K, 128, c)) for M, c in RAGGED.items()})
    return par_build(th, workers=int(os.environ.get("WORKERS", "2")))


if __name__ == "__main__":
    out = sys.argv[1]
    built = thunks()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    h = Harness(log=print)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "commit": os.environ.get("COURSE_GIT_COMMIT"),
           "rounds": 7, "errors": {}, "failed": {}, "searches": {}}
    t0 = time.time()
    for M, cfg in RAGGED.items():
        a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
        ref = torch.matmul(a.float(), w16.float().t())
        c = h.poisoned((M, N), torch.float16)
        built[f"{label(cfg)}@{M}"]["kernel"](a, kernel_weights(packed, cfg), scales, c)
        torch.cuda.synchronize()
        res["errors"][f"ragged {label(cfg)}@{M}"] = e = rel_fro_err(c, ref)
        print("ragged", M, label(cfg), e, flush=True)
    for M, cs in CANDS.items():
        a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
        ref = torch.matmul(a.float(), w16.float().t())
        cands, ws = {}, {}
        for cfg in cs:
            lab = label(cfg)
            b = built[f"{lab}@{M}"]
            if b["error"]:
                res["failed"][f"{lab}@{M}"] = str(b["error"])[:300]
                continue
            k = b["kernel"]
            key = (cfg["split"], cfg["block_K"] if cfg.get("tiled") else 0, bool(cfg.get("perm")), bool(cfg.get("den")))
            w = ws.setdefault(key, kernel_weights(packed, cfg))
            c = h.poisoned((M, N), torch.float16)
            try:
                k(a, w, scales, c)
                torch.cuda.synchronize()
            except Exception as ex:  # noqa: BLE001
                res["failed"][f"{lab}@{M}"] = repr(ex)[:300]
                continue
            res["errors"][f"{lab}@{M}"] = e = rel_fro_err(c, ref)
            print("check", M, lab, e, flush=True)
            if not e < 1e-2:
                res["failed"][f"{lab}@{M}"] = f"error {e}"
                continue
            cands[lab] = (lambda k=k, a=a, w=w, s=scales, c=c: k(a, w, s, c))
        cands["cuBLAS fp16 weights"] = lambda a=a, w=w16: torch.matmul(a, w.t())
        for mode in ("write", "clean"):
            h.protocol["flush_mode"] = mode
            best, ms = h.search(f"{mode} flush: w4a16 {M}x{N}x{K}", cands, rounds=7)
            res["searches"][f"{mode} {M}"] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
            print(mode, M, best, f"{time.time() - t0:.0f}s", json.dumps(res["searches"][f"{mode} {M}"]), flush=True)
            json.dump(res, open(out, "w"), indent=1)
        del a, packed, scales, w16, ref, cands, ws
        torch.cuda.empty_cache()
    json.dump(res, open(out, "w"), indent=1)
