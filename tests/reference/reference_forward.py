"""An independent numpy (float64) forward pass of Hugging Face decoder-only
checkpoints, written from the transformers modelling code's equations:
Llama, Mistral, Qwen2 and Qwen3 here, other families in ref_<family>.py
(FAMILIES).  It reads config.json and the safetensors files
itself and uses every bias / q-k norm tensor the checkpoint holds.
With bf16_activations, every matrix product first rounds its input to
bfloat16 (to nearest even, subnormals to zero), as the engine's BF16 pair
kernels do for BF16 weights (kernels/cpu/gemm.h); with a kv_dtype other
than float32, keys (after the rotary embedding) and values are what a KV
cache of that dtype gives back (KVCache)."""
import json
import math
import os
import struct

import numpy as np

import e4m3

_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"),
           "BOOL": np.dtype("?")}


def _read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = np.frombuffer(data[base + begin:base + end], dtype=_DTYPES[entry["dtype"]])
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float64).reshape(entry["shape"])
    return out


def load_weights(model_dir):
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return _read_safetensors(single)
    with open(os.path.join(model_dir, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    weights = {}
    for shard in shards:
        weights.update(_read_safetensors(os.path.join(model_dir, shard)))
    return weights


def inv_frequencies(config, head_dim, seq_len=0):
    """The inverse frequencies of transformers' rope_init_fn for config's
    rope_scaling over `head_dim` rotary dimensions (the attention factor
    aside: rope_attention_factor)."""
    base = config.get("rope_theta", 10000.0)
    exponents = np.arange(0, head_dim, 2) / head_dim
    inv = 1.0 / base ** exponents
    scaling = config.get("rope_scaling") or {}
    kind = rope_type(config)
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old_len / low, inv / factor, inv)
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
        inv = np.where(medium, blended, scaled)
    elif kind == "yarn":
        factor, original = scaling["factor"], original_context(config)

        def correction_dim(rotations):
            return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = correction_dim(scaling.get("beta_fast") or 32), correction_dim(scaling.get("beta_slow") or 1)
        if scaling.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, head_dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(head_dim // 2) - low) / (high - low), 0, 1)
        inv = (inv / factor) * ramp + inv * (1 - ramp)
    elif kind == "dynamic":  # a larger base once this call's length passes the context
        context = config["max_position_embeddings"]
        length = max(seq_len, context)
        grown = base * (scaling["factor"] * length / context - (scaling["factor"] - 1)) ** (head_dim / (head_dim - 2))
        inv = 1.0 / grown ** exponents
    elif kind == "longrope":
        long = seq_len > original_context(config)  # transformers switches on this call's length
        inv = inv / np.asarray(scaling["long_factor" if long else "short_factor"], dtype=np.float64)
    return inv


def rope_type(config):
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type"))
    if config.get("model_type") == "phi3" and kind in ("su", "yarn"):
        return "longrope"  # Phi3Config's renaming
    return kind


def original_context(config):
    scaling = config.get("rope_scaling") or {}
    return (config.get("original_max_position_embeddings") or scaling.get("original_max_position_embeddings")
            or config["max_position_embeddings"])


def yarn_mscale(factor, m=1.0):
    """YaRN's attention scaling for a context `factor` times the original."""
    return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0


def rope_attention_factor(config):
    """What transformers multiplies cos and sin by."""
    scaling = config.get("rope_scaling") or {}
    kind = rope_type(config)
    if scaling.get("attention_factor") is not None:
        return scaling["attention_factor"]
    if kind == "yarn":
        factor = scaling["factor"]
        if scaling.get("mscale") and scaling.get("mscale_all_dim"):
            return yarn_mscale(factor, scaling["mscale"]) / yarn_mscale(factor, scaling["mscale_all_dim"])
        return yarn_mscale(factor)
    if kind == "longrope":
        factor = scaling.get("factor") or config["max_position_embeddings"] / original_context(config)
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original_context(config)))
    return 1.0


