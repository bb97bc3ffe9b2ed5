"""Errata: where the ledger's value differs from the number a draft printed, and why.

The course never changes a quoted number silently.  When no consistent reading of the
accounting rules reproduces a draft's figure, the figure keeps the ledger's value and
an erratum here records the draft's value, ours (computed, not typed) and the reason.
Where the reason is a different assumption, :attr:`Erratum.draft_reading` recomputes
the draft's number under that assumption, so the explanation is itself checked.

Figures: ``<chapter>.erratum.<name>.draft``, ``.ours`` and ``.why`` for each erratum.
Other modules register errata of their own as single figures whose key has an
``erratum`` component (the value is the ledger's, the conditions give the draft's value
and the reason).  :func:`listed` finds every erratum in the registry, of both kinds;
``python -m ledger errata`` prints them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Union

__all__ = ["Erratum", "errata", "Listed", "listed", "rounded_h200", "figures"]

Number = Union[int, float]


@dataclass(frozen=True)
class Erratum:
    key: str  #: e.g. ``pytorch.erratum.step_forward_ms``
    figure: str  #: the figure key whose value differs
    draft: Number  #: the value the draft printed
    ours: Number  #: the ledger's value, rounded to the draft's digits
    unit: str
    digits: int
    why: str
    draft_reading: Number | None = None  #: our code under the draft's assumption, same digits

    def record(self) -> dict:
        return asdict(self)


def rounded_h200():
    """The H200 profile as the chapter-02 draft's step-budget script used it: the
    calibrated rates of the default profile rounded to the printed digits (TFLOP/s to
    one decimal, GB/s to a whole number)."""
    from ledger.machines import DEFAULT_MACHINE, Rate, get_machine

    cal = get_machine(DEFAULT_MACHINE)
    peak = round(cal.peak_flops / 1e12, 1) * 1e12
    bw = round(cal.bandwidth / 1e9) * 1e9
    return replace(cal, name=f"{cal.name}-rounded",
                   compute={cal.default_compute: Rate(peak)}, memory={cal.default_memory: Rate(bw)})


def errata() -> list[Erratum]:
    """Every erratum, its numbers computed by the ledger."""
    from ledger.fusion import layernorm as fusion_layernorm, rmsnorm as fusion_rmsnorm
    from ledger.machines import get_machine
    from ledger.ops import gemm_ridge_edge
    from ledger.step_budget import seq_sweep, step_budget

    out: list[Erratum] = []
    ours, old = step_budget(), step_budget(rounded_h200())
    exact, rounded = ours.machine, old.machine
    peak, bw = exact.compute[exact.default_compute], exact.memory[exact.default_memory]
    why_t = (f"the draft divided by the calibrated rates rounded to the printed digits "
             f"({rounded.peak_flops / 1e12:.1f} TFLOP/s, {rounded.bandwidth / 1e9:.0f} GB/s); the ledger uses the "
             f"products {peak.theoretical / 1e12:g} x {peak.calibration:.4f} = {peak.effective / 1e12:.4f} TFLOP/s and "
             f"{bw.theoretical / 1e9:g} x {bw.calibration:.4f} = {bw.effective / 1e9:.1f} GB/s, which moves the "
             "third decimal of the milliseconds")
    for stage, name in (("forward", "step_forward_ms"), ("backward", "step_backward_ms"),
                        ("optimizer", "step_optimizer_ms"), ("comm", "step_comm_ms"),
                        ("prefill", "prefill_ms")):
        fig_key = f"pytorch.step.{stage}.ms" if stage != "prefill" else "pytorch.infer.prefill.ms"
        draft = {"forward": 90.575, "backward": 181.151, "optimizer": 46.375, "comm": 6.243,
                 "prefill": 90.575}[stage]
        out.append(Erratum(f"pytorch.erratum.{name}", fig_key, draft, round(ours.stage(stage).time * 1e3, 3),
                           "ms", 3, why_t, round(old.stage(stage).time * 1e3, 3)))
    s512_ours = seq_sweep([512])[512]["optimizer"]
    s512_old = seq_sweep([512], rounded_h200())[512]["optimizer"]
    out.append(Erratum(
        "pytorch.erratum.e12_s512_optimizer", "pytorch.e12.s512.optimizer", 56.2, round(s512_ours, 1), "%", 1,
        f"at seq 512 the optimizer share is {s512_ours:.4f}% with the exact calibrated rates and "
        f"{s512_old:.4f}% with the rounded ones the draft used; it sits on the rounding edge of 56.15",
        round(s512_old, 1)))
    h100 = get_machine("h100-spec")
    edge = gemm_ridge_edge(h100)
    out.append(Erratum(
        "pytorch.erratum.e6_ridge_edge", "pytorch.e6.ridge_edge", 999, round(edge), "", 0,
        f"the draft solved N/3 = {round(h100.balance)} with the balance already rounded to {round(h100.balance)}; "
        f"{h100.peak_flops / 1e12:g} TFLOP/s / {h100.bandwidth / 1e12:.1f} TB/s is "
        f"{h100.balance:.2f} FLOP/B, so AI = N/3 reaches it at N = {edge:.0f}",
        round(3 * 2 * round(h100.balance) / 2)))
    ln, rms = fusion_layernorm(), fusion_rmsnorm()
    ln_mb = ln.unfused.bytes / 1e6
    stat = ln.unfused.steps[0].writes[0].bytes / 1e6  # one fp32 per-row vector (the mean)
    draft_mb = 335.59
    out.append(Erratum(
        "elementwise.erratum.layernorm_unfused_mb", "elementwise.fusion.layernorm.unfused_mb", draft_mb, round(ln_mb, 2), "MB", 2,
        f"split into eight PyTorch calls (mean, var, + eps, rsqrt, sub, mul, mul gamma, add beta) with fp32 "
        f"per-row statistics -- the accounting that reproduces RMSNorm's {rms.unfused.bytes / 1e6:.2f} MB -- "
        f"LayerNorm moves {ln_mb:.2f} MB; the draft's {draft_mb:.2f} MB is six fp32 per-row vectors "
        f"({6 * stat:.3f} MB) lower and no split that also gives RMSNorm's figure reproduces it. "
        f"The ratio, {ln.ratio:.2f}x, is unchanged",
        round(ln_mb - 6 * stat, 2)))
    return out


_PARTS = ("draft", "ours", "why")


@dataclass(frozen=True)
class Listed:
    """One erratum as the registry holds it (``python -m ledger errata``)."""

    key: str  #: the erratum's key: an :class:`Erratum`'s key, or the figure's own key
    figures: tuple[str, ...]  #: the registry keys it is made of
    ours: Union[Number, str]  #: the ledger's value
    text: str  #: the ledger's value as the book prints it
    unit: str
    why: str
    figure: str | None = None  #: the figure it corrects, where the erratum names one
    draft: Number | None = None  #: the draft's value, where recorded as a number
    digits: int | None = None
    draft_reading: Number | None = None

    def record(self) -> dict:
        out = asdict(self)
        out["figures"] = list(self.figures)
        return out


def listed(figs: dict | None = None) -> list[Listed]:
    """Every erratum in the registry ``figs`` (default: the whole registry), by key.

    A registry key is an erratum's when one of its dotted components is ``erratum``.
    The three figures of an :class:`Erratum` make one entry with its numbers; any other
    such figure is an entry of its own, its conditions giving the reason.
    """
    from ledger.figures import collect

    figs = collect() if figs is None else figs
    by_figure = {f"{e.key}.{part}": e for e in errata() for part in _PARTS}
    grouped: dict[str, list[str]] = {}
    for key in figs:
        if "erratum" not in key.split("."):
            continue
        e = by_figure.get(key)
        grouped.setdefault(e.key if e is not None else key, []).append(key)
    structured = {e.key: e for e in errata()}
    out = []
    for key, keys in sorted(grouped.items()):
        e = structured.get(key)
        if e is not None:
            ours = figs.get(f"{key}.ours")
            out.append(Listed(key, tuple(keys), e.ours, ours.text if ours else str(e.ours), e.unit, e.why,
                              e.figure, e.draft, e.digits, e.draft_reading))
        else:
            f = figs[key]
            out.append(Listed(key, (key,), f.value, f.text, f.unit, f.conditions))
    return out


def figures() -> list:
    """Figures ``<chapter>.erratum.<name>.{draft,ours,why}``."""
    from ledger.figures import fig

    out = []
    for e in errata():
        c = f"corrects {e.figure}"
        out.append(fig(f"{e.key}.draft", e.draft, e.unit, digits=e.digits, source="the draft (quoted)",
                       conditions=c))
        out.append(fig(f"{e.key}.ours", e.ours, e.unit, digits=e.digits, source="ledger.errata.errata",
                       conditions=c))
        out.append(fig(f"{e.key}.why", e.why, "", source="ledger.errata.errata", conditions=c))
    return out
