"""Reading a compiled GEMM on the CPU: launch configuration, instruction path, wgmma shapes,
and what ptxas says about registers.  Nothing here launches a kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["LaunchInfo", "launch_info", "instruction_path", "wgmma_shapes", "ptxas_report"]


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
