"""Checking: a kernel's output against a reference computed in fp64 from the same inputs.

``Checking`` is the part of :class:`measure.harness.Harness` that makes outputs and
judges them:

``h.poisoned(shape, dtype)``
    Output buffer filled with a poison value (NaN for floating dtypes, including fp8;
    the dtype's minimum -- or maximum for unsigned -- for integers).  Call it before every
    launch, so an element the kernel never writes is still poison afterwards.
``h.check(name, got, want, *, dtype=None, atol=None, rtol=None, shape=None, **meta)``
    Compares ``got`` with ``want`` (cast to float64).  Tolerances default by the *output*
    dtype (:data:`TOLERANCES`).  Counts every element that is still poison (unwritten),
    NaN/inf where the reference is finite, and outside ``atol + rtol * |want|``.  Appends a
    record of kind ``"check"`` and returns it (``rec["ok"]`` is a bool).  Never raises on a
    mismatch; raises ``ValueError`` on a shape mismatch.

:func:`tolerance_stats` counts the same way without recording a check (a variant whose
failure of the tolerance is the point of a comparison reports it in its bench record).
"""
from __future__ import annotations

from typing import Any

__all__ = ["TOLERANCES", "tolerance", "dtype_name", "tolerance_stats", "Checking"]

# (atol, rtol) by output dtype name, against an fp64 reference computed from the
# same (rounded) inputs.  fp16/bf16: a few ulps of the format; fp8 e4m3: one ulp
# (3 mantissa bits) relative.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
    "float8_e4m3fn": (2e-2, 1.25e-1),
    "float8_e5m2": (4e-2, 2.5e-1),
}


def dtype_name(dtype: Any) -> str:
    """``torch.float16`` -> ``"float16"`` (a name passes through)."""
    return str(dtype).replace("torch.", "")


def tolerance(dtype: Any) -> tuple[float, float]:
    """(atol, rtol) for an output dtype (torch dtype or name); integers are exact."""
    name = dtype_name(dtype)
    if name not in TOLERANCES:
        return (0.0, 0.0)
    return TOLERANCES[name]


def tolerance_stats(got: Any, want: Any, atol: float, rtol: float) -> dict[str, Any]:
    """What ``h.check`` would count (max |err|, elements outside ``atol + rtol*|want|``), without
    recording a check; NaN counts as outside.  Keys as in a check record: ``max_abs_err``,
    ``mismatched``, ``atol``, ``rtol``, ``ok``."""
    import torch

    g = got.detach().to(torch.float64)
    w = want.detach().to(torch.float64)
    diff = (g - w).abs()
    over = ~(diff <= atol + rtol * w.abs())
    return dict(max_abs_err=float(diff.nan_to_num(float("inf")).max()), mismatched=int(over.sum()),
                atol=atol, rtol=rtol, ok=int(over.sum()) == 0)


class Checking:
    """Poisoned outputs and checks against an fp64 reference (mixed into the Harness)."""

    torch: Any
    device: Any
    suite: str
    records: list

    def poisoned(self, shape, dtype):
        torch = self.torch
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
        out = torch.empty(shape, dtype=dtype, device=self.device)
        if dtype.is_floating_point:
            if out.element_size() == 1:  # fp8: fill the NaN bit pattern
                out.view(torch.uint8).fill_(0x7F)
            else:
                out.fill_(float("nan"))
        else:
            info = torch.iinfo(dtype)
            out.fill_(info.min if info.min < 0 else info.max)
        return out

    def check(self, name, got, want, *, dtype=None, atol=None, rtol=None, shape=None, **meta) -> dict:
        torch = self.torch
        if tuple(got.shape) != tuple(want.shape):
            raise ValueError(f"{name}: shape {tuple(got.shape)} != reference {tuple(want.shape)}")
        out_dtype = dtype if dtype is not None else got.dtype
        a0, r0 = tolerance(out_dtype)
        atol = a0 if atol is None else atol
        rtol = r0 if rtol is None else rtol
        g = got.detach().to(torch.float64)
        w = want.detach().to(torch.float64)
        finite_ref = torch.isfinite(w)
        if got.dtype.is_floating_point:
            unwritten = int((torch.isnan(g) & finite_ref).sum())
        else:
            info = torch.iinfo(got.dtype)
            sentinel = info.min if info.min < 0 else info.max
            unwritten = int(((got == sentinel) & (want != sentinel)).sum())
        bad_nonfinite = int((~torch.isfinite(g) & finite_ref).sum())
        diff = (g - w).abs()
        diff = torch.where(finite_ref, diff, torch.zeros_like(diff))
        allowed = atol + rtol * w.abs()
        over = (diff > allowed) & finite_ref & torch.isfinite(g)
        mismatched = int(over.sum())
        finite_diff = diff[torch.isfinite(diff)]
        max_abs = float(finite_diff.max()) if finite_diff.numel() else (0.0 if not diff.numel() else float("nan"))
        rec = {
            "kind": "check",
            "suite": self.suite,
            "name": name,
            "shape": list(shape if shape is not None else got.shape),
            "dtype": dtype_name(out_dtype),
            "numel": int(got.numel()),
            "atol": atol,
            "rtol": rtol,
            "max_abs_err": max_abs,
            "unwritten": unwritten,
            "nonfinite": bad_nonfinite,
            "mismatched": mismatched,
            "ok": unwritten == 0 and bad_nonfinite == 0 and mismatched == 0,
        }
        rec.update(meta)
        self.records.append(rec)
        status = "ok" if rec["ok"] else "FAIL"
        self.log(
            f"  check {name:<40s} {str(tuple(rec['shape'])):<22s} {rec['dtype']:<14s} "
            f"{status} max|err|={max_abs:.3g} unwritten={unwritten} mismatched={mismatched}"
        )
        return rec
