"""tilelang 0.1.15's Ascend latency constants, committed as data.

The Ascend pipe model (:mod:`ledger.ascend`) prices tiles with the constants that
tilelang's ``EstimateLatency`` pass uses.  They live in one C++ header of the tilelang
wheel; this module holds a copy of every scalar field of that header, so the ledger
gives the same numbers on a bare Python with nothing installed.

Source (:data:`SOURCE`): ``tilelang/src/ascend/transform/estimate_latency.h`` inside the
tilelang 0.1.15 wheel from PyPI (the version ``requirements.lock`` pins), struct
``tvm::tl::AscendLatencyParams``; the file's SHA-256 is recorded.  The wheel records no
git commit, and the header differs between upstream commits (``cube_throughput_fp32`` is
512 here and 0 in another upstream revision), so the version and the file hash are the provenance.

Every ``int64_t name{value};`` line of the struct is carried, in the header's order.  The
three ``Nd2NzLatencyParams`` aggregates (ND->NZ scatter costs) are not: the model does
not use them and they are not scalar fields.

``tests/ledger/test_ascend.py`` parses the installed header, where tilelang is installed,
and fails if it differs from :data:`PARAMS` or if the file of the recorded version does
not have the recorded hash.  ``python -m ledger.ascend --check-installed`` prints the
differences; after a deliberate upgrade, regenerate :data:`PARAMS` from its output.
"""
from __future__ import annotations

__all__ = ["SOURCE", "PARAMS"]

SOURCE = {
    "package": "tilelang",
    "version": "0.1.15",
    "path": "tilelang/src/ascend/transform/estimate_latency.h",
    "struct": "tvm::tl::AscendLatencyParams",
    "sha256": "2cef894cd5bf02a9e0b3cd695167c92dda6f63d9ed1d98b18a3a62afd927ef20",
}

#: ``{field: value}`` of every ``int64_t field{value};`` in the header (cycles,
#: bytes/cycle or operations/cycle, as the header's own convention says).
PARAMS = {
    "cube_base_latency": 8,
    "cube_fallback_throughput": 8192,
    "cube_min_ii": 1,
    "cube_pipeline_depth": 1,
    "cube_unit_m": 16,
    "cube_unit_k": 16,
    "cube_unit_n": 16,
    "cube_throughput_fp16": 8192,
    "cube_throughput_bf16": 8192,
    "cube_throughput_fp32": 512,
    "cube_throughput_hf32": 4096,
    "cube_fp32_base_latency": 67,
    "cube_throughput_fp8": 16384,
    "cube_mx_base_latency": 25,
    "cube_mx_min_mn": 48,
    "cube_throughput_mxfp4": 32768,
    "cube_throughput_int8": 0,
    "add_throughput": 51,
    "sub_throughput": 51,
    "mul_throughput": 51,
    "div_throughput": 13,
    "mod_throughput": 13,
    "min_max_throughput": 51,
    "cmp_throughput": 51,
    "logic_throughput": 51,
    "special_func_throughput": 8,
    "default_operation_throughput": 0,
    "valu_bandwidth": 256,
    "mte1_base_latency": 5,
    "mte1_issue_overhead": 3,
    "mte1_sf_base_latency": 28,
    "mte1_sf_issue_overhead": 1,
    "fixpipe_base_latency": 58,
    "fixpipe_issue_overhead": 2,
    "fixpipe_l0c_to_gm_base_latency": 200,
    "mte_descriptor_cycles": 0,
    "l1_to_l0a_bandwidth": 256,
    "l1_to_l0b_bandwidth": 256,
    "l1_to_l0_sf_bandwidth": 32,
    "l1_to_bt_bandwidth": 32,
    "l1_to_fp_buf_bandwidth": 32,
    "aic_mte2_to_l1_bandwidth": 100,
    "fixpipe_bandwidth": 128,
    "mte2_gm_to_l1_base_latency": 190,
    "mte2_gm_to_l1_min_ii": 64,
    "mte2_gm_to_ub_base_latency": 90,
    "mte2_gm_to_ub_bandwidth": 100,
    "mte3_ub_to_gm_base_latency": 180,
    "mte3_ub_to_gm_bandwidth": 115,
    "mte3_ub_to_l1_base_latency": 43,
    "mte3_ub_to_l1_bandwidth": 256,
    "mte2_gm_to_ub_min_ii": 13,
    "mte3_ub_to_gm_min_ii": 10,
    "fixpipe_dual_bandwidth": 256,
    "fixpipe_dual_width_scale": 2,
    "fixpipe_dual_unknown_width_bandwidth": 128,
    "mte2_gm_to_ub_n_transaction_bytes": 128,
    "mte2_gm_to_ub_n_peak_bandwidth": 102,
    "mte2_gm_to_ub_n_plateau_bandwidth": 50,
    "mte2_gm_to_ub_n_wide_bandwidth": 100,
    "mte2_gm_to_ub_n_unknown_bandwidth": 48,
    "mte3_ub_to_gm_n_transaction_bytes": 128,
    "mte3_ub_to_gm_n_peak_bandwidth": 86,
    "mte3_ub_to_gm_n_plateau_bandwidth": 40,
    "mte3_ub_to_gm_n_wide_bandwidth": 110,
    "mte3_ub_to_gm_n_unknown_bandwidth": 40,
    "mte3_ub_to_l1_raw_n_full_width_bytes": 160,
    "mte3_ub_to_l1_raw_n_width_numerator": 3,
    "mte3_ub_to_l1_raw_n_width_denominator": 4,
    "mte3_ub_to_l1_raw_n_unknown_bandwidth": 48,
    "mte2_gm_to_ub_n_base_latency": 75,
    "mte3_ub_to_gm_narrow_base_latency": 440,
    "fixpipe_dual_base_latency": 55,
}
