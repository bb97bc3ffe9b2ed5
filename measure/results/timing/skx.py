"""Split-K at 1024 x 1024 x 16384: 128 x 128 tiles split 2 (64 tiles x 2 = 128 items, half the partial bytes of the
128 x 256 tiles split 4; cuBLAS's own choice on this shape is a 128 x 128 tile in a two-block cluster, split, with a
separate reduction), with and without a two-block cluster, 4 to 6 stages, 16/32/64-row reductions, each launched as a
programmatic dependent; against the recorded best (128 x 256 split 4, 32-row reduction, PDL) and cuBLAS.  (Seven stages of 128 x 128 need 256 KB of
shared memory beside the staging of the partials: more than a block may have.)  Every
candidate is checked against the fp32 reference (poisoned output, written twice); then alternating rounds
(Harness.search, 7 rounds) under the write and the clean flush, two fresh input sets."""
import json, os, sys
import torch
from kernels.gemm.splitk import build_ws, make_ws_runner, ws_splitk_config as _c, ws_splitk_label as label
from kernels.gemm import streamk
from measure.suites.gemm.common import rel_fro_err

S = (1024, 1024, 16384)
CANDS = [_c(4, reduce_rows=32, pdl=True),
         _c(2, block_N=128, stages=6, reduce_rows=32, pdl=True),
         _c(2, block_N=128, stages=5, reduce_rows=32, pdl=True),
         _c(2, block_N=128, stages=4, reduce_rows=32, pdl=True),
         _c(2, block_N=128, stages=5, pdl=True),
         _c(2, block_N=128, stages=5, reduce_rows=64, pdl=True),
         _c(2, block_N=128, stages=5, cluster=2, reduce_rows=32, pdl=True),
         _c(2, block_N=128, stages=4, cluster=2, reduce_rows=32, pdl=True),
         _c(4, block_N=128, stages=5, reduce_rows=32, pdl=True)]

SK = (1536, 1536, 8192)
SK_CANDS = [streamk.ws_config(128, 5, 64, -1, panel=0, fix_vec=True, fix_rows=r, pdl=p)
            for r, p in ((4, False), (2, False), (1, False), (4, True), (2, True))]


def timeline(h, fn, calls=30):
    """GPU durations of the kernels of each call and the gaps between them (medians over ``calls`` calls, each
    after the write flush), from torch.profiler."""
    import statistics as st
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            h._flush()
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace("/tmp/skx_trace.json")
    ks = sorted([e for e in json.load(open("/tmp/skx_trace.json"))["traceEvents"] if e.get("cat") == "kernel"],
                key=lambda e: e["ts"])
    seg, cur = [], None
    for e in ks:
        if "fill" in e["name"].lower():
            cur = []
            seg.append(cur)
        elif cur is not None:
            cur.append(e)
    seg = [c for c in seg if c]
    n = min(len(c) for c in seg)
    return dict(kernels=[e["name"][:80] for e in seg[0]], dur_us=[st.median(c[i]["dur"] for c in seg) for i in range(n)],
                gaps_us=[st.median(c[i]["ts"] - c[i - 1]["ts"] - c[i - 1]["dur"] for c in seg) for i in range(1, n)],
                span_us=st.median(c[n - 1]["ts"] + c[n - 1]["dur"] - c[0]["ts"] for c in seg), calls=len(seg))


def build_all():
    built, err = {}, {}
    for c in CANDS:
        try:
            built[label(c)] = build_ws(*S, c, 132)
        except Exception as e:  # noqa: BLE001
            err[label(c)] = repr(e)[:300]
    for c in SK_CANDS:
        try:
            built["sk " + streamk.ws_label(c)] = streamk.build_ws(*SK, c, 132)
        except Exception as e:  # noqa: BLE001
            err["sk " + streamk.ws_label(c)] = repr(e)[:300]
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
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "errors": {}, "searches": {}}
    M, N, K = S
    for rep in range(2):
        a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        cands = {}
        for c in CANDS:
            if label(c) not in built:
                continue
            try:
                fn = make_ws_runner(a, b, c, sms)
                o = h.poisoned((M, N), torch.float16)
                fn(o); fn(o)
                torch.cuda.synchronize()
            except Exception as ex:  # noqa: BLE001  (e.g. more shared memory than a block may have)
                res["errors"][f"{label(c)} #{rep}"] = repr(ex)[-200:]
                print("FAILED", label(c), repr(ex)[-200:], flush=True)
                continue
            e = rel_fro_err(o, ref)
            res["errors"][f"{label(c)} #{rep}"] = e
            if e < 1e-2:
                cands[label(c)] = (lambda f=fn, o=o: f(o))
            else:
                print("REJECT", label(c), e, flush=True)
        cands["cuBLAS"] = lambda: torch.matmul(a, b.t())
        for mode in ("write", "clean"):
            h.protocol["flush_mode"] = mode
            best, ms = h.search(f"split-K {mode} #{rep}", cands, rounds=7)
            res["searches"][f"{mode} #{rep}"] = {"best": best, "us": {k: v * 1e3 for k, v in ms.items()},
                                                 "per_round_us": {k: [x * 1e3 for x in v] for k, v in
                                                                  h.records[-1].get("ms_per_round", {}).items()}}
            print(mode, rep, {k: round(v * 1e3, 2) for k, v in ms.items()}, flush=True)
            json.dump(res, open(out, "w"), indent=1, default=str)
        h.protocol["flush_mode"] = "write"
        if rep == 0:
            res["timeline"] = {k: timeline(h, f) for k, f in cands.items()}
            print("timeline", res["timeline"], flush=True)
    M, N, K = SK
    res["sk_searches"], res["sk_timeline"] = {}, {}
    for rep in range(2):
        a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        cands = {}
        for c in SK_CANDS:
            if "sk " + streamk.ws_label(c) not in built:
                continue
            fn = streamk.make_ws_runner(a, b, c, sms)
            o = h.poisoned((M, N), torch.float16)
            fn(o); fn(o)
            torch.cuda.synchronize()
            e = rel_fro_err(o, ref)
            res["errors"][f"sk {streamk.ws_label(c)} #{rep}"] = e
            if e < 1e-2:
                cands[streamk.ws_label(c)] = (lambda f=fn, o=o: f(o))
            else:
                print("REJECT", streamk.ws_label(c), e, flush=True)
        cands["cuBLAS"] = lambda: torch.matmul(a, b.t())
        for mode in ("write", "clean"):
            h.protocol["flush_mode"] = mode
            best, ms = h.search(f"stream-K {mode} #{rep}", cands, rounds=7)
            res["sk_searches"][f"{mode} #{rep}"] = {"best": best, "us": {k: v * 1e3 for k, v in ms.items()}}
            print("sk", mode, rep, {k: round(v * 1e3, 2) for k, v in ms.items()}, flush=True)
            json.dump(res, open(out, "w"), indent=1, default=str)
        h.protocol["flush_mode"] = "write"
        if rep == 0:
            res["sk_timeline"] = {k: timeline(h, f) for k, f in cands.items()}
            print("sk timeline", res["sk_timeline"], flush=True)
    json.dump(res, open(out, "w"), indent=1, default=str)
