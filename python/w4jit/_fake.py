"""Fake (meta) kernels of every torch.ops.w4jit op and fake classes of
torch.classes.w4jit.Linear / MoE, for torch.compile and torch.export.

Registered by _library.load() on torch 2.4 and later (torch.library.
register_fake and torch._library.register_fake_class); on older torch, such
as Debian's 1.13, nothing is registered and the ops run eagerly as before.

A fake kernel computes the result's shape, dtype and strides from the
arguments' metadata only, with SymInts for dynamic dims: the real kernels
return contiguous tensors in the input's dtype, and the fakes do the same.
The real kernels' argument checks stay in C++; a fake checks only what its
shape arithmetic relies on (torch._check, which records a guard on dynamic
dims). The .out overloads and fused_moe return nothing: their fakes check
nothing beyond the schema, as their results are written in place.
fused_moe has its own functionalization (torch/moe_ops.cc), which calls
its functional twin fused_moe_functional, whose fake gives the result.

The custom classes' methods are traced by Dynamo as call_torchbind on a
fake object built from the real one's __obj_flatten__ (torch/linear_class.cc,
torch/moe_class.cc): in_features, out_features, dtype and the other scalar
properties, no weights. docs/torch-2x.md says why this route.
"""
import torch

LIB = "w4jit"
_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


