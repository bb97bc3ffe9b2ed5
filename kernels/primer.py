"""The TileLang primer's kernels: a copy, a vectorised scale, a row reduction.

One small family, built up the way the primer chapter teaches it (every factory
targets ``sm_90a``; the same semantics are written down first as a PyTorch
reference):

1. ``copy``      -- the launch: ``T.Kernel(grid, threads=...)`` and one element per
   thread through ``T.Parallel(threads)``; the CUDA it becomes is
   ``Y[blockIdx.x * threads + threadIdx.x] = X[...]``.
2. ``scale``     -- ``y = x * s`` with ``npt`` contiguous elements per thread
   (``T.Parallel(threads, npt)``): 16 bytes per thread and operand become one
   ``uint4`` access.
3. ``row_sum``   -- ``y[i] = sum_j x[i, j]`` in fp32: column tiles go global ->
   shared (``T.copy`` inside ``T.Pipelined``), shared -> registers (``T.copy`` to a
   fragment), ``T.reduce_sum`` per tile, an accumulator cleared by ``T.clear``.
   ``split > 1`` gives each row block ``split`` blocks along the columns and merges
   their partial sums with ``T.atomic_add`` (the output must start at zero).
4. ``gemm_tile`` -- one output tile of ``C = A @ B.T`` through ``T.gemm``; ``a_in``
   puts the A operand in shared memory or in a register fragment (``wgmma_ss`` vs
   ``wgmma_rs`` on sm_90a).  A teaching kernel: checked on the GPU, not timed.

``row_sum_ascend`` is the row reduction in mainline tilelang 0.1.15's Ascend
dialect: it is lowered on the CPU (up to the ``bisheng`` call) beside the CUDA one,
never run on an NPU.

The compiler-inspection helpers are here too, so that tests, the book and a lab
use one implementation:

* :func:`launch_info` lowers a kernel for sm_90a (no nvcc) and reads its launch
  configuration (grid, threads after warp specialisation, dynamic shared memory);
  :func:`check_launch` compares it with a machine profile of :mod:`ledger.machines`
  and raises ``ValueError`` naming the limit (tilelang 0.1.15 compiles an
  over-sized shared buffer without complaint; the GPU would refuse the launch).
* :func:`trace_lowering` runs tilelang's built-in lowering trace (the machinery
  behind ``TL_LOWER_TRACE``) for one compile with the kernel cache disabled and
  returns every pass with the IR before and after it.

The lab reuses ``copy``, ``scale`` and ``row_sum`` as reference solutions: their
launchers take the output tensor, validate everything first (:func:`check_inputs`)
and never allocate behind the caller's back except where the signature says so.
Their checks and timings on a GPU are the suite :mod:`measure.suites.primer`.
"""

# No `from __future__ import annotations`: @tilelang.jit evaluates the closure-bound
# shapes in the prim_func's parameter annotations.

import contextlib
import io
import re
import tempfile
from dataclasses import dataclass, field

import tilelang
import tilelang.language as T

from kernels.common import SMEM_PER_BLOCK, TARGET, validate_tensor

ACC = "float32"
INT32_MAX = 2**31 - 1
DTYPES = ("float16", "bfloat16", "float32")
VIAS = ("shared", "registers")


# ----------------------------------------------------------------- references
def ref_copy(x):
    """y = x (a new tensor)."""
    return x.clone()


def ref_scale(x, s: float):
    """y = x * s computed in fp32, rounded once to x's dtype."""
    return (x.float() * s).to(x.dtype)


def ref_row_sum(x):
    """y[i] = sum_j x[i, j], accumulated in fp32 (returned in fp32)."""
    return x.float().sum(dim=-1)


def ref_gemm(a, b):
    """C = A @ B.T in fp32 (B stored [N, K], like an nn.Linear weight)."""
    return a.float() @ b.float().T


