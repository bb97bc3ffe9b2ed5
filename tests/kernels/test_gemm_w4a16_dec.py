"""CPU checks of the decode W4A16 kernel (kernels/gemm/w4a16_dec.py): it lowers for sm_90a to
128-bit non-caching register loads of the packed weights issued before the activation tile is
filled, word-wide expansion and mma.sync m16n8k16, split K over a cluster summed through
distributed shared memory; grid, threads and shared memory are what the ledger and the design
say; ptxas keeps it within the register budget without spills; every unsupported shape or
configuration is refused with an error naming the constraint."""

import os
import re
import shutil
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")

from kernels.gemm import w4a16, w4a16_dec as dec  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info  # noqa: E402
from ledger import w4a16 as lw  # noqa: E402

#: decode M = 1 (one n8 tile), M = 16 with two K warps per block, a ragged M without a cluster
CASES = {
    "m1": ((1, 8192, 8192), dec.config(128, 1, 4, 4)),
    "m16_wk2": ((16, 8192, 8192), dec.config(64, 2, 4, 4)),
    "ragged_nosplit": ((3, 512, 1024), dec.config(64, 1, 1, 4)),
}
#: the timing probe: the same kernel, its main loop reduced to the register loads
PROBE = ((1, 8192, 8192), dec.config(128, 1, 4, 4))


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.fixture(scope="module")
def built():
    out = {}
    for name, ((M, N, K), cfg) in CASES.items():
        k = w4a16.build(M, N, K, 128, cfg)  # the suite's entry point routes inst="dec" here
        out[name] = ((M, N, K), cfg, k.get_kernel_source(), launch_info(k))
        (_, func), *_ = list(k.artifact.device_mod.functions.items())
        CLUSTER[name] = str(func.attrs["cluster_dims"]) if "cluster_dims" in func.attrs else None
    return out


#: the launch's cluster shape, as the device function's attributes give it
CLUSTER: dict = {}


def _nt(M):
    return 1 if M <= 8 else 2


