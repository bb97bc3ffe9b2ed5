"""What tilelang 0.1.15 lowers for Hopper (sm_90a): an audit of the low-precision GEMM paths.

Each probe builds the smallest kernel that uses a construct and compiles it for
sm_90a; :func:`audit` returns, per probe, whether it compiled, the first line of
the error when it did not, and the instruction path when it did. The CPU tests
pin these results, so a tilelang upgrade that changes them shows up as a test
failure (and the book's sentence about it gets revisited).

Probes:

* ``int8_gemm``    -- int8 x int8 -> int32 through ``T.gemm`` (Hopper has s8 wgmma);
* ``int4_gemm``    -- ``T.int4`` operands straight into ``T.gemm`` (Hopper has no
  int4 tensor-core instruction: sm_90 dropped the sub-byte mma of sm_80);
* ``fp8_gemm``     -- e4m3 x e4m3 -> fp32 (Hopper's fp8 wgmma);
* ``mx_blockscaled`` -- ``T.gemm_blockscaled`` with e8m0 scales per 32 K (MX), a
  Blackwell (tcgen05) instruction family;
* ``wgmma_n24``    -- the fp16 rung-4 body with ``block_N = 24`` (= 8 mod 16), the
  shape class behind the 0.1.x wgmma issue; the library refuses it
  (:func:`kernels.gemm.common.check_wgmma_n`), the probe shows what the compiler
  would emit;
* ``multicast_gemm`` -- the pipelined fp16 body in a cluster of two blocks along M
  whose B tile is loaded once with ``T.copy_cluster(..., cluster_mask=0b11)`` (TMA
  multicast into both blocks).  It lowers into the automatic warp-specialized pipeline,
  but :func:`multicast_release` shows the hazard that keeps it out of the course's
  search: a stage is released to the producer by the arrivals of the *local* consumers
  only, so the leading block can overwrite the other block's stage before that block's
  consumers have read it (a cluster-scope release would be needed; the hand-written
  pipeline :func:`kernels.gemm.ws.rung4_ws` with ``cluster=2`` has one).
"""

from typing import Any, Callable

import tilelang
import tilelang.language as T

from kernels.gemm.common import TARGET
from kernels.gemm.lowered import instruction_path, wgmma_shapes


#: The integer operand types the integer probe takes (``T.int8`` has s8 wgmma on Hopper).
INT_DTYPES = {"int8": T.int8, "int4": T.int4}