def round_to_bf16(x, flush=True):
    if flush:  # the dot-product kernels' conversion flushes subnormals; the KV cache's keeps them
        x = np.where(np.abs(x) < np.finfo(np.float32).tiny, 0.0, x)
    bits = x.astype(np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(np.float64)


class KVCache:
    """What a KV cache of `dtype` gives back for keys and values written to
    it: float32 as they are; bfloat16 rounded to nearest even (subnormals
    kept); fp8 as vLLM's FP8 E4M3 cache, e4m3(x / scale) * scale, with the
    scales of the attention module at `prefix` that the checkpoint `w`
    holds under vLLM's names (k_scale and v_scale, or one kv_scale: one
    alone serves for both, none is 1).  A latent (MLA) cache's rows are all
    keys."""

    def __init__(self, dtype, w):
        assert dtype in ("float32", "bfloat16", "fp8"), dtype
        self.dtype, self.w = dtype, w

    def scales(self, prefix):
        def scale(name):
            return float(self.w[prefix + name].reshape(-1)[0]) if prefix + name in self.w else None
        k, v, both = scale("k_scale"), scale("v_scale"), scale("kv_scale")
        if k is not None and v is not None:
            return k, v
        if k is None and v is None and both is None:
            return 1.0, 1.0
        larger = max(s for s in (k, v, both) if s is not None)
        return larger, larger

    def _stored(self, x, scale):
        if self.dtype == "bfloat16":
            return round_to_bf16(x, flush=False)
        if self.dtype == "fp8":
            return e4m3.VALUES[e4m3.to_e4m3(x / scale)].astype(np.float64) * scale
        return x

    def keys(self, prefix, k):
        return self._stored(k, self.scales(prefix)[0])

    def values(self, prefix, v):
        return self._stored(v, self.scales(prefix)[1])


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def layer_norm(x, weight, bias, eps):
    centred = x - np.mean(x, axis=-1, keepdims=True)
    return centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps) * weight + bias


def rotate(x, cos, sin):
    """x: [T, heads, head_dim]; the rotate_half convention over the first
    2 * cos.shape[-1] dimensions of each head (partial rotary), the rest kept."""
    half = cos.shape[-1]
    x_rot, x_pass = x[..., :2 * half], x[..., 2 * half:]
    x1, x2 = x_rot[..., :half], x_rot[..., half:]
    rotated = np.concatenate([-x2, x1], axis=-1)
    cos2 = np.concatenate([cos, cos], axis=-1)[:, None, :]
    sin2 = np.concatenate([sin, sin], axis=-1)[:, None, :]
    return np.concatenate([x_rot * cos2 + rotated * sin2, x_pass], axis=-1)


def sliding_window(config):
    arch = config["architectures"][0]
    window = config.get("sliding_window")
    if arch in ("MistralForCausalLM", "MixtralForCausalLM"):
        return window or 0
    if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and config.get("use_sliding_window", False):
        return window or 0
    if arch == "Phi3ForCausalLM":  # modeling_phi3 masks by config.sliding_window when set
        return window or 0
    return 0


