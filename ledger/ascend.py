"""The Ascend pipe model of chapter 28, from the constants tilelang itself ships.

tilelang 0.1.15 prices Ascend tiles in its ``EstimateLatency`` pass with constants kept
in ``src/ascend/transform/estimate_latency.h`` (struct ``AscendLatencyParams``).  Those
constants are committed in :mod:`ledger.ascend_params` with their source (version, path
inside the wheel, file hash), so the model and its figures are the same on a bare Python
and in the course's environment.  Where tilelang is installed, :func:`check_installed`
parses the installed header -- without importing tilelang, through
``importlib.util.find_spec`` -- and names every field that differs; the ledger tests
run it.  :func:`latency_params` with a path prices with another header.

The teaching model keeps three pipes of one GEMM K-step with a ``block_M x block_N x
block_K`` tile:

* Cube: ``2 * align(M,16) * align(N,16) * align(K, 256/bits) / cube_throughput_<dtype>``
  cycles (the initiation interval, II), plus ``cube_base_latency`` to complete;
* MTE2 (GM -> L1): ``ceil((M*K + K*N) * b / aic_mte2_to_l1_bandwidth)`` cycles, never
  below ``mte2_gm_to_l1_min_ii``;
* MTE1 (L1 -> L0A and L0B, two paths in parallel): ``max(M*K*b / l1_to_l0a_bandwidth,
  K*N*b / l1_to_l0b_bandwidth)`` cycles.

The binding pipe is the one with the largest II.  Cube against MTE2 loses K and two
factors of 2: the tile is Cube-bound when ``M*N/(M+N) >= cube_throughput /
aic_mte2_to_l1_bandwidth`` (``b`` = 2), i.e. a square side of at least 164 for fp16.
The vector ops/cycle table of the same header prices transcendentals (M5 of the
chapter).  The real pass also charges vector pipes, lane scaling and per-path
completion; this model keeps only what the chapter uses.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ledger.ascend_params import PARAMS, SOURCE
from ledger.cost import check_size, dtype_bytes
from ledger.figures import Figure, fig

__all__ = [
    "HEADER_RELPATH",
    "SOURCE",
    "AscendHeaderError",
    "find_header",
    "parse_header",
    "latency_params",
    "installed_version",
    "HeaderCheck",
    "check_installed",
    "PipeII",
    "pipe_ii",
    "square_threshold",
    "min_stages",
    "vector_cycles",
    "figures",
]

HEADER_RELPATH = Path("src") / "ascend" / "transform" / "estimate_latency.h"
_FIELD = re.compile(r"\bint64_t\s+([a-z_][a-z0-9_]*)\s*\{\s*(-?\d+)\s*\}\s*;")


class AscendHeaderError(RuntimeError):
    """No readable ``estimate_latency.h`` where one was asked for."""


def find_header() -> Path:
    """Path of ``estimate_latency.h`` in the installed tilelang (``AscendHeaderError`` without one)."""
    spec = importlib.util.find_spec("tilelang")  # locates the package; does not import it
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        p = Path(root) / HEADER_RELPATH
        if p.is_file():
            return p
    raise AscendHeaderError(
        "cannot find tilelang/" + HEADER_RELPATH.as_posix() + " in the installed tilelang "
        f"(searched {roots or 'no tilelang package on sys.path'}); the ledger does not need it "
        f"(it carries the constants of tilelang {SOURCE['version']}), only the check against an "
        "installed tilelang does")


def parse_header(text: str) -> dict[str, int]:
    """``{field: value}`` for every ``int64_t field{value};`` line."""
    out = {name: int(v) for name, v in _FIELD.findall(text)}
    if not out:
        raise AscendHeaderError("estimate_latency.h: no 'int64_t name{value};' fields found")
    return out


def latency_params(path: Optional[Path] = None) -> dict[str, int]:
    """The constants of ``AscendLatencyParams``: the committed ones of tilelang
    0.1.15 (:data:`ledger.ascend_params.PARAMS`), or those parsed from the header at ``path``."""
    if path is None:
        return dict(PARAMS)
    p = Path(path)
    if not p.is_file():
        raise AscendHeaderError(f"{p} is not a file")
    return parse_header(p.read_text(encoding="utf-8"))


def installed_version() -> Optional[str]:
    """Version of the installed tilelang distribution, ``None`` where there is none."""
    try:
        return importlib.metadata.version("tilelang")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class HeaderCheck:
    """The installed header against the committed constants."""

    path: Path
    version: Optional[str]
    sha256: str
    differences: dict[str, tuple[Optional[int], Optional[int]]]  #: field: (committed, installed)

    @property
    def same_version(self) -> bool:
        return self.version == SOURCE["version"]

    @property
    def ok(self) -> bool:
        """Same fields and values, and the recorded hash wherever the recorded version is installed."""
        return not self.differences and (not self.same_version or self.sha256 == SOURCE["sha256"])


def check_installed(path: Optional[Path] = None) -> HeaderCheck:
    """Compare the installed (or given) ``estimate_latency.h`` with :data:`PARAMS`."""
    p = find_header() if path is None else Path(path)
    raw = p.read_bytes()
    found = parse_header(raw.decode("utf-8"))
    diff = {k: (PARAMS.get(k), found.get(k)) for k in sorted(set(PARAMS) | set(found))
            if PARAMS.get(k) != found.get(k)}
    return HeaderCheck(p, installed_version() if path is None else None, hashlib.sha256(raw).hexdigest(), diff)


NEEDED = ("cube_base_latency", "cube_unit_m", "cube_unit_n", "aic_mte2_to_l1_bandwidth",
          "mte2_gm_to_l1_min_ii", "l1_to_l0a_bandwidth", "l1_to_l0b_bandwidth",
          "mul_throughput", "div_throughput", "special_func_throughput")


def _need(p: dict[str, int], name: str) -> int:
    if name not in p:
        raise AscendHeaderError(f"estimate_latency.h has no field {name!r}")
    return p[name]


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


_CUBE_DTYPE = {"fp16": "cube_throughput_fp16", "float16": "cube_throughput_fp16",
               "bf16": "cube_throughput_bf16", "bfloat16": "cube_throughput_bf16",
               "fp32": "cube_throughput_fp32", "float32": "cube_throughput_fp32",
               "fp8": "cube_throughput_fp8", "float8_e4m3fn": "cube_throughput_fp8"}


@dataclass(frozen=True)
class PipeII:
    block: tuple[int, int, int]
    cube: int
    mte2: int
    mte1: int
    cube_latency: int

    @property
    def binding(self) -> str:
        return max((("Cube", self.cube), ("MTE2", self.mte2), ("MTE1", self.mte1)), key=lambda x: x[1])[0]

    @property
    def period(self) -> int:
        return max(self.cube, self.mte2, self.mte1)

    @property
    def latency_over_period(self) -> float:
        """Completion latency of the binding pipe over its II (Cube: (II + base) / II)."""
        lat = self.cube_latency if self.binding == "Cube" else self.period
        return lat / self.period


def pipe_ii(block_m: int, block_n: int, block_k: int, dtype: str = "fp16",
            params: Optional[dict[str, int]] = None) -> PipeII:
    """Cube, MTE2 and MTE1 initiation intervals (cycles) of one K-step."""
    for n, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k)):
        check_size(n, v)
    p = latency_params() if params is None else params
    key = _CUBE_DTYPE.get(dtype.lower() if isinstance(dtype, str) else dtype)
    if key is None:
        raise ValueError(f"dtype must be one of {sorted(_CUBE_DTYPE)}, got {dtype!r}")
    b = dtype_bytes(dtype)
    bits = int(b * 8)
    k_group = 256 // bits
    ops = 2 * _align(block_m, _need(p, "cube_unit_m")) * _align(block_n, _need(p, "cube_unit_n")) * _align(block_k, k_group)
    cube = math.ceil(ops / _need(p, key))
    mte2 = max(math.ceil((block_m * block_k + block_k * block_n) * b / _need(p, "aic_mte2_to_l1_bandwidth")),
               _need(p, "mte2_gm_to_l1_min_ii"))
    mte1 = max(math.ceil(block_m * block_k * b / _need(p, "l1_to_l0a_bandwidth")),
               math.ceil(block_k * block_n * b / _need(p, "l1_to_l0b_bandwidth")))
    return PipeII((block_m, block_n, block_k), cube, mte2, mte1, cube + _need(p, "cube_base_latency"))


def square_threshold(dtype: str = "fp16", params: Optional[dict[str, int]] = None) -> int:
    """Smallest square side whose Cube II reaches the MTE2 II: ``2 * throughput / bandwidth``."""
    p = latency_params() if params is None else params
    key = _CUBE_DTYPE.get(dtype)
    if key is None:
        raise ValueError(f"dtype must be one of {sorted(_CUBE_DTYPE)}, got {dtype!r}")
    b = dtype_bytes(dtype)
    # M^2/(2M) >= thr * b / (2 * bw)  ->  M >= thr * b / bw
    return math.ceil(_need(p, key) * b / _need(p, "aic_mte2_to_l1_bandwidth"))


def min_stages(ii: PipeII, *, with_base: bool = True) -> int:
    """``1 + ceil(latency / period)``: stages that hide the binding pipe's completion."""
    lat = ii.cube_latency if with_base else ii.cube
    return 1 + math.ceil(lat / ii.period)


