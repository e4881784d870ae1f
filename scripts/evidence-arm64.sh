#!/usr/bin/env bash
# The x86-64 against ARM64 record (docs/verify.md, docs/arm64.md): the
# AArch64 lockstep CLI, cross-compiled with Debian's toolchain
# (cmake/aarch64-linux-gnu.cmake, as scripts/test-arm64.sh builds it),
# runs `lockstep verify ... --bundle` under qemu-aarch64 on a few seeded
# contexts, every backend it has (reference, cpu-neon, cpu-generic at 1
# and 2 threads), and the x86-64 CLI then checks each bundle with
# `lockstep verify --against` on its own backends: every logit digest,
# per-layer cache digest and reference operation digest of the ARM64 run
# must be the x86-64 run's, bit for bit.
#
# Cases (name: model, options):
#   arm64-hf-gpt2-A:       tests/data/hf-gpt2-A (HF's tiny GPT-2), binary32
#   arm64-hf-gpt2-A-int8:  the same, --quant int8 (quantized on each side)
#   arm64-shakespeare-gpt2: models/shakespeare-gpt2 (the trained model)
#   arm64-shakespeare-gpt2-int8: the same, --quant int8
# each with --contexts $N --max-length $L --threads 1,2; and the tiny
# binary64 models (docs/verify.md "Tiny models"; the reference and the
# every-position pass on ARM64, no wasm there; reference and wasm on
# x86-64), with the defaults of verify (--contexts $T, lengths 1..n_ctx):
#   arm64-tiny4, arm64-tiny64, arm64-tiny128: models/tiny{4,64,128}.lockstep
#
#   LOCKSTEP_NATIVE=build/lockstep bash scripts/evidence-arm64.sh
#   LOCKSTEP_ARM64_BUILD=build-mine LOCKSTEP_ARM64_JOBS=2 bash scripts/evidence-arm64.sh
#   LOCKSTEP_EVIDENCE_CASES="arm64-hf-gpt2-A" bash scripts/evidence-arm64.sh
#   LOCKSTEP_EVIDENCE_DIR=/tmp/ev bash scripts/evidence-arm64.sh   # not docs/evidence
#
# Environment: LOCKSTEP_ARM64_BUILD (cross build folder, default
# build-arm64), LOCKSTEP_ARM64_JOBS (default nproc), LOCKSTEP_NATIVE (the
# x86-64 CLI, default build/lockstep; built beforehand), LOCKSTEP_EVIDENCE_DIR
# (where the bundles go, default docs/evidence), LOCKSTEP_EVIDENCE_CONTEXTS
# and LOCKSTEP_EVIDENCE_MAX_LENGTH (N and L, default 8 and 32: a few
# minutes a case under qemu on a loaded 2-core VM; docs/arm64.md),
# LOCKSTEP_EVIDENCE_TINY_CONTEXTS (T, default 128: seconds a case),
# LOCKSTEP_EVIDENCE_CASES (a space-separated subset of the names above).
# The cross build and the qemu runs are niced. Needs the packages
# scripts/test-arm64.sh installs (run it once, or install them by hand);
# any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
jobs=${LOCKSTEP_ARM64_JOBS:-$(nproc)}
bdir=${LOCKSTEP_ARM64_BUILD:-build-arm64}
native=${LOCKSTEP_NATIVE:-build/lockstep}
out=${LOCKSTEP_EVIDENCE_DIR:-docs/evidence}
contexts=${LOCKSTEP_EVIDENCE_CONTEXTS:-8}
max_length=${LOCKSTEP_EVIDENCE_MAX_LENGTH:-32}
tiny_contexts=${LOCKSTEP_EVIDENCE_TINY_CONTEXTS:-128}
cases=${LOCKSTEP_EVIDENCE_CASES:-arm64-hf-gpt2-A arm64-hf-gpt2-A-int8 arm64-shakespeare-gpt2 arm64-shakespeare-gpt2-int8 arm64-tiny4 arm64-tiny64 arm64-tiny128}

