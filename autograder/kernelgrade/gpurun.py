"""The recorded grading run: a batch of kernel-lab submissions graded on a GPU, with its numbers.

    python -m autograder.kernelgrade.gpurun --out DIR                     # elementwise, gemm, primer
    python -m autograder.kernelgrade.gpurun --out DIR --dry-run-cpu       # the same without a GPU

For each lab the batch is: the instructor's notebook (``reference``), the released starters
(``starter``), and every submission of ``tests/autograder/kernel_bad/manifest.json`` for
that lab (known-bad, slow, partly wrong), each made by replacing one answer cell of the
instructor's notebook.  A manifest entry's expectation may be overridden for one device
(``expect_by_device``: a part pinned to one status, with the measured reason); the run applies
the override of the device it grades on and names it in its output and its files (the row's
``expect_override``, the summary's ``device_overrides``).  Every submission is a student of
its own (its file name is its id): its variant shapes are drawn for that id and its notebook
carries a tag signed with a course key made for this run, so the batch goes through the
grader's per-student path -- the one ``python -m autograder grade`` takes -- with the tags
verified.

Phase 1 grades the three labs' batches at once from a cold kernel cache (``-j`` submissions
in flight per lab; compiles run in parallel, the GPU work of one submission at a time under
the grader's lock).  Phase 2 grades each lab's reference again, alone, with the cache warm:
the wall time of a resubmission.  Before phase 1 a preflight checks that the sandboxed
evaluate worker sees the GPU (it tries the isolation modes in turn and records which one
graded).  ``--deadline S`` writes whatever is graded after S seconds and stops.

Written under ``--out``: ``gpu-grading-<device>-<lab>.json`` per lab (device, date,
versions, command; per submission its scores and statuses per part, whether they meet the
manifest's expectation, the findings the rubric scored -- times, % of copy, x library,
flags --, and its timings) and ``gpu-grading-<device>.json`` with the run's summary
(preflight, throughput: submissions per hour per GPU from the time each submission held the
GPU, the batch's own rate on this machine, the warm-cache resubmission times).
``tests/autograder/test_kernel_recorded.py`` checks committed files on the CPU.

Needs only the standard library, torch, tilelang (e.g. the offline bundle of
``tools.bundle``) and nvcc: no Jupyter packages (notebooks are read and written as JSON).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["BAD_DIR", "LABS", "manifest", "expect_for", "make_submission", "starter_submission", "batch_for",
           "summarize", "main"]

REPO = Path(__file__).resolve().parents[2]
BAD_DIR = REPO / "tests" / "autograder" / "kernel_bad"
LABS = ("elementwise", "gemm", "primer")
OK_STATUSES = ["right", "partial", "wrong", "skipped"]  # a starter runs: never error, malformed or timeout


def manifest() -> list[dict]:
    return json.loads((BAD_DIR / "manifest.json").read_text(encoding="utf-8"))["submissions"]


def expect_for(entry: dict, device: str | None) -> tuple[dict, dict | None]:
    """``(expect, override)``: a manifest entry's expectation on ``device`` -- its general
    ``expect``, with the parts that ``expect_by_device[device]`` names replaced -- and that
    override (``{"device", "expect", "why"}``), or None where the device has none (any device
    the entry does not name, and a run without a GPU).  An override must name parts the
    general expectation states, pin each to one status and say why."""
    over = (entry.get("expect_by_device") or {}).get(device) if device else None
    if not over:
        return dict(entry["expect"]), None
    bad = {g: a for g, a in over.get("expect", {}).items() if g not in entry["expect"] or len(a) != 1}
    if bad or not over.get("expect") or not str(over.get("why", "")).strip():
        raise ValueError(f"{entry['name']}: the override for {device} must pin stated parts to one status "
                         f"each and say why ({bad or over})")
    return {**entry["expect"], **over["expect"]}, {"device": device, "expect": over["expect"], "why": over["why"]}


def _instructor(lab: str) -> dict:
    from ..labs import load_lab

    _, src = load_lab(lab)
    return json.loads(src.read_text(encoding="utf-8"))


def make_submission(nb: dict, replace: dict[str, str], tag: dict | None = None) -> dict:
    """A copy of notebook ``nb`` whose answer cells ``<gid>_answer`` hold the given sources;
    with a variant ``tag`` the metadata carries it and the set-up cell defines that student's
    ``P`` (what ``release --student`` writes), so the solutions compute the student's numbers."""
    out = json.loads(json.dumps(nb))
    seen = set()
    for cell in out["cells"]:
        gid = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id", "")
        if gid == "setup" and tag is not None:
            from .labbook import SETUP, _p_literal

            cell["source"] = (SETUP.replace("{{CHECKER}}", f"{tag['lab']!r}, {tag['student']!r}")
                              .replace("{{P}}", _p_literal(tag["params"])))
        key = gid.removesuffix("_answer")
        if gid.endswith("_answer") and key in replace:
            cell["source"] = replace[key]
            cell["outputs"], cell["execution_count"] = [], None
            seen.add(key)
    missing = set(replace) - seen
    if missing:
        raise KeyError(f"no answer cell for {sorted(missing)}")
    if tag is not None:
        from ..variants import TAG_KEY

        out.setdefault("metadata", {})[TAG_KEY] = tag
    return out


