"""Shared helpers for the GEMM family: target, input checks, source inspection.

Everything here runs on a CPU-only machine: kernels are compiled for Hopper
(``sm_90a``) and inspected through their generated CUDA source and the device
module's attributes; nothing is launched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Compile target for every GEMM kernel of chapter 14 (H200 = sm_90a).
TARGET: dict[str, str] = {"kind": "cuda", "arch": "sm_90a"}
#: Rounds of alternating kernel / library timing for the benches that are compared with a
#: target ratio to cuBLAS or torch._scaled_mm (``Harness.bench(rounds=...)``).
BENCH_ROUNDS = 7
#: Rounds of a search that picks a winner by a few percent (the tuned rung 4, the fp8 kernels):
#: every candidate timed this many times, the starting point of the list rotated each round;
#: one timed call moves by several percent with the card's power-capped clock (runs 16-18
#: timed byte-identical twins up to 11 % apart).
SEARCH_ROUNDS = 3
#: Plain sm_90 (no wgmma / setmaxnreg); used to show what the "a" suffix buys.
TARGET_SM90: dict[str, str] = {"kind": "cuda", "arch": "sm_90"}

#: Streaming multiprocessors of the measured machine (H200 SXM).
H200_SMS = 132


def rel_fro_err(out: Any, ref: Any) -> float:
    """Relative Frobenius error ||out - ref||_F / ||ref||_F, computed in fp32."""
    import torch

    o = out.detach().to(torch.float32)
    r = ref.detach().to(torch.float32)
    den = torch.linalg.vector_norm(r).item()
    num = torch.linalg.vector_norm(o - r).item()
    return num / den if den > 0 else num


def require(cond: bool, message: str) -> None:
    """Raise ``ValueError(message)`` when ``cond`` is false (checks before launch)."""
    if not cond:
        raise ValueError(message)


def check_matrix(x: Any, name: str, shape: tuple[int, ...], dtype: Any) -> None:
    """Check one operand: a contiguous tensor of exact shape and dtype (device: :func:`check_cuda`)."""
    import torch

    require(isinstance(x, torch.Tensor), f"{name} must be a torch.Tensor")
    require(tuple(x.shape) == tuple(shape), f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    require(x.dtype == dtype, f"{name} must be {dtype}, got {x.dtype}")
    require(x.is_contiguous(), f"{name} must be contiguous (row-major)")


def check_cuda(**tensors: Any) -> None:
    """Every tensor on one CUDA device (checked last, so shape errors are reported first)."""
    devs = set()
    for name, t in tensors.items():
        require(t.is_cuda, f"{name} must live on a CUDA device")
        devs.add(t.device)
    require(len(devs) <= 1, f"all operands must be on one device, got {sorted(map(str, devs))}")


def check_tiles(**dims_and_tiles: tuple[int, int]) -> None:
    """Each keyword is ``name=(extent, tile)``; the extent must be a multiple of the tile."""
    for name, (extent, tile) in dims_and_tiles.items():
        require(extent > 0, f"{name}={extent} must be positive")
        require(extent % tile == 0, f"{name}={extent} must be a multiple of the tile size {tile}")


def check_wgmma_n(block_N: int) -> None:
    """Guard against the 0.1.x wgmma issue with block_N = 8 (mod 16).

    wgmma accepts N in multiples of 8, but tilelang 0.1.x mis-partitions the
    accumulator when the per-warpgroup N is an odd multiple of 8; tiles with
    ``block_N % 16 == 8`` are therefore refused (the probe in ``support`` shows
    what the compiler emits for them).
    """
    require(block_N % 16 == 0, f"block_N={block_N} must be a multiple of 16 (block_N = 8 mod 16 hits the 0.1.x wgmma bug)")


# ---------------------------------------------------------------- inspection


@dataclass(frozen=True)
class LaunchInfo:
    """What the lowered device function declares: grid, block, dynamic shared memory."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dyn_smem_bytes: int
    static_smem_bytes: int

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def smem_bytes(self) -> int:
        return self.dyn_smem_bytes + self.static_smem_bytes


_STATIC_SHARED = re.compile(r"__shared__\s+(?:__align__\(\d+\)\s+)?(\w+)\s+\w+\[(\d+)\]")
_SIZES = {"uint64_t": 8, "float": 4, "half_t": 2, "int": 4, "uint": 4, "signed char": 1,
          "uchar": 1, "char": 1, "bfloat16_t": 2, "int64_t": 8, "uint32_t": 4, "fp8_e4_t": 1}


