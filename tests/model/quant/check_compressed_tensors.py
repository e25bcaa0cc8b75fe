#!/usr/bin/env python3
"""compressed-tensors checkpoints (llm-compressor's layouts) run as what their tensors mean.

Usage: check_compressed_tensors.py VLLM_CPP DUMP_LOGITS WORK_DIR

With numpy only, from tiny random llama and qwen2 checkpoints (vllm-cpp
make-test-model), writes compressed-tensors checkpoints the way
compressed-tensors saves them, quantized here as its symmetric and
asymmetric observers do (scale = max|w| / ((qmax - qmin) / 2), q =
round-half-even(w / scale + zero point) clamped):
  - pack-quantized (W4A16, W8A16): weight_packed int32 [N, K * b / 32], input
    k's code plus 2^(b-1) in bits b * (k % (32 / b)) of word k / (32 / b);
    weight_shape int64 [2]; weight_scale [N, groups]; asymmetric zero points
    weight_zero_point int32 packed the same way along the outputs; with
    actorder "group", weight_g_idx.  Each must generate what a plain
    checkpoint of its dequantized weights generates, within float32
    rounding (quant_checkpoints.assert_close_generation).
  - int-quantized W8A8: weight int8 [N, K], weight_scale [N, 1] or [1] (F32 or
    BF16), activations quantized per token (dynamic) or with input_scale [1]
    (static).  Their logits (dump_logits, prefill at once and token by token)
    must match a numpy forward pass (tests/reference) whose matrix products
    quantize their inputs as vLLM does (s = max|x| / 127, q = round-half-even(x
    * 127 / max|x|), or x / input_scale; int sums; y = s_x * (s_w * sum)), far
    closer than the forward pass without that quantization, and be the same
    bits on every ISA this CPU runs (the sums are exact).  Asymmetric
    activations likewise, with vLLM's zero points: per token from the row's
    range with 0 in it (s = (max - min) / 255, zp = round(-128 - min / s), q
    = clamp(round(x * (1 / s)) + zp)) or static with input_zero_point int8
    [1] (q = clamp(round(x / input_scale) + zp)); sums of (q - zp) * code.
`--quantization int8` on the plain checkpoints must generate exactly what the
W8A8 checkpoint of their rows quantized as vLLM quantizes activations (per
row, F32 scales) generates.  Then settings we cannot honour, and
--quantization values that do not fit the checkpoint, are refused with one
line that names them.
"""
import json
import os
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reference"))
from safetensors_io import Bf16, read_safetensors  # noqa: E402
import reference_forward  # noqa: E402
from quant_checkpoints import (assert_close_generation, assert_refused, assert_same_generation, generate,  # noqa: E402
                               make_bases, restate, write_twins)

F32 = np.float32
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# Static input scales: layers that read one input share one, as calibration gives them.
INPUT_SCALES = {"q_proj": 0.03, "k_proj": 0.03, "v_proj": 0.03, "o_proj": 0.01, "gate_proj": 0.03, "up_proj": 0.03,
                "down_proj": 0.004}
# Static asymmetric inputs' zero points, alike.
INPUT_ZERO_POINTS = {"q_proj": -9, "k_proj": -9, "v_proj": -9, "o_proj": 3, "gate_proj": 21, "up_proj": 21,
                     "down_proj": -40}
NUM_TOKENS = 48


def stored_scale(scale, dtype):
    """The scale tensor as written (F32 or BF16) and the float32 values it holds."""
    if dtype == "bf16":
        t = Bf16(scale)
        return t, t.values()
    return scale.astype(F32), scale.astype(F32)


def quantize_int8(w, per_tensor, scale_dtype, as_vllm_at_load=False):
    """int-quantized tensors of w [N, K] and the weights they mean: as compressed-tensors'
    observer does, or (as_vllm_at_load) as --quantization int8 should, each row as vLLM
    quantizes an activation row (quantize_rows)."""
    if as_vllm_at_load:
        q, scale, _ = quantize_rows(w, None)
        return {"weight": q.astype(np.int8), "weight_scale": scale}, (q * scale).astype(F32), None
    amax = np.abs(w).max() if per_tensor else np.abs(w).max(axis=1, keepdims=True)
    tensor, scale = stored_scale(np.reshape(amax / F32(127.5), (1,) if per_tensor else (-1, 1)), scale_dtype)
    q = np.clip(np.round(w / scale), -128, 127).astype(np.int8)
    return {"weight": q, "weight_scale": tensor}, (q.astype(F32) * scale).astype(F32), (q, scale.reshape(-1))


