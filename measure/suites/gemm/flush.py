"""Suite ``gemm.flush``: does the way L2 is flushed before each sample change a comparison?

The protocol flushes L2 as ``tilelang.profiler.do_bench`` does, by rewriting a 256 MB buffer
(``flush_mode="write"``).  That leaves L2 full of dirty lines, and a kernel that reads more than a
few MB must evict them: their write-back shares DRAM with the kernel's own reads, inside the timed
interval.  A kernel that keeps DRAM busy pays for it; one that leaves bandwidth idle hardly does.
``flush_mode="clean"`` follows the write with a read of a second 256 MB buffer, outside the timed
interval, so L2 holds clean lines that the kernel can drop for free.

Each product of the GEMM variants' targets is timed under both modes, in alternating rounds
against its library baseline, with a winner of the recorded searches (suites ``gemm.w4a16``,
``gemm.splitk_ws``, ``gemm.streamk_ws``; for W4A16 see :data:`W4A16_WINNERS`, which says which search and
probes picked each kernel).  At M = 16 the rounds also time what
bounds any kernel that reads the int4 weights once: the winner's load path alone, a plain read of
the same bytes (:mod:`kernels.gemm.plainread`, checked by the sum of every word before it is timed),
cuBLAS on fp16 weights of the same byte count, a torch copy that moves that many bytes, and a
one-element add (the fixed cost of a timed launch).
"""
from typing import Any

from kernels.gemm import splitk, streamk
from kernels.gemm.plainread import WORDS, make_reader, plain_read, read_checksum, read_rows
from kernels.gemm.ladder import build_tuned
from kernels.gemm.w4a16 import build, config as _c, kernel_weights, label
from ledger.protocol import FLUSH_MODES
from ledger.w4a16 import roofline, w4a16_cost, weight_bytes
from measure.cost import source_of
from measure.search import par_build
from measure.suites.common import sm_count
from measure.suites.gemm.common import BENCH_ROUNDS, gemm_cost, gemm_tolerance, rel_fro_err
from measure.suites.gemm.splitk_ws import NO_SPLIT
from measure.suites.gemm.streamk_ws import TARGETS as STREAMK_TARGETS
from measure.suites.gemm.w4a16 import TARGETS as W4_TARGETS, make_inputs

