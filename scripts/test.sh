#!/usr/bin/env bash
# Installs dependencies, builds Release and runs every test, then builds with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs every test again.
# Usage: scripts/test.sh [--release-only]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"

echo "== Release build and tests"
bash "$root/scripts/build.sh" "$root/build" -DVLLM_WERROR=ON
ctest --test-dir "$root/build" --output-on-failure --parallel "$(nproc)"

if [ "${1:-}" = "--release-only" ]; then exit 0; fi

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
bash "$root/scripts/build.sh" "$root/build-asan" -DVLLM_WERROR=ON -DVLLM_SANITIZE=address,undefined \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure --parallel "$(nproc)"
