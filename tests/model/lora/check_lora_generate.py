"""Multi-LoRA in the engine, through `vllm-cpp generate --input` (a line's
"lora" field names a --lora-modules adapter): a tiny random Llama and four
PEFT adapters written by peft_adapters.py (r 4 on every linear module;
rsLoRA r 8 on attention; r 16 on the MLP, the embedding and the LM head;
mixed ranks), and

- greedy continuations under each adapter equal those of its merged
  checkpoint (W + scaling B A, numpy) run as a plain model, token for
  token, or up to a position where the merged model's two best tokens tie
  within 1e-4 (a tie that rounding may break either way);
- isolation: 30 requests (6 prompts sharing a prefix, each over the base
  model and the four adapters) in one run with --max-loras 2 and
  --max-cpu-loras 2 (slots and loaded adapters change hands, adapters are
  read again from disk), and a 64-request random mix with a KV pool small
  enough to preempt, give every request exactly the output its adapter
  gives in a run of its own; the prefix cache is on, so a block reused
  across adapters would show;
- refusals: a line naming an adapter that is not served, --lora-modules
  without --enable-lora, an adapter above --max-lora-rank (one line each).

Usage: check_lora_generate.py VLLM_CPP WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_adapters import (ATTENTION_MODULES, LINEAR_MODULES, lora_config, lora_tensors, merged_checkpoint,  # noqa
                           random_linear, random_lora, write_adapter)
import lora_runs  # noqa: E402
from lora_runs import equal_or_tie, tokens  # noqa: E402

VLLM, WORK = sys.argv[1:3]
BASE = os.path.join(WORK, "llama")
MAX_TOKENS = 24


def make_adapters(rng, config):
    """{name: (dir, scaling, linear, embedding)}: four adapters unlike each other."""
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    at = lambda name: os.path.join(WORK, name)  # noqa: E731
    adapters = {}
    linear = random_linear(rng, config, LINEAR_MODULES, 4)
    write_adapter(at("every_linear"), lora_config(4, 8, list(LINEAR_MODULES)), lora_tensors(linear))
    adapters["every_linear"] = (at("every_linear"), 8 / 4, linear, None)
    linear = random_linear(rng, config, ATTENTION_MODULES, 8)
    write_adapter(at("attention_rslora"), lora_config(8, 16, r".*\.(q|k|v|o)_proj", use_rslora=True),
                  lora_tensors(linear))
    adapters["attention_rslora"] = (at("attention_rslora"), 16 / np.sqrt(8), linear, None)
    linear = {**random_linear(rng, config, ("gate_proj", "up_proj", "down_proj"), 16),
              "lm_head": random_lora(rng, 16, hidden, vocab)}
    embedding = {"model.embed_tokens": (rng.standard_normal((16, vocab)).astype(np.float32),
                                        rng.standard_normal((hidden, 16)).astype(np.float32) * 0.1)}
    write_adapter(at("mlp_embed_head"), lora_config(16, 16, ["gate_proj", "up_proj", "down_proj", "embed_tokens",
                                                             "lm_head"]),
                  lora_tensors(linear, embedding, {"model.embed_tokens": np.zeros((vocab, hidden), np.float32)}))
    adapters["mlp_embed_head"] = (at("mlp_embed_head"), 1.0, linear, embedding)
    ranks = {"q_proj": 4, "down_proj": 12}
    linear = random_linear(rng, config, LINEAR_MODULES, 8, ranks.get)
    write_adapter(at("mixed_ranks"), lora_config(8, 12, list(LINEAR_MODULES), rank_pattern=ranks), lora_tensors(linear))
    adapters["mixed_ranks"] = (at("mixed_ranks"), 12 / 8, linear, None)
    return adapters


def generate(model, requests, *flags, expect_ok=True):
    return lora_runs.generate(VLLM, WORK, model, requests, *flags, expect_ok=expect_ok)


def request(prompt, lora=None, logprobs=None, max_tokens=MAX_TOKENS):
    r = {"prompt_token_ids": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
    if lora:
        r["lora"] = lora
    if logprobs:
        r["logprobs"] = logprobs
    return r


def lora_flags(adapters, *extra, max_rank=16):
    return ["--tokenizer", BASE, "--enable-lora", "--max-lora-rank", str(max_rank),
            "--lora-modules", *[f"{name}={d}" for name, (d, *_) in adapters.items()], *extra]


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    made = subprocess.run([VLLM, "make-test-model", "--arch", "llama", "--preset", "tiny", "--out", BASE],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    rng = np.random.default_rng(19)
    with open(os.path.join(BASE, "config.json")) as f:
        config = json.load(f)
    adapters = make_adapters(rng, config)
    shared = [int(t) for t in rng.integers(3, config["vocab_size"], 20)]
    prompts = [shared + [int(t) for t in rng.integers(3, config["vocab_size"], n)] for n in (1, 5, 13, 17, 30, 45)]

    # Each adapter alone, and its merged checkpoint as a plain model.
    solo = {}
    for name, (path, scaling, linear, embedding) in [(None, (None, 0, None, None)), *adapters.items()]:
        if name is None:
            solo[None], _ = generate(BASE, [request(p) for p in prompts])
            continue
        merged_dir = os.path.join(WORK, "merged_" + name)
        merged_checkpoint(BASE, scaling, linear, embedding, merged_dir)
        merged, _ = generate(merged_dir, [request(p, logprobs=2) for p in prompts], "--tokenizer", BASE)
        solo[name], _ = generate(BASE, [request(p, name) for p in prompts], *lora_flags({name: adapters[name]}))
        for i, (ours, want) in enumerate(zip(solo[name], merged)):
            equal_or_tie(tokens(ours), want, f"{name} prompt {i}")
        moved = sum(tokens(a) != tokens(b) for a, b in zip(solo[name], solo[None]))
        assert moved >= len(prompts) // 2, f"{name}: only {moved} continuations differ from the base model's: no test"
        print(f"ok   {name}: greedy continuations of {len(prompts)} prompts = its merged checkpoint's "
              f"({moved} differ from the base model's)")

    # Everything at once, slots and loaded adapters changing hands.
    names = [None, *adapters]
    mix = [(p, n) for p in range(len(prompts)) for n in names]
    rng.shuffle(mix)
    outputs, log = generate(BASE, [request(prompts[p], n) for p, n in mix],
                            *lora_flags(adapters, "--max-loras", "2", "--max-cpu-loras", "2"))
    for (p, n), out in zip(mix, outputs):
        assert tokens(out) == tokens(solo[n][p]), f"mixed batch: prompt {p} under {n} differs from its own run"
    print(f"ok   {len(mix)} requests over the base model and {len(adapters)} adapters (--max-loras 2, "
          "--max-cpu-loras 2) each equal their own run")

    # A random mix of 64 with preemption.
    picks = [(int(rng.integers(len(prompts))), names[int(rng.integers(len(names)))]) for _ in range(64)]
    outputs, log = generate(BASE, [request(prompts[p], n) for p, n in picks],
                            *lora_flags(adapters, "--max-loras", "3", "--kv-cache-memory-bytes", "98304",
                                        "--block-size", "16"))
    preemptions = int(log.rsplit("preemptions: ", 1)[1].split()[0].rstrip(","))
    assert preemptions > 0, f"the small pool preempted nothing: {log}"
    for (p, n), out in zip(picks, outputs):
        assert tokens(out) == tokens(solo[n][p]), f"random mix: prompt {p} under {n} differs from its own run"
    print(f"ok   64 random requests with {preemptions} preemptions each equal their own run")

    # Refusals, one line each.
    def refused(run, expected, label):
        lines = run.stderr.strip().splitlines()
        assert run.returncode != 0 and lines and expected in lines[-1], f"{label}: {run.returncode} {lines}"
        print(f"ok   refused {label}: {lines[-1]}")
    refused(generate(BASE, [request(prompts[0], "nobody")], *lora_flags(adapters), expect_ok=False),
            "The model `nobody` does not exist.", "an adapter not served")
    refused(generate(BASE, [request(prompts[0])], "--lora-modules", f"x={adapters['every_linear'][0]}",
                     expect_ok=False), "--lora-modules needs --enable-lora", "--lora-modules without --enable-lora")
    refused(generate(BASE, [request(prompts[0])], *lora_flags(adapters, max_rank=8), expect_ok=False),
            "LoRA rank 16 is greater than max_lora_rank 8.", "rank above --max-lora-rank")
    print("multi-LoRA generate checks passed")


if __name__ == "__main__":
    main()
