"""The reference of the fused kernels: RMSNorm, then NeoX RoPE on the last ``rope_dim``
channels, then the per-group FP8 quantizer -- each step rounded to the input dtype, as the
chain of three separate kernels computes it."""
from kernels.norm import ref_rmsnorm
from kernels.quant import ref_quant_fp8
from kernels.rope import ref_rope


def ref_rmsnorm_rope(x, weight, cos, sin, rope_dim: int, eps: float = 1e-6):
    """Reference: RMSNorm then NeoX RoPE on the last rope_dim channels (each step cast to dtype)."""
    y1 = ref_rmsnorm(x, weight, eps)
    return ref_rope(y1[:, None, :], cos, sin, rope_dim, "neox")[:, 0, :]


def ref_rmsnorm_rope_fp8(x, weight, cos, sin, rope_dim: int, group: int = 128, eps: float = 1e-6):
    return ref_quant_fp8(ref_rmsnorm_rope(x, weight, cos, sin, rope_dim, eps), group)
