#!/usr/bin/env python3
"""A GGUF file runs as the Hugging Face model it was made from.

Usage: check_gguf_model.py VLLM_CPP DUMP_LOGITS STORIES_DIR WORK_DIR

From stories260k (a llama), with numpy only, writes GGUF files the way
llama.cpp's converter lays them out (its tensor names, its metadata keys,
q_proj / k_proj rows permuted per head, shapes fastest dimension first):
  - F32 and F16: must generate exactly what the Hugging Face directory does
    (F16: a directory of the same F16 values);
  - quantized (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 across one layer's matrices,
    F16 where a row is not whole blocks), and the K-quants (Q2_K ... Q6_K)
    and the non-linear IQ4_XS and IQ4_NL on a llama of 256-wide rows over
    the same vocabulary, its weights made from random blocks: the engine's
    logits at every position match a numpy forward pass over check_gguf.py's
    dequantization of those weights in which each quantized matrix (stacked
    only with such: q/k/v, gate/up) meets its activations quantized to Q8_0
    blocks, as llama.cpp computes them (gemm.h's block int8 arithmetic); the
    F16 and F32 ones meet them unrounded.  The same bits on
    every ISA, prefilled at once and token by token.  (One layer at a time:
    the engine's float32 and numpy's float64 differ by about 1e-7 before
    each rounding, and across a whole model of rounded matrices that moves
    some activation over a rounding boundary, whose step this tiny model
    carries to its logits.)
"Exactly": the same token ids, logprobs and prompt logprobs, bit for bit in
the JSON.  A GGUF with Llama 3's rope_freqs.weight generates what the checkpoint
with rope_scaling llama3 does (the divisors' float32 rounding aside).  Then: a GGUF without --tokenizer and one of an architecture we do
not run are each refused with one line that says so.
"""
import json
import math
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "quant"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reference"))
import check_gguf as gg  # noqa: E402  (the GGUF writer and ggml dequantizers)
import check_compressed_tensors as ct  # noqa: E402  (dump_logits)
import reference_forward  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

F32 = np.float32


# ---------------------------------------------------------------- quantizers
# Round-to-nearest block quantizers in ggml's block layouts.  The test's truth
# is the dequantization of the bytes written, so these need only be sensible.
def blocks_of(w):
    return w.reshape(-1, 32).astype(F32)


def pack_nibbles(q):
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def pack_fifth(q):
    bits = ((q >> 4) & 1).astype(np.uint64)
    word = (bits << np.arange(32, dtype=np.uint64)).sum(axis=1).astype("<u4")
    return word.view(np.uint8).reshape(-1, 4)


def f16_bytes(v):
    return v.astype("<f2").view(np.uint8).reshape(-1, 2)


def quantize(type_name, w):
    if type_name in TYPES_FROM_BLOCKS:
        return MADE_FROM_BLOCKS[(type_name, np.ascontiguousarray(w).tobytes())]
    x = blocks_of(w)
    amax = np.abs(x).max(axis=1, keepdims=True)
    lo, hi = x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)
    safe = lambda d: np.where(d == 0, 1, d)  # noqa: E731
    if type_name == "Q8_0":
        d = (amax / 127).astype(np.float16)
        q = np.clip(np.round(x / safe(d.astype(F32))), -127, 127).astype(np.int8)
        return np.concatenate([f16_bytes(d), q.view(np.uint8)], axis=1).tobytes()
    if type_name in ("Q4_0", "Q5_0"):
        levels = 7 if type_name == "Q4_0" else 15
        d = (amax / levels).astype(np.float16)
        q = np.clip(np.round(x / safe(d.astype(F32))) + levels + 1, 0, 2 * levels + 1).astype(np.int64)
        parts = [f16_bytes(d)] + ([pack_fifth(q)] if type_name == "Q5_0" else []) + [pack_nibbles(q & 0xF)]
        return np.concatenate(parts, axis=1).tobytes()
    levels = 15 if type_name == "Q4_1" else 31
    d, m = ((hi - lo) / levels).astype(np.float16), lo.astype(np.float16)
    q = np.clip(np.round((x - m.astype(F32)) / safe(d.astype(F32))), 0, levels).astype(np.int64)
    parts = [f16_bytes(d), f16_bytes(m)] + ([pack_fifth(q)] if type_name == "Q5_1" else []) + [pack_nibbles(q & 0xF)]
    return np.concatenate(parts, axis=1).tobytes()


