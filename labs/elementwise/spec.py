"""Grading spec of the elementwise lab (chapter 3: elementwise, normalisation, RoPE).

Analytic parts E1-E8 are the chapter's exercises on each student's own numbers
(:data:`PARAMS`; the defaults are the book's); every reference is computed at grading
time by ``ledger`` from them (E7, the same for everyone, by compiling the course's ``scale_cast`` kernel for sm_90a and
reading the generated code).  Kernel parts K1-K4 ask for TileLang kernels behind a fixed
interface (:mod:`autograder.kernelgrade.tasks`): graded for correctness and speed on a
GPU, for structure on the CPU; each has a per-student variant shape (``K1.N`` ...,
:data:`PARAMS`).  A1-A2 ask for the Ascend versions of K1 and K2, lowered on the CPU.
Points and grade_ids come from this file only.
"""

import functools
import re

from autograder.kernelgrade import ascend_part, kernel_parts, variant_params
from autograder.parts import LabSpec, Param, Part

H200 = "h200-calibrated"


def _F():
    from ledger import fusion

    return fusion


def _q(gid, ex, pts, prompt, ref, unit, **kw):
    return Part(gid, ex, pts, "quantity", prompt, ref, unit=unit,
                stub=f'ANSWER["{gid}"] = {{"value": None, "unit": "{unit}"}}', **kw)


def _n(gid, ex, pts, prompt, ref, **kw):
    return Part(gid, ex, pts, "number", prompt, ref, stub=f'ANSWER["{gid}"] = None', **kw)


def _m(gid, ex, pts, prompt):
    return Part(gid, ex, pts, "manual", prompt)


def _add_norm_plans(v: dict):
    """E8: residual add then RMSNorm, op by op and fused (the student's M x N and dtype), as ledger plans."""
    F = _F()
    shape, dt = (v["E8.M"], v["E8.N"]), v["E8.dtype"]
    x, r, h, y = (F.Tensor(k, shape, dt) for k in ("x", "r", "h", "y"))
    w = F.Tensor("w", (shape[1],), dt)
    split = F.Plan("op by op", (F.Step("h = x + r", (x, r), (h,), x.elements),
                                F.Step("rmsnorm", (h, w), (y,), 4 * x.elements)))
    fused = F.Plan("fused", (F.Step("fused", (x, r, w), (h, y), 5 * x.elements),))
    return split, fused


def _scale_add(v: dict):
    return _F().scale_add(v["E1.N"], v["E1.dtype"])


def _rms(v: dict):
    return _F().rmsnorm_cost(v["E2.M"], v["E2.N"], v["E2.dtype"])


def _frag_regs(v: dict, blk_m: int) -> float:
    """fp32 registers per thread of a (blk_m, N) fp32 fragment spread over the block's threads."""
    return _F().fragment_kib((blk_m, v["E3.N"]), "fp32") * 1024 / 4 / v["E3.threads"]


def _rope(v: dict, rope_dim: int):
    return _F().rope_cost(v["E4.T"], v["E4.H"], v["E4.D"], rope_dim=rope_dim, dtype="fp16")


def _fp8(v: dict, group=None):
    return _F().rmsnorm_rope_fp8(v["E5.M"], v["E5.N"], group=group)


def _quant(v: dict):
    return _F().fp8_quant_cost(v["E6.M"], v["E6.N"], "bf16", group=v["E6.group"])


@functools.lru_cache(maxsize=None)
def scale_cast_source() -> str:
    """E7: the sm_90a source of the course's fp32 -> fp16 scale-and-cast kernel (compiled on the CPU)."""
    from autograder.kernelgrade.measure import course_kernel

    return course_kernel("elementwise", "scale_cast")(1 << 16).get_kernel_source()


