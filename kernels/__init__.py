"""kernels: the course's TileLang kernels, grouped by family, each with its PyTorch reference.

Every family module is written in one order: the reference (what the kernel computes, in
PyTorch), the kernel factories (``@tilelang.jit``), the input checks (``ValueError`` naming
the constraint) and the launchers.  Families:

* :mod:`kernels.pytorch`     -- chapter 1's fused sin(cos(x));
* :mod:`kernels.elementwise`, :mod:`kernels.quant`, :mod:`kernels.norm`, :mod:`kernels.rope`,
  :mod:`kernels.fused`       -- elementwise, FP8 quantization, RMSNorm/LayerNorm, RoPE and
  their fusions (one module per schedule in :mod:`kernels.fused`);
* :mod:`kernels.gemm`        -- the GEMM ladder, the hand-written pipeline and the variants;
* :mod:`kernels.case_study`  -- the performance-model chapter's design case;
* :mod:`kernels.ascend`      -- Ascend programs, lowered on the CPU only.

Verifying and timing them is :mod:`measure`'s job; nothing here imports it.
"""
