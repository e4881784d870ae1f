#!/usr/bin/env bash
# The Node.js host (hosts/node/lockstep.mjs) as a user meets it: --help,
# clear errors without stack traces (a folder as --weights/--model/--module,
# a missing file), a full disk and a closed pipe, and the same checks as
# the native CLI on the same bad values (docs/cli.md).
# Usage: node_host_test.sh LOCKSTEP_BINARY REPO_ROOT WASM_DIR
set -u
bin=$1
root=$2
export LOCKSTEP_WASM_MODULE=$3/lockstep.wasm
host="$root/hosts/node/lockstep.mjs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE LINE -- ARGS...: node exits CODE and its output holds LINE
# exactly (a whole line), with no stack trace.
expect() {
  local code=$1 line=$2
  shift 3
  local out status
  out=$(node "$host" "$@" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ]; then
    bad "node lockstep.mjs $* exited $status, expected $code: $out"
  elif ! grep -qxF -- "$line" <<<"$out"; then
    bad "node lockstep.mjs $*: no line '$line' in: $out"
  elif grep -q "    at " <<<"$out"; then
    bad "node lockstep.mjs $*: stack trace: $out"
  else
    ok
  fi
}

expect 0 "usage: node hosts/node/lockstep.mjs generate [options]" -- generate --help
expect 0 "usage: node hosts/node/lockstep.mjs logits [options]" -- logits -h
expect 2 "usage: node hosts/node/lockstep.mjs generate|logits|serve|info [options] (COMMAND --help)" -- frobnicate
expect 1 "lockstep (wasm): error: --weights '$tmp' is a folder, not a file" -- generate --weights "$tmp" --tokens 1
expect 1 "lockstep (wasm): error: --model '$root/tests/data/hf-gpt2-A' is a folder: the WebAssembly host reads packed .lockstep checkpoints (lockstep convert makes one)" -- generate --model "$root/tests/data/hf-gpt2-A" --tokens 1
expect 1 "lockstep (wasm): error: --module '$tmp' is a folder, not a file" -- generate --module "$tmp" --model tiny4 --text hi
expect 1 "lockstep (wasm): error: --weights '$tmp/none': no such file" -- generate --weights "$tmp/none" --tokens 1
expect 1 "lockstep (wasm): error: --module '$tmp' is a folder, not a file" -- info --module "$tmp"

# A full disk and a closed pipe.
err=$(node "$host" generate --model tiny128 --text ROMEO: --generate 50 2>&1 >/dev/full)
status=$?
[ "$status" -eq 1 ] && [ "$err" = "lockstep (wasm): error: cannot write standard output: No space left on device" ] &&
  ok || bad "node > /dev/full: status $status, '$err'"
(node "$host" generate --model tiny128 --text ROMEO: --generate 5000 2>"$tmp/err"; echo $? >"$tmp/status") | head -c1 >/dev/null
[ "$(cat "$tmp/status")" -eq 141 ] && [ ! -s "$tmp/err" ] && ok ||
  bad "node | head -c1: status $(cat "$tmp/status"), '$(cat "$tmp/err")'"

# The same values refused by both, with the same message text after the
# prefix (native: "lockstep: error: ", host: "lockstep (wasm): error: ").
same() {  # same ARGS...: both refuse; the messages' texts agree
  local n h
  n=$("$bin" generate "$@" 2>&1 >/dev/null)
  h=$(node "$host" generate "$@" 2>&1 >/dev/null)
  n=${n#lockstep: error: }
  h=${h#lockstep (wasm): error: }
  if [ -z "$n" ] || [ -z "$h" ]; then
    bad "generate $*: native '$n', host '$h' (one accepted it)"
  elif [ "$n" != "$h" ]; then
    bad "generate $*: native '$n' vs host '$h'"
  else
    ok
  fi
}
same --model tiny4 --tokens 1,2,
same --model tiny4 --tokens ' 1'
same --model tiny4 --tokens 1,,2
same --model tiny4 --tokens +1
# Native --seed and --bound are CLI11 checks (status 2 and CLI11's prefix):
# the reason text is compared.
for v in -1 18446744073709551616 1e23 0x10; do
  n=$("$bin" generate --model tiny4 --tokens 1 --seed "$v" 2>&1)
  h=$(node "$host" generate --model tiny4 --tokens 1 --seed "$v" 2>&1)
  reason="'$v' is not an integer in [0, 18446744073709551615] (decimal digits only)"
  grep -qF -- "$reason" <<<"$n" && grep -qF -- "$reason" <<<"$h" && ok ||
    bad "--seed $v: native '$n', host '$h'"
done
for v in nan -1 11; do
  n=$("$bin" generate --model tiny4 --tokens 1 --bound "$v" 2>&1)
  h=$(node "$host" generate --model tiny4 --tokens 1 --bound "$v" 2>&1)
  reason="weight bound B must be a number in [0, 10] (got '$v')"
  grep -qF -- "$reason" <<<"$n" && grep -qF -- "$reason" <<<"$h" && ok ||
    bad "--bound $v: native '$n', host '$h'"
done
# Both accept the largest seed and give the same text.
a=$("$bin" generate --model tiny64 --text KING --generate 30 --top-k 20 --seed 18446744073709551615 -q 2>&1)
b=$(node "$host" generate --model tiny64 --text KING --generate 30 --top-k 20 --seed 18446744073709551615 2>&1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "seed 2^64-1: native '$a' vs host '$b'"

echo "node host: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
