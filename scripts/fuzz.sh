#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ AddressSanitizer and UBSan) and
# runs each for a bounded time.  Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
# The fuzzers are targets of scripts/test.sh's ASan + UBSan build, configured
# here with exactly its flags (any other would rebuild everything), so that
# after test.sh only the fuzzers themselves are compiled.
build=$root/build-asan
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVLLM_WERROR=ON \
  -DVLLM_SANITIZE=address,undefined -DVLLM_BUILD_FUZZERS=ON >/dev/null
cmake --build "$build" --target tokenizer_encode_fuzzer chat_template_fuzzer server_request_fuzzer http_request_fuzzer \
  gguf_file_fuzzer structured_output_fuzzer
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
run() {  # run NAME MAX_LEN [ENV=VALUE | -FLAG...]: the fuzzer for $seconds, seeded with a few real inputs
  local name=$1 max_len=$2
  shift 2
  local env=() flags=()
  for a in "$@"; do if [[ $a == -* ]]; then flags+=("$a"); else env+=("$a"); fi; done
  mkdir -p "$corpus/$name"
  echo "== $name $* (${seconds}s, inputs up to $max_len bytes)"
  env "${env[@]}" "$build/fuzz/${name%%@*}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" "${flags[@]}" -print_final_stats=1 -artifact_prefix="$build/" "$corpus/$name" \
    2>&1 | tail -n 12
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
# Seeds of the HTTP fuzzer (its first byte picks how the rest arrives): pipelined, chunked, 100-continue.
mkdir -p "$corpus/http_request_fuzzer"
printf '\x05POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}GET /health HTTP/1.1\r\n\r\n' \
  >"$corpus/http_request_fuzzer/pipelined"
printf '\x00POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n' \
  >"$corpus/http_request_fuzzer/chunked"
printf '\x02POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\nAuthorization: Bearer k\r\n\r\nabc' \
  >"$corpus/http_request_fuzzer/continue"
# Bodies up to 1 MB with a dictionary of JSON tokens and request fields: deep and wide documents.
printf '{"messages": [{"role": "user", "content": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}' \
  >"$corpus/server_request_fuzzer/seed-deep"
# A small llama GGUF: metadata, an F32, a Q8_0 and a Q4_0 tensor under llama.cpp's names.
mkdir -p "$corpus/gguf_file_fuzzer"
python3 - "$corpus/gguf_file_fuzzer/seed" <<'PY'
import struct, sys
s = lambda t: struct.pack("<Q", len(t)) + t.encode()
meta = [("general.architecture", 8, s("llama"))] + [
    ("llama." + k, 4, struct.pack("<I", v)) for k, v in [("block_count", 1), ("embedding_length", 32),
    ("feed_forward_length", 32), ("attention.head_count", 2), ("attention.head_count_kv", 1)]]
tensors = [("token_embd.weight", [32, 4], 8, bytes(34 * 4)), ("blk.0.attn_q.weight", [32, 32], 0, bytes(4096)),
           ("blk.0.attn_k.weight", [32, 16], 2, bytes(18 * 16)), ("output_norm.weight", [32], 0, bytes(128))]
out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta))
out += b"".join(s(k) + struct.pack("<I", t) + v for k, t, v in meta)
offset, data = 0, b""
for name, dims, kind, raw in tensors:
    out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    out += struct.pack("<IQ", kind, len(data))
    data += raw + bytes(-len(raw) % 32)
open(sys.argv[1], "wb").write(out + bytes(-len(out) % 32) + data)
PY
run chat_template_fuzzer 4096
run tokenizer_encode_fuzzer 4096
run server_request_fuzzer 1048576 -dict="$root/fuzz/json.dict"
run http_request_fuzzer 65536
run gguf_file_fuzzer 65536
# Constraints: the first byte picks GBNF (0), regex (1) or JSON schema (2).
mkdir -p "$corpus/structured_output_fuzzer"
printf '\x00root ::= "(" root ")" | [a-z]+ ("," [0-9]{1,3})*' >"$corpus/structured_output_fuzzer/gbnf"
printf '\x01(?:[A-Z][a-z]+ ){1,3}\\d{2,4}(\\.\\d+)?[^"\\n]*' >"$corpus/structured_output_fuzzer/regex"
printf '\x02{"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 120}, "b": {"anyOf": [{"$ref": "#"}, {"type": "array", "items": {"type": "string", "pattern": "^x+$"}, "maxItems": 3}]}}, "required": ["a"]}' \
  >"$corpus/structured_output_fuzzer/schema"
run structured_output_fuzzer 4096
if [ -d "$root/../shared/tokenizers/qwen3" ]; then
  cp -r "$corpus/tokenizer_encode_fuzzer" "$corpus/tokenizer_encode_fuzzer@qwen3"
  run "tokenizer_encode_fuzzer@qwen3" 4096 VLLM_FUZZ_TOKENIZER="$root/../shared/tokenizers/qwen3"
fi
