"""Suite ``rope``: RoPE, both pairing conventions, naive and blocked kernels."""
from ledger.fusion import rope_cost

from kernels.rope import STYLES, _threads_for, ref_rope, rope, rope_blocked, rope_naive, rope_tables
from measure.cost import priced


def ref64(x, cos, sin, rope_dim, style):
    """RoPE of ``x`` in fp64 (the checks' reference)."""
    import torch

    D = x.shape[-1]
    start = D - rope_dim
    xd = x.double()
    c, s = cos.double()[:, None, :], sin.double()[:, None, :]
    tail = xd[..., start:]
    if style == "neox":
        a, b = tail[..., : rope_dim // 2], tail[..., rope_dim // 2:]
        rot = torch.cat([a * c - b * s, b * c + a * s], -1)
    else:
        a, b = tail[..., 0::2], tail[..., 1::2]
        rot = torch.stack([a * c - b * s, b * c + a * s], -1).flatten(-2)
    return torch.cat([xd[..., :start], rot], -1)


def gpu_suite(h) -> None:
    import torch

    f16, bf16 = torch.float16, torch.bfloat16
    cases = [  # S, H, D, rope_dim, dtype, blk_s
        (64, 8, 128, 128, f16, 2),
        (37, 4, 128, 64, bf16, 2),   # partial rope, ragged S
        (9, 4, 96, 32, f16, 4),      # ragged S, D not a power of two
    ]
    naive_only = [(9, 3, 96, 32, f16)]  # H=3: the blocked tiling refuses it (ValueError)
    Sp, Hp, Dp, Rp = (1024, 32, 128, 128) if h.quick else (16384, 32, 128, 128)
    jobs = []
    for S, H, D, R, dt, bs in cases + [(16, 2, 64, 64, f16, 2)]:
        dn = str(dt).replace("torch.", "")
        for style in STYLES:
            jobs.append((rope_naive, (S, H, D, R, style, dn, 256)))
            jobs.append((rope_blocked, (S, H, D, R, style, dn, bs, _threads_for(bs, H, D, R))))
    for S, H, D, R, dt in naive_only:
        jobs += [(rope_naive, (S, H, D, R, style, str(dt).replace("torch.", ""), 256)) for style in STYLES]
    for style in STYLES:
        jobs += [(rope_blocked, (Sp, Hp, Dp, Rp, style, "float16", b, 256)) for b in (1, 2, 4)]
        jobs.append((rope_naive, (Sp, Hp, Dp, Rp, style, "float16", 256)))
    h.precompile(jobs)
    for S, H, D, R, dt, bs in cases:
        cos, sin = rope_tables(S, R, device=h.device)
        for style in STYLES:
            for blocked in (False, True):
                x = h.rand((S, H, D), dt)
                y = h.poisoned((S, H, D), dt)
                rope(x, cos, sin, R, style, y, blocked=blocked, blk_s=bs)
                h.check(f"rope[{style},{'blocked' if blocked else 'naive'}]", y, ref64(x, cos, sin, R, style))
    for S, H, D, R, dt in naive_only:
        cos, sin = rope_tables(S, R, device=h.device)
        for style in STYLES:
            x = h.rand((S, H, D), dt)
            y = h.poisoned((S, H, D), dt)
            rope(x, cos, sin, R, style, y, blocked=False)
            h.check(f"rope[{style},naive]", y, ref64(x, cos, sin, R, style))
    # self-checks the chapter names: c=1, s=0 is the identity; c=0, s=1 tells the conventions apart
    S, H, D, R = 16, 2, 64, 64
    x = h.rand((S, H, D), f16)
    one, zero = torch.ones(S, R // 2, device=h.device), torch.zeros(S, R // 2, device=h.device)
    y = h.poisoned((S, H, D), f16)
    rope(x, one, zero, R, "neox", y)
    h.check("rope identity (c=1, s=0)", y, x.double())
    yn, yi = rope(x, zero, one, R, "neox"), rope(x, zero, one, R, "interleaved")
    h.note("rope conventions differ at c=0, s=1", str(bool((yn != yi).any().item())))

    S, H, D, R = Sp, Hp, Dp, Rp
    x = h.rand((S, H, D), f16)
    y = torch.empty_like(x)
    cos, sin = rope_tables(S, R, device=h.device)
    by, fl, src = priced(rope_cost, tokens=S, heads=H, head_dim=D, rope_dim=R, dtype="float16")
    for style in STYLES:
        ks = {bs: rope_blocked(S, H, D, R, style, "float16", bs, 256) for bs in (1, 2, 4)}
        best, _ = h.search(f"rope_blocked[{style}] blk_s", {f"blk_s={b}": (lambda b=b: ks[b](x, cos, sin, y)) for b in ks})
        bs = int(best.split("=")[1])
        kn = rope_naive(S, H, D, R, style, "float16", 256)
        eager = lambda style=style: ref_rope(x, cos, sin, R, style)  # noqa: E731
        comp = h.warm_compiled(h.torch_compile(lambda a, c, s, style=style: ref_rope(a, c, s, R, style), f"rope {style}"),
                               x, cos, sin, name=f"rope {style}")
        h.bench(f"rope[{style},blocked] fp16 {S}x{H}x{D}", lambda: ks[bs](x, cos, sin, y), bytes=by, flops=fl,
                ledger_source=src, baselines={"eager": eager, "torch.compile": comp},
                targets={"frac_copy_bw": 0.85}, config={"blk_s": bs, "threads": 256, "rope_dim": R})
        h.bench(f"rope[{style},naive] fp16 {S}x{H}x{D}", lambda: kn(x, cos, sin, y), bytes=by, flops=fl,
                ledger_source=src, config={"threads": 256, "rope_dim": R})
