"""torch.ops.w4jit.* keeps zentorch's signatures: each schema string held in
w4jit.zentorch_contract (zentorch 2.14.0.1's, default and .out overloads)
is parsed by torch and compared, argument by argument, with the registered
w4jit op's schema; where zentorch is installed, the strings are compared
with its live schemas and tags as well. woq_linear_silu_mul (w4jit's extra)
keeps woq_linear's arguments."""
import pytest
import torch

import w4jit  # noqa: F401
from w4jit import zentorch_contract as contract

OPS = torch.ops.w4jit


def _arg_tuple(a):
    written = bool(a.alias_info is not None and a.alias_info.is_write)
    return (a.name, str(a.type), a.has_default_value(),
            a.default_value if a.has_default_value() else None, a.kwarg_only,
            written)


def _registered(name, overload="default"):
    packet = getattr(OPS, name, None)
    if packet is None:
        return None
    return getattr(packet, overload, None)


def _overload(schema):
    return schema.overload_name or "default"


def _key(schema):
    """w4jit's name for a zentorch schema: "woq_linear" or "woq_linear.out"."""
    name = contract.w4jit_name(schema.name)
    return name + ("." + schema.overload_name if schema.overload_name else "")


ENTRIES = [torch._C.parse_schema(s) for s in contract.ZENTORCH_SCHEMAS]


def test_contract_data_parses_and_names_zentorch_ops():
    keys = [(s.name, s.overload_name) for s in ENTRIES]
    assert len(keys) == len(set(keys)) == 21
    assert all(s.name.startswith("zentorch_") for s in ENTRIES)
    assert set(contract.KEYWORD_EXTRAS) <= {_key(s) for s in ENTRIES}


def _compare(zen, ours, extras):
    """ours (a registered w4jit schema) against zen (zentorch's)."""
    for a in ours.arguments:
        if a.name in extras:
            assert a.kwarg_only and a.has_default_value(), \
                f"extra argument {a.name} must be keyword-only with a " \
                f"default: {ours}"
    mine_args = [a for a in ours.arguments if a.name not in extras]
    assert [a.name for a in mine_args] == [a.name for a in zen.arguments], \
        f"{ours} vs {zen}"
    for mine, theirs in zip(mine_args, zen.arguments):
        want = _arg_tuple(theirs)
        if theirs.name == contract.OP_NAME_ARG:
            # The default names the op.
            want = (want[:3] + (contract.op_name_default(want[3]),)
                    + want[4:])
        assert _arg_tuple(mine) == want, f"{ours} vs {zen}"
    assert [str(r.type) for r in ours.returns] == \
        [str(r.type) for r in zen.returns], f"{ours} vs {zen}"


@pytest.mark.parametrize("zen", ENTRIES, ids=_key)
def test_schema_matches_zentorch(zen):
    key = _key(zen)
    op = _registered(contract.w4jit_name(zen.name), _overload(zen))
    if op is None:
        pytest.fail(f"torch.ops.w4jit.{key} is not registered")
    ours = op._schema
    assert ours.overload_name == zen.overload_name
    extras = contract.KEYWORD_EXTRAS.get(key, ())
    assert {a.name for a in ours.arguments} >= set(extras), \
        f"{key}: KEYWORD_EXTRAS names arguments the op lacks: {ours}"
    _compare(zen, ours, extras)


def test_silu_mul_extra_takes_woq_linears_arguments():
    for overload in ("default", "out"):
        base = _registered("woq_linear", overload)._schema
        extra = _registered("woq_linear_silu_mul", overload)._schema
        assert [_arg_tuple(a)[:3] for a in extra.arguments] == \
            [_arg_tuple(a)[:3] for a in base.arguments]
        assert [str(r.type) for r in extra.returns] == \
            [str(r.type) for r in base.returns]


TORCH_VERSION = tuple(int(p) for p in
                      torch.__version__.split("+")[0].split(".")[:2])


@pytest.mark.skipif(TORCH_VERSION < (2, 4),
                    reason=f"torch {torch.__version__}: w4jit registers "
                    "zentorch's tags on torch 2.4 and later (1.13's "
                    "Library::def takes no tags with a kernel)")
@pytest.mark.parametrize("zen", ENTRIES, ids=_key)
def test_tags_as_zentorch_registers_them(zen):
    name = contract.w4jit_name(zen.name)
    op = _registered(name, _overload(zen))
    want = {getattr(torch.Tag, t) for t in contract.TAGS.get(name, ())}
    assert set(op.tags) == want, f"{_key(zen)}: {op.tags}"


def _zentorch():
    try:
        import zentorch  # noqa: F401
    except ImportError as e:
        pytest.skip(f"zentorch is not installed here ({e})")
    return torch.ops.zentorch


def _zentorch_family(zops):
    """zentorch's ops of the families w4jit mirrors."""
    words = ("woq", "dynamic_qlinear", "fused_moe")
    return sorted(n for n in dir(zops)
                  if n.startswith("zentorch_") and any(w in n for w in words))


@pytest.mark.parametrize("zen", ENTRIES, ids=_key)
def test_contract_matches_live_zentorch(zen):
    zops = _zentorch()
    packet = getattr(zops, zen.name, None)
    assert packet is not None, f"zentorch has no {zen.name}"
    live = getattr(packet, _overload(zen))
    assert [_arg_tuple(a) for a in live._schema.arguments] == \
        [_arg_tuple(a) for a in zen.arguments], \
        f"contract {zen} vs zentorch {live._schema}"
    assert [str(r.type) for r in live._schema.returns] == \
        [str(r.type) for r in zen.returns]
    want = set(contract.TAGS.get(contract.w4jit_name(zen.name), ()))
    assert {t.name for t in live.tags} == want, live.tags


def test_every_live_zentorch_op_is_mirrored_or_listed():
    zops = _zentorch()
    have = {(s.name, _overload(s)) for s in ENTRIES}
    missing = []
    for name in _zentorch_family(zops):
        for overload in getattr(zops, name).overloads():
            if (name, overload) not in have and \
                    name not in contract.NOT_MIRRORED:
                missing.append(f"{name}.{overload}")
    assert not missing, f"zentorch ops neither in the contract nor in " \
        f"NOT_MIRRORED: {missing}"


def test_calls_written_for_zentorch_bind():
    # Positional as zentorch's tests call them, bias omitted, and by
    # zentorch's keyword names.
    q = torch.randint(-8, 8, (32, 64), dtype=torch.int8)
    s = torch.rand(2, 32)
    w = OPS.woq_repack_weight(q).t()
    x = torch.randn(3, 64)
    a = torch.randn(3, 32)
    y = OPS.woq_linear(x, w, s, None)
    assert torch.equal(y, OPS.woq_linear(x, w, s, None, None))
    assert torch.equal(y, OPS.woq_linear(
        input=x, weight=w, weight_scales=s, weight_zero_points=None))
    assert torch.equal(OPS.woq_linear_add(x, w, s, None, a),
                       OPS.woq_linear_add(x, w, s, None, add_input=a,
                                          bias=None))
    assert torch.equal(OPS.woq_repack_weight(unpacked_weight=q),
                       OPS.woq_repack_weight(q))
    # The .out overloads: the op name positional, out keyword-only.
    out = torch.empty(3, 32)
    assert OPS.woq_linear.out(x, w, s, None, None, "name", out=out) is None
    assert torch.equal(out, y)
    out.zero_()
    OPS.woq_linear_add.out(x, w, s, None, a, out=out)
    assert torch.equal(out, OPS.woq_linear_add(x, w, s, None, a))
