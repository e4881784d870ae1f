#!/usr/bin/env bash
# Makes the pack that hosts/node/webgpu_bench_remote.sh unpacks on a
# machine with no Node.js (docs/browser.md, "A real GPU"): this machine's
# Node.js binary and the npm package `webgpu`'s linux-x64 dawn.node, both
# stripped and compressed with xz's x86 filter (about 25 MB in all, so that
# it travels within the GPU machine's 64 MiB with the working tree), the
# package's index.js and package.json, and the WebAssembly modules.
#   hosts/node/webgpu_bench_pack.sh PACK_DIR WASM_DIR [NODE_BINARY]
# The folder should be git-ignored (.webgpurun/ is).
set -euo pipefail
pack=$1
wasm=$2
node=${3:-$(command -v node)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$pack/webgpu" "$pack/wasm"
npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error webgpu@0.6.2
pkg=$tmp/node_modules/webgpu
strip -o "$tmp/node" "$node"
strip -o "$tmp/dawn.node" "$pkg/dist/linux-x64/dawn.node"
xz -T1 -c --x86 --lzma2=preset=9e "$tmp/dawn.node" >"$pack/dawn.node.xz"
xz -T1 -c --x86 --lzma2=preset=9e "$tmp/node" >"$pack/node.xz"
cp "$pkg/index.js" "$pkg/package.json" "$pack/webgpu/"
for m in lockstep.wasm lockstep-web.wasm; do
  cp "$wasm/$m" "$wasm/$m.sha256" "$pack/wasm/"
done
du -sb "$pack"