def _linear_result(op, input, weight, *, n_div=1):
    """input [..., K], weight int32 [K/8, N] (the woq_linear layout) ->
    [..., N / n_div] in input's dtype."""
    torch._check(weight.dim() == 2,
                 lambda: f"{op}: weight must be 2-dim, got {weight.dim()}")
    torch._check(input.dim() >= 1, lambda: f"{op}: input is a scalar")
    k, n = weight.shape[0] * 8, weight.shape[1]
    torch._check(input.shape[-1] == k,
                 lambda: f"{op}: input's last dim must be K = {k}")
    return input.new_empty((*input.shape[:-1], n // n_div))


def _schema_args(op, args, kwargs):
    """The arguments by name, as the op's schema binds them (so the fake
    survives keyword arguments added to the schema later)."""
    names = [a.name for a in op._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


# -- woq_linear and its post-op family: one shape function each. ----------

def _unary_linear_fake(name):
    """The fake of woq_linear or one of its activation post-ops: they share
    the schema (zentorch's) and the result, [..., N] in input's dtype."""
    def fake(input, weight, weight_scales, weight_zero_points, bias=None, *,
             non_finite="propagate", zentorch_op_name=""):
        return _linear_result(name, input, weight)
    fake.__name__ = f"{name}_fake"
    return fake


woq_linear_fake = _unary_linear_fake("woq_linear")
woq_linear_relu_fake = _unary_linear_fake("woq_linear_relu")
woq_linear_sigmoid_fake = _unary_linear_fake("woq_linear_sigmoid")
woq_linear_gelu_tanh_fake = _unary_linear_fake("woq_linear_gelu_tanh")
woq_linear_gelu_erf_fake = _unary_linear_fake("woq_linear_gelu_erf")


def woq_linear_silu_mul_fake(input, weight, weight_scales,
                             weight_zero_points, bias=None, *,
                             non_finite="propagate", zentorch_op_name=""):
    torch._check(weight.shape[1] % 2 == 0,
                 lambda: "woq_linear_silu_mul: N must be even")
    return _linear_result("woq_linear_silu_mul", input, weight, n_div=2)


def woq_linear_add_fake(input, weight, weight_scales, weight_zero_points,
                        add_input, bias=None, *, non_finite="propagate",
                        zentorch_op_name=""):
    return _linear_result("woq_linear_add", input, weight)


def woq_linear_mul_add_fake(input, weight, weight_scales,
                            weight_zero_points, mul_input, add_input,
                            bias=None, *, non_finite="propagate",
                            zentorch_op_name=""):
    return _linear_result("woq_linear_mul_add", input, weight)


def woq_linear_add_add_fake(input, weight, weight_scales,
                            weight_zero_points, add_input, add_input_2,
                            bias=None, *, non_finite="propagate",
                            zentorch_op_name=""):
    return _linear_result("woq_linear_add_add", input, weight)


def out_fake(*args, **kwargs):
    """Every .out overload: the result is written into `out`."""
    return None


# -- the rest ---------------------------------------------------------------

def dynamic_qlinear_fake(input, weight, weight_scales, bias=None, *,
                         is_weight_prepacked=False, act_quant="per_token",
                         non_finite="propagate", zentorch_op_name=""):
    """weight int8 [N, K/2] or int32 [N, K/8] -> [..., N]."""
    torch._check(weight.dim() == 2,
                 lambda: "dynamic_qlinear: weight must be 2-dim")
    per_element = 2 if weight.dtype == torch.int8 else 8
    k = weight.shape[1] * per_element
    torch._check(input.shape[-1] == k,
                 lambda: f"dynamic_qlinear: input's last dim must be K = {k}")
    return input.new_empty((*input.shape[:-1], weight.shape[0]))


def woq_repack_weight_fake(unpacked_weight):
    """int8 [N, K] -> int32 [N, K/8]."""
    w = unpacked_weight
    torch._check(w.dim() == 2 and w.shape[1] % 8 == 0,
                 lambda: "woq_repack_weight: unpacked_weight must be "
                 "[N, K] with K a multiple of 8")
    return w.new_empty((w.shape[0], w.shape[1] // 8), dtype=torch.int32)


def woq_repack_from_int4pack_fake(packed_weight):
    """uint8 [N, K/2] -> int32 [N, K/8]."""
    p = packed_weight
    torch._check(p.dim() == 2 and p.shape[1] % 4 == 0,
                 lambda: "woq_repack_from_int4pack: packed_weight must be "
                 "[N, K/2] with K a multiple of 8")
    return p.new_empty((p.shape[0], p.shape[1] // 4), dtype=torch.int32)


def fused_moe_fake(*args, **kwargs):
    """Writes `output` ([T, H], input's shape and dtype) in place; bound by
    the schema, so added keyword arguments need no change here."""
    a = _schema_args(torch.ops.w4jit.fused_moe.default, args, kwargs)
    output, input = a["output"], a["input"]
    torch._check(output.shape == input.shape,
                 lambda: "fused_moe: output must have input's shape")
    return None


def fused_moe_functional_fake(*args, **kwargs):
    """fused_moe's functional twin (what its functionalization calls):
    a new [T, H] tensor, input's shape and dtype."""
    a = _schema_args(torch.ops.w4jit.fused_moe_functional.default, args,
                     kwargs)
    input = a["input"]
    torch._check(input.dim() == 2,
                 lambda: "fused_moe: input must be [T, H]")
    return input.new_empty(input.shape)


def overhead_probe_fake(op, x, packed, scales, zero_points, bias, iters):
    return x.new_empty((2, iters), dtype=torch.float64)


FAKES = {
    "woq_linear": woq_linear_fake,
    "woq_linear_relu": woq_linear_relu_fake,
    "woq_linear_sigmoid": woq_linear_sigmoid_fake,
    "woq_linear_gelu_tanh": woq_linear_gelu_tanh_fake,
    "woq_linear_gelu_erf": woq_linear_gelu_erf_fake,
    "woq_linear_silu_mul": woq_linear_silu_mul_fake,
    "woq_linear_add": woq_linear_add_fake,
    "woq_linear_mul_add": woq_linear_mul_add_fake,
    "woq_linear_add_add": woq_linear_add_add_fake,
    "dynamic_qlinear": dynamic_qlinear_fake,
    "woq_repack_weight": woq_repack_weight_fake,
    "woq_repack_from_int4pack": woq_repack_from_int4pack_fake,
    "fused_moe": fused_moe_fake,
    "fused_moe_functional": fused_moe_functional_fake,
    "_overhead_probe": overhead_probe_fake,
}
# Ops with no tensor arguments (cache and thread queries) need no fake.
NO_TENSOR_OPS = ("_cache_size", "_clear_cache", "_fingerprint_counts",
                 "_concurrency", "flush_moe_weight_cache",
                 "flush_weight_cache", "weight_check",
                 "_int4pack_capability")


# -- the custom classes -----------------------------------------------------

class _FakeObject:
    """Built from the real object's __obj_flatten__ ((name, value) pairs),
    held as attributes (Dynamo reads them back by those names)."""

    def __init__(self, **props):
        for name, value in props.items():
            setattr(self, name, value)

    def kernel_names(self):
        raise NotImplementedError("kernel_names() is not traceable; call it "
                                  "outside torch.compile")


class FakeLinear(_FakeObject):
    # register_fake_class wants the classmethod in the class's own dict.
    @classmethod
    def __obj_unflatten__(cls, flattened):
        return cls(**dict(flattened))

    def forward(self, x):
        return self.forward_with(x, [])

    def forward_with(self, x, operands):
        torch._check(x.shape[-1] == self.k,
                     lambda: f"w4jit.Linear: x's last dim must be K = "
                     f"{self.k}")
        return x.new_empty((*x.shape[:-1], self.n),
                           dtype=_DTYPES[self.dtype])

    def in_features(self):
        return self.k

    def out_features(self):
        return self.n

    def group_size(self):
        return self.group

    def mode(self):
        return self.layer_mode

    def act_quant(self):
        return self.layer_act_quant

    def packed_bytes(self):
        return self.bytes


class FakeMoE(_FakeObject):
    @classmethod
    def __obj_unflatten__(cls, flattened):
        return cls(**dict(flattened))

    def forward(self, x, topk_ids, topk_weights=None):
        torch._check(x.dim() == 2 and x.shape[1] == self.h,
                     lambda: f"w4jit.MoE: x must be [T, H = {self.h}]")
        return x.new_empty(x.shape, dtype=_DTYPES[self.dtype])

    def experts(self):
        return self.num_experts

    def hidden(self):
        return self.h

    def intermediate(self):
        return self.i

    def group_size(self):
        return self.group

    def mode(self):
        return self.layer_mode

    def activation(self):
        return self.gate

    def act_quant(self):
        return self.layer_act_quant

    def packed_bytes(self):
        return self.bytes

    def expert_packed_bytes(self):
        return self.expert_bytes


def supported():
    """Whether this torch can take fake kernels and fake classes."""
    return hasattr(torch.library, "register_fake") and hasattr(
        getattr(torch, "_library", None), "register_fake_class")


_registered = False


def register():
    """Registers the fakes once (after the op library is loaded)."""
    global _registered
    if _registered or not supported():
        return
    ops = torch.ops.w4jit
    for name, fn in FAKES.items():
        torch.library.register_fake(f"{LIB}::{name}", fn)
        packet = getattr(ops, name)
        if "out" in packet.overloads():
            torch.library.register_fake(f"{LIB}::{name}.out", out_fake)
    torch._library.register_fake_class(f"{LIB}::Linear")(FakeLinear)
    torch._library.register_fake_class(f"{LIB}::MoE")(FakeMoE)
    _registered = True
