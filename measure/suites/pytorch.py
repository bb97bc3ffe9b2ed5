"""Suite ``pytorch`` (chapter 1): eager vs fused, and the kernels torch.compile generates.

Three experiments, recorded under names that start with ``pytorch.`` so the chapter page
can find them:

* ``pytorch.sincos.*`` -- ``y = sin(cos(x))`` on 4096 x 4096 fp16: eager (two kernels),
  ``torch.compile`` (one Inductor kernel) and the fused TileLang kernel of :mod:`kernels.pytorch`.
* ``pytorch.layernorm.*`` -- LayerNorm on 8192 x 4096 fp16: the three-pass version written
  as separate torch ops (mean, variance, normalise), ``F.layer_norm``, and the fused
  TileLang LayerNorm of :mod:`kernels.norm`.
* ``pytorch.inductor.*`` -- the names and counts of the GPU kernels of one small training
  step (forward + backward), eager and under ``torch.compile`` with
  ``TORCHINDUCTOR_UNIQUE_KERNEL_NAMES=1``, read from the profiler of a real run and
  from the code Inductor generated (:mod:`measure.inductor`).

Every bench record carries ``ledger_bytes`` (the bytes that variant moves by the
chapter's accounting) and ``lower_bound_ms`` (the ledger's floor on the default machine
profile); ``bytes`` (the basis of the effective GB/s) is the fused variant's minimum for
every row, so a slower row shows a lower effective bandwidth.  Bytes and FLOPs come from
:mod:`ledger.ops`, never retyped.
"""
from __future__ import annotations

import os

from ledger import ops
from ledger.machines import DEFAULT_MACHINE, get_machine

from kernels import norm
from kernels.pytorch import LAYERNORM_SHAPE, SINCOS_SHAPE, eager_sincos, layernorm_three_pass, sincos, sincos_fused
from measure.cost import source_of
from measure.inductor import generated_kernel_names, name_kernels, profile_kernels


def _lower_bound_ms(cost) -> float:
    return cost.lower_bound(get_machine(DEFAULT_MACHINE)) * 1e3


