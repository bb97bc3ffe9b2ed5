"""What torch.compile generates: the kernel names Inductor writes and the kernels one call
launches (chapter 1's evidence that compiling fuses)."""
from __future__ import annotations

import os
import re
from collections import Counter

__all__ = ["profile_kernels", "generated_kernel_names", "name_kernels", "inductor_kernel_names"]


def profile_kernels(fn, device_is_cuda: bool) -> Counter:
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


def generated_kernel_names(sources) -> Counter:
    names: Counter = Counter()
    for src in sources:
        for name in set(_KERNEL_DEF.findall(src)):
            names[name] += 1
    return names


def name_kernels(icfg) -> None:
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
    name_kernels(icfg)
    torch._dynamo.reset()
    _, sources = run_and_get_code(torch.compile(fn), *args)
    return sorted(generated_kernel_names(sources))
