#!/usr/bin/env bash
# The CUDA backend on the GPU machine, in one call (docs/cuda.md): build with
# -DLOCKSTEP_CUDA=ON, check the object code (no FMA, no tensor-core
# instruction in the binary32 kernels), run the byte-comparison tests
# (tests/cuda_backend_test.cc: binary32 and int8, the trained model), the
# CLI on the GPU (`lockstep logits|generate --backend cuda` against
# `--backend cpu`), then the benchmark (cuda_bench: binary32 and int8
# decode and prefill, and the device's copy rate and non-FMA rate measured
# in the same run; batches of 1, 8 and 32 sequences), the cost of
# exactness (cuda_exactness_bench: the exact kernels against the same
# kernels with FMA and split sums, interleaved), and Hugging Face
# transformers on the same GPU for comparison (scripts/hf_gpu_bench.py:
# eager, and static cache + torch.compile). Everything goes to OUT_DIR:
# log.txt, build.txt, tests.txt, cli.txt, bench.json, bench.txt,
# exactness.json, exactness.txt, hf.json, machine.txt, sass_check.txt
# (LOCKSTEP_SKIP_HF=1: no Hugging Face run; LOCKSTEP_CUDA_VARIANTS=0: the
# tests are not run again with each decode product and int8 unfused).
#   bash scripts/cuda.sh [OUT_DIR]
# OUT_DIR defaults to $OUT (the device tool's folder) or
# bench-results/cuda-<UTC time>.
#
# The GPU machine has nvcc, CMake and a compiler but none of lockstep's
# Debian libraries. When the folder .devdeb/ holds their .deb files
# (fetched on the development machine with `apt-get download`, see
# docs/cuda.md; another folder: LOCKSTEP_DEVDEB), they are unpacked into a private prefix (never into /)
# and CMake is pointed at it; the OpenSSL and GoogleTest libraries are
# linked statically.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-bench-results/cuda-$(date -u +%Y%m%dT%H%M%SZ)}}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
jobs=$(nproc)
# The tests read fixtures by absolute path (LOCKSTEP_SOURCE_DIR).
src=$PWD

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) CPUs"
  grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv 2>&1 || true
  nvcc --version 2>&1 | tail -2 || true
  cmake --version | head -1
  c++ --version | head -1
} | tee "$out/machine.txt"

cmake_args=()
prefix=/tmp/lockstep-devprefix
debs=${LOCKSTEP_DEVDEB:-.devdeb}
if compgen -G "$debs/*.deb" >/dev/null; then
  echo "== unpacking $(ls "$debs"/*.deb | wc -l) Debian packages into $prefix =="
  rm -rf "$prefix" && mkdir -p "$prefix"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$prefix"; done
  lib=$prefix/usr/lib/x86_64-linux-gnu
  # .pc files name prefix=/usr: point them at the unpacked tree.
  sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" \
    "$lib"/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc
  pkgconf_wrapper=$prefix/pkg-config
  cat >"$pkgconf_wrapper" <<WRAP
#!/bin/sh
export PKG_CONFIG_PATH=$lib/pkgconfig:$prefix/usr/share/pkgconfig
if command -v /usr/bin/pkg-config >/dev/null 2>&1; then
  exec /usr/bin/pkg-config "\$@"
fi
LD_LIBRARY_PATH=$lib exec $prefix/usr/bin/pkgconf "\$@"
WRAP
  chmod +x "$pkgconf_wrapper"
  # Multiarch headers (opensslconf.h, gmp.h) live under include/<triplet>.
  export CPATH=$prefix/usr/include/x86_64-linux-gnu
  cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix/usr"
    -DOPENSSL_ROOT_DIR="$prefix/usr" -DOPENSSL_USE_STATIC_LIBS=TRUE
    -DPKG_CONFIG_EXECUTABLE="$pkgconf_wrapper"
    -DMPFR_LIB="$lib/libmpfr.a")
  export LOCKSTEP_RUN_LIBS=$lib
fi
nvcc_path=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
generator=Ninja
command -v ninja >/dev/null || generator="Unix Makefiles"

echo "== configure =="
cmake -S . -B build-gpu -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DLOCKSTEP_WASM=OFF -DLOCKSTEP_BENCHMARKS=OFF -DLOCKSTEP_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$nvcc_path" \
  "${cmake_args[@]}" || { echo "cuda.sh: configure failed"; exit 1; }

echo "== build =="
cmake --build build-gpu -j "$jobs" --target cuda_backend_test cuda_bench \
  cuda_exactness_bench cuda_observer_test >"$out/build.txt" 2>&1
rc=$?
grep -E "error|warning|Used [0-9]+ registers|stack frame" "$out/build.txt" |
  grep -v "^ptxas info    : Function properties" | head -80
if [ $rc -ne 0 ]; then
  tail -60 "$out/build.txt"
  echo "cuda.sh: build failed"
  exit 1
fi

run() { LD_LIBRARY_PATH=${LOCKSTEP_RUN_LIBS:-} "$@"; }

