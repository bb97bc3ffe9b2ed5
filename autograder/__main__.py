"""``python -m autograder``: release, check, grade, merge (and bench)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .extract import NotebookError
from .grade import GradeError, grade_batch, limits_for
from .labs import ALIASES, LabError, load_lab
from .release import ReleaseError, release, release_roster
from .report import merge, student_markdown
from .sandbox import ISOLATIONS, IsolationError
from .variants import VariantError, key_path


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cell-timeout", type=float, help="seconds per cell (default: the lab's)")
    p.add_argument("--notebook-timeout", type=float, help="seconds per notebook (default: the lab's)")
    p.add_argument("--memory-mb", type=int, help="address-space limit per submission (MiB)")
    p.add_argument("--cpu-s", type=float, help="CPU seconds per run of a notebook (default: the notebook limit); "
                                               "a cell stopped by it is charged, the other cells re-run")
    p.add_argument("--scratch-mb", type=int, help="size of the writable scratch directory (MiB)")
    p.add_argument("--isolation", choices=ISOLATIONS, default="auto",
                   help="bwrap (bubblewrap), uid (root drops to an unprivileged uid), process; "
                        "auto takes the first that works (default)")


def _limits(spec, args):
    return limits_for(spec, cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                      memory_mb=args.memory_mb, cpu_s=args.cpu_s, scratch_mb=args.scratch_mb)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                 epilog="Labs: " + ", ".join(f"{a} is an old name of {t}" for a, t in ALIASES.items()))
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("release", help="write the student notebook (solutions -> stubs)")
    p.add_argument("lab")
    p.add_argument("--out", type=Path, help="output .ipynb (default dist/LAB/LAB.ipynb, or dist/LAB/ID.ipynb); "
                                            "with --roster, the output folder")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--student", help="one student's variant (their own numbers), tagged with their id")
    who.add_argument("--roster", type=Path, help="a file of student ids (one per line, or a CSV's first "
                                                 "column): one tagged notebook per student")

    p = sub.add_parser("check", help="self-check a saved notebook: right / wrong / malformed per part")
    p.add_argument("lab")
    p.add_argument("notebook", type=Path)
    _add_limits(p)

    p = sub.add_parser("grade", help="grade submissions in confined processes")
    p.add_argument("lab")
    p.add_argument("submissions", nargs="+", type=Path, help=".ipynb files or folders of them")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    p.add_argument("--shard", help="I/N: grade every N-th submission starting at I (0 <= I < N); "
                                   "then run `merge`")
    p.add_argument("--force", action="store_true", help="regrade even unchanged submissions")
    p.add_argument("--common", action="store_true",
                   help="compare every submission with the book's numbers (no per-student variants: "
                        "nbgrader courses, self-study)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-plot", action="store_true", help="write no score plot (it needs matplotlib)")
    _add_limits(p)

    p = sub.add_parser("merge", help="join graded folders (shards) into grades.csv, feedback, log, plot")
    p.add_argument("dirs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--no-plot", action="store_true")

    p = sub.add_parser("bench", help="throughput benchmark: N copies of the instructor notebook")
    p.add_argument("lab", nargs="?", default="pytorch")
    p.add_argument("-n", type=int, default=100)
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    p.add_argument("--isolation", choices=ISOLATIONS, default="auto")

    args = ap.parse_args(argv)
    try:
        if args.cmd == "release":
            if args.roster:
                outs = release_roster(args.lab, args.roster, args.out)
                print(f"released {args.lab} to {len(outs)} students -> {outs[0].parent} "
                      f"(variant tags signed with the course key {key_path()})")
                return 0
            out = release(args.lab, args.out, student=args.student)
            print(f"released {args.lab} -> {out}"
                  + (f" (variant of {args.student}; tag signed with the course key {key_path()})"
                     if args.student else ""))
            return 0
        if args.cmd == "check":
            import tempfile

            spec, _ = load_lab(args.lab)
            with tempfile.TemporaryDirectory() as tmp:
                grade_batch([args.notebook], args.lab, Path(tmp), jobs=1, progress=False,
                            limits=_limits(spec, args), isolation=args.isolation, variants="tag")
                rec = json.loads(next((Path(tmp) / "records").glob("*.json")).read_text(encoding="utf-8"))
            print(student_markdown(rec, spec))
            return 0
        if args.cmd == "grade":
            files: list[Path] = []
            for s in args.submissions:
                files += sorted(s.glob("*.ipynb")) if s.is_dir() else [s]
            if not files:
                raise GradeError("no .ipynb submissions found")
            spec, _ = load_lab(args.lab)
            summary = grade_batch(files, args.lab, args.out, jobs=args.jobs, shard=args.shard,
                                  force=args.force, progress=not args.no_progress,
                                  limits=_limits(spec, args), isolation=args.isolation,
                                  variants="common" if args.common else "auto")
            if not args.shard:
                merge([args.out], args.out, args.lab, plot=not args.no_plot)
            print(json.dumps(summary, ensure_ascii=False))
            return 0
        if args.cmd == "merge":
            log = merge(args.dirs, args.out, plot=not args.no_plot)
            print(f"merged {log['students']} students -> {args.out}")
            return 0
        if args.cmd == "bench":
            from .bench import bench

            print(json.dumps(bench(args.lab, args.n, args.jobs, isolation=args.isolation), indent=1))
            return 0
    except (LabError, GradeError, ReleaseError, NotebookError, FileNotFoundError, IsolationError,
            VariantError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
