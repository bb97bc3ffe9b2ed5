"""Grading spec of the primer lab (chapter 2: TileLang 入门).

Analytic parts E1-E4 and E8 are the chapter's exercises of the same numbers (the launch, memory scopes, the row
reduction's bytes and on-chip budget, the long-rows split); every reference is computed at
grading time by :mod:`ledger.primer` from the student's own numbers (:data:`PARAMS`).
Kernel parts K1-K3 ask for the chapter's three kernels behind a fixed interface
(:mod:`autograder.kernelgrade.tasks`: ``primer_copy``, ``primer_scale``,
``primer_row_sum``), graded like the other kernel labs: structure on the CPU, correctness
and speed on a GPU, each with the student's own variant shape.  Points and grade_ids come
from this file only.
"""

from autograder.kernelgrade import kernel_parts, variant_params
from autograder.parts import LabSpec, Param, Part

H200 = "h200-calibrated"


def _L():
    from ledger import primer

    return primer


def _q(gid, ex, pts, prompt, ref, unit, **kw):
    return Part(gid, ex, pts, "quantity", prompt, ref, unit=unit,
                stub=f'ANSWER["{gid}"] = {{"value": None, "unit": "{unit}"}}', **kw)


def _n(gid, ex, pts, prompt, ref, **kw):
    return Part(gid, ex, pts, "number", prompt, ref, stub=f'ANSWER["{gid}"] = None', **kw)


def _m(gid, ex, pts, prompt):
    return Part(gid, ex, pts, "manual", prompt)


SCOPES = ("global", "shared", "fragment", "local")
#: E2: where each piece of data lives (the chapter's answer; the reasons are graded by hand)
E2_ITEMS = {"row_partial_sums": "fragment", "gemm_b_tile": "shared", "gemm_accumulator": "fragment",
            "mirror_row": "shared", "thread_temporaries": "local"}

#: E4's block: 128 threads, fp16 (the tile shape and the stages are the student's)
E4_THREADS = 128
#: E8's long rows (the chapter's shape and tile)
LONG_M, LONG_N, LONG_BLK_M, LONG_BLK_N = 256, 262144, 64, 128

PARAMS = (
    Param("E1.N", 1_000_003, (250_001, 500_009, 777_777, 1_234_567, 2_000_003, 3_141_593), "拷贝的元素个数"),
    Param("E1.threads", 256, (128, 512), "每个 block 的线程数"),
    Param("E3.M", 16384, (4096, 8192, 32768, 65536), "行数"),
    Param("E3.N", 4096, (2048, 8192, 16384), "每行的元素个数"),
    Param("E4.blk_m", 64, (32, 128), "tile 的行数"),
    Param("E4.blk_n", 256, (128, 512), "tile 的列数"),
    Param("E4.stages", 3, (2, 4), "流水级数"),
    # the kernel exercises' variant shapes
    *variant_params("K1", "primer_copy"),
    *variant_params("K2", "primer_scale"),
    *variant_params("K3", "primer_row_sum"),
)


def _launch(v, per_thread=1):
    return _L().launch_shape(v["E1.N"], v["E1.threads"], per_thread)


def _rowsum_fp32(v):
    return _L().row_sum_cost(v["E3.M"], v["E3.N"], "float32")


def _tile(v):
    return _L().row_sum_tile(v["E4.blk_m"], v["E4.blk_n"], E4_THREADS, v["E4.stages"], "float16")


