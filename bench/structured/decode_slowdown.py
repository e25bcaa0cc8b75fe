"""The decode step's slowdown when every request is constrained by a JSON
schema (structured outputs), at batch 1 and 16, on the smollm-135m shape:
`bench latency` with and without --json-schema, interleaved pairs, medians
and the median of the pairs' ratios (each run the median of 3 iterations after a warm-up one,
which also warms the grammar's mask cache, as a serving process's is).  Random weights (make-test-model) with GPT-2's byte-level
BPE tokenizer (50,257 tokens; SmolLM's own has 49,152) from ../shared.
Usage: decode_slowdown.py VLLM_CPP [--pairs 3] [--output-len 64]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
SCHEMA = {  # a typical structured answer (random weights keep writing the story to --output-len)
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40},
        "mood": {"enum": ["happy", "sad", "tense"]},
        "characters": {"type": "array", "maxItems": 3, "minItems": 1, "items": {
            "type": "object", "required": ["name", "age"],
            "properties": {"name": {"type": "string", "maxLength": 20},
                           "age": {"type": "integer", "minimum": 0, "maximum": 120}}}},
        "story": {"type": "string"}},
    "required": ["title", "mood", "characters", "story"]}


def decode_step_ms(binary, model, batch, output_len, schema_file=None):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cmd = [binary, "bench", "latency", "--model", model, "--batch-size", str(batch), "--input-len", "32",
               "--output-len", str(output_len), "--num-iters", "3", "--output-json", report.name]
        if schema_file:
            cmd += ["--json-schema", schema_file]
        subprocess.run(cmd, check=True, capture_output=True)
        return json.load(open(report.name))["decode_time_per_step_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--output-len", type=int, default=64)
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    model = os.path.join(work, "smollm")
    tokenizer = os.path.join(here, "..", "..", "..", "shared", "tokenizers", "gpt2")
    subprocess.run([args.binary, "make-test-model", "--preset", "smollm-135m", "--dtype", "bf16", "--tokenizer",
                    tokenizer, "--vocab-size", "50257", "--out", model], check=True, capture_output=True)
    schema_file = os.path.join(work, "schema.json")
    json.dump(SCHEMA, open(schema_file, "w"))
    print(f"{'batch':>5} {'free ms/step':>13} {'schema ms/step':>15} {'slowdown':>9}")
    for batch in (1, 16):
        free, constrained = [], []
        for _ in range(args.pairs):
            free.append(decode_step_ms(args.binary, model, batch, args.output_len))
            constrained.append(decode_step_ms(args.binary, model, batch, args.output_len, schema_file))
        # On a shared machine the step time drifts between pairs: the slowdown
        # is the median of each pair's own ratio.
        f, c = statistics.median(free), statistics.median(constrained)
        slowdown = statistics.median(b / a - 1 for a, b in zip(free, constrained))
        print(f"{batch:>5} {f:>13.2f} {c:>15.2f} {100 * slowdown:>8.1f}%   "
              f"(pairs: {', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(free, constrained))})")


if __name__ == "__main__":
    main()