def _e7(what: str) -> str:
    from autograder.kernelgrade.structure import vector_types

    src = scale_cast_source()
    params = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?\w+\s*\(([^)]*)\)", src).group(1)
    x = re.search(r"float\s*\*\s*(?:__restrict__\s+)?(\w+)", params).group(1)
    y = re.search(r"half_t\s*\*\s*(?:__restrict__\s+)?(\w+)", params).group(1)
    if what == "load":
        return max(vector_types(src, x)["load"], key=lambda t: _width(t))
    if what == "store":
        return max(vector_types(src, y)["store"], key=lambda t: _width(t))
    calls = sorted(set(re.findall(r"\b(__float2\w*half\w*|__half\w*2float\w*)\s*\(", src)))
    return calls[0]


def _width(t: str) -> int:
    from autograder.kernelgrade.structure import TYPE_BYTES

    return TYPE_BYTES.get(t, 0)


VEC_TYPES = ("float", "float2", "float4", "half_t", "uint1", "uint2", "uint4")
CONVERSIONS = ("__float2half_rn", "__float22half2_rn", "__half22float2", "__float2half")


STARTERS = {
    "k1_add": '''@tilelang.jit(target=TARGET)
def add_kernel(N, dtype):
    threads = 256

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            # 起点：每个线程每次只搬一个元素。改成每个线程负责若干个连续元素，让访存变成 16 字节一次
            for i in T.Parallel(threads):
                C[bx * threads + i] = A[bx * threads + i] + B[bx * threads + i]

    return main


ANSWER["k1_add"] = add_kernel''',
    "k2_rmsnorm": '''@tilelang.jit(target=TARGET)
def rmsnorm_kernel(M, N, dtype, blk_m=2, threads=256):
    NP = (N + 255) // 256 * 256  # 行长补齐到 256 的倍数（片上补零，不影响平方和）

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            x = T.alloc_fragment((blk_m, NP), dtype)
            w = T.alloc_fragment((NP,), dtype)
            T.copy(X[bx * blk_m, 0], x)
            T.copy(W[0], w)
            # TODO：在 fp32 中求每行的平方和（T.alloc_fragment + T.reduce_sum），
            #       算 rsqrt(平方和 / N + 1e-6)，再乘以 x 与 w，写回 x
            T.copy(x, Y[bx * blk_m, 0])

    return main


ANSWER["k2_rmsnorm"] = rmsnorm_kernel''',
    "k3_rope": '''@tilelang.jit(target=TARGET)
def rope_kernel(S, H, D, rope_dim, dtype, threads=256):
    start, half = D - rope_dim, rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((S, H, D), dtype), Cos: T.Tensor((S, half), "float32"),
             Sin: T.Tensor((S, half), "float32"), Y: T.Tensor((S, H, D), dtype)):
        with T.Kernel(S, threads=threads) as s:
            for h, j in T.Parallel(H, D):
                # TODO：j >= start 的通道要旋转：与 start + (j - start ± half) 配对，
                #       乘 Cos/Sin 的第 (j - start) % half 列；其余通道原样拷贝
                Y[s, h, j] = X[s, h, j]

    return main


ANSWER["k3_rope"] = rope_kernel''',
    "k4_fused": '''@tilelang.jit(target=TARGET)
def rmsnorm_rope_kernel(M, N, rope_dim, dtype, threads=256):
    half = rope_dim // 2

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Cos: T.Tensor((M, half), "float32"),
             Sin: T.Tensor((M, half), "float32"), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            x = T.alloc_fragment((1, N), dtype)
            T.copy(X[bx, 0], x)
            # TODO：RMSNorm（结果舍入到 dtype），再对最后 rope_dim 个通道做 NeoX 旋转；
            #       配对的另一半通道在别的线程手里：先经共享内存交换（T.alloc_shared）
            T.copy(x, Y[bx, 0])

    return main


ANSWER["k4_fused"] = rmsnorm_rope_kernel''',
    "a1_add_ascend": '''def ascend_add(n, tile=8192, num_blocks=64, threads=1024):
    steps = n // (tile * num_blocks)

    @TA.prim_func
    def main(A: TA.Tensor((n,), TA.float32), B: TA.Tensor((n,), TA.float32), C: TA.Tensor((n,), TA.float32)):
        with TA.Kernel(num_blocks) as bx:
            a = TA.alloc_shared((tile,), TA.float32)  # UB
            b = TA.alloc_shared((tile,), TA.float32)
            c = TA.alloc_shared((tile,), TA.float32)
            for step in TA.serial(steps):  # TODO：改成 TA.Pipelined(steps, num_stages=2)，让搬运与计算重叠
                base = (step * num_blocks + bx) * tile
                TA.copy(A[base : base + tile], a)
                TA.copy(B[base : base + tile], b)
                with TA.SimtVF(threads=threads):
                    for i in TA.Parallel(tile):
                        c[i] = a[i] + b[i]
                TA.copy(c, C[base : base + tile])

    return main


ANSWER["a1_add_ascend"] = ascend_add''',
    "a2_rms_ascend": '''def ascend_rmsnorm(tokens, d, rows=4, num_blocks=64, threads=1024, eps=1e-6):
    steps = tokens // (rows * num_blocks)

    @TA.prim_func
    def main(X: TA.Tensor((tokens, d), TA.bfloat16), W: TA.Tensor((d,), TA.bfloat16),
             Y: TA.Tensor((tokens, d), TA.bfloat16)):
        with TA.Kernel(num_blocks) as bx:
            w_ub = TA.alloc_shared((d,), TA.bfloat16)
            x_ub = TA.alloc_shared((rows, d), TA.bfloat16)
            y_ub = TA.alloc_shared((rows, d), TA.bfloat16)
            TA.copy(W[0:d], w_ub)
            for step in TA.Pipelined(steps, num_stages=2):
                r0 = (step * num_blocks + bx) * rows
                TA.copy(X[r0 : r0 + rows, 0:d], x_ub)
                # TODO：在 TA.SimtVF(threads=threads) 里用 fp32 fragment 求平方和（TA.reduce_sum），
                #       把 x * rsqrt(平方和 / d + eps) * w 写进 y_ub
                TA.copy(x_ub, Y[r0 : r0 + rows, 0:d])

    return main


ANSWER["a2_rms_ascend"] = ascend_rmsnorm''',
}


