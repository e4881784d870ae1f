#!/bin/sh
# The non-FMA peak kernels (bench/machine_limits.cc) must execute what they
# count: 8 multiplies and 8 additions per round. GCC once proved seven of
# the addition chains constant and dropped them, which inflated the "peak"
# by 16/9. Usage: peak_kernel_check.sh OBJDUMP ARCHIVE
set -eu
objdump=$1 lib=$2
[ -s "$lib" ] || { echo "peak_kernel_check: no archive $lib" >&2; exit 1; }
dump=$("$objdump" -d --no-show-raw-insn "$lib") ||
  { echo "peak_kernel_check: $objdump failed" >&2; exit 1; }
found=0
for f in $(printf '%s\n' "$dump" | sed -n 's/^[0-9a-f]* <\(.*peak_[a-z0-9]*El\)>:$/\1/p'); do
  found=$((found + 1))
  # The round loop is the only backward conditional jump in the body;
  # count the multiplies and additions from the body's start to it.
  counts=$(printf '%s\n' "$dump" | awk -v f="<$f>:" '
    $0 ~ f { on = 1; next }
    on && /^$/ { exit }
    on && /[[:space:]]v?mulps[[:space:]]/ { m++ }
    on && /[[:space:]]v?addps[[:space:]]/ { a++ }
    on && /[[:space:]]jne[[:space:]]/ { print m + 0, a + 0; exit }')
  echo "$f: multiplies additions in the loop: $counts"
  [ "$counts" = "8 8" ] || { echo "peak_kernel_check: FAILED for $f" >&2; exit 1; }
done
[ "$found" -ge 1 ] || { echo "peak_kernel_check: no peak kernel found" >&2; exit 1; }