def launch_info(kernel: Any) -> LaunchInfo:
    """Read grid/block/shared memory of the (first) device function of a compiled kernel."""
    artifact = getattr(kernel, "artifact", None)
    if artifact is None or artifact.device_mod is None:
        raise RuntimeError(
            "this kernel came from tilelang's disk cache and carries no device module; "
            "compile it with tilelang.disable_cache() to inspect its launch configuration"
        )
    dev = artifact.device_mod
    (gvar, func), *_ = list(dev.functions.items())
    attrs = func.attrs
    grid = [1, 1, 1]
    block = [1, 1, 1]
    for tag, extent in attrs["thread_extent"].items():
        tag = str(tag)
        if "threadIdx" in tag:
            block["xyz".index(tag[-1])] = int(extent)
        elif "blockIdx" in tag:
            grid["xyz".index(tag[-1])] = int(extent)
    dyn = int(attrs["dyn_shared_memory_buf"]) if "dyn_shared_memory_buf" in attrs else 0
    static = 0
    for ty, count in _STATIC_SHARED.findall(kernel.get_kernel_source()):
        if "extern" in ty:
            continue
        static += _SIZES.get(ty, 4) * int(count)
    return LaunchInfo(gvar.name_hint, tuple(grid), tuple(block), dyn, static)


def instruction_path(src: str) -> dict[str, bool]:
    """Which hardware paths a generated CUDA source reaches (by the tl templates it calls)."""
    return {
        "wgmma": "wgmma" in src,
        "mma_sync": ("mma.sync" in src) or ("tl::mma_sync" in src) or ("mma_sync<" in src),
        "ldmatrix": ("ldmatrix" in src) or ("ptx_ldmatrix" in src),
        "stmatrix": ("stmatrix" in src) or ("ptx_stmatrix" in src),
        "tma_load": "tma_load" in src,
        "tma_store": "tma_store" in src,
        "cp_async": ("cp_async" in src) or ("cp.async" in src),
        "mbarrier": "mbarrier" in src,
        "warp_specialized": "warpgroup_reg_alloc" in src or "warpgroup_reg_dealloc" in src,
        "shared_memory": ("__shared__" in src and "buf_dyn_shmem" in src) or bool(_STATIC_SHARED.search(src)),
        "atomic_add": "atomic" in src.lower(),
        "rasterization": "rasterization2D" in src,
    }


def wgmma_shapes(src: str) -> list[tuple[int, int, int]]:
    """(M, N, K) of every ``tl::wgmma_*`` template call in a CUDA source."""
    out = []
    for m in re.finditer(r"wgmma_(?:ss|rs)<[^>]*?,\s*(\d+),\s*(\d+),\s*(\d+),", src):
        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return out


# ------------------------------------------------------------- GPU-side helpers


def ptxas_report(src: str, arch: str = "sm_90a", timeout_s: float = 600.0) -> dict[str, Any]:
    """Compile a kernel's generated CUDA with ``nvcc -Xptxas -v`` (as tilelang does, against the
    installed package's templates) and read what ptxas says: ``registers``, ``spill_bytes``
    (stores + loads), ``serialized_wgmma`` (ptxas warning C7514: wgmma serialized because
    other instructions touch an in-flight accumulator) and the raw ``text``.  Raises
    ``RuntimeError`` naming nvcc's error when the source does not compile."""
    import os
    import re
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    import tilelang

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    root = Path(tilelang.__file__).resolve().parent
    num = arch.removeprefix("sm_")
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "k.cu")
        Path(cu).write_text(src, encoding="utf-8")
        cmd = [nvcc, f"-gencode=arch=compute_{num},code=sm_{num}", "-std=c++17", "-O3", "-c", cu,
               "-o", os.path.join(d, "k.o"), f"-I{root / 'src'}", f"-I{root / '3rdparty' / 'cutlass' / 'include'}",
               "-Xptxas", "-v", "-w"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    text = res.stdout + res.stderr
    if res.returncode != 0:
        raise RuntimeError(f"nvcc failed ({res.returncode}): {text[-600:]}")
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", text)]
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]
    return {"registers": max(regs) if regs else None, "spill_bytes": sum(spills),
            "serialized_wgmma": "C7514" in text, "text": text}


