"""Chapter 02's measurements: eager vs fused, and the kernels torch.compile generates.

Three experiments, each recorded by the shared harness (:mod:`kernels.harness`) under
names that start with ``ch02.`` so the chapter page can find them:

* ``ch02.sincos.*`` -- ``y = sin(cos(x))`` on 4096 x 4096 fp16: eager (two kernels),
  ``torch.compile`` (one Inductor kernel) and a fused TileLang kernel (this file).
* ``ch02.layernorm.*`` -- LayerNorm on 8192 x 4096 fp16: the three-pass version written
  as separate torch ops (mean, variance, normalise), ``F.layer_norm``, and the fused
  TileLang LayerNorm of :mod:`kernels.norm` (skipped when that module is absent).
* ``ch02.inductor.*`` -- the names and counts of the GPU kernels of one small training
  step (forward + backward), eager and under ``torch.compile`` with
  ``TORCHINDUCTOR_UNIQUE_KERNEL_NAMES=1``, read from the profiler of a real run and
  from the code Inductor generated.

Every bench record carries ``ledger_bytes`` (the bytes that variant moves by the
chapter's accounting) and ``lower_bound_ms`` (the ledger's floor on the calibrated
H200 profile); ``bytes`` (the basis of the effective GB/s) is the fused variant's
minimum for every row, so a slower row shows a lower effective bandwidth.  Bytes and
FLOPs come from :mod:`ledger.ops`, never retyped.
"""
# No `from __future__ import annotations`: T.prim_func evaluates its parameter annotations,
# and on Python 3.10 typing rejects a string annotation that evaluates to a buffer.
import os
import re
from collections import Counter

import tilelang
import tilelang.language as T

TARGET = {"kind": "cuda", "arch": "sm_90a"}
SINCOS_SHAPE = (4096, 4096)
LAYERNORM_SHAPE = (8192, 4096)


# ----------------------------------------------------------------- references
def ref_sincos(x):
    """y = sin(cos(x)) in fp32, rounded once to x's dtype."""
    return x.float().cos().sin().to(x.dtype)


def eager_sincos(x):
    """The eager chain: two ATen ops, two kernels, the intermediate in memory."""
    import torch

    return torch.sin(torch.cos(x))


def layernorm_three_pass(x, weight, bias, eps: float = 1e-5):
    """LayerNorm written as separate torch ops: a mean pass, a variance pass, a normalise pass."""
    import torch

    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


# ------------------------------------------------------------ kernel factory
@tilelang.jit(target=TARGET)
def sincos_fused(N: int, dtype: str = "float16", threads: int = 256, npt: int = 8):
    """One kernel for sin(cos(x)): read x once, compute in fp32 registers, write y once."""
    blk = threads * npt

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, blk), threads=threads) as bx:
            for i, j in T.Parallel(threads, npt):
                idx = bx * blk + i * npt + j
                Y[idx] = T.cast(T.sin(T.cos(T.cast(X[idx], "float32"))), dtype)

    return main


def check_inputs(x, out=None) -> None:
    """ValueError naming the constraint: 1-D contiguous fp16/bf16, length a multiple of 2048."""
    import torch

    from kernels.harness import validate_tensor

    validate_tensor("x", x, dtype=(torch.float16, torch.bfloat16), ndim=1, device=None)
    if x.numel() % 2048:
        raise ValueError(f"x: length must be a multiple of 2048 (threads x npt), got {x.numel()}")
    if x.numel() >= 2**31:
        raise ValueError(f"x: fewer than 2**31 elements (int32 indexing), got {x.numel()}")
    if out is not None:
        validate_tensor("out", out, dtype=x.dtype, shape=tuple(x.shape), device=None)


def sincos(x, out=None):
    """Launch the fused TileLang kernel on a 1-D tensor."""
    import torch

    check_inputs(x, out)
    out = torch.empty_like(x) if out is None else out
    sincos_fused(x.numel(), str(x.dtype).replace("torch.", ""))(x, out)
    return out


# --------------------------------------------------------------- GPU suite
def _lower_bound_ms(cost) -> float:
    from ledger.machines import get_machine

    return cost.lower_bound(get_machine("h200-calibrated")) * 1e3


