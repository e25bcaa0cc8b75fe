#!/usr/bin/env python3
"""FP8 checkpoints run as the dequantized checkpoints they stand for.

Usage: check_fp8_checkpoints.py VLLM_CPP DUMP_LOGITS WORK_DIR

With numpy only (which has no FP8: tests/reference/e4m3.py encodes and
decodes E4M3 from its definition), from tiny random llama and
qwen2 checkpoints, writes each linear layer as an F8_E4M3 weight and its
scales the way the tools lay them out:
  - compressed-tensors float-quantized (llm-compressor's FP8 / FP8_DYNAMIC /
    FP8_BLOCK): weight_scale [1] (tensor), [N, 1] (channel) or
    [ceil(N / rows), K / cols] (block);
  - quant_method fp8 (vLLM's and transformers' FP8 checkpoints):
    weight_scale, one value ([] here), or with weight_block_size,
    weight_scale_inv [ceil(N / rows), ceil(K / cols)] (it multiplies too).
Each must generate what a plain checkpoint of its dequantized weights,
scale * e4m3(code), generates, within float32 rounding
(quant_checkpoints.assert_close_generation); the activations
stay FP32 (input scales of static schemes are written and not used).  Then
what we cannot honour is refused with one line that names it.  And
`--quantization fp8` on the plain checkpoints must generate exactly what the
fp8 checkpoint of their tensors quantized as vLLM's dynamic FP8 does (scale
max|w| / 448, the E4M3 numbers nearest w * (1 / scale)) generates.
Last, the FP8 KV cache's scales: a compressed-tensors checkpoint with a
kv_cache_scheme and per-layer self_attn.k_scale / v_scale (and an older
one's single kv_scale), under --kv-cache-dtype fp8, must give the logits
of reference_forward's pass whose cache stores e4m3(x / scale) * scale
with those scales.
"""
import json
import os
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_compressed_tensors as ct  # noqa: E402  (it puts tests/reference on the path too)
import reference_forward  # noqa: E402
from e4m3 import VALUES, to_e4m3  # noqa: E402
from quant_checkpoints import (assert_close_generation, assert_refused, assert_same_generation, generate,  # noqa: E402
                               make_bases, restate, write_twins)
from safetensors_io import Bf16, F8E4M3, read_safetensors, write_safetensors  # noqa: E402

F32 = np.float32


