"""The recorded GPU grading runs committed beside the labs, read back for the instructor's numbers.

``labs/results/gpu-grading-<device>-<lab>.json`` are the per-lab files that
:mod:`autograder.kernelgrade.gpurun` writes (one per lab and device: a lab may have been graded
on several devices, and a lab's newest file may come from a different run than another lab's),
``labs/results/runs/`` the run summaries of those runs, as written.  :func:`all_lab_records`
gives every file of a lab (the tests check them all), :func:`lab_records` the newest of each
lab by its recorded date: the run whose numbers :func:`grading_numbers` computes for the
instructor's README and the book's lab appendix -- time to grade one submission, GPU time per
submission, submissions per hour per GPU, the isolation the GPU machine graded in -- and
:func:`book_values` the texts the appendix glues.  Nothing here is typed in: every number is
read from those files.

    python -m autograder.kernelgrade.records                 # print the numbers (JSON)
    python -m autograder.kernelgrade.records --readme-rows   # the rows of labs/README.md's table (newest run per lab)
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

__all__ = ["RESULTS", "all_lab_records", "lab_records", "run_summaries", "lab_numbers", "grading_numbers",
           "book_values", "readme_rows", "WARM_TARGET_S"]

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "labs" / "results"
WARM_TARGET_S = 60.0  # issue 16: a resubmission of the elementwise lab graded in a minute with the cache warm
CLASS = 100
_OUT = re.compile(r" --out \S+")  # where the grading machine wrote its files: not the reader's business


def _order(rec: dict) -> tuple:
    return rec.get("date", ""), rec.get("device") or ""


def all_lab_records(results: Path = RESULTS) -> dict[str, list[dict]]:
    """{lab: every recorded per-lab file of it, oldest first} (files that carry submissions; the
    run summaries do not).  A lab graded on two devices has two files: none hides the other."""
    out: dict[str, list[dict]] = {}
    for f in sorted(Path(results).glob("gpu-grading-*-*.json")):
        rec = json.loads(f.read_text(encoding="utf-8"))
        if "submissions" in rec:
            out.setdefault(rec["lab"], []).append(rec)
    return {lab: sorted(recs, key=_order) for lab, recs in sorted(out.items())}


def lab_records(results: Path = RESULTS) -> dict[str, dict]:
    """{lab: its newest recorded per-lab file} by the record's date (the device's name breaks a
    tie): the run the README's table and the book's lab appendix quote."""
    return {lab: recs[-1] for lab, recs in all_lab_records(results).items()}


def run_summaries(results: Path = RESULTS) -> list[dict]:
    """The summaries of the recorded runs, oldest first."""
    runs = [json.loads(f.read_text(encoding="utf-8")) for f in sorted((Path(results) / "runs").glob("*.json"))]
    return sorted(runs, key=_order)


def _graded(rec: dict) -> list[dict]:
    return [s for s in rec["submissions"] if s.get("times")]


def lab_numbers(rec: dict) -> dict:
    """One recorded per-lab file's numbers: the run it comes from, the reference's wall time
    from submission to grade (cold kernel cache, in the batch, with the wait for the GPU), the
    warm-cache resubmission when the run measured it, GPU time per submission, submissions per
    hour per GPU and the GPU time of a class of :data:`CLASS`, the batch's own rate, the isolation."""
    graded = _graded(rec)
    ref = next(s for s in graded if s["name"] == "reference")
    gpu = [s["times"]["gpu_s"] for s in graded if s["times"].get("gpu_s")]
    held = statistics.mean(gpu)
    t = rec["timing"]
    batch = t.get("batch_wall_s")
    return {
        "date": rec["date"], "command": rec["command"], "jobs": rec["jobs"], "device": rec["device"],
        "graded": len(graded), "batch_wall_s": batch,
        "batch_per_hour": round(3600 * len(graded) / batch, 1) if batch else None,
        "reference_wall_s": ref["times"]["wall_s"], "reference_lock_wait_s": ref["times"]["lock_wait_s"],
        "reference_compile_cold": True,
        "warm_resubmission_wall_s": t.get("warm_resubmission_wall_s"),
        "gpu_held_mean_s": round(held, 2), "per_hour_per_gpu": round(3600 / held, 1),
        "class_gpu_minutes": round(CLASS * held / 60, 1),
        "isolation": sorted({v for s in graded for v in (s.get("isolation") or {}).values() if v}),
    }