fail() {
  echo "evidence-arm64: FAILED: $*" >&2
  exit 1
}
command -v aarch64-linux-gnu-g++ >/dev/null ||
  fail "no aarch64-linux-gnu-g++ (scripts/test-arm64.sh installs it)"
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
[ -n "$qemu" ] || fail "no qemu-aarch64 (apt-get install qemu-user)"
[ -x "$native" ] || fail "no x86-64 CLI at $native (LOCKSTEP_NATIVE)"
[ "$(uname -m)" = x86_64 ] || fail "the native side must be x86-64"

# --- cross build: the CLI only ----------------------------------------------
echo "== evidence-arm64: cross-compiling lockstep into $bdir/ ($jobs jobs) =="
cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
  -DLOCKSTEP_WASM=OFF -DLOCKSTEP_BENCHMARKS=OFF >/dev/null
nice -n 10 ninja -C "$bdir" -j "$jobs" lockstep
aarch64-linux-gnu-readelf -h "$bdir/lockstep" | grep -q 'Machine:.*AArch64' ||
  fail "$bdir/lockstep is not AArch64"
echo "evidence-arm64: built in $(($(date +%s) - start)) s"

model_of() {
  case $1 in
    arm64-hf-gpt2-A) echo "tests/data/hf-gpt2-A" ;;
    arm64-hf-gpt2-A-int8) echo "tests/data/hf-gpt2-A --quant int8" ;;
    arm64-shakespeare-gpt2) echo "models/shakespeare-gpt2" ;;
    arm64-shakespeare-gpt2-int8) echo "models/shakespeare-gpt2 --quant int8" ;;
    arm64-tiny4 | arm64-tiny64 | arm64-tiny128) echo "${1#arm64-}" ;;
    *) fail "unknown case $1" ;;
  esac
}

# The run's options: the tiny models have one thread and n_ctx positions.
options_of() {
  case $1 in
    arm64-tiny*) echo "--contexts $tiny_contexts" ;;
    *) echo "--contexts $contexts --max-length $max_length --threads 1,2 --completion-tokens 4" ;;
  esac
}
against_options_of() {
  case $1 in
    arm64-tiny*) echo "" ;;
    *) echo "--threads 1,2" ;;
  esac
}

summary=()
for name in $cases; do
  read -r -a model <<<"$(model_of "$name")"
  read -r -a opts <<<"$(options_of "$name")"
  read -r -a against_opts <<<"$(against_options_of "$name")"
  dir="$out/$name"
  rm -rf "$dir"
  echo "== $name: verify under qemu-aarch64 (${model[*]} ${opts[*]}) =="
  t0=$(date +%s)
  nice -n 10 "$qemu" -L / "$bdir/lockstep" verify --model "${model[@]}" \
    "${opts[@]}" --bundle "$dir" --quiet | tee "$dir.arm64.txt"
  t1=$(date +%s)
  grep -q '^lockstep verify: PASSED$' "$dir.arm64.txt" ||
    fail "$name: the ARM64 run did not pass"
  grep -q '"arch": "aarch64"' "$dir/record.json" ||
    fail "$name: the record's machine is not aarch64"
  mv "$dir.arm64.txt" "$dir/arm64-run.txt"
  echo "== $name: verify --against it on x86-64 ($native) =="
  # --against takes the contexts and options from the record; the model
  # is given again (int8 records are quantized here from the binary32
  # model, as on ARM64).
  "$native" verify --model "${model[0]}" --against "$dir" \
    ${against_opts[@]+"${against_opts[@]}"} --quiet |
    tee "$dir/x86-64-against.txt"
  t2=$(date +%s)
  grep -q 'every digest agrees' "$dir/x86-64-against.txt" ||
    fail "$name: x86-64 --against the ARM64 bundle differs"
  summary+=("$name: ARM64 (qemu) $((t1 - t0)) s, x86-64 --against $((t2 - t1)) s, agrees")
done

echo "== evidence-arm64: all agree in $(($(date +%s) - start)) s =="
printf '  %s\n' "${summary[@]}"