def pack_words(values, bits, axis):
    """int32 words of unsigned `values` packed along `axis` (32 / bits to a word, the first in the low bits)."""
    per = 32 // bits
    v = values if axis == 1 else values.T
    rows, cols = v.shape
    padded = np.zeros((rows, -(-cols // per) * per), np.uint32)
    padded[:, :cols] = v
    words = np.zeros((rows, padded.shape[1] // per), np.uint32)
    for i in range(per):
        words |= padded[:, i::per] << np.uint32(bits * i)
    words = words.view(np.int32)
    return words if axis == 1 else np.ascontiguousarray(words.T)


def quantize_packed(w, bits, group, symmetric, scale_dtype, g_idx=None):
    """pack-quantized tensors of w [N, K] (group None: per channel) and the weights they mean."""
    n, k = w.shape
    group = group or k
    if g_idx is None:
        order = np.arange(k)
    else:
        order = np.argsort(g_idx, kind="stable")
    qmin, qmax = -2 ** (bits - 1), 2 ** (bits - 1) - 1
    g = w[:, order].reshape(n, k // group, group)
    if symmetric:
        scale = np.abs(g).max(-1) / F32((qmax - qmin) / 2)
        zero = np.zeros(scale.shape, np.int64)
    else:
        lo, hi = np.minimum(g.min(-1), 0), np.maximum(g.max(-1), 0)
        scale = (hi - lo) / F32(qmax - qmin)
    tensor, scale = stored_scale(scale, scale_dtype)
    if not symmetric:
        zero = np.clip(np.round(qmin - lo / scale), qmin, qmax).astype(np.int64)
    q = np.clip(np.round(g / scale[..., None] + zero[..., None]), qmin, qmax).astype(np.int64)
    codes, meant = np.empty((n, k), np.int64), np.empty((n, k), F32)
    codes[:, order] = q.reshape(n, k)
    meant[:, order] = ((q - zero[..., None]).astype(F32) * scale[..., None]).reshape(n, k)
    offset = 2 ** (bits - 1)
    tensors = {"weight_packed": pack_words((codes + offset).astype(np.uint32), bits, 1),
               "weight_shape": np.array([n, k], np.int64), "weight_scale": tensor}
    if not symmetric:
        tensors["weight_zero_point"] = pack_words((zero + offset).astype(np.uint32), bits, 0)
    if g_idx is not None:
        tensors["weight_g_idx"] = g_idx.astype(np.int32)
    return tensors, meant, None


def act_order_g_idx(k, group, seed):
    perm = np.random.default_rng(seed).permutation(k)
    return (np.argsort(perm) // group).astype(np.int32)


def args(num_bits, strategy, symmetric=True, group_size=None, dynamic=False, actorder=None, type="int"):
    """A QuantizationArgs object as compressed-tensors serialises it."""
    return {"actorder": actorder, "block_structure": None, "dynamic": dynamic, "group_size": group_size,
            "num_bits": num_bits, "observer": None if dynamic else "minmax", "observer_kwargs": {},
            "strategy": strategy, "symmetric": symmetric, "type": type}


def config(fmt, weights, inputs=None, **extra):
    """quantization_config as llm-compressor writes it (one group targeting every Linear, lm_head ignored)."""
    return dict({"config_groups": {"group_0": {"format": fmt, "input_activations": inputs,
                                               "output_activations": None, "targets": ["Linear"],
                                               "weights": weights}},
                 "format": fmt, "global_compression_ratio": None, "ignore": ["lm_head"], "kv_cache_scheme": None,
                 "quant_method": "compressed-tensors", "quantization_status": "compressed", "sparsity_config": {},
                 "transform_config": {}, "version": "0.12.2"}, **extra)


def quantize_layer(w, name, quantization, scale_dtype):
    group = quantization["config_groups"]["group_0"]
    wa, inputs = group["weights"], group["input_activations"]
    if group["format"] == "int-quantized":
        tensors, meant, int8 = quantize_int8(w, wa["strategy"] == "tensor", scale_dtype, scale_dtype == "at load")
        zero_point = None
        if inputs is not None and not inputs["dynamic"]:
            # [1] as compressed-tensors writes it, and 0-d as other writers do (both one value).
            tensors["input_scale"] = np.array(INPUT_SCALES[name], F32).reshape(() if name == "o_proj" else (1,))
            if not inputs["symmetric"]:
                zero_point = INPUT_ZERO_POINTS[name]
                tensors["input_zero_point"] = np.array([zero_point], np.int8)
        asymmetric = inputs is not None and not inputs["symmetric"]
        return tensors, meant, None if int8 is None else int8 + (asymmetric, zero_point)
    g_idx = act_order_g_idx(w.shape[1], wa["group_size"], w.shape[1]) if wa["actorder"] == "group" else None
    return quantize_packed(w, wa["num_bits"], wa["group_size"], wa["symmetric"], scale_dtype, g_idx)


def quantized_checkpoint(base, out, reference, quantization, scale_dtype="f32", edit=None):
    """`base` quantized in `out`, its dequantized twin in `reference`; returns each int8
    layer's (codes, scales) by the twin's tensor name."""
    weights = read_safetensors(os.path.join(base, "model.safetensors"))
    stored, meant, int8 = {}, {}, {}
    for name, w in weights.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[-2] not in LINEARS or parts[-1] != "weight":
            stored[name] = meant[name] = np.array(w)
            continue
        prefix = name[:-len(".weight")]
        tensors, meant[name], layer_int8 = quantize_layer(np.array(w), parts[-2], quantization, scale_dtype)
        for suffix, t in tensors.items():
            stored[f"{prefix}.{suffix}"] = t
        if layer_int8 is not None:
            int8[name] = layer_int8[:2] + (tensors.get("input_scale"),) + layer_int8[2:]
    if edit:
        edit(stored)
    write_twins(base, out, reference, quantization, stored, meant)
    return int8


def quantize_rows(x, static_scale, asymmetric=False, static_zero_point=None):
    """vLLM's int8 quantization of each row of float32 x: codes, each row's scale and zero point."""
    x = x.astype(F32)
    if asymmetric:
        if static_scale is not None:
            scales = np.full((x.shape[0], 1), static_scale, F32)
            zps = np.full((x.shape[0], 1), static_zero_point, np.int64)
            scaled = x / scales
        else:
            lo, hi = np.minimum(x.min(axis=1, keepdims=True), 0), np.maximum(x.max(axis=1, keepdims=True), 0)
            scales = ((hi - lo) / F32(255)).astype(F32)
            zps = np.rint(F32(-128) - lo / scales).astype(np.int64)
            scaled = x * (F32(1) / scales)
        return np.clip(np.rint(scaled) + zps, -128, 127).astype(np.int64), scales, zps
    if static_scale is not None:
        scales = np.full((x.shape[0], 1), static_scale, F32)
        scaled = x / scales
    else:
        amax = np.abs(x).max(axis=1, keepdims=True)
        multiplier = np.where(amax == 0, F32(0), F32(127) / np.where(amax == 0, F32(1), amax)).astype(F32)
        scaled, scales = x * multiplier, (amax / F32(127)).astype(F32)
    return np.clip(np.rint(scaled), -128, 127).astype(np.int64), scales, 0


def int8_reference(model_dir, ids, int8):
    """Logits of reference_forward's pass with each int8 layer's products in int8, as the engine computes them."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    w = reference_forward.load_weights(model_dir)
    layers = {id(w[name]): value for name, value in int8.items()}

    def matmul(x, weight):
        if id(weight) not in layers:
            return x @ weight.T
        codes, scales, static_scale, asymmetric, zero_point = layers[id(weight)]
        q, row_scales, zps = quantize_rows(x, None if static_scale is None else static_scale.reshape(-1)[0],
                                           asymmetric, zero_point)
        sums = ((q - zps) @ codes.astype(np.int64).T).astype(F32)
        return (row_scales * (scales.astype(F32)[None, :] * sums)).astype(np.float64)
    matmul.rounds_inputs = False
    return reference_forward.llama_family_forward(c, w, ids, matmul, reference_forward.KVCache("float32", w))


def dump_logits(dump, model, ids, isa, chunk, work, kv_dtype="float32"):
    """The engine's logits of every position of `ids` (prefill in chunks, a KV cache of kv_dtype),
    or None where this CPU lacks `isa`."""
    out = os.path.join(work, f"logits-{isa}-{chunk}.f32")
    run = subprocess.run([dump, model, str(chunk), out, isa, kv_dtype], input=" ".join(map(str, ids)).encode(),
                         capture_output=True)
    if run.returncode == 77:
        return None
    assert run.returncode == 0, run.stderr.decode()
    return np.fromfile(out, "<f4").reshape(len(ids), -1)


def check_w8a8(label, dump, quantized, reference, int8, work):
    vocab = json.load(open(os.path.join(quantized, "config.json")))["vocab_size"]
    ids = np.random.default_rng(3).integers(0, vocab, NUM_TOKENS).tolist()
    want = int8_reference(reference, ids, int8)
    unquantized = reference_forward.forward(reference, ids)
    scale = np.abs(want).max()
    first = None
    for isa in ("auto", "avx512", "avx2", "scalar"):
        for chunk in (NUM_TOKENS, 1):
            got = dump_logits(dump, quantized, ids, isa, chunk, work)
            if got is None:
                continue
            if first is None:
                first = got
                error = np.abs(got - want).max() / scale
                without = np.abs(got - unquantized).max() / scale
                # float32 against float64 upstream of a rounding may move a few
                # activations by one step; the int8 reference must explain the
                # logits far better than the unquantized pass.
                assert error < 1e-4 and error * 10 < without, (label, error, without)
                print(f"ok: {label}: logits within {error:.1e} of the int8 reference "
                      f"({without:.1e} from the unquantized pass)")
            else:
                assert np.array_equal(got, first), f"{label}: {isa} chunk {chunk} differs from the first pass"
    print(f"ok: {label}: the same bits on every ISA and chunking")


def main():
    vllm, dump, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    bases = make_bases(vllm, work)
    quantized, reference = os.path.join(work, "quantized"), os.path.join(work, "reference")

    weight_only = {
        "W4A16 llama group 32": ("llama", config("pack-quantized", args(4, "group", group_size=32)), "f32"),
        "W4A16 qwen2 group 64, BF16 scales": ("qwen2", config("pack-quantized", args(4, "group", group_size=64)),
                                              "bf16"),
        "W4A16 llama asymmetric group 32": ("llama", config("pack-quantized",
                                                            args(4, "group", symmetric=False, group_size=32)), "bf16"),
        "W4A16 qwen2 per channel": ("qwen2", config("pack-quantized", args(4, "channel")), "f32"),
        "W8A16 llama asymmetric group 16": ("llama", config("pack-quantized",
                                                            args(8, "group", symmetric=False, group_size=16)), "bf16"),
        "W4A16 llama group 32 actorder group": ("llama", config("pack-quantized",
                                                                args(4, "group", group_size=32, actorder="group")),
                                                "f32"),
    }
    for label, (arch, quantization, scale_dtype) in weight_only.items():
        quantized_checkpoint(bases[arch], quantized, reference, quantization, scale_dtype)
        worst = assert_close_generation(vllm, quantized, reference, work, label)
        print(f"ok: {label} generates what its dequantized checkpoint does (logprobs within {worst:.1e})")

    dynamic, static = args(8, "token", dynamic=True), args(8, "tensor")
    w8a8 = {
        "W8A8 llama per-channel weights, dynamic per-token activations": ("llama", config(
            "int-quantized", args(8, "channel"), dynamic), "f32"),
        "W8A8 qwen2 per-channel BF16 scales, dynamic activations": ("qwen2", config(
            "int-quantized", args(8, "channel"), dynamic), "bf16"),
        "W8A8 llama per-tensor weights, static per-tensor activations": ("llama", config(
            "int-quantized", args(8, "tensor"), static), "f32"),
        "W8A8 qwen2 per-channel weights, dynamic asymmetric per-token activations": ("qwen2", config(
            "int-quantized", args(8, "channel"), args(8, "token", symmetric=False, dynamic=True)), "f32"),
        "W8A8 llama per-channel weights, static asymmetric activations (input_zero_point)": ("llama", config(
            "int-quantized", args(8, "channel"), args(8, "tensor", symmetric=False)), "f32"),
    }
    for label, (arch, quantization, scale_dtype) in w8a8.items():
        int8 = quantized_checkpoint(bases[arch], quantized, reference, quantization, scale_dtype)
        check_w8a8(label, dump, quantized, reference, int8, work)

    # --quantization int8: the same bits as the W8A8 checkpoint of its per-row codes and scales.
    for arch in ("llama", "qwen2"):
        label = f"--quantization int8 on {arch}"
        quantized_checkpoint(bases[arch], quantized, reference,
                             config("int-quantized", args(8, "channel"), dynamic), "at load")
        assert_same_generation(vllm, bases[arch], quantized, work, label, ("--quantization", "int8"))
        print(f"ok: {label} generates exactly what a W8A8 checkpoint of its rows quantized as vLLM does")
    mismatched = {("int8", quantized): "does not match", ("awq", quantized): "does not match",
                  ("gptq", bases["llama"]): "is not quantized", ("fp16", bases["llama"]): "is not quantized"}
    for (method, model), expected in mismatched.items():
        result, _ = generate(vllm, model, work, "refused", "--quantization", method)
        assert_refused(result, method, expected)
    print(f"ok: {len(mismatched)} --quantization values that do not fit the checkpoint refused with one line")

    def no_scale(t):
        del t["model.layers.1.self_attn.o_proj.weight_scale"]
        t["model.layers.1.self_attn.o_proj.weight_packed"] = t["model.layers.1.self_attn.o_proj.weight_packed"]

    def wrong_shape(t):
        t["model.layers.0.mlp.up_proj.weight_shape"] = np.array([7, 64], np.int64)

    g32 = config("pack-quantized", args(4, "group", group_size=32))
    w8a8_dynamic = config("int-quantized", args(8, "channel"), dynamic)
    refused = {
        "NVFP4": (w8a8_dynamic, config("nvfp4-pack-quantized", args(4, "tensor_group", group_size=16, type="float")),
                  None, "format 'nvfp4-pack-quantized' is not supported"),
        "dynamic per-tensor activations": (w8a8_dynamic, config("int-quantized", args(8, "channel"),
                                                                args(8, "tensor", dynamic=True)), None,
                                           "must be dynamic per token or static per tensor"),
        "group-wise int8 weights": (w8a8_dynamic, config("int-quantized", args(8, "group", group_size=32), dynamic),
                                    None, "group-wise int-quantized weights"),
        "sparsity": (g32, dict(g32, sparsity_config={"format": "sparse-24-bitmask"}), None,
                     "sparsity_config is not supported"),
        "3-bit packing": (g32, config("pack-quantized", args(3, "group", group_size=32)), None,
                          "pack-quantized num_bits 3"),
        "missing scale": (g32, g32, no_scale, "model.layers.1.self_attn.o_proj"),
        "weight_shape mismatch": (g32, g32, wrong_shape, "weight_shape (7, 64) does not match"),
        "untargeted layer": (g32, dict(g32, config_groups={"group_0": dict(g32["config_groups"]["group_0"],
                                                                          targets=["re:.*self_attn.*"])}), None,
                             "'model.layers.0.mlp.gate_proj' is quantized but no config group targets it"),
    }
    for label, (written, stated, edit, expected) in refused.items():
        quantized_checkpoint(bases["llama"], quantized, reference, written, edit=edit)
        restate(quantized, stated)
        result, _ = generate(vllm, quantized, work, "refused")
        assert_refused(result, label, expected)
    print(f"ok: {len(refused)} compressed-tensors checkpoints refused with one line")


if __name__ == "__main__":
    main()
