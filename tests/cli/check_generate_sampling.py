"""`vllm-cpp generate --input` with the sampling fields of docs/API.md, one
request per feature, all run together: logprobs and prompt_logprobs against
the golden top-5 file, n sequences, stop strings, stop token ids, beam
search, and the penalty/filter fields; output in vLLM's RequestOutput shape.
Usage: check_generate_sampling.py VLLM_CPP LOGPROBS_GOLDEN_JSON SCRATCH_DIR"""
import json
import subprocess
import sys

binary, golden_path, scratch = sys.argv[1:4]
golden = next(c for c in json.load(open(golden_path))["cases"] if c["name"] == "once_upon")
prompt = golden["prompt_token_ids"]  # "Once upon a time", with BOS
requests = [
    {"prompt_token_ids": prompt, "temperature": 0, "ignore_eos": True, "max_tokens": golden["max_new_tokens"],
     "logprobs": 5, "prompt_logprobs": 5},
    {"prompt": "Once upon a time", "n": 3, "temperature": 0.8, "seed": 5, "max_tokens": 16, "ignore_eos": True},
    {"prompt": "Once upon a time", "temperature": 0, "max_tokens": 40, "stop": ["le gi"]},
    {"prompt": "Once upon a time", "temperature": 0, "max_tokens": 40, "stop_token_ids": [376]},
    {"prompt": "Once upon a time", "use_beam_search": True, "beam_width": 4, "temperature": 0, "max_tokens": 8},
    {"prompt": "Once upon a time", "temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "seed": 1,
     "presence_penalty": 0.5, "frequency_penalty": 0.5, "repetition_penalty": 1.2, "logit_bias": {"2": -100},
     "min_tokens": 4, "max_tokens": 12, "skip_special_tokens": False, "spaces_between_special_tokens": True,
     "best_of": 1, "include_stop_str_in_output": False},
    # BOS forced by logit_bias, shown only when special tokens are not skipped.
    {"prompt_token_ids": [1, 403], "temperature": 0, "max_tokens": 2, "logit_bias": {"1": 100},
     "skip_special_tokens": False},
    {"prompt_token_ids": [1, 403], "temperature": 0, "max_tokens": 2, "logit_bias": {"1": 100}},
]
with open(f"{scratch}/sampling.jsonl", "w") as f:
    for r in requests:
        f.write(json.dumps(r) + "\n")
run = subprocess.run([binary, "generate", "--input", f"{scratch}/sampling.jsonl"], capture_output=True, text=True)
if run.returncode != 0:
    sys.exit(f"FAIL: generate exited {run.returncode}: {run.stderr}")
out = [json.loads(line) for line in run.stdout.splitlines()]
failures = []
def check(ok, what):
    if not ok:
        failures.append(what)

check([o["index"] for o in out] == list(range(len(requests))), "one output line per request, in order")

# Logprobs: the chosen token and the top 5 at each step, and the prompt's.
o = out[0]
check(list(o) == ["index", "prompt_token_ids", "outputs", "prompt_logprobs"], f"keys {list(o)}")
(seq,) = o["outputs"]
check(seq["token_ids"] == golden["output_token_ids"], "greedy ids")
for step, (ours, pos) in enumerate(zip(seq["logprobs"], golden["positions"])):
    expected = {str(t["token_id"]): t["logprob"] for t in pos["top5"]}
    check(set(ours) == set(expected), f"step {step}: top-5 ids {sorted(ours)} vs {sorted(expected)}")
    check(all(abs(ours[k] - v) < 1e-4 for k, v in expected.items() if k in ours), f"step {step}: logprobs")
check(abs(seq["cumulative_logprob"] - sum(p["logprob"] for p in golden["positions"])) < 1e-3, "cumulative_logprob")
check(o["prompt_logprobs"][0] is None and len(o["prompt_logprobs"]) == len(prompt), "prompt_logprobs shape")
for i in range(1, len(prompt)):
    lp = o["prompt_logprobs"][i]
    check(abs(lp[str(prompt[i])] - golden["prompt_logprobs"][i]) < 1e-4 and len(lp) in (5, 6), f"prompt logprob {i}")

# n = 3: three sequences, indexed, different.
seqs = out[1]["outputs"]
check([s["index"] for s in seqs] == [0, 1, 2], "n=3 indices")
check(len({tuple(s["token_ids"]) for s in seqs}) == 3 and all(len(s["token_ids"]) == 16 for s in seqs), "n=3 sequences")

# A stop string across three tokens; a stop token id (its text is not output, as vLLM).
s = out[2]["outputs"][0]
check((s["text"], s["finish_reason"], s["stop_reason"]) == (", there was a litt", "stop", "le gi"), f"stop string {s}")
s = out[3]["outputs"][0]
check((s["text"], s["finish_reason"], s["stop_reason"]) == (", there was a", "stop", 376), f"stop token {s}")

# Beam search: four distinct beams, best score (cumulative logprob / length with the prompt) first.
beams = out[4]["outputs"]
scores = [b["cumulative_logprob"] / (len(prompt) + len(b["token_ids"])) for b in beams]
check(len(beams) == 4 and len({tuple(b["token_ids"]) for b in beams}) == 4, "4 distinct beams")
check(scores == sorted(scores, reverse=True), f"beams ordered by score {scores}")

# Filters and penalties: accepted, 4..12 tokens, never EOS (biased away).
s = out[5]["outputs"][0]
check(4 <= len(s["token_ids"]) <= 12 and 2 not in s["token_ids"], f"penalised request {s}")

# Special tokens in the text only when asked for.
check(out[6]["outputs"][0]["text"] == "<s><s>" and out[7]["outputs"][0]["text"] == "", "skip_special_tokens")
check(out[6]["outputs"][0]["token_ids"] == [1, 1], "logit_bias forces BOS")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
