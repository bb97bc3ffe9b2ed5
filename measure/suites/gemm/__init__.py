"""The GEMM suites (:mod:`kernels.gemm`): ``ladder`` (rungs 1-5 and the tuned rung 4), ``lowp``
(fp8 and W4A16), ``splitk``, ``streamk``, ``grouped``, ``batched`` and ``support`` (the
sm_90a audit).  Convention everywhere: ``C[M, N] = A[M, K] @ B[N, K]^T``, fp32 accumulation."""
