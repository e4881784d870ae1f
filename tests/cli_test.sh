#!/usr/bin/env bash
# The lockstep CLI as a user meets it: help, exit codes, messages for bad
# input, and the shipped models' recorded outputs (tests/golden/).
# Usage: cli_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- ARGS...: exit status CODE (or "nonzero") and
# PATTERN (extended regex) somewhere in stdout+stderr.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out status
  out=$("$bin" "$@" 2>&1)
  status=$?
  if [ "$code" = nonzero ]; then
    [ "$status" -ne 0 ] || { bad "lockstep $* exited 0, expected failure"; return; }
  elif [ "$status" -ne "$code" ]; then
    bad "lockstep $* exited $status, expected $code: $out"
    return
  fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    bad "lockstep $*: output lacks /$pattern/: $out"
    return
  fi
  ok
}

# Help and usage.
expect 0 "Subcommands" -- --help
for cmd in generate info train logits tokenize convert bench; do
  expect 0 "Usage" -- "$cmd" --help
done
expect 0 "lockstep 0.1.0" -- --version
expect nonzero "A subcommand is required|subcommand" --
expect 2 "unknown command .frobnicate." -- frobnicate
expect nonzero "--no-such-flag" -- generate --no-such-flag

# Bad values are errors that name the problem.
expect 1 "weight bound B must be a number in \[0, 10\]" -- generate --text hi --bound 11
expect 1 "weight bound" -- generate --text hi --bound nan
expect nonzero "bound" -- generate --text hi --bound abc
expect nonzero "tiny4, tiny64|tiny5" -- generate --model tiny5 --text hi
expect nonzero "File does not exist|no-such" -- generate --weights "$tmp/no-such" --text hi
expect 1 "prompt is empty" -- generate --text ''
expect 1 "'x' is not an integer" -- generate --tokens 1,x
expect 1 "outside the vocabulary" -- generate --tokens 1,300
expect 1 "outside the vocabulary" -- generate --tokens -1
expect nonzero "excludes|--tokens" -- generate --text a --tokens 1
expect nonzero "generate" -- generate --text a --generate -3
expect 1 "temperature must be" -- generate --text a --generate 3 --temperature 0
expect 1 "top-k must be in \\[1, 256\\]" -- generate --text a --top-k 300
expect nonzero "context" -- train --context 5
expect nonzero "context" -- train

# Damaged checkpoints: a clear message, exit 1, never a crash.
cp "$root/models/tiny4.lockstep" "$tmp/good.lockstep"
head -c 100 "$tmp/good.lockstep" >"$tmp/trunc.lockstep"
expect 1 "truncated" -- info --weights "$tmp/trunc.lockstep"
cp "$tmp/good.lockstep" "$tmp/flip.lockstep"
printf '\x01' | dd of="$tmp/flip.lockstep" bs=1 seek=$(($(stat -c %s "$tmp/good.lockstep") - 5)) conv=notrunc 2>/dev/null
expect 1 "SHA-256" -- generate --weights "$tmp/flip.lockstep" --text hi
echo "not a checkpoint at all, just some text that is long enough to parse" >"$tmp/text.lockstep"
expect 1 "bad magic" -- info --weights "$tmp/text.lockstep"

# The shipped models.
expect 0 "parameters +2488" -- info --model tiny4
expect 0 "parameters +2728" -- info --model tiny64
expect 0 "parameters +2984" -- info --model tiny128
expect 0 "next byte after 'To b'" -- generate --model tiny4 --text 'To b'
expect 0 "sees only the last 4 bytes" -- generate --model tiny4 --text 'To be or'
expect 0 "^255 -?0x" -- generate --model tiny4 --text 'To b' --logits

