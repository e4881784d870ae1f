#!/usr/bin/env bash
# Runs lockstep's CPU benchmarks (docs/benchmarks.md) and keeps their JSON:
#   bash scripts/bench.sh [OUT_DIR]     (default bench-results/<UTC time>)
# Each file records the machine's own limits measured in the same run. Run
# on an otherwise idle machine: the numbers are medians, but a busy second
# core still halves two-thread results. Takes about 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
out=${1:-bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
  echo "cores: $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

echo "bench: elementary functions and tiny models (build/micro_bench)"
build/micro_bench --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$out/micro_bench.json"

echo "bench: GPT-2 124M decode and prefill (lockstep bench)"
build/lockstep bench --repeat 5 --json >"$out/lockstep_bench.json"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
echo "bench: results in $out"
