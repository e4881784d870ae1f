#!/usr/bin/env bash
# Grouped int8 against binary32 on the CPU (issue 9, docs/int8.md), side by
# side in one run on one machine, each figure with the machine's limits
# measured in the same run (`lockstep bench --quant none,int8`):
#   bash scripts/bench-int8.sh [LOCKSTEP_BINARY] [OUT_DIR] [Q8_TEST_BINARY]
# Defaults: build/lockstep, bench-results/int8-<UTC time>,
# build/backends/gpt2_q8_backend_test (run first when present: the int8
# kernels and backend against the int8 reference on this machine's ISA).
#  1. scaling.json: decode (positions 0-127) and prefill of 128 and 512
#     tokens at 1, 2, 4, ... threads up to the number of CPUs;
#  2. twocore.json: pinned to two CPUs (taskset -c 2,3), 2 threads, to
#     compare with 2-core machines (the llama.cpp Q8_0 figures).
# On the GPU machine's host use a static build (scripts/bench-scaling.sh
# says how).
set -euo pipefail
bin=${1:-build/lockstep}
out=${2:-bench-results/int8-$(date -u +%Y%m%dT%H%M%SZ)}
test_bin=${3:-build/backends/gpt2_q8_backend_test}
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
  echo "int8 flags: $(grep -m1 -o -w -E 'avx512_vnni|avx_vnni|amx_int8' /proc/cpuinfo | sort -u | xargs)"
  echo "thread counts: $counts"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"
if [ -x "$test_bin" ]; then
  echo "== exactness: $test_bin =="
  "$test_bin" --gtest_brief=1 2>&1 | tail -3 | tee "$out/exactness.txt"
fi
echo "== scaling: threads $counts, binary32 and int8 =="
"$bin" bench --quant none,int8 --threads "$counts" --repeat 3 \
  --prompts 128,512 --no-long --json >"$out/scaling.json"
if command -v taskset >/dev/null && [ "$cpus" -ge 4 ]; then
  echo "== two CPUs (taskset -c 2,3) =="
  taskset -c 2,3 "$bin" bench --quant none,int8 --threads 2 --repeat 5 \
    --prompts 128 --no-long --json >"$out/twocore.json"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
echo "results in $out"