def _long_rows():
    return -(-LONG_M // LONG_BLK_M)


def _long_split():
    return _L().split_for(LONG_M, LONG_BLK_M, LONG_N // LONG_BLK_N)


STARTERS = {
    "k1_copy": '''@tilelang.jit(target=TARGET)
def copy_kernel(N, dtype):
    threads = 256

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        # 起点：只启动了 1 个 block，只有前 threads 个元素被拷贝。
        # TODO：让网格覆盖全部 N 个元素（T.ceildiv），N 不是 threads 的整数倍时也要对
        with T.Kernel(1, threads=threads) as bx:
            for i in T.Parallel(threads):
                Y[bx * threads + i] = X[bx * threads + i]

    return main


ANSWER["k1_copy"] = copy_kernel''',
    "k2_scale": '''@tilelang.jit(target=TARGET)
def scale_kernel(N, dtype):
    threads = 256

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), s: T.float32):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            # 起点：每个线程一个元素（对，但每次访存只有 2 字节）。
            # TODO：每个线程负责 npt 个连续元素（T.Parallel(threads, npt)），fp16 下每次访存 16 字节
            for i in T.Parallel(threads):
                Y[bx * threads + i] = T.cast(T.cast(X[bx * threads + i], "float32") * s, dtype)

    return main


ANSWER["k2_scale"] = scale_kernel''',
    "k3_row_sum": '''@tilelang.jit(target=TARGET)
def row_sum_kernel(M, N, dtype):
    threads = 128

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, threads), threads=threads) as bx:
            # 起点：每个线程串行地加完一整行（对，但访存不合并，也没有块内归约）。
            # TODO：列方向分块，T.copy 进共享内存（放在 T.Pipelined 里），再拷进 fragment 用 T.reduce_sum
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            if bx * threads + tx < M:
                for j in T.serial(N):
                    acc[0] += T.cast(X[bx * threads + tx, j], "float32")
                Y[bx * threads + tx] = acc[0]

    return main


ANSWER["k3_row_sum"] = row_sum_kernel''',
}


def _parts() -> tuple[Part, ...]:
    L = _L
    return (
        # E1 the launch --------------------------------------------------------
        _n("e1_a", "E1", 1, "拷贝 kernel 的网格有多少个 block", lambda v: _launch(v).blocks, rel_tol=0),
        _n("e1_b", "E1", 1, "最后一个 block 有多少个线程没有元素", lambda v: _launch(v).idle_threads_last_block,
           rel_tol=0),
        _n("e1_c", "E1", 1, "换成每线程 8 个元素的缩放 kernel，网格有多少个 block", lambda v: _launch(v, 8).blocks,
           rel_tol=0),
        _m("e1_d", "E1", 1, "边界落在某个线程的 8 个元素中间时，缩放 kernel 的生成代码会怎样"),
        # E2 memory scopes -----------------------------------------------------
        Part("e2_a", "E2", 2, "table", "五样数据各放在哪一级存储", lambda v: dict(E2_ITEMS), options=SCOPES,
             stub='ANSWER["e2_a"] = {' + ", ".join(f'"{k}": None' for k in E2_ITEMS) + "}"),
        _m("e2_b", "E2", 1, "逐项说明理由"),
        # E3 the row sum in fp32 -------------------------------------------------
        _q("e3_a", "E3", 1, "fp32 输入的行求和，账本字节", lambda v: _rowsum_fp32(v).bytes / 1e6, "MB"),
        _q("e3_b", "E3", 1, "按 H200 标定带宽的时间下界", lambda v: _rowsum_fp32(v).lower_bound(H200) * 1e6, "us"),
        _q("e3_c", "E3", 1, "它的算术强度", lambda v: _rowsum_fp32(v).intensity, "FLOP/B"),
        _m("e3_d", "E3", 1, "kernel 的写法为什么不用改；哪一条约束值得重新检查"),
        # E4 the on-chip budget --------------------------------------------------
        _q("e4_a", "E4", 1, "这个 tile 与流水级数要的共享内存", lambda v: _tile(v).smem_bytes / 1024, "KiB"),
        _n("e4_b", "E4", 1, "每个线程平均持有多少个 fp32 值", lambda v: _tile(v).values_per_thread),
        _n("e4_c", "E4", 1, "只看共享内存，一个 SM 能驻留几个 block（放不下写 0）", lambda v: _tile(v).blocks_by_smem, rel_tol=0),
        # E8 long rows -----------------------------------------------------------
        _n("e8_a", "E8", 1, "256×262144 不切分时网格有几个 block", lambda v: _long_rows(), rel_tol=0),
        _q("e8_b", "E8", 1, "有活干的 SM 的比例", lambda v: L().grid_fill(_long_rows()) * 100, "%"),
        _n("e8_c", "E8", 1, "账本选的 split", lambda v: _long_split(), rel_tol=0),
        _n("e8_d", "E8", 1, "切分后一共多少次 fp32 原子加", lambda v: LONG_M * _long_split(), rel_tol=0),
        _m("e8_e", "E8", 2, "切分带来的两个正确性后果，启动函数替你处理了哪一个"),
        # kernels ----------------------------------------------------------------
        *kernel_parts("k1_copy", "K1", "primer_copy", {"correct": 3, "speed": 1}, "拷贝 kernel", STARTERS["k1_copy"]),
        *kernel_parts("k2_scale", "K2", "primer_scale", {"correct": 3, "speed": 2, "structure": 1},
                      "向量化的缩放", STARTERS["k2_scale"]),
        *kernel_parts("k3_row_sum", "K3", "primer_row_sum", {"correct": 3, "speed": 2, "structure": 1},
                      "按行求和", STARTERS["k3_row_sum"]),
    )


SPEC = LabSpec(name="primer", title="实验 · TileLang 入门（第 2 章）", parts=_parts(), params=PARAMS,
               cell_timeout=30.0, notebook_timeout=120.0, memory_mb=2048)
