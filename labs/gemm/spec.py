"""Grading spec of the GEMM lab (chapter 4).

Analytic parts are the chapter's exercises on the GEMM ledger, tile budgets, waves,
split-K and the timing protocol, on each student's own numbers (:data:`PARAMS`; the
defaults are the book's); every reference is computed by ``ledger`` from them at grading
time.  Kernel parts ask for a shared-memory tiled GEMM (K1) and a pipelined one (K2)
behind one interface (``C = A @ B.T``, fp16 in, fp32 accumulate, fp16 out), graded on a
GPU against cuBLAS in the same process and on the CPU for the structure of the sm_90a
code.
"""

from autograder.kernelgrade import kernel_parts, variant_params
from autograder.parts import LabSpec, Param, Part

BOUNDS = ("compute-bound", "memory-bound")
TILES = ((128, 128), (128, 256), (256, 256))
SPLITS = (1, 2, 4, 8)


def _g():
    from ledger import gemm

    return gemm


def _t():
    from ledger import tiles

    return tiles


def _q(gid, ex, pts, prompt, ref, unit, **kw):
    return Part(gid, ex, pts, "quantity", prompt, ref, unit=unit,
                stub=f'ANSWER["{gid}"] = {{"value": None, "unit": "{unit}"}}', **kw)


def _n(gid, ex, pts, prompt, ref, **kw):
    return Part(gid, ex, pts, "number", prompt, ref, stub=f'ANSWER["{gid}"] = None', **kw)


def _m(gid, ex, pts, prompt):
    return Part(gid, ex, pts, "manual", prompt)


def _e1_cost(v: dict):
    n = v["E1.N"]
    return _g().gemm_cost(n, n, n)


def _bound(v: dict) -> str:
    from ledger.cost import judge

    return judge(_e1_cost(v), v["E1.machine"]).bound


def _crossover(v: dict) -> float:
    from ledger.machines import get_machine

    return _g().square_crossover(get_machine(v["E1.machine"]).balance)


def _traffic_table(v: dict) -> dict:
    m, n, k = v["E2.M"], v["E2.N"], v["E2.K"]
    return {f"{bm}x{bn}": _g().tiled_traffic(m, n, k, bm, bn) / 1e6 for bm, bn in TILES}


def _e3_tile(v: dict):
    return _t().tile_decision(128, v["E3.bn"], v["E3.bk"], stages=v["E3.stages"], threads=128)


def _waves_table(v: dict) -> dict:
    out = {}
    for side in (8192, 4096):
        grid, w, fill = _g().grid_waves(side, side, v["E5.bm"], v["E5.bn"])
        out[str(side)] = {"grid": grid, "waves": w, "fill_pct": 100 * fill}
    return out


def _split_table(v: dict) -> dict:
    m, n = v["E6.M"], v["E6.N"]
    out = {}
    for s in SPLITS:
        grid, w, fill = _g().grid_waves(m, n, 128, 128, split=s)
        out[str(s)] = {"grid": grid, "waves": w, "fill_pct": 100 * fill,
                       "out_mib": _g().split_k_bytes(m, n, split=s, separate_reduce=False) / 2**20}
    return out


def _iterations(v: dict) -> dict:
    from ledger.protocol import DEFAULT_PROTOCOL

    warm, rep = DEFAULT_PROTOCOL.iterations(v["E10.us"] / 1000)
    return {"warmup": warm, "measured": rep}


STARTERS = {
    "k1_gemm": '''@tilelang.jit(target=TARGET)
def gemm_kernel(M, N, K, block_M=128, block_N=128, block_K=32, threads=128):

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_N, block_K), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
                # TODO：用 T.gemm 把 A_s · B_sᵀ 累加进 acc（B 按行存的是 C 的列）
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


ANSWER["k1_gemm"] = gemm_kernel''',
    "k2_gemm_pipe": '''@tilelang.jit(target=TARGET)
def gemm_pipelined_kernel(M, N, K, block_M=128, block_N=128, block_K=64, stages=3, threads=128):

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_N, block_K), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            # TODO：把下面的串行循环换成 T.Pipelined(…, num_stages=stages)，让第 k+1 块的搬运与第 k 块的乘加重叠；
            #       并补上乘加（同 K1）
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[bx * block_N, ko * block_K], B_s)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


ANSWER["k2_gemm_pipe"] = gemm_pipelined_kernel''',
}


