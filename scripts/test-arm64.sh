#!/usr/bin/env bash
# The same bits on ARM64 (docs/arm64.md): cross-compiles lockstep for
# AArch64 with Debian's toolchain into build-arm64/ (or
# $LOCKSTEP_ARM64_BUILD) and runs the exactness checks under qemu-aarch64
# (user mode):
#   1. no fused multiply-add in the AArch64 object code of the backends;
#   2. exactness_digest: the tiny models, the HF fixture and the small GPT-2
#      shapes through the reference, cpu-neon and cpu-generic (1 and 2
#      threads), cached steps == full passes == prefill, every logit and
#      cache word; its digests must equal tests/data/exactness_digests.txt,
#      recorded by the x86-64 build;
#   3. gpt2_backend_test: the kernels one by one (vector exp and GELU,
#      products, attention) on NEON and generic, and the backend tests on
#      small shapes with 1 and 2 threads (the HF fixture is step 2's; the
#      124M, larger-width and 1,024-position tests are left out: minutes
#      each under emulation);
#   4. gpt2_q8_backend_test: the int8 kernel tables (generic, neon and
#      neon-sdot) against the int8 reference, and the CPU backend on int8
#      weights (random models, the HF fixture) with 1 and 2 threads, on
#      qemu's default CPU (dotprod: the neon-sdot table) and again, the
#      kernels, the small model and the fixture, on a Cortex-A53 (no
#      dotprod: the plain neon table).
# Installs what is missing (root, or sudo): g++-aarch64-linux-gnu,
# qemu-user, and the arm64 multiarch -dev packages the build needs. Any
# failure, an install included, fails the script: nothing is skipped.
#
#   bash scripts/test-arm64.sh            # all of the above
#   LOCKSTEP_ARM64_JOBS=4 bash scripts/test-arm64.sh
#   LOCKSTEP_ARM64_BUILD=build-mine bash scripts/test-arm64.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
jobs=${LOCKSTEP_ARM64_JOBS:-$(nproc)}
bdir=${LOCKSTEP_ARM64_BUILD:-build-arm64}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# --- packages -------------------------------------------------------------
host_packages=(g++-aarch64-linux-gnu qemu-user)
arm64_packages=(libssl-dev:arm64 libgtest-dev:arm64 libpcre2-dev:arm64
  libmpfr-dev:arm64)
missing=()
for p in "${host_packages[@]}" "${arm64_packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-arm64: installing ${missing[*]}"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
  fi
  $sudo apt-get update -qq
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/tmp/test-arm64-apt.log 2>&1; then
    tail -30 /tmp/test-arm64-apt.log >&2
    echo "test-arm64: FAILED: could not install ${missing[*]}" >&2
    exit 1
  fi
fi
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
if [ -z "$qemu" ]; then
  echo "test-arm64: FAILED: no qemu-aarch64 after installing qemu-user" >&2
  exit 1
fi
# The arm64 loader and libraries are the multiarch ones under /.
run() { "$qemu" -L / "$@"; }

# --- cross build ----------------------------------------------------------
echo "== arm64: cross-compiling into $bdir/ ($jobs jobs) =="
cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
  -DLOCKSTEP_WASM=OFF -DLOCKSTEP_BENCHMARKS=OFF >/dev/null
ninja -C "$bdir" -j "$jobs" lockstep_backends exactness_digest \
  gpt2_backend_test gpt2_q8_backend_test
built=$(date +%s)
echo "arm64: built in $((built - start)) s (packages included)"

aarch64-linux-gnu-readelf -h "$bdir"/tests/exactness_digest |
  grep -q 'Machine:.*AArch64' || {
  echo "test-arm64: FAILED: $bdir/tests/exactness_digest is not AArch64" >&2
  exit 1
}

# --- 1. no FMA in the AArch64 object code ----------------------------------
echo "== arm64: no fused multiply-add in the backends (objdump) =="
dump="$bdir"/lockstep_backends.objdump.txt
aarch64-linux-gnu-objdump -d --no-show-raw-insn \
  "$bdir"/backends/liblockstep_backends.a >"$dump"
[ -s "$dump" ] || { echo "test-arm64: FAILED: empty objdump" >&2; exit 1; }
grep -q 'fmul' "$dump" || {
  echo "test-arm64: FAILED: no fmul in the objdump (wrong file?)" >&2
  exit 1
}
if grep -E -i '[[:space:]](bf)?(fmla|fmls|fmadd|fmsub|fnmadd|fnmsub|fmlal|fmlsl)[[:alnum:].]*[[:space:]]' "$dump"; then
  echo "test-arm64: FAILED: fused multiply-add in the AArch64 backends" >&2
  exit 1
fi
echo "arm64: no fmla/fmls/fmadd/fmsub/fnmadd/fnmsub"

# --- 2. the digests against the x86-64 build's ------------------------------
echo "== arm64: exactness_digest under qemu-aarch64 =="
run "$bdir"/tests/exactness_digest \
  --check tests/data/exactness_digests.txt
echo "arm64: exactness_digest passed after $(($(date +%s) - start)) s"

# --- 3. the backend tests' kernels and small shapes -------------------------
echo "== arm64: gpt2_backend_test (kernels, small shapes) under qemu =="
run "$bdir"/backends/gpt2_backend_test --gtest_brief=1 \
  --gtest_filter='Isa/Kernels.*:BackendFactory.*:Cpu/Backend.*/cpu_*_x1:Cpu/Backend.*/cpu_*_x2-Cpu/Backend.HfFixture*'

# --- 4. the int8 kernels and backend ------------------------------------------
echo "== arm64: gpt2_q8_backend_test (int8, 1 and 2 threads) under qemu =="
LOCKSTEP_Q8_TEST_THREADS=1,2 run "$bdir"/backends/gpt2_q8_backend_test \
  --gtest_brief=1
echo "== arm64: gpt2_q8_backend_test on a Cortex-A53 (no dotprod) =="
LOCKSTEP_Q8_TEST_THREADS=1,2 "$qemu" -cpu cortex-a53 -L / \
  "$bdir"/backends/gpt2_q8_backend_test --gtest_brief=1 \
  --gtest_filter='Q8Kernels.*:Gpt2Q8Cpu.Small*:Gpt2Q8Cpu.Hf*'

echo "arm64: all passed in $(($(date +%s) - start)) s"