echo "== object code: no FMA, no tensor-core instruction =="
obj=build-gpu/backends/CMakeFiles/lockstep_cuda.dir/cuda/cuda_backend.cu.o
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$obj" >"$out/sass.txt" 2>&1
  # Per kernel: multiplies and adds, and the fused or tensor-core forms.
  # FFMA may appear only where a division or square root is expanded
  # (MUFU.RCP/RSQ refined by FFMA to the correctly rounded result);
  # HFMA2.MMA with RZ operands is ptxas's idiom for loading a constant.
  # No HMMA/HGMMA/IMMA (tensor cores) anywhere. IDP.4A: the int8
  # products' exact integer dot products (__dp4a).
  awk '/Function :/ {f=$3}
       /FFMA/ {ffma[f]++} /FMUL/ {fmul[f]++} /FADD/ {fadd[f]++}
       /MUFU.RCP|MUFU.RSQ/ {mufu[f]++} /HMMA|HGMMA|IMMA/ {mma[f]++}
       /LDG/ {ldg[f]++} /IDP/ {idp[f]++}
       /Function :/ {seen[f]=1}
       END {for (k in seen) printf "%-70s FMUL %5d FADD %5d FFMA %4d MUFU.RCP/RSQ %3d MMA %d LDG %d IDP %d\n",
            substr(k,1,70), fmul[k], fadd[k], ffma[k], mufu[k], mma[k], ldg[k], idp[k]}' \
    "$out/sass.txt" | sort | tee "$out/sass_check.txt"
  echo "tensor-core instructions: $(grep -cE 'HMMA|HGMMA|IMMA' "$out/sass.txt")" |
    tee -a "$out/sass_check.txt"
  rm -f "$out/sass.txt"
  # The cost-of-exactness variant (never used by the backend): its products
  # do contain FFMA.
  fast_obj=build-gpu/backends/CMakeFiles/lockstep_cuda_fast.dir/cuda/cuda_backend_fast.cu.o
  if [ -f "$fast_obj" ]; then
    echo "fast variant (cuda_backend_fast.cu, not the spec's bits): FFMA $(cuobjdump -sass "$fast_obj" | grep -c FFMA), in matvec/matmul/logits kernels $(cuobjdump -sass "$fast_obj" | awk '/Function :/ {f=$3} /FFMA/ && f ~ /matvec|matmul|logits/ {n++} END {print n+0}')" |
      tee -a "$out/sass_check.txt"
  fi
else
  echo "cuobjdump not found" | tee "$out/sass_check.txt"
fi

echo "== tests =="
run ./build-gpu/tests/cuda_backend_test --gtest_color=no 2>&1 |
  tee "$out/tests.txt"
test_rc=${PIPESTATUS[0]}
echo "cuda_backend_test exit code: $test_rc"
# The observed prefill (tests/cuda_observer_test.cc: every tap against the
# reference's, the observer changes no bit, one ulp named at its operation).
run ./build-gpu/tests/cuda_observer_test --gtest_color=no 2>&1 |
  tee "$out/observer.txt"
observer_rc=${PIPESTATUS[0]}
echo "cuda_observer_test exit code: $observer_rc"
# The same tests with each decode product alone (same bits required).
variants="1 2 3 4"
[ "${LOCKSTEP_CUDA_VARIANTS:-1}" = 0 ] && variants=
for v in $variants; do
  LOCKSTEP_CUDA_MATVEC=$v run ./build-gpu/tests/cuda_backend_test \
    --gtest_color=no --gtest_filter='CudaBackend.*:CudaGpt2_124M.*' 2>&1 |
    grep -E "^\[  (PASSED|FAILED) |differ|Failure" | sed "s/^/matvec $v: /" |
    tee -a "$out/tests.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || test_rc=1
done

# int8 with the quantization as its own launch (same bits required).
if [ -n "$variants" ]; then
  LOCKSTEP_CUDA_Q8_FUSE=0 run ./build-gpu/tests/cuda_backend_test \
    --gtest_color=no --gtest_filter='CudaQ8*:CudaTrained.*' 2>&1 |
    grep -E "^\[  (PASSED|FAILED) |differ|Failure" |
    sed "s/^/int8 unfused: /" | tee -a "$out/tests.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || test_rc=1
fi
# On a failure, the binary32 tests again with attention_kernel everywhere
# (LOCKSTEP_CUDA_ATTN=1), with plain launches (LOCKSTEP_CUDA_PDL=0), with
# both, and with each of the 2026-12-02 evening kernels replaced by the one
# before it (pass attention, decode attention, LayerNorm, logits, the
# overlapped copies), to tell which change a difference comes from.
if [ "$test_rc" -ne 0 ]; then
  for v in LOCKSTEP_CUDA_ATTN=1 LOCKSTEP_CUDA_PDL=0 \
    "LOCKSTEP_CUDA_ATTN=1 LOCKSTEP_CUDA_PDL=0" LOCKSTEP_CUDA_ATTN=2 \
    LOCKSTEP_CUDA_ATTN_STEP=1 LOCKSTEP_CUDA_ATTN_Q=32 LOCKSTEP_CUDA_LOGITS=1 \
    LOCKSTEP_CUDA_LN=1 LOCKSTEP_CUDA_OVERLAP=0; do
    (
      export $v
      run ./build-gpu/tests/cuda_backend_test --gtest_color=no \
        --gtest_filter='CudaBackend.*:CudaGpt2_124M.*:CudaBatch.*' 2>&1 |
        grep -E "^\[  (PASSED|FAILED) |differ|Failure" | sed "s/^/$v: /" |
        tee -a "$out/tests.txt"
    )
  done
