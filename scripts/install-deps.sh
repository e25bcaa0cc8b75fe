#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build and test vllm-cpp.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev       # JSON, command-line flags
  libpcre2-dev libutf8proc-dev          # tokenizer regexes, Unicode normalization
  libssl-dev                            # SHA-256 block hashes of the prefix cache
  libboost1.81-dev                      # Boost.Beast/Asio: the HTTP server
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # kernel micro-benchmarks (bench/kernels)
  python3 python3-numpy                 # the numpy reference forward pass (tests only)
  python3-jsonschema                    # validates structured outputs against their schemas (tests only)
  python3-jinja2                        # renders chat templates with tools, the reference of ours (tests only)
  clang libclang-rt-14-dev              # sanitizer builds and libFuzzer targets (test.sh, fuzz.sh)
  libopenmpi-dev openmpi-bin            # distributed jobs: one process per rank under mpirun
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run the official OpenAI SDK test (tests/server); a Node.js
# that already brings its own npm is left alone.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "installing: ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