def starter_submission(lab: str, tag: dict | None = None) -> dict:
    """The instructor notebook with every kernel answer replaced by its released starter."""
    from ..labs import load_lab

    spec, _ = load_lab(lab)
    starters = {p.grade_id: p.stub for p in spec.parts if p.kind == "kernel" and p.stub}
    return make_submission(_instructor(lab), starters, tag)


def batch_for(lab: str, key: bytes | None = None, side: str | None = None, only: set | None = None,
              device: str | None = None) -> list[dict]:
    """[{"name", "kind", "expect", "side", "nb"}] of the recorded batch of ``lab`` (manifest
    entries filtered by ``side`` when given); with ``key`` every notebook carries the tag of
    its name, signed with it.  ``expect`` is the expectation on ``device`` (:func:`expect_for`);
    an entry whose expectation a device override changed also carries it as ``"override"``."""
    from ..labs import load_lab
    from ..variants import make_tag

    spec, _ = load_lab(lab)
    nb = _instructor(lab)
    kernel_ids = [p.grade_id for p in spec.parts if p.kind == "kernel"]

    def tag(name):
        return make_tag(spec, name, key) if key is not None else None

    out = []
    if side in (None, "gpu"):
        out.append({"name": "reference", "kind": "reference", "side": "gpu",
                    "expect": {g: ["right"] for g in kernel_ids}, "nb": make_submission(nb, {}, tag("reference"))})
        out.append({"name": "starter", "kind": "starter", "side": "gpu", "expect": {g: OK_STATUSES for g in kernel_ids},
                    "nb": starter_submission(lab, tag("starter"))})
    for entry in manifest():
        if entry["lab"] != lab or (side and entry["side"] != side) or (only and entry["name"] not in only):
            continue
        src = (BAD_DIR / f"{entry['name']}.py").read_text(encoding="utf-8")
        expect, override = expect_for(entry, device)
        out.append({"name": entry["name"], "kind": entry["kind"], "expect": expect, "side": entry["side"],
                    **({"override": override} if override else {}),
                    "nb": make_submission(nb, {entry["answer"]: src}, tag(entry["name"]))})
    return out


def _meets(rec: dict, expect: dict) -> dict:
    return {gid: (rec.get("parts", {}).get(gid, {}).get("status") in allowed) for gid, allowed in expect.items()}


def _cpu_expect(sub: dict, spec) -> dict:
    """What a run without a GPU can promise: the CPU side as the manifest says, every GPU
    verdict 'skipped' (never credited), structure and Ascend as expected where stated."""
    out = {}
    for gid, allowed in sub["expect"].items():
        p = spec.part(gid)
        aspect = p.reference().aspect
        if sub["side"] == "cpu" or aspect in ("structure", "ascend"):
            out[gid] = allowed if sub["kind"] != "reference" or aspect in ("structure", "ascend") else ["skipped"]
        else:
            out[gid] = ["skipped"] if sub["kind"] != "starter" else OK_STATUSES
    return out


def _cuda_home() -> None:
    """``CUDA_HOME`` for nvcc when neither it nor an nvcc on PATH is there (as tools.bundle does)."""
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or shutil.which("nvcc"):
        return
    for c in [Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]:
        if (c / "bin" / "nvcc").exists():
            os.environ["CUDA_HOME"] = str(c)
            os.environ["PATH"] = f"{c}/bin:" + os.environ.get("PATH", "")
            return