@tilelang.jit(target=TARGET)
def probe_int(M: int = 256, N: int = 256, K: int = 256, dtype: str = "int8", block_M: int = 128, block_N: int = 128,
              block_K: int = 64):
    """An integer GEMM (``dtype`` operands, int32 accumulator and output) through ``T.gemm``."""
    dt = INT_DTYPES[dtype]

    @T.prim_func
    def main(A: T.Tensor((M, K), dt), B: T.Tensor((N, K), dt), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dt)
            B_s = T.alloc_shared((block_N, block_K), dt)
            acc = T.alloc_fragment((block_M, block_N), T.int32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(target=TARGET)
def probe_mx(M: int = 256, N: int = 256, K: int = 256, block_M: int = 128, block_N: int = 128, block_K: int = 128, sf: int = 32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float8_e4m3fn),
        B: T.Tensor((N, K), T.float8_e4m3fn),
        SFA: T.Tensor((M, K // sf), T.float8_e8m0fnu),
        SFB: T.Tensor((N, K // sf), T.float8_e8m0fnu),
        C: T.Tensor((M, N), T.float32),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float8_e4m3fn)
            B_s = T.alloc_shared((block_N, block_K), T.float8_e4m3fn)
            SFA_s = T.alloc_shared((block_M, block_K // sf), T.float8_e8m0fnu)
            SFB_s = T.alloc_shared((block_N, block_K // sf), T.float8_e8m0fnu)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                T.copy(SFA[by * block_M, ko * (block_K // sf)], SFA_s)
                T.copy(SFB[bx * block_N, ko * (block_K // sf)], SFB_s)
                T.gemm_blockscaled(
                    A_s, B_s, acc, SFA_s, SFB_s, transpose_B=True,
                    k_start=ko * block_K, sf_a_granularity_k=sf, sf_b_granularity_k=sf,
                )
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(target=TARGET)
def probe_multicast(M: int = 512, N: int = 512, K: int = 512, block_M: int = 128, block_N: int = 256,
                    block_K: int = 64, stages: int = 3):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256, cluster_dims=(1, 2, 1)) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_N, block_K), T.float16)
            acc = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                # the two blocks of a cluster share the B tile: the lower rank loads it for both
                T.copy_cluster(B[bx * block_N, ko * block_K], B_s, cluster_mask=0b11)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def multicast_release(src: str) -> dict[str, Any]:
    """How a multicast pipeline's stages are handed back to the producer, read off the source:
    ``multicast`` (a TMA multicast load is emitted), ``barrier_counts`` (arrival counts of the
    stage barriers), ``cluster_release`` (any arrival on another block's barrier)."""
    import re

    return {
        "multicast": "tma_load_multicast" in src,
        "barrier_counts": [int(n) for n in re.findall(r"\w+\[\d+\]\.init\((\d+)\)", src)],
        # an arrival addressed to a block of the cluster: ``bar.arrive(cta)`` (tl::Barrier's
        # remote form, mapa + mbarrier.arrive.shared::cluster) or the named intrinsics
        "cluster_release": bool(re.search(r"\]\.arrive\(\s*[^)\s]", src))
        or any(k in src for k in ("arrive_cluster", "mapa", "remote_arrive")),
    }


def _fp8() -> Any:
    from kernels.gemm.lowp import fp8_gemm

    return fp8_gemm(256, 512, 512)


def _n24() -> Any:
    from kernels.gemm.ladder import rung4_annotated

    return rung4_annotated(256, 240, 256, block_M=128, block_N=24, block_K=64, stages=2, threads=128, panel=0)


PROBES: dict[str, Callable[[], Any]] = {
    "int8_gemm": lambda: probe_int(dtype="int8"),
    "int4_gemm": lambda: probe_int(dtype="int4", block_K=128),
    "fp8_gemm": _fp8,
    "mx_blockscaled": lambda: probe_mx(),
    "wgmma_n24": _n24,
    "multicast_gemm": lambda: probe_multicast(),
}


def _reason(exc: BaseException) -> str:
    """The informative line of a compiler error (the check that failed, or the stated requirement)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for key in ("Check failed", "requires", "Error:", "error:"):
        for ln in lines:
            if key in ln:
                return ln.split("Fatal: ", 1)[-1]
    return lines[-1] if lines else ""


def probe(name: str) -> dict[str, Any]:
    """Compile one probe for sm_90a; returns {supported, error, path, wgmma_shapes}."""
    try:
        kern = PROBES[name]()
        src = kern.get_kernel_source()
    except Exception as exc:  # the finding is the exception itself
        return dict(name=name, supported=False, error=f"{type(exc).__name__}: {_reason(exc)}"[:500], path={}, wgmma_shapes=[])
    return dict(name=name, supported=True, error=None, path=instruction_path(src), wgmma_shapes=sorted(set(wgmma_shapes(src))))


def audit(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run every probe (or ``names``)."""
    return {n: probe(n) for n in (names or list(PROBES))}


MARKER = "== sm_90a audit (json) =="


def audit_quiet(timeout: float = 600) -> dict[str, dict[str, Any]]:
    """:func:`audit` in a child interpreter, so compiler logs and C++ errors stay off this process's stderr."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kernels.gemm.support"], capture_output=True, text=True, timeout=timeout)
    out = proc.stdout
    if proc.returncode != 0 or MARKER not in out:
        raise RuntimeError(f"audit subprocess failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(out.split(MARKER, 1)[1])


if __name__ == "__main__":
    import json

    result = audit()
    print(MARKER)
    print(json.dumps(result, indent=1))