def _parts() -> tuple[Part, ...]:
    g, t = _g, _t
    return (
        # E1 ------------------------------------------------------------------
        _q("e1_a", "E1", 1, "{{E1.N}}³ fp16 GEMM 的运算量", lambda v: _e1_cost(v).flops / 1e9, "GFLOP"),
        _q("e1_b", "E1", 1, "最少访存量", lambda v: _e1_cost(v).bytes / 1e6, "MB"),
        _q("e1_c", "E1", 1, "算术强度", lambda v: g().gemm_ai(v["E1.N"], v["E1.N"], v["E1.N"]), "FLOP/B"),
        Part("e1_d", "E1", 1, "choice", "按 {{E1.machine}} 它受什么限制", _bound, options=BOUNDS,
             stub='ANSWER["e1_d"] = None  # "compute-bound" 或 "memory-bound"'),
        _n("e1_e", "E1", 1, "方阵边长小到多少时判断翻转（{{E1.machine}}，fp16）", _crossover),
        # E2 ------------------------------------------------------------------
        Part("e2_a", "E2", 2, "table", "{{E2.M}}×{{E2.N}}×{{E2.K}}、零复用假设下三种输出块的显存流量（MB）", _traffic_table,
             stub='ANSWER["e2_a"] = {"128x128": None, "128x256": None, "256x256": None}  # MB'),
        _q("e2_b", "E2", 1, "朴素写法（每个输出元素沿 K 读 A、B）的操作数字节",
           lambda v: g().naive_traffic(v["E2.M"], v["E2.N"], v["E2.K"]) / 1e9, "GB"),
        _m("e2_c", "E2", 1, "真实流量为什么低于零复用估计"),
        # E3 ------------------------------------------------------------------
        _q("e3_a", "E3", 1, "128×{{E3.bn}}×{{E3.bk}} fp16 块每级流水的共享内存",
           lambda v: t().smem_per_stage(128, v["E3.bn"], v["E3.bk"]) / 1024, "KiB"),
        _q("e3_b", "E3", 1, "{{E3.stages}} 级合计", lambda v: t().smem_total(128, v["E3.bn"], v["E3.bk"], v["E3.stages"]) / 1024,
           "KiB"),
        _n("e3_c", "E3", 1, "只看共享内存，每个 SM 能驻留几个 block", lambda v: _e3_tile(v).blocks_by_smem),
        _n("e3_d", "E3", 1, "128 个线程时每个线程的累加器寄存器数", lambda v: t().accumulator_per_thread(128, v["E3.bn"], 128)),
        _m("e3_e", "E3", 1, "与「占满线程槽位」的寄存器上限相比说明了什么"),
        # E4 ------------------------------------------------------------------
        _q("e4_a", "E4", 1, "128×256×64、{{E4.stages}} 级流水的共享内存合计",
           lambda v: t().tile_decision(128, 256, 64, stages=v["E4.stages"], threads=256).smem_total / 1024, "KiB"),
        _n("e4_b", "E4", 1, "每个 SM 能驻留几个 block",
           lambda v: t().tile_decision(128, 256, 64, stages=v["E4.stages"], threads=256).blocks_per_sm),
        _q("e4_c", "E4", 1, "fp8 版 128×256×128、{{E4.stages}} 级流水的共享内存",
           lambda v: t().smem_total(128, 256, 128, v["E4.stages"], 1) / 1024, "KiB"),
        # E5 ------------------------------------------------------------------
        Part("e5_a", "E5", 2, "table", "{{E5.bm}}×{{E5.bn}} 的块、132 个 SM：8192² 与 4096² 的网格、波数、末波填充（%）",
             _waves_table, rel_tol=1e-3,
             stub='ANSWER["e5_a"] = {"8192": {"grid": None, "waves": None, "fill_pct": None},\n'
                  '                  "4096": {"grid": None, "waves": None, "fill_pct": None}}'),
        _m("e5_b", "E5", 1, "两者的尾波损失哪个更重"),
        # E6 ------------------------------------------------------------------
        Part("e6_a", "E6", 3, "table", "{{E6.M}}×{{E6.N}}×16384、128×128 的块：split = 1/2/4/8 的网格、波数、末波填充（%）与输出侧 fp32 字节（MiB，原子加）",
             _split_table, rel_tol=1e-3,
             stub='ANSWER["e6_a"] = {s: {"grid": None, "waves": None, "fill_pct": None, "out_mib": None}\n'
                  '                  for s in ("1", "2", "4", "8")}'),
        _m("e6_b", "E6", 2, "实测加速比随 split 增大离波数模型越来越远的三个原因"),
        # E10 -----------------------------------------------------------------
        Part("e10_a", "E10", 1, "table", "默认协议下估计 {{E10.us}} µs 的 kernel 预热与测量的次数", _iterations,
             rel_tol=0.0, stub='ANSWER["e10_a"] = {"warmup": None, "measured": None}'),
        _m("e10_b", "E10", 1, "一边冲刷 L2、另一边不冲刷时哪一边显得更快；哪些形状受影响最大"),
        # kernels -------------------------------------------------------------
        *kernel_parts("k1_gemm", "K1", "gemm_shared", {"correct": 4, "speed": 3, "structure": 1},
                      "共享内存分块 GEMM", STARTERS["k1_gemm"]),
        *kernel_parts("k2_gemm_pipe", "K2", "gemm_pipelined", {"correct": 4, "speed": 3, "structure": 2},
                      "流水化 GEMM", STARTERS["k2_gemm_pipe"]),
    )