@pytest.mark.slow
def test_grid_threads_and_shared_memory_are_the_design(built):
    for name, ((M, N, K), cfg, src, info) in built.items():
        assert info.grid == (cfg["split"], N // cfg["rows"], 1), name
        assert info.block == (32 * cfg["rows"] // 16 * cfg["wk"], 1, 1), name
        want = lw.dec_smem_bytes(K, nt=_nt(M), rows=cfg["rows"], wk=cfg["wk"], split=cfg["split"], pad=dec.A_PAD)
        assert info.dyn_smem_bytes == want <= dec.SMEM_LIMIT, name
        # two or four blocks per SM: the register cap the compiler is given
        assert f"__launch_bounds__({info.block[0]}, {dec.min_blocks(cfg['rows'], cfg['wk'])})" in src, name
    # M = 1 on 8192 x 8192: 64 tiles of 128 rows x 4 K blocks = 256 blocks, about two per SM of 132
    assert built["m1"][3].grid == (4, 64, 1)
    assert built["m16_wk2"][3].grid == (4, 128, 1)


@pytest.mark.slow
def test_weights_go_to_registers_by_128_bit_loads_before_the_activation_fill(built):
    for name, ((M, N, K), cfg, src, _) in built.items():
        p = instruction_path(src)
        assert not p["tma_load"] and not p["wgmma"] and not p["cp_async"], name
        assert "ld.global.nc.L1::no_allocate.L2::256B.v4.u32" in src, name
        body = src[src.index("main_kernel("):]
        ng = K // (128 * cfg["split"] * cfg["wk"])
        pre = body.index(f"w4d::prefetch<{cfg['depth']}, {ng}, {K // 2}, {K // 128}>")
        fill = body.index("*(uint4*)(((half_t*)A_s)")  # the activation tile, 16 bytes a store
        sync = body.index("__syncthreads()")
        loop = body.index(f"w4d::main_loop<{cfg['depth']}, {ng}, {K // 2}, {K // 128}, {_nt(M)}, ")
        assert pre < fill < sync < loop, name


@pytest.mark.slow
def test_activation_tile_is_stored_in_the_permuted_order_of_the_expansion(built):
    for name in ("m1", "m16_wk2"):
        (M, N, K), cfg, src, _ = built[name]
        ks = K // cfg["split"]
        # one thread moves 8 halves: k = 32t + 8i + e of each 128-k group lands at 32i + 8t + e
        lines = [ln for ln in src.splitlines() if "*(uint4*)(((half_t*)A_s) + " in ln]
        assert len(lines) == 1, (name, lines)
        assert f"* {ks + dec.A_PAD})" in lines[0], name  # padded rows
        assert "& 3) * 32)" in lines[0] and ">> 2) * 8)" in lines[0], name


@pytest.mark.slow
def test_split_blocks_form_a_cluster_and_block_zero_sums_and_stores(built):
    for name, ((M, N, K), cfg, src, _) in built.items():
        body = src[src.index("main_kernel("):]
        if cfg["split"] > 1:
            # the split blocks of one weight tile are launched as one cluster, next to each other in x
            assert CLUSTER[name] == f"({cfg['split']}, 1, 1)", (name, CLUSTER[name])
            assert body.count("tl::cluster_sync()") == 2, name
            csum = body.index(f"w4d::cluster_add<{cfg['split']}, {cfg['rows'] * (8 * _nt(M) + 1)}>")
            assert body.index("tl::cluster_sync()") < csum < body.index("C[") < body.rindex("tl::cluster_sync()"), name
            assert "ld.shared::cluster.f32" in src and "mapa.shared::cluster" in src
        else:
            assert "cluster_sync" not in body and "cluster_add<" not in body, name
        # only rows < M of C are written (the zero activation rows past M never reach C)
        if 1 < M < 8 * _nt(M):
            assert re.search(rf"< {M}\) {{\s*C\[", body), name
    # wk = 2: the two K warps' partials are added in shared memory before the cluster sum
    body = built["m16_wk2"][2][built["m16_wk2"][2].index("main_kernel("):]
    assert body.index("P_s)[") < body.index("w4d::cluster_add<")


@pytest.mark.slow
def test_expansion_is_word_wide_and_the_mma_is_m16n8k16(built):
    src = built["m1"][2]
    # two nibbles a step into an fp16 pair (1024 + q), minus 1032 by one f16x2 subtraction
    assert "0x000F000Fu) | 0x64006400u" in src and "sub.f16x2" in src and "0x64086408u" in src
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in src
    # the activations are put into the same k pairs once per block, after the fill, and the main
    # loop feeds each 128-bit read to the mma unshuffled
    assert "__byte_perm(v[b].x, v[b].z, 0x5410)" in src and "__byte_perm(v[b].y, v[b].w, 0x7632)" in src
    assert "mma(tmp[j], qa[0], qb[0], qa[1], qb[1], x.x, x.y);" in src
    body = src[src.index("main_kernel("):]
    assert body.index("w4d::pair_up<") < body.index("w4d::main_loop<")
    assert "__int2half" not in src and "wgmma" not in src


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc for ptxas -v")
def test_ptxas_keeps_the_register_budget_without_spills(built, tmp_path):
    inc = os.path.dirname(tilelang.__file__)
    for name, (_, cfg, src, _) in built.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(src)
        r = subprocess.run(["nvcc", "--cubin", "-O3", "-arch=sm_90a", "-std=c++20", f"-I{inc}/src",
                            f"-I{inc}/3rdparty/cutlass/include", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                            str(cu)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        regs = [int(x) for x in re.findall(r"Used (\d+) registers", r.stderr)]
        assert regs and max(regs) <= dec.MAX_REGS, (name, regs)
        assert "0 bytes spill stores, 0 bytes spill loads" in r.stderr and "bytes stack frame" in r.stderr, name
        assert not re.search(r"[1-9]\d* bytes spill", r.stderr), name


def test_configuration_errors_name_the_constraint():
    ok = dict(group=128, rows=128, wk=1, split=4, depth=4, nt=2)
    dec.check_config(16, 8192, 8192, **ok)
    for (M, N, K, over), needle in [
        ((16, 8192, 8192, dict(group=64)), "scale group 128"),
        ((17, 8192, 8192, {}), "M=17 exceeds the 16 activation rows"),
        ((9, 8192, 8192, dict(nt=1)), "M=9 exceeds the 8 activation rows"),
        ((16, 8000, 8192, {}), "N=8000 must be a multiple of the 128 weight rows"),
        ((16, 8192, 8192 + 128, {}), "must be a multiple of 128 x split=4 x wk=1"),
        ((16, 8192, 8192, dict(split=16)), "cluster of at most 8"),
        ((16, 8192, 8192, dict(rows=100)), "rows=100 must be a multiple of 16"),
        ((16, 8192, 8192, dict(rows=256, wk=4)), "threads (max 1024)"),
        ((16, 1024, 1024, dict(split=8, depth=4)), "depth=4 exceeds the 1 groups"),
        ((16, 8192, 65536, dict(split=1)), "fully unrolled"),
        ((16, 8192, 8192, dict(nt=3)), "nt=3"),
    ]:
        with pytest.raises(ValueError, match=re.escape(needle)):
            dec.check_config(M, N, K, **{**ok, **over})
    # shared memory: a whole 8192 K slice of 16 rows does not fit one block
    with pytest.raises(ValueError, match="shared memory"):
        dec.check_config(16, 8192, 16384, **{**ok, "split": 1, "wk": 2, "rows": 128})
    # the suite's entry point checks before it compiles, and M is chosen per call (nt = 0: automatic)
    with pytest.raises(ValueError, match="M=20 exceeds"):
        w4a16.build(20, 8192, 8192, 128, dec.config(128, 1, 4, 4))
    with pytest.raises(ValueError, match="timing probes are"):
        w4a16.build(16, 8192, 8192, 128, dec.config(128, 1, 4, 4), probe="nomma")


def test_labels_are_distinct_and_name_the_knobs():
    from measure.suites.gemm import w4a16 as suite

    labels = [w4a16.label(c) for c in suite.CANDIDATES["decode"]]
    assert len(labels) == len(set(labels))
    assert w4a16.label(dec.config(64, 2, 4, 8)) == "dec_r64_kw2_sk4_d8"
    assert w4a16.label(dec.config(64, 2, 4, 8, nt=1)) == "dec_r64_kw2_sk4_d8_nt1"
    # every decode-kernel candidate is valid at both decode shapes of the suite
    for cfg in suite.CANDIDATES["decode"]:
        if cfg.get("inst") == "dec":
            for M in (1, 16):
                kw = {k: v for k, v in cfg.items() if k != "inst"}
                dec.check_config(M, 8192, 8192, group=128, **{**kw, "nt": dec.auto_nt(M)})


@pytest.mark.slow
def test_loadonly_probe_is_the_same_launch_with_only_the_loads(built):
    (M, N, K), cfg = PROBE
    k = w4a16.build(M, N, K, 128, cfg, probe="loadonly")
    src, info = k.get_kernel_source(), launch_info(k)
    full_src, full_info = built["m1"][2], built["m1"][3]
    assert (info.grid, info.block, info.dyn_smem_bytes) == (full_info.grid, full_info.block, full_info.dyn_smem_bytes)
    call = re.search(r"w4d::main_loop<([^>]*)>", src[src.index("main_kernel("):]).group(1)
    full = re.search(r"w4d::main_loop<([^>]*)>", full_src[full_src.index("main_kernel("):]).group(1)
    assert call == full + ", 1"  # PROBE = 1; every other template argument the same
    assert "if constexpr (PROBE == 1)" in src
