"""sk8: room for a sixth stage without narrowing the tail staging (stream-K's hybrid on 1536 x 1536 x 8192).

sk7's winner (five stages, ``pdl@end``, aligned) has no room for a sixth stage: its fp16 staging of whole tiles
(16 KB) and fp32 staging of tail pieces (32 KB) sit beside five 32 KB stages.  In sk6 a sixth stage bought with
narrow tail staging (``te32``) gained nothing, because the narrow staging cost what the stage gave; on the
data-parallel pipeline a sixth stage took 0.9 us off the same wave (wavec2).  ``share`` puts both stagings in one
buffer (a consumer stages its whole tiles first and its tail pieces after them), which needs the whole tiles staged
128 columns at a time (``e128``: the fp16 staging of 128 columns has the bytes of the fp32 staging of 64); that
leaves room for six stages with the full 64-column tail staging.  Beside it: ``share`` at five stages and the
tail pieces stored from registers (``rs``, no fp32 staging) at six stages, with the sk7 levers (``e128`` alone,
without sharing, was dropped after the first call: it asks 256 KiB of shared memory).  Same checks, searches
(3 write, 1 clean, 7 alternating rounds) and timeline as sk7."""
import json, os, sys
import torch
from kernels.gemm.streamk import build_ws, make_ws_runner, ws_config as _c, ws_label as label, ws_schedule
from kernels.gemm.ladder import build_tuned
from measure.suites.gemm.streamk_ws import FULL_WAVE
from measure.suites.gemm.common import kernel_timeline, rel_fro_err, screen_workspace_candidates

SHAPE = (1536, 1536, 8192)
BASE = dict(panel=0, fix_vec=True, fix_rows=4)
SK = [_c(128, 5, 64, -1, pdl=True, pdl_at="end", aligned=True, **BASE),  # sk7's winner, gemm.flush's form
      # e128 alone (no share) asks 256 KiB of shared memory, past the SM's 227 KiB: refused at launch on the H200
      _c(128, 5, 128, -1, tail_cols=64, share=True, pdl=True, pdl_at="end", aligned=True, **BASE),
      _c(128, 6, 128, -1, tail_cols=64, share=True, pdl=True, pdl_at="end", aligned=True, **BASE),
      _c(128, 6, 64, -1, reg_store=True, pdl=True, pdl_at="end", aligned=True, **BASE)]
EXTRA_PLANS = [(1664, 1408, 4096, _c(128, 6, 128, -1, tail_cols=64, share=True, pdl=True, pdl_at="end", aligned=True,
                                     **BASE)),
               (2944, 1536, 2048, _c(128, 6, 128, -1, tail_cols=64, share=True, pdl=True, pdl_at="end", aligned=True,
                                     **BASE)),  # two waves of whole tiles before the tail
               (1664, 1408, 4096, _c(128, 6, 64, -1, reg_store=True, pdl=True, pdl_at="end", aligned=True, **BASE))]
MODES = ("write", "write", "write", "clean")


def build_all(sk=SK, plans=EXTRA_PLANS):
    built, err = {}, {}
    for c in sk:
        try:
            built[label(c)] = build_ws(*SHAPE, c, 132)
        except Exception as e:  # noqa: BLE001
            err[label(c)] = repr(e)[:300]
    for M, N, K, c in plans:
        built[f"{label(c)}@{M}x{N}x{K}"] = build_ws(M, N, K, c, 132)
    built["full-wave"] = build_tuned(*SHAPE, FULL_WAVE, 132)
    return built, err