# ---------------------------------------------------------------- conversion
LAYER_NAMES = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
               "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
               "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
               "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
               "mlp.down_proj.weight": "ffn_down.weight"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    _, _, layer, rest = hf.split(".", 3)
    return f"blk.{layer}.{LAYER_NAMES[rest]}"


def interleave_rotary_rows(w, heads):
    """llama.cpp's converter: of each head, the two rotary halves' rows interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def convert(config, weights, choose_type, file_type):
    """GGUF bytes of the model, and the weights it holds as the checkpoint's F32 (or F16) arrays."""
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    eps = float(F32(config["rms_norm_eps"]))
    meta = [("general.architecture", "string", "llama"), ("general.file_type", "uint32", file_type),
            ("llama.block_count", "uint32", config["num_hidden_layers"]),
            ("llama.context_length", "uint32", config["max_position_embeddings"]),
            ("llama.embedding_length", "uint32", config["hidden_size"]),
            ("llama.feed_forward_length", "uint32", config["intermediate_size"]),
            ("llama.attention.head_count", "uint32", heads), ("llama.attention.head_count_kv", "uint32", kv_heads),
            ("llama.attention.layer_norm_rms_epsilon", "float32", eps),
            ("llama.rope.freq_base", "float32", config["rope_theta"]),
            ("llama.rope.dimension_count", "uint32", config["head_dim"]),
            ("llama.vocab_size", "uint32", config["vocab_size"]),
            ("tokenizer.ggml.bos_token_id", "uint32", config["bos_token_id"]),
            ("tokenizer.ggml.eos_token_id", "uint32", config["eos_token_id"])]
    tensors, held = [], {}
    for i, (name, w) in enumerate(sorted(weights.items())):
        type_name = choose_type(i, name, w)
        stored = w
        if name.endswith("q_proj.weight"):
            stored = interleave_rotary_rows(w, heads)
        elif name.endswith("k_proj.weight"):
            stored = interleave_rotary_rows(w, kv_heads)
        if type_name == "F32":
            raw, held[name] = stored.astype("<f4").tobytes(), w.astype(F32)
        elif type_name == "F16":
            raw, held[name] = stored.astype("<f2").tobytes(), w.astype(np.float16)
        else:
            raw = quantize(type_name, stored)
            # Rows are quantized on their own, so the checkpoint's rows are the stored ones put back.
            held[name] = quantize_roundtrip(type_name, w)
        tensors.append((gguf_name(name), list(reversed(w.shape)), type_name, raw))
    return gg.gguf_bytes(meta, tensors), held


def quantize_roundtrip(type_name, w):
    if type_name in TYPES_FROM_BLOCKS:  # made from blocks: exactly what they hold
        return w
    return gg.dequantize(type_name, quantize(type_name, w), w.size).reshape(w.shape)


# K-quant and IQ4 matrices are not quantized from weights here: their weights are
# made from random blocks (codes and scales), so that the weights are
# exactly what the bytes hold, and quantize() looks the bytes up.
TYPES_FROM_BLOCKS = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "IQ4_NL"]
MADE_FROM_BLOCKS = {}


