"""Chapter 13: the fusion ledger of five scenarios, to the digits the draft prints."""
from __future__ import annotations

import pytest

from ledger import fusion as F
from ledger.cost import dtype_bytes
from ledger.errata import errata
from ledger.figures import collect

FIGS = collect()

DRAFT = {
    "elementwise.fusion.scale_add.unfused_mb": "20.97", "elementwise.fusion.scale_add.fused_mb": "12.58",
    "elementwise.fusion.scale_add.ratio": "1.67", "elementwise.fusion.scale_add.unfused_ai": "0.100",
    "elementwise.fusion.scale_add.fused_ai": "0.167", "elementwise.fusion.scale_add.unfused_bytes_per_elem": "20N",
    "elementwise.fusion.scale_add.fused_bytes_per_elem": "12N",
    "elementwise.fusion.rmsnorm.unfused_mb": "234.99", "elementwise.fusion.rmsnorm.fused_mb": "67.12",
    "elementwise.fusion.rmsnorm.ratio": "3.50", "elementwise.fusion.rmsnorm.steps": "6",
    "elementwise.fusion.layernorm.fused_mb": "67.13", "elementwise.fusion.layernorm.ratio": "5.00",
    "elementwise.fusion.rope.unfused_mb": "369.10", "elementwise.fusion.rope.fused_mb": "100.66",
    "elementwise.fusion.rope.ratio": "3.67",
    "elementwise.fusion.rmsnorm_rope_fp8.unfused_mb": "185.62", "elementwise.fusion.rmsnorm_rope_fp8.fused_mb": "51.40",
    "elementwise.fusion.rmsnorm_rope_fp8.unfused_mb_1": "185.6", "elementwise.fusion.rmsnorm_rope_fp8.fused_mb_1": "51.4",
    "elementwise.fusion.rmsnorm_rope_fp8.ratio": "3.61",
    "elementwise.fusion.ai_min": "0.100", "elementwise.fusion.ai_max": "2.315", "elementwise.fusion.plans": "10",
    "elementwise.fusion.ratio_min": "3.5", "elementwise.fusion.ratio_max": "5",
    "elementwise.vector.lanes_fp32": "4", "elementwise.vector.lanes_fp16": "8", "elementwise.vector.warp_bytes_32bit": "128",
    "elementwise.vector.warp_bytes_128bit": "512", "elementwise.vector.width_gain": "4",
    "elementwise.vector.threads_for_256_fp16": "32",
    "elementwise.fragment.row_fp32_kib": "16", "elementwise.fragment.rows4_fp32_kib": "64",
}


@pytest.mark.parametrize("key", sorted(DRAFT))
def test_draft_figure_reproduced(key):
    assert key in FIGS, f"figure {key} missing"
    assert FIGS[key].text == DRAFT[key]


def test_layernorm_split_erratum():
    e = {x.figure: x for x in errata()}["elementwise.fusion.layernorm.unfused_mb"]
    assert e.draft == 335.59
    assert FIGS["elementwise.fusion.layernorm.unfused_mb"].value == e.ours != e.draft
    # the whole gap is six fp32 per-row vectors of 4096 rows
    assert e.ours - e.draft == pytest.approx(6 * 4096 * 4 / 1e6, abs=0.006)
    assert e.draft_reading == e.draft


def test_plans_count_each_boundary_tensor_twice():
    sc = F.rmsnorm()
    written = {t.name for s in sc.unfused.steps for t in s.writes}
    read = {t.name for s in sc.unfused.steps for t in s.reads}
    inter = written & read
    assert inter == {"x2", "ms", "v", "rstd", "xn"}
    # bytes of the split plan = fused bytes + (write + read) of every intermediate + extra reads of x
    inter_bytes = sum(t.bytes for s in sc.unfused.steps for t in s.writes if t.name in inter)
    extra_x = sc.fused.steps[0].reads[0].bytes  # x is read twice in the split plan
    assert sc.unfused.bytes == pytest.approx(sc.fused.bytes + 2 * inter_bytes + extra_x)
    # fusion changes the bytes, never the arithmetic
    for s in F.scenarios():
        assert s.unfused.flops == s.fused.flops
        assert s.ratio > 1