def _parts() -> tuple[Part, ...]:
    F = _F
    return (
        # E1 ------------------------------------------------------------------
        _q("e1_a", "E1", 1, "{{E1.dtype}} 的 scale+add：逐算子的访存量", lambda v: _scale_add(v).unfused.bytes / 1e6, "MB"),
        _q("e1_b", "E1", 1, "{{E1.dtype}} 的 scale+add：融合后的访存量", lambda v: _scale_add(v).fused.bytes / 1e6, "MB"),
        _n("e1_c", "E1", 1, "逐算子与融合的字节比", lambda v: _scale_add(v).ratio),
        _m("e1_d", "E1", 1, "换成 {{E1.dtype}} 后比值为什么不变"),
        # E2 ------------------------------------------------------------------
        _q("e2_a", "E2", 1, "{{E2.M}}×{{E2.N}} {{E2.dtype}} 融合 RMSNorm 的最少访存量", lambda v: _rms(v).bytes / 1e6, "MB"),
        _q("e2_b", "E2", 1, "按 H200 标定带宽的时间下界", lambda v: _rms(v).lower_bound(H200) * 1e6, "us"),
        _m("e2_c", "E2", 1, "标定带宽与同一次运行测得的拷贝带宽为什么不是一个数；各自适合当哪种尺子"),
        # E3 ------------------------------------------------------------------
        _q("e3_a", "E3", 1, "blk_m={{E3.blk_m}}、行长 {{E3.N}} 的 fp32 平方 fragment 大小",
           lambda v: F().fragment_kib((v["E3.blk_m"], v["E3.N"]), "fp32"), "KiB"),
        _n("e3_b", "E3", 1, "摊到 {{E3.threads}} 个线程，每个线程几个 fp32 寄存器", lambda v: _frag_regs(v, v["E3.blk_m"])),
        _n("e3_c", "E3", 1, "blk_m 翻倍到 {{E3.blk_m2}} 时每个线程几个", lambda v: _frag_regs(v, v["E3.blk_m2"])),
        _m("e3_d", "E3", 1, "寄存器变多为什么会让这个访存受限的 kernel 变慢"),
        # E4 ------------------------------------------------------------------
        _q("e4_a", "E4", 1, "RoPE（{{E4.T}} token × {{E4.H}} head × {{E4.D}}）只转 {{E4.R}} 个通道的访存量",
           lambda v: _rope(v, v["E4.R"]).bytes / 1e6, "MB"),
        _q("e4_b", "E4", 1, "旋转全部 {{E4.D}} 个通道的访存量", lambda v: _rope(v, v["E4.D"]).bytes / 1e6, "MB"),
        _m("e4_c", "E4", 1, "partial RoPE 对这个 kernel 的时间有什么影响；怎样改才会明显变快"),
        # E5 ------------------------------------------------------------------
        _n("e5_a", "E5", 1, "RMSNorm+RoPE+FP8，每 token 一个 scale：逐 kernel 与融合的字节比",
           lambda v: _fp8(v).ratio, rel_tol=2e-3),
        _n("e5_b", "E5", 1, "每 {{E5.group}} 个通道一个 scale 时的字节比", lambda v: _fp8(v, v["E5.group"]).ratio,
           rel_tol=2e-3),
        _q("e5_c", "E5", 1, "按组的版本多写出的 scale 字节",
           lambda v: (_fp8(v, v["E5.group"]).fused.bytes - _fp8(v).fused.bytes) / 1e6, "MB"),
        # E6 ------------------------------------------------------------------
        _q("e6_a", "E6", 1, "{{E6.M}}×{{E6.N}} bf16 按组 {{E6.group}} 的 FP8 量化：访存量", lambda v: _quant(v).bytes / 1e6, "MB"),
        _q("e6_b", "E6", 1, "它的算术强度", lambda v: _quant(v).intensity, "FLOP/B"),
        _m("e6_c", "E6", 2, "为什么把 x 看成 (M, N // group, group)；改成 amax[g] = T.max(...) 的循环会怎样"),
        # E7 ------------------------------------------------------------------
        Part("e7_a", "E7", 1, "choice", "scale_cast 读 x 用的向量类型", lambda v: _e7("load"), options=VEC_TYPES,
             stub='ANSWER["e7_a"] = None  # 从 ' + repr(VEC_TYPES) + " 中选一个"),
        Part("e7_b", "E7", 1, "choice", "fp32 → fp16 的转换函数", lambda v: _e7("convert"), options=CONVERSIONS,
             stub='ANSWER["e7_b"] = None  # 从 ' + repr(CONVERSIONS) + " 中选一个"),
        Part("e7_c", "E7", 1, "choice", "写 y 用的向量类型", lambda v: _e7("store"), options=VEC_TYPES,
             stub='ANSWER["e7_c"] = None'),
        _m("e7_d", "E7", 1, "npt 改成 4 后循环结构怎样变化；向量宽度的上限由哪一侧决定"),
        # E8 ------------------------------------------------------------------
        _q("e8_a", "E8", 1, "残差相加 + RMSNorm，逐算子的访存量（{{E8.M}}×{{E8.N}} {{E8.dtype}}）",
           lambda v: _add_norm_plans(v)[0].bytes / 1e6, "MB"),
        _q("e8_b", "E8", 1, "融合后的访存量", lambda v: _add_norm_plans(v)[1].bytes / 1e6, "MB"),
        _n("e8_c", "E8", 1, "字节比", lambda v: _add_norm_plans(v)[0].bytes / _add_norm_plans(v)[1].bytes),
        _m("e8_d", "E8", 2, "数据放共享内存还是 fragment，为什么；这个融合的收益为什么远小于 RMSNorm 本身的融合"),
        # kernels -------------------------------------------------------------
        *kernel_parts("k1_add", "K1", "ew_add", {"correct": 3, "speed": 2, "structure": 1},
                      "向量化的逐元素加法", STARTERS["k1_add"]),
        *kernel_parts("k2_rmsnorm", "K2", "rmsnorm", {"correct": 3, "speed": 2, "structure": 1},
                      "按行 RMSNorm", STARTERS["k2_rmsnorm"]),
        *kernel_parts("k3_rope", "K3", "rope", {"correct": 3, "speed": 2, "structure": 1},
                      "NeoX RoPE", STARTERS["k3_rope"]),
        *kernel_parts("k4_fused", "K4", "rmsnorm_rope", {"correct": 3, "speed": 2, "structure": 1},
                      "融合 RMSNorm + RoPE", STARTERS["k4_fused"]),
        ascend_part("a1_add_ascend", "A1", "ascend_add", 2, "昇腾向量加法", STARTERS["a1_add_ascend"]),
        ascend_part("a2_rms_ascend", "A2", "ascend_rmsnorm", 2, "昇腾 RMSNorm", STARTERS["a2_rms_ascend"]),
    )