def matrix_from_blocks(rng, type_name, rows, cols, rotary_heads=0):
    """A [rows, cols] weight of random `type_name` blocks, values about 0.02 in size, in the
    checkpoint's row order (the bytes hold the converter's, for q_proj / k_proj)."""
    raw = np.frombuffer(gg.random_blocks(rng, type_name, rows * cols), np.uint8).copy()
    block_bytes = gg.TYPES[type_name][2]
    blocks = raw.reshape(-1, block_bytes)
    rms = np.sqrt(np.mean(gg.dequantize(type_name, raw.tobytes(), rows * cols).astype(np.float64) ** 2))
    for offset in gg.HALF_FIELDS[type_name]:
        field = blocks[:, offset:offset + 2].copy().view("<f2")
        blocks[:, offset:offset + 2] = (field.astype(F32) * F32(0.02 / rms)).astype("<f2").view(np.uint8)
    stored = gg.dequantize(type_name, blocks.tobytes(), rows * cols).reshape(rows, cols)
    MADE_FROM_BLOCKS[(type_name, stored.tobytes())] = blocks.tobytes()
    if rotary_heads:  # the checkpoint's rows: the converter's interleaving undone
        half = rows // rotary_heads // 2
        return stored.reshape(rotary_heads, half, 2, cols).swapaxes(1, 2).reshape(rows, cols)
    return stored


# Q4_K_M-like: the tied embedding and a v_proj in Q6_K (its q/k/v stack in groups of 16), the
# 32-value K-quants and IQ4s stacked among themselves (Q4_K gate/up and Q5_K q/k/v in steps,
# IQ4_XS beside IQ4_NL in FP32 parameters) and alone, and a Q3_K and a Q2_K down_proj.
MIXED_K_TYPES = {"embed_tokens": "Q6_K",
                 "layers.0.self_attn.q_proj": "Q4_K", "layers.0.self_attn.k_proj": "Q4_K",
                 "layers.0.self_attn.v_proj": "Q6_K", "layers.0.self_attn.o_proj": "Q5_K",
                 "layers.0.mlp.gate_proj": "Q4_K", "layers.0.mlp.up_proj": "Q4_K",
                 "layers.0.mlp.down_proj": "Q3_K",
                 "layers.1.self_attn.q_proj": "Q5_K", "layers.1.self_attn.k_proj": "Q5_K",
                 "layers.1.self_attn.v_proj": "Q5_K", "layers.1.self_attn.o_proj": "IQ4_NL",
                 "layers.1.mlp.gate_proj": "IQ4_XS", "layers.1.mlp.up_proj": "IQ4_NL",
                 "layers.1.mlp.down_proj": "Q2_K"}


def k_quant_model(config, rng, choose, hidden_size=256, intermediate_size=512):
    """A llama of K-quant-sized rows (multiples of 256) over stories260k's vocabulary, heads of 64: its
    config and its weights, matrix `name` (its index i in name order) of type choose(i, name)."""
    c = dict(config, hidden_size=hidden_size, intermediate_size=intermediate_size,
             num_attention_heads=hidden_size // 64, num_key_value_heads=2, head_dim=64, num_hidden_layers=2)
    h, inter, kv = c["hidden_size"], c["intermediate_size"], c["num_key_value_heads"] * c["head_dim"]
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], h), "model.norm.weight": (h,)}
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
                       p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
                       p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
                       p + "mlp.down_proj.weight": (h, inter)})
    weights, types = {}, {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        if len(shape) == 1:
            weights[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(F32)
            continue
        types[name] = choose(i, name)
        heads = c["num_attention_heads"] if "q_proj" in name else c["num_key_value_heads"] if "k_proj" in name else 0
        weights[name] = matrix_from_blocks(rng, types[name], *shape, rotary_heads=heads)
    return c, weights, types


# ---------------------------------------------------------------- running
REQUESTS = [{"prompt_token_ids": [1, 403, 407, 261, 378, 429], "max_tokens": 24, "temperature": 0, "logprobs": 5,
             "prompt_logprobs": 5, "ignore_eos": True},
            {"prompt_token_ids": [1], "max_tokens": 16, "temperature": 0, "logprobs": 2, "ignore_eos": True}]


def generate(vllm, model, work, name, tokenizer=None):
    requests = os.path.join(work, "requests.jsonl")
    with open(requests, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in REQUESTS))
    out = os.path.join(work, name + ".out.jsonl")
    cmd = [vllm, "generate", "--model", model, "--input", requests, "--output", out, "--threads", "2"]
    if tokenizer:
        cmd += ["--tokenizer", tokenizer]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, (name, result.stderr)
    with open(out) as f:
        return f.read()


def hf_dir(work, name, stories, config, weights):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(stories):
        if f.endswith(".json") and f != "config.json":
            with open(os.path.join(stories, f)) as src, open(os.path.join(d, f), "w") as dst:
                dst.write(src.read())
    c = dict(config)
    c["rms_norm_eps"] = float(F32(config["rms_norm_eps"]))  # GGUF keeps it as float32
    c["torch_dtype"] = "float16" if any(w.dtype == np.float16 for w in weights.values()) else "float32"
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f)
    write_safetensors(os.path.join(d, "model.safetensors"), weights)
    return d


