#!/usr/bin/env bash
# A short iteration on the GPU machine (docs/cuda.md): runs cuda_backend_test
# and cuda_bench built elsewhere (the development VM) and carried in .cudabin/
# (xz-compressed; `carry: [".cudabin"]`), so that the device's time goes to
# the tests and the benchmark, not to the build. scripts/cuda.sh is the whole
# run (build, object-code check, tests, CLI, benchmarks) for the records.
#   bash scripts/cuda_quick.sh [OUT_DIR] [SOURCE_DIR]
# SOURCE_DIR: the source tree the binaries were configured in (the tests
# read their fixtures by that absolute path, LOCKSTEP_SOURCE_DIR); it is made
# a link to this checkout when it does not exist here.
# LOCKSTEP_QUICK_BENCH=0 skips the benchmark, LOCKSTEP_QUICK_REPEAT sets its
# --repeat (5); LOCKSTEP_QUICK_FILTER narrows the tests (a gtest filter).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-bench-results/cuda-quick}}
src=${2:-/tmp/cudasnap}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
[ -e "$src" ] || ln -s "$PWD" "$src"
bin=/tmp/cudabin
mkdir -p "$bin"
for f in .cudabin/*.xz; do xz -dc "$f" >"$bin/$(basename "$f" .xz)"; done
chmod +x "$bin"/*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
ldd "$bin/cuda_backend_test" | grep "not found"
rc=0
"$bin/cuda_backend_test" --gtest_color=no \
  --gtest_filter="${LOCKSTEP_QUICK_FILTER:-*}" 2>&1 | tee "$out/tests.txt" |
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|differ|Failure|Expected|Which is|at index" |
  head -60
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "cuda_backend_test exit code: $rc"
if [ "$rc" -ne 0 ]; then
  # Which change: again with attention_kernel everywhere.
  LOCKSTEP_CUDA_ATTN=1 "$bin/cuda_backend_test" --gtest_color=no \
    --gtest_filter='CudaBackend.*:CudaGpt2_124M.*' 2>&1 |
    grep -E "^\[  (PASSED|FAILED) |differ" | sed "s/^/attention 1: /" |
    tee -a "$out/tests.txt"
fi
if [ "${LOCKSTEP_QUICK_BENCH:-1}" != 0 ]; then
  "$bin/cuda_bench" --repeat "${LOCKSTEP_QUICK_REPEAT:-5}" >"$out/bench.json" \
    2>"$out/bench.txt"
  echo "cuda_bench exit code: $?"
  cat "$out/bench.txt"
fi
exit $rc
