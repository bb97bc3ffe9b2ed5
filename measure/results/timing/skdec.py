"""skdec: stream-K's hybrid on the awkward shape taken apart on the GPU's clock.  The hybrid (tiles in row order) is one wave of 132
whole 128 x 128 tiles (rows 0-1407 of C) and a tail of the 12 tiles of the last 128 rows streamed over all 132
workers (11-12 K steps each), then the fix-up.  Each part is run alone on its own operands, with the same kernel
and the same schedule: the wave alone (C 1408 x 1536, A's first 1408 rows: 132 tiles, nothing streamed), the tail
alone (C 128 x 1536, A's last 128 rows, every tile streamed: the same 132 pieces, then the same fix-up); beside them
the whole hybrid, the full-wave tiling (128 x 144, one tile per SM) and cuBLAS.  For each, the kernels of one call,
their GPU durations and gaps from torch.profiler (30 calls after the write flush), and three CUDA-event medians
(Harness.time, write flush).  Every output is checked against the fp32 reference (poisoned output, written twice)."""
import json, os, sys
import torch
from kernels.gemm import streamk
from kernels.gemm.ladder import build_tuned
from measure.suites.gemm import flush as F
from measure.suites.gemm.streamk_ws import FULL_WAVE
from measure.suites.gemm.common import kernel_timeline, rel_fro_err

M, N, K = F.STREAMK_SHAPE
CFG = F.STREAMK_BEST
DP_M = 1408  # the rows of the hybrid's whole tiles: 11 x 128 (row order: the tail is the last tile row)
WAVE, TAIL = dict(CFG, dp_waves=-1), dict(CFG, dp_waves=0)


def build_all():
    return {"hybrid": streamk.build_ws(M, N, K, CFG, 132), "wave": streamk.build_ws(DP_M, N, K, WAVE, 132),
            "tail": streamk.build_ws(M - DP_M, N, K, TAIL, 132), "full-wave": build_tuned(M, N, K, FULL_WAVE, 132)}


if __name__ == "__main__":
    out = sys.argv[1]
    built = build_all()
    s_w, s_t = (streamk.ws_schedule(m, N, K, 128, 64, 132, d) for m, d in ((DP_M, -1), (M - DP_M, 0)))
    s_h = streamk.ws_schedule(M, N, K, 128, 64, 132, -1)
    assert (s_w.dp_tiles, s_w.sk_tiles) == (132, 0) and (s_t.dp_tiles, s_t.sk_tiles) == (0, 12), (s_w, s_t)
    assert (s_t.iters_per_worker, s_t.extra) == (s_h.iters_per_worker, s_h.extra), (s_t, s_h)
    if out == "--prebuild":
        sys.exit(0)
    from measure.harness import Harness
    h = Harness(log=print)
    torch.backends.cuda.matmul.allow_tf32 = False
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert sms == 132, sms
    a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
    ref = torch.matmul(a.float(), b.float().t())
    aw, at = a[:DP_M].contiguous(), a[DP_M:].contiguous()
    subs = {}
    for name, (aa, bb, cfg, r) in {"hybrid": (a, b, CFG, ref), "wave alone": (aw, b, WAVE, ref[:DP_M]),
                                   "tail alone": (at, b, TAIL, ref[DP_M:])}.items():
        fn = streamk.make_ws_runner(aa, bb, cfg, sms)
        c = h.poisoned(tuple(r.shape), torch.float16)
        fn(c); fn(c); torch.cuda.synchronize()
        subs[name] = ((lambda fn=fn, c=c: fn(c)), rel_fro_err(c, r), c, r)
    fw = built["full-wave"]
    c2 = h.poisoned((M, N), torch.float16)
    fw(a, b, c2); fw(a, b, c2); torch.cuda.synchronize()
    subs["full-wave 128x144"] = ((lambda: fw(a, b, c2)), rel_fro_err(c2, ref), c2, ref)
    subs["cuBLAS"] = ((lambda: torch.matmul(a, b.t())), None, None, None)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "calls": 30, "flush": "write", "subjects": {}}
    for name, (fn, err, c, r) in subs.items():
        assert err is None or err < 1e-2, (name, err)
        ev = [round(h.time(fn) * 1e3, 2) for _ in range(3)]
        tl = kernel_timeline(h, fn, 30)
        after = None if c is None else rel_fro_err(c, r)
        assert after is None or after < 1e-2, (name, after)
        res["subjects"][name] = {"error": err, "error_after": after, "event_us": ev, **tl}
        print(name, ev, [round(d, 2) for d in tl["dur_us"]], [round(g, 2) for g in tl["gaps_us"]],
              round(tl["span_us"], 2), flush=True)
        json.dump(res, open(out, "w"), indent=1)
    json.dump(res, open(out, "w"), indent=1)