# ---------------------------------------------------------------- logits
# ggml's quantized types, which llama.cpp computes against quantized activations (Q8_0
# ones; Q8_K for the K-quants) and the engine against Q8_0 ones.
BLOCK_INT8_TYPES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                    "IQ4_XS"}
STACKS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


def block_int8_names(types):
    """The matrices the engine computes against block-quantized activations: those of a 32-value
    type whose stacked partners (one packed matrix) are all of such types too."""
    def stack(name):
        for group in STACKS:
            for part in group:
                if name.endswith(f".{part}.weight"):
                    return [name.replace(part, other) for other in group]
        return [name]
    return {n for n in types if all(types.get(p) in BLOCK_INT8_TYPES for p in stack(n))}


def quantize_blocks(x):
    """Float32 activations as ggml's Q8_0 quantization leaves them (d = amax / 127, q =
    round-to-even(x * (1 / d)) within +-127), each value q * d, exactly (float64)."""
    b = x.astype(F32).reshape(*x.shape[:-1], -1, 32)
    d = (np.abs(b).max(axis=-1, keepdims=True) / F32(127)).astype(F32)
    inverse = np.where(d == 0, F32(0), F32(1) / np.where(d == 0, F32(1), d)).astype(F32)
    q = np.clip(np.rint(b * inverse), -127, 127)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)


def check_logits(label, dump, gguf, reference, config, types, work):
    """The GGUF's logits against the numpy pass over its checkpoint twin with block int8 products."""
    blocks = block_int8_names(types)
    assert blocks, f"{label}: no matrix is computed against block-quantized activations"
    ids = np.random.default_rng(11).integers(0, config["vocab_size"], 24).tolist()
    w = reference_forward.load_weights(reference)
    rounded = {id(w[name]) for name in blocks}

    def matmul(x, weight):
        return (quantize_blocks(x) if id(weight) in rounded else x) @ weight.T
    matmul.rounds_inputs = False
    with open(os.path.join(reference, "config.json")) as f:
        c = json.load(f)
    want = reference_forward.llama_family_forward(c, w, ids, matmul, reference_forward.KVCache("float32", w))
    unrounded = reference_forward.forward(reference, ids)
    scale = np.abs(want).max()
    first = None
    for isa in ("auto", "avx512", "avx2", "scalar"):
        for chunk in (len(ids), 1):
            got = ct.dump_logits(dump, gguf, ids, isa, chunk, work)
            if got is None:
                continue
            if first is None:
                first = got
                # Per position: float32 against float64 upstream of a rounding
                # may move an activation by one step now and then, and that
                # position's logits by the step; the rest agree to float32's
                # precision, and every position lies far closer to the block
                # int8 reference than to the unrounded pass.
                error = np.abs(got - want).max(axis=1) / scale
                without = np.abs(got - unrounded).max(axis=1) / scale
                agree = int((error < 1e-5).sum())
                assert agree >= 0.75 * len(ids) and (error * 3 < without).all(), (label, error, without)
                print(f"ok: {label}: logits of {agree} of {len(ids)} positions within 1e-5 of the block int8 "
                      f"reference (all within {error.max():.1e}; {without.min():.1e} or more from the unrounded "
                      f"pass; {len(blocks)} of {len(types)} tensors rounded)")
            else:
                assert np.array_equal(got, first), f"{label}: {isa} chunk {chunk} differs from the first pass"
    print(f"ok: {label}: the same bits on every ISA and chunking")


