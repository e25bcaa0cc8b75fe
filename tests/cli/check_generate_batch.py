"""`vllm-cpp generate --input/--output` on the golden cases: every case in one
file, run together under a small token budget, must give the golden text and
ids, in input order, in vLLM's RequestOutput shape, with a summary line.
Usage: check_generate_batch.py VLLM_CPP GOLDEN_JSON SCRATCH_DIR"""
import json
import subprocess
import sys

binary, golden_path, scratch = sys.argv[1:4]
cases = json.load(open(golden_path))["cases"]
failures = []

with open(f"{scratch}/in.jsonl", "w") as f:
    for i, c in enumerate(cases):
        # Alternate text prompts and token-id prompts; leave temperature to the command-line default.
        req = {"max_tokens": c["max_new_tokens"], "ignore_eos": True}
        if i % 2 == 0:
            req["prompt"] = c["prompt"]
        else:
            req["prompt_token_ids"] = c["prompt_token_ids"]
        f.write(json.dumps(req) + "\n")
    f.write("\n")  # blank lines are skipped

run = subprocess.run([binary, "generate", "--input", f"{scratch}/in.jsonl", "--output", f"{scratch}/out.jsonl",
                      "--temperature", "0", "--max-num-batched-tokens", "16", "--kv-cache-memory-bytes", "1MiB"],
                     capture_output=True, text=True)
if run.returncode != 0:
    sys.exit(f"FAIL: generate --input exited {run.returncode}: {run.stderr}")
lines = open(f"{scratch}/out.jsonl").read().splitlines()
if len(lines) != len(cases):
    failures.append(f"{len(lines)} output lines for {len(cases)} requests")
for i, (line, c) in enumerate(zip(lines, cases)):
    out = json.loads(line)
    if list(out) != ["index", "prompt_token_ids", "outputs"] or out["index"] != i:
        failures.append(f"line {i}: keys {list(out)} index {out.get('index')}")
        continue
    if out["prompt_token_ids"] != c["prompt_token_ids"]:
        failures.append(f"{c['name']}: prompt_token_ids differ")
    (o,) = out["outputs"]
    if list(o) != ["index", "text", "token_ids", "cumulative_logprob", "finish_reason", "stop_reason"] \
            or o["index"] != 0 or o["stop_reason"] is not None:
        failures.append(f"{c['name']}: output keys {list(o)}")
    if o["token_ids"] != c["output_token_ids"]:
        failures.append(f"{c['name']}: token ids differ from the golden ones")
    if o["text"] != c["output_text"]:
        failures.append(f"{c['name']}: text differs from the golden text")
    if o["finish_reason"] != "length":
        failures.append(f"{c['name']}: finish_reason {o['finish_reason']}")
summary = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
prompt_tokens = sum(len(c["prompt_token_ids"]) for c in cases)
generated = sum(c["max_new_tokens"] for c in cases)
expected = f"requests: {len(cases)}, prompt tokens: {prompt_tokens}, generated tokens: {generated}, wall time: "
if not summary.startswith(expected) or "prefix cache hit rate: " not in summary or "preemptions: " not in summary:
    failures.append(f"summary line: {summary!r}")
# The 1 MiB pool (51 blocks) cannot hold all twelve at once: some were preempted.
if "preemptions: 0," in summary:
    failures.append("expected preemptions with a 1 MiB KV cache")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
