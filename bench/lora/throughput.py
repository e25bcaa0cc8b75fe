"""Decode speed with LoRA adapters against the base model alone, on
make-test-model's random BF16 weights of real models' shapes (default:
smollm-135m and llama-3.2-1b), through `generate --input`:

- batch 16: 16 requests spread over 4 adapters of rank 16 on every linear
  module (4 requests each), against the same 16 on the base model;
- batch 1: one request with one such adapter, against the base model.

Every request has a 16-token prompt and decodes --max-tokens tokens
(ignore_eos), so the run is decode; the figure is generate's generated
tokens/s.  The base runs are plain (no --enable-lora).  Pairs alternate
(base, adapters) --pairs times: medians, ranges and the median of the
pairs' ratios.  Each adapter also reads its A and B per token on top of
the base weights, in the model's dtype (BF16: half the bytes of the
float32 adapter file): their bytes are printed beside the base's.
Usage: throughput.py VLLM_CPP [--presets smollm-135m,llama-3.2-1b] [--batches 16,1]
                     [--pairs 5] [--max-tokens 64] [--models /tmp/vllm-cpp-models]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model", "lora"))
import lora_runs  # noqa: E402
from peft_adapters import LINEAR_MODULES, lora_config, lora_tensors, random_linear, write_adapter  # noqa: E402

RANK, NUM_ADAPTERS = 16, 4


def model_dir(binary, models, preset):
    path = os.path.join(models, preset)
    if not os.path.isfile(os.path.join(path, "config.json")):
        subprocess.run([binary, "make-test-model", "--arch", "llama", "--preset", preset, "--dtype", "bf16",
                        "--out", path], check=True)
    return path


def adapters(model, config):
    """NUM_ADAPTERS random adapters of rank RANK on every linear module, written once beside the model."""
    rng = np.random.default_rng(0)
    paths = []
    for i in range(NUM_ADAPTERS):
        path = os.path.join(model, f"lora-r{RANK}-{i}")
        if not os.path.isfile(os.path.join(path, "adapter_model.safetensors")):
            linear = random_linear(rng, config, LINEAR_MODULES, RANK)
            write_adapter(path, lora_config(RANK, 2 * RANK, list(LINEAR_MODULES)), lora_tensors(linear))
        paths.append(path)
    return paths


def generated_tokens_per_second(binary, model, lines, flags):
    with tempfile.TemporaryDirectory() as work:
        _, log = lora_runs.generate(binary, work, model, lines, *flags)
    return float(re.search(r"generated ([\d.]+) tokens/s", log.strip().splitlines()[-1]).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--presets", default="smollm-135m,llama-3.2-1b")
    parser.add_argument("--batches", default="16,1")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--models", default="/tmp/vllm-cpp-models")
    args = parser.parse_args()
    print("preset        batch  base tokens/s (range)  adapters tokens/s (range)  median pair ratio  "
          "adapter bytes / base bytes")
    for preset in args.presets.split(","):
        model = model_dir(args.binary, args.models, preset)
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        paths = adapters(model, config)
        names = [f"a{i}" for i in range(NUM_ADAPTERS)]
        lora_flags = ["--enable-lora", "--max-loras", str(NUM_ADAPTERS), "--max-lora-rank", str(RANK),
                      "--lora-modules", *[f"{n}={p}" for n, p in zip(names, paths)]]
        rng = np.random.default_rng(1)
        prompts = [[int(t) for t in rng.integers(3, config["vocab_size"], 16)] for _ in range(16)]
        adapter_bytes = os.path.getsize(os.path.join(paths[0], "adapter_model.safetensors")) / 2
        base_bytes = sum(os.path.getsize(os.path.join(model, f)) for f in os.listdir(model)
                         if f.endswith(".safetensors"))
        for batch in (int(b) for b in args.batches.split(",")):
            def lines(with_adapters):
                return [{"prompt_token_ids": prompts[i], "max_tokens": args.max_tokens, "temperature": 0,
                         "ignore_eos": True, **({"lora": names[i % NUM_ADAPTERS]} if with_adapters else {})}
                        for i in range(batch)]
            base, lora = [], []
            for _ in range(args.pairs):
                base.append(generated_tokens_per_second(args.binary, model, lines(False), []))
                lora.append(generated_tokens_per_second(args.binary, model, lines(True), lora_flags))
            ratio = statistics.median(b / a for a, b in zip(base, lora))
            print(f"{preset:13} {batch:5}  {statistics.median(base):8.1f} ({min(base):.1f}-{max(base):.1f})"
                  f"    {statistics.median(lora):8.1f} ({min(lora):.1f}-{max(lora):.1f})"
                  f"       {ratio:6.3f}            {adapter_bytes / base_bytes:.3f}", flush=True)


if __name__ == "__main__":
    main()