def llama3_divisors(config):
    """rope_freqs.weight as llama.cpp's converter computes it for rope_type llama3 (in float32)."""
    rs, dim = config["rope_scaling"], config["head_dim"]
    freqs = 1.0 / (config["rope_theta"] ** (np.arange(0, dim, 2, dtype=F32) / dim))
    old, lo, hi, factor = (rs["original_max_position_embeddings"], rs["low_freq_factor"], rs["high_freq_factor"],
                           rs["factor"])
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=F32)


def check_llama3_rope(vllm, stories, work, config, weights):
    """Llama 3's rotary scaling, which the converter stores as each frequency's divisor: the GGUF
    generates what the checkpoint with rope_scaling llama3 does (the same ids; logprobs within
    the divisors' float32 rounding), and not what the unscaled model does."""
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}  # stories' 4 frequencies: kept, blended, divided, divided
    l3 = dict(config, rope_scaling=scaling)
    meta, tensors = [], []
    capture = gg.gguf_bytes
    gg.gguf_bytes = lambda m, t, **kw: (meta.extend(m), tensors.extend(t), b"")[2]
    _, held = convert(l3, weights, lambda i, n, w: "F32", 0)
    gg.gguf_bytes = capture
    divisors = llama3_divisors(l3)
    tensors.insert(0, ("rope_freqs.weight", [len(divisors)], "F32", divisors.astype("<f4").tobytes()))
    path = os.path.join(work, "llama3_rope.gguf")
    with open(path, "wb") as f:
        f.write(gg.gguf_bytes(meta, tensors))
    reference = hf_dir(work, "llama3_rope_hf", stories, l3, held)
    got = [json.loads(line) for line in generate(vllm, path, work, "llama3_gguf", tokenizer=reference).splitlines()]
    want = [json.loads(line) for line in generate(vllm, reference, work, "llama3_hf").splitlines()]
    plain = [json.loads(line) for line in generate(vllm, os.path.join(work, "f32_hf"), work, "plain").splitlines()]
    worst = 0.0
    for g, w in zip(got, want):
        assert g["outputs"][0]["token_ids"] == w["outputs"][0]["token_ids"], (g, w)
        for a, b in zip(g["outputs"][0]["logprobs"], w["outputs"][0]["logprobs"]):
            assert a.keys() == b.keys(), (a, b)
            worst = max(worst, max(abs(a[k] - b[k]) for k in a))
    assert worst < 1e-4, f"llama3 rope: logprobs differ by {worst}"
    assert [g["outputs"][0]["logprobs"] for g in got] != [p["outputs"][0]["logprobs"] for p in plain], \
        "rope_freqs.weight changed nothing"
    print(f"ok: a GGUF with rope_freqs.weight generates what its llama3-scaled checkpoint does "
          f"(logprobs within {worst:.1e})")


