#!/usr/bin/env bash
# Runs every certificate in numerics/ (Sollya, then Gappa), then check.py,
# which parses each certified bound, combines them where a bound is written
# out by hand (softmax, LayerNorm's second pass), compares each with its
# goal and prints one line per claim. Exits non-zero if a tool is missing,
# a script fails or a bound misses its goal. docs/numerics.md §2.
#   numerics/run.sh [--keep DIR]   (DIR keeps the raw outputs)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
keep=""
if [ "${1:-}" = "--keep" ]; then keep="${2:?--keep needs a folder}"; fi
for tool in gappa sollya python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "numerics: $tool not found (scripts/setup.sh installs gappa and sollya)" >&2
    exit 1
  fi
done
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  out="$(cd "$keep" && pwd)"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
cd "$here"
start=$(date +%s%N)
run() { # NAME COMMAND...: output to NAME.out, status to NAME.rc
  local name="$1"
  shift
  local t0
  t0=$(date +%s%N)
  set +e
  "$@" >"$out/$name.out" 2>&1
  echo $? >"$out/$name.rc"
  set -e
  echo "$name $((($(date +%s%N) - t0) / 1000000))" >>"$out/times"
}
: >"$out/times"
run exp64.sollya sollya exp64.sollya
for g in exp64 exp64_fpminimax11 gelu64_pos gelu64_neg gelu64_pos_wide \
  gelu64_neg_wide softmax64 layernorm64 layernorm64_tail; do
  run "$g.g" gappa -Eprecision=150 "$g.g"
done
status=0
python3 check.py "$out" || status=$?
echo "numerics: $((($(date +%s%N) - start) / 1000000)) ms"
exit $status
