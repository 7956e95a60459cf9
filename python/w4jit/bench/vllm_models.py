"""Locally made models for vLLM: random weights, a local tokenizer, and the
same weights quantized by w4jit.formats to compressed-tensors W4A16
(pack-quantized, group 128) or GPTQ. Nothing is downloaded.

    python3 -m w4jit.bench.vllm_models OUT_DIR [--shape tiny|small|1b|moe-tiny|moe]
        [--seed 0] [--variants bf16,ct-w4a16-g128,...]

writes OUT_DIR/{bf16, ct-w4a16-g128, ct-w4a16-g128-asym, gptq-w4a16-g128,
awq-w4a16-g128}
(each a Hugging Face model folder vLLM loads) and OUT_DIR/tokenizer. Needs
safetensors, tokenizers and transformers (a vLLM venv has them).
"""
import argparse
import json
import os

import torch

from .. import formats

# Llama-3-shaped dense models. "1b" is Llama 3.2 1B's shape (1.24 G
# parameters, tied embeddings); "tiny" keeps every dimension a multiple of
# 128 so that each projection has whole groups.
SHAPES = {
    "tiny": dict(hidden=256, intermediate=768, layers=2, heads=4, kv_heads=2,
                 vocab=2048, tie=False),
    "small": dict(hidden=2048, intermediate=5632, layers=4, heads=16,
                  kv_heads=4, vocab=32000, tie=False),
    "1b": dict(hidden=2048, intermediate=8192, layers=16, heads=32,
               kv_heads=8, vocab=128256, tie=True),
    # Qwen3-MoE-shaped (Qwen3-30B-A3B's hidden, expert and head sizes; fewer
    # experts and layers): every layer a top-k MoE of gated SiLU experts.
    "moe-tiny": dict(hidden=256, intermediate=256, layers=2, heads=4,
                     kv_heads=2, vocab=2048, tie=False, experts=8, top_k=2,
                     head_dim=64),
    "moe": dict(hidden=2048, intermediate=768, layers=8, heads=32,
                kv_heads=4, vocab=32000, tie=False, experts=32, top_k=8,
                head_dim=128),
    # Qwen2-MoE-shaped: routed experts plus one sigmoid-gated shared expert
    # per layer (the shared expert is a dense MLP vLLM runs beside the
    # routed ones), q/k/v with bias.
    "moe-shared-tiny": dict(hidden=256, intermediate=128, layers=2, heads=4,
                            kv_heads=2, vocab=2048, tie=False, experts=8,
                            top_k=2, shared=256),
}
GROUP = 128
VARIANTS = ("bf16", "ct-w4a16-g128", "ct-w4a16-g128-asym", "gptq-w4a16-g128",
            "awq-w4a16-g128")
# Also made on request: "gptq-w4a16-g128-qhead", GPTQ with the lm_head
# quantized too (GPTQ's "lm_head": true, which vLLM runs through its int4
# linear kernels; untied shapes only).
QHEAD = "gptq-w4a16-g128-qhead"
# Also made on request: DEQUANT + an int4 variant, a plain bf16 model whose
# linear weights are that variant's int4 weights dequantized, (q - z) * s
# rounded to bf16. vLLM runs it with its bf16 layers on every CPU: the
# reference for the int4 model where vLLM has no int4 kernel of its own
# (its op library for CPUs without AVX-512 has none).
DEQUANT = "dequant-"

# A few lines of text for the tokenizer's BPE merges.
_CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "int4 weights are unpacked in registers and multiplied with bf16 "
    "activations",
    "a linear layer computes y equals x times w transposed plus bias",
    "tokens per second at batch one four and sixteen",
    "vllm serves a model with paged attention on a cpu",
    "zero points scales groups of one hundred twenty eight channels",
] * 4


