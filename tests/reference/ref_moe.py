"""The mixture-of-experts feed-forward of Mixtral, Qwen2-MoE, Qwen3-MoE and
OLMoE in float64 numpy, from transformers' modeling code: a softmax over
all experts' router logits, the top num_experts_per_tok (lowest index first
among equal scores), renormalised always (Mixtral) or when norm_topk_prob,
each token through its experts' SwiGLU MLPs weighted and summed, plus
Qwen2-MoE's shared expert times sigmoid(shared_expert_gate . x)."""
import numpy as np

# Per architecture: the block's name under a layer, the experts' gate / up / down names.
NAMES = {
    "MixtralForCausalLM": ("block_sparse_moe", ("w1", "w3", "w2")),
    "Qwen2MoeForCausalLM": ("mlp", ("gate_proj", "up_proj", "down_proj")),
    "Qwen3MoeForCausalLM": ("mlp", ("gate_proj", "up_proj", "down_proj")),
    "OlmoeForCausalLM": ("mlp", ("gate_proj", "up_proj", "down_proj")),
}


def silu(x):
    return x / (1 + np.exp(-x))


def is_moe_layer(config, w, layer):
    block, _ = NAMES.get(config["architectures"][0], ("mlp", None))
    return f"model.layers.{layer}.{block}.gate.weight" in w


def moe(config, w, h, layer, linear):
    arch = config["architectures"][0]
    block, (gate_name, up_name, down_name) = NAMES[arch]
    p = f"model.layers.{layer}.{block}."
    top_k = config["num_experts_per_tok"]
    renormalize = arch == "MixtralForCausalLM" or config.get("norm_topk_prob", False)
    logits = linear(h, p + "gate")
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        chosen = np.argsort(-probs[t], kind="stable")[:top_k]
        weights = probs[t, chosen]
        if renormalize:
            weights = weights / weights.sum()
        for e, weight in zip(chosen, weights):
            x = h[t:t + 1]
            e_p = f"{p}experts.{e}."
            y = linear(silu(linear(x, e_p + gate_name)) * linear(x, e_p + up_name), e_p + down_name)
            out[t] += weight * y[0]
    if p + "shared_expert.gate_proj.weight" in w:
        s = p + "shared_expert."
        shared = linear(silu(linear(h, s + "gate_proj")) * linear(h, s + "up_proj"), s + "down_proj")
        gate = 1 / (1 + np.exp(-linear(h, p + "shared_expert_gate")))
        out += gate * shared
    return out
