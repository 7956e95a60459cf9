"""The model shapes of the benchmarks, from presets.json beside this file:
the one list the C++ bench embeds too (perf/model_presets.cc)."""
import json
import os

with open(os.path.join(os.path.dirname(__file__), "presets.json"),
          encoding="utf-8") as _f:
    _PRESETS = json.load(_f)


def dense_layers(model="llama3-8b"):
    """{name: (N, K)} of a dense model's linear layers, in order."""
    for m in _PRESETS["dense"]:
        if m["name"] == model:
            return {l["name"]: (l["n"], l["k"]) for l in m["layers"]}
    raise KeyError(model)


def moe_layers():
    """{name: (H, I, E, top-k)} of the models' MoE layers."""
    return {m["name"]: (m["hidden"], m["intermediate"], m["experts"],
                        m["top_k"]) for m in _PRESETS["moe_layers"]}


def moe_gates():
    """{name: (gate, group size, biases)} of the MoE layers."""
    return {m["name"]: (m.get("activation", "silu"), m.get("group_size", 128),
                        m.get("biases", False))
            for m in _PRESETS["moe_layers"]}
