"""LoRA adapters under tensor parallelism (mpirun, ranks on this host).  Each rank packs an adapter for its
share of every module (B's rows of a column-parallel part, A's columns of a row-parallel one, whose
delta joins the all-reduce: it is linear in the rank's inputs too); rank 0 reads the adapter and sends
its A and B to the workers when a LoRA slot takes it.  Requests of two adapters (one on every linear
module and the LM head, one on a few with rsLoRA scaling) and of the base model, mixed in one batch, give
at -tp 2 the single process's greedy tokens and logprobs within 1e-4, on a tied LM head over the
vocabulary's shares (llama), an untied one (mistral) and a KV head both ranks hold (qwen2); with one slot
(--max-loras 1) the adapters take turns in it, on every rank.  An adapter of the embedding table at -tp 2
and LoRA at -pp 2 are refused in one line.
Usage: check_lora_parallel.py VLLM_CPP SCRATCH_DIR"""
import json
import os
import sys

from parallel_runs import ParallelRuns, numpy_or_skip, skip_unless_mpirun

np = numpy_or_skip()
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "model", "lora"))
from peft_adapters import LINEAR_MODULES, lora_config, lora_tensors, random_linear, random_lora, write_adapter  # noqa

binary, scratch = sys.argv[1:3]
skip_unless_mpirun()
runs = ParallelRuns(binary, scratch)
rng = np.random.default_rng(5)
prompts = [[int(t) for t in rng.integers(3, 500, n)] for n in (1, 7, 19)]
requests = [{"prompt_token_ids": p, "max_tokens": 8, "ignore_eos": True, "prompt_logprobs": 5, "logprobs": 5,
             **({"lora": lora} if lora else {})} for p in prompts for lora in (None, "every", "some")]
largest = 0.0


def tokens(outputs, lora):
    return [o["outputs"][0]["token_ids"] for o, r in zip(outputs or [], requests) if r.get("lora") == lora]


for arch in ("llama", "mistral", "qwen2"):
    base = f"{scratch}/{arch}"
    made = runs.run(["make-test-model", "--preset", "tiny", "--arch", arch, "--seed", "3", "--out", base])
    if made.returncode != 0:
        sys.exit(f"FAIL: make-test-model {arch}: {made.stderr.strip()}")
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)
    every = random_linear(rng, config, LINEAR_MODULES, 8)
    every["lm_head"] = random_lora(rng, 8, config["hidden_size"], config["vocab_size"])
    write_adapter(f"{base}-every", lora_config(8, 16, list(LINEAR_MODULES) + ["lm_head"]), lora_tensors(every))
    some = random_linear(rng, config, ("q_proj", "v_proj", "down_proj"), 4)
    write_adapter(f"{base}-some", lora_config(4, 8, ["q_proj", "v_proj", "down_proj"], use_rslora=True),
                  lora_tensors(some))
    flags = ("--enable-lora", "--lora-modules", f"every={base}-every", f"some={base}-some", "--max-lora-rank", "8")
    single = runs.generate(base, requests, f"{arch}_single", extra=flags + ("--max-loras", "2"))
    for lora in ("every", "some"):
        if single is not None and tokens(single, lora) == tokens(single, None):
            runs.failures.append(f"{arch}: adapter {lora} leaves every greedy continuation as the base model's")
    for max_loras in ("2", "1"):
        split = runs.generate(base, requests, f"{arch}_tp2_max_loras{max_loras}", tp=2,
                              extra=flags + ("--max-loras", max_loras))
        largest = max(largest, runs.compare(f"{arch} -tp 2 --max-loras {max_loras}", single, split, 1e-4))

# Refused: the embedding table's adapters are not split by vocabulary; LoRA across pipeline stages.
base = f"{scratch}/llama"
with open(os.path.join(base, "config.json")) as f:
    config = json.load(f)
a, b = random_lora(rng, 4, config["vocab_size"], config["hidden_size"])
write_adapter(f"{base}-embedding", lora_config(4, 8, ["embed_tokens"]),
              lora_tensors({}, embedding={"model.embed_tokens": (a, b)}))
for split, adapter, want in [
        ("-tp", f"{base}-embedding", "but received [model.embed_tokens]: the base model has no such module"),
        ("-pp", f"{base}-some", "--enable-lora with --pipeline-parallel-size above 1")]:
    p = runs.run(["generate", "--model", base, "--prompt", "a", "--max-tokens", "2", split, "2", "--enable-lora",
                  "--lora-modules", f"x={adapter}"], 2)
    if p.returncode == 0 or want not in p.stderr:
        runs.failures.append(f"{split} 2 with adapter {adapter}: exit {p.returncode}, expected {want!r} in "
                             f"{p.stderr[-600:]!r}")

runs.finish(f"LoRA adapters at -tp 2 match the single process (largest logprob difference {largest:.1e} relative)")
