#!/usr/bin/env python3
"""quantize_checkpoint.py, the tool that writes quantized checkpoints for
benchmarks: each METHOD's output of a tiny random llama loads, and its
quantized layers' logits stay near the base's: prompt logprobs of the same
tokens within 0.05 (measured: 4-bit groups of 32 move them by 2-3e-2, 8-bit
and FP8 by 2-6e-3, while GPTQ codes packed in the wrong nibble order move
them by 0.14).  The formats themselves are checked exactly by the other
check_*.py here.

Usage: check_quantize_checkpoint.py VLLM_CPP WORK_DIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from quant_checkpoints import generate, make_bases  # noqa: E402

METHODS = ("gptq", "gptq-asym", "gptq-act-order", "awq", "w4a16", "w8a8", "fp8", "fp8-block")


def prompt_logprobs(out):
    with open(out) as f:
        result = json.loads(f.readline())
    ids = result["prompt_token_ids"]
    return [p[str(token)] for p, token in zip(result["prompt_logprobs"][1:], ids[1:])]


def main():
    vllm, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    base = make_bases(vllm, work, ("llama",))["llama"]
    ran, out = generate(vllm, base, work, "base")
    assert ran.returncode == 0, ran.stderr
    want = prompt_logprobs(out)
    for method in METHODS:
        model = os.path.join(work, method)
        made = subprocess.run([sys.executable, os.path.join(HERE, "quantize_checkpoint.py"), base, model, method,
                               "--group-size", "32"], capture_output=True, text=True)
        assert made.returncode == 0, (method, made.stderr)
        ran, out = generate(vllm, model, work, method)
        assert ran.returncode == 0, (method, ran.stderr)
        worst = max(abs(a - b) for a, b in zip(prompt_logprobs(out), want))
        assert worst < 0.05, (method, worst)
        print(f"ok: {method}: loads, prompt logprobs within {worst:.1e} of the base's")


if __name__ == "__main__":
    main()