def _versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch

        out.update(torch=torch.__version__, cuda=torch.version.cuda,
                   device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                   sm_count=torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else None)
    except Exception as exc:  # pragma: no cover - reported, not fatal
        out["torch_error"] = str(exc)
    try:
        import tilelang

        out["tilelang"] = tilelang.__version__
    except Exception:
        out["tilelang"] = None
    for key, cmd, pat in (("driver", ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], r"(\S+)"),
                          ("nvcc", ["nvcc", "--version"], r"release (\d+\.\d+)")):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            m = re.search(pat, r.stdout) if r.returncode == 0 else None
            out[key] = m.group(1) if m else None
        except (OSError, subprocess.TimeoutExpired):
            out[key] = None
    env = os.environ.get("COURSE_GIT_COMMIT")
    if env:  # a copied tree names its commit (as measure.runner.git_state): its own .git may be stale
        out["commit"] = env
        out["dirty"] = os.environ.get("COURSE_GIT_DIRTY", "unknown") not in ("0", "false", "no")
        return out
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                       timeout=10).stdout.strip() or None
        out["dirty"] = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                           capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        out["commit"] = None
    return out


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", (s or "cpu").lower()).strip("-")


def preflight(work: Path, gpu: bool, log) -> dict:
    """Does the sandboxed evaluate worker see the GPU?  Tries the isolation modes in turn (the
    grade's default first) and sets ``KERNELGRADE_EVAL_ISOLATION`` to the first that does."""
    from ..sandbox import IsolationError, Sandbox, TRUSTED_UID
    from .pipeline import EVAL_PACKAGES, WORKER, eval_limits, eval_policy

    cache = work / "kernel-cache" / "_preflight"
    cache.mkdir(parents=True, exist_ok=True)
    tried = []
    # the grade's own choice first; then the other modes; last, without the worker's own Landlock layer
    for iso, landlock in (("auto", True), ("uid", True), ("process", True), ("auto", False)):
        try:
            sb = Sandbox(iso, eval_policy(), uid=TRUSTED_UID, trusted=True)
        except IsolationError as exc:
            tried.append({"isolation": iso, "error": str(exc)[:300]})
            continue
        try:
            t0 = time.monotonic()
            res = sb.run_program(WORKER, ["evaluate"], {"parts": [], "cache_dir": str(cache), "seed": 1,
                                                        "gpu": "auto" if gpu else "off", "landlock": landlock},
                                 eval_limits(), packages=EVAL_PACKAGES, write_dirs=(str(cache),))
            hello = next((e for e in res.events if e.get("event") == "hello"), {})
            fatal = next((e.get("error") for e in res.events if e.get("event") == "fatal"), None)
            tried.append({"isolation": sb.describe(), "landlock": landlock, "state": res.state, "gpu": hello.get("gpu"),
                          "device": hello.get("device"), "confinement": hello.get("confinement"),
                          "fatal": fatal, "seconds": round(time.monotonic() - t0, 2),
                          "output": res.output_tail[-600:] if res.state != "done" or fatal else ""})
        finally:
            sb.close()
        ok = res.state == "done" and not fatal and (bool(hello.get("gpu")) or not gpu)
        log(f"[gpurun] preflight: evaluate in {tried[-1]['isolation']}: "
            + ("ok" if ok else f"no ({res.state}, gpu={hello.get('gpu')}, {fatal or ''})"))
        if ok:
            os.environ["KERNELGRADE_EVAL_ISOLATION"] = sb.mode
            if not landlock:
                os.environ["KERNELGRADE_LANDLOCK"] = "0"
            return {"chosen": sb.mode + ("" if landlock else " (evaluate without its Landlock layer)"), "tried": tried}
    return {"chosen": None, "tried": tried}