def grading_numbers(results: Path = RESULTS) -> dict:
    """``labs``: per lab, :func:`lab_numbers` of its newest recorded run (:func:`lab_records`);
    ``runs``: every recorded run's summary (device, command, commit, the labs it graded, the
    labs it is the newest record of, the isolation its preflight chose)."""
    labs = {lab: lab_numbers(rec) for lab, rec in lab_records(results).items()}
    runs = run_summaries(results)
    every, newest = all_lab_records(results), lab_records(results)

    def same(rec, r):
        return rec["date"] == r["date"] and rec.get("device") == r.get("device")

    return {"labs": labs, "class": CLASS, "warm_target_s": WARM_TARGET_S,
            "runs": [{"date": r["date"], "device": r.get("device"), "command": r["command"],
                      "commit": (r.get("versions") or {}).get("commit"),
                      "dirty": (r.get("versions") or {}).get("dirty"), "timed_out": r.get("timed_out"),
                      "total_wall_s": (r.get("throughput") or {}).get("total_wall_s"),
                      "labs_committed": sorted(lab for lab, recs in every.items() if any(same(x, r) for x in recs)),
                      "labs_newest": sorted(lab for lab, rec in newest.items() if same(rec, r)),
                      "evaluate_isolation": (r.get("preflight") or {}).get("chosen"),
                      "evaluate_landlock": _evaluate_landlock(r),
                      "cpu_cores": (r.get("throughput") or {}).get("cpu_cores"),
                      "bwrap": not any("bubblewrap is not installed" in str(x.get("isolation", ""))
                                       for x in (r.get("preflight") or {}).get("tried", []))}
                     for r in runs]}


def _evaluate_landlock(run: dict) -> bool | None:
    """Did the run's evaluate worker keep its own Landlock layer (the preflight's choice)?"""
    chosen = (run.get("preflight") or {}).get("chosen")
    return None if chosen is None else "without its Landlock layer" not in chosen


def _zh_date(iso: str) -> str:
    return iso[:10]


def lab_name_zh(lab: str) -> str:
    """The lab as the book names it: its spec's title without "实验 · " and the chapter number."""
    from ..labs import load_lab

    return re.sub(r"^实验 · |（[^（）]*）$", "", load_lab(lab)[0].title)


