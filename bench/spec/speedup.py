"""End-to-end speed of speculative decoding (n-gram drafts by default) on a
workload whose output repeats its prompt: a story the model wrote (greedy,
--story-tokens from "Once upon a time") followed by its own beginning,
continued greedily for --max-tokens.  Batch 1 (`generate`'s decode tokens/s
of one prompt) and batch 16 (`generate --input` with 16 such requests,
generated tokens/s), with and without --speculative-config, interleaved
pairs: medians, the median of the pairs' ratios, the acceptance rate, and
whether the outputs are identical.  The model is the embedded stories260k
unless --model names another.
Usage: speedup.py VLLM_CPP [--pairs 9] [--config JSON] [--model DIR] [--batches 1,16]
                  [--story-tokens 200] [--max-tokens 280]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

DEFAULT_CONFIG = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 5}'


def run(cmd):
    # The text goes to a file, not a pipe: a reader process woken for every
    # streamed token takes a core from a 2-core machine's engine.
    with tempfile.TemporaryFile("w+") as out:
        done = subprocess.run(cmd, check=True, stdout=out, stderr=subprocess.PIPE, text=True)
        out.seek(0)
        return out.read(), done.stderr.strip().splitlines()[-1]


def figure(pattern, line):
    return float(re.search(pattern, line).group(1))


def batch1(binary, prompt, config, max_tokens):
    cmd = binary + ["--prompt", prompt, "--max-tokens", str(max_tokens), "--temperature", "0"]
    out, line = run(cmd + (["--speculative-config", config] if config else []))
    return figure(r"decode ([\d.]+) tokens/s", line), out, line


def batch16(binary, requests_file, config):
    cmd = binary + ["--input", requests_file]
    out, line = run(cmd + (["--speculative-config", config] if config else []))
    return figure(r"generated ([\d.]+) tokens/s", line), out, line


def compare(name, measure, pairs):
    plain, spec, ratios = [], [], []
    outputs, last_line = set(), ""
    for _ in range(pairs):
        a, out_a, _ = measure(None)
        b, out_b, last_line = measure(True)
        plain.append(a)
        spec.append(b)
        ratios.append(b / a)
        outputs.add(out_a == out_b)
    acceptance = re.search(r"acceptance rate ([\d.]+%), mean acceptance length ([\d.]+)", last_line)
    print(f"{name}: without {statistics.median(plain):.0f} tokens/s ({min(plain):.0f}-{max(plain):.0f}), "
          f"with {statistics.median(spec):.0f} ({min(spec):.0f}-{max(spec):.0f}), median of pair ratios "
          f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); acceptance rate "
          f"{acceptance.group(1)}, mean acceptance length {acceptance.group(2)}; identical output: {outputs == {True}}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--config", default=DEFAULT_CONFIG)
    parser.add_argument("--model", help="a model directory instead of the embedded stories260k")
    parser.add_argument("--batches", default="1,16", help="batch sizes to measure: 1, 16 or both")
    parser.add_argument("--story-tokens", type=int, default=200)
    # On stories260k the 213-token prompt plus 280 fill most of the 512-token context.
    parser.add_argument("--max-tokens", type=int, default=280)
    args = parser.parse_args()
    generate = [args.binary, "generate"] + (["--model", args.model] if args.model else [])
    story, _ = run(generate + ["--prompt", "Once upon a time", "--max-tokens", str(args.story_tokens),
                               "--temperature", "0"])
    prompt = "Once upon a time" + story.rstrip("\n") + "\n\nOnce upon a time"
    requests_file = os.path.join(tempfile.mkdtemp(), "requests.jsonl")
    with open(requests_file, "w") as f:
        for _ in range(16):
            f.write(json.dumps({"prompt": prompt, "max_tokens": args.max_tokens, "temperature": 0}) + "\n")
    print(f"speculative config {args.config}; {args.pairs} interleaved pairs")
    batches = args.batches.split(",")
    if "1" in batches:
        compare("batch 1", lambda spec: batch1(generate, prompt, args.config if spec else None, args.max_tokens),
                args.pairs)
    if "16" in batches:
        compare("batch 16", lambda spec: batch16(generate, requests_file, args.config if spec else None),
                args.pairs)


if __name__ == "__main__":
    main()
