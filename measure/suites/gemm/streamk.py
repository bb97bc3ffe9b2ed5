"""Suite ``gemm.streamk``: stream-K on a grid whose last wave is nearly empty, against the
data-parallel rung 4 and cuBLAS, next to the wave-count prediction."""
from typing import Any

from ledger.gemm import grid_waves

from kernels.common import SMS
from kernels.gemm.ladder import gemm_ref, rung4_annotated
from kernels.gemm.streamk import DEFAULT, make_runner, schedule
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import gemm_cost, gemm_tolerance, record_bench, rel_fro_err

SHAPE = (1536, 1536, 8192)  # (M, N, K) of the suite: 144 tiles of 128x128, a nearly empty second wave


def predicted_speedup(M: int, N: int, block_M: int = 128, block_N: int = 128, sms: int = SMS) -> tuple[float, dict[str, Any]]:
    """Waves of the data-parallel grid over the ideal ``tiles / sms`` waves of stream-K (from the ledger)."""
    grid, waves, fill = grid_waves(M, N, block_M, block_N, sms=sms)
    return waves / (grid / sms), dict(tiles=grid, waves=waves, last_wave_fill=fill, ideal_waves=grid / sms)


def gpu_suite(h: Any) -> None:
    """Stream-K on a grid whose last wave is nearly empty on the H200's SMs, vs the data-parallel rung 4 and cuBLAS."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    # 12 x 12 = 144 tiles of 128x128: one full wave of 132 and a second wave of 12 (9 % full)
    M, N, K = (512, 512, 2048) if h.quick else SHAPE
    sms = sm_count(h)
    cfg = dict(DEFAULT)
    a = h.rand((M, K), torch.float16)
    b = h.rand((N, K), torch.float16)
    built = par_build({
        "streamk": lambda: make_runner(a, b, sms=sms, **cfg),
        "dp": lambda: rung4_annotated(M, N, K, **cfg, panel=10),
    })
    for k, v in built.items():
        if v["kernel"] is None:
            h.error(f"stream-K compile {k}", RuntimeError(v["error"]))
    if any(v["kernel"] is None for v in built.values()):
        return
    ref = gemm_ref(a, b)
    flops, nbytes, src = gemm_cost(M, N, K, "fp16")
    sched = schedule(M, N, K, cfg["block_M"], cfg["block_N"], cfg["block_K"], sms)
    fn = built["streamk"]["kernel"]
    c = h.poisoned((M, N), torch.float16)
    fn(c)
    err = rel_fro_err(c, ref)
    h.check(f"stream-K {M}x{N}x{K}", c, ref, rel_fro_err=err, schedule=sched.__dict__, **gemm_tolerance(K))
    dp = built["dp"]["kernel"]
    c_dp = h.poisoned((M, N), torch.float16)
    dp(a, b, c_dp)
    h.check(f"data-parallel rung4 {M}x{N}x{K}", c_dp, ref, rel_fro_err=rel_fro_err(c_dp, ref), **gemm_tolerance(K))
    pred, waves = predicted_speedup(M, N, cfg["block_M"], cfg["block_N"], sms)
    r = record_bench(h, f"stream-K {M}x{N}x{K}", lambda: fn(c), flops=flops, bytes=nbytes, ledger_source=src,
                     baselines={"cuBLAS": lambda: torch.matmul(a, b.t()), "data-parallel": lambda: dp(a, b, c_dp)},
                     predicted_speedup_vs_dp=pred, waves=waves, schedule=sched.__dict__, rel_fro_err=err, sms=sms)
    if "data-parallel" in r.get("speedup", {}):
        h.note("stream-K prediction", f"predicted {pred:.2f}x vs data-parallel, measured {r['speedup']['data-parallel']:.2f}x",
               predicted=pred, measured=r["speedup"]["data-parallel"])
