"""Checks EAGLE and EAGLE-3 heads (speculative decoding's "eagle" and
"eagle3" methods) against a numpy forward pass: their logits over a token
sequence, then over a chain of their own guesses.  The target is a random
tiny Llama of 4 layers written by `vllm-cpp make-test-model`; the heads are
written here with numpy in the layouts their authors publish and vLLM reads
(docs/research/speculative_decoding.md, sections 6 and 7).

EAGLE: a Llama config.json, fc.weight [H, 2H], layers.<i>. without layer
0's input_layernorm, no final norm, the target's embedding and LM head.
Row p: x = fc([embed(token p + 1) | the target's final hidden state at p]),
the layers, the target's LM head; a guess's row reads the guess with the
previous row's output.

EAGLE-3: draft_vocab_size, fc.weight [H, 3T] over the residual stream
entering three target layers, midlayer. (or vLLM's layers.0.) with
input_layernorm, hidden_norm and q/k/v over [normed embedding | normed
hidden] (2H), norm.weight, its own lm_head [draft vocabulary, H] and d2t
(target id = draft id + d2t[draft id]); a guess's row reads the previous
row's output before the final norm.

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
import reference_forward as ref  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

NUM_TOKENS = 40
NUM_GUESSES = 4
CHUNK_SIZES = (39, 5, 1)
TOLERANCE = 1e-4
TARGET_LAYERS = 4
# EAGLE: as published (one layer; EAGLE-1's Llama-3 heads carry the target's
# embedding too), and two layers with an fc bias (the Vicuna heads), whose
# second layer has its input_layernorm.  EAGLE-3: as published (the default
# auxiliary layers 2, L/2, L-3; half the vocabulary mapped by d2t), and a
# head of another width with its own embedding, vLLM's layers.0. names,
# auxiliary layers given in eagle_config, no d2t, norm_before_residual.
HEADS = (
    ("eagle", "published", dict(layers=1, fc_bias=False)),
    ("eagle", "two-layers-fc-bias", dict(layers=2, fc_bias=True)),
    ("eagle3", "published", dict(draft_vocab=0.5)),
    ("eagle3", "narrow-own-embedding", dict(hidden=48, own_embedding=True, prefix="layers.0.", aux=[0, 1, 3],
                                            norm_before_residual=True)),
)


def normal(rng, *shape, mean=0.0, std=0.1):
    return (mean + std * rng.standard_normal(shape)).astype(np.float32)


def attention_and_mlp(rng, tensors, p, h, in_dim, inter, heads, kv_heads, head_dim):
    tensors.update({p + "self_attn.q_proj.weight": normal(rng, heads * head_dim, in_dim),
                    p + "self_attn.k_proj.weight": normal(rng, kv_heads * head_dim, in_dim),
                    p + "self_attn.v_proj.weight": normal(rng, kv_heads * head_dim, in_dim),
                    p + "self_attn.o_proj.weight": normal(rng, h, heads * head_dim),
                    p + "mlp.gate_proj.weight": normal(rng, inter, h),
                    p + "mlp.up_proj.weight": normal(rng, inter, h),
                    p + "mlp.down_proj.weight": normal(rng, h, inter),
                    p + "post_attention_layernorm.weight": normal(rng, h, mean=1.0)})


def write_head(kind, target_dir, head_dir, spec, rng):
    config = json.load(open(os.path.join(target_dir, "config.json")))
    target_h, vocab = config["hidden_size"], config["vocab_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or target_h // heads
    config.update(architectures=["LlamaForCausalLM"], attention_bias=False, torch_dtype="float32", head_dim=head_dim)
    inter = config["intermediate_size"]
    tensors = {}
    if kind == "eagle":
        h = target_h
        config.update(num_hidden_layers=spec["layers"], bias=spec["fc_bias"])
        tensors["fc.weight"] = normal(rng, h, 2 * h)
        if spec["fc_bias"]:
            tensors["fc.bias"] = normal(rng, h)
        for i in range(spec["layers"]):
            attention_and_mlp(rng, tensors, f"layers.{i}.", h, h, inter, heads, kv_heads, head_dim)
            if i > 0:
                tensors[f"layers.{i}.input_layernorm.weight"] = normal(rng, h, mean=1.0)
        if spec["layers"] == 1:
            target = ref.load_weights(target_dir)
            tensors["embed_tokens.weight"] = target["model.embed_tokens.weight"].astype(np.float32)
    else:
        h = spec.get("hidden", target_h)
        draft_vocab = int(vocab * spec.get("draft_vocab", 1.0))
        config.update(architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1, hidden_size=h,
                      draft_vocab_size=draft_vocab, target_hidden_size=target_h,
                      norm_before_residual=spec.get("norm_before_residual", False))
        if "aux" in spec:
            config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": spec["aux"]}
        p = spec.get("prefix", "midlayer.")
        tensors["fc.weight"] = normal(rng, h, 3 * target_h)
        attention_and_mlp(rng, tensors, p, h, 2 * h, inter, heads, kv_heads, head_dim)
        tensors[p + "input_layernorm.weight"] = normal(rng, h, mean=1.0)
        tensors[p + "hidden_norm.weight"] = normal(rng, h, mean=1.0)
        tensors["norm.weight"] = normal(rng, h, mean=1.0)
        tensors["lm_head.weight"] = normal(rng, draft_vocab, h)
        if draft_vocab < vocab:  # a random increasing choice of target ids
            ids = np.sort(rng.choice(vocab, draft_vocab, replace=False))
            tensors["d2t"] = (ids - np.arange(draft_vocab)).astype(np.int64)
            t2d = np.zeros(vocab, bool)  # which target ids the draft has; vLLM ignores it, as must we
            t2d[ids] = True
            tensors["t2d"] = t2d
        if spec.get("own_embedding"):
            tensors["embed_tokens.weight"] = normal(rng, vocab, h)
    os.makedirs(head_dir)
    write_safetensors(os.path.join(head_dir, "model.safetensors"), tensors)
    with open(os.path.join(head_dir, "config.json"), "w") as f:
        json.dump(config, f)


def aux_layers(head_config):
    ids = head_config.get("eagle_config", {}).get("eagle_aux_hidden_state_layer_ids")
    return ids or [2, TARGET_LAYERS // 2, TARGET_LAYERS - 3]


def attention(config, w, p, x):
    """Causal self-attention at positions 0.. of x [n, in] (q, k, v from x)."""
    n = len(x)
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    q, k, v = (x @ w[p + f"self_attn.{name}_proj.weight"].T for name in "qkv")
    angles = np.arange(n)[:, None] * ref.inv_frequencies(config, head_dim, seq_len=n)[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    q = ref.rotate(q.reshape(n, heads, head_dim), cos, sin)
    k = np.repeat(ref.rotate(k.reshape(n, kv_heads, head_dim), cos, sin), heads // kv_heads, axis=1)
    v = np.repeat(v.reshape(n, kv_heads, head_dim), heads // kv_heads, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(head_dim)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool))[None], scores, -np.inf)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", probs, v).reshape(n, heads * head_dim) @ w[p + "self_attn.o_proj.weight"].T


def silu_mlp(w, p, x):
    gate, up = x @ w[p + "mlp.gate_proj.weight"].T, x @ w[p + "mlp.up_proj.weight"].T
    return (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T


class Eagle:
    """rows(tokens, g) -> (each row's output, fed back; its logits [n, vocab])."""

    def __init__(self, target_dir, head_dir):
        self.config = json.load(open(os.path.join(head_dir, "config.json")))
        self.target = ref.load_weights(target_dir)
        self.head = ref.load_weights(head_dir)
        target_config = json.load(open(os.path.join(target_dir, "config.json")))
        self.lm_head = self.target.get("lm_head.weight")
        if self.lm_head is None or target_config.get("tie_word_embeddings"):
            self.lm_head = self.target["model.embed_tokens.weight"]

    def target_hidden(self, target_dir, ids):
        return ref.forward(target_dir, ids, final_hidden=True)

    def rows(self, tokens, g):
        x = np.concatenate([self.target["model.embed_tokens.weight"][np.asarray(tokens)], g], axis=-1)
        x = x @ self.head["fc.weight"].T + self.head.get("fc.bias", 0.0)
        # The head's layers under a Llama's names.
        w = {"model." + name: t for name, t in self.head.items() if name.startswith("layers.")}

        def matmul(a, weight):
            return a @ weight.T
        matmul.rounds_inputs = False
        out = ref.llama_family_forward(self.config, w, tokens, matmul, ref.KVCache("float32", w), inputs=x,
                                       eagle_head=True, final_hidden=True)
        return out, out @ self.lm_head.T


class Eagle3(Eagle):
    def target_hidden(self, target_dir, ids):
        return ref.forward(target_dir, ids, layer_inputs=aux_layers(self.config))

    def rows(self, tokens, g, first_pass_rows=None):
        c, w = self.config, self.head
        p = "midlayer." if "midlayer.hidden_norm.weight" in w else "layers.0."
        eps = c["rms_norm_eps"]
        embedding = w.get("embed_tokens.weight", self.target["model.embed_tokens.weight"])
        normed_g = ref.rms_norm(g, w[p + "hidden_norm.weight"], eps)
        a_in = np.concatenate([ref.rms_norm(embedding[np.asarray(tokens)], w[p + "input_layernorm.weight"], eps),
                               normed_g], axis=-1)
        r = (normed_g if c["norm_before_residual"] else g) + attention(c, w, p, a_in)
        pre = r + silu_mlp(w, p, ref.rms_norm(r, w[p + "post_attention_layernorm.weight"], eps))
        draft = ref.rms_norm(pre, w["norm.weight"], eps) @ w["lm_head.weight"].T
        logits = np.full((len(tokens), c["vocab_size"]), -np.inf)
        d2t = w.get("d2t", np.zeros(draft.shape[1])).astype(np.int64)
        logits[:, np.arange(draft.shape[1]) + d2t] = draft
        return pre, logits


def expected_logits(kind, target_dir, head_dir, ids):
    """The first pass's rows, then NUM_GUESSES - 1 guesses' rows, each recomputed from scratch."""
    head = (Eagle if kind == "eagle" else Eagle3)(target_dir, head_dir)
    hidden = head.target_hidden(target_dir, ids)[:-1]
    if kind == "eagle3":
        hidden = hidden @ head.head["fc.weight"].T
    tokens, g = list(ids[1:]), hidden
    outputs, logits = head.rows(tokens, g)
    rows = [logits]
    for _ in range(NUM_GUESSES - 1):
        tokens.append(int(np.argmax(rows[-1][-1])))
        g = np.concatenate([g, outputs[-1:]], axis=0)
        outputs, logits = head.rows(tokens, g)
        rows.append(logits[-1:])
    return np.concatenate(rows, axis=0)


def main():
    vllm_cpp, dump, workdir = sys.argv[1:4]
    target_dir = os.path.join(workdir, "eagle-target")
    shutil.rmtree(target_dir, ignore_errors=True)
    subprocess.run([vllm_cpp, "make-test-model", "--arch", "llama", "--preset", "tiny", "--dtype", "f32",
                    "--num-layers", str(TARGET_LAYERS), "--seed", "7", "--out", target_dir], check=True)
    vocab = json.load(open(os.path.join(target_dir, "config.json")))["vocab_size"]
    rng = np.random.default_rng(11)
    ids = rng.integers(0, vocab, NUM_TOKENS).tolist()
    failed = False
    for kind, name, spec in HEADS:
        head_dir = os.path.join(workdir, f"{kind}-head-{name}")
        shutil.rmtree(head_dir, ignore_errors=True)
        write_head(kind, target_dir, head_dir, spec, rng)
        expected = expected_logits(kind, target_dir, head_dir, ids)
        finite = np.isfinite(expected)
        scale = np.abs(expected[finite]).max()
        for chunk in CHUNK_SIZES:
            out_path = os.path.join(head_dir, f"logits-{chunk}.f32")
            subprocess.run([dump, kind, target_dir, head_dir, str(chunk), str(NUM_GUESSES), out_path],
                           input=" ".join(map(str, ids)).encode(), check=True)
            ours = np.fromfile(out_path, dtype="<f4").reshape(expected.shape)
            same_unreachable = np.array_equal(np.isfinite(ours), finite)
            error = np.abs(ours[finite] - expected[finite]).max() / scale
            ok = same_unreachable and error <= TOLERANCE
            failed |= not ok
            print(f"{kind} head {name} chunk={chunk}: {len(ids) - 1} rows and {NUM_GUESSES - 1} guesses, "
                  f"max |ours - ref| / max |ref| = {error:.2e} (tolerance {TOLERANCE:.0e}), "
                  f"unmapped ids -inf alike: {same_unreachable} {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
