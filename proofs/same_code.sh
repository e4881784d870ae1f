#!/usr/bin/env bash
# Checks that the ACSL annotations change no compiled code: compiles the
# proved core files as they are and as of a git revision (one before the
# annotations) with the Release flags, and compares the disassembly.
#   bash proofs/same_code.sh <rev>
set -euo pipefail
rev="${1:?usage: same_code.sh <git revision to compare with>}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old/core" "$work/new"
cd "$root"
for f in $(git ls-tree --name-only "$rev" core/); do
  git show "$rev:$f" >"$work/old/$f"
done
flags="-O3 -DNDEBUG -fPIC -ffp-contract=off -fno-fast-math -fno-math-errno
  -fno-unsafe-math-optimizations -Wall -Wextra -Werror
  -fno-semantic-interposition -std=c99"
status=0
for f in ls_arith ls_ops64 ls_ops32 ls_tiny; do
  # shellcheck disable=SC2086
  cc -I"$work/old/core" $flags -c "$work/old/core/$f.c" -o "$work/old/$f.o"
  # shellcheck disable=SC2086
  cc -Icore $flags -c "core/$f.c" -o "$work/new/$f.o"
  a="$(objdump -d --no-show-raw-insn "$work/old/$f.o" | tail -n +4 | md5sum)"
  b="$(objdump -d --no-show-raw-insn "$work/new/$f.o" | tail -n +4 | md5sum)"
  if [ "$a" = "$b" ]; then
    echo "same code: core/$f.c"
  else
    echo "DIFFERENT code: core/$f.c"
    status=1
  fi
done
exit $status
