"""CPU checks of the swap-AB W4A16 kernel (kernels/gemm/w4a16.py): it lowers for sm_90a to
wgmma with the weights in registers, expands them without an int->float conversion, reads the
scales from shared memory inside the K loop (loaded once per block), launches the grid and
allocates the shared memory the ledger predicts, and multicasts the activations in clusters."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import w4a16  # noqa: E402
from kernels.gemm.common import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from ledger import w4a16 as lw  # noqa: E402

#: one configuration of each kind: decode (split K, no cluster), decode batch 128 (split K,
#: activation multicast to two blocks), square (two consumers with 64 rows each)
CASES = {
    "decode": ((1, 8192, 8192), w4a16._c(16, 256, 4)),
    "m128": ((128, 8192, 8192), w4a16._c(128, 128, 4, cluster=2)),
    "square": ((4096, 4096, 4096), w4a16._c(256, 64, 4, "n")),
}


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.fixture(scope="module")
def built():
    out = {}
    for name, ((M, N, K), cfg) in CASES.items():
        k = w4a16.w4a16_gemm(M, N, K, 128, **cfg)
        out[name] = ((M, N, K), cfg, k.get_kernel_source(), launch_info(k))
    return out


def test_weights_are_the_register_operand_of_wgmma(built):
    for name, ((M, N, K), cfg, src, info) in built.items():
        p = instruction_path(src)
        assert p["wgmma"] and p["tma_load"] and p["tma_store"] and not p["cp_async"], name
        # wgmma_rs: A (the weights) from registers, B (the activations) from shared memory
        assert "wgmma_rs<" in src and "wgmma_ss<" not in src, name
        # M = 64 weight rows per warpgroup, N = the activation rows of the block, K steps of 16
        assert set(wgmma_shapes(src)) == {(64, cfg["block_M"], 16)}, name
        assert info.threads == w4a16.THREADS == 384, name
        assert f"warpgroup_reg_dealloc<{w4a16.PRODUCER_REGS}>" in src, name
        assert src.count(f"warpgroup_reg_alloc<{w4a16.CONSUMER_REGS}>") == 2, name


def test_expansion_uses_the_fp16_mantissa_trick_not_an_int_conversion(built):
    for name, (_, _, src, _) in built.items():
        # q | 0x6400 reinterpreted as fp16 is 1024 + q; minus 1032 gives q - 8 exactly
        assert "(ushort)25600" in src, name  # 0x6400
        assert "1.032000e+03" in src, name
        assert not re.search(r"\(half_t\)\(\(int\)", src), name
        assert "__int2half" not in src and "__uint2half" not in src, name


def test_scales_are_loaded_once_per_block_and_read_from_shared_memory(built):
    for name, ((M, N, K), cfg, src, _) in built.items():
        # the global scale tensor is touched once: one bulk copy of the block's rows x K/group
        global_reads = re.findall(r"[^_\w]S\[", src)
        assert len(global_reads) == 1, (name, global_reads)
        rows = w4a16.block_rows(cfg["split"])
        nbytes = rows * (K // 128) * 2
        assert f"tma_load((&(((half_t*)S_s)[0])), (&(S[" in src and f", {nbytes});" in src, name
        # inside the K loop the expansion reads the staged copy
        assert "((half_t*)S_s)[" in src, name


def test_grid_and_shared_memory_are_what_the_ledger_says(built):
    for name, ((M, N, K), cfg, _, info) in built.items():
        gn, gm = w4a16.grid(M, N, block_M=cfg["block_M"], split=cfg["split"])
        assert info.grid == (gn, gm, 1), name
        want = lw.smem_bytes(K, group=128, block_m=cfg["block_M"], block_k=cfg["block_K"], stages=cfg["stages"],
                             rows=w4a16.block_rows(cfg["split"]), split_k=cfg["split"] == "k")
        assert info.dyn_smem_bytes == want <= w4a16.SMEM_LIMIT, name
    # the decode grid: one block per 64 weight rows, 128 of them for 132 SMs
    assert built["decode"][3].grid == (128, 1, 1)
    assert built["square"][3].grid == (32, 16, 1)


def test_split_k_consumers_take_alternate_k_blocks_and_add_through_shared_memory(built):
    (_, _, K), cfg, src, _ = built["decode"]
    n_k = K // cfg["block_K"]
    # two consumer loops of n_k / 2 steps each, joined by a named barrier over both warpgroups
    assert src.count(f"< {n_k // 2}; ++") == 2
    assert "__sync_thread_partial(1, 256)" in src
    (_, _, K2), cfg2, src2, _ = built["square"]
    assert src2.count(f"< {K2 // cfg2['block_K']}; ++") >= 2 and "__sync_thread_partial(1, 256)" not in src2


def test_cluster_multicasts_the_activation_tile_and_releases_at_cluster_scope(built):
    _, cfg, src, _ = built["m128"]
    assert cfg["cluster"] == 2
    assert "tma_load_multicast(A_desc" in src and "tma_load_multicast(Bq_desc" not in src
    counts = [int(x) for x in re.findall(r"empty\[\d+\]\.init\((\d+)\)", src)]
    assert counts == [4 * 2] * cfg["stages"]  # lane 0 of 4 warps of the one consumer, in both blocks
    assert ".arrive(r" in src  # remote arrive on every block of the cluster
    assert src.rstrip().rstrip("}").rstrip().endswith("tl::cluster_sync();")
    for name in ("decode", "square"):
        assert "multicast" not in built[name][2], name


def test_configuration_errors_name_the_constraint():
    ok = dict(group=128, block_M=16, block_K=256, stages=4, split="k", cluster=1)
    w4a16.check_config(1, 8192, 8192, **ok)
    bad = [
        (dict(block_M=24), "multiple of 16"),
        (dict(split="m"), "split must be"),
        (dict(block_K=96), "multiple of block_K"),
        (dict(cluster=3), "cluster must be"),
        (dict(block_K=8192), "must be even"),
        (dict(stages=20), "shared memory"),
    ]
    for change, msg in bad:
        with pytest.raises(ValueError, match=msg):
            w4a16.check_config(1, 8192, 8192, **{**ok, **change})
    with pytest.raises(ValueError, match="multiple of the 64 weight rows"):
        w4a16.check_config(1, 8100, 8192, **ok)
    with pytest.raises(ValueError, match="fill clusters of 4"):
        w4a16.check_config(1, 64 * 6, 8192, **{**ok, "cluster": 4})


def test_operand_checks_reject_wrong_dtype_shape_and_device():
    a = torch.zeros((4, 256), dtype=torch.float16)
    packed = torch.zeros((128, 128), dtype=torch.uint8)
    scales = torch.zeros((128, 2), dtype=torch.float16)
    with pytest.raises(ValueError, match="two int4 per byte"):
        w4a16.check_w4a16_inputs(a, torch.zeros((128, 256), dtype=torch.uint8), scales)
    with pytest.raises(ValueError, match="a must be torch.float16"):
        w4a16.check_w4a16_inputs(a.float(), packed, scales)
    with pytest.raises(ValueError, match=r"scales must have shape \(128, 2\)"):
        w4a16.check_w4a16_inputs(a, packed, scales[:, :1].contiguous())
    with pytest.raises(ValueError, match="CUDA device"):
        w4a16.check_w4a16_inputs(a, packed, scales)


def test_the_reference_expands_weights_like_the_kernel():
    """(q - 8) * s rounded once to fp16: what 1024 + q - 1032 times s gives in fp16 arithmetic."""
    from kernels.gemm.lowp import dequant_weight, pack_int4

    g = torch.Generator().manual_seed(0)
    w_int = torch.randint(-8, 8, (8, 256), generator=g, dtype=torch.int8)
    scales = (torch.rand((8, 2), generator=g) * 0.05 + 0.01).to(torch.float16)
    packed = pack_int4(w_int)
    ref16 = dequant_weight(packed, scales, 128).to(torch.float16)
    q = torch.stack([packed & 15, packed >> 4], dim=-1).reshape(8, 256).to(torch.int16)
    magic = (q | 0x6400).view(torch.float16)  # 1024 + q
    kern16 = (magic - torch.tensor(1032.0, dtype=torch.float16)) * scales.repeat_interleave(128, dim=1)
    assert torch.equal(kern16, ref16)
