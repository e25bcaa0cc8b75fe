"""Checks an EAGLE head's logits (speculative decoding's "eagle" method)
against a numpy forward pass.  The target is a random tiny Llama written by
`vllm-cpp make-test-model`; the heads are written here with numpy in EAGLE-1's
published layout (docs/research/speculative_decoding.md, section 6): a Llama
config.json, fc.weight [H, 2H], layers.<i>. without layer 0's
input_layernorm, no final norm, the target's embedding and LM head shared.
Head row p: x = fc([embed(token p + 1) | the target's final hidden state at
p]), the layers at position p, then the target's LM head.

Usage: check_eagle.py VLLM_CPP DUMP_EAGLE_LOGITS WORKDIR
Exit status: 0 pass, 1 fail, 77 skipped (numpy missing)."""
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed (Debian package python3-numpy)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import reference_forward  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

NUM_TOKENS = 48
CHUNK_SIZES = (47, 5, 1)
TOLERANCE = 1e-4
# (name, decoder layers, fc.bias): as published (one layer; EAGLE-1's Llama-3
# heads carry the target's embedding too), and two layers with an fc bias
# (EAGLE-1's Vicuna heads), whose second layer has its input_layernorm.
HEADS = (("published", 1, False), ("two-layers-fc-bias", 2, True))


def write_head(target_dir, head_dir, num_layers, fc_bias, rng):
    config = json.load(open(os.path.join(target_dir, "config.json")))
    config.update(architectures=["LlamaForCausalLM"], num_hidden_layers=num_layers, bias=fc_bias, attention_bias=False,
                  torch_dtype="float32")
    h, inter = config["hidden_size"], config["intermediate_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or h // heads

    def normal(*shape, mean=0.0, std=0.1):
        return (mean + std * rng.standard_normal(shape)).astype(np.float32)
    tensors = {"fc.weight": normal(h, 2 * h)}
    if fc_bias:
        tensors["fc.bias"] = normal(h)
    for i in range(num_layers):
        p = f"layers.{i}."
        tensors.update({p + "self_attn.q_proj.weight": normal(heads * head_dim, h),
                        p + "self_attn.k_proj.weight": normal(kv_heads * head_dim, h),
                        p + "self_attn.v_proj.weight": normal(kv_heads * head_dim, h),
                        p + "self_attn.o_proj.weight": normal(h, heads * head_dim),
                        p + "mlp.gate_proj.weight": normal(inter, h),
                        p + "mlp.up_proj.weight": normal(inter, h),
                        p + "mlp.down_proj.weight": normal(h, inter),
                        p + "post_attention_layernorm.weight": normal(h, mean=1.0)})
        if i > 0:
            tensors[p + "input_layernorm.weight"] = normal(h, mean=1.0)
    if num_layers == 1:
        target = reference_forward.load_weights(target_dir)
        tensors["embed_tokens.weight"] = target["model.embed_tokens.weight"].astype(np.float32)
    os.makedirs(head_dir)
    write_safetensors(os.path.join(head_dir, "model.safetensors"), tensors)
    with open(os.path.join(head_dir, "config.json"), "w") as f:
        json.dump(config, f)


def head_logits(target_dir, head_dir, ids):
    """[len(ids) - 1, vocab]: row p reads ids[p + 1] and the target's hidden state at p."""
    config = json.load(open(os.path.join(head_dir, "config.json")))
    target = reference_forward.load_weights(target_dir)
    head = reference_forward.load_weights(head_dir)
    hidden = reference_forward.forward(target_dir, ids, final_hidden=True)
    embedded = target["model.embed_tokens.weight"][np.asarray(ids[1:])]
    x = np.concatenate([embedded, hidden[:-1]], axis=-1) @ head["fc.weight"].T
    if "fc.bias" in head:
        x = x + head["fc.bias"]
    # The head's layers under a Llama's names, with the target's embedding and LM head.
    w = {"model." + name: t for name, t in head.items() if name.startswith("layers.")}
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        if name in target:
            w[name] = target[name]

    def matmul(a, weight):
        return a @ weight.T
    matmul.rounds_inputs = False
    return reference_forward.llama_family_forward(config, w, ids[1:], matmul, reference_forward.KVCache("float32", w),
                                                  inputs=x, eagle_head=True)


def main():
    vllm_cpp, dump, workdir = sys.argv[1:4]
    target_dir = os.path.join(workdir, "eagle-target")
    shutil.rmtree(target_dir, ignore_errors=True)
    subprocess.run([vllm_cpp, "make-test-model", "--arch", "llama", "--preset", "tiny", "--dtype", "f32",
                    "--seed", "7", "--out", target_dir], check=True)
    vocab = json.load(open(os.path.join(target_dir, "config.json")))["vocab_size"]
    rng = np.random.default_rng(11)
    ids = rng.integers(0, vocab, NUM_TOKENS).tolist()
    failed = False
    for name, num_layers, fc_bias in HEADS:
        head_dir = os.path.join(workdir, f"eagle-head-{name}")
        shutil.rmtree(head_dir, ignore_errors=True)
        write_head(target_dir, head_dir, num_layers, fc_bias, rng)
        expected = head_logits(target_dir, head_dir, ids)
        scale = np.abs(expected).max()
        for chunk in CHUNK_SIZES:
            out_path = os.path.join(head_dir, f"logits-{chunk}.f32")
            subprocess.run([dump, target_dir, head_dir, str(chunk), out_path], input=" ".join(map(str, ids)).encode(),
                           check=True)
            ours = np.fromfile(out_path, dtype="<f4").reshape(NUM_TOKENS - 1, vocab)
            error = np.abs(ours - expected).max() / scale
            ok = error <= TOLERANCE
            failed |= not ok
            print(f"EAGLE head {name} chunk={chunk}: max |ours - ref| / max |ref| = {error:.2e} "
                  f"(tolerance {TOLERANCE:.0e}) {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