# Recorded outputs (tests/golden/): exact bytes.
check_golden() {
  local name=$1
  shift
  "$bin" "$@" >"$tmp/$name" 2>/dev/null
  if cmp -s "$tmp/$name" "$root/tests/golden/$name"; then
    ok
  else
    bad "golden $name differs: lockstep $*"
    diff <(od -c "$root/tests/golden/$name") <(od -c "$tmp/$name") | head -5
  fi
}
check_golden tiny128_romeo_greedy.txt generate --model tiny128 --text 'ROMEO:' --generate 160
check_golden tiny64_topk_seed7.txt generate --model tiny64 --text 'KING HENRY:' --generate 120 --top-k 20 --seed 7 --temperature 0.8
check_golden tiny4_to_b_logits.json generate --model tiny4 --text 'To b' --logits --json

# Same seed, same text; different seed, different text.
a=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 3)
b=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 3)
c=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 4)
[ "$a" = "$b" ] && ok || bad "same seed gave different text"
[ "$a" != "$c" ] && ok || bad "different seeds gave the same text"

# GPT-2 on the Hugging Face fixture (tests/data/hf-gpt2-A).
hf="$root/tests/data/hf-gpt2-A"
expect 0 "^15496,995$" -- tokenize --text "Hello world"
expect 0 "^Hello world$" -- tokenize --decode --tokens 15496,995
expect 0 "^50256$" -- tokenize --text "<|endoftext|>" --special
expect 1 "outside \[0, 50257\)" -- tokenize --decode --tokens 1,50257
expect 0 "parameters +3324736" -- info --model "$hf"
expect 0 "converted|wrote" -- convert "$hf" "$tmp/a.lockstep"
expect 0 "format +packed" -- info --model "$tmp/a.lockstep"
prompt=7454,2402,257,640,11,287,257,1402,7404
"$bin" logits --model "$hf" --tokens $prompt --all-positions --out "$tmp/l_hf" 2>/dev/null
"$bin" logits --model "$tmp/a.lockstep" --tokens $prompt --all-positions --out "$tmp/l_packed" 2>/dev/null
"$bin" logits --model "$tmp/a.lockstep" --tokens $prompt --all-positions --full --out "$tmp/l_full" 2>/dev/null
[ "$(stat -c %s "$tmp/l_hf")" = $((9 * 50257 * 4)) ] && ok || bad "logits file size"
cmp -s "$tmp/l_hf" "$tmp/l_packed" && ok || bad "HF folder and packed logits differ"
cmp -s "$tmp/l_hf" "$tmp/l_full" && ok || bad "cached and full-prefix logits differ"
"$bin" logits --model "$hf" --tokens $prompt --all-positions --backend reference --out "$tmp/l_ref" 2>/dev/null
cmp -s "$tmp/l_hf" "$tmp/l_ref" && ok || bad "reference and fast backend logits differ"
expect 1 "unknown|backend" -- logits --model "$hf" --tokens 1 --backend gpu --out "$tmp/x"
"$bin" logits --model "$hf" --tokens $prompt --out "$tmp/l_last" 2>/dev/null
cmp -s "$tmp/l_last" <(tail -c $((50257 * 4)) "$tmp/l_hf") && ok || bad "last row differs"
a=$("$bin" generate --model "$hf" --text "Once upon a time, in a small village" --generate 24)
b=$("$bin" generate --model "$tmp/a.lockstep" --text "Once upon a time, in a small village" --generate 24 --full)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "cached and --full generation differ"
expect 0 '"tokens":\[9243,37324,37324,24520' -- generate --model "$hf" --tokens $prompt --generate 4 --json
expect 0 "context limit of 128" -- generate --model "$hf" --tokens $prompt --generate 200
expect 1 "exceed the context|context is 128" -- logits --model "$hf" --tokens "$(seq -s, 1 129)" --out "$tmp/x"
expect 1 "outside the vocabulary" -- logits --model "$hf" --tokens 1,50257 --out "$tmp/x"
expect 1 "for GPT-2 models" -- logits --model tiny4 --tokens 1 --out "$tmp/x"
expect nonzero "required" -- logits --model "$hf" --tokens 1
[ ! -e "$tmp/x" ] && ok || bad "a failed logits run left a file"

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
