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

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# Help and usage: each page's own usage line, not a word every page has.
expect 0 "^Usage: .*lockstep \[OPTIONS\] SUBCOMMAND$" -- --help
expect 0 "^  generate +next-byte distribution, logits, or generated text$" -- --help
for cmd in generate info train logits tokenize convert bench; do
  expect 0 "^Usage: .*lockstep $cmd \[OPTIONS\]" -- "$cmd" --help
done
expect 0 "^lockstep 0\.1\.0$" -- --version
# Usage errors are status 2 (docs/cli.md), naming what was wrong.
expect 2 "^A subcommand is required$" --
expect 2 "^lockstep: error: unknown command 'frobnicate' \(commands: " -- frobnicate
expect 2 "^lockstep: error: unknown option '--bogus' before the command" -- --bogus
expect 2 "^lockstep: error: unknown option '--seed=3' before the command" -- --seed=3 generate
expect 2 "^The following argument was not expected: --no-such-flag$" -- generate --no-such-flag

# Bad values are errors that name the problem.
bound_msg="^--bound: weight bound B must be a number in \[0, 10\]"
expect 2 "$bound_msg \(got '11'\)$" -- generate --text hi --bound 11
expect 2 "$bound_msg \(got 'nan'\)$" -- generate --text hi --bound nan
expect 2 "$bound_msg \(got '-1'\)$" -- generate --text hi --bound -1
expect 2 "$bound_msg \(got 'abc'\)$" -- generate --text hi --bound abc
expect 0 "^next byte after 'hi'" -- generate --model tiny4 --text hi --bound 0
# GPT-2 has no weight bound: --bound is refused, not ignored.
expect 1 "^lockstep: error: --bound clips the tiny models' weights; GPT-2 runs its weights as they are" -- generate --model "$root/tests/data/hf-gpt2-A" --tokens 1 --bound 5
expect 2 "$bound_msg \(got 'nan'\)$" -- generate --model "$root/tests/data/hf-gpt2-A" --tokens 1 --bound nan
expect 1 "^lockstep: error: --model 'tiny5' is neither a shipped model \(tiny4, tiny64, tiny128\) nor an existing file or folder$" -- generate --model tiny5 --text hi
expect 2 "^--weights: File does not exist: $tmp/no-such$" -- generate --weights "$tmp/no-such" --text hi
expect 1 "^lockstep: error: the prompt is empty: give --text, --tokens, --file or - with at least one byte$" -- generate --text ''
# --tokens: ID(,ID)*, ID = -?[0-9]+ (docs/cli.md); the item is named.
tok_msg="is not an integer \(expected ids separated by single commas, no spaces, such as 84,111,32,98\)$"
expect 1 "^lockstep: error: --tokens: item 2 'x' $tok_msg" -- generate --tokens 1,x
expect 1 "^lockstep: error: --tokens: item 3 '' $tok_msg" -- generate --tokens 1,2,
expect 1 "^lockstep: error: --tokens: item 1 ' 1' $tok_msg" -- generate --tokens ' 1'
expect 1 "^lockstep: error: --tokens: item 2 '' $tok_msg" -- generate --tokens 1,,2
expect 1 "^lockstep: error: --tokens: item 1 '\+1' $tok_msg" -- generate --tokens +1
expect 1 "^lockstep: error: --tokens: item 1 '99999999999' $tok_msg" -- generate --tokens 99999999999
expect 1 "^lockstep: error: a token is outside the vocabulary" -- generate --tokens 1,300
expect 1 "^lockstep: error: a token is outside the vocabulary" -- generate --tokens -1
expect 1 "^lockstep: error: give one prompt source, not both --text and --tokens" -- generate --text a --tokens 1
expect 2 "^--generate: Value -3 not in range 0 to 1000000$" -- generate --text a --generate -3
expect 1 "^lockstep: error: temperature must be" -- generate --text a --generate 3 --temperature 0
expect 1 "^lockstep: error: top-k must be in \[1, 256\]" -- generate --text a --top-k 300
# --seed: 0 .. 2^64-1 in decimal digits; -1, 2^64, 1e23 are refused.
seed_msg="is not an integer in \[0, 18446744073709551615\] \(decimal digits only\)$"
for v in -1 18446744073709551616 99999999999999999999 1e23 0x10 ''; do
  expect 2 "^--seed: '$v' $seed_msg" -- generate --text a --generate 3 --top-k 5 --seed "$v"
  expect 2 "^--seed: '$v' $seed_msg" -- train --context 4 --seed "$v"
