"""nn.Module wrapper around torch.classes.w4jit.Linear."""
import torch

# Which dims of the scales are [groups, N] for each format (formats.md).
_SCALES_GROUPS_FIRST = {
    "compressed_tensors": False,
    "gptq_v1": True,
    "gptq_v2": True,
    "awq": True,
}
_ACT_DTYPES = {torch.bfloat16: "bfloat16", torch.float32: "float32"}


def _in_features(op, fmt, qweight):
    if fmt == "unpacked_int8":
        return qweight.shape[1]
    if fmt in ("zentorch_int32", "compressed_tensors"):
        return qweight.shape[1] * 8
    if fmt in ("gptq_v1", "gptq_v2"):
        return qweight.shape[0] * 8
    if fmt == "awq":
        return qweight.shape[0]
    raise ValueError(f"{op}: unknown format {fmt!r}")


def group_size_from_scales(op, fmt, qweight, scales, groups_major):
    """K / G from the scales' shape in `fmt` (-1 when G == 1)."""
    groups_first = _SCALES_GROUPS_FIRST.get(fmt, groups_major)
    if scales.dim() != 2:
        raise ValueError(f"{op}: scales have shape {tuple(scales.shape)} but "
                         "must have 2 dims")
    groups = scales.shape[0 if groups_first else 1]
    k = _in_features(op, fmt, qweight)
    if groups <= 0 or k % groups:
        raise ValueError(f"{op}: scales {tuple(scales.shape)} give {groups} "
                         f"groups, which do not divide K = {k}")
    return -1 if groups == 1 else k // groups


