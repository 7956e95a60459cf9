"""w4jit's benchmarks and the models they run, one module a job:

    python3 -m w4jit.bench.layers       the ops on model-shaped layers
    python3 -m w4jit.bench.epilogue     fused epilogues against torch's
    python3 -m w4jit.bench.moe          the fused MoE layer
    python3 -m w4jit.bench.zentorch     w4jit beside zentorch, op by op
    python3 -m w4jit.bench.vllm         whole models inside vLLM
    python3 -m w4jit.bench.vllm_models  the local models vLLM runs

Importing the package imports none of them (and no vLLM).
"""
