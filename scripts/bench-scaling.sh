#!/usr/bin/env bash
# Thread scaling and time to first token (issue 8, docs/benchmarks.md), in
# one run on one machine, every figure paired with this machine's own
# limits measured in the same run (`lockstep bench`):
#   bash scripts/bench-scaling.sh [LOCKSTEP_BINARY] [OUT_DIR]
# Defaults: build/lockstep and bench-results/scaling-<UTC time>.
#  1. scaling.json: decode (positions 0-127) and a 512-token prefill into
#     the cache at 1, 2, 4, 8, ... threads up to the number of CPUs;
#  2. twocore.json: pinned to two CPUs (taskset), 2 threads, time to
#     first token for 128/512/1000-token prompts (prefill against stepping)
#     and decode at positions 896-1023, to compare with 2-core machines;
#  3. long_all.json: all CPUs, decode at positions 0-127 and 896-1023.
# Used on the GPU machine's 16-CPU host (no Debian libraries there: run a
# static build, e.g. `cmake -S . -B build-static -DLOCKSTEP_WASM=OFF
# -DLOCKSTEP_BENCHMARKS=OFF -DCMAKE_EXE_LINKER_FLAGS=-static
# -DOPENSSL_USE_STATIC_LIBS=TRUE
# -DOPENSSL_CRYPTO_LIBRARY=/usr/lib/x86_64-linux-gnu/libcrypto.a
# -Dpkgcfg_lib_PCRE2_pcre2-8=/usr/lib/x86_64-linux-gnu/libpcre2-8.a`:
# without the last three the link picks the shared libcrypto and pcre2).
set -euo pipefail
bin=${1:-build/lockstep}
out=${2:-bench-results/scaling-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
cpus=$(nproc)
counts=1
for t in 2 4 8 16 32 64 128; do
  [ "$t" -le "$cpus" ] && counts="$counts,$t"
done
[ "$((cpus & (cpus - 1)))" -eq 0 ] || counts="$counts,$cpus"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
  echo "cpus: $cpus"
  echo "thread counts: $counts"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"
lscpu >"$out/lscpu.txt" 2>/dev/null || true

echo "== scaling: threads $counts =="
"$bin" bench --threads "$counts" --repeat 3 --prompts 512 --no-long --json \
  >"$out/scaling.json"
if command -v taskset >/dev/null && [ "$cpus" -ge 4 ]; then
  echo "== two CPUs (taskset -c 2,3) =="
  taskset -c 2,3 "$bin" bench --threads 2 --repeat 3 \
    --prompts 128,512,1000 --json >"$out/twocore.json"
fi
echo "== all CPUs, long contexts =="
"$bin" bench --threads "$cpus" --repeat 3 --prompts 128 --json \
  >"$out/long_all.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
echo "results in $out"
