#!/usr/bin/env bash
# Offline throughput: N requests (P random prompt tokens, G generated tokens,
# ignore_eos, greedy) through `vllm-cpp generate --input`, first all together
# (continuous batching), then one at a time (--max-num-seqs 1), on a
# random-weight model with a real shape.  Prints both summary lines and the
# ratio of their throughputs.
# Usage: bench/engine/throughput.sh [--preset smollm-135m] [--dtype bf16] [--requests 256]
#          [--prompt-tokens 128] [--max-tokens 128] [--sequential-requests N] [--bin PATH]
# --sequential-requests runs only the first N requests one at a time (the
# per-token rate barely depends on N) when the full sequential run is too long.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
preset=smollm-135m dtype=bf16 requests=256 prompt_tokens=128 max_tokens=128 sequential=""
bin=$root/build/src/vllm-cpp
while [ $# -gt 0 ]; do
  case $1 in
    --preset) preset=$2 ;;
    --dtype) dtype=$2 ;;
    --requests) requests=$2 ;;
    --prompt-tokens) prompt_tokens=$2 ;;
    --max-tokens) max_tokens=$2 ;;
    --sequential-requests) sequential=$2 ;;
    --bin) bin=$2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
sequential=${sequential:-$requests}
[ -x "$bin" ] || { echo "build first (bash scripts/build.sh): $bin not found" >&2; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
model=$scratch/model
"$bin" make-test-model --preset "$preset" --dtype "$dtype" --seed 1 --out "$model" >/dev/null

# Random prompts (fixed seed) over the model's vocabulary, avoiding the first ids (special tokens).
python3 - "$model/config.json" "$requests" "$prompt_tokens" "$max_tokens" >"$scratch/requests.jsonl" <<'PY'
import json, random, sys
vocab = json.load(open(sys.argv[1]))["vocab_size"]
n, p, g = map(int, sys.argv[2:5])
rng = random.Random(0)
for _ in range(n):
    ids = [rng.randrange(3, min(vocab, 32000)) for _ in range(p)]
    print(json.dumps({"prompt_token_ids": ids, "max_tokens": g, "ignore_eos": True, "temperature": 0}))
PY
head -n "$sequential" "$scratch/requests.jsonl" >"$scratch/sequential.jsonl"

echo "model: $preset $dtype (random weights); $requests requests x ($prompt_tokens prompt + $max_tokens generated)"
echo "== continuous batching (defaults: --max-num-seqs 128 --max-num-batched-tokens 2048)"
"$bin" generate --model "$model" --input "$scratch/requests.jsonl" --output /dev/null 2>"$scratch/batched.txt"
cat "$scratch/batched.txt"
echo "== one at a time (--max-num-seqs 1), first $sequential requests"
"$bin" generate --model "$model" --input "$scratch/sequential.jsonl" --output /dev/null --max-num-seqs 1 \
  2>"$scratch/sequential.txt"
cat "$scratch/sequential.txt"

python3 - "$scratch/batched.txt" "$scratch/sequential.txt" <<'PY'
import re, sys
def rates(path):
    line = open(path).read().strip().splitlines()[-1]
    total = float(re.search(r"throughput: ([\d.]+) tokens/s", line).group(1))
    generated = float(re.search(r"generated ([\d.]+) tokens/s", line).group(1))
    return total, generated
(bt, bg), (st, sg) = rates(sys.argv[1]), rates(sys.argv[2])
print(f"ratio batched / one at a time: total tokens/s {bt / st:.2f}x, generated tokens/s {bg / sg:.2f}x")
PY