#: The bench winners of the W4A16 searches the pages read, by shape.  M = 64: the lag form (each consumer
#: expands its next stage while the last stage's wgmma runs), the winner of the search that first held it.  Each
#: with ``fuse`` (one PTX lop3 per fp16 pair): in the timing probe ``fuse`` the same kernels with it were faster at
#: M = 16, 64 and 128 in all eight searches (both flushes), at M = 1 in three of four, and within 1 % at 4096^3.
#: In run59's search another fused form came first at M = 16 (four consumers, 17.7 us against 18.0) and at M = 64
#: (256-k stages without lag, 24.0 against 24.35 us): less than the 0.5-0.7 us between the harness's two timing
#: levels, in one search, so these stay.  This suite was also run twice with those two instead (timing probe
#: ``flushwin``): against runs 60 and 61, at M = 64 0.4-0.5 us faster under the write flush and 1.5-1.9 us slower
#: under the clean flush, at M = 16 slower under both.
W4A16_WINNERS: dict[tuple[int, int, int], dict[str, Any]] = {
    (1, 8192, 8192): _c(8, 256, 12, inst="mma", chunk=128, wide=True, tiled=True, perm=True, post=True, fuse=True),
    (16, 8192, 8192): _c(16, 256, 8, inst="mma", chunk=128, wide=True, perm=True, post=True, fuse=True),
    (64, 8192, 8192): _c(64, 128, 8, stages_w=8, wide=True, perm=True, lag=True, fuse=True),
    (128, 8192, 8192): _c(128, 128, 4, stages_w=8, wide=True, perm=True, fuse=True),
    (4096, 4096, 4096): _c(256, 128, 2, "n", wide=True, perm=True, fuse=True),
}
#: Kernels timed as one more baseline of a winner, in the same alternating rounds (the pages read the winners' rows
#: only).  M = 64: ``kglob`` (two blocks split K for the same 128 weight rows and meet in a global workspace), on an
#: H100 the fastest M = 64 kernel under the write flush (timing probes ``kglob`` and ``kgparts``: 1.2-1.8 us ahead of
#: this suite's kernel) and 1.35-2.2 us behind it under the clean flush; not yet timed on the H200.  M = 16: the
#: four-consumer winner of suite gemm.w4a16's search on the H200 (2.50x cuBLAS there), which that search timed 0.3 us
#: ahead of this suite's kernel; in this suite's two runs that kernel measured 2.43x.
W4A16_CHALLENGERS: dict[tuple[int, int, int], dict[str, Any]] = {
    (16, 8192, 8192): _c(16, 256, 12, wide=True, consumers=4, perm=True, fuse=True),
    (64, 8192, 8192): _c(64, 128, 8, "n", stages_w=8, wide=True, perm=True, lag=True, fuse=True, kglob=True),
}
#: The split-K winner at 1024 x 1024 x 16384 (four slices, a 32-row reduction launched as a programmatic
#: dependent).
SPLITK_BEST = splitk.ws_splitk_config(4, reduce_rows=32, pdl=True)
#: The stream-K form on the awkward shape: 128 x 128 tiles as full waves, a streamed tail taken in row order and split
#: tile by tile (each tail tile its own 11 workers), six stages, each consumer's whole tiles staged 128 columns at a
#: time in the buffer its tail pieces are staged in afterwards (``share``), the fix-up's sum written by hand at 4 rows
#: of a tail tile per block, launched as a programmatic dependent once every consumer has stored its tail piece.  The
#: fastest stream-K form in the four searches of the timing probe ``sk8`` (run on an H100: 1.8-2.1 us faster than
#: ``sk7``'s five-stage winner under the write flush, 0.4 us under the clean flush); on the H200 0.26-0.38 us faster
#: (probe ``sk8h``), and the winner of suite ``gemm.streamk_ws`` in both of its runs there since.
STREAMK_BEST = streamk.ws_config(128, 6, 128, -1, panel=0, fix_vec=True, fix_rows=4, tail_cols=64, share=True,
                                 pdl=True, pdl_at="end", aligned=True)
SPLITK_SHAPE = (1024, 1024, 16384)
STREAMK_SHAPE = (1536, 1536, 8192)
#: The shape whose rounds also time the bounds (the load path alone, same-byte readers).
BOUND_SHAPE = (16, 8192, 8192)


def build_thunks(sms: int) -> dict[str, Any]:
    """Label -> zero-argument compile of every kernel this suite times."""
    th: dict[str, Any] = {f"w4a16 {M}x{N}x{K}": (lambda s=(M, N, K), c=c: build(*s, 128, c))
                          for (M, N, K), c in W4A16_WINNERS.items()}
    th.update({f"w4a16 {M}x{N}x{K} challenger": (lambda s=(M, N, K), c=c: build(*s, 128, c))
               for (M, N, K), c in W4A16_CHALLENGERS.items()})
    th["w4a16 load path"] = lambda: build(*BOUND_SHAPE, 128, W4A16_WINNERS[BOUND_SHAPE], probe="loadonly")
    th["plain read"] = lambda: plain_read(read_rows(weight_bytes(*BOUND_SHAPE[1:])), sms)
    th["split-K"] = lambda: splitk.build_ws(*SPLITK_SHAPE, SPLITK_BEST, sms)
    th["stream-K"] = lambda: streamk.build_ws(*STREAMK_SHAPE, STREAMK_BEST, sms)
    th["data-parallel"] = lambda: build_tuned(*STREAMK_SHAPE, NO_SPLIT, sms)
    return th