#: per-student variant shapes of the kernel exercises (drawn, shown in P, signed in the tag)
KERNELS = (("K1", "ew_add"), ("K2", "rmsnorm"), ("K3", "rope"), ("K4", "rmsnorm_rope"))

# Per-student numbers of the calculation parts: the book's number is the default (the instructor
# notebook, nbgrader and `grade --common` use it); no pool holds the book's number.  E7 stays
# fixed: its answers are facts about the code the compiler emits for the course's kernel.
PARAMS = (
    Param("E1.N", 2 ** 20, (2 ** 18, 2 ** 21, 2 ** 22, 3 * 2 ** 20), "scale+add 的元素个数"),
    Param("E1.dtype", "fp16", ("bf16", "fp8"), "换成的数据类型"),
    Param("E2.M", 16384, (4096, 8192, 32768), "RMSNorm 的行数"),
    Param("E2.N", 4096, (2048, 5120, 8192), "RMSNorm 的行长"),
    Param("E2.dtype", "fp16", ("bf16", "fp32"), "RMSNorm 的数据类型"),
    Param("E3.blk_m", 2, (1, 4), "每个线程块的行数 blk_m"),
    Param("E3.N", 4096, (2048, 3072, 8192), "行长"),
    Param("E3.threads", 256, (128, 512), "每个线程块的线程数"),
    Param("E4.T", 16384, (4096, 8192, 32768), "token 数"),
    Param("E4.H", 32, (8, 16, 64), "head 数"),
    Param("E4.D", 128, (64, 256), "head_dim"),
    Param("E5.M", 4096, (2048, 8192, 16384), "token 数（行数）"),
    Param("E5.N", 4096, (2048, 6144, 8192), "行长"),
    Param("E5.group", 128, (64, 256), "按组量化的组大小"),
    Param("E6.M", 16384, (4096, 8192, 32768), "行数"),
    Param("E6.N", 4096, (2048, 8192, 14336), "行长"),
    Param("E6.group", 128, (64, 256), "组大小"),
    Param("E8.M", 4096, (2048, 8192, 16384), "行数"),
    Param("E8.N", 4096, (2048, 5120, 8192), "行长"),
    Param("E8.dtype", "fp16", ("bf16", "fp32"), "数据类型"),
    *(p for ex, task in KERNELS for p in variant_params(ex, task)),
)


def _derive(v: dict) -> dict:
    return {"E3.blk_m2": 2 * v["E3.blk_m"], "E4.R": v["E4.D"] // 2}


SPEC = LabSpec(name="elementwise", title="实验 · 逐元素、归一化与 RoPE", parts=_parts(), params=PARAMS,
               derive=_derive,
               cell_timeout=30.0, notebook_timeout=120.0, memory_mb=2048)
