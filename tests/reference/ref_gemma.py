"""Gemma 2 and Gemma 3 (text) in float64 numpy, from transformers'
modeling_gemma2.py / modeling_gemma3.py: sandwich norms x * (1 + w), the
embedding times sqrt(hidden_size) rounded to the checkpoint's dtype,
attention scaled by query_pre_attn_scalar^-1/2 with a sliding window on the
layers layer_types (or the pattern) names, Gemma 2's tanh soft-caps on
attention scores and final logits, Gemma 3's per-head q/k norms and its own
rotary base for sliding layers, GeGLU with GELU's tanh form."""
import math

import numpy as np

import reference_forward as ref


def gemma_rms(x, weight, eps):
    return ref.rms_norm(x, 1.0 + weight, eps)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def embedding_scale(config):
    scale = np.float32(math.sqrt(config["hidden_size"]))
    dtype = config.get("torch_dtype")
    if dtype == "bfloat16":
        return ref.round_to_bf16(np.array([scale], dtype=np.float64), flush=False)[0]
    if dtype == "float16":
        return np.float64(np.float16(scale))
    return np.float64(scale)


def layer_is_sliding(config, version):
    types = config.get("layer_types")
    if types:
        return [t == "sliding_attention" for t in types]
    pattern = 2 if version == 2 else config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
    return [(i + 1) % pattern != 0 for i in range(config["num_hidden_layers"])]


def forward(config, w, ids, matmul, kv_cache):
    version = 2 if config["architectures"][0] == "Gemma2ForCausalLM" else 3
    hidden = config["hidden_size"]
    n_heads, n_kv = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim", 256)
    eps = config["rms_norm_eps"]
    n = len(ids)
    positions = np.arange(n)
    global_theta = config.get("rope_theta", 10000.0 if version == 2 else 1000000.0)
    rope_global = positions[:, None] * ref.inv_frequencies(dict(config, rope_theta=global_theta), head_dim)[None, :]
    local_config = {"rope_theta": config.get("rope_local_base_freq", 10000.0)}
    rope_local = positions[:, None] * ref.inv_frequencies(local_config, head_dim)[None, :]
    sliding = layer_is_sliding(config, version)
    window = config.get("sliding_window", 4096)
    distance = positions[:, None] - positions[None, :]
    full_mask = distance >= 0
    window_mask = full_mask & (distance < window)
    scale = config.get("query_pre_attn_scalar", 256) ** -0.5
    attn_cap = config.get("attn_logit_softcapping", 50.0) if version == 2 else None
    final_cap = config.get("final_logit_softcapping", 30.0 if version == 2 else None)

    def linear(x, prefix):
        y = matmul(x, w[prefix + ".weight"])
        return y + w[prefix + ".bias"] if prefix + ".bias" in w else y

    x = w["model.embed_tokens.weight"][np.asarray(ids)] * embedding_scale(config)
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = gemma_rms(x, w[p + "input_layernorm.weight"], eps)
        q = linear(h, p + "self_attn.q_proj").reshape(n, n_heads, head_dim)
        k = linear(h, p + "self_attn.k_proj").reshape(n, n_kv, head_dim)
        v = linear(h, p + "self_attn.v_proj").reshape(n, n_kv, head_dim)
        if version == 3:
            q = gemma_rms(q, w[p + "self_attn.q_norm.weight"], eps)
            k = gemma_rms(k, w[p + "self_attn.k_norm.weight"], eps)
        angles = rope_local if (version == 3 and sliding[layer]) else rope_global
        q, k = ref.rotate(q, np.cos(angles), np.sin(angles)), ref.rotate(k, np.cos(angles), np.sin(angles))
        k, v = kv_cache.keys(p + "self_attn.", k), kv_cache.values(p + "self_attn.", v)
        k = np.repeat(k, n_heads // n_kv, axis=1)
        v = np.repeat(v, n_heads // n_kv, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) * scale
        if attn_cap:
            scores = np.tanh(scores / attn_cap) * attn_cap
        mask = window_mask if sliding[layer] else full_mask
        scores = np.where(mask[None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", probs, v).reshape(n, n_heads * head_dim)
        x = x + gemma_rms(linear(attn, p + "self_attn.o_proj"), w[p + "post_attention_layernorm.weight"], eps)
        h = gemma_rms(x, w[p + "pre_feedforward_layernorm.weight"], eps)
        m = linear(gelu_tanh(linear(h, p + "mlp.gate_proj")) * linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + gemma_rms(m, w[p + "post_feedforward_layernorm.weight"], eps)
    x = gemma_rms(x, w["model.norm.weight"], eps)
    lm_head = w["model.embed_tokens.weight"] if config.get("tie_word_embeddings", True) else w["lm_head.weight"]
    logits = matmul(x, lm_head)
    if final_cap:
        logits = np.tanh(logits / final_cap) * final_cap
    return logits