def preflight_elaborate(log) -> dict:
    """Does a factory elaborate in the notebook sandbox (tilelang imports there, TIR comes back)?
    No fallback: this worker runs student code."""
    from ..sandbox import IsolationError, Sandbox
    from .pipeline import ELAB_FILES, ELAB_PACKAGES, WORKER, elab_limits

    cell = ("from kernels import primer\n\n\n@tilelang.jit(target=TARGET)\ndef f(N, dtype):\n"
            "    return primer.copy_kernel.get_tir(N, dtype, 256)\n\n\nANSWER['k'] = f\n")
    job = {"parts": [{"gid": "k", "kind": "cuda", "cell": cell,
                      "calls": [{"label": "one", "kwargs": {"N": 4097, "dtype": "float16"}}]}],
           "setup": "import tilelang\nimport tilelang.language as T\nTARGET = {'kind': 'cuda', 'arch': 'sm_90a'}",
           "call_timeout": 60}
    try:
        with Sandbox("auto") as sb:
            t0 = time.monotonic()
            res = sb.run_program(WORKER, ["elaborate"], job, elab_limits(), packages=ELAB_PACKAGES,
                                     files=ELAB_FILES)
            mode = sb.describe()
    except IsolationError as exc:
        return {"ok": False, "error": str(exc)[:500]}
    hello = next((e for e in res.events if e.get("event") == "hello"), {})
    ok = res.state == "done" and any(e.get("event") == "tir" for e in res.events)
    out = {"ok": ok, "isolation": mode, "state": res.state, "seconds": round(time.monotonic() - t0, 2),
           "confinement": hello.get("confinement"),
           "errors": [e for e in res.events if e.get("event") in ("error", "fatal")][:3],
           "output": "" if ok else res.output_tail[-1500:]}
    log(f"[gpurun] preflight: elaborate in {mode}: " + ("ok" if ok else f"FAILED ({res.state}) {out['errors']}"))
    return out


def _rows(lab: str, subs: list[dict], rec_dir: Path, gpu: bool) -> list[dict]:
    from ..labs import load_lab

    spec, _ = load_lab(lab)
    kernel_parts = {p.grade_id: p for p in spec.parts if p.kind == "kernel"}
    rows = []
    for s in subs:
        f = rec_dir / f"{s['name']}.json"
        if not f.exists():
            rows.append({"name": s["name"], "kind": s["kind"], "side": s["side"], "status": "not graded (out of time)",
                         "expect": s["expect"], "meets": {g: False for g in s["expect"]},
                         **({"expect_override": s["override"]} if s.get("override") else {})})
            continue
        rec = json.loads(f.read_text(encoding="utf-8"))
        k = rec.get("kernels", {})
        expect = s["expect"] if gpu else _cpu_expect(s, spec)
        rows.append({
            "name": s["name"], "kind": s["kind"], "side": s["side"], "status": rec.get("status"),
            "auto_score": rec.get("auto_score"), "auto_max": rec.get("auto_max"),
            "kernel_score": round(sum(v.get("score", 0) for g, v in rec.get("parts", {}).items()
                                      if g in kernel_parts), 6),
            "kernel_max": sum(p.points for p in kernel_parts.values()),
            "parts": {g: {"status": v.get("status"), "score": v.get("score"), "points": kernel_parts[g].points,
                          "message": v.get("message")}
                      for g, v in rec.get("parts", {}).items() if g in kernel_parts},
            "analytic": {g: v.get("status") for g, v in rec.get("parts", {}).items() if g not in kernel_parts},
            "variant": rec.get("variant", {}).get("params"), "tag": rec.get("variant", {}).get("tag"),
            "problems": rec.get("problems", [])[:10],
            "expect": expect, "meets": _meets(rec, expect),
            **({"expect_override": s["override"]} if s.get("override") else {}),
            "times": {x: k.get(x) for x in ("wall_s", "elaborate_s", "evaluate_s", "lock_wait_s", "gpu_s")},
            "sandbox_wall_s": (rec.get("sandbox") or {}).get("wall_s"),
            "device": k.get("device"), "isolation": {"elaborate": k.get("elaborate_isolation"),
                                                     "evaluate": k.get("evaluate_isolation")},
            "confinement": {"elaborate": k.get("elaborate_confinement"), "evaluate": k.get("evaluate_confinement")},
            "course_modules": k.get("course_modules"), "restarts": k.get("restarts"),
            "findings": k.get("results"),
        })
    return rows


