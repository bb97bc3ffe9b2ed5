"""CPU checks of the swap-AB W4A16 kernel (kernels/gemm/w4a16.py): it lowers for sm_90a to
wgmma with the weights in registers, expands them without an int->float conversion, reads the
scales from shared memory inside the K loop (loaded once per block), launches the grid and
allocates the shared memory the ledger predicts, and multicasts the activations in clusters."""

import re

import pytest

torch = pytest.importorskip("torch")
tilelang = pytest.importorskip("tilelang")

from kernels.gemm import w4a16  # noqa: E402
from kernels.gemm.lowered import instruction_path, launch_info, wgmma_shapes  # noqa: E402
from ledger import w4a16 as lw  # noqa: E402

#: one configuration of each kind: decode (split K, no cluster), decode batch 128 (split K,
#: activation multicast to two blocks), square (two consumers with 64 rows each)
CASES = {
    "decode": ((1, 8192, 8192), w4a16.config(16, 256, 4)),
    "m128": ((128, 8192, 8192), w4a16.config(128, 128, 4, cluster=2)),
    "square": ((4096, 4096, 4096), w4a16.config(256, 64, 4, "n")),
    # a weight ring of its own (two producer warps), and K split between the two blocks of a cluster
    "decode_w": ((16, 8192, 8192), w4a16.config(16, 256, 4, stages_w=12)),
    "m128_kpair": ((128, 8192, 8192), w4a16.config(128, 64, 4, "n", stages_w=8, kpair=True)),
    # the warp-level instruction: mma.sync m16n8k16, 16 weight rows per warp
    "decode_mma": ((16, 8192, 8192), w4a16.config(16, 256, 4, inst="mma")),
    # a stage expanded in pieces into two register buffers used in turn
    "decode_chunk": ((16, 8192, 8192), w4a16.config(16, 512, 4, chunk=128)),
    "m128_chunk": ((128, 8192, 8192), w4a16.config(128, 128, 4, cluster=2, chunk=64)),
}


@pytest.fixture(scope="module", autouse=True)
def _fresh_compiles(fresh_compiles):
    yield


@pytest.fixture(scope="module")
def built():
    out = {}
    for name, ((M, N, K), cfg) in CASES.items():
        k = w4a16.build(M, N, K, 128, cfg)
        out[name] = ((M, N, K), cfg, k.get_kernel_source(), launch_info(k))
    return out


@pytest.mark.slow
def test_weights_are_the_register_operand_of_wgmma(built):
    for name, ((M, N, K), cfg, src, info) in built.items():
        if cfg["inst"] == "mma":
            continue
        p = instruction_path(src)
        assert p["wgmma"] and p["tma_load"] and p["tma_store"] and not p["cp_async"], name
        # wgmma_rs: A (the weights) from registers, B (the activations) from shared memory
        assert "wgmma_rs<" in src and "wgmma_ss<" not in src, name
        # M = 64 weight rows per warpgroup, N = the activation rows of the block, K steps of 16
        assert set(wgmma_shapes(src)) == {(64, cfg["block_M"], 16)}, name
        assert info.threads == w4a16.THREADS == 384, name
        assert f"warpgroup_reg_dealloc<{w4a16.PRODUCER_REGS}>" in src, name
        assert src.count(f"warpgroup_reg_alloc<{w4a16.CONSUMER_REGS}>") == 2, name


@pytest.mark.slow
def test_mma_form_issues_warp_level_m16n8k16_with_the_weights_in_registers(built):
    (_, _, K), cfg, src, info = built["decode_mma"]
    assert "wgmma" not in src and "mma_sync<" in src
    calls = re.findall(r"mma_sync<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, (\d+), "
                       r"(\d+), (\d+), false, true>\(reinterpret_cast<float\*>\(acc\d \+ \d+\), "
                       r"reinterpret_cast<const unsigned\*>\((W\d)", src)
    # per consumer: two n8 pieces of the 16 activation rows, A = the expanded weight fragment
    assert {c[:3] for c in calls} == {("16", "8", "16")} and {c[3] for c in calls} == {"W0", "W1"}
    assert "ldmatrix" in src  # the activations come from shared memory through ldmatrix
    assert info.threads == 384 and info.grid == (128, 1, 1)


@pytest.mark.slow
def test_expansion_uses_the_fp16_mantissa_trick_not_an_int_conversion(built):
    for name, (_, _, src, _) in built.items():
        # q | 0x6400 reinterpreted as fp16 is 1024 + q; minus 1032 gives q - 8 exactly
        assert "(ushort)25600" in src, name  # 0x6400
        assert "1.032000e+03" in src, name
        assert not re.search(r"\(half_t\)\(\(int\)", src), name
        assert "__int2half" not in src and "__uint2half" not in src, name


