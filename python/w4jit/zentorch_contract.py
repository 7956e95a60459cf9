"""zentorch's op signatures, the contract torch.ops.w4jit.* keeps.

The strings are the schemas zentorch 2.14.0.1 (PyPI, built for torch
2.14) registers under TORCH_LIBRARY_FRAGMENT(zentorch, m), as its
torch.ops.zentorch.<op>.<overload>._schema prints them, stated once here as
data: each default overload, and the .out overloads as zentorch's newest
release has them (`zentorch_op_name` positional after bias, `out`
keyword-only, nothing returned; dynamic_qlinear.out keeps every option
keyword-only). tests/python/test_contract.py parses each with torch's
schema parser and compares it, argument by argument (name, type, default,
keyword-only, written alias), and its returns, with
torch.ops.w4jit.<op>.<overload>._schema, where <op> is the zentorch name
without its "zentorch_" prefix; where zentorch is installed it also
compares these strings with the live zentorch schemas and tags.

The differences allowed, each documented in docs/torch-2x.md:
- the default of `zentorch_op_name` (accepted and ignored by w4jit) names
  w4jit's op: zentorch's default with "zentorch::zentorch_" made "w4jit::";
- w4jit's own keyword-only arguments (KEYWORD_EXTRAS), each with a default,
  so that every call written for zentorch binds unchanged.
zentorch ops w4jit does not mirror are in NOT_MIRRORED, with the reason.

A host ports by replacing torch.ops.zentorch.zentorch_X with
torch.ops.w4jit.X; see the README's mapping table.
"""


def _woq(post, extra=""):
    """zentorch_woq_linear<post> and its .out, <extra> before bias."""
    name = f"zentorch_woq_linear{post}"
    head = (f"(Tensor input, Tensor weight, Tensor weight_scales, "
            f"Tensor? weight_zero_points{extra}, Tensor? bias=None, ")
    return (
        f"{name}{head}*, str zentorch_op_name='zentorch::{name}') -> Tensor",
        f"{name}.out{head}str zentorch_op_name='zentorch::{name}_out', *, "
        "Tensor(a!) out) -> ()",
    )


ZENTORCH_SCHEMAS = (
    *_woq(""),
    *_woq("_relu"),
    *_woq("_sigmoid"),
    *_woq("_gelu_tanh"),
    *_woq("_gelu_erf"),
    *_woq("_add", ", Tensor add_input"),
    *_woq("_mul_add", ", Tensor mul_input, Tensor add_input"),
    *_woq("_add_add", ", Tensor add_input, Tensor add_input_2"),
    "zentorch_woq_repack_weight(Tensor unpacked_weight) -> Tensor",
    "zentorch_woq_repack_from_int4pack(Tensor packed_weight) -> Tensor",
    "zentorch_dynamic_qlinear(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? bias=None, *, "
    "bool is_weight_prepacked=False, "
    "str zentorch_op_name='zentorch::zentorch_dynamic_qlinear') -> Tensor",
    "zentorch_dynamic_qlinear.out(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? bias=None, *, "
    "bool is_weight_prepacked=False, "
    "str zentorch_op_name='zentorch::zentorch_dynamic_qlinear.out', "
    "Tensor(a!) out) -> ()",
    "zentorch_fused_moe(Tensor(a!) output, Tensor input, Tensor w13, "
    "Tensor w2, Tensor? w13_bias, Tensor? w2_bias, Tensor topk_weights, "
    "Tensor topk_id, bool skip_weighted, str act, "
    "Tensor? w13_scales=None, Tensor? w2_scales=None, *, "
    "str zentorch_op_name='zentorch::zentorch_fused_moe') -> ()",
)

# w4jit's own keyword-only arguments beyond zentorch's, by w4jit op name
# ("<op>" or "<op>.out"), each with a default.
# non_finite (NaN / Inf in x and, for fused_moe, in the routing; "error"
# or "propagate", w4jit::NonFinitePolicy) is on every op that computes.
_WOQ_OPS = ("woq_linear", "woq_linear_relu", "woq_linear_sigmoid",
            "woq_linear_gelu_tanh", "woq_linear_gelu_erf", "woq_linear_add",
            "woq_linear_mul_add", "woq_linear_add_add")
KEYWORD_EXTRAS = {
    **{f"{op}{o}": ("non_finite",) for op in _WOQ_OPS for o in ("", ".out")},
    "dynamic_qlinear": ("act_quant", "non_finite"),
    "dynamic_qlinear.out": ("act_quant", "non_finite"),
    "fused_moe": ("w13_zero_points", "w2_zero_points", "mode", "act_quant",
                  "swiglu_alpha", "swiglu_limit", "non_finite"),
}

# zentorch's ops in the same family that w4jit does not register.
NOT_MIRRORED = {
    "zentorch_weight_prepack_for_dynamic_qlinear":
        "prepacks into zentorch's own DA8W4 layout; w4jit's dynamic_qlinear "
        "takes the woq_repack_weight layout and repacks on first use "
        "(is_weight_prepacked=True is refused with a message)",
}

# The tags zentorch 2.14 gives its ops (torch 2.4 and later have them);
# w4jit registers the same, on both overloads.
TAGS = {
    "woq_linear_add": ("needs_fixed_stride_order",),
    "woq_linear_mul_add": ("needs_fixed_stride_order",),
    "woq_linear_add_add": ("needs_fixed_stride_order",),
}

ZENTORCH_PREFIX = "zentorch_"
OP_NAME_ARG = "zentorch_op_name"


def w4jit_name(zentorch_name):
    """zentorch_woq_linear -> woq_linear."""
    if not zentorch_name.startswith(ZENTORCH_PREFIX):
        raise ValueError(f"{zentorch_name!r} is not a zentorch op name")
    return zentorch_name[len(ZENTORCH_PREFIX):]


def op_name_default(zentorch_default):
    """The default of w4jit's `zentorch_op_name`, from zentorch's:
    'zentorch::zentorch_woq_linear_out' -> 'w4jit::woq_linear_out'."""
    prefix = "zentorch::" + ZENTORCH_PREFIX
    if not zentorch_default.startswith(prefix):
        raise ValueError(f"{zentorch_default!r} does not start with {prefix}")
    return "w4jit::" + zentorch_default[len(prefix):]
