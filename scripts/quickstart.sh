#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build, and
# serve the embedded stories260k model on the OpenAI-compatible API
# (http://localhost:8000; Ctrl-C stops it).  Extra arguments go to `serve`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
exec "$root/build/src/vllm-cpp" serve --served-model-name stories260K "$@"