# Per-student numbers: the book's number is the default (the instructor notebook, nbgrader and
# `grade --common` use it); no pool holds the book's number.  E2's three tile shapes, E5's two
# sides and E6's four splits are the rows of the tables (their keys), so they stay fixed.
PARAMS = (
    Param("E1.N", 2048, (512, 768, 1536, 3072, 4096), "方阵边长"),
    Param("E1.machine", "h100-spec", ("h200-spec", "h200-calibrated", "a100-sxm4-80gb-spec"), "机器（`ledger.machines`）"),
    Param("E2.M", 4096, (2048, 3072, 6144, 8192), "M"),
    Param("E2.N", 4096, (2048, 3072, 6144, 8192), "N"),
    Param("E2.K", 4096, (2048, 3072, 6144, 8192), "K"),
    Param("E3.bn", 128, (64, 192), "块的 N 方向（block_N）"),
    Param("E3.bk", 32, (16, 64), "块的 K 方向（block_K）"),
    Param("E3.stages", 3, (2, 4), "流水级数"),
    Param("E4.stages", 4, (2, 3), "流水级数"),
    Param("E5.bm", 128, (64, 256), "输出块的行数"),
    Param("E5.bn", 256, (128, 192), "输出块的列数"),
    Param("E6.M", 1024, (512, 768, 1536, 2048), "M"),
    Param("E6.N", 1024, (512, 768, 1536, 2048), "N"),
    Param("E10.us", 20, (5, 40, 250, 1000), "估计的 kernel 耗时（µs）"),
    # the kernel exercises' variant shapes (drawn, shown in P, signed in the tag)
    *variant_params("K1", "gemm_shared"), *variant_params("K2", "gemm_pipelined"),
)

SPEC = LabSpec(name="gemm", title="实验 · GEMM", parts=_parts(), params=PARAMS, cell_timeout=30.0,
               notebook_timeout=120.0, memory_mb=2048)
