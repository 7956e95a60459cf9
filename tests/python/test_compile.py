"""torch.compile over w4jit: a small decoder-shaped module made of w4jit ops
(woq_linear and post-ops, their .out overloads, dynamic_qlinear)
and of the w4jit.Linear / w4jit.MoE modules compiles with fullgraph=True and
a dynamic token count M, with no graph break (torch._dynamo.explain), no
recompile when M changes, and gives the eager result bit for bit: with the
inductor backend and, where zentorch imports, backend="zentorch"; under
torch.inference_mode() too. torch 2.4 and later."""
import pytest
import torch

import w4jit
from w4jit import _fake
from reference import random_layer

TORCH_VERSION = tuple(int(p) for p in
                      torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(
    TORCH_VERSION < (2, 4) or not _fake.supported(),
    reason=f"torch {torch.__version__}: torch.compile with custom-op fakes "
    "and fake classes needs torch 2.4 or later")

OPS = torch.ops.w4jit
H, I, E, TOPK, GS = 64, 32, 4, 2, 32
DT = torch.bfloat16


def _repacked(n, k, u4=False):
    q, s, z = random_layer(n, k, GS, u4)
    return OPS.woq_repack_weight(q), s, z


class Decoder(torch.nn.Module):
    """x [M, H] -> attention-like projections (ops), a gated MLP
    (w4jit.Linear), a MoE (w4jit.MoE) and DA8W4 projections, with residual
    adds fused into the ops' epilogues. fused_moe (an op that writes its
    output in place) is compiled on its own (test_fused_moe_compiles)."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(7)
        torch.manual_seed(7)
        self.q, self.qs, self.qz = _repacked(H, H, u4=True)
        self.o, self.os, _ = _repacked(H, H)
        self.bias = torch.randn(H, generator=gen) * 0.1
        r, s, _ = _repacked(2 * I, H)
        self.gate_up = w4jit.Linear.from_zentorch(r, s, epilogue="silu_mul",
                                                  dtype=DT)
        r, s, _ = _repacked(H, I)
        self.down = w4jit.Linear.from_zentorch(r, s, epilogue="none+add",
                                               dtype=DT)
        w13 = [_repacked(2 * I, H) for _ in range(E)]
        w2 = [_repacked(H, I) for _ in range(E)]
        self.p13 = torch.stack([p for p, _, _ in w13])
        self.s13 = torch.stack([s for _, s, _ in w13])
        self.p2 = torch.stack([p for p, _, _ in w2])
        self.s2 = torch.stack([s for _, s, _ in w2])
        self.moe = w4jit.MoE.from_zentorch(self.p13, self.s13, self.p2,
                                           self.s2, dtype=DT)
        self.dq, self.dqs, _ = _repacked(H, H)
        self.m, self.ms, _ = _repacked(H, H)

    def forward(self, x, ids, weights):
        h = OPS.woq_linear_gelu_tanh(x, self.q.t(), self.qs, self.qz,
                                     self.bias)
        r = OPS.woq_linear_add(h, self.o.t(), self.os, None, x)
        g = self.gate_up(r)
        d = self.down(g, r)
        m = self.moe(d, ids, weights)
        q = OPS.dynamic_qlinear(m, self.dq.view(torch.int8), self.dqs,
                                act_quant="per_group")
        y = torch.empty_like(x)
        OPS.woq_linear_mul_add.out(q, self.m.t(), self.ms, None, d, m, out=y)
        return y + r


class FusedMoe(torch.nn.Module):
    """fused_moe alone (it writes its output in place), then a residual
    add; `mode` given as a keyword unless "auto" (the schema's default)."""

    def __init__(self, decoder, mode="auto"):
        super().__init__()
        self.d = decoder
        self.kwargs = {} if mode == "auto" else {"mode": mode}

    def forward(self, x, ids, weights):
        out = torch.zeros_like(x)
        OPS.fused_moe(out, x, self.d.p13, self.d.p2, None, None, weights,
                      ids, False, "silu", self.d.s13, self.d.s2,
                      **self.kwargs)
        return out + x


def _inputs(m, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, H, generator=gen).to(DT)
    ids = torch.stack([torch.randperm(E, generator=gen)[:TOPK]
                       for _ in range(m)]).int()
    weights = torch.rand(m, TOPK, generator=gen)
    return x, ids, weights


def _backends():
    backends = ["inductor"]
    try:
        import zentorch  # noqa: F401
        backends.append("zentorch")
    except ImportError:
        pass
    return backends


def test_no_graph_break():
    model = Decoder()
    explained = torch._dynamo.explain(model)(*_inputs(5, 0))
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


def _check_compiled(model, backend):
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    for i, m in enumerate((3, 5, 17, 64)):
        x, ids, weights = _inputs(m, i)
        if i == 0:
            for t in (x, ids, weights):
                torch._dynamo.mark_dynamic(t, 0)
            got = compiled(x, ids, weights)
        else:
            # A new M must not recompile: M is symbolic.
            with torch._dynamo.config.patch(error_on_recompile=True):
                got = compiled(x, ids, weights)
        want = model(x, ids, weights)
        assert got.shape == (m, H) and got.dtype == DT
        assert torch.equal(got, want), \
            f"{backend}, M = {m}: max diff {(got - want).abs().max()}"


@pytest.mark.parametrize("backend", _backends())
def test_compiled_matches_eager_bit_for_bit(backend):
    _check_compiled(Decoder(), backend)


@pytest.mark.parametrize("backend", _backends())
def test_compiled_under_inference_mode(backend):
    with torch.inference_mode():
        _check_compiled(Decoder(), backend)


@pytest.mark.skipif(not hasattr(torch, "export"), reason="no torch.export")
def test_export_traces_the_ops():
    # torch.export keeps the ops (and the class calls) as single nodes.
    model = Decoder()
    ep = torch.export.export(model, _inputs(5, 0), strict=False)
    targets = {str(n.target) for n in ep.graph.nodes
               if n.op == "call_function"}
    assert any("w4jit.woq_linear_add" in t for t in targets), targets
    assert any("call_torchbind" in t for t in targets), targets


def test_fused_moe_no_graph_break():
    model = FusedMoe(Decoder())
    explained = torch._dynamo.explain(model)(*_inputs(5, 0))
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("inference", (False, True),
                         ids=("grad", "inference_mode"))
@pytest.mark.parametrize("mode", ("auto", "w4a16", "da8w4"))
def test_fused_moe_compiles(backend, inference, mode):
    # fused_moe writes `output` in place and has a `mode` keyword: its own
    # functionalization (torch/moe_ops.cc) keeps torch off
    # auto_functionalized, whose `mode` parameter it would clash with.
    model = FusedMoe(Decoder(), mode=mode)
    with torch.inference_mode(inference):
        _check_compiled(model, backend)
