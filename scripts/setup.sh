#!/usr/bin/env bash
# Installs what lockstep needs on Debian 12 (only what is missing), then
# configures and builds build/lockstep. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ gcc libgtest-dev libgmock-dev
  libbenchmark-dev libcli11-dev nlohmann-json3-dev libssl-dev libmpfr-dev
  python3 python3-numpy clang-format libpcre2-dev pkg-config
  libcpp-httplib-dev curl jq gappa sollya frama-c-base why3 z3 cvc5
  clang-19 lld-19 wabt libclang-rt-19-dev
  chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node.js runs the independent reference tokenizer (npm gpt-3-encoder).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -d tools/tokenizer_ref/node_modules/gpt-3-encoder ]; then
  npm ci --prefix tools/tokenizer_ref --no-audit --no-fund --loglevel=error
fi
# The npm openai client that tests lockstep serve (tests/serve_client).
if [ ! -f tests/serve_client/node_modules/openai/package.json ]; then
  npm ci --prefix tests/serve_client --no-audit --no-fund --loglevel=error
fi
# playwright-core, which drives Debian's chromium in the browser page's
# test (tests/web, docs/browser.md); it downloads no browser.
if [ ! -f tests/web/node_modules/playwright-core/package.json ]; then
  npm ci --prefix tests/web --no-audit --no-fund --loglevel=error
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j "$jobs"
