#!/usr/bin/env bash
# A build that breaks the contract of docs/arithmetic.md §1 is caught:
# 1. core compiled with FMA contraction allowed (-ffp-contract=fast on an
#    FMA target) contains fused multiply-adds, and tests/no_fma_check.sh
#    rejects it, while the project's flags (-ffp-contract=off, same
#    target) pass;
# 2. core does not compile under -ffast-math, -ffinite-math-only or excess
#    precision (x87, FLT_EVAL_METHOD 2): core/ls_arith.h's #error.
# Usage: fma_contraction_check.sh CC OBJDUMP ARCH REPO_ROOT
set -u
cc=$1 objdump=$2 arch=$3 root=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
case $arch in
  x86_64) fma_flag=-mfma; x87_flag="-mfpmath=387" ;;
  aarch64) fma_flag=; x87_flag= ;;  # FMA is baseline on AArch64
  *) echo "fma_contraction_check: unknown architecture '$arch'"; exit 2 ;;
esac
srcs="$root/core/ls_arith.c $root/core/ls_ops32.c $root/core/ls_ops64.c"
build() {  # build NAME FLAGS...: the core's float files into one object each
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  for s in $srcs; do
    "$cc" -std=c99 -O2 -I"$root/core" "$@" -c "$s" \
      -o "$tmp/$name/$(basename "$s" .c).o" 2>"$tmp/$name.err" || return 1
  done
}

build off -ffp-contract=off $fma_flag || bad "the project's flags do not compile: $(cat "$tmp/off.err")"
if bash "$root/tests/no_fma_check.sh" "$objdump" "$arch" "$tmp"/off/*.o >/dev/null 2>&1; then
  ok
else
  bad "-ffp-contract=off $fma_flag: the check rejects the contract-abiding build"
fi
build fast -ffp-contract=fast $fma_flag || bad "-ffp-contract=fast does not compile: $(cat "$tmp/fast.err")"
if out=$(bash "$root/tests/no_fma_check.sh" "$objdump" "$arch" "$tmp"/fast/*.o 2>&1); then
  bad "-ffp-contract=fast $fma_flag: contraction NOT caught"
else
  grep -q "fused multiply-add in" <<<"$out" && ok || bad "unexpected: $out"
fi

expect_error() {  # expect_error PATTERN FLAGS...: ls_arith.c must not compile
  local pattern=$1
  shift
  if "$cc" -std=c99 -O2 -I"$root/core" "$@" -c "$root/core/ls_arith.c" \
       -o "$tmp/x.o" 2>"$tmp/x.err"; then
    bad "core compiled with $*"
  elif grep -q "$pattern" "$tmp/x.err"; then
    ok
  else
    bad "core failed with $* but not by its #error: $(head -3 "$tmp/x.err")"
  fi
}
expect_error "fast-math changes the bits" -ffast-math
expect_error "finite-math-only removes NaN checks" -ffinite-math-only
# x87 arithmetic where the compiler offers it on this target (GCC does on
# x86-64; clang refuses the flag there).
if [ -n "$x87_flag" ] && "$cc" $x87_flag -x c -E -dM /dev/null 2>/dev/null |
    grep -q "__FLT_EVAL_METHOD__ 2"; then
  expect_error "needs FLT_EVAL_METHOD == 0" $x87_flag
fi

echo "fma_contraction_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
