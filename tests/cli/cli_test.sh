#!/usr/bin/env bash
# The `vllm-cpp` command line as a user runs it: golden generations on
# stdout, and one clear error line (with a non-zero exit) for bad input.
# Usage: cli_test.sh VLLM_CPP REPO_ROOT
set -u
bin=$1
root=$2
golden=$root/tests/golden/stories260k/greedy.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

golden_text() {  # golden_text CASE_NAME -> the expected completion text
  python3 -c 'import json,sys; print(next(c["output_text"] for c in json.load(open(sys.argv[1]))["cases"] if c["name"] == sys.argv[2]))' "$golden" "$1"
}

check_generation() {  # check_generation CASE_NAME PROMPT MAX_TOKENS [FLAGS...]
  "$bin" generate --prompt "$2" --max-tokens "$3" --temperature 0 --ignore-eos "${@:4}" >"$scratch/out" 2>"$scratch/err" ||
    fail "generate $1 exited $?: $(cat "$scratch/err")"
  golden_text "$1" >"$scratch/expected"
  cmp -s "$scratch/out" "$scratch/expected" || fail "generate $1: stdout differs from the golden text"
  grep -q "finish_reason=length" "$scratch/err" || fail "generate $1: no timing line on stderr"
}

check_error() {  # check_error DESCRIPTION EXPECTED_SUBSTRING COMMAND...
  local what=$1 expected=$2
  shift 2
  "$@" >"$scratch/out" 2>"$scratch/err"
  local code=$?
  [ "$code" -ne 0 ] || fail "$what: exit status 0"
  [ "$code" -lt 128 ] || fail "$what: crashed with status $code"
  [ "$(wc -l <"$scratch/err")" -eq 1 ] || fail "$what: expected one line on stderr, got: $(cat "$scratch/err")"
  grep -qF -- "$expected" "$scratch/err" || fail "$what: stderr lacks '$expected': $(cat "$scratch/err")"
  [ ! -s "$scratch/out" ] || fail "$what: wrote to stdout"
}

check_generation empty_64 "" 64
check_generation once_upon_64 "Once upon a time" 64
# Every ISA's kernels compute the same FMA chains: the same golden text with each.
for isa in scalar avx2; do check_generation once_upon_64 "Once upon a time" 64 --cpu-isa "$isa"; done
# An FP8 E4M3 KV cache (scale 1: stories260k has no k_scale / v_scale) keeps
# this model's 64 greedy tokens (measured; tests/reference checks the logits).
check_generation once_upon_64 "Once upon a time" 64 --kv-cache-dtype fp8
grep -q "FP8 KV cache: the checkpoint gives no k_scale / v_scale for 5 of 5 attention layers" "$scratch/err" ||
  fail "--kv-cache-dtype fp8: no warning that stories260k's scales are 1"

# Speculative decoding with the embedded model as its own draft model: the
# golden text, and the acceptance summary on the final line.
check_generation once_upon_64 "Once upon a time" 64 --speculative-config \
  "{\"method\": \"draft_model\", \"model\": \"$root/models/stories260k\", \"num_speculative_tokens\": 3}"
grep -q "speculative decoding: acceptance rate" "$scratch/err" || fail "draft_model: no acceptance summary"
# A random EAGLE head for it: the golden text (every guess verified).
"$bin" make-test-model --eagle-head-for "$root/models/stories260k" --out "$scratch/eagle" 2>/dev/null ||
  fail "make-test-model --eagle-head-for"
check_generation once_upon_64 "Once upon a time" 64 --speculative-config \
  "{\"method\": \"eagle\", \"model\": \"$scratch/eagle\", \"num_speculative_tokens\": 3}"
grep -q "speculative decoding: acceptance rate" "$scratch/err" || fail "eagle: no acceptance summary"
"$bin" make-test-model --eagle3-head-for "$root/models/stories260k" --out "$scratch/eagle3" 2>/dev/null ||
  fail "make-test-model --eagle3-head-for"
check_generation once_upon_64 "Once upon a time" 64 --speculative-config \
  "{\"method\": \"eagle3\", \"model\": \"$scratch/eagle3\", \"num_speculative_tokens\": 3}"
check_error "missing EAGLE head" "error: the EAGLE head: /nonexistent: model directory not found" \
  "$bin" generate --prompt hi --speculative-config '{"method": "eagle", "model": "/nonexistent", "num_speculative_tokens": 2}'
check_error "missing draft model" "error: the draft model: /nonexistent: model directory not found" \
  "$bin" generate --prompt hi --speculative-config '{"model": "/nonexistent", "num_speculative_tokens": 2}'

check_error "missing model directory" "error: /nonexistent: model directory not found" \
  "$bin" generate --model /nonexistent --prompt hi