def library_kernels(fn: Any) -> list[str]:
    """Names of the CUDA kernels one call of ``fn`` launches (torch.profiler), memsets and
    copies left out -- which cuBLAS kernel ``torch.matmul`` picked for a shape."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if getattr(e.device_type, "name", "") == "CUDA"}
    return sorted(n for n in names if not n.startswith(("Memset", "Memcpy")))


def par_build(thunks: dict[str, Any], workers: int = 16) -> dict[str, dict[str, Any]]:
    """Compile several kernels at once (lowering releases the GIL; nvcc is a subprocess).

    ``thunks`` maps a label to a zero-argument callable returning a compiled kernel.
    Returns label -> {"kernel": kernel or None, "error": str or None, "compile_s": s}.
    """
    import time
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, Any]) -> tuple[str, dict[str, Any]]:
        label, thunk = item
        t0 = time.perf_counter()
        try:
            return label, dict(kernel=thunk(), error=None, compile_s=time.perf_counter() - t0)
        except Exception as exc:
            return label, dict(kernel=None, error=f"{type(exc).__name__}: {exc}"[-600:], compile_s=time.perf_counter() - t0)

    items = list(thunks.items())
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        return dict(pool.map(one, items))


def fp32_tolerance(K: int) -> tuple[float, float]:
    """(atol, rtol) for an fp32-output GEMM against an fp32 reference with unit-variance inputs.

    Two fp32 summation orders of K products of size ~1 differ by about
    sqrt(K) * 2^-24 * K^0.5 in the worst rows; 1e-5 * K covers it with margin.
    """
    return (1e-5 * K, 1e-4)


def gemm_tolerance(K: int, rtol: float = 2e-3) -> dict[str, float]:
    """``h.check`` tolerances for a low-precision-output GEMM with unit-variance inputs.

    Two correct fp32 accumulations of K products differ by roughly sqrt(K) fp16 ulps
    of 1 in entries near zero, where the relative part of the tolerance gives nothing;
    a wrong tile is off by O(sqrt(K)) itself, 2^11 times more.
    """
    return dict(atol=float(2.0 ** -11 * K ** 0.5), rtol=rtol)


def record_bench(h: Any, name: str, fn: Any, *, repeat: int | None = None, **kw: Any) -> dict[str, Any]:
    """``h.bench`` when ``repeat`` is None; otherwise time with ``h.time(fn, repeat=repeat)`` (slow kernels)
    and append a bench record of the same shape (baselines timed the same way)."""
    if repeat is None:
        return h.bench(name, fn, **kw)
    ms = h.time(fn, repeat=repeat)
    rec: dict[str, Any] = {"kind": "bench", "suite": h.suite, "name": name, "ms": ms, "repeat": repeat,
                           "bytes": kw.get("bytes"), "flops": kw.get("flops"), "ledger_source": kw.get("ledger_source", "")}
    if kw.get("flops"):
        rec["tflops"] = kw["flops"] / (ms * 1e-3) / 1e12
    if kw.get("bytes"):
        rec["gbps"] = kw["bytes"] / (ms * 1e-3) / 1e9
    rec["baselines"], rec["speedup"] = {}, {}
    for label, bfn in (kw.get("baselines") or {}).items():
        if bfn is None:
            rec["baselines"][label] = None
            continue
        bms = h.time(bfn)
        rec["baselines"][label] = bms
        rec["speedup"][label] = bms / ms
    rec["ok"] = True
    for k, v in kw.items():
        if k not in ("bytes", "flops", "ledger_source", "baselines", "targets"):
            rec[k] = v
    h.records.append(rec)
    h.log(f"  bench {name:<40s} {ms * 1e3:9.1f} us  {rec.get('tflops', 0):7.1f} TFLOP/s (repeat={repeat})")
    return rec


def gemm_cost(M: int, N: int, K: int, dtype: str = "fp16", out_dtype: str | None = None) -> tuple[float, float, str]:
    """(flops, bytes, source) of one GEMM from :func:`ledger.gemm.gemm_cost`."""
    from ledger.gemm import gemm_cost as _gc

    c = _gc(M, N, K, dtype, out_dtype)
    return float(c.flops), float(c.bytes), "ledger.gemm.gemm_cost"
