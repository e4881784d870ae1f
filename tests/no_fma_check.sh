#!/usr/bin/env bash
# No fused multiply-add in object code (docs/arithmetic.md §1.2).
# Usage: no_fma_check.sh OBJDUMP ARCH FILE...   (ARCH: x86_64 or aarch64)
# Fails when objdump is missing or fails, when a file is missing or its
# disassembly holds no floating-point multiply at all (the wrong file, or
# nothing compiled), and when any fused form appears:
# - x86-64: FMA3/FMA4/AVX-512 vfmadd*, vfmsub*, vfnmadd*, vfnmsub*,
#   vfmaddsub*, vfmsubadd*;
# - AArch64: fmla, fmls, fmadd, fmsub, fnmadd, fnmsub (scalar and vector,
#   by element too), fmlal/fmlsl (half-precision widening) and the
#   bfloat16 bfmla*/bfmlal*.
set -u
objdump=$1
arch=$2
shift 2
case $arch in
  x86_64 | AMD64 | amd64)
    fused='[[:space:]]v?f(n)?m(add|sub)(sub|add)?[0-9a-z]*[[:space:]]'
    mul='[[:space:]]v?mul(ss|sd|ps|pd)[[:space:]]' ;;
  aarch64 | arm64)
    fused='[[:space:]](bf)?(fmla|fmls|fmadd|fmsub|fnmadd|fnmsub|fmlal|fmlsl)[0-9a-z.]*[[:space:]]'
    mul='[[:space:]]fmul[[:space:]]' ;;
  *) echo "no_fma_check: unknown architecture '$arch'" >&2; exit 2 ;;
esac
command -v "$objdump" >/dev/null 2>&1 ||
  { echo "no_fma_check: FAILED: objdump '$objdump' not found" >&2; exit 1; }
[ $# -gt 0 ] || { echo "no_fma_check: FAILED: no files" >&2; exit 1; }
status=0
for f in "$@"; do
  if [ ! -s "$f" ]; then
    echo "no_fma_check: FAILED: '$f' is missing or empty" >&2
    status=1
    continue
  fi
  if ! dump=$("$objdump" -d --no-show-raw-insn "$f" 2>&1); then
    echo "no_fma_check: FAILED: $objdump could not read '$f': $dump" >&2
    status=1
    continue
  fi
  if ! grep -Eqi "$mul" <<<"$dump"; then
    echo "no_fma_check: FAILED: no floating-point multiply in '$f' (wrong file?)" >&2
    status=1
    continue
  fi
  if hits=$(grep -Ei "$fused" <<<"$dump"); then
    echo "no_fma_check: FAILED: fused multiply-add in '$f':" >&2
    head -5 <<<"$hits" >&2
    status=1
    continue
  fi
  echo "no_fma_check: $f: no fused multiply-add ($arch)"
done
exit $status
