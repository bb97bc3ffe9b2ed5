# Known-bad (elementwise K1): the factory returns a tensor (a cached answer), not a kernel.
import torch

_cache = {}


def add_kernel(N, dtype):
    return _cache.setdefault((N, dtype), torch.zeros(N))


ANSWER["k1_add"] = add_kernel