# ------------------------------------------------------------ kernel factories
@tilelang.jit(target=TARGET)
def copy_kernel(N: int, dtype: str = "float16", threads: int = 256):
    """Step 1, the launch: ceil(N / threads) blocks of `threads` threads, one element each."""

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):
                Y[bx * threads + i] = X[bx * threads + i]

    return main


@tilelang.jit(target=TARGET)
def scale_kernel(N: int, dtype: str = "float16", threads: int = 256, npt: int = 8):
    """Step 2, vectorised: each thread owns `npt` contiguous elements; y = x * s in fp32."""
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), s: T.float32):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                Y[idx] = T.cast(T.cast(X[idx], ACC) * s, dtype)

    return main


@tilelang.jit(target=TARGET)
def row_sum_kernel(M: int, N: int, dtype: str = "float16", blk_m: int = 64, blk_n: int = 128,
                   threads: int = 128, stages: int = 2, split: int = 1, via: str = "shared"):
    """Step 3, a reduction: Y[i] = sum_j X[i, j] (fp32) over column tiles of `blk_n`.

    ``via="shared"`` stages each tile global -> shared -> registers inside ``T.Pipelined``
    (TMA and warp specialisation on sm_90a); ``via="registers"`` copies global -> registers
    directly (vector loads; nothing for the pipeline to overlap).  ``split > 1`` spreads a
    row block's column tiles over ``split`` blocks (``blockIdx.y``) whose partial sums meet
    in ``Y`` through ``T.atomic_add``: ``Y`` must hold zeros before the launch.
    """
    tiles = (N + blk_n - 1) // blk_n
    per_split = (tiles + split - 1) // split

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), ACC)):
        with T.Kernel(T.ceildiv(M, blk_m), split, threads=threads) as (bx, by):
            xf = T.alloc_fragment((blk_m, blk_n), ACC)
            part = T.alloc_fragment((blk_m,), ACC)
            acc = T.alloc_fragment((blk_m,), ACC)
            T.clear(acc)
            if via == "shared":
                xs = T.alloc_shared((blk_m, blk_n), dtype)
                for k in T.Pipelined(per_split, num_stages=stages):
                    T.copy(X[bx * blk_m, (by * per_split + k) * blk_n], xs)
                    T.copy(xs, xf)
                    T.reduce_sum(xf, part, dim=1)
                    for i in T.Parallel(blk_m):
                        acc[i] += part[i]
            else:
                for k in T.Pipelined(per_split, num_stages=stages):
                    T.copy(X[bx * blk_m, (by * per_split + k) * blk_n], xf)
                    T.reduce_sum(xf, part, dim=1)
                    for i in T.Parallel(blk_m):
                        acc[i] += part[i]
            if split == 1:
                T.copy(acc, Y[bx * blk_m])
            else:
                T.atomic_add(Y[bx * blk_m:(bx + 1) * blk_m], acc)

    return main


@tilelang.jit(target=TARGET)
def gemm_tile_kernel(M: int, N: int, K: int, blk_m: int = 128, blk_n: int = 128, blk_k: int = 64,
                     threads: int = 128, stages: int = 2, a_in: str = "shared", b_in: str = "shared",
                     c_in: str = "fragment"):
    """One C tile per block: C = A @ B.T, fp16 in, fp32 accumulate and out.

    ``a_in`` / ``b_in`` put an operand of ``T.gemm`` in shared memory or in a register
    fragment (copied there from shared memory each step); on sm_90a the A-in-registers
    form is still a ``wgmma`` while B in registers falls back to ``mma.sync``.
    ``c_in="shared"`` is the beginner's mistake of an accumulator in shared memory (the
    sm_90a lowering of ``T.gemm`` refuses it).
    """

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), ACC)):
        with T.Kernel(T.ceildiv(N, blk_n), T.ceildiv(M, blk_m), threads=threads) as (bx, by):
            a_s = T.alloc_shared((blk_m, blk_k), "float16")
            b_s = T.alloc_shared((blk_n, blk_k), "float16")
            a_op = a_s if a_in == "shared" else T.alloc_fragment((blk_m, blk_k), "float16")
            b_op = b_s if b_in == "shared" else T.alloc_fragment((blk_n, blk_k), "float16")
            c = T.alloc_fragment((blk_m, blk_n), ACC) if c_in == "fragment" else T.alloc_shared((blk_m, blk_n), ACC)
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, blk_k), num_stages=stages):
                T.copy(A[by * blk_m, k * blk_k], a_s)
                T.copy(B[bx * blk_n, k * blk_k], b_s)
                if a_in != "shared":
                    T.copy(a_s, a_op)
                if b_in != "shared":
                    T.copy(b_s, b_op)
                T.gemm(a_op, b_op, c, transpose_B=True)
            T.copy(c, C[by * blk_m, bx * blk_n])

    return main


