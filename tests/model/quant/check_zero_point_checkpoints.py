#!/usr/bin/env python3
"""GPTQ and AWQ checkpoints run as the dequantized checkpoints they stand for.

Usage: check_zero_point_checkpoints.py VLLM_CPP WORK_DIR

With numpy only, from a tiny random llama and qwen2 (vllm-cpp make-test-model),
writes quantized checkpoints the way the tools lay them out, quantized
round-to-nearest here (the truth is what the written tensors mean, not how
good the quantization is):
  - GPTQ (AutoGPTQ / GPTQModel): each linear layer's qweight (int32, codes
    packed along the inputs, the first in the low bits), qzeros (int32, zero
    points packed along the outputs, stored minus one in checkpoint format
    "gptq", as they are in "gptq_v2"), scales (float16) and g_idx;
  - AWQ (AutoAWQ, version gemm): qweight [K, N / 8] and qzeros [G, N / 8]
    packed along the outputs in AutoAWQ's order (nibble i of word c holds
    output 8c + [0, 2, 4, 6, 1, 3, 5, 7][i]), scales [G, N] float16.
Each must generate what a plain checkpoint of its dequantized weights,
scale * (code - zero), generates: the same ids, logprobs and prompt logprobs
within float32 rounding (quant_checkpoints.assert_close_generation).  Then the settings and tensors we cannot
honour are refused with one line that names them.
"""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from safetensors_io import read_safetensors  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_checkpoints import assert_close_generation, assert_refused, generate, make_bases, restate, write_twins  # noqa: E402

