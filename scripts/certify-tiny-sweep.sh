#!/bin/bash
# The full tiny4 sweep, sharded by first byte (shard i/256 = first byte i).
# usage: scripts/certify-tiny-sweep.sh BIN OUTDIR THREADS [FIRST LAST] (FIRST > LAST: descending)
# Each finished shard's JSON becomes one line of OUTDIR/sweep.jsonl,
# written atomically (a new file renamed over the old); shards already in
# it are skipped, so a rerun resumes.
BIN=$1; OUT=$2; T=$3; FIRST=${4:-0}; LAST=${5:-255}
J=$OUT/sweep.jsonl
touch "$J"
if [ "$FIRST" -le "$LAST" ]; then ORDER=$(seq "$FIRST" "$LAST"); else ORDER=$(seq "$FIRST" -1 "$LAST"); fi
for i in $ORDER; do
  grep -q "\"shard\": *\"$i/256\"" "$J" && continue
  s=$(date +%s.%N)
  "$BIN" certify-tiny --model models/tiny4.lockstep --all-inputs \
    --shard "$i/256" --threads "$T" --json >"$OUT/.shard.tmp" 2>/dev/null
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then echo "shard $i: status $rc"; continue; fi
  { cat "$J"; tr -d '\n' <"$OUT/.shard.tmp"; echo; } >"$J.new" && mv "$J.new" "$J"
  echo "shard $i rc $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") s"
done