def make_tokenizer(out_dir, vocab=1024):
    """A byte-level BPE tokenizer trained on _CORPUS, saved as a
    PreTrainedTokenizerFast folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>",
                                   eos_token="</s>")
    fast.save_pretrained(out_dir)
    return len(fast)


def _config(s, quant):
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": s["hidden"],
        "intermediate_size": s["intermediate"],
        "num_hidden_layers": s["layers"],
        "num_attention_heads": s["heads"],
        "num_key_value_heads": s["kv_heads"],
        "head_dim": _head_dim(s),
        "vocab_size": s["vocab"],
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": s["tie"],
        "bos_token_id": 0,
        "eos_token_id": 1,
        "torch_dtype": "bfloat16",
    }
    if "shared" in s:
        config.update({
            "architectures": ["Qwen2MoeForCausalLM"],
            "model_type": "qwen2_moe",
            "moe_intermediate_size": s["intermediate"],
            "shared_expert_intermediate_size": s["shared"],
            "num_experts": s["experts"],
            "num_experts_per_tok": s["top_k"],
            "norm_topk_prob": False,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        })
    elif "experts" in s:
        config.update({
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "moe_intermediate_size": s["intermediate"],
            "num_experts": s["experts"],
            "num_experts_per_tok": s["top_k"],
            "norm_topk_prob": True,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "attention_bias": False,
        })
    if quant is not None:
        config["quantization_config"] = quant
    return config


def _head_dim(s):
    return s.get("head_dim", s["hidden"] // s["heads"])


def _ct_quant_config(symmetric):
    weights = {"num_bits": 4, "type": "int", "symmetric": symmetric,
               "strategy": "group", "group_size": GROUP, "dynamic": False,
               "actorder": None, "observer": "minmax"}
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {
            "targets": ["Linear"], "weights": weights,
            "input_activations": None, "output_activations": None,
            "format": "pack-quantized"}},
        "ignore": ["lm_head", "re:.*mlp.gate$"],
        "kv_cache_scheme": None,
    }


def _gptq_quant_config(qhead=False):
    # modules_in_block_to_quantize as GPTQModel writes it (substrings of the
    # quantized layers' names): without it a reader that does not look at
    # the tensors' dtypes (vLLM's moe_wna16 delegate) quantizes the MoE
    # router gate too.
    return {"quant_method": "gptq", "bits": 4, "group_size": GROUP,
            "desc_act": False, "sym": True, "lm_head": qhead,
            "checkpoint_format": "gptq",
            "modules_in_block_to_quantize": [
                ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
                ["self_attn.o_proj"],
                ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                 "mlp.experts", "mlp.shared_expert."]] + (
                     [["lm_head"]] if qhead else [])}


def _awq_quant_config(s):
    # AWQ names what stays unquantized by substring: the MoE router gate
    # ("mlp.gate" matches no expert or attention layer of these shapes).
    return {"quant_method": "awq", "bits": 4, "group_size": GROUP,
            "zero_point": True, "version": "gemm",
            "modules_to_not_convert": ["mlp.gate"] if "experts" in s else []}


def quantize(w, symmetric):
    """w [N, K] -> (q int8 [N, K], scales [G, N] bf16, zeros [G, N] int8 or
    None): round-to-nearest over groups of GROUP input channels."""
    n, k = w.shape
    g = w.float().reshape(n, k // GROUP, GROUP)
    if symmetric:
        s = g.abs().amax(-1).clamp_min(1e-8) / 7.0
        q = torch.round(g / s.unsqueeze(-1)).clamp(-8, 7)
        z = None
    else:
        lo, hi = g.amin(-1), g.amax(-1)
        s = ((hi - lo) / 15.0).clamp_min(1e-8)
        zf = torch.round(-lo / s).clamp(0, 15)
        q = torch.round(g / s.unsqueeze(-1) + zf.unsqueeze(-1)).clamp(0, 15)
        z = zf.t().to(torch.int8).contiguous()
    s = s.to(torch.bfloat16)
    return (q.reshape(n, k).to(torch.int8), s.t().contiguous(), z)


def _symmetric(variant):
    """Whether a variant's checkpoint is quantized without zero points
    (compressed-tensors symmetric and GPTQ; the -asym one and AWQ have
    them)."""
    return variant in ("ct-w4a16-g128", "gptq-w4a16-g128", QHEAD)


def dequantized(w, variant):
    """The weight [N, K] an int4 variant's checkpoint stands for, in bf16:
    the same round-to-nearest quantization as _quantized_tensors, then
    (q - z) * s in f32."""
    q, s, z = quantize(w, _symmetric(variant))
    scale = s.t().float().repeat_interleave(GROUP, dim=1)
    zero = 0.0 if z is None else z.t().float().repeat_interleave(GROUP, dim=1)
    return ((q.float() - zero) * scale).to(torch.bfloat16)


def _quantized_tensors(name, w, variant):
    """The checkpoint tensors standing for linear weight `name` [N, K]."""
    base = name[:-len(".weight")]
    n, k = w.shape
    q, s, z = quantize(w, _symmetric(variant))
    if variant in ("gptq-w4a16-g128", QHEAD):
        qweight, _, scales = formats.pack_gptq(q, s)
        # Symmetric GPTQ still ships qzeros (all 8, stored 7 in v1).
        qzeros = formats.pack_gptq(
            q, s, torch.full_like(s, 8, dtype=torch.int8))[1]
        return {f"{base}.qweight": qweight, f"{base}.qzeros": qzeros,
                f"{base}.scales": scales,
                f"{base}.g_idx": torch.arange(k, dtype=torch.int32) // GROUP}
    if variant == "awq-w4a16-g128":
        qweight, qzeros, scales = formats.pack_awq(q, s, z)
        return {f"{base}.qweight": qweight, f"{base}.qzeros": qzeros,
                f"{base}.scales": scales}
    packed, scale, zp = formats.pack_compressed_tensors(q, s, z)
    out = {f"{base}.weight_packed": packed, f"{base}.weight_scale": scale,
           f"{base}.weight_shape": torch.tensor([n, k], dtype=torch.int64)}
    if zp is not None:
        out[f"{base}.weight_zero_point"] = zp
    return out


def _tensors(s, seed):
    """(name, tensor, is_quantizable_linear) in checkpoint order."""
    gen = torch.Generator().manual_seed(seed)
    h, i, hd = s["hidden"], s["intermediate"], _head_dim(s)
    ones = lambda n: torch.ones(n, dtype=torch.bfloat16)  # noqa: E731

    def randn(*shape, std=None):
        # 1 / sqrt(fan-in) by default: each layer's output is of the order
        # of its input at every width (Llama 3 8B's trained weights have
        # about that spread too), so the layers matter to the logits.
        std = shape[-1] ** -0.5 if std is None else std
        return (torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)

    # Logits of standard deviation about 4.5 (not 0.02 * sqrt(h)): a next-
    # token distribution peaked enough that greedy decoding is not a run of
    # near-ties. Tied models get it from the embedding, std 0.1 at h = 2048.
    yield "model.embed_tokens.weight", randn(s["vocab"], h, std=0.1), False
    for layer in range(s["layers"]):
        p = f"model.layers.{layer}."
        yield p + "input_layernorm.weight", ones(h), False
        yield p + "post_attention_layernorm.weight", ones(h), False
        for proj, n, k in (("q", s["heads"] * hd, h),
                           ("k", s["kv_heads"] * hd, h),
                           ("v", s["kv_heads"] * hd, h),
                           ("o", h, s["heads"] * hd)):
            yield f"{p}self_attn.{proj}_proj.weight", randn(n, k), True
            if "shared" in s and proj != "o":  # Qwen2's q/k/v bias
                yield (f"{p}self_attn.{proj}_proj.bias",
                       randn(n, std=0.02), False)
        if "experts" not in s:
            for proj, n, k in (("gate", i, h), ("up", i, h), ("down", h, i)):
                yield f"{p}mlp.{proj}_proj.weight", randn(n, k), True
            continue
        if "shared" in s:
            for proj, n, k in (("gate", s["shared"], h),
                               ("up", s["shared"], h),
                               ("down", h, s["shared"])):
                yield (f"{p}mlp.shared_expert.{proj}_proj.weight",
                       randn(n, k), True)
            yield p + "mlp.shared_expert_gate.weight", randn(1, h), False
        else:
            yield p + "self_attn.q_norm.weight", ones(hd), False
            yield p + "self_attn.k_norm.weight", ones(hd), False
        yield p + "mlp.gate.weight", randn(s["experts"], h, std=0.1), False
        for e in range(s["experts"]):
            for proj, n, k in (("gate", i, h), ("up", i, h), ("down", h, i)):
                yield (f"{p}mlp.experts.{e}.{proj}_proj.weight",
                       randn(n, k), True)
    yield "model.norm.weight", ones(h), False
    if not s["tie"]:
        yield "lm_head.weight", randn(s["vocab"], h, std=4.5 / h ** 0.5), False


def make_model(out_dir, shape="tiny", seed=0, variants=VARIANTS):
    """Writes one model folder per variant under out_dir (same random
    weights in each), plus out_dir/tokenizer; returns {variant: path}.
    A shape with experts makes a Qwen3-MoE model, the others Llamas."""
    from safetensors.torch import save_file
    s = SHAPES[shape]
    tok_dir = os.path.join(out_dir, "tokenizer")
    make_tokenizer(tok_dir)
    if QHEAD in variants and s["tie"]:
        raise ValueError(f"{QHEAD}: shape {shape} ties the lm_head to the "
                         "embedding, which stays bf16")
    tensors = {v: {} for v in variants}
    for name, w, linear in _tensors(s, seed):
        for v in variants:
            quantize_head = v == QHEAD and name == "lm_head.weight"
            if linear and v.startswith(DEQUANT):
                tensors[v][name] = dequantized(w, v[len(DEQUANT):])
            elif (linear or quantize_head) and v != "bf16":
                tensors[v].update(_quantized_tensors(name, w, v))
            else:
                tensors[v][name] = w
    paths = {}
    for v in variants:
        path = os.path.join(out_dir, v)
        os.makedirs(path, exist_ok=True)
        quant = None
        if v.startswith("ct-"):
            quant = _ct_quant_config(symmetric=not v.endswith("-asym"))
        elif v.startswith("gptq-"):
            quant = _gptq_quant_config(qhead=v == QHEAD)
        elif v.startswith("awq-"):
            quant = _awq_quant_config(s)
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(_config(s, quant), f, indent=1)
        save_file({k: t.contiguous() for k, t in tensors[v].items()},
                  os.path.join(path, "model.safetensors"),
                  metadata={"format": "pt"})
        for fname in os.listdir(tok_dir):
            with open(os.path.join(tok_dir, fname), "rb") as src, open(
                    os.path.join(path, fname), "wb") as dst:
                dst.write(src.read())
        paths[v] = path
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    a = ap.parse_args(argv)
    paths = make_model(a.out_dir, a.shape, a.seed, a.variants.split(","))
    for v, p in paths.items():
        print(f"{v}: {p}")


if __name__ == "__main__":
    main()
