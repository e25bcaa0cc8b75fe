#!/usr/bin/env bash
# The engine's performance figures of docs/PERFORMANCE.md, each beside the
# machine's limits measured in the same run: batch-1 decode of 128 tokens
# after an 8-token prompt (llama-bench's tg128 runs from an empty context) and
# 512-token prefill (bench latency) on the smollm-135m, qwen2.5-0.5b and llama-3.2-1b
# shapes in BF16, offline throughput (bench throughput, 16 and 64 requests of
# 128 in / 128 out) and serving (serve + bench serve, 64 requests at
# concurrency 16) on smollm-135m.  Every figure is the median of --repeat
# runs; the raw JSON reports stay in --out.
# Usage: bench/engine/perf_suite.sh [--models DIR] [--out DIR] [--repeat 3] [--shapes "smollm-135m ..."] [--bin PATH]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
models=/tmp/vllm-cpp-models out=/tmp/vllm-cpp-perf repeat=3 shapes="smollm-135m qwen2.5-0.5b llama-3.2-1b"
bin=$root/build/src/vllm-cpp
while [ $# -gt 0 ]; do
  case $1 in
    --models) models=$2 ;;
    --out) out=$2 ;;
    --repeat) repeat=$2 ;;
    --shapes) shapes=$2 ;;
    --bin) bin=$2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ -x "$bin" ] || { echo "build first (bash scripts/build.sh): $bin not found" >&2; exit 1; }
mkdir -p "$models" "$out"

for shape in $shapes; do
  [ -f "$models/$shape/config.json" ] ||
    "$bin" make-test-model --preset "$shape" --dtype bf16 --seed 1 --out "$models/$shape" 2>/dev/null
done

for i in $(seq "$repeat"); do
  for shape in $shapes; do
    "$bin" bench latency --model "$models/$shape" --batch-size 1 --input-len 512 --output-len 1 --num-iters 1 \
      --output-json "$out/prefill-$shape-$i.json" >/dev/null 2>&1
    "$bin" bench latency --model "$models/$shape" --batch-size 1 --input-len 8 --output-len 128 --num-iters 1 \
      --output-json "$out/decode-$shape-$i.json" >/dev/null 2>&1
  done
  for n in 16 64; do
    "$bin" bench throughput --model "$models/smollm-135m" --num-prompts $n --input-len 128 --output-len 128 \
      --output-json "$out/throughput-$n-$i.json" >/dev/null 2>&1
  done
  port=$((18200 + i))
  "$bin" serve "$models/smollm-135m" --port $port --disable-log-requests --served-model-name smollm-135m \
    >"$out/serve-$i.log" 2>&1 &
  server=$!
  for _ in $(seq 120); do grep -q "^serving" "$out/serve-$i.log" && break; sleep 0.5; done
  "$bin" bench serve --base-url "http://127.0.0.1:$port" --num-prompts 64 --max-concurrency 16 --input-len 128 \
    --output-len 128 --random-vocab-size 49152 --output-json "$out/serve-$i.json" >/dev/null 2>&1
  kill -TERM $server
  wait $server || true
done

python3 - "$out" "$repeat" "$shapes" <<'PY'
import json, statistics, sys
out, repeat, shapes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def runs(name):
    return [json.load(open(f"{out}/{name}-{i}.json")) for i in range(1, repeat + 1)]
def med(rs, key):
    return statistics.median(r[key] for r in rs)
print("| shape | decode t/s (bs 1) | of bandwidth limit | prefill 512 t/s | of FP32 peak limit | bandwidth GB/s | FP32 peak GFLOP/s |")
print("|---|---|---|---|---|---|---|")
for s in shapes:
    d, p = runs(f"decode-{s}"), runs(f"prefill-{s}")
    print(f"| {s} | {med(d, 'decode_tokens_per_s'):.1f} | {100 * med(d, 'decode_fraction_of_limit'):.0f}% "
          f"| {med(p, 'prefill_tokens_per_s'):.0f} | {100 * med(p, 'prefill_fraction_of_limit'):.0f}% "
          f"| {med(d, 'bandwidth_gb_per_s'):.1f} | {med(p, 'peak_gflops'):.0f} |")
print()
print("| smollm-135m offline, 128 in / 128 out | total t/s | output t/s | requests/s |")
print("|---|---|---|---|")
for n in (16, 64):
    rs = runs(f"throughput-{n}")
    print(f"| {n} requests | {med(rs, 'total_tokens_per_s'):.0f} | {med(rs, 'output_tokens_per_s'):.0f} "
          f"| {med(rs, 'requests_per_s'):.2f} |")
print()
rs = runs("serve")
print("| smollm-135m serving, 64 requests @ 16 | output tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | ITL p50 ms |")
print("|---|---|---|---|---|---|")
print(f"| vllm-cpp | {med(rs, 'output_throughput'):.1f} | {med(rs, 'median_ttft_ms'):.0f} | {med(rs, 'p99_ttft_ms'):.0f} "
      f"| {med(rs, 'median_tpot_ms'):.1f} | {med(rs, 'median_itl_ms'):.1f} |")
PY
