"""Suite ``case_study`` (chapter "performance model"): QK-norm + RoPE + FP8, designs A, B and C
of :mod:`kernels.case_study`, checked on a ragged token count and timed at the book shape
with the ledger's bytes of each design (:mod:`ledger.case_study`)."""
from ledger import case_study as lc

from kernels.case_study import DESIGNS, FP8_MAX, HEAD_DIM, KV_HEADS, Q_HEADS, TOKENS, get_kernel, reference, rope_tables, run


def ledger_design(design: str):
    """``ledger.case_study`` Design record of ``"A"``, ``"B"`` or ``"C"`` (bytes, grid, waves)."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {sorted(DESIGNS)}, got {design!r}")
    return lc.book_designs()[design]


def ledger_bytes(design: str):
    """(bytes, flops, source) of one design at the book shape, from the ledger."""
    d = ledger_design(design)
    return float(d.total_bytes), float(lc.case_flops()), "ledger.case_study.book_designs / case_flops"


def check_design(h, design, x, w, cos, sin, q_heads: int = Q_HEADS):
    """Poisoned outputs, one launch, scale and q8 against the fp32/fp64 reference."""
    import torch

    T_, H, D = x.shape
    q8 = h.poisoned((T_, H, D), torch.float8_e4m3fn)
    s = h.poisoned((T_, H), torch.float32)
    run(design, x, w, cos, sin, q8, s, q_heads=q_heads)
    z, s_ref, _ = reference(x, w, cos, sin, q_heads)
    h.check(f"case {design} scale T={T_}", s, s_ref, atol=1e-9, rtol=1e-4)
    want = (z.double() / s.double()[..., None]).clamp(-FP8_MAX, FP8_MAX)
    h.check(f"case {design} q8 T={T_}", q8, want, dtype=torch.float8_e4m3fn)


def gpu_suite(h) -> None:
    import torch

    H = Q_HEADS + KV_HEADS
    # correctness: a small odd token count and the full shape, every design
    for T_ in (37,):
        x = h.rand((T_, H, HEAD_DIM), torch.bfloat16, scale=2.0)
        w = h.rand((2, HEAD_DIM), torch.bfloat16, scale=0.5, offset=1.0)
        cos, sin = rope_tables(T_, device=x.device)
        for d in DESIGNS:
            check_design(h, d, x, w, cos, sin)

    T_ = 1024 if h.quick else TOKENS
    x = h.rand((T_, H, HEAD_DIM), torch.bfloat16, scale=2.0)
    w = h.rand((2, HEAD_DIM), torch.bfloat16, scale=0.5, offset=1.0)
    cos, sin = rope_tables(T_, device=x.device)
    q8 = torch.empty((T_, H, HEAD_DIM), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((T_, H), dtype=torch.float32, device=x.device)
    xv, qv, sv = x.view(T_ * H, HEAD_DIM), q8.view(T_ * H, HEAD_DIM), s.view(T_ * H)
    eager = lambda: reference(x, w, cos, sin)  # noqa: E731  (torch.compile is the fused suite's job)
    ms = {}
    for d in DESIGNS:
        check_design(h, d, x, w, cos, sin)
        k = get_kernel(d, T_)
        by, fl, src = ledger_bytes(d) if T_ == TOKENS else (None, None, "")
        rows, threads = DESIGNS[d]
        rows = H if d == "C" else rows
        ms[d] = h.bench(f"case {d} T={T_}", lambda k=k: k(xv, w, cos, sin, qv, sv), bytes=by, flops=fl,
                ledger_source=src, baselines={"eager": eager} if d == "C" else None,
                unpriced=None if T_ == TOKENS else "quick shape: the ledger prices the book shape only",
                design=d, rows_per_block=rows, threads=threads, grid=T_ * H // rows,
                ideal_bytes=float(lc.ideal_bytes()) if T_ == TOKENS else None)["ms"]
    h.note(f"case designs T={T_}", "time A/C = {:.2f}, B/C = {:.2f}; ledger bytes A/C = {:.2f}".format(
        ms["A"] / ms["C"], ms["B"] / ms["C"], ledger_design("A").total_bytes / ledger_design("C").total_bytes),
        ms=ms, ideal_floor_us=lc.sol_seconds(lc.ideal_bytes()) * 1e6)