def _sincos_suite(h) -> None:
    import torch

    from ledger import ops

    rows, cols = (1024, 4096) if h.quick else SINCOS_SHAPE
    n = rows * cols
    eager_c = ops.elementwise_chain(n, 2, "fp16", fused=False)
    fused_c = ops.elementwise_chain(n, 2, "fp16", fused=True)
    x = h.rand(n, torch.float16, scale=2.0)
    want = x.double().cos().sin()

    y = h.poisoned(n, torch.float16)
    try:
        sincos(x, y)
        tl_ok = h.check("ch02.sincos.tilelang", y, want)["ok"]
    except Exception as exc:  # a kernel that fails must not lose the other rows
        h.error("ch02.sincos.tilelang", exc)
        tl_ok = False

    comp = h.warm_compiled(h.torch_compile(eager_sincos, "sincos"), x, name="sincos")
    common = dict(bytes=fused_c.bytes, flops=fused_c.flops, ledger_source="ledger.ops.elementwise_chain",
                  shape=[rows, cols], dtype="float16")
    h.bench("ch02.sincos.eager", lambda: eager_sincos(x), variant="eager: torch.sin(torch.cos(x))",
            ledger_bytes=eager_c.bytes, lower_bound_ms=_lower_bound_ms(eager_c), kernels=2, **common)
    if comp is not None:
        h.bench("ch02.sincos.compile", comp, variant="torch.compile (Inductor)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), kernels=1, **common)
    else:
        h.skip("ch02.sincos.compile", "torch.compile failed (see the error record)")
    if tl_ok:
        k = sincos_fused(n, "float16")  # time the launch itself, not the Python input checks
        h.bench("ch02.sincos.tilelang", lambda: k(x, y), variant="TileLang fused (kernels.ch02_measure)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), kernels=1, **common)
    else:
        h.skip("ch02.sincos.tilelang", "TileLang kernel failed its check; not timed")


def _layernorm_suite(h) -> None:
    import torch
    import torch.nn.functional as F

    from ledger import ops

    M, N = (2048, 4096) if h.quick else LAYERNORM_SHAPE
    fused_c = ops.layernorm(M, N, "fp16", passes=1)
    three_c = ops.layernorm(M, N, "fp16", passes=3)
    x = h.rand((M, N), torch.float16, scale=2.0, offset=1.0)
    w = h.rand(N, torch.float16)
    b = h.rand(N, torch.float16)
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    want = (xd - mu) * ((xd - mu).pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w.double() + b.double()

    h.check("ch02.layernorm.three_pass", layernorm_three_pass(x, w, b), want, atol=2e-2, rtol=2e-2,
            note="fp16 intermediates")
    h.check("ch02.layernorm.F.layer_norm", F.layer_norm(x, (N,), w, b, 1e-5), want)
    common = dict(bytes=fused_c.bytes, flops=fused_c.flops, ledger_source="ledger.ops.layernorm",
                  shape=[M, N], dtype="float16")
    h.bench("ch02.layernorm.three_pass", lambda: layernorm_three_pass(x, w, b),
            variant="eager, three passes (mean, var, normalise as torch ops)",
            ledger_bytes=three_c.bytes, lower_bound_ms=_lower_bound_ms(three_c), **common)
    h.bench("ch02.layernorm.F.layer_norm", lambda: F.layer_norm(x, (N,), w, b, 1e-5),
            variant="F.layer_norm (one PyTorch kernel)",
            ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)
    comp = h.warm_compiled(h.torch_compile(layernorm_three_pass, "layernorm"), x, w, b, name="layernorm")
    if comp is not None:
        h.bench("ch02.layernorm.compile", comp, variant="torch.compile of the three-pass code",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)
    try:
        from kernels import norm
    except Exception as exc:
        h.skip("ch02.layernorm.tilelang", f"kernels.norm not importable ({type(exc).__name__}: {exc})")
        return
    y = h.poisoned((M, N), torch.float16)
    try:
        norm.layernorm(x, w, b, 1e-5, y)
        ok = h.check("ch02.layernorm.tilelang", y, want)["ok"]
    except Exception as exc:
        h.error("ch02.layernorm.tilelang", exc)
        return
    if ok:
        import inspect

        kw = inspect.signature(norm.layernorm).parameters  # the launcher's own defaults
        k = norm.layernorm_rows(M, N, "float16", kw["blk_m"].default, kw["threads"].default, 1e-5)
        h.bench("ch02.layernorm.tilelang", lambda: k(x, w, b, y),
                variant="TileLang fused LayerNorm (kernels.norm.layernorm_rows)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)


def _profile_kernels(fn, device_is_cuda: bool) -> Counter:
    """Counter of the kernels one call of ``fn`` launches (profiler device events).

    On a CPU harness (tests) the CPU operator events are counted instead.
    """
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CUDA] if device_is_cuda else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        fn()
        if device_is_cuda:
            torch.cuda.synchronize()
    want = DeviceType.CUDA if device_is_cuda else DeviceType.CPU
    out: Counter = Counter()
    for evt in prof.events():
        if evt.device_type == want:
            out[evt.name] += 1
    return out


_KERNEL_DEF = re.compile(r"\b((?:triton|cpp)_(?:poi|red|per|tem|for|fused)\w*)\b")


def _generated_kernel_names(sources) -> Counter:
    names: Counter = Counter()
    for src in sources:
        for name in set(_KERNEL_DEF.findall(src)):
            names[name] += 1
    return names


def _name_kernels(icfg) -> None:
    """Unique, descriptive kernel names (the env var is read at import; set the config too)."""
    for holder in (getattr(icfg, "triton", None), icfg):
        if holder is not None and hasattr(holder, "unique_kernel_names"):
            holder.unique_kernel_names = True
    tri = getattr(icfg, "triton", None)
    if tri is not None and hasattr(tri, "descriptive_names"):
        tri.descriptive_names = "original_aten"


def inductor_kernel_names(fn, *args) -> list[str]:
    """Names of the kernels Inductor generates for ``torch.compile(fn)(*args)`` (a real compile).

    On a GPU they read ``triton_poi_fused_...``; on a CPU ``cpp_fused_...``.  The names
    are taken from the code Inductor wrote (``run_and_get_code``), with
    ``TORCHINDUCTOR_UNIQUE_KERNEL_NAMES`` switched on.
    """
    import torch
    import torch._inductor.config as icfg
    from torch._inductor.utils import run_and_get_code

    os.environ["TORCHINDUCTOR_UNIQUE_KERNEL_NAMES"] = "1"
    _name_kernels(icfg)
    torch._dynamo.reset()
    _, sources = run_and_get_code(torch.compile(fn), *args)
    return sorted(_generated_kernel_names(sources))


def _inductor_suite(h) -> None:
    import torch
    import torch.nn as nn

    os.environ["TORCHINDUCTOR_UNIQUE_KERNEL_NAMES"] = "1"
    import torch._inductor.config as icfg

    _name_kernels(icfg)
    torch._dynamo.reset()
    dev = h.device
    d, f = (256, 1024) if h.quick else (1024, 4096)

    class Block(nn.Module):
        """A pre-norm MLP block: LayerNorm -> Linear -> GELU -> Linear, plus the residual."""

        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.up = nn.Linear(d, f)
            self.down = nn.Linear(f, d)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    model = Block().to(dev, torch.float16)
    x = h.rand((8, 512, d), torch.float16)

    def step(m):
        for p in m.parameters():
            p.grad = None
        loss = m(x).float().pow(2).mean()
        loss.backward()
        return loss

    eager = _profile_kernels(lambda: step(model), h.is_cuda)
    cmodel = torch.compile(model)
    try:
        from torch._inductor.utils import run_and_get_code
    except Exception:  # pragma: no cover - moved in some versions
        run_and_get_code = None
    sources: list[str] = []
    if run_and_get_code is not None:
        _, sources = run_and_get_code(lambda: step(cmodel))
    else:
        step(cmodel)
    if h.is_cuda:
        torch.cuda.synchronize()
    compiled = _profile_kernels(lambda: step(cmodel), h.is_cuda)
    generated = _generated_kernel_names(sources)

    # sin(cos(x)) alone: the kernel name the chapter explains
    torch._dynamo.reset()
    xs = h.rand(1 << 20, torch.float16)
    s_src: list[str] = []
    if run_and_get_code is not None:
        _, s_src = run_and_get_code(torch.compile(eager_sincos), xs)
    sincos_names = sorted(_generated_kernel_names(s_src))

    h.note("ch02.inductor.kernels",
           f"one training step of a {d}->{f}->{d} MLP block, fp16, batch 8 x 512 tokens: "
           f"{sum(eager.values())} kernel launches eager, {sum(compiled.values())} compiled",
           model=f"LayerNorm({d}) -> Linear({d},{f}) -> GELU -> Linear({f},{d}) + residual; "
                 f"loss = mean(y^2); forward + backward",
           eager_kernels=dict(eager.most_common()),
           compiled_kernels=dict(compiled.most_common()),
           generated_kernels=sorted(generated),
           sincos_kernels=sincos_names,
           env={"TORCHINDUCTOR_UNIQUE_KERNEL_NAMES": os.environ.get("TORCHINDUCTOR_UNIQUE_KERNEL_NAMES"),
                "triton.unique_kernel_names": getattr(getattr(icfg, "triton", None), "unique_kernel_names", None),
                "triton.descriptive_names": getattr(getattr(icfg, "triton", None), "descriptive_names", None)},
           torch_version=torch.__version__)


def gpu_suite(h) -> None:
    """Chapter 02: eager vs fused sin(cos(x)), LayerNorm three ways, and Inductor's kernel names."""
    for name, part in (("ch02.sincos", _sincos_suite), ("ch02.layernorm", _layernorm_suite),
                       ("ch02.inductor", _inductor_suite)):
        try:
            part(h)
        except Exception as exc:  # one failing experiment must not lose the others
            h.error(name, exc)
