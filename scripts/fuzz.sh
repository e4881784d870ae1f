#!/usr/bin/env bash
# Runs the libFuzzer harnesses of fuzz/ (docs/fuzzing.md) and prints, per
# harness, the executions and the crashes (files crash-*/leak-*/timeout-*/
# oom-* that libFuzzer saved). The long campaign of issue 13 (goal: at
# least 10 million executions per parser, 0 crashes) is this script with a
# large --runs or --seconds; CI runs it bounded (scripts/test.sh).
#
# Usage: scripts/fuzz.sh [--build DIR] [--seconds N | --runs N]
#                        [--jobs N] [--out DIR] [HARNESS...]
#   --build DIR   the build folder configured with -DLOCKSTEP_FUZZ=ON
#                 (default build-fuzz; configured and built if missing)
#   --seconds N   wall time per harness (default 60)
#   --runs N      executions per harness instead of a time limit
#   --jobs N      harnesses run at the same time (default 1)
#   --workers N   processes per harness, sharing its corpus (default 1;
#                 executions are summed over them)
#   --no-build    run the harnesses already in DIR/fuzz (a copied build)
#   --out DIR     logs, new corpus entries and crashes (default
#                 DIR/fuzz-out); the checked-in seeds are only read
#   HARNESS...    default: all six
# Exit status: 1 if any harness crashed or failed to run, else 0.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
seconds=60
runs=""
jobs=1
workers=1
no_build=0
out=""
harnesses=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --no-build) no_build=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | cut -c3-; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_safetensors fuzz_checkpoint
  fuzz_gpt2_packed fuzz_hf_config fuzz_tokenizer fuzz_gpt2_diff)
[ -n "$out" ] || out=$build/fuzz-out
case $build in /*) ;; *) build=$PWD/$build ;; esac

if [ "$no_build" != 1 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    CC=clang-19 CXX=clang++-19 cmake -S "$root" -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WASM=OFF \
      -DLOCKSTEP_BENCHMARKS=OFF -DLOCKSTEP_CUDA=OFF -DLOCKSTEP_FUZZ=ON \
      >/dev/null
  fi
  ninja -C "$build" -j"$(nproc)" "${harnesses[@]}" >/dev/null
fi

# Per-harness limits: the tokenizer's reference BPE is quadratic in a
# pre-token, the differential runs several backends per input.
max_len() {
  case $1 in
    fuzz_tokenizer) echo 2048 ;;
    fuzz_gpt2_diff) echo 512 ;;
    *) echo 65536 ;;
  esac
}

run_one() {
  local h=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/crashes"
  local limit=(-max_total_time="$seconds")
  [ -z "$runs" ] || limit=(-runs="$runs")
  # New inputs go to the output corpus; the seeds are read, not written.
  local w
  for w in $(seq 1 "$workers"); do
    (cd "$dir/crashes" &&
      "$build/fuzz/$h" "${limit[@]}" -max_len="$(max_len "$h")" -timeout=25 \
        -rss_limit_mb=2048 -print_final_stats=1 -seed="$w" \
        "$dir/corpus" "$root/fuzz/corpus/$h" >"$dir/log.$w" 2>&1) || true &
  done
  wait
}

start=$(date +%s)
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
printf '%-18s %14s %10s %8s %s\n' harness executions exec/s crashes note
for h in "${harnesses[@]}"; do
  execs=0
  rate=0
  note=""
  for log in "$out/$h"/log.*; do
    e=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$' | tail -1 || true)
    r=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" |
      grep -o '[0-9]*$' | tail -1 || true)
    if [ -z "$e" ]; then
      # A crash stops libFuzzer before its final stats: the last count.
      e=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1 || true)
      note="stopped early; see $log"
      status=1
    fi
    execs=$((execs + ${e:-0}))
    rate=$((rate + ${r:-0}))
  done
  crashes=$(find "$out/$h/crashes" -type f \( -name 'crash-*' -o \
    -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  [ "$crashes" -eq 0 ] || { note="crash inputs in $out/$h/crashes"; status=1; }
  printf '%-18s %14s %10s %8s %s\n' "$h" "$execs" "$rate" "$crashes" "$note"
done
echo "fuzz.sh: $(( $(date +%s) - start )) s; logs and corpora under $out"
exit $status
