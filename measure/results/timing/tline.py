"""Timeline of what the protocol times: for each subject (stream-K and split-K winners of gemm.flush, cuBLAS at
their shapes, the full-wave tiling, the W4A16 winners and cuBLAS at M = 1/16/64/128, a one-element add), the CUDA
kernels each call launches, their GPU durations and the gaps between them, from torch.profiler (CUPTI), 30 calls
each after the write flush; beside the CUDA-event median of the same subject (Harness.time, write flush)."""
import json, os, statistics as st, sys
import torch
from kernels.gemm import splitk, streamk
from kernels.gemm.ladder import build_tuned
from kernels.gemm.w4a16 import build, kernel_weights
from measure.suites.gemm import flush as F
from measure.suites.gemm.streamk_ws import FULL_WAVE
from measure.suites.gemm.w4a16 import make_inputs
from measure.suites.gemm.common import rel_fro_err


def subjects(h, sms):
    out = {}
    M, N, K = F.STREAMK_SHAPE
    a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
    ref = torch.matmul(a.float(), b.float().t())
    sk = streamk.make_ws_runner(a, b, F.STREAMK_BEST, sms)
    c = h.poisoned((M, N), torch.float16); sk(c); torch.cuda.synchronize()
    out["stream-K"] = (lambda: sk(c), rel_fro_err(c, ref))
    fw = build_tuned(M, N, K, FULL_WAVE, sms)
    c2 = h.poisoned((M, N), torch.float16); fw(a, b, c2); torch.cuda.synchronize()
    out["full-wave"] = (lambda: fw(a, b, c2), rel_fro_err(c2, ref))
    out["cuBLAS 1536"] = (lambda: torch.matmul(a, b.t()), None)
    M, N, K = F.SPLITK_SHAPE
    a1, b1 = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
    ref1 = torch.matmul(a1.float(), b1.float().t())
    sp = splitk.make_ws_runner(a1, b1, F.SPLITK_BEST, sms)
    c3 = h.poisoned((M, N), torch.float16); sp(c3); torch.cuda.synchronize()
    out["split-K"] = (lambda: sp(c3), rel_fro_err(c3, ref1))
    out["cuBLAS 1024"] = (lambda: torch.matmul(a1, b1.t()), None)
    for (M, N, K), cfg in F.W4A16_WINNERS.items():
        if M > 128:
            continue
        kern = build(M, N, K, 128, cfg)
        x, packed, scales, w16 = make_inputs(h, M, N, K, 128)
        wq = kernel_weights(packed, cfg)
        r = torch.matmul(x.float(), w16.float().t())
        o = h.poisoned((M, N), torch.float16); kern(x, wq, scales, o); torch.cuda.synchronize()
        out[f"w4a16 M={M}"] = ((lambda k=kern, x=x, w=wq, s=scales, o=o: k(x, w, s, o)), rel_fro_err(o, r))
        out[f"cuBLAS M={M}"] = ((lambda x=x, w=w16: torch.matmul(x, w.t())), None)
    one = torch.zeros(1, device="cuda")
    out["one-element add"] = (lambda: one.add_(1.0), None)
    return out


if __name__ == "__main__":
    from measure.harness import Harness
    from torch.profiler import profile, ProfilerActivity
    h = Harness(log=print)
    torch.backends.cuda.matmul.allow_tf32 = False
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    subs = subjects(h, sms)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "calls": 30, "flush": "write", "subjects": {}}
    for name, (fn, err) in subs.items():
        ev = [h.time(fn) * 1e3 for _ in range(3)]  # three event medians, us
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(30):
                h._flush()
                fn()
            torch.cuda.synchronize()
        path = f"/tmp/trace_{abs(hash(name))}.json"
        prof.export_chrome_trace(path)
        tr = json.load(open(path))["traceEvents"]
        ks = sorted([e for e in tr if e.get("cat") == "kernel"], key=lambda e: e["ts"])
        calls, cur = [], None
        for e in ks:
            if "fill" in e["name"].lower() or "FillFunctor" in e["name"]:
                if cur is not None:
                    calls.append(cur)
                cur = {"flush_end": e["ts"] + e["dur"], "k": []}
            elif cur is not None:
                cur["k"].append(e)
        if cur is not None:
            calls.append(cur)
        calls = [c for c in calls if c["k"]]
        n = min(len(c["k"]) for c in calls)
        names = [e["name"][:160] for e in calls[0]["k"]]
        dur = [st.median(c["k"][i]["dur"] for c in calls) for i in range(n)]
        gaps = [st.median(c["k"][i]["ts"] - (c["k"][i - 1]["ts"] + c["k"][i - 1]["dur"]) for c in calls)
                for i in range(1, n)]
        lead = st.median(c["k"][0]["ts"] - c["flush_end"] for c in calls)
        span = st.median(c["k"][n - 1]["ts"] + c["k"][n - 1]["dur"] - c["k"][0]["ts"] for c in calls)
        res["subjects"][name] = dict(event_us=ev, kernels=names, dur_us=dur, gaps_us=gaps, lead_us=lead,
                                     span_us=span, calls=len(calls), rel_fro_err=err,
                                     kernels_per_call=sorted({len(c["k"]) for c in calls}))
        print(name, [round(x, 2) for x in ev], "span", round(span, 2), "dur", [round(d, 2) for d in dur],
              "gaps", [round(g, 2) for g in gaps], "lead", round(lead, 2), names, flush=True)
        json.dump(res, open(sys.argv[1], "w"), indent=1)