done
a=$("$bin" generate --model tiny64 --text KING --generate 30 --top-k 20 --seed 18446744073709551615 -q)
b=$("$bin" generate --model tiny64 --text KING --generate 30 --top-k 20 --seed 18446744073709551614 -q)
[ -n "$a" ] && [ "$a" != "$b" ] && ok || bad "--seed 2^64-1 and 2^64-2 gave the same text"
# --backend: the tiny models run on the binary64 core or wasm only.
expect 1 "^lockstep: error: --backend 'bogus': the tiny models run on the binary64 core \(cpu, the default, or reference: the same code\) or wasm$" -- generate --model tiny4 --text hi --backend bogus
expect 1 "^lockstep: error: --backend 'cpu-avx2': the tiny models run on" -- generate --model tiny4 --text hi --backend cpu-avx2
a=$("$bin" generate --model tiny4 --text 'To b' --logits)
b=$("$bin" generate --model tiny4 --text 'To b' --logits --backend reference)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "tiny --backend reference differs from cpu"
expect 2 "^--context: 5 not in \{4,64,128\}$" -- train --context 5
expect 2 "^--context is required$" -- train
lr_msg="^--lr: --lr must be a number in \[1e-9, 10\] \(NaN is not\)"
expect 2 "$lr_msg \(got 'nan'\)$" -- train --context 4 --lr nan
expect 2 "$lr_msg \(got '0'\)$" -- train --context 4 --lr 0
expect 2 "$lr_msg \(got '11'\)$" -- train --context 4 --lr 11

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
a=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 3 -q)
b=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 3 -q)
c=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 80 --top-k 40 --seed 4 -q)
[ "$a" = "$b" ] && ok || bad "same seed gave different text"
[ "$a" != "$c" ] && ok || bad "different seeds gave the same text"

# GPT-2 on the Hugging Face fixture (tests/data/hf-gpt2-A).
hf="$root/tests/data/hf-gpt2-A"
expect 0 "^15496,995$" -- tokenize --text "Hello world"
expect 0 "^Hello world$" -- tokenize --decode --tokens 15496,995
expect 0 "^50256$" -- tokenize --text "<|endoftext|>" --special
expect 1 "outside \[0, 50257\)" -- tokenize --decode --tokens 1,50257
expect 0 "parameters +3324736" -- info --model "$hf"
expect 0 "^wrote $tmp/a\.lockstep: 3324736 words, layout panel64, payload sha256 [0-9a-f]{64}, plain-layout sha256 [0-9a-f]{64}$" -- convert "$hf" "$tmp/a.lockstep"
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
expect 1 "^lockstep: error: GPT-2 backend: unknown backend 'gpu' \(reference, cpu, " -- logits --model "$hf" --tokens 1 --backend gpu --out "$tmp/x"
"$bin" logits --model "$hf" --tokens $prompt --out "$tmp/l_last" 2>/dev/null
cmp -s "$tmp/l_last" <(tail -c $((50257 * 4)) "$tmp/l_hf") && ok || bad "last row differs"
a=$("$bin" generate --model "$hf" --text "Once upon a time, in a small village" --generate 24 -q)
b=$("$bin" generate --model "$tmp/a.lockstep" --text "Once upon a time, in a small village" --generate 24 --full -q)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "cached and --full generation differ"
expect 0 '"tokens":\[9243,37324,37324,24520' -- generate --model "$hf" --tokens $prompt --generate 4 --json
expect 0 "context limit of 128" -- generate --model "$hf" --tokens $prompt --generate 200
expect 1 "exceed the context|context is 128" -- logits --model "$hf" --tokens "$(seq -s, 1 129)" --out "$tmp/x"
expect 1 "outside the vocabulary" -- logits --model "$hf" --tokens 1,50257 --out "$tmp/x"
expect 1 "for GPT-2 models" -- logits --model tiny4 --tokens 1 --out "$tmp/x"
expect 2 "^--out is required$" -- logits --model "$hf" --tokens 1
[ ! -e "$tmp/x" ] && ok || bad "a failed logits run left a file"

