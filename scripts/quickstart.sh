#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build, and
# generate a story with the embedded stories260k model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
"$root/build/src/vllm-cpp" generate --prompt "Once upon a time" --max-tokens 200 --temperature 0
