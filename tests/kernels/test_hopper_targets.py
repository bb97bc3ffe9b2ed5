"""What the ``a`` of ``sm_90a`` buys, and which shared-memory swizzles ``wgmma`` takes -- on the CPU.

The GEMM and elementwise chapters say: TMA needs no ``a`` target (plain ``sm_90`` has the bulk
tensor copies); ``wgmma`` and ``setmaxnreg`` do (they are ``sm_90a`` features); tilelang picks a
128-byte swizzle for a 64-element fp16 row because such a row is 128 bytes, and a narrower row gets
a narrower swizzle that compiles just as well.  Each claim is checked here on generated code:

* ptxas itself, on a few lines of inline PTX compiled for ``sm_90`` and for ``sm_90a``;
* tilelang's own CUDA for the ladder's rungs, compiled to PTX for both targets (a rung with
  ``wgmma`` but no warp specialization compiles for plain ``sm_90`` -- with every ``wgmma`` gone
  from the PTX: CuTe's guard swaps the instruction for a trap at run time);
* the ``wgmma`` descriptors of rungs 3 and 4 at ``block_K`` = 64, 32 and 16.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

tilelang = pytest.importorskip("tilelang")

from tilelang.contrib import nvcc  # noqa: E402

from kernels.gemm import ladder  # noqa: E402
from kernels.gemm.common import TARGET, TARGET_SM90  # noqa: E402

SHAPE = (1024, 1024, 1024)

# --------------------------------------------------------------- ptxas on inline PTX
_PTX = {
    # a TMA load of a 2-D tile into shared memory, completion counted on an mbarrier
    "tma": r'''
__global__ void k(const __grid_constant__ CUtensorMap desc, int c0, int c1) {
  __shared__ alignas(128) unsigned short tile[64 * 64];
  __shared__ alignas(8) unsigned long long bar;
  unsigned s = (unsigned)__cvta_generic_to_shared(tile), b = (unsigned)__cvta_generic_to_shared(&bar);
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(s), "l"(&desc), "r"(c0), "r"(c1), "r"(b) : "memory");
}''',
    # one warpgroup matrix multiply from two shared-memory descriptors
    "wgmma": r'''
__global__ void k(unsigned long long da, unsigned long long db, float *out) {
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db), "r"(1));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}''',
    # the register hand-over of warp specialization
    "setmaxnreg": r'''
__global__ void k(float *out) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  out[threadIdx.x] = 1.f;
}''',
}


def _ptxas(snippet: str, arch: str) -> tuple[bool, str]:
    """Compile ``snippet`` to a cubin for ``arch`` with the course's nvcc: (ok, messages)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.cu"
        src.write_text("#include <cuda.h>\n" + snippet, encoding="utf-8")
        p = subprocess.run([nvcc.get_nvcc_compiler(), "--cubin", f"-arch={arch}", "-o", str(Path(d) / "k.cubin"),
                            str(src)], capture_output=True, text=True, timeout=300)
        return p.returncode == 0, p.stdout + p.stderr


@pytest.mark.slow
def test_tma_needs_no_a_suffix():
    for arch in ("sm_90", "sm_90a"):
        ok, msg = _ptxas(_PTX["tma"], arch)
        assert ok, (arch, msg)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["wgmma", "setmaxnreg"])
def test_wgmma_and_setmaxnreg_need_sm90a(what):
    ok, msg = _ptxas(_PTX[what], "sm_90a")
    assert ok, msg
    ok, msg = _ptxas(_PTX[what], "sm_90")
    assert not ok
    assert re.search(rf"Instruction '{what}[^']*' not supported on \.target 'sm_90'", msg), msg


# --------------------------------------------------------------- tilelang's CUDA, both targets
def _ptx_of(src: str, arch: str) -> str:
    out = nvcc.compile_cuda(src, target_format="ptx", arch=arch, options=nvcc.default_compile_options())
    return bytes(out).decode()


def _count(ptx: str) -> dict[str, int]:
    return {"wgmma": len(re.findall(r"\bwgmma\.mma_async", ptx)),
            "setmaxnreg": len(re.findall(r"\bsetmaxnreg\.", ptx)),
            "tma": len(re.findall(r"\bcp\.async\.bulk\.tensor", ptx)),
            "brkpt": len(re.findall(r"\bbrkpt;", ptx))}


@pytest.fixture(scope="module")
def rung_sources():
    out = {}
    for name in ("rung2_shared", "rung3_pipelined"):
        fn, cfg = ladder.RUNGS[name]
        out[name] = tilelang.compile(fn.get_tir(*SHAPE, **cfg), target=TARGET).get_kernel_source()
    return out


@pytest.mark.slow
def test_rung3_on_sm90a_has_tma_wgmma_and_setmaxnreg(rung_sources):
    c = _count(_ptx_of(rung_sources["rung3_pipelined"], "sm_90a"))
    assert c["wgmma"] and c["tma"] and c["setmaxnreg"] and not c["brkpt"], c


@pytest.mark.slow
def test_rung3_for_plain_sm90_is_refused_at_setmaxnreg(rung_sources):
    with pytest.raises(Exception, match="CTA register reconfiguration, such as sm_90a"):
        _ptx_of(rung_sources["rung3_pipelined"], "sm_90")


@pytest.mark.slow
def test_rung2_for_plain_sm90_compiles_without_any_wgmma(rung_sources):
    """No error, no warning: CuTe's guard replaces each wgmma by a trap (printf + brkpt)."""
    a = _count(_ptx_of(rung_sources["rung2_shared"], "sm_90a"))
    plain = _count(_ptx_of(rung_sources["rung2_shared"], "sm_90"))
    assert a["wgmma"] and not a["brkpt"], a
    assert plain["wgmma"] == 0 and plain["brkpt"], plain


@pytest.mark.slow
def test_bulk_tma_store_of_rope_compiles_for_plain_sm90():
    from kernels import rope as R

    k = tilelang.compile(R.rope_blocked.get_tir(16384, 32, 128, 128, "neox", "float16", 2, 256), target=TARGET_SM90)
    src = k.get_kernel_source()
    assert "tl::tma_store" in src
    assert len(re.findall(r"\bcp\.async\.bulk\.", _ptx_of(src, "sm_90"))) >= 1


# --------------------------------------------------------------- swizzle follows the row's bytes
_LAYOUT = {1: "128B", 2: "64B", 3: "32B"}  # tl_templates/cuda/common.h: GmmaDescriptor layout_type


@pytest.mark.slow
@pytest.mark.parametrize("block_k,swizzle", [(64, "128B"), (32, "64B"), (16, "32B")])
def test_wgmma_swizzle_is_the_fp16_row_width(block_k, swizzle):
    """An fp16 row of block_K elements is 2*block_K bytes; the inferred swizzle (rung 3) and the
    annotated one (rung 4) both take that width, and every variant keeps TMA and wgmma; the ledger's
    ``swizzle_bytes`` (which the book quotes) says the same width."""
    from ledger.tiles import swizzle_bytes

    assert f"{swizzle_bytes(block_k, 16)}B" == swizzle
    for name in ("rung3_pipelined", "rung4_annotated"):
        fn, cfg = ladder.RUNGS[name]
        src = tilelang.compile(fn.get_tir(*SHAPE, **{**cfg, "block_K": block_k}), target=TARGET).get_kernel_source()
        layouts = {int(t) for t in re.findall(r"initialize_wgmma_descriptor<(\d+),", src)}
        assert {_LAYOUT[t] for t in layouts} == {swizzle}, (name, block_k, layouts)
        assert "tl::tma_load" in src and "wgmma" in src
