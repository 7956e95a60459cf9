"""The plugin's two calls, a dense int4 layer and a MoE layer's experts,
as opaque torch custom ops under vLLM's compiled mode.

vLLM's compiled mode (torch.compile with inductor, its default) traces the
model down to the int4 kernel's `apply_weights` and, on CPUs, the MoE
quant method's `apply`. A `w4jit.Linear` or `w4jit.MoE` called there would
be traced as a torchbind method call, which inductor's wrapper then runs
through `torch.ops.higher_order.call_torchbind` at every step: about
20 µs of Python a call against 3.5 µs for the direct call (thread CPU
time, one thread, torch 2.13). While Dynamo traces, the plugin instead
calls `torch.ops.w4jit_vllm.linear` / `.experts`, functional custom ops
whose fakes give the result's metadata and whose bodies call the layer
directly (about 7 µs a call); in eager mode the plugin calls the same
bodies without the dispatcher. Either way:

- what the model computes is `w4jit.Linear` / `w4jit.MoE` on the inputs it
  is handed, compiled or not;
- experts observers (the vLLM lane's check that every compiled experts
  call equals `w4jit.MoE` run again on the same inputs, docs/vllm.md) see
  each call as it runs;
- the profiler names each call (`w4jit_vllm::linear`, `::experts`).

A layer travels as an integer id (a custom op takes tensors and scalars,
not Python objects); Dynamo specializes the id as a constant of the graph,
one per layer. The registry holds weak references: a model that is
dropped frees its layers.
"""
import itertools
import weakref

import torch

_ids = itertools.count()
_layers = {}  # id -> weakref to a w4jit.Linear or w4jit.MoE
# Callables f(layer_id, x, topk_ids, topk_weights, y) run after each
# experts call.
observers = []


def register(module):
    """The id the ops know `module` by, for the life of `module`."""
    layer_id = next(_ids)
    _layers[layer_id] = weakref.ref(module,
                                    lambda _: _layers.pop(layer_id, None))
    return layer_id


def layer(layer_id):
    ref = _layers.get(layer_id)
    module = None if ref is None else ref()
    if module is None:
        raise RuntimeError(f"w4jit: no live layer has id {layer_id}")
    return module


def _linear(x, layer_id):
    return layer(layer_id)(x)


def _experts(x, topk_ids, topk_weights, layer_id):
    y = layer(layer_id)(x, topk_ids, topk_weights)
    for observe in observers:
        observe(layer_id, x, topk_ids, topk_weights, y)
    return y


def _define():
    """Registers torch.ops.w4jit_vllm.linear and .experts on a torch that
    has custom_op (2.4 and later, every torch vLLM runs on); False on an
    older one."""
    custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
    if custom_op is None:
        return False

    @custom_op("w4jit_vllm::linear", mutates_args=())
    def linear(x: torch.Tensor, layer_id: int) -> torch.Tensor:
        return _linear(x, layer_id)

    @linear.register_fake
    def _(x, layer_id):
        # w4jit.Linear returns a contiguous [..., N] in x's dtype (the
        # plugin builds it in vLLM's activation dtype).
        return x.new_empty((*x.shape[:-1], layer(layer_id).out_features))

    @custom_op("w4jit_vllm::experts", mutates_args=())
    def experts(x: torch.Tensor, topk_ids: torch.Tensor,
                topk_weights: torch.Tensor, layer_id: int) -> torch.Tensor:
        return _experts(x, topk_ids, topk_weights, layer_id)

    @experts.register_fake
    def _(x, topk_ids, topk_weights, layer_id):
        # w4jit.MoE returns a contiguous [T, H] in its dtype, built equal
        # to the activations' (moe_method._in_dtype).
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    return True


_HAVE_OPS = _define()


def _compiling():
    compiler = getattr(torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None)
    return is_compiling is not None and is_compiling()


def linear(x, layer_id):
    """y = the dense layer `layer_id` on x."""
    if _HAVE_OPS and _compiling():
        return torch.ops.w4jit_vllm.linear(x, layer_id)
    return _linear(x, layer_id)


def experts(x, topk_ids, topk_weights, layer_id):
    """y = the experts of MoE layer `layer_id` on (x, topk_ids,
    topk_weights)."""
    if _HAVE_OPS and _compiling():
        return torch.ops.w4jit_vllm.experts(x, topk_ids, topk_weights,
                                            layer_id)
    return _experts(x, topk_ids, topk_weights, layer_id)