def summarize(lab: str, rows: list[dict], versions: dict, timing: dict, meta: dict) -> dict:
    speed = [f for r in rows for f in (r.get("findings") or {}).values() if (f or {}).get("speed")]
    gpu_s = [r["times"]["gpu_s"] for r in rows if r.get("times", {}).get("gpu_s")]
    per = statistics.mean(gpu_s) if gpu_s else None
    from ..labs import lab_file_digest

    return {
        "label": meta["label"], "lab": lab, "lab_spec": lab_file_digest(lab), "device": versions.get("device"),
        "date": meta["date"],
        "command": meta["command"], "versions": versions, "jobs": meta["jobs"], "variants": "student (signed tags)",
        "protocol": next((f["speed"].get("protocol") for f in speed), None),
        "copy_gbps": sorted({round(f["speed"]["copy_gbps"], 1) for f in speed
                             if isinstance(f["speed"].get("copy_gbps"), (int, float))}),
        "timing": {**timing, "gpu_held_mean_s": round(per, 3) if per else None,
                   "gpu_bound_per_hour_per_gpu": round(3600 / per, 1) if per else None,
                   "class_of_100_gpu_hours": round(100 * per / 3600, 3) if per else None},
        "all_expectations_met": all(all(r["meets"].values()) for r in rows),
        "submissions": rows,
    }


def _override_note(over: dict) -> str:
    """How the log names a device override that the row's expectation went by."""
    pinned = ", ".join(f"{g}={'/'.join(a)}" for g, a in over["expect"].items())
    return f" (expected on {over['device']} by the manifest's expect_by_device: {pinned})"


WARM_SLACK_S = 15.0


def _warm_need(ref_record: Path) -> float:
    """Seconds a warm resubmission needs at most: the reference's cold wall time in phase 1
    (compiles included, so an upper bound) plus a margin; 90 s when it is not known."""
    try:
        wall = json.loads(ref_record.read_text(encoding="utf-8")).get("kernels", {}).get("wall_s")
    except (OSError, ValueError):
        wall = None
    return float(wall) + WARM_SLACK_S if isinstance(wall, (int, float)) else 90.0


class _Lab(threading.Thread):
    def __init__(self, lab: str, work: Path, jobs: int, only: set | None, key: bytes, log, device: str | None = None):
        super().__init__(daemon=True, name=f"gpurun-{lab}")
        self.lab, self.work, self.jobs, self.only, self.key, self.log = lab, work, jobs, only, key, log
        self.subs = batch_for(lab, key, only=only, device=device)
        self.sub_dir = work / lab / "submissions"
        self.sub_dir.mkdir(parents=True, exist_ok=True)
        for s in self.subs:
            (self.sub_dir / f"{s['name']}.ipynb").write_text(json.dumps(s["nb"], ensure_ascii=False), encoding="utf-8")
        self.out = work / lab / "graded"
        self.wall = None
        self.error = None
        self.summary = None

    def run(self):
        from ..grade import grade_batch

        t0 = time.monotonic()
        try:
            self.summary = grade_batch(sorted(self.sub_dir.glob("*.ipynb")), self.lab, self.out, jobs=self.jobs,
                                       progress=False, force=True, variants="student")
        except Exception as exc:  # reported in the results, never lost
            self.error = f"{type(exc).__name__}: {exc}"
        self.wall = time.monotonic() - t0
        self.log(f"[gpurun] {self.lab}: {len(self.subs)} submissions graded in {self.wall:.1f} s"
                 + (f" ({self.error})" if self.error else ""))