def _sincos_suite(h) -> None:
    import torch

    rows, cols = (1024, 4096) if h.quick else SINCOS_SHAPE
    n = rows * cols
    eager_c = ops.elementwise_chain(n, 2, "fp16", fused=False)
    fused_c = ops.elementwise_chain(n, 2, "fp16", fused=True)
    x = h.rand(n, torch.float16, scale=2.0)
    want = x.double().cos().sin()

    y = h.poisoned(n, torch.float16)
    try:
        sincos(x, y)
        tl_ok = h.check("pytorch.sincos.tilelang", y, want)["ok"]
    except Exception as exc:  # a kernel that fails must not lose the other rows
        h.error("pytorch.sincos.tilelang", exc)
        tl_ok = False

    comp = h.warm_compiled(h.torch_compile(eager_sincos, "sincos"), x, name="sincos")
    common = dict(bytes=fused_c.bytes, flops=fused_c.flops, ledger_source=source_of(ops.elementwise_chain),
                  shape=[rows, cols], dtype="float16")
    h.bench("pytorch.sincos.eager", lambda: eager_sincos(x), variant="eager: torch.sin(torch.cos(x))",
            ledger_bytes=eager_c.bytes, lower_bound_ms=_lower_bound_ms(eager_c), kernels=2, **common)
    if comp is not None:
        h.bench("pytorch.sincos.compile", comp, variant="torch.compile (Inductor)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), kernels=1, **common)
    else:
        h.skip("pytorch.sincos.compile", "torch.compile failed (see the error record)")
    if tl_ok:
        k = sincos_fused(n, "float16")  # time the launch itself, not the Python input checks
        h.bench("pytorch.sincos.tilelang", lambda: k(x, y), variant="TileLang fused (kernels.pytorch)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), kernels=1, **common)
    else:
        h.skip("pytorch.sincos.tilelang", "TileLang kernel failed its check; not timed")


def _layernorm_suite(h) -> None:
    import torch
    import torch.nn.functional as F

    M, N = (2048, 4096) if h.quick else LAYERNORM_SHAPE
    fused_c = ops.layernorm(M, N, "fp16", passes=1)
    three_c = ops.layernorm(M, N, "fp16", passes=3)
    x = h.rand((M, N), torch.float16, scale=2.0, offset=1.0)
    w = h.rand(N, torch.float16)
    b = h.rand(N, torch.float16)
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    want = (xd - mu) * ((xd - mu).pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w.double() + b.double()

    h.check("pytorch.layernorm.three_pass", layernorm_three_pass(x, w, b), want, atol=2e-2, rtol=2e-2,
            note="fp16 intermediates")
    h.check("pytorch.layernorm.F.layer_norm", F.layer_norm(x, (N,), w, b, 1e-5), want)
    common = dict(bytes=fused_c.bytes, flops=fused_c.flops, ledger_source=source_of(ops.layernorm),
                  shape=[M, N], dtype="float16")
    h.bench("pytorch.layernorm.three_pass", lambda: layernorm_three_pass(x, w, b),
            variant="eager, three passes (mean, var, normalise as torch ops)",
            ledger_bytes=three_c.bytes, lower_bound_ms=_lower_bound_ms(three_c), **common)
    h.bench("pytorch.layernorm.F.layer_norm", lambda: F.layer_norm(x, (N,), w, b, 1e-5),
            variant="F.layer_norm (one PyTorch kernel)",
            ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)
    comp = h.warm_compiled(h.torch_compile(layernorm_three_pass, "layernorm"), x, w, b, name="layernorm")
    if comp is not None:
        h.bench("pytorch.layernorm.compile", comp, variant="torch.compile of the three-pass code",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)
    y = h.poisoned((M, N), torch.float16)
    try:
        norm.layernorm(x, w, b, 1e-5, y)
        ok = h.check("pytorch.layernorm.tilelang", y, want)["ok"]
    except Exception as exc:
        h.error("pytorch.layernorm.tilelang", exc)
        return
    if ok:
        import inspect

        kw = inspect.signature(norm.layernorm).parameters  # the launcher's own defaults
        k = norm.layernorm_rows(M, N, "float16", kw["blk_m"].default, kw["threads"].default, 1e-5)
        h.bench("pytorch.layernorm.tilelang", lambda: k(x, w, b, y),
                variant="TileLang fused LayerNorm (kernels.norm.layernorm_rows)",
                ledger_bytes=fused_c.bytes, lower_bound_ms=_lower_bound_ms(fused_c), **common)


def _inductor_suite(h) -> None:
    import torch
    import torch.nn as nn

    os.environ["TORCHINDUCTOR_UNIQUE_KERNEL_NAMES"] = "1"
    import torch._inductor.config as icfg

    name_kernels(icfg)
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

    eager = profile_kernels(lambda: step(model), h.is_cuda)
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
    compiled = profile_kernels(lambda: step(cmodel), h.is_cuda)
    generated = generated_kernel_names(sources)

    # sin(cos(x)) alone: the kernel name the chapter explains
    torch._dynamo.reset()
    xs = h.rand(1 << 20, torch.float16)
    s_src: list[str] = []
    if run_and_get_code is not None:
        _, s_src = run_and_get_code(torch.compile(eager_sincos), xs)
    sincos_names = sorted(generated_kernel_names(s_src))

    h.note("pytorch.inductor.kernels",
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
    for name, part in (("pytorch.sincos", _sincos_suite), ("pytorch.layernorm", _layernorm_suite),
                       ("pytorch.inductor", _inductor_suite)):
        try:
            part(h)
        except Exception as exc:  # one failing experiment must not lose the others
            h.error(name, exc)
