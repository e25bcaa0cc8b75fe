#!/usr/bin/env bash
# Runs the official OpenAI SDK (npm, pinned by package-lock.json) against a
# fresh `vllm-cpp serve`.  Installs the SDK on first use.
# Usage: openai_client_test.sh VLLM_CPP
set -u
bin=$1
here=$(cd "$(dirname "$0")/openai_client" && pwd)
if ! command -v npm >/dev/null; then
  echo "SKIP: npm is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
if [ ! -d "$here/node_modules/openai" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) || { echo "FAIL: npm ci"; exit 1; }
fi
log=$(mktemp)
"$bin" serve --host 127.0.0.1 --port 0 --served-model-name stories260K --api-key test-key 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 | cut -d: -f3)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: serve did not start: $(cat "$log")"; exit 1; }
node "$here/openai_client_test.mjs" "http://127.0.0.1:$port/v1"
