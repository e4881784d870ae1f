#!/usr/bin/env bash
# Standard output that cannot be written (docs/cli.md "Output"): a full
# disk is a message and status 1; a closed pipe ends the process by SIGPIPE
# (status 141), quietly, and stops generation at once. The native backends
# and --backend wasm (when Node.js and the module are here) alike.
# Usage: output_test.sh LOCKSTEP_BINARY REPO_ROOT [WASM_DIR]
set -u
bin=$1
root=$2
wasm_dir=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
hf="$root/tests/data/hf-gpt2-A"
full_msg="lockstep: error: cannot write standard output: No space left on device"

# full ARGS...: > /dev/full gives status 1 and exactly the message.
full() {
  local err status
  err=$("$bin" "$@" 2>&1 >/dev/full)
  status=$?
  if [ "$status" -ne 1 ]; then
    bad "lockstep $* > /dev/full exited $status, expected 1 ($err)"
  elif ! grep -qxF "$full_msg" <<<"$err"; then
    bad "lockstep $* > /dev/full: message '$err'"
  else
    ok
  fi
}
# pipe ARGS...: | head -c1 gives status 141 (SIGPIPE), no message, and the
# first byte of the normal output.
pipe() {
  local status first want
  want=$("$bin" "$@" 2>/dev/null | od -An -c -N1)
  first=$( ("$bin" "$@" 2>"$tmp/pipe.err"; echo $? >"$tmp/pipe.status") |
          head -c1 | od -An -c)
  status=$(cat "$tmp/pipe.status")
  if [ "$status" -ne 141 ]; then
    bad "lockstep $* | head -c1 exited $status, expected 141 ($(cat "$tmp/pipe.err"))"
  elif [ -s "$tmp/pipe.err" ] && grep -v "^lockstep: prompt" "$tmp/pipe.err" | grep -q .; then
    bad "lockstep $* | head -c1 wrote a message: $(cat "$tmp/pipe.err")"
  elif [ "$first" != "$want" ]; then
    bad "lockstep $* | head -c1: first byte '$first', expected '$want'"
  else
    ok
  fi
}

# Everything these print is larger than a pipe buffer or is streamed, so
# the reader's exit is seen by a write.
long=(generate --model tiny128 --text ROMEO: --generate 100000 -q)
full generate --model tiny4 --text 'To b'
full generate --model tiny4 --text 'To b' --logits --json
full "${long[@]}"
full tokenize --text "Hello world"
full info --model tiny4
full generate --model "$hf" --tokens 1,2,3 --logits
pipe "${long[@]}"
pipe generate --model "$hf" --tokens 1,2,3 --logits
pipe generate --model "$hf" --tokens 1,2,3 --generate 120 --top-k 50 --seed 1 --no-stop-eot -q
# The pipe ends generation at once: 100000 bytes would take minutes.
start=$(date +%s)
"$bin" "${long[@]}" 2>/dev/null | head -c1 >/dev/null
[ $(($(date +%s) - start)) -lt 30 ] && ok || bad "a closed pipe did not stop generation"

# --backend wasm: the same native process writes the output.
if [ -n "$wasm_dir" ] && command -v node >/dev/null 2>&1 &&
   [ -s "$wasm_dir/lockstep.wasm" ]; then
  "$bin" convert "$hf" "$tmp/a.lockstep" >/dev/null
  full generate --model "$tmp/a.lockstep" --tokens 1,2,3 --generate 5 --backend wasm -q
  pipe generate --model "$tmp/a.lockstep" --tokens 1,2,3 --logits --backend wasm
  pipe generate --model tiny128 --text ROMEO: --generate 2000 --backend wasm -q
  full generate --model tiny4 --text 'To b' --backend wasm
fi

echo "output: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
