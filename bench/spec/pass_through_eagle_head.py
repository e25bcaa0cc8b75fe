"""Writes an EAGLE head for a target whose every guess is the target's own
greedy token (fc = [0 | I], o_proj, the MLP and q/k/v zero: its output is
the target's final hidden state it reads, so its logits are the target's at
that position): the newest token, again and again.  On a random-weight target
whose greedy output repeats one token, the drafts are then all accepted, which
measures what verification and the head cost when guesses are right.
Usage: pass_through_eagle_head.py TARGET_DIR OUT_DIR  (bfloat16 weights)"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model"))
from safetensors_io import Bf16, write_safetensors  # noqa: E402


def main():
    target_dir, out_dir = sys.argv[1:3]
    config = json.load(open(os.path.join(target_dir, "config.json")))
    h, inter = config["hidden_size"], config["intermediate_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or h // heads
    config.update(architectures=["LlamaForCausalLM"], num_hidden_layers=1, bias=False, attention_bias=False,
                  torch_dtype="bfloat16")
    fc = np.zeros((h, 2 * h), np.float32)
    fc[np.arange(h), h + np.arange(h)] = 1.0
    zeros = {"self_attn.q_proj": (heads * head_dim, h), "self_attn.k_proj": (kv_heads * head_dim, h),
             "self_attn.v_proj": (kv_heads * head_dim, h), "self_attn.o_proj": (h, heads * head_dim),
             "mlp.gate_proj": (inter, h), "mlp.up_proj": (inter, h), "mlp.down_proj": (h, inter)}
    tensors = {"fc.weight": Bf16(fc), "layers.0.post_attention_layernorm.weight": Bf16(np.ones(h, np.float32))}
    for name, shape in zeros.items():
        tensors[f"layers.0.{name}.weight"] = Bf16(np.zeros(shape, np.float32))
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
