#!/usr/bin/env python3
"""Writes a quantized copy of a Hugging Face checkpoint in one of the formats
the quantization tools write, with the numpy packers the format tests use
(check_zero_point_checkpoints, check_compressed_tensors,
check_fp8_checkpoints): for benchmarks and for trying a format by hand.
Every linear layer of the decoder (q/k/v/o, gate/up/down) is quantized
round-to-nearest; the embeddings, norms and LM head are copied as stored.

Usage: quantize_checkpoint.py BASE_DIR OUT_DIR METHOD [--group-size G]
METHOD:
  gptq       GPTQ 4-bit, symmetric, groups of G (default 128), format v1
  gptq-asym  the same with zero points
  gptq-act-order  the same, desc_act: a permuted g_idx (inputs in AutoGPTQ's act order)
  awq        AWQ GEMM 4-bit with zero points, groups of G
  w4a16      compressed-tensors pack-quantized 4-bit, symmetric, groups of G
  w8a8       compressed-tensors int8 per channel, dynamic per-token int8 activations
  fp8        quant_method fp8, one scale a tensor, dynamic activations
  fp8-block  quant_method fp8, blocks of G x G (weight_scale_inv)
BASE_DIR holds config.json and one model.safetensors (F32, BF16 or F16).
"""
import argparse
import json
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_compressed_tensors as ct  # noqa: E402  (puts tests/model and tests/reference on the path)
import check_fp8_checkpoints as fp8  # noqa: E402
import check_zero_point_checkpoints as zp  # noqa: E402
from safetensors_io import Bf16, read_safetensors, write_safetensors  # noqa: E402

LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def methods(group):
    """quantization_config and a layer function w [N, K] float32 -> tensors, by METHOD."""
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": group, "desc_act": False, "sym": True,
            "checkpoint_format": "gptq"}
    awq = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}
    w4a16 = ct.config("pack-quantized", ct.args(4, "group", group_size=group))
    w8a8 = ct.config("int-quantized", ct.args(8, "channel"), ct.args(8, "token", dynamic=True))
    per_tensor = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    blocks = dict(per_tensor, fmt="e4m3", weight_block_size=[group, group])
    return {
        "gptq": (gptq, lambda w, name: zp.quantize_layer(w, gptq)[0]),
        "gptq-asym": (dict(gptq, sym=False), lambda w, name: zp.quantize_layer(w, dict(gptq, sym=False))[0]),
        "gptq-act-order": (dict(gptq, sym=False, desc_act=True),
                           lambda w, name: zp.quantize_layer(w, dict(gptq, sym=False, desc_act=True))[0]),
        "awq": (awq, lambda w, name: zp.quantize_layer(w, awq)[0]),
        "w4a16": (w4a16, lambda w, name: ct.quantize_layer(w, name, w4a16, "f32")[0]),
        "w8a8": (w8a8, lambda w, name: ct.quantize_layer(w, name, w8a8, "f32")[0]),
        "fp8": (per_tensor, lambda w, name: fp8.fp8_layer(None, False)(w)[0]),
        "fp8-block": (blocks, lambda w, name: fp8.fp8_layer([group, group], False)(w)[0]),
    }


def as_float32(t):
    """A tensor as read_safetensors gives it (BF16 as its uint16 bits) in float32."""
    if t.dtype == np.uint16:
        return (t.astype(np.uint32) << 16).view(np.float32)
    return t.astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("out")
    ap.add_argument("method", choices=sorted(methods(128)))
    ap.add_argument("--group-size", type=int, default=128)
    args = ap.parse_args()
    quantization, layer = methods(args.group_size)[args.method]
    weights = read_safetensors(os.path.join(args.base, "model.safetensors"))
    stored, quantized = {}, 0
    for name, t in weights.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[-2] not in LINEARS or parts[-1] != "weight":
            stored[name] = Bf16(as_float32(t)) if t.dtype == np.uint16 else np.array(t)
            continue
        k = t.shape[1]
        grouped = args.method in ("gptq", "gptq-asym", "gptq-act-order", "awq", "w4a16", "fp8-block")
        if grouped and k % args.group_size != 0:
            sys.exit(f"error: --group-size {args.group_size} does not divide {name}'s {k} inputs")
        for suffix, q in layer(as_float32(t), parts[-2]).items():
            stored[name[:-len("weight")] + suffix] = q
        quantized += 1
    shutil.rmtree(args.out, ignore_errors=True)
    shutil.copytree(args.base, args.out, ignore=shutil.ignore_patterns("*.safetensors", "*.safetensors.index.json"))
    with open(os.path.join(args.base, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(dict(config, quantization_config=quantization), f, indent=2)
    write_safetensors(os.path.join(args.out, "model.safetensors"), stored)
    print(f"{args.out}: {args.method}, {quantized} linear layers quantized")


if __name__ == "__main__":
    main()
