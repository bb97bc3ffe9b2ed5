"""Stream-K's separate fix-up with its sum written by hand (``fix_vec``: sksp::reduce_rows, a thread loads the same
four columns of every piece into registers before adding, all loads in flight at once) against the generated fix-up
(a loop over the pieces, one L2 wait per piece), on the three stream-K shapes, at 4, 8 and 16 rows of a tail tile
per block, also launched as a programmatic dependent; on the awkward shape also the stream-K kernel alone (no fix-up:
what any fix-up adds to), the full-wave tiling, the data-parallel tiling and cuBLAS.  Every candidate is checked
against the fp32 reference (poisoned output, written twice), also at small extra plans; then alternating rounds
(Harness.search, 7 rounds) under the write and the clean flush, two fresh input sets."""
import json, os, sys
import torch
from kernels.gemm.streamk import build_ws, make_ws_runner, ws_config as _c, ws_label as label, ws_schedule
from kernels.gemm.ladder import build_tuned
from kernels.gemm.splitk import build_ws as build_splitk, make_ws_runner as make_splitk_runner
from measure.suites.gemm.splitk_ws import NO_SPLIT
from measure.suites.gemm.streamk_ws import FULL_WAVE, SPLITK_BEST
from measure.suites.gemm.common import rel_fro_err, screen_workspace_candidates

SHAPES = {
    (1536, 1536, 8192): [_c(128, 5, 64, -1, panel=0), _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=8),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=16),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4, pdl=True),
                         _c(128, 5, 64, -1), _c(128, 5, 64, -1, fix_vec=True, fix_rows=4),
                         _c(256, 4, 64, 0, panel=0), _c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=4)],
    (1024, 1024, 16384): [_c(256, 4, 64, 0, panel=0), _c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=4),
                          _c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=8)],
    (2048, 2048, 8192): [_c(256, 4, 64, 0), _c(256, 4, 64, 0, fix_vec=True, fix_rows=4),
                         _c(128, 5, 64, -1, panel=0), _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4)],
}
ALONE = _c(128, 5, 64, -1, panel=0)  # its stream-K kernel timed alone on the awkward shape
EXTRA_PLANS = [(384, 768, 1024, _c(256, 4, 64, 0, fix_vec=True, fix_rows=4)),
               (1024, 512, 4096, _c(128, 5, 64, 0, fix_vec=True, fix_rows=8)),
               (2048, 1024, 2048, _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=16)),
               (128, 128, 64 * 200, _c(128, 5, 64, 0, fix_vec=True, fix_rows=4))]


def build_all():
    built, err = {}, {}
    for S, cands in SHAPES.items():
        for c in cands:
            try:
                built[f"{label(c)}@{S[0]}"] = build_ws(*S, c, 132)
            except Exception as e:  # noqa: BLE001
                err[f"{label(c)}@{S[0]}"] = repr(e)[:300]
    for M, N, K, c in EXTRA_PLANS:
        try:
            built[f"{label(c)}@{M}x{N}x{K}"] = build_ws(M, N, K, c, 132)
        except Exception as e:  # noqa: BLE001
            err[f"{label(c)}@{M}x{N}x{K}"] = repr(e)[:300]
    built["dp@1536"] = build_tuned(1536, 1536, 8192, NO_SPLIT, 132)
    built["full-wave@1536"] = build_tuned(1536, 1536, 8192, FULL_WAVE, 132)
    built["splitk@1024"] = build_splitk(1024, 1024, 16384, SPLITK_BEST, 132)
    return built, err


if __name__ == "__main__":
    out = sys.argv[1]
    built, err = build_all()
    print("build errors", err, flush=True)
    if out == "--prebuild":
        sys.exit(0)
    from measure.harness import Harness
    h = Harness(log=print)
    torch.backends.cuda.matmul.allow_tf32 = False
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert sms == 132, sms
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms, "build_errors": err,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "errors": {}, "rejected": {}, "searches": {}}
    for M, N, K, c in EXTRA_PLANS:  # correctness only, twice into one poisoned output
        a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        fn = make_ws_runner(a, b, c, sms)
        o = h.poisoned((M, N), torch.float16)
        fn(o); fn(o)
        torch.cuda.synchronize()
        e = rel_fro_err(o, ref)
        res["errors"][f"{label(c)} {M}x{N}x{K}"] = e
        print("extra", M, N, K, label(c), e, flush=True)
        assert e < 1e-2, (label(c), e)
    json.dump(res, open(out, "w"), indent=1)
    for S, cands in SHAPES.items():
        M, N, K = S
        for rep in range(2):
            a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
            ref = torch.matmul(a.float(), b.float().t())
            cc, rejected = screen_workspace_candidates(
                cands, label, lambda cfg: {"kernel": built.get(f"{label(cfg)}@{M}"), "error": err.get(f"{label(cfg)}@{M}")},
                lambda cfg: make_ws_runner(a, b, cfg, sms), lambda: h.poisoned((M, N), torch.float16), ref)
            res["rejected"][f"{M} #{rep}"] = rejected
            print("rejected", rejected, flush=True)
            outs = {}
            for lab in list(cc):
                cfg = next(c for c in cands if label(c) == lab)
                f = make_ws_runner(a, b, cfg, sms)
                o = h.poisoned((M, N), torch.float16)
                f(o)
                outs[lab] = o
                cc[lab] = (lambda f=f, o=o: f(o))
            if M == 1536:
                g, _ = built[f"{label(ALONE)}@1536"]
                s = ws_schedule(M, N, K, 128, 64, sms, -1)
                w = torch.empty((s.slots * 128, 128), dtype=torch.float32, device="cuda")
                o_alone = h.poisoned((M, N), torch.float16)
                cc["stream-K kernel alone (no fix-up)"] = (lambda g=g, o=o_alone, w=w: g(a, b, o, w))
                for nm in ("dp", "full-wave"):
                    k = built[f"{nm}@1536"]
                    o = h.poisoned((M, N), torch.float16)
                    k(a, b, o); k(a, b, o)
                    assert rel_fro_err(o, ref) < 1e-2, nm
                    outs[nm] = o
                    cc[nm] = (lambda k=k, o=o: k(a, b, o))
            if M == 1024:
                sp = make_splitk_runner(a, b, SPLITK_BEST, sms)
                o = h.poisoned((M, N), torch.float16)
                sp(o)
                assert rel_fro_err(o, ref) < 1e-2
                outs["split-K"] = o
                cc["split-K"] = (lambda o=o: sp(o))
            cc["cuBLAS"] = lambda: torch.matmul(a, b.t())
            for mode in ("write", "clean"):
                h.protocol["flush_mode"] = mode
                best, ms = h.search(f"{mode} flush {M} #{rep}", cc, rounds=7)
                key = f"{M} {mode} #{rep}"
                res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 2) for k, v in ms.items()}}
                print(key, json.dumps(res["searches"][key]), flush=True)
                json.dump(res, open(out, "w"), indent=1)
            for lab, o in outs.items():  # the output of the last timed launch
                e = rel_fro_err(o, ref)
                res["errors"][f"{lab} {M} #{rep} after timing"] = e
                assert e < 1e-2, (lab, e)
            del a, b, ref
            torch.cuda.empty_cache()
    json.dump(res, open(out, "w"), indent=1)