F32 = np.float32
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def pack_along_first(codes, bits):
    """int32 words of `codes` [rows, cols], 32 / bits consecutive rows to a word, the first in the low bits."""
    per = 32 // bits
    rows, cols = codes.shape
    words = np.zeros((rows // per, cols), np.uint32)
    for j in range(per):
        words |= codes[j::per].astype(np.uint32) << np.uint32(bits * j)
    return words.view(np.int32)


def quantize_gptq(w, bits, group, sym, v1, g_idx=None):
    """GPTQ tensors of w [N, K] and the weights they mean; `g_idx` (act-order: each input's
    group, the groups scattered over the inputs) or groups of consecutive inputs."""
    n, k = w.shape
    group = k if group == -1 else group
    if g_idx is None:
        g_idx = (np.arange(k) // group).astype(np.int32)
    order = np.argsort(g_idx, kind="stable")  # the inputs of group 0, then of group 1, ...
    maxq = 2 ** bits - 1
    g = w[:, order].reshape(n, k // group, group).astype(np.float64)
    if sym:
        scale = (2 * np.abs(g).max(-1) / maxq).astype(np.float16)
        zero = np.full(scale.shape, (maxq + 1) // 2, np.int64)
    else:
        lo, hi = np.minimum(g.min(-1), 0), np.maximum(g.max(-1), 0)
        scale = ((hi - lo) / maxq).astype(np.float16)
        zero = np.clip(np.round(-lo / scale.astype(np.float64)), 0, maxq).astype(np.int64)
    grouped = np.clip(np.round(g / scale.astype(np.float64)[..., None]) + zero[..., None], 0, maxq).astype(np.int64)
    codes, meant = np.empty((n, k), np.int64), np.empty((n, k), F32)
    codes[:, order] = grouped.reshape(n, k)
    meant[:, order] = ((grouped - zero[..., None]).astype(F32) * scale.astype(F32)[..., None]).reshape(n, k)
    stored_zero = (zero - 1 if v1 else zero) & maxq  # [N, G]
    tensors = {
        "qweight": pack_along_first(codes.T, bits),                             # [K * bits / 32, N]
        "qzeros": np.ascontiguousarray(pack_along_first(stored_zero, bits).T),  # [G, N * bits / 32]
        "scales": np.ascontiguousarray(scale.T),                                # [G, N]
        "g_idx": g_idx.astype(np.int32),
    }
    return tensors, meant


def act_order_g_idx(k, group, seed):
    """g_idx as AutoGPTQ's desc_act leaves it: the inputs permuted (by the Hessian's diagonal
    there, at random here), grouped in that order, the groups then mapped back to the inputs."""
    perm = np.random.default_rng(seed).permutation(k)
    return (np.argsort(perm) // group).astype(np.int32)


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # the output of each nibble of a word, from the low one


def pack_awq(values):
    """int32 [rows, cols / 8] of 4-bit `values` [rows, cols], packed along the columns in AWQ's order."""
    rows, cols = values.shape
    words = np.zeros((rows, cols // 8), np.uint32)
    for i, column in enumerate(AWQ_ORDER):
        words |= values[:, column::8].astype(np.uint32) << np.uint32(4 * i)
    return words.view(np.int32)


def quantize_awq(w, group):
    """AWQ tensors of w [N, K] (4 bits, zero points) and the weights they mean."""
    n, k = w.shape
    group = k if group == -1 else group
    g = w.reshape(n, k // group, group).astype(np.float64)
    lo, hi = g.min(-1), g.max(-1)
    scale = ((hi - lo) / 15).astype(np.float16)
    zero = np.clip(np.round(-lo / scale.astype(np.float64)), 0, 15).astype(np.int64)
    codes = np.clip(np.round(g / scale.astype(np.float64)[..., None]) + zero[..., None], 0, 15).astype(np.int64)
    meant = ((codes - zero[..., None]).astype(F32) * scale.astype(F32)[..., None]).reshape(n, k)
    tensors = {"qweight": pack_awq(codes.reshape(n, k).T),  # [K, N / 8]
               "qzeros": pack_awq(zero.T),  # [G, N / 8]
               "scales": np.ascontiguousarray(scale.T)}  # [G, N]
    return tensors, meant


def quantize_layer(w, quantization):
    if quantization["quant_method"] == "awq":
        return quantize_awq(w, quantization.get("group_size", quantization.get("q_group_size")))
    v1 = quantization.get("checkpoint_format", "gptq") == "gptq"
    group = w.shape[1] if quantization["group_size"] == -1 else quantization["group_size"]
    # Act-order per input width: layers that share their input (q, k, v; gate, up) share g_idx, as in GPTQ.
    g_idx = act_order_g_idx(w.shape[1], group, w.shape[1]) if quantization["desc_act"] else None
    return quantize_gptq(w, quantization["bits"], quantization["group_size"], quantization.get("sym", True), v1, g_idx)


def quantized_checkpoint(base, out, reference, quantization, zero_biases=False, edit=None):
    """`base` (a plain F32 checkpoint) quantized in `out` as quantization_config says, and its
    dequantized twin in `reference`."""
    weights = read_safetensors(os.path.join(base, "model.safetensors"))
    stored, meant = {}, {}
    for name, w in weights.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[-2] not in LINEARS or parts[-1] != "weight":
            stored[name] = meant[name] = np.array(w)
            continue
        prefix = name[:-len(".weight")]
        tensors, meant[name] = quantize_layer(w, quantization)
        for suffix, t in tensors.items():
            stored[f"{prefix}.{suffix}"] = t
        if zero_biases and f"{prefix}.bias" not in weights:  # as old AutoGPTQ files have
            stored[f"{prefix}.bias"] = np.zeros(w.shape[0], np.float16)
    if edit:
        edit(stored)
    write_twins(base, out, reference, quantization, stored, meant)


def main():
    vllm, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    bases = make_bases(vllm, work)
    def gptq(**settings):
        return dict({"quant_method": "gptq", "desc_act": False}, **settings)

    def awq(**settings):
        return dict({"quant_method": "awq", "zero_point": True, "version": "gemm"}, **settings)

    cases = {
        "GPTQ llama 4-bit sym g32": ("llama", gptq(bits=4, group_size=32, sym=True), True),
        "GPTQ llama 4-bit asym g64": ("llama", gptq(bits=4, group_size=64, sym=False), False),
        "GPTQ llama 8-bit sym per-channel v2": ("llama", gptq(bits=8, group_size=-1, sym=True,
                                                              checkpoint_format="gptq_v2"), False),
        "GPTQ llama 2-bit asym g32": ("llama", gptq(bits=2, group_size=32, sym=False), False),
        "GPTQ qwen2 4-bit asym g32": ("qwen2", gptq(bits=4, group_size=32, sym=False), False),
        "GPTQ qwen2 8-bit asym g64": ("qwen2", gptq(bits=8, group_size=64, sym=False), False),
        "GPTQ llama 4-bit asym g32 act-order": ("llama", gptq(bits=4, group_size=32, sym=False, desc_act=True), False),
        "GPTQ qwen2 8-bit sym g16 act-order": ("qwen2", gptq(bits=8, group_size=16, sym=True, desc_act=True), False),
        "AWQ llama g32": ("llama", awq(bits=4, group_size=32), False),
        "AWQ qwen2 g64, AutoAWQ's own keys": ("qwen2", awq(w_bit=4, q_group_size=64, version="GEMM"), False),
    }
    for label, (arch, quantization, zero_biases) in cases.items():
        quantized, reference = os.path.join(work, "quantized"), os.path.join(work, "reference")
        quantized_checkpoint(bases[arch], quantized, reference, quantization, zero_biases)
        worst = assert_close_generation(vllm, quantized, reference, work, label)
        print(f"ok: {label} generates what its dequantized checkpoint does (logprobs within {worst:.1e})")

    def overfull_group(t):
        t["model.layers.0.mlp.down_proj.g_idx"][0] = 1

    def no_scales(t):
        del t["model.layers.1.self_attn.o_proj.scales"]

    g4 = gptq(bits=4, group_size=32, sym=True)
    refused = {
        "unknown method": (g4, dict(g4, quant_method="awq_marlin_unknown"), None, "quant_method 'awq_marlin_unknown'"),
        "GPTQ 3 bits": (g4, dict(g4, bits=3), None, "GPTQ bits 3 is not supported"),
        "GPTQ group not dividing": (g4, dict(g4, group_size=48), None, "does not divide"),
        "GPTQ missing scales": (g4, g4, no_scales, "lacks tensor 'model.layers.1.self_attn.o_proj.scales'"),
        "GPTQ overfull group": (g4, dict(g4, desc_act=True), overfull_group,
                                "g_idx puts input 63 in group 1, which has its 32 inputs already"),
        "AWQ 8 bits": (awq(bits=4, group_size=32), awq(bits=8, group_size=32), None, "AWQ bits 8 is not supported"),
        "AWQ GEMV": (awq(bits=4, group_size=32), awq(bits=4, group_size=32, version="gemv"), None,
                     "AWQ version 'gemv'"),
    }
    for label, (written, stated, edit, expected) in refused.items():
        quantized, reference = os.path.join(work, "quantized"), os.path.join(work, "reference")
        quantized_checkpoint(bases["llama"], quantized, reference, written, edit=edit)
        restate(quantized, stated)
        result, _ = generate(vllm, quantized, work, "refused")
        assert_refused(result, label, expected)
    print(f"ok: {len(refused)} quantized checkpoints refused with one line")

if __name__ == "__main__":
    main()