def forward(model_dir, ids, bf16_activations=False, kv_dtype="float32", final_hidden=False, layer_inputs=None):
    """Logits [len(ids), vocab] for the sequence `ids` (positions 0..n-1);
    with final_hidden, the final norm's output [len(ids), hidden] instead; with
    layer_inputs (layer ids), the residual stream entering each of those
    layers, concatenated [len(ids), len(layer_inputs) * hidden]."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    w = load_weights(model_dir)
    kv_cache = KVCache(kv_dtype, w)

    def matmul(x, weight):
        return (round_to_bf16(x) if bf16_activations else x) @ weight.T
    matmul.rounds_inputs = bf16_activations

    family = FAMILIES.get(config["architectures"][0])
    if family is not None:
        assert not final_hidden and layer_inputs is None
        return __import__(family).forward(config, w, ids, matmul, kv_cache)
    return llama_family_forward(config, w, ids, matmul, kv_cache, final_hidden=final_hidden, layer_inputs=layer_inputs)


# Architectures whose forward pass lives in a module of its own.
FAMILIES = {"Gemma2ForCausalLM": "ref_gemma", "Gemma3ForCausalLM": "ref_gemma",
            "DeepseekV2ForCausalLM": "ref_deepseek", "DeepseekV3ForCausalLM": "ref_deepseek"}


def llama_family_forward(config, w, ids, matmul, kv_cache, inputs=None, eagle_head=False, final_hidden=False,
                         layer_inputs=None):
    """Llama, Mistral, Qwen2, Qwen3, Phi-3 (fused qkv_proj / gate_up_proj,
    partial rotary, LongRoPE), Granite (its four multipliers), StableLM
    (LayerNorms with biases, partial rotary), and the
    mixtures of experts on the same skeleton (ref_moe: Mixtral, Qwen2-MoE,
    Qwen3-MoE, OLMoE with its q/k norms over the whole projection).
    `inputs`: the first layer's input instead of the embedding; `eagle_head`:
    no norm before the first layer's attention nor after the last layer (an
    EAGLE head, ref_eagle.py)."""
    import ref_moe
    hidden = config["hidden_size"]
    n_heads = config["num_attention_heads"]
    n_kv = config.get("num_key_value_heads", n_heads)
    head_dim = config.get("head_dim") or hidden // n_heads
    stablelm = config["architectures"][0] == "StableLmForCausalLM"
    eps = config["layer_norm_eps"] if stablelm else config["rms_norm_eps"]

    def norm(x, module):  # StableLM: torch's LayerNorm with its bias
        if stablelm:
            return layer_norm(x, w[module + ".weight"], w[module + ".bias"], eps)
        return rms_norm(x, w[module + ".weight"], eps)

    n = len(ids)
    positions = np.arange(n)
    rotary_dim = int(head_dim * config.get("partial_rotary_factor", 1.0))
    angles = positions[:, None] * inv_frequencies(config, rotary_dim, seq_len=n)[None, :]
    cos, sin = np.cos(angles) * rope_attention_factor(config), np.sin(angles) * rope_attention_factor(config)
    granite = config["architectures"][0] == "GraniteForCausalLM"
    multiplier = {key: config.get(key, 1.0) if granite else 1.0 for key in
                  ("embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling")}
    scale = multiplier["attention_multiplier"] if granite else 1 / math.sqrt(head_dim)
    window = sliding_window(config)
    mask = np.tril(np.ones((n, n), dtype=bool))
    if window:
        mask &= (positions[:, None] - positions[None, :]) < window

    def linear(x, prefix):
        y = matmul(x, w[prefix + ".weight"])
        if prefix + ".bias" in w:
            y = y + w[prefix + ".bias"]
        return y

    x = w["model.embed_tokens.weight"][np.asarray(ids)] * multiplier["embedding_multiplier"] if inputs is None else inputs
    entering = {}
    for layer in range(config["num_hidden_layers"]):
        entering[layer] = x
        p = f"model.layers.{layer}."
        h = x if eagle_head and layer == 0 else norm(x, p + "input_layernorm")
        if p + "self_attn.qkv_proj.weight" in w:  # Phi-3: q | k | v rows of one matrix
            qkv = linear(h, p + "self_attn.qkv_proj")
            q, k, v = np.split(qkv, [n_heads * head_dim, (n_heads + n_kv) * head_dim], axis=-1)
        else:
            q, k, v = (linear(h, p + f"self_attn.{name}") for name in ("q_proj", "k_proj", "v_proj"))
        whole_norm = w.get(p + "self_attn.q_norm.weight", np.zeros(0)).size == n_heads * head_dim != head_dim
        if whole_norm:  # OLMoE: over all of q's and k's features, before the split into heads
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.reshape(n, n_heads, head_dim), k.reshape(n, n_kv, head_dim), v.reshape(n, n_kv, head_dim)
        if p + "self_attn.q_norm.weight" in w and not whole_norm:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k, v = kv_cache.keys(p + "self_attn.", k), kv_cache.values(p + "self_attn.", v)
        group = n_heads // n_kv
        k = np.repeat(k, group, axis=1)
        v = np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) * scale
        scores = np.where(mask[None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", probs, v).reshape(n, n_heads * head_dim)
        x = x + linear(attn, p + "self_attn.o_proj") * multiplier["residual_multiplier"]
        h = norm(x, p + "post_attention_layernorm")
        if ref_moe.is_moe_layer(config, w, layer):
            x = x + ref_moe.moe(config, w, h, layer, linear)
            continue
        if p + "mlp.gate_up_proj.weight" in w:  # Phi-3: gate rows, then up rows
            gate, up = np.split(linear(h, p + "mlp.gate_up_proj"), 2, axis=-1)
        else:
            gate, up = linear(h, p + "mlp.gate_proj"), linear(h, p + "mlp.up_proj")
        x = x + linear(gate / (1 + np.exp(-gate)) * up, p + "mlp.down_proj") * multiplier["residual_multiplier"]
    if layer_inputs is not None:
        return np.concatenate([entering[layer] for layer in layer_inputs], axis=-1)
    if not eagle_head:
        x = norm(x, "model.norm")
    if final_hidden:
        return x
    lm_head = w.get("lm_head.weight")
    if lm_head is None or config.get("tie_word_embeddings", False):
        lm_head = w["model.embed_tokens.weight"]
    return matmul(x, lm_head) / multiplier["logits_scaling"]
