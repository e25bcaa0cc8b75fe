#!/usr/bin/env bash
# vllm-cpp and llama.cpp side by side on the same model shapes and weights,
# interleaved, repeated, each of our runs measuring the machine's limits:
#   batch-1 decode (our bench latency 8 in / 128 out; llama-bench tg128),
#   prefill of 512 tokens (bench latency; llama-bench pp512),
#   offline batches of 16 and 64 requests of 128 in / 128 out on smollm-135m
#   (bench throughput; llama-batched-bench -npl 16,64),
#   serving 64 requests at concurrency 16, 128 in / 128 out on smollm-135m
#   (serve; llama-server -np 16), both driven by the same bench serve command.
# llama.cpp is not built here: --llama-bin names a directory of binaries
# already built (outside this repository).  --models holds, per shape,
# hf-bf16/ (config.json, model.safetensors, tokenizer.json) and
# gguf/<shape>-bf16.gguf with the same weights (../shared/peer/make_models.py
# writes both).  Raw results go to --out; the summary table is printed.
# --baseline-bin names another vllm-cpp binary (an earlier commit's) whose
# serve runs interleaved with the others, for before/after figures.
# llama.cpp's batched and served runs get LLAMA_SET_ROWS=1: without it the
# measured version (e4868d16) forces one unified KV cache and runs 1.6-4.4x
# slower on many sequences (../shared/peer/README.md); we compare with it at its best.
# Usage: bench/peer/compare_llamacpp.sh --llama-bin DIR --models DIR [--out DIR] [--repeat 3]
#          [--shapes "smollm-135m qwen2.5-0.5b llama-3.2-1b"] [--parts "latency throughput serve"]
#          [--serve-flags "..."] [--baseline-bin PATH]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/src/vllm-cpp
out=/tmp/vllm-cpp-vs-llamacpp repeat=3 shapes="smollm-135m qwen2.5-0.5b llama-3.2-1b"
parts="latency throughput serve" llama_bin="" models="" serve_flags="" baseline_bin=""
while [ $# -gt 0 ]; do
  case $1 in
    --llama-bin) llama_bin=$2 ;;
    --models) models=$2 ;;
    --out) out=$2 ;;
    --repeat) repeat=$2 ;;
    --shapes) shapes=$2 ;;
    --parts) parts=$2 ;;
    --serve-flags) serve_flags=$2 ;;
    --baseline-bin) baseline_bin=$2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ -x "$bin" ] || { echo "build first (bash scripts/build.sh): $bin not found" >&2; exit 1; }
[ -x "$llama_bin/llama-bench" ] || { echo "--llama-bin DIR must hold llama-bench (and llama-batched-bench, llama-server)" >&2; exit 1; }
[ -n "$models" ] || { echo "--models DIR is required" >&2; exit 1; }
mkdir -p "$out"
hf() { echo "$models/$1/hf-bf16"; }
gguf() { echo "$models/$1/gguf/$1-bf16.gguf"; }
has() { [[ " $parts " == *" $1 "* ]]; }

wait_for() {  # wait_for URL: until it answers 200 (at most 120 s)
  for _ in $(seq 240); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "no answer from $1" >&2
  return 1
}

serve_load() {  # serve_load PORT OUT_JSON: the same load for either server
  "$bin" bench serve --base-url "http://127.0.0.1:$1" --num-prompts 64 --max-concurrency 16 --input-len 128 \
    --output-len 128 --tokenizer "$(hf smollm-135m)" --output-json "$2" >/dev/null 2>&1
}

for i in $(seq "$repeat"); do
  if has latency; then
    for shape in $shapes; do
      echo "[$i] latency $shape" >&2
      "$bin" bench latency --model "$(hf "$shape")" --batch-size 1 --input-len 512 --output-len 1 --num-iters 1 \
        --output-json "$out/ours-prefill-$shape-$i.json" >/dev/null 2>&1
      "$bin" bench latency --model "$(hf "$shape")" --batch-size 1 --input-len 8 --output-len 128 --num-iters 1 \
        --output-json "$out/ours-decode-$shape-$i.json" >/dev/null 2>&1
      "$llama_bin/llama-bench" -m "$(gguf "$shape")" -t 2 -p 512 -n 128 -r 1 -o json \
        >"$out/llama-bench-$shape-$i.json" 2>/dev/null
    done
  fi
  if has throughput; then
    echo "[$i] throughput smollm-135m" >&2
    for n in 16 64; do
      "$bin" bench throughput --model "$(hf smollm-135m)" --num-prompts $n --input-len 128 --output-len 128 \
        --output-json "$out/ours-throughput-$n-$i.json" >/dev/null 2>&1
    done
    # Its log and its JSON lines share the output; summarize.py picks the JSON lines.
    LLAMA_SET_ROWS=1 "$llama_bin/llama-batched-bench" -m "$(gguf smollm-135m)" -t 2 -c 16384 -b 2048 -ub 512 -npp 128 -ntg 128 \
      -npl 16,64 --output-format jsonl >"$out/llama-batched-$i.log" 2>&1
  fi
  if has serve; then
    echo "[$i] serve smollm-135m" >&2
    port=$((18300 + i))
    # shellcheck disable=SC2086  # --serve-flags is a list of flags
    "$bin" serve "$(hf smollm-135m)" --host 127.0.0.1 --port $port --disable-log-requests \
      --served-model-name smollm-135m $serve_flags >"$out/ours-serve-$i.log" 2>&1 &
    server=$!
    wait_for "http://127.0.0.1:$port/health"
    serve_load $port "$out/ours-serve-$i.json"
    kill -TERM $server
    wait $server || true
    if [ -n "$baseline_bin" ]; then
      port=$((18500 + i))
      "$baseline_bin" serve "$(hf smollm-135m)" --host 127.0.0.1 --port $port --disable-log-requests \
        --served-model-name smollm-135m >"$out/base-serve-$i.log" 2>&1 &
      server=$!
      wait_for "http://127.0.0.1:$port/health"
      serve_load $port "$out/base-serve-$i.json"
      kill -TERM $server
      wait $server || true
    fi
    port=$((18400 + i))
    LLAMA_SET_ROWS=1 "$llama_bin/llama-server" -m "$(gguf smollm-135m)" --host 127.0.0.1 --port $port -t 2 -np 16 -c 8192 \
      --cont-batching >"$out/llama-serve-$i.log" 2>&1 &
    server=$!
    wait_for "http://127.0.0.1:$port/health"
    serve_load $port "$out/llama-serve-$i.json"
    kill -TERM $server
    wait $server || true
  fi
done

python3 "$root/bench/peer/summarize.py" "$out" "$repeat" "$shapes" "$parts" "$(cd "$llama_bin" && pwd)"