class Linear(torch.nn.Module):
    """y = x @ W.T (+ bias) with W int4, computed by a w4jit layer.

    Build with one of the from_* constructors; the layer copies and repacks
    the tensors once, so they may be freed afterwards. forward(x) takes x of
    any leading shape [..., in_features] in the dtype given at construction
    and returns [..., out_features] in that dtype.
    """

    def __init__(self, impl):
        super().__init__()
        self._impl = impl
        self.in_features = impl.in_features()
        self.out_features = impl.out_features()
        self.group_size = impl.group_size()
        self.mode = impl.mode()
        self.act_quant = impl.act_quant()
        self.numerics = impl.numerics()
        self.non_finite = impl.non_finite()

    def forward(self, x, *operands):
        """operands: the epilogue's binary inputs, each [..., out_features]
        in the layer's dtype (none for activation-only epilogues)."""
        if operands:
            return self._impl.forward_with(x, list(operands))
        return self._impl.forward(x)

    def kernel_names(self):
        return list(self._impl.kernel_names())

    def packed_bytes(self):
        return self._impl.packed_bytes()

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"group_size={self.group_size}, mode={self.mode}, "
                f"act_quant={self.act_quant}, numerics={self.numerics}, "
                f"non_finite={self.non_finite}")

    @classmethod
    def from_checkpoint(cls, fmt, qweight, scales, zero_points=None,
                        g_idx=None, bias=None, *, group_size=None,
                        mode="w4a16", dtype=torch.bfloat16,
                        groups_major=True, epilogue="none",
                        act_quant="per_token", numerics=None,
                        non_finite="propagate"):
        """Any format: "compressed_tensors", "gptq_v1", "gptq_v2", "awq",
        "unpacked_int8", "zentorch_int32". group_size None derives it from
        the scales' shape (K / G; -1 when G == 1). zero_points given means
        u4 weights; none means s4. epilogue: "none", "relu", "sigmoid",
        "gelu_tanh", "gelu_erf", "silu" or "silu_mul" (merged [gate | up]
        weight: out_features = N / 2, y = silu(t[:, :I]) * t[:, I:]),
        optionally + "+add", "+mul_add" or "+add_add" (operands passed to
        forward after x), fused into the kernels. act_quant (da8w4 only):
        "per_token" (one int8 scale per row of x) or "per_group" (one per
        row and weight group: far more accurate when x has outlier
        channels, at about the same speed; README "What it computes").
        numerics (w4a16 only): "exact" (default) or "zentorch": each
        dequantized weight (u - z) * s rounded to bf16 before the dot
        products, as zentorch / AOCL compute it (slower at small M;
        docs/numerics-zentorch.md). None takes W4JIT_NUMERICS (unset:
        exact). non_finite: "propagate" (default: a row of x holding NaN
        or Inf gives a non-finite row of the result, other rows
        unaffected, as the kernels have always computed) or "error"
        (forward raises RuntimeError naming the row, column and value,
        at the cost of one read of x; docs/numerics.md)."""
        if dtype not in _ACT_DTYPES:
            raise ValueError(f"w4jit.Linear: dtype {dtype} is not "
                             "torch.bfloat16 or torch.float32")
        if group_size is None:
            group_size = group_size_from_scales("w4jit.Linear", fmt, qweight,
                                                scales, groups_major)
        impl = torch.classes.w4jit.Linear(
            fmt, qweight, scales, zero_points, g_idx, bias, mode,
            int(group_size), _ACT_DTYPES[dtype], bool(groups_major),
            str(epilogue), str(act_quant),
            "" if numerics is None else str(numerics), str(non_finite))
        return cls(impl)

    @classmethod
    def from_compressed_tensors(cls, weight_packed, weight_scale,
                                weight_zero_point=None, bias=None, *,
                                weight_g_idx=None, **kw):
        """compressed-tensors pack_quantized: weight_packed int32 [N, K/8],
        weight_scale [N, G], weight_zero_point int32 [N/8, G] (asymmetric),
        weight_g_idx int32 [K] (actorder="group")."""
        return cls.from_checkpoint("compressed_tensors", weight_packed,
                                   weight_scale, weight_zero_point,
                                   weight_g_idx, bias, **kw)

    @classmethod
    def from_gptq(cls, qweight, qzeros, scales, g_idx=None, bias=None, *,
                  version=1, **kw):
        """AutoGPTQ/GPTQModel: qweight int32 [K/8, N], qzeros int32
        [G, N/8] (None for symmetric, zero 8), scales [G, N], g_idx [K]
        (the group of each input channel; act-order / desc_act checkpoints
        give it in any order, as long as every group has group_size
        members). version 1 stores zero - 1, 2 the zero."""
        if version not in (1, 2):
            raise ValueError(f"w4jit.Linear.from_gptq: version {version} "
                             "is not 1 or 2")
        return cls.from_checkpoint(f"gptq_v{version}", qweight, scales,
                                   qzeros, g_idx, bias, **kw)

    @classmethod
    def from_awq(cls, qweight, qzeros, scales, bias=None, **kw):
        """AutoAWQ GEMM: qweight int32 [K, N/8] and qzeros int32 [G, N/8]
        (interleaved columns), scales [G, N]."""
        return cls.from_checkpoint("awq", qweight, scales, qzeros, None, bias,
                                   **kw)

    @classmethod
    def from_unpacked(cls, weight, scales, zero_points=None, bias=None, *,
                      g_idx=None, **kw):
        """int8 [N, K] values (s4, or u4 with int8 zero points), scales and
        zero points [G, N] (groups_major=False for [N, G]), g_idx int32 [K]
        (act-order) optional."""
        return cls.from_checkpoint("unpacked_int8", weight, scales,
                                   zero_points, g_idx, bias, **kw)

    @classmethod
    def from_zentorch(cls, repacked, scales, zero_points=None, bias=None, *,
                      g_idx=None, **kw):
        """woq_repack_weight's int32 [N, K/8], scales/zero points/g_idx as
        for from_unpacked."""
        return cls.from_checkpoint("zentorch_int32", repacked, scales,
                                   zero_points, g_idx, bias, **kw)