def run(labs: list[str], out: Path, jobs: int, *, gpu: bool, deadline: float | None, only: set | None,
        keep: bool, log=print) -> dict:
    t_start = time.monotonic()
    stop_at = t_start + deadline if deadline else None
    _cuda_home()
    work = Path(tempfile.mkdtemp(prefix="gpurun-"))
    os.chmod(work, 0o755)
    os.environ["KERNELGRADE_CACHE"] = str(work / "kernel-cache")
    os.environ["KERNELGRADE_SHARED_CACHE"] = "1"
    os.environ.setdefault("KERNELGRADE_COMPILE_WORKERS", str(max(2, (os.cpu_count() or 2) // 4)))
    if not gpu:
        os.environ["KERNELGRADE_GPU"] = "off"
    key = secrets.token_hex(32)
    os.environ["AUTOGRADER_KEY"] = key  # this run's course key: the batch's tags are signed and checked with it
    versions = _versions()
    device = versions.get("device") if gpu else None
    meta = {"label": ("recorded grading run (live on the GPU named below)" if gpu else
                      "dry run on the CPU (no GPU: correctness and speed not graded; never a result to commit)"),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": " ".join(["python", "-m", "autograder.kernelgrade.gpurun"] + sys.argv[1:]), "jobs": jobs}
    out.mkdir(parents=True, exist_ok=True)
    pre = {"elaborate": preflight_elaborate(log)}
    if pre["elaborate"]["ok"]:
        pre.update(preflight(work, gpu, log))
    if not pre["elaborate"]["ok"] or pre.get("chosen") is None:
        result = {**meta, "versions": versions, "preflight": pre,
                  "error": ("a kernel factory did not elaborate in the notebook sandbox" if not pre["elaborate"]["ok"]
                            else "the sandboxed evaluate worker could not use the GPU in any isolation mode")}
        (out / f"gpu-grading-{_slug(device or 'cpu')}.json").write_text(json.dumps(result, indent=1) + "\n")
        log("[gpurun] preflight failed: see " + str(out))
        return result
    threads = [_Lab(lab, work, jobs, only, key.encode(), log, device) for lab in labs]
    log(f"[gpurun] phase 1: {sum(len(t.subs) for t in threads)} submissions of {', '.join(labs)}, cold kernel cache, "
        f"-j {jobs} per lab, {os.environ['KERNELGRADE_COMPILE_WORKERS']} compile threads per submission")
    t1 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(None if stop_at is None else max(0.0, stop_at - time.monotonic()))
    phase1 = time.monotonic() - t1
    timed_out = any(t.is_alive() for t in threads)
    warm: dict[str, float | None] = {}
    warm_skipped: dict[str, str] = {}
    order = [lab for lab in ("elementwise", "primer", "gemm") if lab in labs] + [x for x in labs if x not in LABS]
    if not timed_out:
        log("[gpurun] phase 2: each reference again, alone, warm kernel cache")
        from ..grade import grade_batch

        for lab in order:
            need = _warm_need(work / lab / "graded" / "records" / "reference.json")
            left = None if stop_at is None else stop_at - time.monotonic()
            if left is not None and left < need:
                warm[lab] = None
                warm_skipped[lab] = (f"not run: {left:.0f} s left before the deadline, {need:.0f} s needed "
                                     f"(the reference's cold wall time in phase 1 + {WARM_SLACK_S:.0f} s)")
                log(f"[gpurun] {lab}: warm resubmission {warm_skipped[lab]}")
                continue
            t0 = time.monotonic()
            grade_batch([work / lab / "submissions" / "reference.ipynb"], lab, work / lab / "warm", jobs=1,
                        progress=False, force=True, variants="student")
            warm[lab] = round(time.monotonic() - t0, 2)
            log(f"[gpurun] {lab}: warm resubmission {warm[lab]} s")
    total = time.monotonic() - t_start
    files, summary = [], {}
    n_all = sum(len(t.subs) for t in threads)
    for t in threads:
        rows = _rows(t.lab, t.subs, t.out / "records", gpu)
        wrec = t.work / t.lab / "warm" / "records" / "reference.json"
        warm_detail = json.loads(wrec.read_text(encoding="utf-8")).get("kernels", {}) if wrec.exists() else {}
        timing = {"batch_submissions": len(t.subs), "batch_wall_s": round(t.wall, 2) if t.wall else None,
                  "batch_graded": sum(1 for r in rows if "times" in r),
                  "batch_error": t.error, "phase1_wall_s": round(phase1, 2),
                  "warm_resubmission_wall_s": warm.get(t.lab),
                  **({"warm_resubmission_skipped": warm_skipped[t.lab]} if t.lab in warm_skipped else {}),
                  "warm_resubmission_detail": {x: warm_detail.get(x) for x in ("elaborate_s", "evaluate_s", "gpu_s",
                                                                                 "wall_s")}}
        res = summarize(t.lab, rows, versions, timing, meta)
        path = out / f"gpu-grading-{_slug(device or 'cpu')}-{t.lab}.json"
        path.write_text(json.dumps(res, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        files.append(path.name)
        summary[t.lab] = {"met": res["all_expectations_met"], "timing": res["timing"],
                          "not_met": {r["name"]: {g: r.get("parts", {}).get(g, {}).get("status", r.get("status"))
                                                  for g, ok in r["meets"].items() if not ok}
                                      for r in rows if not all(r["meets"].values())},
                          "device_overrides": {r["name"]: r["expect_override"] for r in rows if r.get("expect_override")}}
        log(f"{'submission':<26s} {'kind':<13s} {'kernels':>9s}  expectations ({t.lab})")
        for r in rows:
            bad = [g for g, ok in r["meets"].items() if not ok]
            log(f"{r['name']:<26s} {r['kind']:<13s} {r.get('kernel_score', 0):>4g}/{r.get('kernel_max', 0):<4g}  "
                + ("met" if not bad else "NOT MET: " + ", ".join(
                    f"{g}={r.get('parts', {}).get(g, {}).get('status', r.get('status'))}" for g in bad))
                + (_override_note(r["expect_override"]) if r.get("expect_override") else ""))
    all_rows = [r for t in threads for r in _rows(t.lab, t.subs, t.out / "records", gpu)]
    gpu_all = [r["times"]["gpu_s"] for r in all_rows if r.get("times", {}).get("gpu_s")]
    n_graded = sum(1 for r in all_rows if "times" in r)  # a deadline leaves some ungraded: not counted
    head = {**meta, "device": device, "versions": versions, "preflight": pre, "labs": labs, "files": files,
            "timed_out": timed_out, "deadline_s": deadline,
            "throughput": {
                "submissions": n_all, "graded": n_graded, "phase1_wall_s": round(phase1, 2),
                "total_wall_s": round(total, 2), "cpu_cores": os.cpu_count(),
                "observed_per_hour": round(3600 * n_graded / phase1, 1) if phase1 > 0 else None,
                "gpu_held_mean_s": round(statistics.mean(gpu_all), 3) if gpu_all else None,
                "gpu_bound_per_hour_per_gpu": round(3600 / statistics.mean(gpu_all), 1) if gpu_all else None,
                "warm_resubmission_wall_s": warm, "warm_resubmission_skipped": warm_skipped,
                "note": "observed_per_hour: the graded submissions of this batch per hour of phase 1 on this "
                        "machine, cold cache, the labs at once; "
                        "gpu_bound_per_hour_per_gpu: 3600 s / the mean time a submission held the GPU (the "
                        "rate one GPU sustains when compiles keep up)"},
            "labs_summary": summary}
    (out / f"gpu-grading-{_slug(device or 'cpu')}.json").write_text(
        json.dumps(head, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    log(f"[gpurun] wrote {', '.join(files)} and the summary to {out} ({total:.0f} s)")
    if keep:
        for lab in labs:
            for sub in ("graded", "warm"):
                src = work / lab / sub
                if src.exists():
                    shutil.copytree(src / "records", out / "records" / lab / sub, dirs_exist_ok=True)
    if not timed_out:
        shutil.rmtree(work, ignore_errors=True)
    return head


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograder.kernelgrade.gpurun", description=__doc__.split("\n")[0])
    ap.add_argument("--labs", default=",".join(LABS), help=f"comma list (default {','.join(LABS)})")
    ap.add_argument("--out", type=Path, required=True, help="where the result files go")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="submissions in flight per lab (default 4)")
    ap.add_argument("--only", help="comma list of manifest names (the reference and the starter always run)")
    ap.add_argument("--deadline", type=float, help="seconds: write what is graded by then and stop")
    ap.add_argument("--keep", action="store_true", help="also copy the grade records under OUT/records")
    ap.add_argument("--dry-run-cpu", action="store_true",
                    help="run without a GPU (correctness and speed not graded): checks the run, never a result to commit")
    args = ap.parse_args(argv)
    labs = [x for x in args.labs.split(",") if x]
    only = set(args.only.split(",")) if args.only else None
    if not args.dry_run_cpu:
        try:
            import torch

            if not torch.cuda.is_available():
                print("error: no CUDA device: the recorded run needs a GPU (or pass --dry-run-cpu)", file=sys.stderr)
                return 2
        except ImportError:
            print("error: torch is not installed", file=sys.stderr)
            return 2
    try:
        head = run(labs, args.out, args.jobs, gpu=not args.dry_run_cpu, deadline=args.deadline, only=only,
                   keep=args.keep, log=lambda s: print(s, flush=True))
    except Exception as exc:  # the run's own failure: leave its traceback where the results go
        import traceback

        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu-grading-error.json").write_text(json.dumps(
            {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-6000:],
             "versions": _versions()}, indent=1) + "\n", encoding="utf-8")
        raise
    if head.get("error"):
        return 3
    if head.get("timed_out"):
        print("[gpurun] the deadline passed: partial results written", flush=True)
        os._exit(4)  # the batch threads are still running: leave without waiting for them
    return 0


if __name__ == "__main__":
    sys.exit(main())
