"""Quantized weights under tensor parallelism (mpirun, ranks on this host).  A rank cuts its share out of
a quantized matrix's group form (codes, scales, zero points: kernels/group_quantized.h) as it does out of
a float one, so at -tp 2 the checkpoints the quantization tools write (GPTQ symmetric, asymmetric and
act-order, AWQ, compressed-tensors W4A16, FP8 per tensor and in blocks), `--quantization fp8` at load,
and a GGUF file mixing K-quants and IQ4s give the single process's greedy tokens and logprobs within 1e-4
(the row-parallel sums' order).  W8A8 (compressed-tensors, `--quantization int8`) within 1e-2: each rank
quantizes its share of a row-parallel layer's inputs with its own scale, as vLLM's ranks do; measured
~1e-3.  A split that would cut a quantization group (a K-quant super-block of 256 inputs at -tp 4 of
512), or a row-parallel share of GPTQ act-order inputs (scattered over the groups), is refused in one
line before the model runs.
Usage: check_quantized_parallel.py VLLM_CPP STORIES_DIR SCRATCH_DIR"""
import json
import os
import random
import re
import subprocess
import sys

from parallel_runs import ParallelRuns, numpy_or_skip, skip_unless_mpirun

np = numpy_or_skip()
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "model", "gguf"))
import check_gguf_model as gguf_model  # noqa: E402  (the GGUF converter and its K-quant llama)

binary, stories, scratch = sys.argv[1:4]
skip_unless_mpirun()
if not os.path.isfile(os.path.join(stories, "tokenizer.json")):
    print(f"SKIP: {stories} has no tokenizer.json")
    sys.exit(77)
runs = ParallelRuns(binary, scratch)
rng = random.Random(11)
requests = [{"prompt_token_ids": [rng.randrange(3, 512) for _ in range(n)], "max_tokens": 8, "ignore_eos": True,
             "prompt_logprobs": 5, "logprobs": 5} for n in (1, 6, 23)]
largest = {}


def compare_split(label, model, tolerance, extra=()):
    name = re.sub(r"\W+", "_", label).strip("_")
    single = runs.generate(model, requests, f"{name}_single", extra=extra)
    split = runs.generate(model, requests, f"{name}_tp2", tp=2, extra=extra)
    largest[label] = runs.compare(f"{label} -tp 2", single, split, tolerance)


# Hugging Face formats, written by the numpy packers from a tiny llama (inputs of 64 and 128: groups of 32).
base = f"{scratch}/llama"
made = runs.run(["make-test-model", "--preset", "tiny", "--arch", "llama", "--seed", "3", "--out", base])
if made.returncode != 0:
    sys.exit(f"FAIL: make-test-model: {made.stderr.strip()}")
tool = os.path.join(TESTS, "model", "quant", "quantize_checkpoint.py")
for method in ("gptq", "gptq-asym", "gptq-act-order", "awq", "w4a16", "fp8", "fp8-block", "w8a8"):
    model = f"{scratch}/{method}"
    p = subprocess.run([sys.executable, tool, base, model, method, "--group-size", "32"], capture_output=True,
                       text=True)
    if p.returncode != 0:
        runs.failures.append(f"quantize_checkpoint.py {method}: {p.stderr.strip()}")
        continue
    if method == "gptq-act-order":  # column-parallel q/k/v, gate/up would split; o_proj's inputs cannot
        p = runs.run(["generate", "--model", model, "--prompt", "a", "--max-tokens", "2", "-tp", "2"], 2)
        want = "is scattered over its act-order (desc_act) groups; such a checkpoint runs with --tensor-parallel-size 1"
        if p.returncode == 0 or want not in p.stderr:
            runs.failures.append(f"{method} -tp 2: exit {p.returncode}, expected {want!r} in {p.stderr[-600:]!r}")
        continue
    compare_split(method, model, 1e-2 if method == "w8a8" else 1e-4)
for method in ("fp8", "int8"):
    compare_split(f"--quantization {method}", base, 1e-2 if method == "int8" else 1e-4,
                  extra=("--quantization", method))

# GGUF: a llama of 512 features (each rank's share of o_proj's inputs one super-block) in Q4_K_M's mix
# of K-quants and IQ4s, the embedding and tied LM head Q6_K: split by rows and by whole super-blocks.
with open(os.path.join(stories, "config.json")) as f:
    stories_config = json.load(f)
mixed = gguf_model.MIXED_K_TYPES
config, weights, _ = gguf_model.k_quant_model(stories_config, np.random.default_rng(5),
                                              lambda i, name: mixed[name[len("model."):-len(".weight")]],
                                              hidden_size=512, intermediate_size=1024)
data, _ = gguf_model.convert(config, weights, lambda i, name, w: mixed.get(name[len("model."):-len(".weight")],
                                                                           "F32"), 15)  # MOSTLY_Q4_K_M
gguf = f"{scratch}/k_quants.gguf"
with open(gguf, "wb") as f:
    f.write(data)
compare_split("GGUF K-quants", gguf, 1e-4, extra=("--tokenizer", stories))
p = runs.run(["generate", "--model", gguf, "--tokenizer", stories, "--prompt", "a", "--max-tokens", "2", "-tp", "4"],
             4)
want = "), cuts its quantization groups of 256 inputs; use a --tensor-parallel-size that leaves each rank whole groups"
if p.returncode == 0 or want not in p.stderr:
    runs.failures.append(f"GGUF -tp 4: exit {p.returncode}, expected {want!r} in {p.stderr[-600:]!r}")

runs.finish("quantized weights split across 2 ranks match the single process; largest logprob differences: " +
            ", ".join(f"{label} {worst:.1e}" for label, worst in largest.items()))
