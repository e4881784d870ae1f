#!/usr/bin/env bash
# The full binary32 sweep (docs/numerics.md): every one of the 2^32 inputs
# of exp, tanh and GELU, native scalar core against MPFR-certified exact
# values, every CPU kernel table and the WebAssembly module against the
# scalar core. Usage: tools/sweep32/run_full.sh [BUILD_DIR] [THREADS]
# Writes the report and the per-binade table to tools/sweep32/results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
threads=${2:-2}
ninja -C "$build" sweep32 sweep32_wasm >/dev/null
out=tools/sweep32/results
mkdir -p "$out"
wasm_args=()
if [ -f "$build/tools/sweep32/sweep32.wasm" ] && command -v node >/dev/null; then
  wasm_args=(--wasm "$build/tools/sweep32/sweep32.wasm"
    --script tools/sweep32/sweep32_wasm.mjs)
fi
start=$(date -u +%FT%TZ)
t0=$(date +%s)
{
  echo "# $start, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
  echo "# nice -n 10 $build/sweep32 --threads $threads ${wasm_args[*]}"
  rc=0
  nice -n 10 "$build/sweep32" --threads "$threads" \
    --table "$out/full-sweep-binades.tsv" "${wasm_args[@]}" || rc=$?
  echo "# wall $(($(date +%s) - t0)) s, exit status $rc"
} | tee "$out/full-sweep.txt"