def test_scenarios_scale_with_shape_and_dtype():
    a, b = F.rmsnorm(4096, 4096, "fp16"), F.rmsnorm(8192, 4096, "fp16")
    assert b.fused.bytes == pytest.approx(2 * a.fused.bytes, rel=1e-3)
    assert F.rmsnorm(4096, 4096, "fp32").fused.bytes == pytest.approx(2 * a.fused.bytes, rel=1e-3)
    # per-group scales cost more than per-token ones
    assert F.rmsnorm_rope_fp8(group=128).fused.bytes > F.rmsnorm_rope_fp8().fused.bytes
    # scale+add: 20N vs 12N for fp32 at any N
    for n in (1000, 2 ** 20):
        s = F.scale_add(n)
        assert (s.unfused.bytes, s.fused.bytes) == (20 * n, 12 * n)


def test_kernel_costs_for_the_timing_suite():
    n = 2 ** 28
    assert F.elementwise_cost(n).bytes == 3 * n * 2
    assert F.elementwise_cost(n, ("float32",), "float16").bytes == n * 6
    m, k = 16384, 4096
    assert F.rmsnorm_cost(m, k, "bfloat16").bytes == (2 * m * k + k) * 2
    assert F.rmsnorm_cost(m, k, "bfloat16", weight=False).bytes == 2 * m * k * 2
    assert F.layernorm_cost(m, k, "float16").bytes == (2 * m * k + 2 * k) * 2
    r = F.rope_cost(4096, 32, 128, 128, "bfloat16", cos_sin_dtype="float32")
    assert r.bytes == 2 * 4096 * 32 * 128 * 2 + 4096 * 64 * 2 * 4
    assert r.flops == 3 * 4096 * 32 * 128
    q = F.fp8_quant_cost(m, k, "bfloat16", group=128)
    assert q.bytes == m * k * (2 + 1) + m * (k // 128) * 4
    assert F.fp8_quant_cost(m, k, group=None).bytes == m * k * 3 + m * 4
    fused = F.rmsnorm_rope_fp8_cost(4096, 4096, "bfloat16")
    split = F.rmsnorm_rope_fp8_cost(4096, 4096, "bfloat16", fused=False)
    assert round(split.bytes / fused.bytes, 2) == 3.61
    # the kernels read fp32 cos/sin tables: both plans read them once more in the wider dtype
    f32 = F.rmsnorm_rope_fp8_cost(4096, 4096, "bfloat16", cos_sin_dtype="float32")
    s32 = F.rmsnorm_rope_fp8_cost(4096, 4096, "bfloat16", fused=False, cos_sin_dtype="float32")
    assert f32.bytes - fused.bytes == s32.bytes - split.bytes == 2 * 4096 * 64 * (4 - 2)
    nr = F.rmsnorm_rope_cost(4096, 4096, "bfloat16", 128)
    assert nr.bytes == (2 * 4096 * 4096 + 4096) * 2 + 4096 * 64 * 2 * 4
    assert F.fragment_kib((1, 4096), "fp32") == 16
    assert F.dtype_bytes("float8_e4m3fn") == dtype_bytes("fp8") == 1


@pytest.mark.parametrize("call, arg", [
    (lambda: F.rmsnorm(0, 4096), "m"),
    (lambda: F.layernorm(4096, -2), "n"),
    (lambda: F.rope(rope_dim=127), "rope_dim"),
    (lambda: F.rmsnorm_rope_fp8(group=100), "group"),
    (lambda: F.scale_add(dtype="fp9"), "dtype"),
    (lambda: F.rope_cost(4096, 32, 128, 256), "rope_dim"),
    (lambda: F.fp8_quant_cost(4, 256, scale_dtype="half-ish"), "scale_dtype"),
    (lambda: F.elementwise_cost(10, ()), "in_dtypes"),
    (lambda: F.Plan("empty", ()), "steps"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
