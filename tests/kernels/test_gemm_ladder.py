"""CPU checks of chapter 14's ladder: every rung lowers and compiles for sm_90a, reaches the
instruction path the chapter claims, and allocates the shared memory the ledger predicts."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import ladder  # noqa: E402
from kernels.gemm.common import TARGET_SM90  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from measure.suites.gemm.ladder import TUNE_CANDIDATES  # noqa: E402

SHAPE = (1024, 1024, 1024)


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    """Kernels loaded from a cache carry no device module (launch config); compile afresh."""
    yield
TUNED = [TUNE_CANDIDATES[0], TUNE_CANDIDATES[3]]  # 128x256 and 256x128, 2 consumer warpgroups


@pytest.fixture(scope="module")
def rungs():
    out = {}
    for name in ladder.RUNGS:
        k = ladder.build(name, *SHAPE)
        out[name] = (k, k.get_kernel_source(), launch_info(k))
    return out


@pytest.fixture(scope="module")
def tuned():
    out = []
    for cfg in TUNED:
        k = ladder.rung4_annotated(4096, 4096, 4096, **cfg)
        out.append((cfg, k.get_kernel_source(), launch_info(k)))
    return out


@pytest.mark.slow
def test_rung1_has_no_shared_memory_and_no_tensor_cores(rungs):
    _, src, info = rungs["rung1_naive"]
    p = instruction_path(src)
    assert info.smem_bytes == 0 and not p["shared_memory"]
    assert not (p["wgmma"] or p["mma_sync"] or p["ldmatrix"])
    # every thread walks K straight from global memory
    assert "for (int k = 0; k < 1024; ++k)" in src


@pytest.mark.slow
def test_rung2_uses_shared_memory_and_tensor_cores_without_a_pipeline(rungs):
    _, src, info = rungs["rung2_shared"]
    p = instruction_path(src)
    assert p["shared_memory"] and p["wgmma"]
    assert not (p["tma_load"] or p["mbarrier"] or p["warp_specialized"] or p["cp_async"])
    assert info.threads == 128


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rung3_pipelined", "rung4_annotated"])
def test_rungs_3_and_4_reach_tma_wgmma_and_warp_specialization(rungs, name):
    _, src, info = rungs[name]
    p = instruction_path(src)
    assert p["wgmma"] and p["tma_load"] and p["mbarrier"] and p["warp_specialized"]
    assert not p["mma_sync"]
    # one producer warpgroup is added to the 128 consumer threads asked for
    assert info.threads == 128 + 128
    assert set(wgmma_shapes(src)) == {(64, 128, 16)}


@pytest.mark.slow
def test_rung4_adds_rasterization_and_a_tma_store_epilogue(rungs):
    p3 = instruction_path(rungs["rung3_pipelined"][1])
    p4 = instruction_path(rungs["rung4_annotated"][1])
    assert p4["rasterization"] and not p3["rasterization"]
    assert p4["stmatrix"] and not p3["stmatrix"]
    assert p4["tma_store"] and not p3["tma_store"]


@pytest.mark.slow
def test_the_swizzle_annotation_matches_what_sm90a_infers(rungs):
    """On the TMA + wgmma path the annotated layout is the 128-byte swizzle tilelang picks anyway."""
    desc = re.compile(r"initialize_wgmma_descriptor<[^>]*>")
    d3 = desc.findall(rungs["rung3_pipelined"][1])
    d4 = desc.findall(rungs["rung4_annotated"][1])
    assert d3 and d3 == d4


@pytest.mark.slow
def test_rung5_is_explicit_mma_sync_with_ldmatrix(rungs):
    _, src, info = rungs["rung5_mma"]
    p = instruction_path(src)
    assert p["mma_sync"] and p["ldmatrix"] and p["cp_async"]
    assert not (p["wgmma"] or p["tma_load"] or p["warp_specialized"])
    assert "16, 8, 16" in src  # m16n8k16
    assert info.threads == 128


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rung2_shared", "rung3_pipelined", "rung4_annotated", "rung5_mma"])
def test_shared_memory_matches_the_ledger(rungs, name):
    _, _, info = rungs[name]
    cfg = dict(ladder.RUNGS[name][1])
    bm, bn, bk = ladder.tile_of(name, cfg)
    budget = ladder.smem_budget(dict(block_M=bm, block_N=bn, block_K=bk, stages=cfg.get("stages", 1)))
    assert info.dyn_smem_bytes == budget
    assert info.smem_bytes <= 232448  # 227 KB per block on H200


@pytest.mark.slow
def test_tuned_candidates_match_the_ledger_and_use_two_consumer_warpgroups(tuned):
    for cfg, src, info in tuned:
        assert info.dyn_smem_bytes == ladder.smem_budget(cfg)
        assert info.threads == cfg["threads"] + 128
        p = instruction_path(src)
        assert p["wgmma"] and p["tma_load"] and p["warp_specialized"] and p["rasterization"]
        # each warpgroup owns a 64-row slab of the tile, N up to 256 per instruction
        ms = {m for (m, n, k) in wgmma_shapes(src)}
        assert ms == {64}


def test_every_tuned_candidate_fits_shared_memory():
    for cfg in TUNE_CANDIDATES:
        assert ladder.smem_budget(cfg) <= 232448, ladder.label(cfg)
        assert cfg["block_N"] % 16 == 0


@pytest.mark.slow
def test_plain_sm90_cannot_take_the_warp_specialized_rung():
    """Without the 'a' suffix nvcc rejects setmaxnreg, which warp specialization emits."""
    fn, cfg = ladder.RUNGS["rung3_pipelined"]
    pf = fn.get_tir(*SHAPE, **cfg)
    with pytest.raises(Exception, match="CTA register reconfiguration"):
        tilelang.compile(pf, target=TARGET_SM90)


@pytest.mark.slow
def test_rung5_compiles_for_plain_sm90():
    fn, cfg = ladder.RUNGS["rung5_mma"]
    k = tilelang.compile(fn.get_tir(*SHAPE, **cfg), target=TARGET_SM90)
    assert instruction_path(k.get_kernel_source())["mma_sync"]


def test_block_n_8_mod_16_is_refused_before_compiling():
    with pytest.raises(ValueError, match="multiple of 16"):
        ladder.build("rung4_annotated", 256, 240, 256, block_N=24)


def _t(shape, dtype=torch.float16):
    return torch.zeros(shape, dtype=dtype)


@pytest.mark.parametrize(
    "a,b,name,match",
    [
        (_t((128, 64)), _t((128, 32)), "rung4_annotated", "K must agree"),
        (_t((128, 64), torch.float32), _t((128, 64)), "rung4_annotated", "float16"),
        (_t((128, 60)), _t((128, 60)), "rung4_annotated", "multiple of 8"),
        (_t((100, 64)), _t((128, 64)), "rung2_shared", "multiple of the tile"),
        (_t((128, 64)), _t((128, 64)), "rung9", "unknown rung"),
        (_t((64, 128)).t(), _t((128, 64)), "rung4_annotated", "contiguous"),
    ],
)
def test_check_inputs_names_the_constraint(a, b, name, match):
    with pytest.raises(ValueError, match=match):
        ladder.check_inputs(a, b, name)


def test_check_inputs_requires_cuda_tensors():
    with pytest.raises(ValueError, match="CUDA"):
        ladder.check_inputs(_t((128, 64)), _t((128, 64)), "rung4_annotated")


def test_report_tables_read_recorded_records():
    from coursebook import gemm_ladder as report
    from coursebook import tiles

    res = {"suites": {
        "gemm.ladder": {"records": [
            {"kind": "check", "name": "tuned rung4 8192^3", "ok": True},
            {"kind": "bench", "name": "tuned rung4 8192^3", "ms": 1.5, "tflops": 733.0, "rel_fro_err": 3e-4,
             "baselines": {"cuBLAS": 1.6}, "speedup": {"cuBLAS": 1.6 / 1.5},
             "targets": {"speedup:cuBLAS": {"target": 1.0, "value": 1.6 / 1.5, "met": True}}},
            {"kind": "search", "name": "tuned rung4 8192^3", "best": "b", "ms": {"a": 2.0, "b": 1.5},
             "errors": {"c": "boom"}},
        ]},
        "gemm.support": {"records": [{"kind": "note", "name": "hopper lowp audit",
                                      "audit": {"int4_gemm": {"supported": False, "error": "no int4", "path": {}}}}]},
    }}
    (row,) = report.ladder_rows(res)
    assert row["TFLOP/s"] == "733.0" and row["vs cuBLAS"] == "1.07" and row["check"] == "ok"
    tune = report.tuning_rows(res)
    assert [r["candidate"] for r in tune] == ["b", "a", "c"] and tune[0]["winner"] == "yes"
    assert report.targets(res) == [{"kernel": "tuned rung4 8192^3", "target": "speedup:cuBLAS >= 1.0",
                                    "value": "1.07", "met": "yes"}]
    assert report.audit_rows(res)[0]["sm_90a"] == "refused"
    assert tiles.variant_rows(None) == [] and report.lowp_rows(res) == []


def test_hand_written_rows_replicates_and_power_read_the_records(tmp_path):
    import json

    from coursebook import gemm_ladder as report

    ws_labels = [ladder.label(c) for c in TUNE_CANDIDATES if c.get("ws")]
    auto = ladder.label(TUNE_CANDIDATES[0])

    def run(t_ws, rounds=3):
        ms = {auto: 2.0, **{lab: t_ws for lab in ws_labels}}
        return {"suites": {"gemm.ladder": {"records": [
            {"kind": "search", "name": "tuned rung4 4096^3", "best": ws_labels[0], "ms": ms, "errors": {}, "rounds": rounds},
            {"kind": "bench", "name": "tuned rung4 4096^3", "ms": 1.0, "mhz_per_round": {"kernel": [1500.0, 1600.0],
             "cuBLAS": [1400.0, 1450.0]}, "watts_per_round": {"kernel": [690.0, 695.0], "cuBLAS": [688.0, 699.0]},
             "power_limit_w": 700.0, "clock_events": ["sw_power_cap"]},
        ]}}}

    raw = tmp_path / "raw"
    raw.mkdir()
    for n, t in ((3, 1.6), (11, 1.0), (2, 2.5)):
        (raw / f"nvidia-h200.run{n}.json").write_text(json.dumps(run(t)))
    (raw / "nvidia-h200.run5.json").write_text(json.dumps(run(1.0, rounds=1)))  # another protocol: not a repeat

    def declare(*nums):
        files = [f"raw/nvidia-h200.run{n}.json" for n in nums]
        (tmp_path / "manifest.json").write_text(json.dumps(
            {"nvidia-h200": {"merged": "nvidia-h200.json", "inputs": files, "repeats": {report.LADDER_REPEATS: files}}}))

    declare(2, 3, 11)
    reps = report.ladder_replicates(run(1.0), results_dir=tmp_path)
    assert [n for n, _ in reps] == ["run 2", "run 3", "run 11"]  # the declared runs, in the declared order
    assert report.vs_automatic(reps[2][1], 4096, ws_labels[0]) == 100.0
    assert report.vs_automatic(reps[0][1], 4096, ws_labels[0]) == pytest.approx(-20.0)
    assert report.vs_automatic(reps[0][1], 8192, ws_labels[0]) is None
    rows = report.ws_rows(run(1.0), sides=(4096,), runs=reps)
    assert len(rows) == len(ws_labels)  # one row per hand-written candidate of the search
    assert rows[0]["4096^3 vs automatic"] == "-20.0% / +25.0% / +100.0%" and rows[0]["4096^3 us"] == "1000.0"
    assert report.ws_rows(None) == [] and report.ladder_replicates(None, results_dir=tmp_path) == []
    declare(2, 5)  # run 5 searched with one round: declaring it a repeat is refused
    with pytest.raises(ValueError, match="run5.json is declared a repeat"):
        report.ladder_replicates(run(1.0), results_dir=tmp_path)
    power = report.power_rows(run(1.0))
    assert [p["timed"] for p in power] == ["kernel", "cuBLAS"]
    assert power[0]["SM MHz (per-round medians)"] == "1500-1600" and power[1]["board W"] == "688-699"
    assert power[0]["power limit W"] == "700" and power[0]["clock events"] == "sw_power_cap"
    tune = report.tuning_rows(run(1.0))
    assert {r["pipeline"] for r in tune} == {"automatic", "hand-written"}


@pytest.mark.slow
def test_ragged_shapes_get_guarded_stores(rungs):
    """Rung 3 claims ragged M/N/K: TMA zero-fills the loads, the epilogue guards its stores."""
    ragged = ladder.build("rung3_pipelined", 1000, 1016, 1000).get_kernel_source()
    aligned = rungs["rung3_pipelined"][1]
    store = re.compile(r"if \(\(\(\(\(\(\(\(int\)blockIdx\.y\)")
    assert store.search(ragged) and not store.search(aligned)
    assert instruction_path(ragged)["tma_load"]


@pytest.mark.slow
def test_row_partition_candidates_issue_full_width_wgmma():
    """policy="row": each consumer warpgroup owns 64 whole rows of the tile."""
    rows = [c for c in TUNE_CANDIDATES if c.get("policy") == "row" and not c.get("persistent")]
    assert {(c["block_M"], c["block_N"]) for c in rows} == {(128, 256), (256, 128)}  # both shapes searched
    want = {(128, 256): {(64, 256, 16)}, (256, 128): {(64, 128, 16)}}
    for cfg in rows:
        k = ladder.rung4_annotated(4096, 4096, 4096, **cfg)
        src, info = k.get_kernel_source(), launch_info(k)
        assert set(wgmma_shapes(src)) == want[(cfg["block_M"], cfg["block_N"])], ladder.label(cfg)
        assert info.dyn_smem_bytes == ladder.smem_budget(cfg) and info.threads == cfg["threads"] + 128
        p = instruction_path(src)
        assert p["tma_load"] and p["tma_store"] and p["warp_specialized"] and p["rasterization"]


@pytest.mark.slow
def test_default_partition_splits_n_between_warpgroups(tuned):
    """The square default (every other candidate): 128x256 as two m64n128 halves, 256x128 as m64n64."""
    shapes = {(c["block_M"], c["block_N"]): set(wgmma_shapes(src)) for c, src, _ in tuned}
    assert shapes == {(128, 256): {(64, 128, 16)}, (256, 128): {(64, 64, 16)}}


@pytest.mark.slow
def test_persistent_candidates_walk_the_tiles_on_one_block_per_sm():
    """rung4_persistent: ``workers`` blocks, a loop over the waves of tiles, the same TMA +
    wgmma pipeline, a C tile of its own (the ledger's budget adds it) and no spill."""
    pers = [c for c in TUNE_CANDIDATES if c.get("persistent") and not c.get("ws")]
    assert len(pers) == 3 and all("_pers" in ladder.label(c) for c in TUNE_CANDIDATES if c.get("persistent"))
    for cfg in pers:
        k = ladder.build_tuned(8192, 8192, 8192, cfg, workers=132)
        src, info = k.get_kernel_source(), launch_info(k)
        tiles = (8192 // cfg["block_M"]) * (8192 // cfg["block_N"])
        assert info.grid == (132, 1, 1) and info.threads == cfg["threads"] + 128
        assert f"for (int w = 0; w < {-(-tiles // 132)}; ++w)" in src  # 2048 tiles: 16 rounds of 132
        p = instruction_path(src)
        assert p["wgmma"] and p["tma_load"] and p["tma_store"] and not p["rasterization"]
        assert info.dyn_smem_bytes == ladder.smem_budget(cfg) <= 232448
        # the C tile does not alias the operand ring: the producer refills it during the epilogue
        ring = ladder.smem_budget({**cfg, "persistent": False})
        assert ladder.smem_budget(cfg) - ring == cfg["block_M"] * cfg["block_N"] * 2
