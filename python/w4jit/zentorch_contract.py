"""zentorch's op signatures, the contract torch.ops.w4jit.* keeps.

The strings are ZenDNN-pytorch-plugin's own schemas (src/cpu/cpp/
WOQ_Linear.cpp and DynamicQLinear.cpp, as registered under
TORCH_LIBRARY_FRAGMENT(zentorch, m)), stated once here as data.
tests/python/test_contract.py parses each with torch's schema parser and
compares it, argument by argument (name, type, default, keyword-only), and
its returns, with torch.ops.w4jit.<op>.default._schema, where <op> is the
zentorch name without its "zentorch_" prefix. The one permitted difference
is the default of the keyword-only `zentorch_op_name` (accepted and
ignored by w4jit): zentorch's names its own op, w4jit's names w4jit's.

A host ports by replacing torch.ops.zentorch.zentorch_X with
torch.ops.w4jit.X; see the README's mapping table.
"""

ZENTORCH_SCHEMAS = (
    "zentorch_woq_linear(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor? bias=None, "
    "*, str zentorch_op_name='zentorch::zentorch_woq_linear') -> Tensor",
    "zentorch_woq_linear_relu(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor? bias=None, "
    "*, str zentorch_op_name='zentorch::zentorch_woq_linear_relu') -> Tensor",
    "zentorch_woq_linear_sigmoid(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor? bias=None, "
    "*, str zentorch_op_name='zentorch::zentorch_woq_linear_sigmoid') "
    "-> Tensor",
    "zentorch_woq_linear_gelu_tanh(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor? bias=None, "
    "*, str zentorch_op_name='zentorch::zentorch_woq_linear_gelu_tanh') "
    "-> Tensor",
    "zentorch_woq_linear_gelu_erf(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor? bias=None, "
    "*, str zentorch_op_name='zentorch::zentorch_woq_linear_gelu_erf') "
    "-> Tensor",
    "zentorch_woq_linear_add(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor add_input, "
    "Tensor? bias=None, *, "
    "str zentorch_op_name='zentorch::zentorch_woq_linear_add') -> Tensor",
    "zentorch_woq_linear_mul_add(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor mul_input, "
    "Tensor add_input, Tensor? bias=None, *, "
    "str zentorch_op_name='zentorch::zentorch_woq_linear_mul_add') -> Tensor",
    "zentorch_woq_linear_add_add(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? weight_zero_points, Tensor add_input, "
    "Tensor add_input_2, Tensor? bias=None, *, "
    "str zentorch_op_name='zentorch::zentorch_woq_linear_add_add') -> Tensor",
    "zentorch_woq_repack_weight(Tensor unpacked_weight) -> Tensor",
    "zentorch_woq_repack_from_int4pack(Tensor packed_weight) -> Tensor",
    "zentorch_dynamic_qlinear(Tensor input, Tensor weight, "
    "Tensor weight_scales, Tensor? bias=None, *, "
    "str zentorch_op_name='zentorch::zentorch_dynamic_qlinear') -> Tensor",
)

# w4jit's own keyword-only arguments beyond zentorch's, each with a default,
# so that every call written for zentorch binds unchanged.
KEYWORD_EXTRAS = {"dynamic_qlinear": ("act_quant",)}

ZENTORCH_PREFIX = "zentorch_"
OP_NAME_ARG = "zentorch_op_name"


def w4jit_name(zentorch_name):
    """zentorch_woq_linear -> woq_linear."""
    if not zentorch_name.startswith(ZENTORCH_PREFIX):
        raise ValueError(f"{zentorch_name!r} is not a zentorch op name")
    return zentorch_name[len(ZENTORCH_PREFIX):]


def op_name_default(name):
    """The default of w4jit's `zentorch_op_name` for op `name`."""
    return f"w4jit::{name}"
