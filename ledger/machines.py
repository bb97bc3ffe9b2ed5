"""Machine profiles: the roofs every ledger divides by.

A profile is a JSON file.  Each names the compute units it knows (``tensor_core.fp16``,
``cuda_core.fp32`` ...) and the memory paths (``hbm``, ``hbm.copy`` ...), each as a
*theoretical* rate (the datasheet) times a *calibration* factor (what a microbenchmark
reached; 1.0 for a datasheet profile).  ``effective = theoretical x calibration`` is
what the ledgers use.  Every profile also says where its numbers come from
(``source``) and under which conditions they hold (``conditions``).

Where profiles live
-------------------
* ``ledger/machines/*.json`` -- the profiles that ship with the course;
* every ``*.json`` in the directory named by the environment variable
  ``LEDGER_MACHINES_DIR`` -- your own (an A100, an Ascend 910B, a profile you measured).
  A user file with the name of a shipped profile replaces it.

Only JSON is read: the standard library has no YAML parser, and the ledger imports
nothing else.  File format::

    {
      "name": "a100-sxm4-spec",
      "description": "NVIDIA A100 SXM4 80GB, datasheet",
      "source": "NVIDIA A100 datasheet",
      "conditions": "dense, no sparsity; not measured",
      "default_compute": "tensor_core.fp16",
      "default_memory": "hbm",
      "compute": {"tensor_core.fp16": {"theoretical_tflops": 312.0, "calibration": 1.0}},
      "memory":  {"hbm": {"theoretical_gbs": 2039.0}},
      "resources": {"sms": 108, "smem_per_sm_kb": 164}
    }

``resources`` (optional) holds on-chip sizes the tile ledgers use.  ``calibration`` defaults to 1.0; it must lie in (0, 1.5].  Names use lower case, digits,
``-``, ``_`` and ``.``.

Public API: :class:`Machine`, :class:`Rate`, :func:`get_machine`, :func:`machines`,
:func:`machine_names`, :func:`load_profile`, :class:`MachineError`.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Union

__all__ = [
    "MachineError",
    "Rate",
    "Machine",
    "DEFAULT_MACHINE",
    "BUILTIN_DIR",
    "ENV_VAR",
    "get_machine",
    "machines",
    "machine_names",
    "load_profile",
    "figures",
]

#: The profile every chapter uses unless told otherwise.
DEFAULT_MACHINE = "h200-calibrated"
#: Directory of the profiles shipped with the course.
BUILTIN_DIR = Path(__file__).with_name("machines")
#: Environment variable naming a directory of user profiles.
ENV_VAR = "LEDGER_MACHINES_DIR"

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class MachineError(ValueError):
    """A machine profile that is unknown or malformed (the message names the field)."""


@dataclass(frozen=True)
class Rate:
    """One roof: a theoretical rate (per second) and its calibration factor."""

    theoretical: float  #: FLOP/s for a compute unit, byte/s for a memory path
    calibration: float = 1.0
    note: str = ""

    @property
    def effective(self) -> float:
        """``theoretical x calibration``: the rate the ledgers divide by."""
        return self.theoretical * self.calibration


@dataclass(frozen=True)
class Machine:
    """A machine profile: named compute roofs and memory roofs, with provenance."""

    name: str
    description: str
    source: str
    conditions: str
    compute: Mapping[str, Rate]
    memory: Mapping[str, Rate]
    default_compute: str
    default_memory: str = "hbm"
    path: str = field(default="", compare=False)
    #: On-chip resources (optional): ``sms``, ``smem_per_sm_kb``, ``smem_per_block_kb``,
    #: ``regs_per_sm``, ``max_threads_per_sm``, ``max_regs_per_thread`` ...
    resources: Mapping[str, float] = field(default_factory=dict)

    def resource(self, name: str) -> float:
        """An on-chip resource of the profile (``MachineError`` if the profile lacks it)."""
        if name not in self.resources:
            raise MachineError(f"resource: machine {self.name!r} has no resource {name!r}; "
                               f"it has {sorted(self.resources)}")
        return self.resources[name]

    # -- the two numbers most ledgers need -------------------------------------------
    @property
    def peak_flops(self) -> float:
        """Effective FLOP/s of the default compute roof."""
        return self.compute[self.default_compute].effective

    @property
    def bandwidth(self) -> float:
        """Effective byte/s of the default memory path."""
        return self.memory[self.default_memory].effective

    @property
    def balance(self) -> float:
        """Machine balance (ridge point) in FLOP/byte: peak FLOP/s over bandwidth."""
        return self.peak_flops / self.bandwidth

    # -- other roofs ------------------------------------------------------------------
    def roof(self, unit: str | None = None) -> float:
        """Effective FLOP/s of compute unit ``unit`` (default: the default roof)."""
        unit = self.default_compute if unit is None else unit
        if unit not in self.compute:
            raise MachineError(
                f"roof: machine {self.name!r} has no compute unit {unit!r}; "
                f"it has {sorted(self.compute)}"
            )
        return self.compute[unit].effective

    def memory_rate(self, path: str | None = None) -> float:
        """Effective byte/s of memory path ``path`` (default: the default path)."""
        path = self.default_memory if path is None else path
        if path not in self.memory:
            raise MachineError(
                f"memory: machine {self.name!r} has no memory path {path!r}; "
                f"it has {sorted(self.memory)}"
            )
        return self.memory[path].effective

    def balance_for(self, unit: str | None = None, memory: str | None = None) -> float:
        """Ridge point (FLOP/byte) of compute unit ``unit`` against memory path ``memory``."""
        return self.roof(unit) / self.memory_rate(memory)

    def with_roof(self, unit: str) -> "Machine":
        """The same machine with ``unit`` as its default compute roof."""
        self.roof(unit)
        return replace(self, default_compute=unit)

    def summary(self) -> str:
        """One line: name, default roofs and balance, in the units the book prints."""
        return (
            f"{self.name}: {self.peak_flops / 1e12:.1f} TFLOP/s ({self.default_compute}), "
            f"{self.bandwidth / 1e9:.1f} GB/s ({self.default_memory}), "
            f"balance {self.balance:.1f} FLOP/B"
        )


# ------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------
def _number(where: str, value: Any, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MachineError(f"{where} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (positive and v <= 0):
        raise MachineError(f"{where} must be a positive finite number, got {value!r}")
    return v


def _text(where: str, value: Any, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise MachineError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _rates(where: str, table: Any, key: str, scale: float) -> dict[str, Rate]:
    if not isinstance(table, dict) or not table:
        raise MachineError(f"{where} must be a non-empty object of named rates")
    out: dict[str, Rate] = {}
    for name, spec in table.items():
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise MachineError(f"{where}: bad name {name!r} (lower case, digits, '.', '_', '-')")
        if not isinstance(spec, dict):
            raise MachineError(f"{where}.{name} must be an object with {key!r}")
        unknown = set(spec) - {key, "calibration", "note"}
        if unknown:
            raise MachineError(f"{where}.{name}: unknown field(s) {sorted(unknown)}")
        if key not in spec:
            raise MachineError(f"{where}.{name}.{key} is missing")
        theo = _number(f"{where}.{name}.{key}", spec[key]) * scale
        cal = _number(f"{where}.{name}.calibration", spec.get("calibration", 1.0))
        if cal > 1.5:
            raise MachineError(f"{where}.{name}.calibration must be in (0, 1.5], got {cal!r}")
        out[name] = Rate(theo, cal, _text(f"{where}.{name}.note", spec.get("note"), required=False))
    return out


_FIELDS = {
    "name", "description", "source", "conditions", "default_compute", "default_memory",
    "compute", "memory", "comment", "resources",
}


def profile_from_dict(data: Mapping[str, Any], path: str = "<dict>") -> Machine:
    """Validate a profile (as parsed from JSON) and build a :class:`Machine`."""
    if not isinstance(data, dict):
        raise MachineError(f"{path}: a profile must be a JSON object")
    unknown = set(data) - _FIELDS
    if unknown:
        raise MachineError(f"{path}: unknown field(s) {sorted(unknown)}; allowed {sorted(_FIELDS)}")
    name = _text(f"{path}: name", data.get("name"))
    if not _NAME_RE.match(name):
        raise MachineError(f"{path}: name {name!r} may use only lower case, digits, '.', '_', '-'")
    compute = _rates(f"{path}: compute", data.get("compute"), "theoretical_tflops", 1e12)
    memory = _rates(f"{path}: memory", data.get("memory"), "theoretical_gbs", 1e9)
    dc = _text(f"{path}: default_compute", data.get("default_compute", next(iter(compute))))
    dm = _text(f"{path}: default_memory", data.get("default_memory", "hbm" if "hbm" in memory else next(iter(memory))))
    if dc not in compute:
        raise MachineError(f"{path}: default_compute {dc!r} is not one of {sorted(compute)}")
    if dm not in memory:
        raise MachineError(f"{path}: default_memory {dm!r} is not one of {sorted(memory)}")
    res_in = data.get("resources", {})
    if not isinstance(res_in, dict):
        raise MachineError(f"{path}: resources must be an object of named numbers")
    resources: dict[str, float] = {}
    for k, v in res_in.items():
        if not isinstance(k, str) or not _NAME_RE.match(k):
            raise MachineError(f"{path}: resources: bad name {k!r}")
        num = _number(f"{path}: resources.{k}", v)
        resources[k] = int(num) if num.is_integer() else num
    return Machine(
        resources=resources,
        name=name,
        description=_text(f"{path}: description", data.get("description")),
        source=_text(f"{path}: source", data.get("source")),
        conditions=_text(f"{path}: conditions", data.get("conditions")),
        compute=compute,
        memory=memory,
        default_compute=dc,
        default_memory=dm,
        path=path,
    )


def load_profile(path: Union[str, Path]) -> Machine:
    """Read and validate one JSON profile file."""
    p = Path(path)
    if p.suffix.lower() in (".yaml", ".yml"):
        raise MachineError(
            f"{p}: YAML profiles are not read (the ledger uses the standard library only); "
            "write the same fields as JSON"
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MachineError(f"{p}: cannot read profile ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise MachineError(f"{p}: not valid JSON ({exc})") from exc
    return profile_from_dict(data, str(p))


def _dirs() -> list[Path]:
    dirs = [BUILTIN_DIR]
    extra = os.environ.get(ENV_VAR, "").strip()
    if extra:
        d = Path(extra)
        if not d.is_dir():
            raise MachineError(f"{ENV_VAR}={extra!r} is not a directory")
        dirs.append(d)
    return dirs


_CACHE: dict[tuple, dict[str, Machine]] = {}


def machines() -> dict[str, Machine]:
    """Every known profile, keyed by name (user profiles override shipped ones).

    Files are re-read whenever one is added, removed or modified.
    """
    listing = [(d, sorted(d.glob("*.json"))) for d in _dirs()]
    key = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for _, fs in listing for f in fs)
    if key in _CACHE:
        return dict(_CACHE[key])
    out: dict[str, Machine] = {}
    for d, files in listing:
        seen: dict[str, Path] = {}
        for f in files:
            m = load_profile(f)
            if m.name in seen:
                raise MachineError(f"{f}: machine name {m.name!r} already defined in {seen[m.name]}")
            seen[m.name] = f
            out[m.name] = m
    result = dict(sorted(out.items()))
    _CACHE.clear()
    _CACHE[key] = result
    return dict(result)


def machine_names() -> list[str]:
    """Names of every known profile."""
    return list(machines())


def get_machine(name: Union[str, Machine, None] = None) -> Machine:
    """The profile called ``name`` (default :data:`DEFAULT_MACHINE`); a Machine passes through."""
    if isinstance(name, Machine):
        return name
    if name is None:
        name = DEFAULT_MACHINE
    if not isinstance(name, str):
        raise MachineError(f"machine must be a profile name, got {name!r}")
    table = machines()
    if name not in table:
        raise MachineError(f"machine: unknown profile {name!r}; known: {', '.join(table)}")
    return table[name]


# ------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------
def _rate_text(m: Machine, unit: str, spec: str) -> str:
    r = m.compute[unit]
    return f"{unit}: {format(r.theoretical / 1e12, spec)} TFLOP/s x {r.calibration:.4f}"


def figures() -> list:
    """Machine numbers the book quotes (``machines.*``)."""
    from ledger.figures import fig

    spec = get_machine("h200-spec")
    cal = get_machine(DEFAULT_MACHINE)
    sus = get_machine("h200-sustained")
    h100 = get_machine("h100-spec")
    src = "ledger.machines.get_machine"
    c_cal = f"profile {cal.name}: {cal.conditions}"
    c_h100 = f"{h100.peak_flops / 1e12:g} TFLOP/s / {h100.bandwidth / 1e12:.1f} TB/s, preliminary datasheet"
    out = [
        fig("machines.h200.spec.tflops", spec.peak_flops / 1e12, "TFLOP/s", digits=1, source=src,
            conditions=f"{spec.name}, {spec.default_compute} dense; {spec.source}"),
        fig("machines.h200.spec.gbs", spec.bandwidth / 1e9, "GB/s", digits=0, source=src,
            conditions=f"{spec.name}, HBM3e; {spec.source}"),
        fig("machines.h200.spec.balance", spec.balance, "FLOP/B", digits=1, source="Machine.balance",
            conditions=f"{spec.peak_flops / 1e12:g} TFLOP/s / {spec.bandwidth / 1e9:g} GB/s, datasheet"),
        fig("machines.h200.cal.tflops", cal.peak_flops / 1e12, "TFLOP/s", digits=1, source=src,
            conditions=c_cal),
        fig("machines.h200.cal.tflops_int", cal.peak_flops / 1e12, "TFLOP/s", digits=0, source=src,
            conditions=c_cal),
        fig("machines.h200.cal.tflops_2", cal.peak_flops / 1e12, "TFLOP/s", digits=2, source=src,
            conditions=c_cal),
        fig("machines.h200.cal.gbs", cal.bandwidth / 1e9, "GB/s", digits=1, source=src, conditions=c_cal),
        fig("machines.h200.cal.gbs_int", cal.bandwidth / 1e9, "GB/s", digits=0, source=src, conditions=c_cal),
        fig("machines.h200.cal.balance", cal.balance, "FLOP/B", digits=0, source="Machine.balance",
            conditions=c_cal),
        fig("machines.h200.cal.balance_2", cal.balance, "FLOP/B", digits=2, source="Machine.balance",
            conditions=c_cal),
        fig("machines.h200.cal.tensor_burst", cal.compute["tensor_core.fp16"].calibration, "",
            digits=4, source=src, conditions=f"calibration_burst of {cal.default_compute} in TileOPs h200.yaml"),
        fig("machines.h200.cal.tensor_sustained", sus.compute["tensor_core.fp16"].calibration, "",
            digits=4, source=src, conditions="calibration (sustained, 700 W cap) of tensor_core.fp16"),
        fig("machines.h200.cal.hbm_envelope", cal.memory["hbm"].calibration, "", digits=4, source=src,
            conditions="HBM calibration: envelope (read mix) over the measured access mixes"),
        fig("machines.h200.cal.hbm_copy", cal.memory["hbm.copy"].calibration, "", digits=4, source=src,
            conditions="HBM calibration of the pure copy mix"),
        fig("machines.h200.cal.conditions", "2048 MB working set, 5 runs x 200 reps, memory clock 3201 MHz, "
            "tensor cores under the 700 W cap", "", source="TileOPs src/tileops/perf/profiles/h200.yaml",
            conditions="measurement conditions written in the profile's comments",
            text="2048 MB working set, 5 runs x 200 reps, memory clock 3201 MHz, 700 W power cap"),
        fig("machines.h200.sustained.tflops", sus.peak_flops / 1e12, "TFLOP/s", digits=1, source=src,
            conditions=f"{sus.name}: {sus.conditions}"),
        fig("machines.h200.cal.copy_gbs", cal.memory_rate("hbm.copy") / 1e9, "GB/s", digits=1, source=src,
            conditions=f"{cal.memory['hbm.copy'].theoretical / 1e9:g} GB/s x {cal.memory['hbm.copy'].calibration:.4f} (copy mix)"),
        fig("machines.h200.cal.fp32_tflops", cal.roof("cuda_core.fp32") / 1e12, "TFLOP/s", digits=2,
            source="Machine.roof", conditions=_rate_text(cal, "cuda_core.fp32", ".1f")),
        fig("machines.h200.cal.fp32_balance", cal.balance_for("cuda_core.fp32"), "FLOP/B", digits=2,
            source="Machine.balance_for", conditions="cuda_core.fp32 roof against HBM envelope"),
        fig("machines.h200.cal.fp8_tflops", cal.roof("tensor_core.fp8") / 1e12, "TFLOP/s", digits=2,
            source="Machine.roof", conditions=_rate_text(cal, "tensor_core.fp8", "g") + " (burst)"),
        fig("machines.h200.cal.fp8_balance", cal.balance_for("tensor_core.fp8"), "FLOP/B", digits=2,
            source="Machine.balance_for", conditions="tensor_core.fp8 burst roof against HBM envelope"),
        fig("machines.h200.cal.datasheet_over_cal", spec.peak_flops / cal.peak_flops, "x", digits=2,
            source="Machine.peak_flops", conditions="datasheet fp16 over calibrated fp16 (burst)"),
        fig("machines.h100.spec.tflops", h100.peak_flops / 1e12, "TFLOP/s", digits=0, source=src,
            conditions=f"{h100.name} (SXM5): {h100.source}; {h100.conditions}"),
        fig("machines.h100.spec.tbs", h100.bandwidth / 1e12, "TB/s", digits=1, source=src,
            conditions=f"{h100.name} (SXM5): {h100.source}"),
        fig("machines.h100.spec.balance", h100.balance, "FLOP/B", digits=0, source="Machine.balance",
            conditions=c_h100),
        fig("machines.h100.spec.balance_1", h100.balance, "FLOP/B", digits=1, source="Machine.balance",
            conditions=c_h100),
    ]
    return out