fi
if [ "$test_rc" -ne 0 ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer on the small int8 tests (a test failed) =="
  run timeout 90 compute-sanitizer --tool memcheck ./build-gpu/tests/cuda_backend_test \
    --gtest_color=no --gtest_filter='CudaQ8.Small*:CudaQ8.Status*' 2>&1 |
    grep -v "^\[ *RUN\|^\[ *OK" | head -40
fi

echo "== benchmark =="
run ./build-gpu/cuda_bench --repeat 5 >"$out/bench.json" 2>"$out/bench.txt"
bench_rc=$?
cat "$out/bench.txt"
echo "cuda_bench exit code: $bench_rc"

echo "== the cost of exactness: exact kernels against FMA and split sums =="
run ./build-gpu/cuda_exactness_bench --repeat 5 >"$out/exactness.json" \
  2>"$out/exactness.txt"
exact_rc=$?
cat "$out/exactness.txt"
echo "cuda_exactness_bench exit code: $exact_rc"
[ $exact_rc -eq 0 ] || bench_rc=1

echo "== the CLI on the GPU: --backend cuda against --backend cpu =="
cmake --build build-gpu -j "$jobs" --target lockstep >>"$out/build.txt" 2>&1 ||
  echo "cuda.sh: building lockstep failed (build.txt)"
{
  model=models/shakespeare-gpt2
  toks=33676,4720,25,198,1,2,3,500,50256,7,11,13
  for be in cuda cpu; do
    run ./build-gpu/lockstep logits --model $model --tokens $toks \
      --all-positions --backend $be --out "/tmp/cli-logits-$be.f32" ||
      echo "logits --backend $be failed"
    run ./build-gpu/lockstep generate --model $model --tokens 33676,4720,25 \
      --generate 48 --backend $be >"/tmp/cli-gen-$be.txt" 2>&1 ||
      echo "generate --backend $be failed"
  done
  cmp /tmp/cli-logits-cuda.f32 /tmp/cli-logits-cpu.f32 &&
    echo "logits: $(stat -c %s /tmp/cli-logits-cuda.f32) bytes, cuda == cpu"
  diff <(grep -v -i 'backend\|tok/s\|seconds\| ms' /tmp/cli-gen-cuda.txt) \
    <(grep -v -i 'backend\|tok/s\|seconds\| ms' /tmp/cli-gen-cpu.txt) &&
    echo "generate: same text on cuda and cpu"
  cat /tmp/cli-gen-cuda.txt
  # The same on the trained model converted to grouped int8 (make_gpt2_q8_backend
  # reaches the CUDA int8 backend for --backend cuda; cpu runs its int8 kernels).
  q8=/tmp/cli-shakespeare-q8.lockstep
  if run ./build-gpu/lockstep convert $model "$q8" --quant int8 >/dev/null; then
    for be in cuda cpu; do
      run ./build-gpu/lockstep logits --model "$q8" --tokens $toks \
        --all-positions --backend $be --out "/tmp/cli-q8-logits-$be.f32" ||
        echo "int8 logits --backend $be failed"
      run ./build-gpu/lockstep generate --model "$q8" --tokens 33676,4720,25 \
        --generate 48 --backend $be >"/tmp/cli-q8-gen-$be.txt" 2>&1 ||
        echo "int8 generate --backend $be failed"
    done
    cmp /tmp/cli-q8-logits-cuda.f32 /tmp/cli-q8-logits-cpu.f32 &&
      echo "int8 logits: $(stat -c %s /tmp/cli-q8-logits-cuda.f32) bytes, cuda == cpu"
    diff <(grep -v -i 'backend\|tok/s\|seconds\| ms' /tmp/cli-q8-gen-cuda.txt) \
      <(grep -v -i 'backend\|tok/s\|seconds\| ms' /tmp/cli-q8-gen-cpu.txt) &&
      echo "int8 generate: same text on cuda and cpu"
  else
    echo "convert --quant int8 failed"
  fi
} 2>&1 | tee "$out/cli.txt"

if [ -z "${LOCKSTEP_SKIP_HF:-}" ]; then
  echo "== Hugging Face transformers on the same GPU (float32: eager, static cache + torch.compile) =="
  PYTHONUNBUFFERED=1 timeout 300 python3 scripts/hf_gpu_bench.py >"$out/hf.json" &&
    cat "$out/hf.json" || echo "hf_gpu_bench.py failed"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1 | tee -a "$out/machine.txt" || true
[ $test_rc -eq 0 ] && [ "$observer_rc" -eq 0 ] && [ $bench_rc -eq 0 ]
