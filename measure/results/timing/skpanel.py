"""Stream-K on the hand-written pipeline: does the order of the streamed tiles (the raster's ``panel``) decide the
DRAM traffic?  Pure stream-K of 128 x 256 tiles at the three suite shapes with panel 8 (the recorded candidates),
0 (row-major: the 11 workers of a tile row advance in step with every other row's) and 1, 2, 4 and the column-major
order (panel = tiles along M), with the separate fix-up and with the fix-up inside; the recorded bests, cuBLAS and
the data-parallel tiling in the same alternating rounds, both flushes.  Each candidate checked first (poisoned
output, written twice, fp32 reference); the stream-K kernel is also timed without its fix-up; cuBLAS's kernel names."""
import json, os, sys
import torch
from kernels.gemm.streamk import build_ws, make_ws_runner, ws_config as _c, ws_label as label
from kernels.gemm.ladder import build_tuned
from measure.suites.gemm.splitk_ws import NO_SPLIT
from measure.suites.gemm.streamk_ws import CANDIDATES
from measure.suites.gemm.common import gemm_tolerance, rel_fro_err, screen_workspace_candidates
from kernels.gemm.splitk import check_counters

SHAPES = [(1536, 1536, 8192), (2048, 2048, 8192), (1024, 1024, 16384)]


def cands(shape):
    M = shape[0]
    gm = M // 128
    out = list(CANDIDATES[shape])
    for p in (0, 1, 2, 4, gm):
        out.append(_c(256, 4, 64, 0, panel=p))
    for p in (0, gm):
        out.append(_c(256, 4, 64, 0, panel=p, fixup=True))
    if shape[0] == 1536:
        out.append(_c(128, 5, 64, -1, panel=0))
    seen, res = set(), []
    for c in out:
        if label(c) not in seen:
            seen.add(label(c)); res.append(c)
    return res


def build_all():
    built = {}
    for s in SHAPES:
        for c in cands(s):
            try:
                built[f"{label(c)}@{s[0]}"] = {"kernel": build_ws(*s, c, 132), "error": None}
            except Exception as e:  # noqa: BLE001
                built[f"{label(c)}@{s[0]}"] = {"kernel": None, "error": repr(e)[:300]}
        try:
            build_tuned(*s, NO_SPLIT, 132)
        except Exception as e:  # noqa: BLE001
            print("dp", s, e)
    return built


if __name__ == "__main__":
    out = sys.argv[1]
    built = build_all()
    if out == "--prebuild":
        print({k: v["error"] for k, v in built.items() if v["error"]})
        sys.exit(0)
    from measure.harness import Harness
    h = Harness(log=print)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": sms,
           "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, "rejected": {}, "searches": {}, "cublas_kernels": {},
           "gemm_only_us": {}}
    torch.backends.cuda.matmul.allow_tf32 = False
    for s in SHAPES:
        M, N, K = s
        a = h.rand((M, K), torch.float16)
        b = h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        runners = {}

        def runner(cfg):
            runners[label(cfg)] = make_ws_runner(a, b, cfg, sms)
            return runners[label(cfg)]

        cc, rejected = screen_workspace_candidates(cands(s), label, lambda cfg: built[f"{label(cfg)}@{M}"], runner,
                                                   lambda: h.poisoned((M, N), torch.float16), ref)
        for lab in list(cc):
            if hasattr(runners[lab], "counters") and check_counters(runners[lab]):
                rejected[lab] = "counters left non-zero"; del cc[lab]
        res["rejected"][f"{M}"] = rejected
        print("rejected", rejected, flush=True)
        dp = build_tuned(M, N, K, NO_SPLIT, sms)
        c_dp = h.poisoned((M, N), torch.float16)
        dp(a, b, c_dp)
        assert rel_fro_err(c_dp, ref) < 1e-2
        cc["data-parallel"] = lambda: dp(a, b, c_dp)
        cc["cuBLAS"] = lambda: torch.matmul(a, b.t())
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.matmul(a, b.t()); torch.cuda.synchronize()
        res["cublas_kernels"][f"{M}"] = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print("cuBLAS kernels", res["cublas_kernels"][f"{M}"], flush=True)
        # the stream-K kernel alone (no fix-up) for the separate-fix-up candidates
        gonly = {}
        for cfg in cands(s):
            lab = label(cfg)
            if lab in cc and not cfg.get("fixup"):
                g, fix = build_ws(M, N, K, cfg, sms)
                if fix is not None:
                    from kernels.gemm.streamk import ws_schedule
                    sch = ws_schedule(M, N, K, cfg["block_N"], cfg["block_K"], sms, cfg["dp_waves"])
                    w = torch.empty((max(sch.slots, 1) * 128, cfg["block_N"]), dtype=torch.float32, device="cuda")
                    cg = h.poisoned((M, N), torch.float16)
                    gonly[lab + " (no fix-up)"] = (lambda g=g, w=w, cg=cg: g(a, b, cg, w))
        for mode in ("write", "clean"):
            h.protocol["flush_mode"] = mode
            best, ms = h.search(f"{mode} flush: stream-K panels {M}", cc, rounds=7)
            res["searches"][f"{M} {mode}"] = {"best": best, "us": {k: round(v * 1e3, 2) for k, v in ms.items()}}
            print(f"{M} {mode}", json.dumps(res["searches"][f"{M} {mode}"]), flush=True)
            json.dump(res, open(out, "w"), indent=1)
        h.protocol["flush_mode"] = "write"
        if gonly:
            _, ms = h.search(f"stream-K kernel alone {M}", gonly, rounds=3)
            res["gemm_only_us"][f"{M}"] = {k: round(v * 1e3, 2) for k, v in ms.items()}
            print("alone", res["gemm_only_us"][f"{M}"], flush=True)
        for lab in cc:
            if lab in runners and hasattr(runners[lab], "counters"):
                assert not check_counters(runners[lab]), lab
        json.dump(res, open(out, "w"), indent=1)
        del a, b, ref
        torch.cuda.empty_cache()
    json.dump(res, open(out, "w"), indent=1)
