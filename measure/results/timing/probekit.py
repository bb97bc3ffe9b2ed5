"""What the W4A16 timing probes share (``m64parts``, ``m64load``, ``m64tile``, ``lagd``): the record's header, one
shape's candidates checked and wrapped for a search, and one search under a flush mode, recorded as it lands."""
import json, os


def header(**extra):
    """The record's provenance fields (device, torch, the commit the cache was built from) and ``extra``."""
    import torch

    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "commit": os.environ.get("COURSE_GIT_COMMIT"), "rounds": 7, **extra}


def shape_candidates(h, res, M, N, K, forms, built, rep, prefix=""):
    """Fresh inputs at ``M x N x K`` and one thunk per ``(cfg, probe)`` of ``forms`` (``built[(M, label, probe)]``),
    plus cuBLAS on the fp16 weights.  Each kernel runs once on a poisoned output; a whole kernel (``probe`` empty) is
    checked against the fp32 reference (``res["errors"]``) and left out of the search if it misses; a timing probe,
    wrong by design, is only timed."""
    import torch
    from kernels.gemm.w4a16 import kernel_weights, label
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs

    a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
    ref = torch.matmul(a.float(), w16.float().t())
    cc = {}
    for c, p in forms:
        k, w, o = built[(M, label(c), p)], kernel_weights(packed, c), h.poisoned((M, N), torch.float16)
        key = f"{prefix}{label(c)}:{p or 'whole'}"
        k(a, w, scales, o)
        if not p:
            torch.cuda.synchronize()
            res.setdefault("errors", {})[f"{key} #{rep}"] = e = rel_fro_err(o, ref)
            if e >= 1e-2:
                continue
        cc[key] = (lambda k=k, o=o, w=w, a=a, s=scales: k(a, w, s, o))
    cc[f"{prefix}cuBLAS fp16 weights"] = lambda a=a, w16=w16: torch.matmul(a, w16.t())
    return cc


def flush_search(h, res, key, title, cc, mode, out):
    """One ``Harness.search`` of ``cc`` (7 alternating rounds) under flush ``mode``, recorded as
    ``res["searches"][key]`` and written to ``out`` at once; the harness is left on the write flush."""
    h.protocol["flush_mode"] = mode
    best, ms = h.search(title, cc, rounds=7)
    h.protocol["flush_mode"] = "write"
    res.setdefault("searches", {})[key] = {"best": best, "us": {k: round(v * 1e3, 3) for k, v in ms.items()}}
    print(key, json.dumps(res["searches"][key]), flush=True)
    json.dump(res, open(out, "w"), indent=1)
