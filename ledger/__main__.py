"""``python -m ledger``: the figures registry and the machine profiles from the shell.

Commands::

    python -m ledger figures [--json] [--full] [--prefix pytorch]   every number the book quotes
    python -m ledger machines [--json]                           the known machine profiles
    python -m ledger errata [--json]                             every erratum the registry holds

Each model also has its own table printer: ``python -m ledger.ops``,
``python -m ledger.step_budget``, ``python -m ledger.fusion`` (``--help`` on each).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence


def _cmd_figures(args: argparse.Namespace) -> int:
    from ledger.figures import as_json_dict, collect

    figs = collect()
    if args.prefix:
        figs = {k: f for k, f in figs.items() if k.startswith(args.prefix)}
        if not figs:
            print(f"--prefix: no figure key starts with {args.prefix!r}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(as_json_dict(figs, full=args.full), ensure_ascii=False, indent=1, allow_nan=False))
        return 0
    width = max(len(k) for k in figs)
    for k, f in figs.items():
        line = f"{k:<{width}s}  {f.text} {f.unit}".rstrip()
        if args.full:
            line += f"\n{'':<{width}s}  source: {f.source}\n{'':<{width}s}  conditions: {f.conditions}"
        print(line)
    return 0


def _cmd_machines(args: argparse.Namespace) -> int:
    from ledger.machines import ENV_VAR, machines

    table = machines()
    if args.json:
        out = {}
        for name, m in table.items():
            out[name] = {
                "description": m.description,
                "source": m.source,
                "conditions": m.conditions,
                "path": m.path,
                "default_compute": m.default_compute,
                "default_memory": m.default_memory,
                "peak_tflops": m.peak_flops / 1e12,
                "bandwidth_gbs": m.bandwidth / 1e9,
                "balance_flop_per_byte": m.balance,
                "compute_tflops": {k: r.effective / 1e12 for k, r in m.compute.items()},
                "memory_gbs": {k: r.effective / 1e9 for k, r in m.memory.items()},
            }
        print(json.dumps(out, ensure_ascii=False, indent=1, allow_nan=False))
        return 0
    print(f"{'machine':<22s} {'TFLOP/s':>9s} {'GB/s':>8s} {'FLOP/B':>7s}  default roof")
    for name, m in table.items():
        print(f"{name:<22s} {m.peak_flops / 1e12:>9.1f} {m.bandwidth / 1e9:>8.1f} {m.balance:>7.1f}  "
              f"{m.default_compute}")
        for unit in sorted(m.compute):
            if unit != m.default_compute:
                print(f"{'':<22s} {m.roof(unit) / 1e12:>9.1f} {'':>8s} {m.balance_for(unit):>7.2f}  {unit}")
    print(f"\nadd a machine: a JSON profile in ledger/machines/ or in the directory ${ENV_VAR}")
    return 0


def _cmd_errata(args: argparse.Namespace) -> int:
    from ledger.errata import listed

    items = listed()
    if args.json:
        print(json.dumps([e.record() for e in items], ensure_ascii=False, indent=1, allow_nan=False))
        return 0
    for e in items:
        ours = f"{e.text} {e.unit}".rstrip()
        if e.draft is not None:
            d = e.digits or 0
            head = f"{e.key} ({e.figure})\n  draft: {e.draft:.{d}f} {e.unit}   ledger: {ours}"
        else:
            head = f"{e.key}\n  ledger: {ours}"
        print(f"{head}\n  why: {e.why}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ledger", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("figures", help="every number the book quotes")
    p.add_argument("--json", action="store_true", help="print {key: value} as JSON")
    p.add_argument("--full", action="store_true", help="add text, unit, source and conditions")
    p.add_argument("--prefix", default="", help="only keys starting with this (e.g. pytorch)")
    p.set_defaults(fn=_cmd_figures)
    p = sub.add_parser("machines", help="the known machine profiles")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_cmd_machines)
    p = sub.add_parser("errata", help="figures where the ledger differs from the drafts, and why")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_cmd_errata)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except ValueError as exc:  # bad machine profile, bad argument
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
