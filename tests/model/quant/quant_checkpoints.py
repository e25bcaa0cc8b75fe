"""What the quantized-checkpoint tests share: tiny random base checkpoints,
a quantized checkpoint written beside its dequantized twin, generate runs,
the checks that both generate the same (exactly, or within float32
rounding), and that a checkpoint is refused with one line."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from safetensors_io import write_safetensors  # noqa: E402

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


def write_twins(base, out, reference, quantization, stored, meant):
    """`base` copied to `out` with the quantized tensors `stored` and its quantization_config, and to
    `reference` with the dequantized tensors `meant` and no quantization_config."""
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)
    for d, tensors, quantized in ((out, stored, True), (reference, meant, False)):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        c = dict(config, quantization_config=quantization) if quantized else config
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        write_safetensors(os.path.join(d, "model.safetensors"), tensors)


def generations(vllm, model, twin, work, label, model_flags=()):
    """The JSON texts `generate` writes for `model` (with model_flags) and for `twin`, both runs required to succeed."""
    got, got_out = generate(vllm, model, work, "model", *model_flags)
    assert got.returncode == 0, (label, got.stderr)
    want, want_out = generate(vllm, twin, work, "twin")
    assert want.returncode == 0, (label, want.stderr)
    with open(got_out) as a, open(want_out) as b:
        return a.read(), b.read()


def assert_same_generation(vllm, model, twin, work, label, model_flags=()):
    """`model` (with model_flags) generates exactly, JSON bit for bit, what `twin` does."""
    got, want = generations(vllm, model, twin, work, label, model_flags)
    assert got == want, f"{label}: generated\n{got}\nwhile its twin generated\n{want}"


# How far a weight-only checkpoint's logprobs may be from its dequantized
# twin's: the kernels take each group's scale out of its sum (gemm.h's
# quantized arithmetic), and act-order sums in the order of the groups, so
# the two differ by float32 rounding (about 1e-6 here).
LOGPROB_TOLERANCE = 1e-4


def assert_close_generation(vllm, model, twin, work, label, model_flags=()):
    """`model` generates the same tokens and top logprob ids as `twin`, every logprob and prompt logprob within
    LOGPROB_TOLERANCE; returns the largest difference."""
    got_text, want_text = generations(vllm, model, twin, work, label, model_flags)
    got, want = json.loads(got_text), json.loads(want_text)
    out_got, out_want = got["outputs"][0], want["outputs"][0]
    assert out_got["token_ids"] == out_want["token_ids"], (label, out_got, out_want)
    pairs = list(zip(out_got["logprobs"], out_want["logprobs"])) + list(zip(got["prompt_logprobs"][1:],
                                                                            want["prompt_logprobs"][1:]))
    worst = 0.0
    for a, b in pairs:
        assert a.keys() == b.keys(), (label, a, b)
        worst = max([worst] + [abs(a[t] - b[t]) for t in a])
    assert worst < LOGPROB_TOLERANCE, f"{label}: logprobs differ by {worst}"
    return worst
