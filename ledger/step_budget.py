"""Step budget of an 8B-class model: one training step and one inference request.

A coarse lower-bound model that puts the operator ledgers of :mod:`ledger.ops`
together.  Its assumptions, all visible as arguments:

* **Model.** ``layers`` decoder layers of hidden size ``hidden``, SwiGLU MLP of width
  ``ffn`` (gate, up, down), ``heads`` query heads and ``kv_heads`` key/value heads of
  ``hidden / heads`` (GQA).  Default: 32 layers, 4096, 14336, 32 / 8 (a Llama-3-8B
  shape).  The parameter count the optimizer and the all-reduce see is a separate
  input, ``params`` (default 8.03e9, the published size of that model; embeddings
  included).  Embedding lookup and the LM head are left out of the FLOPs.
* **Forward FLOPs** = ``2 x tokens x (matmul weights of all layers)`` plus attention
  ``layers x batch x heads x (4 S^2 d + 5 S^2)`` (no causal saving).
* **Forward bytes** = every layer weight read once, plus activations: per layer the
  residual stream crosses memory 3 times (layer input read, post-attention residual
  written, layer output written) and the three MLP intermediates (gate, up, their
  SiLU product) once each.  Nothing else (norms, attention scores: flash-style).
* **Backward** = 2 x forward, FLOPs and bytes (exact for GEMMs: dA and dB cost 2MNK
  each; optimistic for attention).
* **Optimizer** = AdamW, :func:`ledger.ops.adamw` (26 B/param, bf16 grads, fp32 states).
* **Communication** = ring all-reduce of the bf16 gradients,
  :func:`ledger.ops.ring_allreduce`; its time is the bytes over ``comm_gbs`` (default:
  the machine's memory bandwidth, the model's floor; a real link is slower).
* **Inference.** Prefill = the forward pass over the prompt.  Decode, per token: every
  layer weight read once and the whole KV cache (``seq`` long) read once; FLOPs
  ``2 x weights + attention of one query``.
* Every time is ``max(bytes / bandwidth, flops / peak)`` on the chosen machine's default
  roofs (the H200 calibrated profile: fp16 tensor core burst, HBM envelope).

``python -m ledger.step_budget [--machine M] [--seq-len S] [--params P] [--world N]
[--sweep 512,4096,32768,131072]`` prints the chapter's tables (exercises E11, E12).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Sequence

from ledger.cost import Cost, check_size, dtype_bytes, fmt_time
from ledger.machines import Machine, get_machine
from ledger.ops import SOFTMAX_FLOPS_PER_SCORE, adamw, ring_allreduce

__all__ = [
    "ModelConfig",
    "Stage",
    "StepBudget",
    "step_budget",
    "seq_sweep",
    "DEFAULT_MODEL",
    "SWEEP_SEQ_LENS",
    "figures",
]


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer (defaults: the chapter's 8B-class model)."""

    layers: int = 32
    hidden: int = 4096
    ffn: int = 14336
    heads: int = 32
    kv_heads: int = 8
    vocab: int = 128256
    params: float = 8.03e9

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab"):
            check_size(name, getattr(self, name))
        check_size("params", self.params)
        if self.hidden % self.heads:
            raise ValueError(f"heads: hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads: heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def layer_matmul_params(self) -> int:
        """Weights of the matrix products of one layer: Q, K, V, O and gate, up, down."""
        d = self.head_dim
        attn = self.hidden * self.heads * d * 2 + self.hidden * self.kv_heads * d * 2
        return attn + 3 * self.hidden * self.ffn

    @property
    def matmul_params(self) -> int:
        """Weights of every layer's matrix products (embedding and LM head excluded)."""
        return self.layers * self.layer_matmul_params

    @property
    def architecture_params(self) -> int:
        """Parameter count implied by the shape: layers, norms, untied embedding and LM head."""
        norms = self.layers * 2 * self.hidden + self.hidden
        return self.matmul_params + norms + 2 * self.vocab * self.hidden


DEFAULT_MODEL = ModelConfig()
#: The sequence lengths exercise E12 sweeps.
SWEEP_SEQ_LENS = (512, 4096, 32768, 131072)


@dataclass(frozen=True)
class Stage:
    """One stage of the budget: its cost and its lower-bound time."""

    name: str
    cost: Cost
    time: float  #: seconds, max(memory, compute) (comm: bytes / comm bandwidth)
    share: float = 0.0  #: fraction of the training step (0 for inference stages)


@dataclass(frozen=True)
class StepBudget:
    """The budget of one training step and one inference request."""

    model: ModelConfig
    machine: Machine
    seq: int
    batch: int
    world: int
    train: tuple[Stage, ...] = field(default_factory=tuple)
    infer: tuple[Stage, ...] = field(default_factory=tuple)

    def stage(self, name: str) -> Stage:
        for s in self.train + self.infer:
            if s.name == name:
                return s
        raise ValueError(f"name: no stage {name!r}; stages: {[s.name for s in self.train + self.infer]}")

    @property
    def step_time(self) -> float:
        return sum(s.time for s in self.train)

    def shares(self) -> dict[str, float]:
        """Percent of the training step per stage."""
        return {s.name: 100 * s.share for s in self.train}

    def table(self) -> str:
        lines = [
            f"model: {self.model.layers} layers, hidden {self.model.hidden}, ffn {self.model.ffn}, "
            f"{self.model.heads}/{self.model.kv_heads} heads; params {self.model.params:.3g} (seen by optimizer and all-reduce); "
            f"seq {self.seq}, batch {self.batch}, world {self.world}",
            f"machine: {self.machine.summary()}",
            "",
            "training step (lower bound)",
        ]
        for s in self.train:
            lines.append(f"  {s.name:<10s} {s.cost.flops / 1e12:>9.2f} TFLOP {s.cost.bytes / 1e9:>9.2f} GB "
                         f"{s.time * 1e3:>10.3f} ms {100 * s.share:>6.1f}%")
        lines.append(f"  {'total':<10s} {'':>15s} {'':>12s} {self.step_time * 1e3:>10.3f} ms")
        lines += ["", "inference"]
        for s in self.infer:
            lines.append(f"  {s.name:<10s} {s.cost.flops / 1e12:>9.3f} TFLOP {s.cost.bytes / 1e9:>9.2f} GB "
                         f"{s.time * 1e3:>10.3f} ms")
        return "\n".join(lines)


def _forward(model: ModelConfig, seq: int, batch: int, act_bytes: float, w_bytes: float) -> Cost:
    tokens = seq * batch
    d = model.head_dim
    flops = 2 * tokens * model.matmul_params
    flops += model.layers * batch * model.heads * (4 * seq * seq * d + SOFTMAX_FLOPS_PER_SCORE * seq * seq)
    weights = model.matmul_params * w_bytes
    acts = model.layers * tokens * (3 * model.hidden + 3 * model.ffn) * act_bytes
    return Cost(flops, weights + acts, "forward", "weights once + residual x3 + MLP intermediates x3 per layer")


def _decode(model: ModelConfig, kv_len: int, batch: int, w_bytes: float, kv_bytes: float) -> Cost:
    d = model.head_dim
    flops = 2 * batch * model.matmul_params
    flops += model.layers * batch * model.heads * (4 * kv_len * d + SOFTMAX_FLOPS_PER_SCORE * kv_len)
    kv = model.layers * 2 * batch * model.kv_heads * d * kv_len * kv_bytes
    return Cost(flops, model.matmul_params * w_bytes + kv, "decode/token", "weights once + KV cache once")


def step_budget(
    machine: Machine | str | None = None,
    *,
    seq: int = 4096,
    batch: int = 1,
    world: int = 8,
    params: float | None = None,
    model: ModelConfig | None = None,
    weight_dtype: str = "bf16",
    grad_dtype: str = "bf16",
    state_dtype: str = "fp32",
    comm_gbs: float | None = None,
) -> StepBudget:
    """The chapter's budget: forward, backward, optimizer, communication; prefill, decode.

    ``params`` overrides the model's parameter count (what the optimizer and the
    all-reduce see).  ``comm_gbs`` is the all-reduce bandwidth in GB/s (default: the
    machine's memory bandwidth).
    """
    m = get_machine(machine)
    seq, batch, world = check_size("seq", seq), check_size("batch", batch), check_size("world", world)
    cfg = model or DEFAULT_MODEL
    if params is not None:
        cfg = ModelConfig(cfg.layers, cfg.hidden, cfg.ffn, cfg.heads, cfg.kv_heads, cfg.vocab,
                          check_size("params", params))
    wb = dtype_bytes(weight_dtype, arg="weight_dtype")
    dtype_bytes(grad_dtype, arg="grad_dtype")
    dtype_bytes(state_dtype, arg="state_dtype")
    comm_rate = m.bandwidth if comm_gbs is None else check_size("comm_gbs", comm_gbs, integer=False) * 1e9

    def t(c: Cost) -> float:
        return c.lower_bound(m)

    fwd = _forward(cfg, seq, batch, wb, wb)
    bwd = Cost(2 * fwd.flops, 2 * fwd.bytes, "backward", "2 x forward")
    opt = adamw(cfg.params, grad_dtype, state_dtype)
    comm = ring_allreduce(cfg.params, world, grad_dtype)
    times = [t(fwd), t(bwd), t(opt), comm.bytes / comm_rate]
    total = sum(times)
    names = ("forward", "backward", "optimizer", "comm")
    costs = (fwd, bwd, opt, comm)
    train = tuple(Stage(n, c, tt, tt / total) for n, c, tt in zip(names, costs, times))
    prefill = Cost(fwd.flops, fwd.bytes, "prefill", "= forward over the prompt")
    dec = _decode(cfg, seq, batch, wb, wb)
    infer = (Stage("prefill", prefill, t(prefill)), Stage("decode", dec, t(dec)))
    return StepBudget(cfg, m, seq, batch, world, train, infer)


def seq_sweep(seq_lens: Sequence[int] = SWEEP_SEQ_LENS, machine: Machine | str | None = None,
              **kwargs: object) -> dict[int, dict[str, float]]:
    """Exercise E12: stage shares (percent) of the training step for each sequence length."""
    if not seq_lens:
        raise ValueError("seq_lens must name at least one sequence length")
    return {int(s): step_budget(machine, seq=s, **kwargs).shares() for s in seq_lens}  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------
def figures() -> list:
    """The step-budget numbers chapter 02 quotes (``pytorch.step.*``, ``pytorch.infer.*``, ``pytorch.e12.*``)."""
    from ledger.figures import fig

    b = step_budget()
    m = b.model
    cond = (f"8B-class model ({m.layers} layers, hidden {m.hidden}, ffn {m.ffn}, {m.heads}/{m.kv_heads} heads, "
            f"params {m.params / 1e9:g}e9), seq {b.seq}, batch {b.batch}, {b.world} ranks, bf16 weights/grads, "
            f"fp32 optimizer states; {b.machine.name}; lower bound")
    src = "ledger.step_budget.step_budget"
    out = []
    for s in b.train:
        k = s.name if s.name != "comm" else "comm"
        out.append(fig(f"pytorch.step.{k}.tflop", s.cost.flops / 1e12, "TFLOP", digits=1, source=src, conditions=cond))
        out.append(fig(f"pytorch.step.{k}.gb", s.cost.bytes / 1e9, "GB", digits=2, source=src, conditions=cond))
        out.append(fig(f"pytorch.step.{k}.ms", s.time * 1e3, "ms", digits=3, source=src, conditions=cond))
        out.append(fig(f"pytorch.step.{k}.share", 100 * s.share, "%", digits=1, source=src, conditions=cond))
    opt = b.stage("optimizer")
    out.append(fig("pytorch.step.optimizer.tflop_2", opt.cost.flops / 1e12, "TFLOP", digits=2, source=src,
                   conditions=cond + "; 15 FLOP/param"))
    out.append(fig("pytorch.step.optimizer.gflop", opt.cost.flops / 1e9, "GFLOP", digits=0, source=src,
                   conditions=cond + "; 15 FLOP/param"))
    f, bw = b.stage("forward").cost.flops, b.stage("backward").cost.flops
    out.append(fig("pytorch.step.bwd_over_fwd", bw / f, "x", digits=0, source=src, conditions=cond))
    out.append(fig("pytorch.step.fwd_bwd_over_fwd", (f + bw) / f, "x", digits=0, source=src, conditions=cond))
    fb = 100 * (b.stage("forward").share + b.stage("backward").share)
    out.append(fig("pytorch.step.fwd_bwd_share", fb, "%", digits=0, source=src, conditions=cond))
    pre, dec = b.stage("prefill"), b.stage("decode")
    ci = cond.replace("8 ranks, ", "").replace("seq 4096", "prompt 4096 / KV length 4096")
    out.append(fig("pytorch.infer.prefill.tflop", pre.cost.flops / 1e12, "TFLOP", digits=1, source=src, conditions=ci))
    out.append(fig("pytorch.infer.prefill.gb", pre.cost.bytes / 1e9, "GB", digits=2, source=src, conditions=ci))
    out.append(fig("pytorch.infer.prefill.gb_1", pre.cost.bytes / 1e9, "GB", digits=1, source=src, conditions=ci))
    out.append(fig("pytorch.infer.prefill.ms", pre.time * 1e3, "ms", digits=3, source=src, conditions=ci))
    out.append(fig("pytorch.infer.decode.gflop", dec.cost.flops / 1e9, "GFLOP", digits=1, source=src, conditions=ci))
    out.append(fig("pytorch.infer.decode.tflop", dec.cost.flops / 1e12, "TFLOP", digits=3, source=src, conditions=ci))
    out.append(fig("pytorch.infer.decode.gb", dec.cost.bytes / 1e9, "GB", digits=2, source=src, conditions=ci))
    out.append(fig("pytorch.infer.decode.gb_1", dec.cost.bytes / 1e9, "GB", digits=1, source=src, conditions=ci))
    out.append(fig("pytorch.infer.decode.ms", dec.time * 1e3, "ms", digits=3, source=src, conditions=ci))
    out.append(fig("pytorch.infer.prefill.bound", pre.cost.bound(b.machine), "", source="Cost.bound", conditions=ci))
    out.append(fig("pytorch.infer.decode.bound", dec.cost.bound(b.machine), "", source="Cost.bound", conditions=ci))
    mc = b.model
    cm = "the chapter's 8B-class model (ledger.step_budget.DEFAULT_MODEL)"
    for k, v in (("layers", mc.layers), ("hidden", mc.hidden), ("ffn", mc.ffn), ("heads", mc.heads),
                 ("kv_heads", mc.kv_heads), ("head_dim", mc.head_dim), ("seq", b.seq), ("batch", b.batch),
                 ("world", b.world)):
        out.append(fig(f"pytorch.model.{k}", v, "", digits=0, source="ledger.step_budget.ModelConfig", conditions=cm))
    out.append(fig("pytorch.model.params_b", mc.params / 1e9, "B", digits=2, source="ledger.step_budget.ModelConfig",
                   conditions=cm + "; the count the optimizer and all-reduce see"))
    out.append(fig("pytorch.model.arch_params_b", mc.architecture_params / 1e9, "B", digits=3,
                   source="ModelConfig.architecture_params",
                   conditions=cm + "; implied by the shape with vocab 128256, untied embedding and LM head"))
    out.append(fig("pytorch.model.matmul_params_b", mc.matmul_params / 1e9, "B", digits=2,
                   source="ModelConfig.matmul_params", conditions=cm + "; weights of the layers' matrix products"))
    for seq, shares in seq_sweep().items():
        c = cond.replace("seq 4096", f"seq {seq}")
        for name, pct in shares.items():
            out.append(fig(f"pytorch.e12.s{seq}.{name}", pct, "%", digits=1, source="ledger.step_budget.seq_sweep",
                           conditions=c))
    return out


# ------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ledger.step_budget",
                                description="Chapter 02 step budget of an 8B-class model.")
    p.add_argument("--machine", default=None, help="profile name (python -m ledger machines)")
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--world", type=int, default=8, help="data-parallel ranks (ring all-reduce)")
    p.add_argument("--params", type=float, default=None, help="parameter count, e.g. 70e9")
    p.add_argument("--comm-gbs", type=float, default=None, help="all-reduce bandwidth in GB/s")
    p.add_argument("--sweep", default=None, help="comma-separated sequence lengths: print stage shares")
    args = p.parse_args(argv)
    try:
        kw = dict(batch=args.batch, world=args.world, params=args.params, comm_gbs=args.comm_gbs)
        print(step_budget(args.machine, seq=args.seq_len, **kw).table())  # type: ignore[arg-type]
        if args.sweep:
            try:
                lens = [int(x) for x in args.sweep.split(",") if x.strip()]
            except ValueError:
                raise ValueError(f"--sweep: expected integers separated by commas, got {args.sweep!r}") from None
            print("\nshare of the training step (%)")
            print(f"  {'seq_len':>8s} {'forward':>8s} {'backward':>9s} {'optimizer':>10s} {'comm':>6s}")
            for s, sh in seq_sweep(lens, args.machine, **kw).items():  # type: ignore[arg-type]
                print(f"  {s:>8d} {sh['forward']:>8.1f} {sh['backward']:>9.1f} {sh['optimizer']:>10.1f} "
                      f"{sh['comm']:>6.1f}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