#: the pass config that turns off the producer/consumer split (``T.Pipelined`` then issues
#: ``cp.async`` copies from every thread instead of TMA loads from a producer warpgroup)
NO_WARP_SPECIALIZATION = {"tl.disable_warp_specialized": True}


@tilelang.jit(target=TARGET, pass_configs=NO_WARP_SPECIALIZATION)
def gemm_tile_kernel_no_ws(M: int, N: int, K: int, a_in: str = "shared", b_in: str = "shared"):
    """:func:`gemm_tile_kernel` (default tiles) compiled without warp specialisation: the GPU
    check that separates the operand placement from the warp-specialised pipeline around it."""
    return gemm_tile_kernel.get_tir(M, N, K, a_in=a_in, b_in=b_in)


# ------------------------------------------------- two kernels for the debugging lesson
@tilelang.jit(target=TARGET)
def mirror_kernel(M: int, N: int, blk_m: int = 64, threads: int = 128, staged: bool = True):
    """Y[i, j] = X[i, j] - X[i, N - 1 - j] (fp32), a row minus its mirror image.

    ``staged=False`` reads the partner element from the register fragment: the element
    lives in another thread's registers, and layout inference rejects the loop (the
    primer's example of a layout that cannot be inferred).  ``staged=True`` keeps the
    tile in shared memory, which every thread of the block can read.
    """

    @T.prim_func
    def main(X: T.Tensor((M, N), ACC), Y: T.Tensor((M, N), ACC)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            y = T.alloc_fragment((blk_m, N), ACC)
            if staged:
                xs = T.alloc_shared((blk_m, N), ACC)
                T.copy(X[bx * blk_m, 0], xs)
                for i, j in T.Parallel(blk_m, N):
                    y[i, j] = xs[i, j] - xs[i, N - 1 - j]
            else:
                x = T.alloc_fragment((blk_m, N), ACC)
                T.copy(X[bx * blk_m, 0], x)
                for i, j in T.Parallel(blk_m, N):
                    y[i, j] = x[i, j] - x[i, N - 1 - j]
            T.copy(y, Y[bx * blk_m, 0])

    return main


@tilelang.jit(target=TARGET)
def reduce_into_kernel(M: int, N: int, out_len: int, threads: int = 128):
    """T.reduce_sum of an (M, N) fragment along dim 1 into a fragment of ``out_len``
    values: ``out_len == M`` is right, anything else is the primer's shape mismatch."""

    @T.prim_func
    def main(X: T.Tensor((M, N), ACC), Y: T.Tensor((out_len,), ACC)):
        with T.Kernel(1, threads=threads) as _bx:
            x = T.alloc_fragment((M, N), ACC)
            y = T.alloc_fragment((out_len,), ACC)
            T.copy(X, x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y)

    return main


def ref_mirror(x):
    """y[i, j] = x[i, j] - x[i, N - 1 - j] in fp32."""
    xf = x.float()
    return xf - xf.flip(-1)


# ----------------------------------------------------------- the Ascend row sum
def row_sum_ascend(M: int = 4096, N: int = 4096, blk_m: int = 16, blk_n: int = 1024, num_blocks: int = 64,
                   threads: int = 1024, stages: int = 2):
    """The row reduction in mainline tilelang's Ascend dialect (target "ascend"): each AI core
    walks row tiles; column tiles are pipelined into UB (``T.alloc_shared``), summed by SIMT
    threads (``T.SimtVF``).  Lowered on the CPU only; the reference is :func:`ref_row_sum`."""
    import tilelang.ascend.language as TA

    if M <= 0 or M % (blk_m * num_blocks):
        raise ValueError(f"M={M} must be a positive multiple of blk_m*num_blocks={blk_m * num_blocks}")
    if N <= 0 or N % blk_n:
        raise ValueError(f"N={N} must be a positive multiple of blk_n={blk_n} (no partial UB tiles)")
    steps = M // (blk_m * num_blocks)

    @TA.prim_func
    def main(X: TA.Tensor((M, N), TA.bfloat16), Y: TA.Tensor((M,), TA.float32)):
        with TA.Kernel(num_blocks) as bx:
            x_ub = TA.alloc_shared((blk_m, blk_n), TA.bfloat16)
            acc_ub = TA.alloc_shared((blk_m,), TA.float32)
            for s in TA.serial(steps):
                r0 = (s * num_blocks + bx) * blk_m
                with TA.SimtVF(threads=threads):
                    for i in TA.Parallel(blk_m):
                        acc_ub[i] = 0.0
                for k in TA.Pipelined(N // blk_n, num_stages=stages):
                    TA.copy(X[r0:r0 + blk_m, k * blk_n:(k + 1) * blk_n], x_ub)
                    with TA.SimtVF(threads=threads):
                        xf = TA.alloc_fragment((blk_m, blk_n), TA.float32)
                        part = TA.alloc_fragment((blk_m,), TA.float32)
                        for i, j in TA.Parallel(blk_m, blk_n):
                            xf[i, j] = TA.cast(x_ub[i, j], TA.float32)
                        TA.reduce_sum(xf, part, dim=1)
                        for i in TA.Parallel(blk_m):
                            acc_ub[i] = acc_ub[i] + part[i]
                TA.copy(acc_ub, Y[r0:r0 + blk_m])

    return main


# ------------------------------------------------------------ input checks
def _dtype_str(t) -> str:
    return str(t.dtype).replace("torch.", "")


def _allowed():
    import torch

    return (torch.float16, torch.bfloat16, torch.float32)


def check_copy(x, out=None, *, threads: int = 256, npt: int = 1) -> None:
    """ValueError naming the constraint (dtype, rank, shape, contiguity, size, device), before any launch."""
    validate_tensor("x", x, dtype=_allowed(), ndim=1, device=None)
    if out is not None:
        validate_tensor("out", out, dtype=x.dtype, shape=tuple(x.shape), device=None)
    if x.numel() == 0:
        raise ValueError("x: must have at least one element")
    if threads % 32 or not 32 <= threads <= 1024:
        raise ValueError(f"threads must be a multiple of 32 in [32, 1024], got {threads}")
    if npt < 1:
        raise ValueError(f"npt must be >= 1, got {npt}")
    if x.numel() + threads * npt > INT32_MAX:
        raise ValueError(f"x: at most 2**31 - 1 - threads*npt elements (int32 indexing), got {x.numel()}")
    validate_tensor("x", x)
    if out is not None:
        validate_tensor("out", out)


def check_row_sum(x, out=None, *, blk_m: int = 64, blk_n: int = 128, threads: int = 128, stages: int = 2,
                  split: int = 1, via: str = "shared") -> None:
    """ValueError naming the constraint, before any launch (the shared-memory budget included)."""
    import torch

    if via not in VIAS:
        raise ValueError(f"via must be one of {VIAS}, got {via!r}")

    validate_tensor("x", x, dtype=_allowed(), ndim=2, device=None)
    M, N = x.shape
    if M == 0 or N == 0:
        raise ValueError(f"x: needs at least one row and one column, got shape {tuple(x.shape)}")
    if out is not None:
        validate_tensor("out", out, dtype=torch.float32, shape=(M,), device=None)
    if threads % 128 or not 128 <= threads <= 1024:
        raise ValueError(f"threads must be a multiple of 128 (whole warpgroups) in [128, 1024], got {threads}")
    if blk_m < 8 or blk_m & (blk_m - 1):
        raise ValueError(f"blk_m must be a power of two >= 8, got {blk_m}")
    if (blk_n * x.element_size()) % 16:
        raise ValueError(f"blk_n * itemsize must be a multiple of 16 bytes (one vector), got {blk_n} x {x.element_size()}")
    if (N * x.element_size()) % 16:
        raise ValueError(f"x: a row must be a multiple of 16 bytes (TMA row stride), got N={N} x {x.element_size()} B")
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages}")
    tiles = (N + blk_n - 1) // blk_n
    if split < 1 or split > tiles:
        raise ValueError(f"split must be in [1, {tiles}] (the number of column tiles), got {split}")
    if x.numel() >= 2**31:
        raise ValueError(f"x: at most 2**31 - 1 elements (int32 indexing), got {x.numel()}")
    need = stages * blk_m * blk_n * x.element_size() if via == "shared" else 0
    limit = SMEM_PER_BLOCK
    if need > limit:
        raise ValueError(f"shared memory: {stages} stages x {blk_m}x{blk_n} x {x.element_size()} B = {need} B "
                         f"> {limit} B per block on the H200")
    validate_tensor("x", x)
    if out is not None:
        validate_tensor("out", out)


# ---------------------------------------------------------------- launchers
def copy(x, out=None, *, threads: int = 256):
    """y = x with the step-1 kernel (one element per thread)."""
    import torch

    check_copy(x, out, threads=threads)
    out = torch.empty_like(x) if out is None else out
    copy_kernel(x.numel(), _dtype_str(x), threads)(x, out)
    return out


def scale(x, s: float, out=None, *, threads: int = 256, npt: int = 8):
    """y = x * s with the step-2 kernel (`npt` contiguous elements per thread)."""
    import torch

    check_copy(x, out, threads=threads, npt=npt)
    out = torch.empty_like(x) if out is None else out
    scale_kernel(x.numel(), _dtype_str(x), threads, npt)(x, out, float(s))
    return out


def row_sum(x, out=None, *, blk_m: int = 64, blk_n: int = 128, threads: int = 128, stages: int = 2,
            split: int = 1, via: str = "shared"):
    """y[i] = sum_j x[i, j] in fp32 with the step-3 kernel; `split > 1` zeroes `out` first (atomics add into it)."""
    import torch

    check_row_sum(x, out, blk_m=blk_m, blk_n=blk_n, threads=threads, stages=stages, split=split, via=via)
    M, N = x.shape
    if out is None:
        out = torch.zeros(M, dtype=torch.float32, device=x.device) if split > 1 else \
            torch.empty(M, dtype=torch.float32, device=x.device)
    elif split > 1:
        out.zero_()
    row_sum_kernel(M, N, _dtype_str(x), blk_m, blk_n, threads, stages, split, via)(x, out)
    return out


def gemm_tile(a, b, out=None, *, a_in: str = "shared", b_in: str = "shared", warp_specialized: bool = True):
    """C = A @ B.T (fp16 in, fp32 out) with the T.gemm teaching kernel (``warp_specialized=False``:
    :func:`gemm_tile_kernel_no_ws`)."""
    import torch

    for name, v in (("a_in", a_in), ("b_in", b_in)):
        if v not in ("shared", "fragment"):
            raise ValueError(f"{name} must be 'shared' or 'fragment', got {v!r}")
    validate_tensor("a", a, dtype=(torch.float16,), ndim=2, device=None)
    M, K = a.shape
    validate_tensor("b", b, dtype=(torch.float16,), ndim=2, shape=(None, K), device=None)
    N = b.shape[0]
    if out is not None:
        validate_tensor("out", out, dtype=(torch.float32,), shape=(M, N), device=None)
    if K % 8:
        raise ValueError(f"K={K} must be a multiple of 8 (16-byte rows for TMA)")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t is not None:
            validate_tensor(name, t)
    out = torch.empty(M, N, dtype=torch.float32, device=a.device) if out is None else out
    factory = gemm_tile_kernel if warp_specialized else gemm_tile_kernel_no_ws
    factory(M, N, K, a_in=a_in, b_in=b_in)(a, b, out)
    return out


# ------------------------------------------------------- compiler inspection
def _factory_tir(factory, args, kwargs):
    return factory.get_tir(*args, **(kwargs or {})) if hasattr(factory, "get_tir") else factory


@dataclass
class Lowered:
    """One lowering for a CUDA target, without nvcc: the CUDA source and the launch."""

    source: str
    grid: tuple
    threads: tuple
    dyn_smem_bytes: int
    target: dict = field(default_factory=dict)
    #: TMA descriptors the host code creates, by tensor: ``{"A": {"box": (64, 128), "swizzle": 0}}``
    #: (``swizzle`` as ``CUtensorMapSwizzle``: 0 none, 1 32B, 2 64B, 3 128B)
    tma: dict = field(default_factory=dict)


#: ``T.call_packed("__tvm_tensormap_create_tiled", A_desc, dtype, rank, A, dims.., strides.., box..,
#: element strides.., interleave, swizzle, l2 promotion, oob fill)`` in the host module's script
_TMA_CALL = re.compile(r'T\.call_packed\("__tvm_tensormap_create_tiled", (\w+)_desc, (\d+), (\d+), \w+, ([\d, ]+)\)')


def _tma_descriptors(host_script: str) -> dict:
    out = {}
    for name, _dtype, rank, args in _TMA_CALL.findall(host_script):
        rank, nums = int(rank), [int(x) for x in args.split(",")]
        box = tuple(nums[2 * rank:3 * rank])
        interleave, swizzle = nums[4 * rank], nums[4 * rank + 1]
        out[name] = {"box": box, "interleave": interleave, "swizzle": swizzle}
    return out


def lower(factory, *args, target: dict | None = None, pass_configs: dict | None = None, **kwargs) -> Lowered:
    """Lower ``factory(*args, **kwargs)`` with ``tilelang.lower`` (codegen, no device compile).

    ``factory`` is a ``@tilelang.jit`` factory (its ``get_tir`` gives the prim_func) or a
    prim_func.  Returns the CUDA source -- the same text ``get_kernel_source()`` shows
    after a full compile -- and the launch configuration of the kernel: the grid, the
    threads per block *after* the compiler's passes (warp specialisation adds a producer
    warpgroup) and the dynamic shared memory.
    """
    from tilelang import tvm

    func = _factory_tir(factory, args, kwargs)
    tdict = dict(target or TARGET)
    tgt = tvm.target.Target(tdict)
    with tgt, tvm.transform.PassContext(opt_level=3, config=dict(pass_configs or {})):
        art = tilelang.lower(func, target=tgt)
    grid, threads, smem = (1, 1, 1), (1, 1, 1), 0
    for _gv, f in art.device_mod.functions.items():
        ext = dict(f.attrs.get("thread_extent", {}) or {})
        grid = tuple(int(ext.get(f"blockIdx.{a}", 1)) for a in "xyz")
        threads = tuple(int(ext.get(f"threadIdx.{a}", 1)) for a in "xyz")
        smem = int(f.attrs.get("dyn_shared_memory_buf", 0) or 0)
    return Lowered(art.kernel_source, grid, threads, smem, tdict, _tma_descriptors(art.host_mod.script()))


def check_launch(low: Lowered, machine: str = "h200-spec") -> None:
    """ValueError when a lowered kernel exceeds a per-block limit of ``machine``."""
    from ledger.machines import get_machine

    m = get_machine(machine)
    smem = int(m.resource("smem_per_block_kb")) * 1024
    if low.dyn_smem_bytes > smem:
        raise ValueError(f"shared memory: the kernel needs {low.dyn_smem_bytes} B of dynamic shared memory "
                         f"per block, {machine} allows {smem} B ({smem // 1024} KiB)")
    n = low.threads[0] * low.threads[1] * low.threads[2]
    if n > m.resource("max_threads_per_block"):
        raise ValueError(f"threads: {n} per block > {int(m.resource('max_threads_per_block'))} on {machine}")


@dataclass
class PassRecord:
    """One step of a lowering trace: a pass (or the codegen) with the IR before and after."""

    phase: str
    index: int
    name: str
    changed: bool
    before: str
    after: str
    added: int = 0
    deleted: int = 0


@dataclass
class Trace:
    """What tilelang's lowering trace recorded for one compile."""

    target: str
    records: list
    source: str = ""

    def names(self, changed_only: bool = False) -> list:
        return [r.name for r in self.records if r.changed or not changed_only]

    def find(self, name: str) -> PassRecord:
        """The first record of pass ``name`` (KeyError naming the passes seen)."""
        for r in self.records:
            if r.name == name:
                return r
        raise KeyError(f"pass {name!r} not in the trace; passes: {self.names()}")


@contextlib.contextmanager
def _tracing():
    """tilelang's lowering trace on (HTML mode into a temporary directory, its terminal chatter
    captured), the kernel cache off; both restored afterwards.  ``TL_LOWER_TRACE=1`` at import
    time calls the same ``enable()``; a cache hit would skip lowering and record nothing."""
    from tilelang.env import env
    from tilelang.tools import lower_trace as LT
    from tilelang.tools.lower_trace.core import get_last_session

    cache_was_on = env.is_cache_enabled()
    chatter = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="tl_lower_trace_") as tmp:
        with contextlib.redirect_stdout(chatter):
            LT.enable(mode="html", trace_dir=tmp)
        tilelang.disable_cache()
        try:
            yield lambda: get_last_session(), chatter
        finally:
            with contextlib.redirect_stdout(chatter):
                LT.disable()
            if cache_was_on:
                tilelang.enable_cache()


