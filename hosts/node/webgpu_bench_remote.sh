#!/usr/bin/env bash
# hosts/node/webgpu_bench.mjs on a machine with no Node.js (the H200 of
# docs/browser.md, "A real GPU"): unpacks the carried Node.js binary and
# Dawn for Node.js (the npm package `webgpu`, linux-x64) from PACK, then
# runs the bench on the models given (its output: one JSON line each).
#   hosts/node/webgpu_bench_remote.sh PACK OUT_FILE [bench options] MODEL...
# PACK (hosts/node/webgpu_bench_pack.sh makes it): node.xz (a stripped Node.js
# 20 binary), dawn.node.xz (webgpu's dist/linux-x64/dawn.node, stripped),
# webgpu/index.js and package.json, wasm/ (lockstep.wasm,
# lockstep-web.wasm and their .sha256).
set -euo pipefail
pack=$1
out=$2
shift 2
w=$(mktemp -d)
unxz() {  # xz, or Python's lzma where xz is missing
  if command -v xz >/dev/null; then xz -dc "$1"; else
    python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$1"
  fi
}
mkdir -p "$w/node_modules/webgpu/dist/linux-x64"
unxz "$pack/node.xz" >"$w/node"
chmod +x "$w/node"
unxz "$pack/dawn.node.xz" >"$w/node_modules/webgpu/dist/linux-x64/dawn.node"
cp "$pack/webgpu/index.js" "$pack/webgpu/package.json" "$w/node_modules/webgpu/"
echo "node $("$w/node" --version)"
"$w/node" hosts/node/webgpu_bench.mjs \
  --webgpu "$w/node_modules/webgpu/index.js" --wasm "$pack/wasm" "$@" | tee "$out"
