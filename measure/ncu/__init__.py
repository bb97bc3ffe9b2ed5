"""Nsight Compute profiles, one command each on the GPU machine (see :mod:`measure.ncu.driver`):

* ``python -m measure.ncu.case`` -- the DRAM bytes designs A, B and C of the case study move;
* ``python -m measure.ncu.rows`` -- why the row kernels stop short of the copy bandwidth;
* ``python -m measure.ncu.gemm`` -- what the B multicast of the hand-written GEMM saves.
"""
