"""CPU checks of the TMA decode W4A16 kernel (kernels/gemm/w4a16_tma.py): every configuration the suites
build (gemm.w4a16: candidates, ragged checks, probes) lowers and compiles for sm_90a
through the suites' entry point; the weights arrive by TMA (one 2-D copy per 128-k plane, no swizzle) on
a ring of mbarriers, the activations are filled once per block in the layout of the expansion, the
consumer warps expand word-wide into mma.sync m16n8k16; grid, block, shared memory and blocks per SM
are what the ledger says; ptxas keeps the register budget without spills; the loadonly probe is the
same launch; every unsupported configuration is refused with an error naming the constraint.  The
math itself (expansion, fragment mapping) is emulated in test_gemm_w4a16_tma_math.py."""

import re

import pytest

tilelang = pytest.importorskip("tilelang")

from kernels.gemm import w4a16, w4a16_tma as tk  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, ptxas_report  # noqa: E402
from ledger import w4a16 as lw  # noqa: E402
from measure.suites.gemm import w4a16 as suite  # noqa: E402


def _tma_thunks() -> dict:
    """Every TMA-kernel compile of the suite (its thunk table, by key)."""
    return {key: th for key, th in suite.build_thunks(suite.SHAPES).items() if key.split(" ")[-1].startswith("tma_")}


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.fixture(scope="module")
def built():
    out = {}
    for key, th in _tma_thunks().items():
        k = th()
        (_, func), *_ = list(k.artifact.device_mod.functions.items())
        cl = str(func.attrs["cluster_dims"]) if "cluster_dims" in func.attrs else None
        out[key] = (k.get_kernel_source(), launch_info(k), cl)
    return out


def _parse(key: str):
    """'[probe ]label@MxNxK' -> (probe, cfg, (M, N, K))."""
    probe, _, rest = key.rpartition(" ")
    lab, shape = rest.split("@")
    M, N, K = map(int, shape.split("x"))
    m = re.fullmatch(r"tma_r(\d+)_sk(\d+)_st(\d+)_g(\d+)", lab)
    rows, split, stages, gps = map(int, m.groups())
    return probe, tk.config(rows, split, stages, gps), (M, N, K)


def test_every_suite_candidate_is_listed_for_compile():
    keys = set(_tma_thunks())
    for M in (1, 16):
        for cfg in suite.TMA_DECODE:
            assert f"{tk.label(cfg)}@{M}x8192x8192" in keys
    assert sum(k.startswith("loadonly ") for k in keys) == 3
    assert sum(1 for k in keys if not k.startswith("loadonly") and not k.endswith("x8192x8192")) == 3  # ragged


