"""Helpers the GEMM suites share (measure.suites.gemm.common), on the CPU."""


def test_workspace_candidates_must_be_right_twice_into_the_same_output():
    """A split-K / stream-K runner that accumulates into its workspace instead of overwriting it is
    right once and wrong the second time: screened out, like one that is never right, one whose
    build failed and one whose config does not fit; the survivors are thunks writing one output."""
    import torch

    from measure.suites.gemm.common import screen_workspace_candidates

    ref = torch.ones(4, 4)
    acc = torch.zeros(4, 4)

    def runner(cfg):
        if cfg == "too big":
            raise ValueError("does not fit: 300 KB of shared memory")
        if cfg == "accumulates":
            def fn(c):
                acc.add_(ref)
                c.copy_(acc)
            return fn
        if cfg == "wrong":
            return lambda c: c.fill_(3.0)
        return lambda c: c.copy_(ref)

    built = {"unbuilt": {"kernel": None, "error": "ptxas: too many resources"}}
    cands, rejected = screen_workspace_candidates(
        ["good", "accumulates", "wrong", "too big", "unbuilt"], str,
        lambda cfg: built.get(cfg, {"kernel": object()}), runner, lambda: torch.full((4, 4), float("nan")), ref)
    assert set(cands) == {"good"}
    assert rejected["accumulates"].startswith("rel_fro_err=") and rejected["wrong"].startswith("rel_fro_err=")
    assert rejected["too big"].startswith("does not fit") and rejected["unbuilt"] == "ptxas: too many resources"
    cands["good"]()
