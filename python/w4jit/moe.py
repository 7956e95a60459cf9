"""nn.Module wrapper around torch.classes.w4jit.MoE: a fused top-k MoE layer
of gated MLP experts with int4 weights, built once from a checkpoint."""
import torch

from .linear import group_size_from_scales

_ACT_DTYPES = {torch.bfloat16: "bfloat16", torch.float32: "float32"}
_OP = "w4jit.MoE"


def _per_expert(name, value, dims):
    """A stacked [E, ...] tensor or a list of per-expert tensors of `dims`
    dims -> a list of per-expert tensors ([] for None)."""
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        if value.dim() != dims + 1:
            raise ValueError(
                f"{_OP}: {name} has shape {tuple(value.shape)}; stacked "
                f"experts need {dims + 1} dims [E, ...] (or give a list of "
                f"{dims}-dim per-expert tensors)")
        return list(value.unbind(0))
    if isinstance(value, (list, tuple)):
        for e, t in enumerate(value):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{_OP}: {name}[{e}] is a "
                                f"{type(t).__name__}, not a tensor")
        return list(value)
    raise TypeError(f"{_OP}: {name} is a {type(value).__name__}; give a "
                    "stacked [E, ...] tensor or a list of per-expert tensors")


def _as_int32_words(w):
    """zentorch's nibbles held as int8 / uint8 [..., K/2] viewed as the
    int32 [..., K/8] words they are (little-endian: byte j of a word holds
    k = 2j and 2j + 1); anything else unchanged."""
    if isinstance(w, (list, tuple)):
        return [_as_int32_words(t) for t in w]
    if isinstance(w, torch.Tensor) and w.dtype in (torch.int8, torch.uint8):
        if w.shape[-1] % 4 != 0:
            raise ValueError(f"{_OP}: int8 weights {tuple(w.shape)}: the "
                             "last dim (K/2) must be a multiple of 4 (K a "
                             "multiple of 8)")
        return w.contiguous().view(torch.int32)
    return w