@pytest.mark.slow
def test_every_tma_kernel_of_the_suites_compiles_with_the_designed_launch(built):
    assert len(built) == len(_tma_thunks()) >= 18
    for key, (src, info, cl) in built.items():
        probe, cfg, (M, N, K) = _parse(key)
        nt = tk.auto_nt(M)
        assert info.grid == (cfg["split"], N // cfg["rows"], 1), key
        assert info.block == (32 * (cfg["rows"] // 16 + 1), 1, 1), key  # consumer warps + the producer warp
        want = lw.tma_smem_bytes(K, nt=nt, rows=cfg["rows"], split=cfg["split"], stages=cfg["stages"],
                                 gps=cfg["gps"], pad=tk.A_PAD)
        assert info.dyn_smem_bytes == want <= tk.SMEM_LIMIT, key
        bps = tk.blocks_per_sm(K, nt=nt, rows=cfg["rows"], split=cfg["split"], stages=cfg["stages"], gps=cfg["gps"])
        assert f"__launch_bounds__({info.block[0]}, {bps})" in src, key
        # two blocks a SM must really fit: dynamic + static shared memory + the runtime's 1 KB each
        assert bps * (info.dyn_smem_bytes + info.static_smem_bytes + 1024) <= 228 * 1024, key
        if cfg["split"] > 1:
            assert cl == f"({cfg['split']}, 1, 1)", key
        else:
            assert "cluster_sync" not in src[src.index("main_kernel("):], key


@pytest.mark.slow
def test_weights_arrive_by_tma_planes_on_a_ring_and_feed_mma_sync(built):
    for key, (src, info, cl) in built.items():
        probe, cfg, (M, N, K) = _parse(key)
        p = instruction_path(src)
        assert p["tma_load"] and p["mma_sync"] and not p["wgmma"] and not p["cp_async"], key
        body = src[src.index("main_kernel("):]
        # one 2-D copy of rows x 64 bytes per 128-k group, gps of them per ring slot, each expecting its bytes
        n_slot = K // cfg["split"] // (128 * cfg["gps"])
        loops = 2 if n_slot > cfg["stages"] else 1  # the prologue's copies, and the steady state's if any are left
        assert body.count("tl::tma_load(") == loops, key
        if cfg["gps"] > 1:  # gps copies a slot, unrolled
            assert len(re.findall(rf"for \(int p(?:_\d+)? = 0; p(?:_\d+)? < {cfg['gps']}; ", body)) == loops, key
        assert f"expect_transaction({cfg['rows'] * 64})" in body, key
        # the ring: stages full barriers of 32 arrivals (the producer warp), stages empty ones of one per consumer
        assert body.count(".init(32);") == cfg["stages"], key
        assert body.count(f".init({cfg['rows'] // 16});") == cfg["stages"], key
        # the producer is warp 0 and its copies are issued by an elected lane of warp 0: tilelang elects lane 0 of
        # the warps whose index is a multiple of the thread extent it infers for the branch (a producer in the
        # last warp, tested as tx // 32 == last, got the whole block's extent and never issued a copy)
        assert body.count("if (((int)threadIdx.x) < 32) {") >= 1, key
        assert set(re.findall(r"tl_shuffle_elect<(\d+)>", body)) <= {"0", "32"}, key
        # the producer fills the first slots before the activation fill, the fill precedes the consumers
        first = body.index("tl::tma_load(")
        fill = body.index("w4t::fill<")
        sync = body.index("__syncthreads();", fill)
        loop = body.index("w4t::slot<")
        assert first < fill < sync < loop, key
        assert ("w4t::slot<" + f"{cfg['gps']}, {tk.auto_nt(M)}, {K // cfg['split'] + tk.A_PAD}, ") in body, key
        assert body.index("w4t::slot<").__gt__(0) and (", 1>(" in body) == (probe == "loadonly"), key


def test_the_tma_descriptor_carries_no_swizzle(tmp_path):
    """The planes are read with a 64-byte row stride and no swizzle math: the TMA copy must write them
    linearly.  tilelang picks the swizzle from the shared buffer's layout; the kernel annotates none."""
    import inspect

    src = inspect.getsource(tk._program)
    assert "annotate_layout" not in src and "make_swizzled_layout" not in src


@pytest.mark.slow
@pytest.mark.parametrize("M", [1, 16])
def test_ptxas_keeps_the_register_budget_without_spills(built, M):
    for key, (src, info, cl) in built.items():
        probe, cfg, shape = _parse(key)
        if shape != (M, 8192, 8192) or probe:
            continue
        rep = ptxas_report(src)
        assert rep["spill_bytes"] == 0, (key, rep["text"][-800:])
        assert rep["registers"] <= lw.TMA_REGS, (key, rep["registers"])


@pytest.mark.slow
def test_loadonly_probe_is_the_same_launch(built):
    for key, (src, info, cl) in built.items():
        probe, cfg, shape = _parse(key)
        if not probe:
            continue
        full = built[key.split(" ", 1)[1]]
        assert (info.grid, info.block, info.dyn_smem_bytes) == (full[1].grid, full[1].block, full[1].dyn_smem_bytes)
        a = re.search(r"w4t::slot<([^>]*)>", src).group(1).split(", ")
        b = re.search(r"w4t::slot<([^>]*)>", full[0]).group(1).split(", ")
        assert a[:-1] == b[:-1] and (a[-1], b[-1]) == ("1", "0"), key


def test_configuration_errors_name_the_constraint():
    ok = dict(group=128, rows=128, split=4, stages=4, gps=1, nt=2)
    tk.check_config(16, 8192, 8192, **ok)
    for (M, N, K, over), needle in [
        ((16, 8192, 8192, dict(group=64)), "scale group 128"),
        ((17, 8192, 8192, {}), "M=17 exceeds the 16 activation rows"),
        ((9, 8192, 8192, dict(nt=1)), "M=9 exceeds the 8 activation rows"),
        ((16, 8192, 8192, dict(nt=3)), "nt=3"),
        ((16, 8000, 8192, {}), "N=8000 must be a multiple of the 128 weight rows"),
        ((16, 8192, 8192, dict(rows=100)), "rows=100 must be a multiple of 16"),
        ((16, 8192, 8192, dict(rows=512)), "<= 256 (the TMA box)"),
        ((16, 8192, 8192, dict(split=16)), "cluster of at most 8"),
        ((16, 8192, 8192, dict(stages=1)), "stages=1"),
        ((16, 8192, 8192 + 128, {}), "multiple of 128 x split=4 x gps=1"),
        ((16, 8192, 8192, dict(gps=3)), "gps=3"),
        ((16, 8192, 8192, dict(split=1)), "shared memory exceed"),
        ((16, 8192, 8192, dict(rows=0)), "rows=0 must be a positive integer"),
    ]:
        with pytest.raises(ValueError, match=re.escape(needle)):
            tk.check_config(M, N, K, **{**ok, **over})
    # the suites' entry point checks before it compiles, nt follows M, and the probe is checked too
    with pytest.raises(ValueError, match="M=20 exceeds"):
        w4a16.build(20, 8192, 8192, 128, tk.config(128, 4, 4, 1))
    with pytest.raises(ValueError, match="timing probes are"):
        w4a16.build(16, 8192, 8192, 128, tk.config(128, 4, 4, 1), probe="nomma")


def test_labels_are_distinct_and_every_candidate_is_valid_at_both_decode_shapes():
    labels = [w4a16.label(c) for c in suite.CANDIDATES["decode"]]
    assert len(labels) == len(set(labels))
    assert w4a16.label(tk.config(128, 4, 4, 1)) == "tma_r128_sk4_st4_g1"
    assert w4a16.label(tk.config(128, 4, 4, 1, nt=1)) == "tma_r128_sk4_st4_g1_nt1"
    for cfg in suite.TMA_DECODE:
        for M in (1, 16):
            kw = {k: v for k, v in cfg.items() if k != "inst"}
            tk.check_config(M, 8192, 8192, group=128, **{**kw, "nt": tk.auto_nt(M)})
    # one wave: at most 2 blocks per SM of 132
    for cfg in suite.TMA_DECODE[:-1]:
        plan = lw.tma_plan(16, 8192, 8192, rows=cfg["rows"], split=cfg["split"], stages=cfg["stages"], gps=cfg["gps"])
        assert plan["waves"] <= 1.0, (cfg, plan)