def main():
    vllm, dump, stories, work = sys.argv[1:5]
    if not os.path.isfile(os.path.join(stories, "model.safetensors")):
        print(f"SKIP: {stories} has no model.safetensors")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(stories, "config.json")) as f:
        config = json.load(f)
    weights = read_safetensors(os.path.join(stories, "model.safetensors"))
    quant_types = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]

    def quantized(i, name, w):
        if w.ndim == 1 or w.shape[1] % 32 != 0:
            return "F32" if w.ndim == 1 else "F16"
        if name == "model.layers.0.mlp.up_proj.weight":  # beside a quantized gate_proj, as quantizers may leave one
            return "F16"
        return quant_types[i % len(quant_types)]

    variants = {"f32": (lambda i, n, w: "F32", 0), "f16": (lambda i, n, w: "F32" if w.ndim == 1 else "F16", 1)}
    for name, (choose, file_type) in variants.items():
        data, held = convert(config, weights, choose, file_type)
        path = os.path.join(work, name + ".gguf")
        with open(path, "wb") as f:
            f.write(data)
        reference = hf_dir(work, name + "_hf", stories, config, held)
        # The F16 file is given by its directory, which holds only it.
        model = path
        if name == "f16":
            model = os.path.join(work, "f16_dir")
            shutil.rmtree(model, ignore_errors=True)  # a previous run's second file
            os.makedirs(model)
            os.replace(path, os.path.join(model, "f16.gguf"))
        got = generate(vllm, model, work, name + "_gguf", tokenizer=reference)
        want = generate(vllm, reference, work, name + "_hf")
        assert got == want, f"{name}: the GGUF generated\n{got}\nthe checkpoint\n{want}"
        types = sorted({t for t in (choose(i, n, w) for i, (n, w) in enumerate(sorted(weights.items())))})
        print(f"ok: {name} GGUF ({', '.join(types)}) generates exactly what its checkpoint does")

    # The 32-value types across stories260k's matrices, one layer's in each
    # file (the first's with the embedding and tied LM head) and F32 elsewhere.
    types = {n: quantized(i, n, w) for i, (n, w) in enumerate(sorted(weights.items()))}
    for layer in range(config["num_hidden_layers"]):
        def quantized_here(name):
            return f"layers.{layer}." in name or (layer == 0 and name == "model.embed_tokens.weight")
        here = {n: t if quantized_here(n) or t not in BLOCK_INT8_TYPES else "F32" for n, t in types.items()}
        data, held = convert(config, weights, lambda i, n, w: here[n], 7)  # MOSTLY_Q4_1
        held = {n: w.astype(F32) for n, w in held.items()}  # beside quantized tensors, F16 ones are read as FP32
        path = os.path.join(work, f"quantized-{layer}.gguf")
        with open(path, "wb") as f:
            f.write(data)
        reference = hf_dir(work, f"quantized-{layer}_hf", stories, config, held)
        label = f"layer {layer} quantized ({', '.join(sorted(set(t for n, t in here.items() if quantized_here(n))))})"
        check_logits(label, dump, path, reference, config, here, work)

    # The K-quants of 16-value groups (Q2_K, Q3_K, Q6_K) stacked beside each other in
    # q/k/v and gate/up, the embedding and tied LM head too; then every K-quant and IQ4 type
    # as MIXED_K_TYPES places them: all against Q8_0 activations.  One layer's matrices
    # quantized at a time, as above (the first's with the embedding), the rest F32.
    sixteens = ["Q2_K", "Q3_K", "Q6_K"]
    variants = {"k_quants_16": lambda i, name: sixteens[i % len(sixteens)],
                "k_quants_mixed": lambda i, name: MIXED_K_TYPES[name[len("model."):-len(".weight")]]}
    for name, choose in variants.items():
        k_config, k_weights, k_types = k_quant_model(config, np.random.default_rng(5), choose)
        for layer in range(k_config["num_hidden_layers"]):
            here = {n: t for n, t in k_types.items()
                    if f"layers.{layer}." in n or (layer == 0 and n == "model.embed_tokens.weight")}
            data, held = convert(k_config, k_weights, lambda i, n, w: here.get(n, "F32"), 15)  # MOSTLY_Q4_K_M
            path = os.path.join(work, f"{name}-{layer}.gguf")
            with open(path, "wb") as f:
                f.write(data)
            reference = hf_dir(work, f"{name}-{layer}_hf", stories, k_config, held)
            assert block_int8_names(here) == set(here), name
            label = f"K-quant GGUF, layer {layer} quantized ({', '.join(sorted(set(here.values())))})"
            check_logits(label, dump, path, reference, k_config, here, work)

    # The F32 model cut in three as gguf-split cuts one: the metadata in the
    # first file; split.no, split.count and split.tensors.count in each.
    meta, tensors = [], []
    capture = gg.gguf_bytes
    gg.gguf_bytes = lambda m, t, **kw: (meta.extend(m), tensors.extend(t), b"")[2]
    convert(config, weights, lambda i, n, w: "F32", 0)
    gg.gguf_bytes = capture
    parts = [tensors[0::3], tensors[1::3], tensors[2::3]]
    split_dir = os.path.join(work, "split")
    shutil.rmtree(split_dir, ignore_errors=True)
    os.makedirs(split_dir)
    for no, part in enumerate(parts):
        split = [("split.no", "uint16", no), ("split.count", "uint16", 3),
                 ("split.tensors.count", "int32", len(tensors))]
        with open(os.path.join(split_dir, f"stories-{no + 1:05d}-of-00003.gguf"), "wb") as f:
            f.write(gg.gguf_bytes((meta if no == 0 else []) + split, part))
    got = generate(vllm, os.path.join(split_dir, "stories-00001-of-00003.gguf"), work, "split_gguf",
                   tokenizer=os.path.join(work, "f32_hf"))
    by_directory = generate(vllm, split_dir, work, "split_dir_gguf", tokenizer=os.path.join(work, "f32_hf"))
    assert by_directory == got, "the directory of the splits generated differently"
    want = generate(vllm, os.path.join(work, "f32_hf"), work, "split_hf")
    assert got == want, "the split GGUF generated differently"
    print("ok: a GGUF split in three generates exactly what its checkpoint does")
    check_llama3_rope(vllm, stories, work, config, weights)

    refused = {
        "second split": ([vllm, "generate", "--model", os.path.join(split_dir, "stories-00002-of-00003.gguf"),
                          "--tokenizer", stories], "load the first, named *-00001-of-3.gguf"),
        "no tokenizer": ([vllm, "generate", "--model", os.path.join(work, "f32.gguf")],
                         "pass --tokenizer DIR"),
        "gpt2": ([vllm, "generate", "--model", os.path.join(work, "gpt2.gguf"), "--tokenizer", stories],
                 "GGUF architecture 'gpt2' is not supported"),
    }
    with open(os.path.join(work, "f16_dir", "other.gguf"), "wb") as f:
        f.write(gg.gguf_bytes([("general.architecture", "string", "llama")], []))
    refused["two GGUF files"] = ([vllm, "generate", "--model", os.path.join(work, "f16_dir"), "--tokenizer", stories],
                                 "holds 2 GGUF files; name the one to load")
    with open(os.path.join(work, "gpt2.gguf"), "wb") as f:
        f.write(gg.gguf_bytes([("general.architecture", "string", "gpt2")], []))
    no_rows = dict(weights)
    no_rows["model.layers.0.self_attn.q_proj.weight"] = np.zeros((0, config["hidden_size"]), F32)
    with open(os.path.join(work, "no_rows.gguf"), "wb") as f:
        f.write(convert(config, no_rows, lambda i, n, w: "F32", 0)[0])
    refused["q_proj of no rows"] = ([vllm, "generate", "--model", os.path.join(work, "no_rows.gguf"), "--tokenizer",
                                     stories], "has 0 rows, not whole heads of")
    for name, (cmd, expected) in refused.items():
        result = subprocess.run(cmd, capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0 and len(lines) == 1 and expected in lines[0], (name, result.stderr)
    print(f"ok: {len(refused)} GGUF models refused with one line")


if __name__ == "__main__":
    main()