def book_values(results: Path = RESULTS) -> dict[str, str]:
    """The texts the lab appendix glues (``labs.grading.*``), from :func:`grading_numbers`."""
    n = grading_numbers(results)
    ew = n["labs"]["elementwise"]
    rec = lab_records(results)["elementwise"]
    v = rec["versions"]
    run = next(r for r in n["runs"] if r["date"] == ew["date"] and r["device"] == ew["device"])
    others = [n["labs"][lab] for lab in ("gemm", "primer") if lab in n["labs"]]
    warm = ew["warm_resubmission_wall_s"]
    target = n["warm_target_s"]
    alongside = [lab_name_zh(lab) for lab, o in sorted(n["labs"].items())
                 if lab != "elementwise" and (o["date"], o["device"]) == (ew["date"], ew["device"])]

    def verdict(s):
        return "在一分钟的目标以内" if s <= target else "超过了一分钟的目标"

    if warm is not None:
        warm_text = f"缓存已热时，重新提交一份参考答案从提交到出分用了 {warm:.0f} 秒，{verdict(warm)}"
    else:
        ref = ew["reference_wall_s"]
        warm_text = (f"这次运行没有测到缓存已热时的重新提交；缓存还是冷的、同一批里有 {ew['jobs']} 份在同时评，"
                     f"参考答案从提交到出分用了 {ref:.0f} 秒（其中 {ew['reference_lock_wait_s']:.0f} 秒在排队等 GPU），"
                     f"{'已' if ref <= target else ''}{verdict(ref)}")
    return {
        "labs.grading.header": (f"记录结果（recorded）：{ew['device']}，{_zh_date(ew['date'])}，驱动 {v.get('driver')}，"
                                f"CUDA {v.get('cuda')}，torch {v.get('torch')}，tilelang {v.get('tilelang')}；"
                                f"命令：`{_OUT.sub('', ew['command'])}`。"),  # Markdown: the page pastes it with {glue:md}
        "labs.grading.ew_graded": str(ew["graded"]),
        "labs.grading.ew_batch_s": f"{ew['batch_wall_s']:.0f}",
        "labs.grading.alongside": (f"（同一批里还同时在评{'与'.join(f'「{n}」' for n in alongside)}"
                                   f"{'两个' if len(alongside) == 2 else ''}实验的作业，共用这台机器与这块 GPU）"
                                   if alongside else ""),
        "labs.grading.warm": warm_text,
        "labs.grading.gpu_s": f"{ew['gpu_held_mean_s']:.1f}",
        "labs.grading.per_hour": f"{ew['per_hour_per_gpu']:.0f}",
        "labs.grading.batch_per_hour": f"{ew['batch_per_hour']:.0f}",
        "labs.grading.class_min": f"{ew['class_gpu_minutes']:.0f}",
        "labs.grading.class": str(n["class"]),
        "labs.grading.others_gpu_s": "、".join(f"{o['gpu_held_mean_s']:.1f}" for o in others),
        "labs.grading.isolation": "、".join(ew["isolation"]),
        "labs.grading.cores": str(run["cpu_cores"]),
        "labs.grading.eval_landlock": _eval_landlock_text(run, n["runs"]),
    }


def _eval_landlock_text(run: dict, runs: list[dict]) -> str:
    """What the appendix says of the evaluate worker's own Landlock layer in the quoted run, and of
    an earlier recorded run that graded without it (Markdown: pasted with ``{glue:md}``)."""
    why = ("原因后来查清了：CUDA 初始化时要给它启动的线程起名字，这要写 `/proc/self/task` 下的文件，"
           "而那一层只允许写临时目录与编译缓存")
    if not run["evaluate_landlock"]:
        return ("不运行学生代码的编译与评估进程在它自己的 Landlock 规则下看不到 GPU，评分前的自检发现了这一点，"
                f"于是去掉了这一层，并把选择写进记录。{why}。放开这一处之后，评分前的自检在这一层之下看到了 GPU，"
                "以后的评分运行会带着它。")
    text = "不运行学生代码的编译与评估进程也带着它自己的 Landlock 层：评分前的自检确认了在这一层之下看得见 GPU。"
    earlier = [r for r in runs if r["evaluate_landlock"] is False and r["date"] < run["date"]]
    if earlier:
        e = earlier[-1]
        text += (f"更早在 {e['device']} 上的记录运行（{_zh_date(e['date'])}）并非如此：评估进程在这一层之下看不到 GPU，"
                 f"评分前的自检于是去掉了这一层，并把选择写进记录。{why}；放开这一处之后，自检在这一层之下看到了 GPU。")
    return text


def readme_rows(results: Path = RESULTS) -> list[str]:
    """The rows of labs/README.md's table: each lab's newest recorded run, its device named
    (checked cell by cell by the tests)."""
    rows = []
    for lab, v in sorted(grading_numbers(results)["labs"].items()):
        warm = "—" if v["warm_resubmission_wall_s"] is None else f"{v['warm_resubmission_wall_s']:.1f}"
        rows.append(f"| `{lab}` | {v['date'][:10]} | {v['device']} | {v['graded']} | {v['reference_wall_s']:.1f} | "
                    f"{v['reference_lock_wait_s']:.1f} | {warm} | {v['gpu_held_mean_s']:.2f} | "
                    f"{v['per_hour_per_gpu']:.0f} | {v['class_gpu_minutes']:.1f} | {v['batch_per_hour']:.0f}（-j {v['jobs']}） |")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--readme-rows"]:
        print("\n".join(readme_rows()))
    else:
        print(json.dumps(grading_numbers(), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
