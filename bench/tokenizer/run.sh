#!/usr/bin/env bash
# Tokenizer encode throughput, single thread, ours beside Hugging Face's Rust
# tokenizers (npm `tokenizers`) and transformers.js, on the same ~10 MB
# corpus (the shared fixture texts repeated), for llama3, qwen3 and gemma3.
# The peers are installed here from the npm registry (pinned by
# package-lock.json), outside the build.
# Usage: bench/tokenizer/run.sh [TARGET_MB]   (needs ../shared beside the repository)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=$root/../shared
target_mb=${1:-10}
bash "$root/scripts/build.sh" "$root/build" >/dev/null
(cd "$root/bench/tokenizer/node" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
corpus=$shared/fixtures/tokenizers/llama3.jsonl
printf '%-8s %-26s %10s %10s\n' family library "MB/s med" "MB/s best"
for family in llama3 qwen3 gemma3; do
  dir=$shared/tokenizers/$family
  ours=$("$root/build/bench/tokenizer_throughput" "$dir" "$corpus" "$target_mb" 5)
  peers=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node "$root/bench/tokenizer/node/bench.mjs" "$dir" "$corpus" "$target_mb" 5)
  python3 - "$family" "$ours" "$peers" <<'PY'
import json, sys
family, ours, peers = sys.argv[1], json.loads(sys.argv[2]), [json.loads(l) for l in sys.argv[3].splitlines() if l.strip()]
rows = [dict(ours, library="vllm-cpp")] + peers
for r in rows:
    print(f"{family:<8} {r['library']:<26} {r['mb_per_s_median']:>10.2f} {r['mb_per_s_best']:>10.2f}")
base = {r["library"]: r["mb_per_s_median"] for r in rows}
for r in peers:
    print(f"{family:<8} {'  ratio vs ' + r['library'][:15]:<26} {ours['mb_per_s_median'] / r['mb_per_s_median']:>10.2f}x")
for r in peers:
    if r["tokens"] != ours["tokens"] and "1 MB" not in r["library"]:
        print(f"{family:<8} WARNING: {r['library']} made {r['tokens']} tokens, vllm-cpp {ours['tokens']}")
PY
done
