"""Helpers shared by the suites (not a suite itself)."""
from __future__ import annotations

from typing import Any

from kernels.common import SMS


def sm_count(h: Any) -> int:
    """SMs of the harness device; on a CPU harness (tests, dry runs) the profile's count
    (:data:`kernels.common.SMS`)."""
    if h.is_cuda:
        return h.torch.cuda.get_device_properties(h.device).multi_processor_count
    return SMS
