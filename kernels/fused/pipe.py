"""Schedule "pipe": persistent blocks whose rows a TMA ring brings in ahead of time."""
import tilelang
import tilelang.language as T

from kernels.common import SMS, TARGET
from kernels.fused.fragment import _rms_rope_quant
from kernels.quant import FP8

ACC = "float32"


# The schedules above hold a block's rows only in registers, so the bytes in flight per
# SM are (resident blocks) x (rows per block): about 48-64 KB at the registers these
# kernels need, and the next rows are not requested before the current ones are done.
# Here one block per SM walks the tokens ``bx, bx + grid, ...`` in a ``T.Pipelined``
# loop: on sm_90a tilelang turns it into a warp-specialized kernel -- one producer warp
# group issues TMA loads of the next ``stages`` row tiles into a shared ring (mbarrier
# handshakes), the 256 consumer threads run the same math as above on the current tile.
def pipe_supported(N: int, rope_dim: int, group: int, blk_m: int, threads: int = 256,
                   dtype: str = "bfloat16") -> bool:
    """Shapes the pipe schedule serves: rows whose bytes are a multiple of 16 (TMA),
    the fragment split evenly over the threads, the RoPE tail inside the row."""
    size = 2 if dtype in ("float16", "bfloat16") else 4
    return (N % group == 0 and group % 8 == 0 and (N * size) % 16 == 0 and (blk_m * N) % (8 * threads) == 0
            and 2 <= rope_dim <= N and rope_dim % 2 == 0 and (rope_dim // 2 * 4) % 16 == 0)


@tilelang.jit(target=TARGET)
def rmsnorm_rope_fp8_pipe(M: int, N: int, rope_dim: int, group: int = 128, dtype: str = "bfloat16",
                          blk_m: int = 2, stages: int = 4, grid: int = SMS, threads: int = 256,
                          eps: float = 1e-6):
    """``rmsnorm_rope_fp8`` with rows streamed by TMA through a ``stages``-deep ring;
    ``grid`` persistent blocks (one per SM)."""
    assert pipe_supported(N, rope_dim, group, blk_m, threads, dtype)
    start, half = N - rope_dim, rope_dim // 2
    G = N // group
    iters = T.ceildiv(T.ceildiv(M, blk_m), grid)

    @T.prim_func
    def main(X: T.Tensor((M, G, group), dtype), W: T.Tensor((G, group), dtype), C: T.Tensor((M, half), ACC),
             Sn: T.Tensor((M, half), ACC), Q: T.Tensor((M, G, group), FP8), S: T.Tensor((M, G), ACC)):
        with T.Kernel(grid, threads=threads) as bx:
            xs = T.alloc_shared((blk_m, G, group), dtype)  # the ring slot the producer fills
            x = T.alloc_fragment((blk_m, G, group), dtype)
            w = T.alloc_fragment((G, group), dtype)
            sqe = T.alloc_fragment((blk_m, G, group), ACC)
            sq = T.alloc_fragment((blk_m, G), ACC)
            rs = T.alloc_fragment((blk_m,), ACC)
            tail = T.alloc_shared((blk_m, rope_dim), dtype)
            cs = T.alloc_shared((blk_m, half), ACC)
            ss = T.alloc_shared((blk_m, half), ACC)
            amax = T.alloc_fragment((blk_m, G), ACC)
            inv = T.alloc_fragment((blk_m, G), ACC)
            q = T.alloc_fragment((blk_m, G, group), FP8)
            T.copy(W[0, 0], w)
            for it in T.Pipelined(iters, num_stages=stages):
                r0 = (it * grid + bx) * blk_m
                T.copy(X[r0, 0, 0], xs)
                T.copy(C[r0, 0], cs)
                T.copy(Sn[r0, 0], ss)
                T.copy(xs, x)
                _rms_rope_quant(x, w, sqe, sq, rs, tail, cs, ss, amax, inv, q, blk_m, G, group, N, start, half,
                                eps)
                T.copy(q, Q[r0, 0, 0])
                T.copy(amax, S[r0, 0])

    return main
