#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ AddressSanitizer and UBSan) and
# runs each for a bounded time.  Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=$root/build-fuzz
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVLLM_BUILD_TESTS=OFF -DVLLM_BUILD_FUZZERS=ON -DVLLM_SANITIZE=address,undefined >/dev/null
cmake --build "$build" --target tokenizer_encode_fuzzer chat_template_fuzzer server_request_fuzzer
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
run() {  # run NAME [ENV=VALUE...]: the fuzzer for $seconds, seeded with a few real inputs
  local name=$1
  shift
  mkdir -p "$corpus/$name"
  echo "== $name $* (${seconds}s)"
  env "$@" "$build/fuzz/${name%%@*}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$root/build-fuzz/" "$corpus/$name" 2>&1 | tail -n 12
}
# Seeds: the embedded model's chat template and some text.
mkdir -p "$corpus/chat_template_fuzzer" "$corpus/tokenizer_encode_fuzzer"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["chat_template"], end="")' \
  "$root/models/stories260k/tokenizer_config.json" >"$corpus/chat_template_fuzzer/seed"
printf 'Once upon a time, <s> there was \xe2\x96\x81 a \xff\xfe cat. \xf0\x9f\x98\x80\n' >"$corpus/tokenizer_encode_fuzzer/seed"
mkdir -p "$corpus/server_request_fuzzer"
printf '%s' '{"prompt": ["Once", [1, 403]], "n": 2, "temperature": 0.5, "stop": ["a"], "logit_bias": {"5": 1},
  "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content":
  [{"type": "text", "text": "Hi"}]}], "chat_template_kwargs": {"x": 1}, "logprobs": true, "top_logprobs": 2}'   >"$corpus/server_request_fuzzer/seed"
printf '%s' '{"prompt": "Once", "tokens": [1, 403], "add_special_tokens": false, "return_token_strs": true}' \
  >"$corpus/server_request_fuzzer/seed-tokenize"
run chat_template_fuzzer
run tokenizer_encode_fuzzer
run server_request_fuzzer
if [ -d "$root/../shared/tokenizers/qwen3" ]; then
  cp -r "$corpus/tokenizer_encode_fuzzer" "$corpus/tokenizer_encode_fuzzer@qwen3"
  run "tokenizer_encode_fuzzer@qwen3" VLLM_FUZZ_TOKENIZER="$root/../shared/tokenizers/qwen3"
fi
