#!/usr/bin/env bash
# The whole test suite: set up, build, run every test; then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer. CI runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

echo "== format: clang-format (Google style) on every C/C++ file =="
files=$(git ls-files '*.c' '*.h' '*.cc' '*.cu' 2>/dev/null || true)
[ -z "$files" ] || clang-format --dry-run --Werror $files

echo "== tests (Release) =="
ctest --test-dir build -j "$jobs" --output-on-failure

echo "== ARM64: cross-compiled, exactness under qemu-aarch64 (scripts/test-arm64.sh, docs/arm64.md) =="
bash scripts/test-arm64.sh

# Frama-C and Gappa (label prover) check the source, not a binary: once is enough.
# The sanitizer builds compile at -O1 with line tables only (-g1): half the
# compile time of -O2 -g for the heaviest test file under ASan (30 s ->
# 15 s), reports still name file and line, and ASan's own advice is -O1.
# The bits must not depend on the optimisation level, so the same byte
# comparisons passing at -O1 here and -O3 above is itself a check. No
# benchmarks: no test runs them.
san_flags="-O1 -g1 -DNDEBUG"
echo "== tests (ASan + UBSan) =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$san_flags" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$san_flags" \
  -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BENCHMARKS=OFF >/dev/null
ninja -C build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j "$jobs" --output-on-failure --label-exclude 'slow|prover'

# The same sanitizers under clang, whose UBSan also has float-cast-overflow
# in its default set (a NaN converted to int was undefined behaviour in
# ls_exp32 until docs/arithmetic.md §3.4): the core's arithmetic and model
# tests, run directly (the rest of the suite runs under GCC above).
echo "== core tests (clang, ASan + UBSan incl. float-cast-overflow) =="
CC=clang-19 CXX=clang++-19 cmake -S . -B build-clang-asan -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKSTEP_SANITIZE=ON \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$san_flags" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$san_flags" \
  -DLOCKSTEP_WASM=OFF -DLOCKSTEP_BENCHMARKS=OFF >/dev/null
clang_tests="arith_test ops_test sampler_test tiny_model_test gpt2_core_test gpt2_edges_test"
ninja -C build-clang-asan -j "$jobs" $clang_tests
for t in $clang_tests; do
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    build-clang-asan/tests/$t --gtest_brief=1
done

# The libFuzzer harnesses (fuzz/, docs/fuzzing.md), each for a bounded
# time over its seed corpus: two at a time, about a minute in all after
# the build. The long campaign is scripts/fuzz.sh with a large --runs.
echo "== fuzz: each harness 20 s over its seeds (scripts/fuzz.sh) =="
bash scripts/fuzz.sh --seconds 20 --jobs 2
