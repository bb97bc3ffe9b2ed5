"""Stream-K's fix-up by reductions at the L2 (``red``: every tail piece adds its fp32 partial into its tile's sum with
``red.global.add.v2.f32``, the last piece to be counted casts the sum to C and zeroes it; no second kernel, nobody
waits) against the separate fix-up kernel, on the three stream-K shapes; on the awkward shape also the full-wave
tiling, the data-parallel tiling and cuBLAS.  Every candidate is checked against the fp32 reference (poisoned output,
written twice, counters and workspace left zero), also at small extra plans; then alternating rounds
(Harness.search, 7 rounds) under the write and the clean flush, two fresh input sets."""
import json, os, sys
import torch
from kernels.gemm.streamk import build_ws, make_ws_runner, ws_config as _c, ws_label as label
from kernels.gemm.ladder import build_tuned
from kernels.gemm.splitk import check_counters, build_ws as build_splitk, make_ws_runner as make_splitk_runner
from measure.suites.gemm.splitk_ws import NO_SPLIT
from measure.suites.gemm.streamk_ws import FULL_WAVE, SPLITK_BEST
from measure.suites.gemm.common import rel_fro_err, screen_workspace_candidates

SHAPES = {
    (1536, 1536, 8192): [_c(128, 5, 64, -1), _c(128, 5, 64, -1, panel=0), _c(128, 5, 64, -1, red=True),
                         _c(128, 5, 64, -1, panel=0, red=True), _c(128, 6, 64, -1, panel=0, red=True),
                         _c(128, 5, 64, -1, panel=0, red=True, tail_first=True),
                         _c(256, 4, 64, 0, panel=0), _c(256, 4, 64, 0, panel=0, red=True)],
    (1024, 1024, 16384): [_c(256, 4, 64, 0, panel=0), _c(256, 4, 64, 0, panel=0, red=True),
                          _c(256, 4, 64, 0, red=True), _c(128, 5, 64, 0, panel=0, red=True)],
    (2048, 2048, 8192): [_c(256, 4, 64, 0), _c(256, 4, 64, 0, red=True), _c(128, 5, 64, -1, panel=0, red=True)],
}
EXTRA_PLANS = [(384, 768, 1024, _c(256, 4, 64, 0, red=True)), (1024, 512, 4096, _c(128, 5, 64, 0, red=True)),
               (2048, 1024, 2048, _c(128, 5, 64, -1, panel=0, red=True)),
               (2048, 1024, 2048, _c(128, 5, 64, -1, panel=0, red=True, tail_first=True)),
               (128, 128, 64 * 200, _c(128, 5, 64, 0, red=True))]


def left(fn):
    """Counters and workspace elements a runner's launches left non-zero."""
    n = check_counters(fn)
    ws = getattr(fn, "workspace", None)
    return n + (0 if ws is None else int((ws != 0).sum()))


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
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "errors": {}, "rejected": {}, "searches": {},
           "repeat_spread": {}}
    for M, N, K, c in EXTRA_PLANS:  # correctness only, twice into one poisoned output
        a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        fn = make_ws_runner(a, b, c, sms)
        o = h.poisoned((M, N), torch.float16)
        fn(o); fn(o)
        torch.cuda.synchronize()
        e = rel_fro_err(o, ref)
        res["errors"][f"{label(c)} {M}x{N}x{K}"] = [e, left(fn)]
        print("extra", M, N, K, label(c), e, left(fn), flush=True)
    json.dump(res, open(out, "w"), indent=1)
    for S, cands in SHAPES.items():
        M, N, K = S
        for rep in range(2):
            a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
            ref = torch.matmul(a.float(), b.float().t())
            runners = {}

            def runner(cfg):
                runners[label(cfg)] = make_ws_runner(a, b, cfg, sms)
                return runners[label(cfg)]

            cc, rejected = screen_workspace_candidates(
                cands, label, lambda cfg: {"kernel": built.get(f"{label(cfg)}@{M}"), "error": err.get(f"{label(cfg)}@{M}")},
                runner, lambda: h.poisoned((M, N), torch.float16), ref)
            for lab in list(cc):
                n = left(runners[lab])
                if n:
                    del cc[lab]; rejected[lab] = f"{n} counters or workspace elements left non-zero"
            res["rejected"][f"{M} #{rep}"] = rejected
            print("rejected", rejected, flush=True)
            outs = {}
            for lab in list(cc):
                o = h.poisoned((M, N), torch.float16)
                runners[lab](o)
                outs[lab] = o
                if "red" in lab:  # the sum's order varies: how far two launches differ
                    o2 = runners[lab](h.poisoned((M, N), torch.float16))
                    torch.cuda.synchronize()
                    d = (o.float() - o2.float()).abs()
                    res["repeat_spread"][f"{lab} {M} #{rep}"] = [int((d > 0).sum()), float(d.max())]
                cc[lab] = (lambda f=runners[lab], o=o: f(o))
            if M == 1536:
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
            for lab, f in runners.items():
                assert left(f) == 0, lab
            del a, b, ref
            torch.cuda.empty_cache()
    json.dump(res, open(out, "w"), indent=1)
