"""What the quantized-checkpoint tests share: tiny random base checkpoints,
generate runs, and the check that a checkpoint is refused with one line."""
import json
import os
import subprocess

REQUESTS = [{"prompt_token_ids": [1, 5, 9, 14, 3, 27], "max_tokens": 16, "temperature": 0, "logprobs": 3,
             "prompt_logprobs": 3, "ignore_eos": True}]


def make_bases(vllm, work, archs=("llama", "qwen2")):
    """F32 tiny checkpoints by vllm-cpp make-test-model, by architecture (qwen2: biases on q, k and v)."""
    bases = {}
    for arch in archs:
        bases[arch] = os.path.join(work, arch)
        made = subprocess.run([vllm, "make-test-model", "--arch", arch, "--preset", "tiny", "--out", bases[arch]],
                              capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
    return bases


def generate(vllm, model, work, name, *flags):
    """`vllm-cpp generate` of REQUESTS on `model`: the process's result and its output file."""
    requests = os.path.join(work, "requests.jsonl")
    with open(requests, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in REQUESTS))
    out = os.path.join(work, name + ".out.jsonl")
    result = subprocess.run([vllm, "generate", "--model", model, "--input", requests, "--output", out,
                             "--threads", "2", *flags], capture_output=True, text=True)
    return result, out


def restate(model, quantization_config):
    """config.json of `model` with its quantization_config replaced."""
    path = os.path.join(model, "config.json")
    with open(path) as f:
        c = json.load(f)
    c["quantization_config"] = quantization_config
    with open(path, "w") as f:
        json.dump(c, f)


def assert_refused(result, label, expected):
    """A run that failed with one line on stderr, naming `expected`."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and expected in lines[0], (label, result.stderr)
