"""The GEMMs in TileLang (fp16/fp8/int4, Hopper sm_90a), chapter "gemm".

Modules (each: reference, kernel factories, ``check_inputs``; the suites are in
:mod:`measure.suites.gemm`):

* :mod:`kernels.gemm.ladder`  -- rungs 1-5 and the tuned rung 4 (one configuration of the search);
* :mod:`kernels.gemm.ws`      -- rung 4 written by hand (explicit warp specialization,
  persistent, cluster multicast) for fp16, bf16 and fp8, single or batched (tuning candidates of the ladder and lowp suites);
* :mod:`kernels.gemm.splitk`  -- split-K with element-wise and tile-wise fp32 atomics;
* :mod:`kernels.gemm.streamk` -- stream-K (full waves + K-split tail + fix-up);
* :mod:`kernels.gemm.grouped` -- grouped GEMM for MoE (offset tables, pointer tables);
* :mod:`kernels.gemm.batched` -- batched GEMM for attention-like shapes;
* :mod:`kernels.gemm.lowp`    -- fp8 e4m3 GEMM and the W4A16 dequantize GEMM;
* :mod:`kernels.gemm.w4a16`   -- W4A16 with the weights expanded into wgmma's register operand (swap AB);
* :mod:`kernels.gemm.plainread` -- a plain read of a buffer (what any kernel that reads those bytes once pays);
* :mod:`kernels.gemm.support` -- what tilelang 0.1.15 lowers for sm_90a (int4, MX, ...);
* :mod:`kernels.gemm.common`  -- targets and the one operand check of every variant;
* :mod:`kernels.gemm.lowered` -- reading a compiled kernel on the CPU (launch, instruction path).

Convention everywhere: ``C[M, N] = A[M, K] @ B[N, K]^T`` (B stored like an
``nn.Linear`` weight), fp32 accumulation.
"""