@pytest.mark.slow
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


@pytest.mark.slow
def test_grid_and_shared_memory_are_what_the_ledger_says(built):
    for name, ((M, N, K), cfg, _, info) in built.items():
        gn, gm = w4a16.grid(M, N, block_M=cfg["block_M"], split=cfg["split"], kpair=cfg["kpair"])
        assert info.grid == (gn, gm, 1), name
        want = lw.smem_bytes(K, group=128, block_m=cfg["block_M"], block_k=cfg["block_K"], stages=cfg["stages"],
                             rows=w4a16.block_rows(cfg["split"]), split_k=cfg["split"] == "k",
                             stages_w=cfg["stages_w"], k_pair=cfg["kpair"], consumers=cfg.get("consumers", 2))
        assert info.dyn_smem_bytes == want <= w4a16.SMEM_LIMIT, name
    # the decode grid: one block per 64 weight rows, 128 of them for 132 SMs
    assert built["decode"][3].grid == (128, 1, 1)
    assert built["square"][3].grid == (32, 16, 1)
    assert built["m128_kpair"][3].grid == (128, 1, 1)  # 64 tiles of 128 weight rows x two K halves


@pytest.mark.slow
def test_split_k_consumers_take_alternate_k_blocks_and_add_through_shared_memory(built):
    (_, _, K), cfg, src, _ = built["decode"]
    n_k = K // cfg["block_K"]
    # two consumer loops of n_k / 2 steps each, joined by a named barrier over both warpgroups
    bounds = [int(b) for b in re.findall(r"for \(int (?:ko|i)(?:_\d+)? = 0; \w+ < (\d+); ", src)]
    # the producer walks all n_k K blocks, each consumer n_k / 2 of them
    assert bounds.count(n_k) == 1 and bounds.count(n_k // 2) == 2, bounds
    assert "__sync_thread_partial(1, 256)" in src
    (_, _, K2), cfg2, src2, _ = built["square"]
    n_k2 = K2 // cfg2["block_K"]
    bounds2 = [int(b) for b in re.findall(r"for \(int (?:ko|i)(?:_\d+)? = 0; \w+ < (\d+); ", src2)]
    assert bounds2.count(n_k2) == 3, bounds2  # producer and both consumers walk every K block
    assert "__sync_thread_partial(1, 256)" not in src2


@pytest.mark.slow
def test_cluster_multicasts_the_activation_tile_and_releases_at_cluster_scope(built):
    _, cfg, src, _ = built["m128"]
    assert cfg["cluster"] == 2
    assert "tma_load_multicast(A_desc" in src and "tma_load_multicast(Bq_desc" not in src
    counts = [int(x) for x in re.findall(r"empty\[\d+\]\.init\((\d+)\)", src)]
    assert counts == [4 * 2] * cfg["stages"]  # lane 0 of 4 warps of the one consumer, in both blocks
    assert ".arrive(r" in src  # remote arrive on every block of the cluster
    assert src.rstrip().rstrip("}").rstrip().endswith("tl::cluster_sync();")
    for name in ("decode", "square", "decode_w", "m128_kpair", "decode_mma", "decode_chunk"):
        assert "multicast" not in built[name][2], name


@pytest.mark.slow
def test_weight_ring_is_fed_by_its_own_warp_and_freed_before_the_wgmma(built):
    (_, _, K), cfg, src, _ = built["decode_w"]
    sw, sa = cfg["stages_w"], cfg["stages"]
    # warp 0 streams the weights, warp 1 the activations: 32 producer arrivals per stage
    assert [int(x) for x in re.findall(r"wfull\[\d+\]\.init\((\d+)\)", src)] == [32] * sw
    assert [int(x) for x in re.findall(r"(?<![a-z])full\[\d+\]\.init\((\d+)\)", src)] == [32] * sa
    # a weight stage is released by the 4 warps of the one consumer that expanded it
    assert [int(x) for x in re.findall(r"wempty\[\d+\]\.init\((\d+)\)", src)] == [4] * sw
    producer = src[src.index("warpgroup_reg_dealloc"):src.index("warpgroup_reg_alloc")]
    assert "threadIdx.x) < 32)" in producer and "threadIdx.x) < 64)" in producer
    assert producer.count("warpgroup_reg_dealloc") == 1  # once for the warpgroup, before the warps part
    # in each consumer: expand, free the weight stage, then wait for the activations and issue
    for part in src.split("warpgroup_reg_alloc")[1:]:
        loop = part[:part.index("wgmma_rs")]
        assert loop.index("wempty[") > loop.index("1.032000e+03") and loop.rindex("full[") > loop.index("wempty[")


@pytest.mark.slow
def test_pieces_alternate_two_register_buffers_and_wait_only_for_the_older_wgmma(built):
    for name in ("decode_chunk", "m128_chunk"):
        (_, _, K), cfg, src, _ = built[name]
        kc, n_c = cfg["chunk"], cfg["block_K"] // cfg["chunk"]
        consumers = src.split("warpgroup_reg_alloc")[1:]
        assert len(consumers) == 2, name
        for wg, part in enumerate(consumers):
            buf = f"W{wg}"
            # each consumer's loop over its stages: n_c / 2 iterations of two pieces, each piece
            # waited for down to one group in flight before its registers are written again
            if n_c > 2:
                assert f"< {n_c // 2}; ++cc" in part, name
            piece = part[part.index("wait_wgmma<1>"):part.index("wait_wgmma<0>")]
            assert piece.count("wait_wgmma<1>") == 2, name
            # one unrolled run of wgmma per piece: one instruction per 16 of K
            assert set(re.findall(r"for \(int ki(?:_\d+)? = 0; ki(?:_\d+)? < (\d+);", piece)) == {str(kc // 16)}, name
            for b in (buf, buf + "b"):
                reads = re.findall(rf"reinterpret_cast<const uint32_t\*>\({b} \+", piece)
                assert len(reads) == 1, (name, b, len(reads))
                # the expansion writes the buffer after the wait and before the wgmma reading it
                w = piece.index(f"{b}[")
                assert piece.rindex("wait_wgmma<1>", 0, w + 1) < w < piece.index(f"({b} +"), (name, b)
            # the stage is released only after every piece's wgmma completed
            tail = part[part.index("wait_wgmma<0>"):]
            assert tail.index("empty[") > 0, name


@pytest.mark.slow
def test_four_consumers_take_every_fourth_k_block_and_hand_three_partials_to_the_first():
    from kernels.gemm.lowered import ptxas_report

    M, N, K = 16, 8192, 8192
    cfg = w4a16.config(16, 256, 8, wide=True, consumers=4)
    kern = w4a16.build(M, N, K, 128, cfg)
    src, info = kern.get_kernel_source(), launch_info(kern)
    n_k = K // cfg["block_K"]
    assert info.block == (640, 1, 1) and "__launch_bounds__(640, 1)" in src and info.grid == (128, 1, 1)
    # the shared memory the ledger counts: the ring, the scales, one C staging tile, three fp32 partials
    assert info.dyn_smem_bytes == lw.smem_bytes(K, group=128, block_m=16, block_k=256, stages=8, rows=64,
                                                consumers=4) <= w4a16.SMEM_LIMIT
    assert f"for (int ko = 0; ko < {n_k}; ++ko)" in src  # the producer walks every K block
    # consumer c waits on the ring slot of K block 4 i + c: slot (i % 2) * 4 + c of the 8, always its own,
    # in a loop of n_k / 4 steps
    waits = re.findall(r"full\[\(*\((i_\d+) & 1\) \* 4\)(?: \+ (\d)\))?\]\.wait", src)
    assert sorted(int(c or 0) for _, c in waits) == [0, 1, 2, 3], waits
    for var, _ in waits:
        assert f"for (int {var} = 0; {var} < {n_k // 4}; ++{var})" in src, var
    # the register split: the producer keeps 32, each of the four consumers takes 112, and the consumer
    # code fits without spilling
    threads, keep, take = w4a16.Q4_REGS
    assert src.count(f"warpgroup_reg_dealloc<{keep}>") == 1 and src.count(f"warpgroup_reg_alloc<{take}>") == 4
    assert src.count("__sync_thread_partial(1, 512)") == 4  # the three hand-overs and the adder meet once
    rep = ptxas_report(src)
    assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], rep["text"][-400:]
    # setmaxnreg moves registers inside the block's launch allocation: what the consumers take must
    # be what the producer released, or one of them waits in setmaxnreg.inc for ever
    launched = rep["registers"]
    assert launched * threads <= 65536
    assert 4 * 128 * (take - launched) <= 128 * (launched - keep), (launched, keep, take)
    assert w4a16.label(cfg) == "m16_k256_s8_k_q4_wd"


@pytest.mark.slow
def test_pieces_keep_the_register_budget_and_no_serialised_wgmma(built):
    from kernels.gemm.lowered import ptxas_report

    for name in ("decode_chunk", "m128_chunk"):
        rep = ptxas_report(built[name][2])
        assert rep["spill_bytes"] == 0 and not rep["serialized_wgmma"], (name, rep["text"][-400:])
        assert rep["registers"] <= w4a16.CONSUMER_REGS, name
        # the consumers' setmaxnreg.inc takes only what the producer's dec released
        launched = rep["registers"]
        assert 2 * 128 * (w4a16.CONSUMER_REGS - launched) <= 128 * (launched - w4a16.PRODUCER_REGS), (name, launched)


@pytest.mark.slow
def test_k_pair_hands_the_upper_half_to_the_lower_block(built):
    (_, _, K), cfg, src, _ = built["m128_kpair"]
    # each block reads its half of K: the K coordinate of every load starts at (bx & 1) * half
    n_half = K // cfg["block_K"] // 2
    assert f"for (int t = 0; t < {n_half}; ++t)" in src
    assert "((((int)blockIdx.x) & 1) * 2048)" in src  # the weight column (bytes) of the upper half
    # the upper block copies each consumer's 64 x 128 fp32 partial into the lower block (one bulk
    # copy completing on the lower block's barrier), which waits, adds and stores
    nbytes = 64 * cfg["block_M"] * 4
    assert src.count(f"tma_store_cluster(") == 2 and src.count(f"(uint32_t)((uint){nbytes})") == 2
    assert [int(x) for x in re.findall(r"rbar\[\d\]\.init\((\d+)\)", src)] == [1, 1]
    assert src.count("rbar[0].wait(0)") == 1 and src.count("rbar[1].wait(0)") == 1
    assert src.rstrip().rstrip("}").rstrip().endswith("tl::cluster_sync();")


def test_configuration_errors_name_the_constraint():
    ok = dict(group=128, block_M=16, block_K=256, stages=4, split="k", cluster=1, stages_w=0, kpair=False)
    w4a16.check_config(1, 8192, 8192, **ok)
    bad = [
        (dict(block_M=24), "multiple of 16"),
        (dict(split="m"), "split must be"),
        (dict(block_K=96), "multiple of block_K"),
        (dict(cluster=3), "cluster must be"),
        (dict(block_K=8192), "must be even"),
        (dict(stages=20), "shared memory"),
        (dict(stages=3), "even rings"),
        (dict(stages_w=7), "even rings"),
        (dict(kpair=True), "kpair"),
        (dict(chunk=96), "chunk=96"),
        (dict(chunk=256), "even number of pieces"),
        (dict(chunk=64, stages_w=8), "stages_w must be 0"),
        (dict(consumers=3), "consumers must be 2 or 4"),
        (dict(consumers=4, stages=6), "multiples of 4"),
        (dict(consumers=4, block_K=4096), "multiples of 4"),
        (dict(consumers=4, stages_w=8), "one ring"),
        (dict(consumers=4, split="n"), "one ring"),
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


def test_tiled_weights_put_each_stage_tile_in_one_contiguous_run():
    """tile_weights: tile (block nb, K block ko) of rows x block_K/2 bytes is rows (nb * n_k + ko) * rows
    onward of the repacked tensor, the same bytes; untiled configurations take the weights as they are."""
    N, K = 256, 2048
    packed = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8)
    for cfg in (w4a16.config(16, 512, 4, wide=True, tiled=True), w4a16.config(64, 128, 6, wide=True, tiled=True),
                w4a16.config(256, 128, 2, "n", wide=True, tiled=True)):
        rows, bk = w4a16.block_rows(cfg["split"]), cfg["block_K"]
        n_k = K // bk
        t = w4a16.tile_weights(packed, cfg)
        assert t.shape == (N * n_k, bk // 2) and t.is_contiguous()
        for nb in range(N // rows):
            for ko in range(n_k):
                r0 = (nb * n_k + ko) * rows
                assert torch.equal(t[r0:r0 + rows], packed[nb * rows:(nb + 1) * rows, ko * bk // 2:(ko + 1) * bk // 2])
    assert w4a16.tile_weights(packed, w4a16.config(16, 512, 4, wide=True)) is packed
    assert w4a16.label(w4a16.config(16, 512, 4, wide=True, tiled=True)) == "m16_k512_s4_k_tl_wd"
    with pytest.raises(ValueError, match="no stages_w or kpair"):
        w4a16.check_config(1, 8192, 8192, group=128, block_M=16, block_K=256, stages=4, split="k", cluster=1,
                           stages_w=8, tiled=True)


@pytest.mark.slow
def test_tiled_producer_reads_one_tile_per_k_block_at_its_row():
    cfg = w4a16.config(16, 512, 4, wide=True, tiled=True)
    src = w4a16.build(5, 1024, 2048, 128, cfg).get_kernel_source()
    loads = [ln.strip() for ln in src.splitlines() if "tma_load(Bq_desc" in ln]
    # two 128-byte planes of the 256-byte tile rows, at row (bx * n_k + ko) * 64 with n_k = 4, column 0 or 128
    assert loads and all("(i_1 * 128), ((((int)blockIdx.x) * 256) + (ko * 64))" in ln for ln in loads), loads