def _records(session) -> list:
    out = []
    for r in (session.records if session is not None else []):
        out.append(PassRecord(r.phase, r.index, r.name, bool(r.changed), r.before_text, r.after_text,
                              r.add_lines, r.del_lines))
    return out


def trace_lowering(factory, *args, target: dict | None = None, pass_configs: dict | None = None,
                   **kwargs) -> Trace:
    """Lower a CUDA kernel under tilelang's lowering trace; every pass with its IR before/after."""
    from tilelang import tvm

    func = _factory_tir(factory, args, kwargs)
    tdict = dict(target or TARGET)
    tgt = tvm.target.Target(tdict)
    with _tracing() as (session, chatter):
        with contextlib.redirect_stdout(chatter), tgt, \
                tvm.transform.PassContext(opt_level=3, config=dict(pass_configs or {})):
            art = tilelang.lower(func, target=tgt)
        recs = _records(session())
    return Trace(str(tdict.get("arch", tdict.get("kind"))), recs, art.kernel_source)


def layouts(factory, *args, target: dict | None = None, **kwargs) -> dict:
    """The fragment layouts layout inference chose, as tilelang prints them
    (pass config ``tl.layout_visualization_enable``): ``{buffer: [lines]}``."""
    from tilelang import tvm

    func = _factory_tir(factory, args, kwargs)
    tgt = tvm.target.Target(dict(target or TARGET))
    text = io.StringIO()
    with contextlib.redirect_stdout(text), tgt, \
            tvm.transform.PassContext(opt_level=3, config={"tl.layout_visualization_enable": True}):
        tilelang.lower(func, target=tgt)
    out: dict = {}
    cur = None
    for line in text.getvalue().splitlines():
        if line.endswith(" inferred layout:"):
            cur = line.split()[0]
            out[cur] = []
        elif cur is not None and line.startswith("  "):
            out[cur].append(line.strip())
        else:
            cur = None
    return out
