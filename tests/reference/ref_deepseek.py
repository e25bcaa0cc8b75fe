"""DeepSeek-V2 and DeepSeek-V3 in float64 numpy, from transformers'
modeling_deepseek_v2.py / modeling_deepseek_v3.py (and the checkpoints'
own modeling_deepseek.py where transformers leaves a detail to it):

- multi-head latent attention: q from q_proj, or q_b_proj(RMSNorm(q_a_proj x));
  kv_a_proj_with_mqa x = [c | k_pe], k_nope and v per head from
  kv_b_proj(RMSNorm(c)) (each head's nope rows, then its v rows); the rotary
  part rotated as interleaved pairs (x[2i], x[2i + 1]), one k_pe shared by
  all heads; softmax scale (nope + rope)^-1/2 times YaRN's
  mscale(factor, mscale_all_dim)^2; q_a_layernorm and kv_a_layernorm with
  eps 1e-6 (their constructors' default);
- dense MLPs before first_k_dense_replace (and off moe_layer_freq), then
  mixtures: V2 softmax scores, top-k over the topk_group best groups by their
  best score (group_limited_greedy; greedy: all), weights times
  routed_scaling_factor; V3 sigmoid scores, groups ranked by the sum of
  their two best biased scores, experts chosen by the biased score,
  weighted by the unbiased one, renormalised when norm_topk_prob, then
  times routed_scaling_factor; plus the shared experts' MLP.

The attention is computed expanded, as transformers does.  When the
engine's BF16 pair kernels are modelled (matmul rounds its inputs), it is
computed with the up-projections absorbed instead (W_UK^T q_nope against the
cached latent, W_UV after the weighted sum), as the engine and vLLM's MLA
decode do: the same function, but other matrix inputs are rounded.  The two
forms are checked against each other on every unrounded pass."""
import numpy as np

import reference_forward as ref

LORA_NORM_EPS = 1e-6


def rotate_interleaved(x, cos, sin):
    """x: [..., T, heads, 2 * half] rotated pairwise, output interleaved."""
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = b * c + a * s
    return out


