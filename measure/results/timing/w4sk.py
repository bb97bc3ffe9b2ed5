"""w4sk: the stream-K decode kernel (``kernels.gemm.w4a16_sk``) at M = 16 on 8192 x 8192 weights, against gemm.flush's
M = 16 kernel (128 blocks of 64 rows over all of K) and cuBLAS on the fp16 weights.  ``readbound`` (H200) had a plain
read of the weights' bytes 0.5-1.2 us slower on 128 blocks than on 132; here every SM gets 62 or 63 of the 8192 units
of 64 rows x 128 k.  The same kernel on 128 blocks (one tile a block, each tile's single contributor still meeting
in the workspace) prices the machinery apart from the four SMs it wins; 128-k stages (no half stages) and twelve
slots beside it.  Checks first: small shapes whose tiles have two to four contributors (ragged M, poisoned outputs,
again after 30 more launches: a counter left non-zero would show), then at the shape with a ragged M = 13 and M = 16;
then searches, 7 alternating rounds (``W4SK_MODES``, default two under the write flush and one under the clean
flush)."""
import os, sys
from kernels.gemm import w4a16_sk as sk
from kernels.gemm.w4a16 import build, kernel_weights, label
from measure.suites.gemm.flush import W4A16_WINNERS
import lagd

N = K = 8192
M = 16
CANDS = [W4A16_WINNERS[(M, N, K)], sk.config(16, 256, 8, 132), sk.config(16, 256, 8, 128), sk.config(16, 256, 12, 132),
         sk.config(16, 128, 16, 132)]
#: (shape, config): small checks, tiles of two contributors, of three or four, and the 8-row tile at M = 1
SMALL = [((13, 1024, 2048), sk.config(16, 256, 4, 20)), ((5, 1024, 2048), sk.config(16, 128, 4, 37)),
         ((1, 512, 1024), sk.config(8, 256, 4, 9))]
RAGGED = 13
MODES = tuple(os.environ.get("W4SK_MODES", "write,write,clean").split(","))


def small(h, res):
    """The small checks: fp32 reference, poisoned output, again after 30 more launches."""
    import torch
    from measure.suites.gemm.common import rel_fro_err
    from measure.suites.gemm.w4a16 import make_inputs
    for (m, n, k), c in SMALL:
        a, packed, scales, w16 = make_inputs(h, m, n, k, 128)
        kern, w = build(m, n, k, 128, c), kernel_weights(packed, c)
        ref = torch.matmul(a.float(), w16.float().t())
        o = h.poisoned((m, n), torch.float16)
        kern(a, w, scales, o)
        e1 = rel_fro_err(o, ref)
        for _ in range(30):
            kern(a, w, scales, o)
        torch.cuda.synchronize()
        res["errors"][f"{label(c)} {m}x{n}x{k}"] = e = max(e1, rel_fro_err(o, ref))
        print(label(c), (m, n, k), e, flush=True)


def main(out):
    if out == "--prebuild":
        for s, c in SMALL:
            build(*s, 128, c)
    lagd.main(out, CANDS={M: CANDS}, RAGGED={M: RAGGED}, MODES=MODES, name="w4sk", first=small)


if __name__ == "__main__":
    main(sys.argv[1])
