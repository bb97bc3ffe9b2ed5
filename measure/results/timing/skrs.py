"""Stream-K's tail pieces stored to the workspace straight from the accumulator's registers (``reg_store``, label
``rs``: no fp32 staging in shared memory, so six 128 x 128 stages fit) against the TMA store through that staging,
with the hand-written fix-up at 4 rows: the awkward shape's row-order hybrid at 5 and 6 stages, and the skinny
shape's 128 x 256 tiles streamed whole.  Every candidate is checked against the fp32 reference (poisoned output,
written twice), also on small plans (the runner takes whole tiles only); then alternating rounds (7) under both flushes, two input sets;
kernel timelines (torch.profiler) of the first set."""
import json, os, sys
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skx import timeline
from kernels.gemm import streamk
from kernels.gemm.ladder import build_tuned
from measure.suites.gemm.streamk_ws import FULL_WAVE
from measure.suites.gemm.common import rel_fro_err

_c, label = streamk.ws_config, streamk.ws_label
SHAPES = {
    (1536, 1536, 8192): [_c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4),
                         _c(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=4, reg_store=True),
                         _c(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=4, reg_store=True),
                         _c(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=4, reg_store=True, pdl=True)],
    (1024, 1024, 16384): [_c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=4),
                          _c(256, 4, 64, 0, panel=0, fix_vec=True, fix_rows=4, reg_store=True)],
}
EXTRA = [(1024, 512, 192, _c(128, 4, 64, 0, reg_store=True)), (1024, 512, 4096, _c(128, 6, 64, -1, reg_store=True)),
         (384, 768, 1024, _c(256, 4, 64, 0, fix_vec=True, fix_rows=4, reg_store=True)),
         (2048, 1024, 2048, _c(128, 6, 64, -1, panel=0, fix_vec=True, fix_rows=16, reg_store=True))]


def build_all():
    built, err = {}, {}
    for S, cands in SHAPES.items():
        for c in cands:
            try:
                built[f"{label(c)}@{S[0]}"] = streamk.build_ws(*S, c, 132)
            except Exception as e:  # noqa: BLE001
                err[f"{label(c)}@{S[0]}"] = repr(e)[:300]
    for M, N, K, c in EXTRA:
        try:
            built[f"{label(c)}@{M}x{N}x{K}"] = streamk.build_ws(M, N, K, c, 132)
        except Exception as e:  # noqa: BLE001
            err[f"{label(c)}@{M}x{N}x{K}"] = repr(e)[:300]
    built["full-wave"] = build_tuned(1536, 1536, 8192, FULL_WAVE, 132)
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
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "errors": {}, "searches": {}, "timeline": {}}
    for M, N, K, c in EXTRA:
        a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
        fn = streamk.make_ws_runner(a, b, c, sms)
        o = h.poisoned((M, N), torch.float16)
        fn(o); fn(o)
        torch.cuda.synchronize()
        e = rel_fro_err(o, torch.matmul(a.float(), b.float().t()))
        res["errors"][f"{label(c)} {M}x{N}x{K}"] = e
        print("extra", M, N, K, label(c), e, flush=True)
        assert e < 1e-2, (label(c), e)
    for (M, N, K), cands in SHAPES.items():
        for rep in range(2):
            a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
            ref = torch.matmul(a.float(), b.float().t())
            cc = {}
            for c in cands:
                fn = streamk.make_ws_runner(a, b, c, sms)
                o = h.poisoned((M, N), torch.float16)
                fn(o); fn(o)
                torch.cuda.synchronize()
                e = rel_fro_err(o, ref)
                res["errors"][f"{label(c)} {M} #{rep}"] = e
                if e < 1e-2:
                    cc[label(c)] = (lambda f=fn, o=o: f(o))
                else:
                    print("REJECT", label(c), e, flush=True)
            if M == 1536:
                fw = built["full-wave"]
                o2 = h.poisoned((M, N), torch.float16)
                cc["full-wave 128x144"] = lambda: fw(a, b, o2)
            cc["cuBLAS"] = lambda: torch.matmul(a, b.t())
            for mode in ("write", "clean"):
                h.protocol["flush_mode"] = mode
                best, ms = h.search(f"stream-K {M} {mode} #{rep}", cc, rounds=7)
                res["searches"][f"{M} {mode} #{rep}"] = {"best": best, "us": {k: v * 1e3 for k, v in ms.items()}}
                print(M, mode, rep, {k: round(v * 1e3, 2) for k, v in ms.items()}, flush=True)
                json.dump(res, open(out, "w"), indent=1, default=str)
            h.protocol["flush_mode"] = "write"
            if rep == 0:
                res["timeline"][str(M)] = {k: timeline(h, f) for k, f in cc.items()}
                print("timeline", {k: (v["dur_us"], v["gaps_us"], v["span_us"]) for k, v in res["timeline"][str(M)].items()},
                      flush=True)
    json.dump(res, open(out, "w"), indent=1, default=str)