def same_bytes_rows(nbytes: int, K: int) -> int:
    """Rows of an fp16 ``[rows, K]`` weight with (about) ``nbytes`` bytes."""
    if nbytes <= 0 or K <= 0:
        raise ValueError(f"nbytes and K must be positive, got {nbytes}, {K}")
    return max(1, round(nbytes / (2 * K)))


def gpu_suite(h: Any) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = sm_count(h)
    built = par_build(build_thunks(sms))
    h.note("flush compile", f"{len(built)} kernels", compile_s={k: round(v["compile_s"], 2) for k, v in built.items()},
           errors={k: v["error"] for k, v in built.items() if v["error"]})
    subjects: list[dict[str, Any]] = []  # name, fn, baselines, pricing, targets, meta

    for (M, N, K), cfg in W4A16_WINNERS.items():
        shape = f"{M}x{N}x{K}"
        kern = built[f"w4a16 {shape}"]["kernel"]
        if kern is None:
            h.skip(f"w4a16 {shape}", built[f"w4a16 {shape}"]["error"] or "not built")
            continue
        a, packed, scales, w16 = make_inputs(h, M, N, K, 128)
        wq = kernel_weights(packed, cfg)
        ref = torch.matmul(a.float(), w16.float().t())
        c = h.poisoned((M, N), torch.float16)
        kern(a, wq, scales, c)
        h.check(f"w4a16 {shape}", c, ref, rel_fro_err=rel_fro_err(c, ref), config=cfg, **gemm_tolerance(K))
        base: dict[str, Any] = {"cuBLAS fp16 weights": (lambda a=a, w=w16: torch.matmul(a, w.t()))}
        if (M, N, K) in W4A16_CHALLENGERS:  # checked like the winner, then timed in its rounds
            ccfg, ch = W4A16_CHALLENGERS[(M, N, K)], built[f"w4a16 {shape} challenger"]["kernel"]
            if ch is None:
                h.skip(f"w4a16 {shape} challenger", built[f"w4a16 {shape} challenger"]["error"] or "not built")
            else:
                cq, cc = kernel_weights(packed, ccfg), h.poisoned((M, N), torch.float16)
                ch(a, cq, scales, cc)
                chk = h.check(f"w4a16 {shape} challenger", cc, ref, rel_fro_err=rel_fro_err(cc, ref), config=ccfg,
                              **gemm_tolerance(K))
                if chk["ok"]:
                    base[f"challenger {label(ccfg)}"] = (lambda k=ch, a=a, w=cq, s=scales, c=cc: k(a, w, s, c))
        if (M, N, K) == BOUND_SHAPE:
            probe = built["w4a16 load path"]["kernel"]
            if probe is not None:
                cp = torch.empty_like(c)
                base["load path alone"] = (lambda k=probe, a=a, w=wq, s=scales, c=cp: k(a, w, s, c))
            nbytes = wq.numel() * wq.element_size() + scales.numel() * scales.element_size()
            reader = built["plain read"]["kernel"]
            if reader is not None and nbytes == weight_bytes(N, K):
                words = h.rand((nbytes // 2,), torch.float16).view(torch.int32).reshape(read_rows(nbytes), WORDS)
                run, sums = make_reader(words, sms, kernel=reader)
                run()
                torch.cuda.synchronize()
                if read_checksum(sums) == read_checksum(words):
                    base["plain read, same bytes"] = run
                else:
                    h.note("plain read", "the reader's sums missed torch's: left out of the rounds")
            elif reader is not None:
                h.note("plain read", f"the tensors hold {nbytes} bytes, the ledger {weight_bytes(N, K)}: left out")
            rows = same_bytes_rows(nbytes, K)
            ws = h.rand((rows, K), torch.float16)
            base[f"cuBLAS fp16, same bytes ({M}x{rows}x{K})"] = (lambda a=a, w=ws: torch.matmul(a, w.t()))
            src = h.rand((nbytes // 4,), torch.float16)  # half the bytes read, half written
            dst = torch.empty_like(src)
            base["torch copy, same bytes moved"] = (lambda s=src, d=dst: d.copy_(s))
            one = torch.zeros(1, device=a.device)
            base["one-element add"] = (lambda x=one: x.add_(1.0))
        w4 = roofline(w4a16_cost(M, N, K, 128))
        subjects.append(dict(name=f"w4a16 {shape}", fn=(lambda k=kern, a=a, w=wq, s=scales, c=c: k(a, w, s, c)),
                             baselines=base, flops=w4.cost.flops, bytes=w4.cost.bytes,
                             src=source_of(w4a16_cost), targets={"speedup:cuBLAS fp16 weights": W4_TARGETS.get(M, 1.0)},
                             meta=dict(config=cfg, label=label(cfg), shape=[M, N, K], floor_us=w4.bound_s * 1e6)))

    M, N, K = SPLITK_SHAPE
    if built["split-K"]["kernel"] is not None:
        a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        sp = splitk.make_ws_runner(a, b, SPLITK_BEST, sms)
        c = h.poisoned((M, N), torch.float16)
        sp(c)
        h.check(f"split-K {M}x{N}x{K}", c, ref, rel_fro_err=rel_fro_err(c, ref), config=SPLITK_BEST,
                **gemm_tolerance(K))
        flops, nbytes, src = gemm_cost(M, N, K, "fp16")
        subjects.append(dict(name=f"split-K {M}x{N}x{K}", fn=(lambda f=sp, c=c: f(c)),
                             baselines={"cuBLAS": (lambda a=a, b=b: torch.matmul(a, b.t()))}, flops=flops,
                             bytes=nbytes, src=src, targets={"speedup:cuBLAS": 1.0},
                             meta=dict(config=SPLITK_BEST, shape=[M, N, K])))

    M, N, K = STREAMK_SHAPE
    if built["stream-K"]["kernel"] is not None:
        a, b = h.rand((M, K), torch.float16), h.rand((N, K), torch.float16)
        ref = torch.matmul(a.float(), b.float().t())
        sk = streamk.make_ws_runner(a, b, STREAMK_BEST, sms)
        c = h.poisoned((M, N), torch.float16)
        sk(c)
        h.check(f"stream-K {M}x{N}x{K}", c, ref, rel_fro_err=rel_fro_err(c, ref), config=STREAMK_BEST,
                **gemm_tolerance(K))
        base = {"cuBLAS": (lambda a=a, b=b: torch.matmul(a, b.t()))}
        dp = built["data-parallel"]["kernel"]
        if dp is not None:
            c_dp = h.poisoned((M, N), torch.float16)
            dp(a, b, c_dp)
            h.check(f"data-parallel {M}x{N}x{K}", c_dp, ref, rel_fro_err=rel_fro_err(c_dp, ref), **gemm_tolerance(K))
            base["data-parallel"] = (lambda k=dp, a=a, b=b, c=c_dp: k(a, b, c))
        flops, nbytes, src = gemm_cost(M, N, K, "fp16")
        subjects.append(dict(name=f"stream-K {M}x{N}x{K}", fn=(lambda f=sk, c=c: f(c)), baselines=base,
                             flops=flops, bytes=nbytes, src=src, targets=STREAMK_TARGETS[STREAMK_SHAPE],
                             meta=dict(config=STREAMK_BEST, shape=[M, N, K])))

    saved = h.protocol.get("flush_mode", "write")
    try:
        for i, s in enumerate(subjects):  # both modes per product, their order swapped every other product
            for mode in (FLUSH_MODES if i % 2 == 0 else FLUSH_MODES[::-1]):
                h.protocol["flush_mode"] = mode
                h.bench(f"{mode} flush: {s['name']}", s["fn"], flops=s["flops"], bytes=s["bytes"],
                        ledger_source=s["src"], baselines=s["baselines"], targets=s["targets"], rounds=BENCH_ROUNDS,
                        flush_mode=mode, product=s["name"], **s["meta"])
    finally:
        h.protocol["flush_mode"] = saved