# Prompts from a file or standard input: every byte as it is (NUL, 0xff).
printf 'a\0b\xff\n' >"$tmp/nul.txt"
expect 0 "^64,188,65,187,198$" -- tokenize --file "$tmp/nul.txt"
[ "$("$bin" tokenize - <"$tmp/nul.txt")" = 64,188,65,187,198 ] && ok || bad "tokenize - (stdin)"
[ "$("$bin" tokenize --file - <"$tmp/nul.txt")" = 64,188,65,187,198 ] && ok || bad "tokenize --file -"
[ "$(printf '15496 995\n' | "$bin" tokenize --decode -)" = "Hello world" ] && ok || bad "tokenize --decode - (ids on stdin)"
a=$("$bin" generate --model tiny64 --file "$tmp/nul.txt" --generate 40 --json 2>/dev/null)
b=$("$bin" generate --model tiny64 --tokens 97,0,98,255,10 --generate 40 --json 2>/dev/null)
c=$("$bin" generate --model tiny64 - --generate 40 --json <"$tmp/nul.txt" 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && ok || bad "tiny --file / - / --tokens differ: $a / $b / $c"
"$bin" generate --model tiny64 --file "$tmp/nul.txt" --generate 40 >"$tmp/nul.out" 2>/dev/null
cmp -s <(head -c 5 "$tmp/nul.out") "$tmp/nul.txt" && ok || bad "tiny --file: the prompt's bytes are not echoed exactly"
head -c 3000 "$root/data/tinyshakespeare.txt" >"$tmp/long.txt" 2>/dev/null ||
  head -c 3000 /dev/zero | tr '\0' 'x' >"$tmp/long.txt"
expect 0 "^next byte after" -- generate --model tiny128 --file "$tmp/long.txt" --top 3
expect 1 "give one prompt source, not both --text and --file" -- generate --text a --file "$tmp/nul.txt"
expect 1 "give one prompt source, not both --file and - " -- generate --file "$tmp/nul.txt" -
expect 1 "give one prompt source, not both --tokens and - " -- generate --tokens 1,2 -
expect 1 "give one prompt source, not both --text and - " -- tokenize --text a -
expect 1 "give one prompt source" -- logits --model "$root/tests/data/hf-gpt2-A" --text a --file "$tmp/nul.txt" --out "$tmp/x"
expect 1 "give one prompt source" -- generate --text a --stop x -
expect 1 "cannot open --file '$tmp/no-such': No such file" -- generate --file "$tmp/no-such"
expect 1 "Is a directory" -- generate --file "$tmp"
expect 2 "'hello' is not an option; a prompt goes in --text, --file PATH or - \(standard input\)" -- generate hello
expect 1 "^lockstep: error: --tokens is for --decode; text to encode goes in --text, --file or -$" -- tokenize --tokens 1,2
expect 1 "^lockstep: error: --tokens is for --decode" -- tokenize --tokens 1,2 --json
expect 1 "^lockstep: error: --tokens: item 3 '' $tok_msg" -- tokenize --decode --tokens 15496,995,
expect 1 "^lockstep: error: --tokens: item 1 ' 15496' $tok_msg" -- tokenize --decode --tokens ' 15496'
[ "$(printf '15496,995,\n' | "$bin" tokenize --decode -)" = "Hello world" ] && ok || bad "tokenize --decode -: a trailing separator in a file of ids"
expect 1 "prompt is empty" -- generate --file /dev/null
expect 1 "--decode reads ids from --tokens, --file or -" -- tokenize --decode --text 1,2

# Sampling options: top-p is checked, and P = 1 is plain top-k (§5.4).
expect 1 "top-p must be a number in \(0, 1\]" -- generate --text a --generate 3 --top-p 0
expect 1 "top-p must be a number in \(0, 1\]" -- generate --text a --generate 3 --top-p 1.5
expect 1 "top-p must be a number in \(0, 1\]" -- generate --text a --generate 3 --top-p nan
expect 1 "top-p must be a number in \(0, 1\]" -- generate --text a --generate 3 --top-p -0.5
expect 2 "^Could not convert: --top-p = abc$" -- generate --text a --generate 3 --top-p abc
expect 1 "--stop needs a non-empty string" -- generate --text a --generate 3 --stop ''
a=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-p 0.8 --seed 3 2>/dev/null)
b=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-p 0.8 --seed 3 2>/dev/null)
c=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-p 0.8 --seed 4 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "top-p: same seed gave different text"
[ "$a" != "$c" ] && ok || bad "top-p: different seeds gave the same text"
a=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-k 30 --seed 5 -T 0.9 2>/dev/null)
b=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-k 30 --seed 5 -T 0.9 --top-p 1 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "--top-p 1 differs from top-k alone"
a=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 --top-p 0.001 --seed 5 2>/dev/null)
b=$("$bin" generate --model tiny128 --text 'JULIET:' --generate 120 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "a tiny top-p is not greedy"

# --stop: output ends just before the first occurrence in the generated
# text (not printed); the JSON names it. The recorded greedy text is the
# reference.
full=$(cat "$root/tests/golden/tiny128_romeo_greedy.txt")
gen=${full#ROMEO:}
for s in "the" "e" $'\n\n' "ROMEO" "an" "zzzz"; do
  want="ROMEO:${gen%%"$s"*}"
  got=$("$bin" generate --model tiny128 --text 'ROMEO:' --generate 160 --stop "$s" 2>/dev/null)
  [ "$got" = "$want" ] && ok || bad "--stop '$s': got '$got', want '$want'"
done
# A stop string whose start ends the text: the held-back bytes still come.
s="${gen: -3}QQ"
got=$("$bin" generate --model tiny128 --text 'ROMEO:' --generate 160 --stop "$s" 2>/dev/null)
[ "$got" = "$full" ] && ok || bad "--stop '$s': held-back bytes lost: '$got'"
want="ROMEO:${gen%%"an"*}"
want2="ROMEO:${gen%%"the"*}"
[ ${#want2} -lt ${#want} ] && want=$want2
got=$("$bin" generate --model tiny128 --text 'ROMEO:' --generate 160 --stop an --stop the 2>/dev/null)
[ "$got" = "$want" ] && ok || bad "two --stop strings: the earliest does not win"
expect 0 '"stop":"string","stop_string":"the"' -- generate --model tiny128 --text 'ROMEO:' --generate 160 --stop the --json

# The summary: standard error only, and --quiet turns it off.
"$bin" generate --model tiny128 --text 'ROMEO:' --generate 40 >"$tmp/s.out" 2>"$tmp/s.err"
"$bin" generate --model tiny128 --text 'ROMEO:' --generate 40 --quiet >"$tmp/q.out" 2>"$tmp/q.err"
grep -Eq "^lockstep: prompt 6 tokens, prefill [0-9.]+ ms; generated 40 tokens in [0-9.]+ s, ([0-9.]+|-) tokens/s; backend tiny binary64, 1 thread; stop: length$" "$tmp/s.err" && ok || bad "summary: $(cat "$tmp/s.err")"
grep -q "lockstep: prompt" "$tmp/s.out" && bad "the summary went to stdout" || ok
[ ! -s "$tmp/q.err" ] && ok || bad "--quiet still wrote: $(cat "$tmp/q.err")"
cmp -s "$tmp/s.out" "$tmp/q.out" && ok || bad "--quiet changed stdout"
cmp -s "$tmp/s.out" <(head -c 46 "$root/tests/golden/tiny128_romeo_greedy.txt"; echo) && ok || bad "summary run's stdout is not the recorded text"

# GPT-2: prompts by file, the batched prefill against --full and the
# reference backend, <|endoftext|>, --stop, top-p and the summary.
printf 'Once upon a time, in a small village,\0 there\xff lived' >"$tmp/g.txt"
ids=$("$bin" tokenize --file "$tmp/g.txt")
"$bin" logits --model "$hf" --file "$tmp/g.txt" --all-positions --out "$tmp/lf" 2>/dev/null
"$bin" logits --model "$hf" --tokens "$ids" --all-positions --full --out "$tmp/lt" 2>/dev/null
[ -s "$tmp/lf" ] && cmp -s "$tmp/lf" "$tmp/lt" && ok || bad "logits --file (prefill) and --tokens --full differ"
"$bin" logits --model "$hf" --tokens "$(seq -s, 1 128)" --all-positions --out "$tmp/l128" 2>/dev/null
"$bin" logits --model "$hf" --tokens "$(seq -s, 1 128)" --all-positions --backend reference --out "$tmp/l128r" 2>/dev/null
[ -s "$tmp/l128" ] && cmp -s "$tmp/l128" "$tmp/l128r" && ok || bad "128-position prefill: cpu and reference logits differ"
for flags in "--generate 40" "--generate 40 --top-p 0.9 --seed 2 -T 1.5" "--generate 30 --top-k 50 --top-p 0.7 --seed 9 --json"; do
  "$bin" generate --model "$hf" --file "$tmp/g.txt" $flags >"$tmp/ga" 2>/dev/null
  "$bin" generate --model "$hf" - $flags --full <"$tmp/g.txt" >"$tmp/gb" 2>/dev/null
  "$bin" generate --model "$hf" --tokens "$ids" $flags --backend reference >"$tmp/gc" 2>/dev/null
  [ -s "$tmp/ga" ] && cmp -s "$tmp/ga" "$tmp/gb" && ok || bad "GPT-2 $flags: prefill and --full differ"
  [ -s "$tmp/ga" ] && cmp -s "$tmp/ga" "$tmp/gc" && ok || bad "GPT-2 $flags: cpu and reference differ"
done
a=$("$bin" generate --model "$hf" --text "Once upon a time" --generate 40 --top-p 0.5 --seed 7 2>/dev/null)
b=$("$bin" generate --model "$hf" --text "Once upon a time" --generate 40 --top-p 0.5 --seed 7 --threads 1 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "GPT-2 top-p: same seed gave different text"
# Seed 259 samples <|endoftext|> (50256) first after these tokens.
eot="--model $hf --tokens 22366,27045,26020 --generate 5 --top-k 308 --seed 259"
expect 0 '"stop":"eot","text":"","tokens":\[50256\]' -- generate $eot --json
expect 0 '"text":"<\|endoftext\|> biom\*=- convent HG","tokens":\[50256,27488,48069,8294,48698\]' -- generate $eot --json --no-stop-eot
[ "$("$bin" generate $eot 2>/dev/null)" = "nothingicol stimulate" ] && ok || bad "the <|endoftext|> stop printed something"
expect 0 "stop: <\|endoftext\|>" -- generate $eot
[ "$("$bin" generate $eot --no-stop-eot --stop ' conv' 2>/dev/null)" = "nothingicol stimulate<|endoftext|> biom*=-" ] && ok || bad "GPT-2 --stop"
[ "$("$bin" generate $eot --no-stop-eot --stop '|>' 2>/dev/null)" = "nothingicol stimulate<|endoftext" ] && ok || bad "GPT-2 --stop inside a token"
"$bin" generate --model "$hf" --file "$tmp/g.txt" --generate 7 --threads 1 >"$tmp/gs.out" 2>"$tmp/gs.err"
grep -Eq "^lockstep: prompt $(tr ',' '\n' <<<"$ids" | wc -l) tokens, prefill [0-9.]+ ms; generated 7 tokens in [0-9.]+ s, ([0-9.]+|-) tokens/s; backend cpu-[a-z0-9]+ x1, 1 thread; stop: length$" "$tmp/gs.err" && ok || bad "GPT-2 summary: $(cat "$tmp/gs.err")"
grep -q "lockstep: prompt" "$tmp/gs.out" && bad "GPT-2 summary on stdout" || ok
expect 0 "backend reference, 1 thread" -- generate --model "$hf" --text Hi --generate 2 --backend reference
[ -z "$("$bin" generate --model "$hf" --text Hi --generate 2 -q 2>&1 >/dev/null)" ] && ok || bad "GPT-2 --quiet"

# --backend wasm (when Node.js is here): the same bytes through the
# per-token prefill of the WebAssembly host.
if command -v node >/dev/null 2>&1; then
  flags="--generate 12 --top-p 0.9 --seed 2 -T 1.3 --stop zq"
  "$bin" generate --model "$tmp/a.lockstep" --file "$tmp/g.txt" $flags >"$tmp/wa" 2>/dev/null
  "$bin" generate --model "$tmp/a.lockstep" --file "$tmp/g.txt" $flags --backend wasm >"$tmp/wb" 2>"$tmp/wb.err"
  [ -s "$tmp/wa" ] && cmp -s "$tmp/wa" "$tmp/wb" && ok || bad "--backend wasm differs: $(cat "$tmp/wb.err")"
  grep -q "backend wasm (Node.js), 1 thread" "$tmp/wb.err" && ok || bad "wasm summary: $(cat "$tmp/wb.err")"
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
