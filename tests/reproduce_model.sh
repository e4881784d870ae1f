#!/usr/bin/env bash
# Retrains a shipped tiny model from scratch with the shipped settings and
# requires a byte-identical checkpoint (weights, header and provenance).
# Usage: reproduce_model.sh LOCKSTEP_BINARY REPO_ROOT CONTEXT
set -u
bin=$1
root=$2
n=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shipped="$root/models/tiny$n.lockstep"
"$bin" train --context "$n" --out "$tmp/tiny$n.lockstep" >"$tmp/log" 2>&1 || {
  cat "$tmp/log"
  echo "reproduce tiny$n: 0 passed, 1 failed"
  exit 1
}
if cmp "$tmp/tiny$n.lockstep" "$shipped"; then
  echo "reproduce tiny$n: byte-identical to $shipped ($(sha256sum <"$shipped" | cut -c1-16)...)"
  echo "reproduce tiny$n: 1 passed, 0 failed"
else
  echo "reproduce tiny$n: the retrained checkpoint differs from $shipped"
  echo "reproduce tiny$n: 0 passed, 1 failed"
  exit 1
fi