def vector_cycles(n_ops: dict[str, float], params: Optional[dict[str, int]] = None) -> float:
    """Vector cycles of a mix of operations, each at its ops/cycle in the header."""
    p = latency_params() if params is None else params
    total = 0.0
    for op, count in n_ops.items():
        total += check_size(f"n_ops[{op!r}]", count, integer=False, allow_zero=True) / _need(p, f"{op}_throughput")
    return total


# --- figures ------------------------------------------------------------------------

EXAMPLE = (256, 224, 128)  # tilelang/ascend/README.md: the Ascend 950 GEMM+ReLU example


def _source_text() -> str:
    return f"{SOURCE['package']} {SOURCE['version']} {SOURCE['path']} (committed in ledger.ascend_params)"


def figures() -> list[Figure]:
    p = latency_params()
    c = f"constants of {_source_text()}; fp16 operands"
    ii = pipe_ii(*EXAMPLE, params=p)
    out = [fig(f"perfmodel.ascend.const.{name}", p[name], "", source="ledger.ascend.latency_params", conditions=c)
           for name in ("cube_throughput_fp16", "cube_throughput_bf16", "cube_throughput_fp32", "cube_throughput_fp8",
                        "cube_base_latency", "cube_unit_m", "aic_mte2_to_l1_bandwidth", "mte2_gm_to_l1_base_latency",
                        "mte2_gm_to_l1_min_ii", "l1_to_l0a_bandwidth", "mul_throughput", "div_throughput",
                        "special_func_throughput")]
    ce = c + "; block 256x224x128 (tilelang/ascend/README.md GEMM+ReLU example)"
    out += [
        fig("perfmodel.ascend.square_threshold", square_threshold("fp16", p), "elements", source="ledger.ascend.square_threshold", conditions=c),
        fig("perfmodel.ascend.align.n200_charged_as", _align(200, _need(p, "cube_unit_n")),
            "columns", source="ledger.ascend.pipe_ii", conditions=c + "; M and N are aligned to cube_unit_m/n"),
        fig("perfmodel.ascend.example.cube_ii", ii.cube, "cycles", source="ledger.ascend.pipe_ii", conditions=ce),
        fig("perfmodel.ascend.example.mte2_ii", ii.mte2, "cycles", source="ledger.ascend.pipe_ii", conditions=ce),
        fig("perfmodel.ascend.example.mte1_ii", ii.mte1, "cycles", source="ledger.ascend.pipe_ii", conditions=ce),
        fig("perfmodel.ascend.example.binding", ii.binding, "", source="ledger.ascend.pipe_ii", conditions=ce),
        fig("perfmodel.ascend.example.latency_over_period", ii.latency_over_period, "", digits=3,
            source="ledger.ascend.pipe_ii", conditions=ce),
        fig("perfmodel.ascend.example.stages_with_base", min_stages(ii), "stages", source="ledger.ascend.min_stages", conditions=ce),
        fig("perfmodel.ascend.example.stages_without_base", min_stages(ii, with_base=False), "stages",
            source="ledger.ascend.min_stages", conditions=ce),
    ]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ledger.ascend", description="Ascend Cube/MTE pipe model.")
    ap.add_argument("--block", type=int, nargs=3, metavar=("BM", "BN", "BK"))
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--header", type=Path, help="price with the constants of this estimate_latency.h")
    ap.add_argument("--check-installed", action="store_true",
                    help="compare the committed constants with the installed tilelang's header")
    a = ap.parse_args(argv)
    if a.check_installed:
        try:
            chk = check_installed()
        except AscendHeaderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"installed: {chk.path} (tilelang {chk.version}, sha256 {chk.sha256})")
        print(f"committed: {_source_text()}, sha256 {SOURCE['sha256']}")
        for k, (ours, theirs) in chk.differences.items():
            print(f"  {k}: committed {ours}, installed {theirs}")
        if chk.same_version and chk.sha256 != SOURCE["sha256"]:
            print("  the installed file of the recorded version has another hash")
        print("same" if chk.ok else "DIFFERENT")
        return 0 if chk.ok else 1
    try:
        p = latency_params(a.header)
    except AscendHeaderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"constants: {a.header or _source_text()}")
    print(f"square-tile threshold ({a.dtype}): side >= {square_threshold(a.dtype, p)}")
    print(f"{'block':>15} {'Cube II':>8} {'MTE2 II':>8} {'MTE1 II':>8}  binding  lat/period  stages")
    blocks = [tuple(a.block)] if a.block else [(s, s, 128) for s in (128, 144, 160, 176, 192, 224, 256)] + [EXAMPLE]
    for bm, bn, bk in blocks:
        ii = pipe_ii(bm, bn, bk, a.dtype, p)
        print(f"{bm:>5}x{bn:<4}x{bk:<4} {ii.cube:>8} {ii.mte2:>8} {ii.mte1:>8}  {ii.binding:<7}  "
              f"{ii.latency_over_period:>9.3f}  {min_stages(ii):>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
