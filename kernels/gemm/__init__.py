"""Chapter 14's GEMMs in TileLang (fp16/fp8/int4, Hopper sm_90a).

Modules (each: reference, kernel factories, ``check_inputs``, ``gpu_suite(h)``):

* :mod:`kernels.gemm.ladder`  -- rungs 1-5 and the tuned rung 4;
* :mod:`kernels.gemm.ws`      -- rung 4 written by hand (explicit warp specialization,
  persistent, cluster multicast) for fp16 and fp8 (tuning candidates of ladder and lowp);
* :mod:`kernels.gemm.splitk`  -- split-K with element-wise and tile-wise fp32 atomics;
* :mod:`kernels.gemm.streamk` -- stream-K for 132 SMs (full waves + K-split tail + fix-up);
* :mod:`kernels.gemm.grouped` -- grouped GEMM for MoE (offset tables, pointer tables);
* :mod:`kernels.gemm.batched` -- batched GEMM for attention-like shapes;
* :mod:`kernels.gemm.lowp`    -- fp8 e4m3 GEMM and the W4A16 dequantize GEMM;
* :mod:`kernels.gemm.w4a16`   -- W4A16 with the weights expanded into wgmma's register operand;
* :mod:`kernels.gemm.bf16`    -- the hand-written rung 4 in bf16 vs cuBLAS bf16;
* :mod:`kernels.gemm.batched_ws` -- batched GEMM folded into M on the persistent hand-written pipeline;
* :mod:`kernels.gemm.ncu_gemm` -- Nsight Compute counters of the 8192^3 GEMMs (multicast);
* :mod:`kernels.gemm.support` -- what tilelang 0.1.15 lowers for sm_90a (int4, MX, ...);
* :mod:`kernels.gemm.common`  -- target, checks, source inspection, suite helpers.

Convention everywhere: ``C[M, N] = A[M, K] @ B[N, K]^T`` (B stored like an
``nn.Linear`` weight), fp32 accumulation.
"""