def softmax_scale(config):
    q_dim = config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
    scale = q_dim ** -0.5
    scaling = config.get("rope_scaling") or {}
    if scaling.get("mscale_all_dim"):
        scale *= ref.yarn_mscale(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    return scale


def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(config, w, p, h, cos, sin, matmul, kv_cache, absorbed):
    n = h.shape[0]
    heads = config["num_attention_heads"]
    nope, rope, v_dim = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    rank = config["kv_lora_rank"]
    if config.get("q_lora_rank"):
        q = matmul(ref.rms_norm(matmul(h, w[p + "q_a_proj.weight"]), w[p + "q_a_layernorm.weight"], LORA_NORM_EPS),
                   w[p + "q_b_proj.weight"])
    else:
        q = matmul(h, w[p + "q_proj.weight"])
    q = q.reshape(n, heads, nope + rope)
    q_nope, q_pe = q[..., :nope], q[..., nope:]
    ckv = matmul(h, w[p + "kv_a_proj_with_mqa.weight"])
    c = ref.rms_norm(ckv[:, :rank], w[p + "kv_a_layernorm.weight"], LORA_NORM_EPS)
    k_pe = ckv[:, None, rank:]
    if config.get("rope_interleave", True) or config["architectures"][0] != "DeepseekV3ForCausalLM":
        q_pe, k_pe = rotate_interleaved(q_pe, cos, sin), rotate_interleaved(k_pe, cos, sin)
    else:  # V3 with rope_interleave false: rotate_half on the stored order
        q_pe, k_pe = ref.rotate(q_pe, cos, sin), ref.rotate(k_pe, cos, sin)
    c, k_pe = kv_cache.keys(p, c), kv_cache.keys(p, k_pe)  # what the cache of rows [c | rope(k_pe)] holds
    kv_b = w[p + "kv_b_proj.weight"].reshape(heads, nope + v_dim, rank)
    w_uk, w_uv = kv_b[:, :nope, :], kv_b[:, nope:, :]
    mask = np.tril(np.ones((n, n), dtype=bool))
    scale = softmax_scale(config)

    def expanded():
        kv = matmul(c, w[p + "kv_b_proj.weight"]).reshape(n, heads, nope + v_dim)
        k_nope, v = kv[..., :nope], kv[..., nope:]
        scores = (np.einsum("qhd,khd->hqk", q_nope, k_nope) + np.einsum("qhd,kd->hqk", q_pe, k_pe[:, 0])) * scale
        probs = softmax(np.where(mask[None], scores, -np.inf))
        return np.einsum("hqk,khd->qhd", probs, v).reshape(n, heads * v_dim)

    def latent():
        q_lat = np.stack([matmul(q_nope[:, i], w_uk[i].T) for i in range(heads)], axis=1)  # [n, heads, rank]
        scores = (np.einsum("qhr,kr->hqk", q_lat, c) + np.einsum("qhd,kd->hqk", q_pe, k_pe[:, 0])) * scale
        probs = softmax(np.where(mask[None], scores, -np.inf))
        o_lat = np.einsum("hqk,kr->qhr", probs, c)
        return np.stack([matmul(o_lat[:, i], w_uv[i]) for i in range(heads)], axis=1).reshape(n, heads * v_dim)

    out = latent() if absorbed else expanded()
    if not absorbed:
        other = latent()
        assert np.abs(other - out).max() <= 1e-9 * max(np.abs(out).max(), 1e-300), "absorbed != expanded MLA"
    return matmul(out, w[p + "o_proj.weight"])


def silu(x):
    return x / (1 + np.exp(-x))


def mlp(w, prefix, x, matmul):
    return matmul(silu(matmul(x, w[prefix + "gate_proj.weight"])) * matmul(x, w[prefix + "up_proj.weight"]),
                  w[prefix + "down_proj.weight"])


def route(config, logits, bias, v3):
    """Chosen experts and their weights for one token's router logits."""
    experts = logits.shape[0]
    groups = config.get("n_group") or 1
    keep = config.get("topk_group") or 1
    top_k = config["num_experts_per_tok"]
    if v3:
        scores = 1 / (1 + np.exp(-logits))
        choice = scores + bias
        group_scores = np.sort(choice.reshape(groups, -1), axis=1)[:, ::-1][:, :2].sum(axis=1)
    else:
        scores = softmax(logits)
        choice = scores
        if config.get("topk_method", "greedy") == "greedy":
            groups = keep = 1
        group_scores = choice.reshape(groups, -1).max(axis=1)
    kept = np.argsort(-group_scores, kind="stable")[:keep]
    allowed = np.zeros(experts, dtype=bool)
    for g in kept:
        allowed[g * (experts // groups):(g + 1) * (experts // groups)] = True
    chosen = np.argsort(-np.where(allowed, choice, -np.inf), kind="stable")[:top_k]
    weights = scores[chosen]
    if v3 and config.get("norm_topk_prob", True):
        weights = weights / (weights.sum() + 1e-20)
    return chosen, weights * config.get("routed_scaling_factor", 2.5 if v3 else 1.0)


def moe(config, w, p, x, matmul, v3):
    logits = matmul(x, w[p + "gate.weight"])
    bias = w.get(p + "gate.e_score_correction_bias")
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        for e, weight in zip(*route(config, logits[t], bias, v3)):
            out[t] += weight * mlp(w, f"{p}experts.{e}.", x[t:t + 1], matmul)[0]
    return out + mlp(w, p + "shared_experts.", x, matmul)


def forward(config, w, ids, matmul, kv_cache):
    v3 = config["architectures"][0] == "DeepseekV3ForCausalLM"
    eps = config["rms_norm_eps"]
    n = len(ids)
    rope = config["qk_rope_head_dim"]
    angles = np.arange(n)[:, None] * ref.inv_frequencies(config, rope, seq_len=n)[None, :]
    factor = ref.rope_attention_factor(config)
    cos, sin = np.cos(angles) * factor, np.sin(angles) * factor
    first_dense = config.get("first_k_dense_replace", 3 if v3 else 0)
    frequency = config.get("moe_layer_freq", 1)
    x = w["model.embed_tokens.weight"][np.asarray(ids)]
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = ref.rms_norm(x, w[p + "input_layernorm.weight"], eps)
        x = x + attention(config, w, p + "self_attn.", h, cos, sin, matmul, kv_cache, matmul.rounds_inputs)
        h = ref.rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if config.get("n_routed_experts") and layer >= first_dense and layer % frequency == 0:
            x = x + moe(config, w, p + "mlp.", h, matmul, v3)
        else:
            x = x + mlp(w, p + "mlp.", h, matmul)
    x = ref.rms_norm(x, w["model.norm.weight"], eps)
    return matmul(x, w["lm_head.weight"])
