"""Fused RMSNorm + RoPE, and fused RMSNorm + RoPE + per-token FP8 quant (chapter "elementwise").

``x (M, N)`` fp16/bf16 (M tokens, hidden N), ``weight (N,)``, ``cos, sin (M, R/2)``
fp32.  Semantics = the three separate steps, each rounding to the input dtype:

    y1 = rmsnorm(x, weight)                  (fp32 math, cast to dtype)
    y2 = rope(y1, last R channels, NeoX)     (fp32 math, cast to dtype)
    q, scale = quant_fp8(y2, group)          (per token and group of channels)

One module per schedule, each in the order reference -> kernel -> check:

* :mod:`kernels.fused.reference` -- the three steps in PyTorch;
* :mod:`kernels.fused.fragment`  -- ``blk_m`` tokens per block in register fragments
  (:func:`rmsnorm_rope`, :func:`rmsnorm_rope_fp8`, its lean body);
* :mod:`kernels.fused.pipe`      -- persistent blocks fed by a TMA ring;
* :mod:`kernels.fused.warp`      -- one warp per token, no block-level reduction;
* :mod:`kernels.fused.vec`       -- a token over a few warps, one barrier, bf16 unpacked by
  bit operations (``vec``), and over several tokens per block with ``cp.async`` prefetch
  (``vecp``);
* :mod:`kernels.fused.launch`    -- input checks and the launchers
  (:func:`fused_rmsnorm_rope`, :func:`fused_rmsnorm_rope_fp8`).

The suite :mod:`measure.suites.fused` searches every schedule and times the winner under
one record name.
"""
from kernels.fused.fragment import _rms_rope_quant, rmsnorm_rope, rmsnorm_rope_fp8
from kernels.fused.launch import VEC_DEFAULT, check_inputs, fused_rmsnorm_rope, fused_rmsnorm_rope_fp8
from kernels.fused.pipe import pipe_supported, rmsnorm_rope_fp8_pipe
from kernels.fused.reference import ref_rmsnorm_rope, ref_rmsnorm_rope_fp8
from kernels.fused.vec import _vec_token, _widen, rmsnorm_rope_fp8_vec, rmsnorm_rope_fp8_vecp, vec_supported
from kernels.fused.warp import rmsnorm_rope_fp8_warp, rmsnorm_rope_warp, warp_supported

__all__ = ["ref_rmsnorm_rope", "ref_rmsnorm_rope_fp8", "rmsnorm_rope", "rmsnorm_rope_fp8", "pipe_supported",
           "rmsnorm_rope_fp8_pipe", "warp_supported", "rmsnorm_rope_warp", "rmsnorm_rope_fp8_warp", "vec_supported",
           "rmsnorm_rope_fp8_vec", "rmsnorm_rope_fp8_vecp", "check_inputs", "fused_rmsnorm_rope",
           "fused_rmsnorm_rope_fp8", "VEC_DEFAULT", "_rms_rope_quant", "_vec_token", "_widen"]