class MoE(torch.nn.Module):
    """y[t] = sum_j w[t, j] * down_e(act(gate_e(x[t])) * up_e(x[t])),
    e = topk_ids[t, j], computed by one w4jit MoeLayer.

    w13 is each expert's merged [gate | up] projection (2I x H, gate rows
    first), w2 its down projection (H x I). Build with one of the from_*
    constructors, from stacked [E, ...] tensors (as vLLM and
    compressed-tensors store them) or lists of per-expert tensors; the layer
    copies and repacks them once, so they may be freed afterwards.
    forward(x [T, H], topk_ids [T, k] int32/int64, topk_weights [T, k])
    returns y [T, H] in the dtype given at construction; topk_weights None
    means every routing weight is 1.
    """

    def __init__(self, impl):
        super().__init__()
        self._impl = impl
        self.experts = impl.experts()
        self.hidden = impl.hidden()
        self.intermediate = impl.intermediate()
        self.group_size = impl.group_size()
        self.mode = impl.mode()
        self.activation = impl.activation()
        self.act_quant = impl.act_quant()
        self.non_finite = impl.non_finite()
        # swigluoai's constants (read only with activation "swigluoai").
        self.swiglu_alpha = impl.swiglu_alpha()
        self.swiglu_limit = impl.swiglu_limit()

    def forward(self, x, topk_ids, topk_weights=None):
        return self._impl.forward(x, topk_ids, topk_weights)

    def kernel_names(self):
        return list(self._impl.kernel_names())

    def packed_bytes(self):
        return self._impl.packed_bytes()

    def expert_packed_bytes(self):
        """Packed bytes of one expert (both projections)."""
        return self._impl.expert_packed_bytes()

    def extra_repr(self):
        return (f"experts={self.experts}, hidden={self.hidden}, "
                f"intermediate={self.intermediate}, "
                f"group_size={self.group_size}, mode={self.mode}, "
                f"activation={self.activation}, act_quant={self.act_quant}, "
                f"non_finite={self.non_finite}")

    @classmethod
    def from_checkpoint(cls, fmt, w13_qweight, w13_scales, w2_qweight,
                        w2_scales, *, w13_zero_points=None,
                        w2_zero_points=None, w13_g_idx=None, w2_g_idx=None,
                        w13_bias=None, w2_bias=None, group_size=None,
                        mode="w4a16", activation="silu", dtype=torch.bfloat16,
                        groups_major=True, act_quant="per_token",
                        swiglu_alpha=1.702, swiglu_limit=7.0,
                        non_finite="error"):
        """Any format w4jit.Linear takes: "compressed_tensors", "gptq_v1",
        "gptq_v2", "awq", "unpacked_int8", "zentorch_int32"; each tensor
        stacked [E, ...] or a list of E per-expert tensors in that format's
        layout (w13: N = 2I, K = H; w2: N = H, K = I). group_size None
        derives it from expert 0's w13 scales. Zero points for both
        projections mean u4 weights, none s4. activation: "silu" (SwiGLU),
        "gelu" or "gelu_tanh" (GeGLU), or "swigluoai" (gpt-oss: w13's rows
        interleaved gate, up, gate, up, ...; act = g' * sigmoid(swiglu_alpha
        * g') * (u' + 1), g' = min(g, swiglu_limit), u' = clamp(u,
        -swiglu_limit, swiglu_limit)); mode "w4a16" or "da8w4"; act_quant
        (da8w4): "per_token" or "per_group", as for w4jit.Linear.
        non_finite: what forward does with a token whose routing weight is
        NaN / Inf, whose x row holds NaN / Inf, or whose expert id is
        outside [0, E): "error" (default) raises RuntimeError naming the
        first such slot or element and its value; "propagate" returns NaN
        in that token's row and computes the other tokens as if it were
        absent (what a host's warm-up with garbage activations needs:
        vLLM's compiled mode; docs/numerics.md)."""
        if dtype not in _ACT_DTYPES:
            raise ValueError(f"{_OP}: dtype {dtype} is not torch.bfloat16 or "
                             "torch.float32")
        w13 = [_per_expert(f"w13_{n}", v, d) for n, v, d in (
            ("qweight", w13_qweight, 2), ("scales", w13_scales, 2),
            ("zero_points", w13_zero_points, 2), ("g_idx", w13_g_idx, 1),
            ("bias", w13_bias, 1))]
        w2 = [_per_expert(f"w2_{n}", v, d) for n, v, d in (
            ("qweight", w2_qweight, 2), ("scales", w2_scales, 2),
            ("zero_points", w2_zero_points, 2), ("g_idx", w2_g_idx, 1),
            ("bias", w2_bias, 1))]
        if not w13[0] or not w13[1]:
            raise ValueError(f"{_OP}: no experts (w13_qweight or w13_scales "
                             "is empty)")
        if group_size is None:
            group_size = group_size_from_scales(_OP, fmt, w13[0][0],
                                                w13[1][0], groups_major)
        impl = torch.classes.w4jit.MoE(
            fmt, *w13, *w2, mode, int(group_size), _ACT_DTYPES[dtype],
            bool(groups_major), str(activation), str(act_quant),
            float(swiglu_alpha), float(swiglu_limit), str(non_finite))
        return cls(impl)

    @classmethod
    def from_compressed_tensors(cls, w13_weight_packed, w13_weight_scale,
                                w2_weight_packed, w2_weight_scale,
                                w13_weight_zero_point=None,
                                w2_weight_zero_point=None, *,
                                w13_weight_g_idx=None, w2_weight_g_idx=None,
                                **kw):
        """compressed-tensors pack_quantized experts (vLLM's
        CompressedTensorsWNA16MoEMethod names): weight_packed int32
        [E, N, K/8], weight_scale [E, N, G], weight_zero_point int32
        [E, N/8, G], weight_g_idx int32 [E, K]; or lists of [N, K/8] ..."""
        return cls.from_checkpoint(
            "compressed_tensors", w13_weight_packed, w13_weight_scale,
            w2_weight_packed, w2_weight_scale,
            w13_zero_points=w13_weight_zero_point,
            w2_zero_points=w2_weight_zero_point, w13_g_idx=w13_weight_g_idx,
            w2_g_idx=w2_weight_g_idx, **kw)

    @classmethod
    def from_gptq(cls, w13_qweight, w13_qzeros, w13_scales, w2_qweight,
                  w2_qzeros, w2_scales, *, version=1, **kw):
        """GPTQ experts: qweight int32 [E, K/8, N], qzeros int32 [E, G, N/8]
        (None: symmetric), scales [E, G, N], g_idx (w13_g_idx=, w2_g_idx=)
        [E, K]; version 1 stores zero - 1, 2 the zero."""
        if version not in (1, 2):
            raise ValueError(f"{_OP}.from_gptq: version {version} is not 1 "
                             "or 2")
        return cls.from_checkpoint(
            f"gptq_v{version}", w13_qweight, w13_scales, w2_qweight,
            w2_scales, w13_zero_points=w13_qzeros, w2_zero_points=w2_qzeros,
            **kw)

    @classmethod
    def from_awq(cls, w13_qweight, w13_qzeros, w13_scales, w2_qweight,
                 w2_qzeros, w2_scales, **kw):
        """AutoAWQ GEMM experts: qweight int32 [E, K, N/8], qzeros int32
        [E, G, N/8] (interleaved columns), scales [E, G, N]."""
        return cls.from_checkpoint(
            "awq", w13_qweight, w13_scales, w2_qweight, w2_scales,
            w13_zero_points=w13_qzeros, w2_zero_points=w2_qzeros, **kw)

    @classmethod
    def from_unpacked(cls, w13, w13_scales, w2, w2_scales,
                      w13_zero_points=None, w2_zero_points=None, **kw):
        """int8 values [E, N, K] (s4, or u4 with int8 zero points), scales
        and zero points [E, G, N] (groups_major=False: [E, N, G])."""
        return cls.from_checkpoint(
            "unpacked_int8", w13, w13_scales, w2, w2_scales,
            w13_zero_points=w13_zero_points, w2_zero_points=w2_zero_points,
            **kw)

    @classmethod
    def from_zentorch(cls, w13, w13_scales, w2, w2_scales,
                      w13_zero_points=None, w2_zero_points=None, **kw):
        """woq_repack_weight's int32 [E, N, K/8] (what fused_moe takes),
        or the same bytes as int8 [E, N, K/2] (k even in the low nibble),
        scales and int8 zero points as for from_unpacked."""
        w13, w2 = _as_int32_words(w13), _as_int32_words(w2)
        return cls.from_checkpoint(
            "zentorch_int32", w13, w13_scales, w2, w2_scales,
            w13_zero_points=w13_zero_points, w2_zero_points=w2_zero_points,
            **kw)
