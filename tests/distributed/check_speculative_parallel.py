"""EAGLE heads under tensor parallelism (mpirun, ranks on this host).  The head runs on rank 0 alone, over
the whole vocabulary's embedding and LM head, which rank 0 then holds beside its share
(LoadOptions::whole_vocabulary_on_rank0): at -tp 2 the greedy tokens stay the single process's, with an
EAGLE and an EAGLE-3 head on a tied (llama) and an untied (mistral) LM head.  Random heads' drafts are all
rejected, so that shows only that the verification is lossless; a head that copies its one-layer target
(fc passes the embedding, the target's norms near identity) has most of its drafts accepted, and at
-tp 2 exactly as many at each position as in one process: the same drafts.
Usage: check_speculative_parallel.py VLLM_CPP SCRATCH_DIR"""
import json
import os
import re
import sys

from parallel_runs import ParallelRuns, numpy_or_skip, skip_unless_mpirun

np = numpy_or_skip()
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "model"))
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

binary, scratch = sys.argv[1:3]
skip_unless_mpirun()
runs = ParallelRuns(binary, scratch)
rng = np.random.default_rng(9)
requests = [{"prompt_token_ids": [int(t) for t in rng.integers(3, 500, n)], "max_tokens": 12, "ignore_eos": True}
            for n in (1, 6, 20)]


def make(args, label):
    p = runs.run(["make-test-model", *args])
    if p.returncode != 0:
        sys.exit(f"FAIL: make-test-model {label}: {p.stderr.strip()}")


def tokens(outputs):
    return [o["outputs"][0]["token_ids"] for o in outputs or []]


def accepted_per_position(summary):
    found = re.search(r"accepted per position \[([0-9, ]*)\]", summary)
    return [int(n) for n in found.group(1).split(",")] if found else None


def speculate(model, head, method, label):
    """The single process's and -tp 2's outputs with `head` drafting, and their acceptance counts."""
    spec = ("--speculative-config", json.dumps({"method": method, "model": head, "num_speculative_tokens": 3}))
    single = runs.generate(model, requests, f"{label}_single", extra=spec)
    single_accepted = accepted_per_position(runs.last_summary)
    split = runs.generate(model, requests, f"{label}_tp2", tp=2, extra=spec)
    return single, split, single_accepted, accepted_per_position(runs.last_summary)


# Random heads: lossless verification.
for arch in ("llama", "mistral"):
    model = f"{scratch}/{arch}"
    make(["--preset", "tiny", "--arch", arch, "--seed", "3", "--out", model], arch)
    plain = runs.generate(model, requests, f"{arch}_plain")
    for method in ("eagle", "eagle3"):
        head = f"{model}_{method}"
        make([f"--{method}-head-for", model, "--out", head], f"{method} head")
        single, split, _, _ = speculate(model, head, method, f"{arch}_{method}")
        if tokens(single) != tokens(plain) or tokens(split) != tokens(plain):
            runs.failures.append(f"{arch} with a random {method} head: greedy tokens differ from no speculation")

# A head that copies a one-layer llama: its fc passes the next token's embedding to a copy of the target's
# layer (the head's first layer has no input norm and no final norm, so the target's are made near
# identity: unit weights, embedding rows of unit RMS).
model = f"{scratch}/copied"
make(["--preset", "tiny", "--arch", "llama", "--num-layers", "1", "--seed", "4", "--out", model], "one layer")
weights = read_safetensors(f"{model}/model.safetensors")
embedding = weights["model.embed_tokens.weight"]
weights["model.embed_tokens.weight"] = (embedding / np.sqrt((embedding ** 2).mean(1, keepdims=True))).astype(np.float32)
for norm in ("model.norm.weight", "model.layers.0.input_layernorm.weight"):
    weights[norm] = np.ones_like(weights[norm])
write_safetensors(f"{model}/model.safetensors", weights)
head = f"{model}_eagle"
make(["--eagle-head-for", model, "--out", head], "eagle head")
hidden = weights["model.norm.weight"].shape[0]
copy = {"fc.weight": np.concatenate([np.eye(hidden), np.zeros((hidden, hidden))], 1).astype(np.float32)}
copy.update({k[len("model."):]: v for k, v in weights.items()
             if k.startswith("model.layers.0.") and "input_layernorm" not in k})
write_safetensors(f"{head}/model.safetensors", copy)
with open(f"{head}/config.json") as f:
    config = json.load(f)
with open(f"{head}/config.json", "w") as f:
    json.dump(dict(config, attention_bias=True), f)
plain = runs.generate(model, requests, "copied_plain")
single, split, single_accepted, split_accepted = speculate(model, head, "eagle", "copied")
if tokens(single) != tokens(plain) or tokens(split) != tokens(plain):
    runs.failures.append("a copying EAGLE head: greedy tokens differ from no speculation")
if not single_accepted or min(single_accepted) == 0:
    runs.failures.append(f"a copying EAGLE head: accepted per position {single_accepted} in one process")
if split_accepted != single_accepted:
    runs.failures.append(f"a copying EAGLE head: accepted per position {split_accepted} at -tp 2, "
                         f"{single_accepted} in one process")

runs.finish(f"EAGLE and EAGLE-3 heads at -tp 2 are lossless; a copying head's drafts accepted per position "
            f"{single_accepted} in one process and at -tp 2")
