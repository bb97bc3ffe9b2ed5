"""Build, read, check and time submitted kernels (the trusted side; no student Python).

:func:`run_evaluation` is the body of the ``evaluate`` worker.  The pieces it is made of
take the kernel as a ``launch(*args)`` callable and a course harness ``h``, so that the
checking logic runs on the CPU in the tests, with stand-in launches that behave like the
known-bad kernels (nothing written, half written, low precision, inputs overwritten).

Correctness (:func:`check_shape`): fresh inputs from the harness (the grader's private
seed), every output pre-filled with a poison value, the inputs copied before the launch
and compared bit for bit afterwards, the fp64 reference computed *after* the kernel ran
from the copies, the course's tolerances, and no mismatching element allowed.

Speed (:func:`measure_speed`): one launch is timed first (a kernel slower than
:data:`SLOW_MS` or 50 times the library is not put through the protocol); then the
kernel and the library baseline are timed by the harness in alternation (warm-up, L2
flushed before every sample, CUDA events, median), the copy bandwidth is measured in the
same process, and the outputs of the timed launches are checked again.  A time that
beats the physical bound -- the ledger's bytes at the measured copy bandwidth, or the
ledger's FLOPs at the device's peak, each with :data:`MARGIN` -- is flagged.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from .tasks import CudaTask, get_task

__all__ = ["check_shape", "measure_speed", "physical_flags", "evaluate_part", "run_evaluation", "MARGIN", "SLOW_MS",
           "ROUNDS", "build_args", "ContextLost"]

MARGIN = 0.10  # a kernel may beat torch's copy by a little (recorded: 1.02x); not by 10 %
SLOW_MS = 50.0  # the slowest reference kernel takes under 1 ms at its timing shape
SLOW_FACTOR = 50.0
ROUNDS = 3  # kernel and library timed in alternation (the course's Harness.bench rounds)
PEAK_MACHINE = "h200-spec"


def _torch():
    import torch

    return torch


def _dtype(name: str):
    return getattr(_torch(), name)


def build_args(h, task: CudaTask, shape: dict) -> tuple[dict, dict, list]:
    """(inputs, outputs, kernel arguments in the interface's order); outputs poisoned.

    A scalar parameter (``Param.scalar``) is passed as a Python number drawn by the task."""
    inputs = task.make_inputs(h, shape)
    params = task.signature(shape)
    outputs = {p.name: h.poisoned(p.shape, _dtype(p.dtype)) for p in params if p.output}
    args = [outputs[p.name] if p.output else inputs[p.name] for p in params]
    return inputs, outputs, args


def _tensors(d: dict) -> dict:
    torch = _torch()
    return {k: v for k, v in d.items() if isinstance(v, torch.Tensor)}


def _compare(h, task: CudaTask, shape: dict, label: str, outputs: dict, want: dict) -> list[dict]:
    recs = []
    for name, w in want.items():
        tol = task.tolerance(shape, name, w) if task.tolerance else {}
        rec = h.check(f"{task.key} {label} {name}", outputs[name], w, **tol)
        recs.append({k: rec.get(k) for k in ("name", "shape", "dtype", "numel", "atol", "rtol", "max_abs_err",
                                             "unwritten", "nonfinite", "mismatched", "ok")})
    return recs


def _unchanged(inputs: dict, saved: dict) -> list[str]:
    torch = _torch()
    return [k for k in saved if not torch.equal(inputs[k], saved[k])]


def _saved(inputs: dict) -> dict:
    """Copies of the input tensors (scalars are passed by value: nothing to compare)."""
    return {**inputs, **{k: v.clone() for k, v in _tensors(inputs).items()}}


def check_shape(h, task: CudaTask, shape: dict, launch: Callable, label: str) -> dict:
    """Run the kernel once on fresh inputs and compare; never raises for a wrong result."""
    torch = _torch()
    inputs, outputs, args = build_args(h, task, shape)
    saved = _saved(inputs)
    launch(*args)
    if h.is_cuda:
        torch.cuda.synchronize()
    changed = _unchanged(inputs, _tensors(saved))
    want = task.reference(saved, shape)  # computed only now, from the untouched copies
    recs = _compare(h, task, shape, label, outputs, want)
    ok = all(r["ok"] for r in recs) and not changed
    return {"label": label, "shape": shape, "ok": ok, "outputs": recs, "inputs_changed": changed}


def physical_flags(task: CudaTask, ms: float, nbytes: float | None, flops: float | None, copy_gbps: float | None,
                   peak_flops: float | None) -> list[str]:
    """Why a time is impossible: faster than the copy bound or than the FLOP peak (with MARGIN)."""
    flags = []
    if nbytes and copy_gbps and ms > 0:
        bound_ms = nbytes / (copy_gbps * 1e9 * (1 + MARGIN)) * 1e3
        if ms < bound_ms:
            flags.append(f"{ms * 1e3:.1f} us is below the copy bound: {nbytes / 1e6:.1f} MB (ledger) at the measured "
                         f"{copy_gbps:.0f} GB/s + {MARGIN:.0%} needs {bound_ms * 1e3:.1f} us")
    if flops and peak_flops and ms > 0:
        bound_ms = flops / (peak_flops * (1 + MARGIN)) * 1e3
        if ms < bound_ms:
            flags.append(f"{ms * 1e3:.1f} us is below the FLOP bound: {flops / 1e9:.1f} GFLOP (ledger) at "
                         f"{peak_flops / 1e12:.0f} TFLOP/s + {MARGIN:.0%} needs {bound_ms * 1e3:.1f} us")
    return flags


def _peak_flops() -> float | None:
    try:
        from ledger.machines import get_machine

        return float(get_machine(PEAK_MACHINE).peak_flops)
    except Exception:
        return None


def _one_launch_ms(h, fn) -> float:
    torch = _torch()
    if not h.is_cuda:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e)


def measure_speed(h, task: CudaTask, shape: dict, launch: Callable, rounds: int = ROUNDS) -> dict:
    """Time kernel and library at ``shape`` with the course's protocol; check the timed outputs."""
    torch = _torch()
    inputs, outputs, args = build_args(h, task, shape)
    saved = _saved(inputs)
    params = task.signature(shape)
    base_out = {p.name: torch.empty(p.shape, dtype=_dtype(p.dtype), device=h.device) for p in params if p.output}
    base = task.baseline(inputs, base_out, shape)
    nbytes, flops, src = task.cost(shape)
    fn = lambda: launch(*args)  # noqa: E731  (the compiled kernel, bound once: nothing else in the timing)
    fn()
    base()
    if h.is_cuda:
        torch.cuda.synchronize()
    probe = _one_launch_ms(h, fn)
    base_probe = _one_launch_ms(h, base)
    copy = h.copy_bandwidth()
    out: dict[str, Any] = {"shape": shape, "bytes": nbytes, "flops": flops, "ledger_source": src,
                           "copy_gbps": copy, "baseline": task.baseline_label, "protocol": h.protocol.get("describe")}
    if probe > max(SLOW_MS, SLOW_FACTOR * base_probe):
        out.update(too_slow=True, ms=probe, baseline_ms=base_probe, metric=0.0,
                   note=f"one launch took {probe:.1f} ms ({probe / max(base_probe, 1e-6):.0f}x the library); "
                        f"not timed further")
    else:
        rec = h.bench(f"{task.key} {shape}", fn, bytes=nbytes, flops=flops, baselines={task.baseline_label: base},
                      rounds=rounds, ledger_source=src)
        ms = float(rec["ms"])
        bms = rec["baselines"].get(task.baseline_label)
        out.update(ms=ms, baseline_ms=bms, gbps=rec.get("gbps"), tflops=rec.get("tflops"),
                   frac_copy=rec.get("frac_copy_bw"), x_library=rec["speedup"].get(task.baseline_label),
                   ms_per_round=rec.get("ms_per_round"), clock_events=rec.get("clock_events"))
        out["metric"] = out["frac_copy"] if task.metric == "frac_copy" else out["x_library"]
    if h.is_cuda:
        torch.cuda.synchronize()
    changed = _unchanged(inputs, _tensors(saved))
    want = task.reference(saved, shape)
    recs = _compare(h, task, shape, "timed", outputs, want)
    out["after_timing_ok"] = all(r["ok"] for r in recs) and not changed
    out["after_timing"] = recs
    out["flags"] = physical_flags(task, out["ms"], nbytes, flops, copy, _peak_flops())
    return out


# ----------------------------------------------------------------------------- the worker body
_STICKY = ("illegal memory access", "misaligned address", "unspecified launch failure", "illegal instruction",
           "an illegal", "CUDA error", "device-side assert", "cudaError")


def _versions() -> dict:
    import platform

    out = {"python": platform.python_version()}
    for mod in ("torch", "tilelang"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = None
    try:
        import torch

        out["cuda"] = torch.version.cuda
    except Exception:
        pass
    return out


def _compile(func, opts: dict):
    import tilelang

    from .tasks import TARGET

    return tilelang.compile(func, target=TARGET, pass_configs=opts.get("pass_configs"),
                            compile_flags=opts.get("compile_flags"))


def _par_compile(jobs: dict, workers: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    def one(item):
        label, (func, opts) = item
        t0 = time.perf_counter()
        try:
            return label, {"kernel": _compile(func, opts), "error": None, "s": time.perf_counter() - t0}
        except Exception as exc:
            msg = str(exc).strip().splitlines()
            tail = [ln for ln in msg if ln.strip()][-3:]
            return label, {"kernel": None, "error": f"{type(exc).__name__}: {' | '.join(tail)[:600]}",
                           "s": time.perf_counter() - t0}

    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        return dict(pool.map(one, jobs.items()))


def _ascend(part: dict, task, send) -> None:
    from . import structure, tirsafe
    from .measure import ascend_capture

    gid = part["gid"]
    t = part["tirs"][0] if part["tirs"] else None
    if t is None:
        return
    try:
        func = tirsafe.load(t["json"])
        tirsafe.check_body(func)
        tirsafe.check_interface(func, task.signature(t["shape"]))
    except tirsafe.TirError as exc:
        send({"event": "interface", "gid": gid, "errors": {t["label"]: str(exc)}})
        return
    send({"event": "interface", "gid": gid, "errors": {}})
    t0 = time.perf_counter()
    try:
        cap = ascend_capture(gid, func, t["shape"])
    except Exception as exc:
        msg = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
        send({"event": "ascend", "gid": gid, "lowers": False, "seconds": round(time.perf_counter() - t0, 2),
              "error": (msg[-1] if msg else type(exc).__name__)[:500],
              "checks": [{"key": "lowers", "ok": False, "found": "lowering failed before the bisheng call"}]})
        return
    analysis = structure.analyse_ascend(cap)
    send({"event": "ascend", "gid": gid, "lowers": True, "seconds": round(time.perf_counter() - t0, 2),
          "analysis": analysis, "checks": structure.evaluate(task.structure, analysis, task.signature(t["shape"]),
                                                             ascend=True)})


def build_part(part: dict, gpu: bool, workers: int, send, compile_all: bool = False) -> dict:
    """Interface, build (every shape when a GPU pass follows, else the timing shape), structure,
    Ascend lowering -- everything that needs no GPU; returns what the GPU pass needs."""
    from . import structure, tirsafe

    gid = part["gid"]
    task = get_task(part["task"])
    send({"event": "start", "gid": gid, "phase": "build"})
    t_part = time.perf_counter()
    if task.kind == "ascend":
        _ascend(part, task, send)
        return {"gid": gid, "task": task, "gpu": False, "t0": t_part}
    funcs, errors = {}, {}
    for t in part["tirs"]:
        try:
            func = tirsafe.load(t["json"])
            tirsafe.check_body(func)
            tirsafe.check_interface(func, task.signature(t["shape"]))
            funcs[t["label"]] = (func, tirsafe.compile_options(t.get("jit")), t)
        except tirsafe.TirError as exc:
            errors[t["label"]] = str(exc)
    send({"event": "interface", "gid": gid, "errors": errors})
    time_label = next((t["label"] for t in part["tirs"] if t["role"] == "time"), None)
    wanted = list(funcs) if (gpu or compile_all) else [lb for lb in funcs if lb == time_label]
    built = _par_compile({lb: funcs[lb][:2] for lb in wanted}, workers)
    send({"event": "build", "gid": gid, "errors": {k: v["error"] for k, v in built.items() if v["error"]},
          "compile_s": {k: round(v["s"], 2) for k, v in built.items()}})
    tk = built.get(time_label, {}).get("kernel") if time_label else None
    if tk is not None:
        try:
            src = tk.get_kernel_source()
            params = task.signature(funcs[time_label][2]["shape"])
            analysis = structure.analyse_cuda(src, funcs[time_label][0], params)
            send({"event": "structure", "gid": gid, "label": time_label, "analysis": analysis,
                  "checks": structure.evaluate(task.structure, analysis, params)})
        except Exception as exc:
            send({"event": "structure", "gid": gid, "error": f"{type(exc).__name__}: {exc}"[:400]})
    ready = gpu and not errors and not any(v["error"] for v in built.values()) and tk is not None
    return {"gid": gid, "task": task, "gpu": ready, "built": built, "errors": errors, "funcs": funcs,
            "time_label": time_label, "tirs": part["tirs"], "t0": t_part}


def gpu_part(pre: dict, h, send, rounds: int = ROUNDS) -> None:
    """Correctness on every shape, then (for a correct kernel) speed: needs the GPU."""
    gid, task, built = pre["gid"], pre["task"], pre["built"]
    send({"event": "start", "gid": gid, "phase": "gpu"})
    results = []
    try:
        for t in pre["tirs"]:
            if t["role"] != "check":
                continue
            lb = t["label"]
            k = built.get(lb, {}).get("kernel")
            if k is None:
                results.append({"label": lb, "shape": t["shape"], "ok": False,
                                "error": pre["errors"].get(lb) or built.get(lb, {}).get("error") or "not built"})
                continue
            results.append(check_shape(h, task, t["shape"], k, lb))
        send({"event": "correct", "gid": gid, "shapes": results})
        tk = built[pre["time_label"]]["kernel"]
        if results and all(r["ok"] for r in results):
            sp = measure_speed(h, task, pre["funcs"][pre["time_label"]][2]["shape"], tk, rounds=rounds)
            send({"event": "speed", "gid": gid, **sp})
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        send({"event": "crash", "gid": gid, "error": text[:600]})
        if any(s in text for s in _STICKY):
            raise ContextLost(text) from exc


def evaluate_part(part: dict, h, gpu: bool, workers: int, send, rounds: int = ROUNDS) -> None:
    """One part, both phases, in this process (the notebook's self-check)."""
    pre = build_part(part, gpu, workers, send)
    if pre.get("gpu"):
        gpu_part(pre, h, send, rounds)
    send({"event": "part_done", "gid": part["gid"], "seconds": round(time.perf_counter() - pre["t0"], 2)})


class ContextLost(RuntimeError):
    """A CUDA error that poisons the context: no further kernel can run in this process."""


def run_evaluation(job: dict, send, confinement: list[str], wait_reply=None) -> None:
    """The evaluate worker: build every part, then -- holding the GPU, which the parent grants
    (``gpu_wait`` -> ``go``) -- check and time the parts that built, then give it back."""
    import logging
    import os

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    import tilelang  # noqa: F401

    want_gpu = job.get("gpu", "auto") != "off"
    torch = None
    if want_gpu:
        import torch
    gpu = bool(want_gpu and torch is not None and torch.cuda.is_available())
    dev = torch.cuda.get_device_name(0) if gpu else None
    send({"event": "hello", "confinement": confinement, "gpu": gpu, "device": dev, "versions": _versions()})
    workers = int(job.get("compile_workers") or max(1, min(8, os.cpu_count() or 1)))
    pres = []
    for part in job["parts"]:
        pre = build_part(part, gpu, workers, send, compile_all=bool(job.get("compile_all")))
        if pre.get("gpu"):
            pres.append(pre)
        else:
            send({"event": "part_done", "gid": part["gid"], "seconds": round(time.perf_counter() - pre["t0"], 2)})
    if pres:
        from .measure import make_harness

        h = make_harness(job["seed"], "cuda")
        torch.cuda.synchronize()
        send({"event": "gpu_wait"})
        if wait_reply is not None and wait_reply() != "go":
            send({"event": "fatal", "error": "the grader did not grant the GPU"})
            return
        t_gpu = time.perf_counter()
        for pre in pres:
            try:
                gpu_part(pre, h, send, rounds=int(job.get("rounds", ROUNDS)))
            except ContextLost:
                os._exit(4)  # the parent restarts a worker for the remaining parts
            send({"event": "part_done", "gid": pre["gid"], "seconds": round(time.perf_counter() - pre["t0"], 2)})
        torch.cuda.synchronize()
        send({"event": "gpu_release", "seconds": round(time.perf_counter() - t_gpu, 3)})
    send({"event": "done"})
