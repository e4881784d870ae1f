#!/usr/bin/env bash
# Issue 13: a file name that is not UTF-8 made `info --json` fail with an
# internal JSON exception (type_error 316). Now the JSON is valid, the
# path's invalid bytes printed as U+FFFD (`info --help` says so), and the
# text form prints the name's bytes as they are.
# Usage: info_utf8_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

name=$(printf 'm\xff\xfeodel.lockstep')  # 0xff 0xfe: never UTF-8
cp "$root/models/tiny4.lockstep" "$tmp/$name"

out=$("$bin" info --weights "$tmp/$name" --json 2>&1)
status=$?
[ "$status" -eq 0 ] || bad "info --json exited $status: $out"
# Valid JSON whose path ends in the two replacement characters.
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
want = "/m\ufffd\ufffdodel.lockstep"
assert j["path"].endswith(want), ascii(j["path"])
assert j["model"] == "tiny byte-level GPT-2", j["model"]
' || bad "info --json output is not the expected JSON: $out"

# The text form: the path's own bytes.
out=$("$bin" info --weights "$tmp/$name" 2>&1)
status=$?
[ "$status" -eq 0 ] || bad "info exited $status: $out"
grep -aqF "$tmp/$name" <<<"$out" || bad "info does not print the path's bytes"

"$bin" info --help | grep -q "U+FFFD" || bad "info --help does not say what --json does with such names"

if [ "$fail" -ne 0 ]; then
  echo "info_utf8: $fail failed"
  exit 1
fi
echo "info_utf8: passed"
