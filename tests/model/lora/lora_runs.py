"""Runs of `vllm-cpp generate --input` for the LoRA checks, and the
comparison of greedy continuations with a merged checkpoint's."""
import json
import os
import subprocess


def generate(vllm, work, model, requests, *flags, expect_ok=True):
    """Outputs of `requests` (dicts, one --input line each) in order, and
    the run's stderr; the finished process itself when not `expect_ok`."""
    path = os.path.join(work, "input.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in requests))
    run = subprocess.run([vllm, "generate", "--model", model, "--input", path, *flags], capture_output=True, text=True)
    if not expect_ok:
        return run
    assert run.returncode == 0, f"generate {flags}: {run.stderr}"
    return [json.loads(line) for line in run.stdout.splitlines()], run.stderr


def tokens(output):
    return output["outputs"][0]["token_ids"]


def equal_or_tie(ours, merged, label):
    """`ours` (token ids) equals the merged model's greedy tokens (an output
    run with logprobs >= 2), or they part where the merged model's two best
    tokens tie within 1e-4, a tie that rounding may break either way."""
    want = tokens(merged)
    for i, (a, b) in enumerate(zip(ours, want)):
        if a == b:
            continue
        best = sorted(merged["outputs"][0]["logprobs"][i].values(), reverse=True)
        margin = best[0] - best[1]
        assert margin < 1e-4, f"{label}: token {i} is {a}, the merged model's {b} (margin {margin})"
        print(f"note {label}: parts from the merged model at token {i}, where its two best tie")
        return
    assert len(ours) == len(want), f"{label}: {len(ours)} tokens, the merged model's {len(want)}"
