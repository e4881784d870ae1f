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
# The object code of the carried binary, per kernel (as scripts/cuda.sh
# does for the object file): FFMA only where a division or square root is
# expanded, no tensor-core instruction.
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$bin/cuda_backend_test" 2>/dev/null |
    awk '/Function :/ {f=$3}
         /FFMA/ {ffma[f]++} /FMUL/ {fmul[f]++} /FADD/ {fadd[f]++}
         /MUFU.RCP|MUFU.RSQ/ {mufu[f]++} /HMMA|HGMMA|IMMA/ {mma[f]++}
         /Function :/ {seen[f]=1}
         END {for (k in seen) printf "%-90s FMUL %5d FADD %5d FFMA %4d MUFU.RCP/RSQ %3d MMA %d\n",
              k, fmul[k], fadd[k], ffma[k], mufu[k], mma[k]}' |
    grep exact_kernels | sort >"$out/sass_check.txt"
  grep -E "attention_pass2|logits2" "$out/sass_check.txt"
fi
rc=0
"$bin/cuda_backend_test" --gtest_color=no \
  --gtest_filter="${LOCKSTEP_QUICK_FILTER:-*}" 2>&1 | tee "$out/tests.txt" |
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|differ|Failure|Expected|Which is|at index" |
  head -60
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "cuda_backend_test exit code: $rc"
# The observed prefill (tests/cuda_observer_test.cc), when carried; its
# failure does not start the kernel-variant reruns below.
orc=0
if [ -x "$bin/cuda_observer_test" ]; then
  "$bin/cuda_observer_test" --gtest_color=no 2>&1 | tee "$out/observer.txt" |
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|cuda observer|Failure|Expected|Which is|at index" |
    head -60
  orc=${PIPESTATUS[0]}
  echo "cuda_observer_test exit code: $orc"
fi
if [ "$rc" -ne 0 ]; then
  # Which change: again with each of the newer kernels replaced by the one
  # before it.
  for v in LOCKSTEP_CUDA_ATTN=1 LOCKSTEP_CUDA_ATTN_STEP=1 LOCKSTEP_CUDA_ATTN_Q=32 \
    LOCKSTEP_CUDA_LOGITS=1 LOCKSTEP_CUDA_LN=1 LOCKSTEP_CUDA_OVERLAP=0; do
    env $v "$bin/cuda_backend_test" --gtest_color=no \
      --gtest_filter='CudaBackend.*:CudaGpt2_124M.*' 2>&1 |
      grep -E "^\[  (PASSED|FAILED) |differ" | sed "s/^/$v: /" |
      tee -a "$out/tests.txt" | grep -E "PASSED|FAILED|124M"
  done
fi
if [ "${LOCKSTEP_QUICK_BENCH:-1}" != 0 ]; then
  "$bin/cuda_bench" --repeat "${LOCKSTEP_QUICK_REPEAT:-5}" >"$out/bench.json" \
    2>"$out/bench.txt"
  echo "cuda_bench exit code: $?"
  cat "$out/bench.txt"
fi
[ "$orc" -eq 0 ] || rc=1
exit $rc