def scales_for(w, rows, cols):
    """max|w| / 448 over blocks of rows x cols (0: the whole dimension): [ceil(N / rows), K / cols]."""
    n, k = w.shape
    rows, cols = rows or n, cols or k
    out = np.zeros((-(-n // rows), k // cols), F32)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = max(np.abs(w[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols]).max(), 1e-6) / F32(448)
    return out


def quantize_fp8(w, rows, cols, scale_dtype, scale_shape=None):
    """F8_E4M3 codes of w [N, K] with scales per block, the scale tensor as stored, and the weights they mean."""
    n, k = w.shape
    scales = scales_for(w, rows, cols)
    tensor = Bf16(scales) if scale_dtype == "bf16" else scales
    stored = tensor.values() if scale_dtype == "bf16" else scales
    rows, cols = rows or n, cols or k
    full = np.repeat(np.repeat(stored, rows, axis=0)[:n], cols, axis=1)
    codes = to_e4m3(w / full)
    meant = (VALUES[codes] * full).astype(F32)
    if scale_shape is not None:
        tensor = (Bf16(stored.reshape(scale_shape)) if scale_dtype == "bf16" else stored.reshape(scale_shape))
    return codes, tensor, meant


def write_fp8(base, out, reference, quantization, layer_tensors, edit=None):
    """`base` with each linear layer's tensors from layer_tensors(w) -> (dict, meant)."""
    weights = ct.read_safetensors(os.path.join(base, "model.safetensors"))
    stored, meant = {}, {}
    for name, w in weights.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[-2] not in ct.LINEARS or parts[-1] != "weight":
            stored[name] = meant[name] = np.array(w)
            continue
        prefix = name[:-len(".weight")]
        tensors, meant[name] = layer_tensors(np.array(w))
        for suffix, t in tensors.items():
            stored[f"{prefix}.{suffix}"] = t
    if edit:
        edit(stored)
    write_twins(base, out, reference, quantization, stored, meant)


def ct_fp8(strategy, block=None, inputs=None):
    weights = dict(ct.args(8, strategy, type="float"), block_structure=block)
    return ct.config("float-quantized", weights, inputs)


def ct_layer(strategy, block, scale_dtype):
    def layer(w):
        rows, cols = {"tensor": (0, 0), "channel": (1, 0), "block": tuple(block or (0, 0))}[strategy]
        codes, scale, meant = quantize_fp8(w, rows, cols, scale_dtype, (1,) if strategy == "tensor" else None)
        return {"weight": F8E4M3(codes), "weight_scale": scale}, meant
    return layer


def fp8_layer(block, static):
    def layer(w):
        if block:
            codes, scale, meant = quantize_fp8(w, block[0], block[1], "f32")
            tensors = {"weight": F8E4M3(codes), "weight_scale_inv": scale}
        else:
            codes, scale, meant = quantize_fp8(w, 0, 0, "f32", ())
            tensors = {"weight": F8E4M3(codes), "weight_scale": scale}
        if static:
            tensors["input_scale"] = np.array(0.02, F32).reshape(())
        return tensors, meant
    return layer


def check_kv_cache_scales(vllm, dump, base, quantized, reference, work):
    """Per-layer FP8 KV cache scales, as llm-compressor's kv_cache_scheme writes them ([1]; a 0-d one
    too) and as older FP8 checkpoints did (one kv_scale), with channel-wise FP8 weights."""
    scheme = dict(ct_fp8("channel", inputs=ct.args(8, "token", dynamic=True, type="float")),
                  kv_cache_scheme=ct.args(8, "tensor", type="float"))
    # Scales that move most codes well away from scale 1's (keys and values
    # here are about 0.01 to 2), and saturate the largest values of layer 1.
    scales = {"model.layers.0.self_attn.k_scale": np.array([0.004], F32),
              "model.layers.0.self_attn.v_scale": np.array(0.0025, F32).reshape(()),
              "model.layers.1.self_attn.kv_scale": np.array([0.002], F32)}

    def add_scales(t):
        t.update(scales)
    write_fp8(base, quantized, reference, scheme, ct_layer("channel", None, "f32"), add_scales)
    vocab = json.load(open(os.path.join(quantized, "config.json")))["vocab_size"]
    ids = np.random.default_rng(5).integers(0, vocab, 48).tolist()
    unscaled = reference_forward.forward(reference, ids, kv_dtype="fp8")  # no scale tensors yet: 1
    # The dequantized twin gets the same scale tensors for reference_forward's cache.
    path = os.path.join(reference, "model.safetensors")
    tensors = {name: np.array(t) for name, t in read_safetensors(path).items()}
    write_safetensors(path, dict(tensors, **scales))
    want = reference_forward.forward(reference, ids, kv_dtype="fp8")
    magnitude = np.abs(want).max()
    for chunk in (48, 5, 1):
        got = ct.dump_logits(dump, quantized, ids, "auto", chunk, work, "fp8")
        error, without = np.abs(got - want).max() / magnitude, np.abs(got - unscaled).max() / magnitude
        assert error < 1e-5 and error * 100 < without, ("KV cache scales", chunk, error, without)
    print(f"ok: FP8 KV cache scales from the checkpoint: logits within {error:.1e} of the reference "
          f"({without:.1e} from scales of 1)")
    ran, _ = generate(vllm, quantized, work, "scaled", "--kv-cache-dtype", "fp8")
    assert ran.returncode == 0 and "k_scale / v_scale" not in ran.stderr, ran.stderr  # no warning of scales of 1
    refused = {
        "an 8-bit int KV cache scheme": (dict(scheme, kv_cache_scheme=ct.args(8, "tensor")),
                                         "only num_bits 8 of type float (FP8) is supported"),
        "per-head KV cache scales": (dict(scheme, kv_cache_scheme=ct.args(8, "channel", type="float")),
                                     "only strategy 'tensor' is supported, not 'channel'"),
    }
    for label, (stated, expected) in refused.items():
        restate(quantized, stated)
        result, _ = generate(vllm, quantized, work, "refused", "--kv-cache-dtype", "fp8")
        assert_refused(result, label, expected)

    def zero_scale(t):
        t.update(scales, **{"model.layers.1.self_attn.kv_scale": np.array([0.0], F32)})
    write_fp8(base, quantized, reference, scheme, ct_layer("channel", None, "f32"), zero_scale)
    result, _ = generate(vllm, quantized, work, "refused", "--kv-cache-dtype", "fp8")
    assert_refused(result, "a zero KV cache scale", "'model.layers.1.self_attn.kv_scale' is 0.000000, a KV cache "
                   "scale must be positive and finite")
    print(f"ok: {len(refused) + 1} KV cache schemes and scales we cannot honour refused with one line")


def main():
    vllm, dump, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    bases = make_bases(vllm, work)
    quantized, reference = os.path.join(work, "quantized"), os.path.join(work, "reference")
    per_tensor_dynamic = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    dynamic = ct.args(8, "token", dynamic=True, type="float")
    cases = {
        "compressed-tensors FP8 per channel, dynamic activations (llama)":
            ("llama", ct_fp8("channel", inputs=dynamic), ct_layer("channel", None, "f32")),
        "compressed-tensors FP8 per channel, BF16 scales (qwen2)":
            ("qwen2", ct_fp8("channel", inputs=dynamic), ct_layer("channel", None, "bf16")),
        "compressed-tensors FP8 per tensor, static activations (llama)":
            ("llama", ct_fp8("tensor", inputs=ct.args(8, "tensor", type="float")), ct_layer("tensor", None, "f32")),
        "compressed-tensors FP8 blocks of 32 x 32 (qwen2)":
            ("qwen2", ct_fp8("block", [32, 32], inputs=ct.args(8, "group", group_size=32, dynamic=True, type="float")),
             ct_layer("block", [32, 32], "f32")),
        "fp8 per tensor, dynamic (llama)":
            ("llama", {"quant_method": "fp8", "activation_scheme": "dynamic"}, fp8_layer(None, False)),
        "fp8 per tensor, static (qwen2)":
            ("qwen2", {"quant_method": "fp8", "activation_scheme": "static"}, fp8_layer(None, True)),
        "fp8 blocks of 32 x 16, weight_scale_inv (llama)":
            ("llama", {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                       "weight_block_size": [32, 16]}, fp8_layer([32, 16], False)),
    }
    for label, (arch, quantization, layer) in cases.items():
        write_fp8(bases[arch], quantized, reference, quantization, layer)
        worst = assert_close_generation(vllm, quantized, reference, work, label)
        print(f"ok: {label} generates what its dequantized checkpoint does (logprobs within {worst:.1e})")

    # --quantization fp8: the same bits as the fp8 checkpoint of each tensor quantized as vLLM's dynamic FP8.
    def dynamic_fp8(w):
        scale = np.abs(w).max() / F32(448)
        codes = to_e4m3(w * (F32(1) / scale))
        return {"weight": F8E4M3(codes), "weight_scale": np.array(scale, F32).reshape(())}, VALUES[codes] * scale
    for arch in ("llama", "qwen2"):
        label = f"--quantization fp8 on {arch}"
        write_fp8(bases[arch], quantized, reference, per_tensor_dynamic, dynamic_fp8)
        assert_same_generation(vllm, bases[arch], quantized, work, label, ("--quantization", "fp8"))
        print(f"ok: {label} generates exactly what an fp8 checkpoint of its tensors quantized as vLLM does")

    def nan_code(t):
        t["model.layers.0.self_attn.q_proj.weight"].bits[3, 5] = 0x7F

    def short_scales(t):
        t["model.layers.1.mlp.up_proj.weight_scale_inv"] = t["model.layers.1.mlp.up_proj.weight_scale_inv"][:1]

    per_tensor = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    blocks = dict(per_tensor, weight_block_size=[32, 16])
    refused = {
        "a NaN code": (per_tensor, fp8_layer(None, False), nan_code,
                       "'model.layers.0.self_attn.q_proj.weight' holds an FP8 NaN at row 3, column 5"),
        "e5m2": (dict(per_tensor, fmt="e5m2"), fp8_layer(None, False), None, "FP8 fmt 'e5m2' is not supported"),
        "blocks not dividing the inputs": (dict(per_tensor, weight_block_size=[32, 48]), fp8_layer([32, 16], False),
                                           None, "scale blocks of 48 columns do not divide its 64 inputs"),
        "scales of the wrong shape": (blocks, fp8_layer([32, 16], False), short_scales,
                                      "'model.layers.1.mlp.up_proj.weight_scale_inv' is F32 [1, 4], expected a float type (F32, BF16, F16) [4, 4]"),
    }
    for label, (quantization, layer, edit, expected) in refused.items():
        write_fp8(bases["llama"], quantized, reference, quantization, layer, edit)
        result, _ = generate(vllm, quantized, work, "refused")
        assert_refused(result, label, expected)
    print(f"ok: {len(refused)} FP8 checkpoints refused with one line")

    check_kv_cache_scales(vllm, dump, bases["llama"], quantized, reference, work)


if __name__ == "__main__":
    main()
