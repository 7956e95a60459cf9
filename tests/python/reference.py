"""Float64 references and the tolerances of docs/numerics.md."""
import torch
import torch.nn.functional as F


def random_layer(n, k, group_size, u4, scale_dtype=torch.float32):
    """-> q int8 [N, K] (s4 in [-8,7] or u4 in [0,15]), scales [G, N],
    zeros int8 [G, N] in [0, 15] or None."""
    g = 1 if group_size == -1 else k // group_size
    lo, hi = (0, 16) if u4 else (-8, 8)
    q = torch.randint(lo, hi, (n, k), dtype=torch.int8)
    scales = (torch.rand(g, n) * 0.02 + 0.001).to(scale_dtype)
    zeros = torch.randint(0, 16, (g, n), dtype=torch.int8) if u4 else None
    return q, scales, zeros


def _expand(t_gn, k):
    """[G, N] -> [N, K] repeating each group's value over its k."""
    g = t_gn.shape[0]
    return t_gn.t().repeat_interleave(k // g, dim=1)


def dequant(q, scales, zeros, numerics="exact"):
    """f64 [N, K] weights: (u - z) * s or q * s. numerics="zentorch": that
    product in f32 rounded to bf16 (nearest even), the weight zentorch /
    AOCL multiply with (docs/numerics-zentorch.md)."""
    k = q.shape[1]
    w = q.double()
    if zeros is not None:
        w = w - _expand(zeros.double(), k)
    if numerics == "zentorch":
        # (u - z) is exact in f32; one rounding for the product, one to bf16.
        s = _expand(scales.float(), k)
        return (w.float() * s).bfloat16().double()
    assert numerics == "exact", numerics
    return w * _expand(scales.double(), k)


def int4_kernel_terms(x, u, z, s):
    """The terms the f32 int4 kernel's byte decode sums (numerics.md's
    Tolerances; check/w4a16_magnitude.h), f64 [..., N]: |x| @ (c |s|)^T with
    c = u + z + 2, u the nibble in [0, 15] and z its zero point (8 for s4 and
    float zero points), each k's larger bound of its even and odd place
    (act-order moves k between them). u, z, s: [N, K], z and s expanded per
    k (z may be a number). A test's T is its own terms plus these: the sum
    bounds the larger of the two ways the kernels add a group."""
    c = u.double() + z + 2.0
    return x.double().abs() @ (c * s.double().abs()).t()


def w4a16_magnitude(x, q, scales, zeros):
    """T of numerics.md's tolerance, f64 [..., N], without the bias: per
    group the larger of |s| * sum |u - z| |x| plus the zero-point
    correction a kernel may fold out, |(8 - z) * s| * sum |x|, and the
    terms of the f32 int4 kernel's byte decode (int4_kernel_terms)."""
    k = q.shape[1]
    g = scales.shape[0]
    s = _expand(scales.double().abs(), k)
    qd = q.double()
    if zeros is not None:
        z = _expand(zeros.double(), k)
        exact = ((qd - z).abs() + (8.0 - z).abs()) * s
        byte_decode = (qd + z + 2.0) * s
    else:
        exact = qd.abs() * s
        byte_decode = (qd + 18.0) * s  # u = q + 8, z = 8
    xa = x.double().abs()
    xa = xa.reshape(*xa.shape[:-1], g, k // g)
    n = q.shape[0]
    per_group = torch.maximum(
        torch.einsum("...gk,ngk->...ng", xa, exact.reshape(n, g, k // g)),
        torch.einsum("...gk,ngk->...ng", xa,
                     byte_decode.reshape(n, g, k // g)))
    return per_group.sum(-1)


def w4a16_reference(x, q, scales, zeros, bias, numerics="exact"):
    """(y f64 [..., N], magnitude T f64 [..., N]) with T as in numerics.md's
    tolerance (w4a16_magnitude) + |bias|."""
    w = dequant(q, scales, zeros, numerics)
    xd = x.double()
    y = xd @ w.t()
    mag = w4a16_magnitude(x, q, scales, zeros)
    if bias is not None:
        y = y + bias.double()
        mag = mag + bias.double().abs()
    return y, mag


def quantize_rows(x):
    """numerics.md's per-row int8 quantization: (qa f64, sa f64 [..., 1])."""
    xf = x.float()
    amax = xf.abs().amax(dim=-1, keepdim=True)
    sa = torch.clamp(amax, min=1e-10) / 127.0  # f32, as defined
    qa = torch.clamp(torch.round(xf / sa), -127, 127)  # half-even
    return qa.double(), sa.double()


def da8w4_reference(x, q, scales, zeros, bias):
    """Exact integer definition of DA8W4: (y f64, T f64)."""
    qa, sa = quantize_rows(x)
    k = q.shape[1]
    g = scales.shape[0]
    w = q.double()
    if zeros is not None:
        w = w - _expand(zeros.double(), k)
    # acc[..., n, g] exact in f64 (|acc| < 2^53).
    qa_g = qa.reshape(*qa.shape[:-1], g, k // g)
    w_g = w.reshape(w.shape[0], g, k // g)
    acc = torch.einsum("...gk,ngk->...ng", qa_g, w_g)
    s = scales.double().t()  # [N, G]
    y = sa * (acc * s).sum(-1)
    mag = sa * (acc * s).abs().sum(-1)
    if bias is not None:
        y = y + bias.double()
        mag = mag + bias.double().abs()
    return y, mag


def bf16_ulp(v):
    """One bf16 ulp of |v| (f64)."""
    a = v.abs().clamp(min=2.0**-126)
    return torch.exp2(torch.floor(torch.log2(a)) - 7)


def assert_close(got, want, mag, out_dtype):
    """|got - want| <= 1e-5 * T + 1e-6 (+ 1 bf16 ulp of |want| for bf16)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == out_dtype, (got.dtype, out_dtype)
    tol = 1e-5 * mag + 1e-6
    if out_dtype == torch.bfloat16:
        tol = tol + bf16_ulp(want)
    err = (got.double() - want).abs()
    bad = err > tol
    if bad.any():
        idx = tuple(i.item() for i in bad.nonzero()[0])
        raise AssertionError(
            f"{int(bad.sum())} of {bad.numel()} outputs out of tolerance; "
            f"first at {idx}: got {got[idx].item()}, want {want[idx].item()}"
            f", tol {tol[idx].item()}")


def make_x(shape, dtype, layout):
    """Activations of `shape`: "contiguous"; "row_slice", rows wider than K
    (unit last stride, read in place); "strided", every other element (the
    op copies it)."""
    if layout == "contiguous":
        return torch.randn(shape).to(dtype)
    wide = list(shape)
    wide[-1] *= 2
    x = torch.randn(wide).to(dtype)
    return x[..., : shape[-1]] if layout == "row_slice" else x[..., ::2]


MOE_ACTS = {"silu": F.silu, "gelu": F.gelu,
            "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
# Every MoE gate: MOE_ACTS' act(g) * u on [gate | up] halves, and gpt-oss's
# swigluoai on interleaved rows.
MOE_GATES = list(MOE_ACTS) + ["swigluoai"]


def stacked_experts(e, h, i, group_size):
    """e random s4 experts of a gated MLP (w13: [2I, H], w2: [H, I]):
    (per-expert random_layer tuples w13, w2, then the stacked repacked
    int32 weights p13 [E, 2I, H/8], p2 [E, H, I/8] and f32 scales s13
    [E, G, 2I], s2 [E, G, H])."""
    w13 = [random_layer(2 * i, h, group_size, False) for _ in range(e)]
    w2 = [random_layer(h, i, group_size, False) for _ in range(e)]
    repack = torch.ops.w4jit.woq_repack_weight
    p13 = torch.stack([repack(q) for q, _, _ in w13])
    p2 = torch.stack([repack(q) for q, _, _ in w2])
    s13 = torch.stack([s for _, s, _ in w13])
    s2 = torch.stack([s for _, s, _ in w2])
    return w13, w2, p13, p2, s13, s2


def moe_gate(act, gu, alpha=1.702, limit=7.0):
    """The intermediate of one expert from its w13 output gu [..., 2I]:
    act(g) * u with g, u the halves; for "swigluoai" (vLLM's
    swigluoai_and_mul) g = gu[..., 0::2], u = gu[..., 1::2], g clamped
    above at limit, u to [-limit, limit], g * sigmoid(alpha g) * (u + 1)."""
    if act == "swigluoai":
        g = gu[..., 0::2].clamp(max=limit)
        u = gu[..., 1::2].clamp(min=-limit, max=limit)
        return g * torch.sigmoid(alpha * g) * (u + 1)
    inter = gu.shape[-1] // 2
    return MOE_ACTS[act](gu[..., :inter]) * gu[..., inter:]


def moe_da8w4_reference(x, w13, w2, b13, b2, ids, weights, act,
                        alpha=1.702, limit=7.0):
    """DA8W4 with per-token activation scales, as zentorch_fused_moe runs
    packed s4 experts: x's row quantized to int8 (quantize_rows), w13 in
    exact integers, the gate in f64, the intermediate row quantized again,
    w2 in exact integers (da8w4_reference, biases added in f64). -> (y f64
    [T, H], mag: the sum of |terms| of the down projections, flip: the most
    y may move where an element of the intermediate lies within 0.02 of a
    rounding boundary of its quantization (a correct f32 computation of
    the intermediate may round it to the other int8 value))."""
    y = torch.zeros(x.shape, dtype=torch.float64)
    mag = torch.zeros(x.shape, dtype=torch.float64)
    flip = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            q13, s13, z13 = w13[e]
            gu, _ = da8w4_reference(x[t:t + 1], q13, s13, z13,
                                    None if b13 is None else b13[e])
            h = moe_gate(act, gu[0], alpha, limit)
            q2, s2, z2 = w2[e]
            o, omag = da8w4_reference(h.float().unsqueeze(0), q2, s2, z2,
                                      None if b2 is None else b2[e])
            _, sa = quantize_rows(h.float().unsqueeze(0))
            ratio = h / sa[0]
            near = ((ratio - ratio.floor() - 0.5).abs() < 0.02).double()
            w = 1.0 if weights is None else float(weights[t, j])
            y[t] += w * o[0]
            mag[t] += abs(w) * omag[0]
            flip[t] += abs(w) * (dequant(q2, s2, z2).abs() @ (near * sa[0]))
    return y, mag, flip


def moe_reference(x, w13, w2, b13, b2, ids, weights, act, alpha=1.702,
                  limit=7.0):
    """A MoE layer in f64: w13[e] and w2[e] are (q, scales, zeros) of expert
    e's [gate | up] (2I x H) and down (H x I) projections, b13 / b2 [E, 2I] /
    [E, H] or None, weights None for unweighted. -> (y f64 [T, H], a
    magnitude for the tolerance: the sum of |terms| of the down
    projections, and with bf16 x the most that rounding the intermediate
    to bf16 (which W4A16's w2 may do, w4jit/moe.hpp) moves y)."""
    y = torch.zeros(x.shape, dtype=torch.float64)
    mag = torch.zeros(x.shape, dtype=torch.float64)
    hround = torch.zeros(x.shape, dtype=torch.float64)
    xd = x.double()
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            gu = dequant(*w13[e]) @ xd[t]
            if b13 is not None:
                gu = gu + b13[e].double()
            h = moe_gate(act, gu, alpha, limit)
            w2e = dequant(*w2[e])
            o = w2e @ h
            if b2 is not None:
                o = o + b2[e].double()
            w = 1.0 if weights is None else float(weights[t, j])
            y[t] += w * o
            mag[t] += abs(w) * (w2e.abs() @ h.abs() + o.abs())
            if x.dtype == torch.bfloat16:
                hround[t] += abs(w) * (w2e.abs() @ (bf16_ulp(h) / 2))
    return y, mag, hround