def main(out, SK=SK, EXTRA_PLANS=EXTRA_PLANS, MODES=MODES):
    """Checks, searches and timeline of ``SK`` (the probe as it ran; ``sk8h`` passes a subset)."""
    built, err = build_all(SK, EXTRA_PLANS)
    print("build errors", err, flush=True)
    if out == "--prebuild":
        return
    from measure.harness import Harness
    h = Harness(log=print)
    torch.backends.cuda.matmul.allow_tf32 = False
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert sms == 132, sms
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms, "build_errors": err,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "errors": {}, "rejected": {}, "searches": {},
           "timeline": {}, "schedules": {}}
    for c in SK:  # the tail as each candidate deals it out: pieces per worker, and the longest share
        if c.get("spread"):
            continue
        s = ws_schedule(*SHAPE, c["block_N"], c["block_K"], sms, c["dp_waves"], bool(c.get("aligned")))
        pieces = s.pieces()
        res["schedules"][label(c)] = {
            "pieces": sum(len(p) for p in pieces), "workers_with_two_pieces": sum(len(p) == 2 for p in pieces),
            "longest_share": max(s.end(w) - s.begin(w) for w in range(sms))}
    wrong = set()  # forms wrong on a small plan: recorded, and not timed on the awkward shape
    for M, N, K, c in EXTRA_PLANS:  # correctness only, twice into one poisoned output
        a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
        fn = make_ws_runner(a, b, c, sms)
        o = h.poisoned((M, N), torch.float16)
        fn(o); fn(o)
        torch.cuda.synchronize()
        res["errors"][f"{label(c)} {M}x{N}x{K}"] = e = rel_fro_err(o, torch.matmul(a.float(), b.float().t()))
        print("extra", M, N, K, label(c), e, flush=True)
        if not e < 1e-2:
            wrong.add(label(c))
    M, N, K = SHAPE
    for rep, mode in enumerate(MODES):
        a = h.rand((M, K), torch.float16); b = h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        cc, rejected = screen_workspace_candidates(
            [c for c in SK if label(c) not in wrong], label,
            lambda cfg: {"kernel": built.get(label(cfg)), "error": err.get(label(cfg))},
            lambda cfg: make_ws_runner(a, b, cfg, sms), lambda: h.poisoned((M, N), torch.float16), ref)
        res["rejected"][f"#{rep}"] = dict(rejected, **{w: "wrong on a small plan" for w in wrong})
        outs, counters = {}, {}
        for lab in list(cc):
            cfg = next(c for c in SK if label(c) == lab)
            f = make_ws_runner(a, b, cfg, sms)
            o = h.poisoned((M, N), torch.float16)
            f(o)
            outs[lab] = o
            if hasattr(f, "counters"):  # the spread fix-up's: every complete launch leaves them zero
                counters[lab] = f.counters
            cc[lab] = (lambda f=f, o=o: f(o))
        k = built["full-wave"]
        o = h.poisoned((M, N), torch.float16)
        k(a, b, o); k(a, b, o)
        assert rel_fro_err(o, ref) < 1e-2
        outs["full-wave 128x144"] = o
        cc["full-wave 128x144"] = (lambda k=k, o=o: k(a, b, o))
        cc["cuBLAS"] = lambda a=a, b=b: torch.matmul(a, b.t())
        h.protocol["flush_mode"] = mode
        best, ms = h.search(f"{mode} flush #{rep}", cc, rounds=7)
        key = f"{mode} #{rep}"
        res["searches"][key] = {"best": best, "us": {k: round(v * 1e3, 2) for k, v in ms.items()}}
        print(key, json.dumps(res["searches"][key]), flush=True)
        h.protocol["flush_mode"] = "write"
        if rep == 0:  # each subject's kernels on the GPU's clock
            for lab, fn in cc.items():
                tl = kernel_timeline(h, fn, 30)
                res["timeline"][lab] = tl
                print("timeline", lab, [round(d, 2) for d in tl["dur_us"]], [round(g, 2) for g in tl["gaps_us"]],
                      round(tl["span_us"], 2), flush=True)
        for lab, o in outs.items():  # the output of the last timed launch
            res["errors"][f"{lab} #{rep} after timing"] = e = rel_fro_err(o, ref)
            assert e < 1e-2, (lab, e)
        for lab, cnt in counters.items():
            res["errors"][f"{lab} #{rep} counters after timing"] = z = int(cnt.abs().sum())
            assert z == 0, (lab, z)
        json.dump(res, open(out, "w"), indent=1)
        del a, b, ref
        torch.cuda.empty_cache()
    json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