mkdir "$scratch/broken"
cp "$root"/models/stories260k/*.json "$scratch/broken/"
head -c 1000 "$root/models/stories260k/model.safetensors" >"$scratch/broken/model.safetensors"
check_error "truncated weights" "broken/model.safetensors: truncated: the header declares" "$bin" generate --model "$scratch/broken"
check_error "context overflow" "exceeds the maximum context length of 512 tokens" \
  "$bin" generate --prompt hi --max-tokens 600
check_error "unknown flag" "--no-such-flag" "$bin" generate --no-such-flag
"$bin" generate --no-such-flag >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown flag must exit with status 2"
check_error "tiny preset without arch" "--preset tiny needs --arch" \
  "$bin" make-test-model --preset tiny --out "$scratch/m"

# A file of requests, run together.
python3 "$root/tests/cli/check_generate_batch.py" "$bin" "$golden" "$scratch" || fail "generate --input"
python3 "$root/tests/cli/check_generate_sampling.py" "$bin" "$root/tests/golden/stories260k/logprobs_top5.json" \
  "$scratch" || fail "generate --input with sampling fields"
printf '{"prompt": "hi", "top_p": 0}\n' >"$scratch/range.jsonl"
check_error "sampling field out of range" "range.jsonl line 1: top_p must be in (0, 1], got 0." \
  "$bin" generate --input "$scratch/range.jsonl"
printf '{"prompt": "hi"}\n{"prompt": "hi", "top_q": 1}\n' >"$scratch/bad.jsonl"
check_error "unknown request field" "bad.jsonl line 2: unknown field 'top_q'" \
  "$bin" generate --input "$scratch/bad.jsonl"
printf '{"prompt": "hi", "max_tokens": 600}\n' >"$scratch/long.jsonl"
check_error "request beyond the context" "long.jsonl line 1: the prompt (3 tokens) plus max_tokens (600) exceeds" \
  "$bin" generate --input "$scratch/long.jsonl"
check_error "bad KV cache size" "--kv-cache-memory-bytes: '4Gb' is not a size" \
  "$bin" generate --prompt hi --kv-cache-memory-bytes 4Gb
VLLM_CPU_KVCACHE_SPACE=lots check_error "bad VLLM_CPU_KVCACHE_SPACE" "VLLM_CPU_KVCACHE_SPACE must be a number of GiB" \
  "$bin" generate --prompt hi
check_error "unknown ISA" "--cpu-isa must be auto, amx, avx512_bf16, avx512, avx2 or scalar, got 'sse9'" \
  "$bin" generate --prompt hi --cpu-isa sse9
check_error "unknown KV cache dtype" "--kv-cache-dtype must be auto, bfloat16, float32, fp8 or fp8_e4m3, got 'fp8_e5m2'" \
  "$bin" generate --prompt hi --kv-cache-dtype fp8_e5m2
check_error "KV cache below one block" "is smaller than one block" "$bin" generate --prompt hi --kv-cache-memory-bytes 1k

# tokenize / detokenize / chat-template on the embedded model.
out=$(echo '{"text": "Once upon a time"}' | "$bin" tokenize --add-special-tokens)
[ "$out" = '{"ids":[1,403,407,261,378],"tokens":["<s>","▁Once","▁upon","▁a","▁time"]}' ] || fail "tokenize: $out"
out=$(echo '{"ids": [1, 403, 407, 261, 378]}' | "$bin" detokenize --skip-special-tokens)
[ "$out" = '{"text":"Once upon a time"}' ] || fail "detokenize: $out"
out=$(echo '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}' | "$bin" chat-template)
[ "$out" = '{"rendered":"<s>user: Hi\nassistant:","ids":[1,318,419,285,467,320,417,13,412,419,419,293,413,303,413,467]}' ] ||
  fail "chat-template: $out"

# make-test-model writes a directory that generate can run.
"$bin" make-test-model --arch qwen3 --preset tiny --dtype bf16 --seed 1 --out "$scratch/qwen3" 2>/dev/null ||
  fail "make-test-model failed"
"$bin" generate --model "$scratch/qwen3" --prompt "Once" --max-tokens 8 --temperature 0 --ignore-eos \
  >"$scratch/out" 2>"$scratch/err" || fail "generate on a test model: $(cat "$scratch/err")"
grep -q "generated 8 tokens" "$scratch/err" || fail "generate on a test model did not make 8 tokens"

# bench latency and bench throughput: their JSON reports, consistent with themselves.
"$bin" bench latency --model "$root/models/stories260k" --batch-size 2 --input-len 16 --output-len 8 \
  --num-iters 2 --num-iters-warmup 0 --output-json "$scratch/latency.json" >"$scratch/out" 2>"$scratch/err" ||
  fail "bench latency: $(cat "$scratch/err")"
grep -q "^decode " "$scratch/out" || fail "bench latency prints no decode line: $(cat "$scratch/out")"
python3 - "$scratch/latency.json" <<'PY' || fail "bench latency JSON"
import json, sys
r = json.load(open(sys.argv[1]))
for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "bandwidth_gb_per_s", "peak_gflops"):
    assert r[key] > 0, key
assert abs(r["prefill_tokens_per_s"] * r["prefill_time_ms"] / 1e3 - 2 * 16) < 0.01, r
assert abs(r["decode_tokens_per_s"] * r["decode_time_per_step_ms"] / 1e3 - 2) < 0.01, r
assert len(r["prefill_times_ms"]) == 2
# Limits measured around each iteration; the reported one is their median.
bw = r["bandwidth_per_iteration_gb_per_s"]
assert len(bw) == 2 and min(bw) <= r["bandwidth_gb_per_s"] <= max(bw), r
assert 0 < r["decode_fraction_of_limit"] and 0 < r["prefill_fraction_of_limit"], r
PY
"$bin" bench throughput --model "$root/models/stories260k" --num-prompts 5 --input-len 12 --output-len 7 \
  --output-json "$scratch/throughput.json" >"$scratch/out" 2>"$scratch/err" || fail "bench throughput: $(cat "$scratch/err")"
python3 - "$scratch/throughput.json" <<'PY' || fail "bench throughput JSON"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["elapsed_time"]
assert abs(r["requests_per_s"] * t - 5) < 1e-6, r
assert abs(r["output_tokens_per_s"] * t - 5 * 7) < 1e-6, r  # every request made all its tokens
assert abs(r["total_tokens_per_s"] * t - 5 * (12 + 7)) < 1e-6, r
assert r["bandwidth_gb_per_s"] > 0 and r["peak_gflops"] > 0
PY

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
