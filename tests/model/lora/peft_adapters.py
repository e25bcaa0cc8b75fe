"""LoRA adapters written the way the peft library's save_pretrained writes
them, with numpy: adapter_config.json holds every LoraConfig field (PEFT
serialises the whole dataclass, sorted keys, indent 2) and
adapter_model.safetensors the weights under the PEFT model's state-dict
names with the adapter name removed:
  base_model.model.<module>.lora_A.weight  [r, in]
  base_model.model.<module>.lora_B.weight  [out, r]
  base_model.model.<embedding>.lora_embedding_A  [r, vocab]
  base_model.model.<embedding>.lora_embedding_B  [hidden, r]
and, for an adapter on the embedding or the LM head, the full base weight
PEFT saves beside it (save_embedding_layers="auto"):
  base_model.model.<module>.base_layer.weight  [vocab, hidden]."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from safetensors_io import Bf16, read_safetensors, write_safetensors  # noqa: E402

PREFIX = "base_model.model."
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_config(r, alpha, target_modules, **overrides):
    """A LoraConfig as PEFT saves it: every field, defaults where not given."""
    config = {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "tiny-base", "bias": "none",
        "corda_config": None, "eva_config": None, "exclude_modules": None, "fan_in_fan_out": False,
        "inference_mode": True, "init_lora_weights": True, "layer_replication": None, "layers_pattern": None,
        "layers_to_transform": None, "loftq_config": {}, "lora_alpha": alpha, "lora_bias": False,
        "lora_dropout": 0.05, "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None,
        "peft_type": "LORA", "r": r, "rank_pattern": {}, "revision": None, "target_modules": target_modules,
        "task_type": "CAUSAL_LM", "trainable_token_indices": None, "use_dora": False, "use_rslora": False,
    }
    config.update(overrides)
    return config


def random_lora(rng, rank, in_features, out_features):
    """An (A, B) pair as training leaves it: both non-zero."""
    a = rng.standard_normal((rank, in_features)).astype(np.float32) / np.sqrt(in_features)
    b = rng.standard_normal((out_features, rank)).astype(np.float32) * 0.1
    return a, b


def lora_tensors(linear, embedding=None, base_copies=None, dtype="f32"):
    """The safetensors entries of an adapter: `linear` {module: (A, B)},
    `embedding` {module: (A [r, vocab], B [hidden, r])}, `base_copies`
    {module: full weight} (the copies save_embedding_layers writes)."""
    wrap = (lambda x: Bf16(x)) if dtype == "bf16" else (lambda x: np.ascontiguousarray(x, np.float32))
    tensors = {}
    for module, (a, b) in linear.items():
        tensors[PREFIX + module + ".lora_A.weight"] = wrap(a)
        tensors[PREFIX + module + ".lora_B.weight"] = wrap(b)
    for module, (a, b) in (embedding or {}).items():
        tensors[PREFIX + module + ".lora_embedding_A"] = wrap(a)
        tensors[PREFIX + module + ".lora_embedding_B"] = wrap(b)
    for module, w in (base_copies or {}).items():
        tensors[PREFIX + module + ".base_layer.weight"] = wrap(w)
    return tensors


def write_adapter(path, config, tensors):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tensors is not None:
        write_safetensors(os.path.join(path, "adapter_model.safetensors"), tensors)


def merged_checkpoint(base, scaling, linear, embedding, out):
    """The base checkpoint with each adapted weight merged, W + scaling B A
    (the embedding table E + scaling (B A)^T); the LM head untied from the
    embedding when either is adapted."""
    os.makedirs(out)
    # A bfloat16 checkpoint's tensors (read as their uint16 bits) widened to float32, as the engine reads them.
    widen = lambda v: (v.astype(np.uint32) << 16).view(np.float32) if v.dtype == np.uint16 else np.array(v)  # noqa
    tensors = {k: widen(v) for k, v in read_safetensors(os.path.join(base, "model.safetensors")).items()}
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)
    if config.get("tie_word_embeddings"):
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].copy()
        config["tie_word_embeddings"] = False
    def merge(name, delta):
        tensors[name] = (tensors[name].astype(np.float64) + scaling * delta).astype(np.float32)
    for module, (a, b) in linear.items():
        merge(module + ".weight", b.astype(np.float64) @ a)
    for module, (a, b) in (embedding or {}).items():
        merge(module + ".weight", (b.astype(np.float64) @ a).T)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)


def linear_shapes(config):
    """(in, out) of each linear module of a Llama's config."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or h // heads
    q, kv, mlp = heads * head_dim, config["num_key_value_heads"] * head_dim, config["intermediate_size"]
    return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
            "gate_proj": (h, mlp), "up_proj": (h, mlp), "down_proj": (mlp, h)}


ATTENTION_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def module_name(layer, name):
    """A Llama linear module's name in the checkpoint."""
    return f"model.layers.{layer}.{'self_attn' if name in ATTENTION_MODULES else 'mlp'}.{name}"


def random_linear(rng, config, names, rank, rank_of=lambda name: None):
    """{module: (A, B)} for the linear modules `names` of every layer of a
    Llama `config`, of rank `rank` (or rank_of(name) where it gives one)."""
    shapes = linear_shapes(config)
    return {module_name(layer, n): random_lora(rng, rank_of(n) or rank, *shapes[n])
            for layer in range(config["num_hidden_layers"]) for n in names}
