#!/usr/bin/env bash
# Grouped int8 from the command line (docs/int8.md): convert --quant int8
# from an HF folder and from both binary32 layouts (one payload), info,
# logits on reference and cpu (the same bytes; cpu runs its int8 kernels,
# at 1 and 3 threads), full pass == prefill, generate, bench on an int8
# file and side by side with binary32, and the refusals (--layout with --quant int8, re-quantizing). --backend
# wasm on int8 files is tested by wasm_cli (tests/wasm_cli_test.sh).
# Usage: q8_cli_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

hf="$root/tests/data/hf-gpt2-A"
expect 0 "int8 \(q8g64" -- convert "$hf" "$tmp/q.lockstep" --quant int8
expect 0 "layout plain" -- convert "$hf" "$tmp/p.lockstep" --layout plain
expect 0 "layout panel64" -- convert "$hf" "$tmp/x.lockstep"
expect 0 "int8" -- convert "$tmp/p.lockstep" "$tmp/q2.lockstep" --quant int8
expect 0 "int8" -- convert "$tmp/x.lockstep" "$tmp/q3.lockstep" --quant int8
# The payloads are equal; the meta records the source, so compare them.
tail -c 1000000 "$tmp/q.lockstep" > "$tmp/t1"
tail -c 1000000 "$tmp/q2.lockstep" > "$tmp/t2"
tail -c 1000000 "$tmp/q3.lockstep" > "$tmp/t3"
cmp -s "$tmp/t1" "$tmp/t2" && cmp -s "$tmp/t1" "$tmp/t3" && ok ||
  bad "int8 payloads differ between sources"

plain=$("$bin" info --model "$tmp/p.lockstep" | awk '$1 == "payload_sha256" { print $2 }')
expect 0 "binary32_plain_sha256 +$plain" -- info --model "$tmp/q.lockstep"
expect 0 "dtype +int8" -- info --model "$tmp/q.lockstep"
expect 0 "payload_vs_binary32 +0\.2" -- info --model "$tmp/q.lockstep"
# The memory plan is the cpu session's (its int8 kernels), and --resident
# measures one over the whole context, as for binary32.
expect 0 "memory_bytes.backend +cpu-.* \(int8: " -- info --model "$tmp/q.lockstep"
expect 0 "resident_bytes.after_full_context_prefill.rss +[1-9]" -- info --model "$tmp/q.lockstep" --resident
/usr/bin/python3 - "$("$bin" info --model "$tmp/q.lockstep" --resident --json)" <<'EOF' && ok || bad "int8 info --resident content"
import json, sys
j = json.loads(sys.argv[1])
r, m = j["resident_bytes"], j["memory_bytes"]
assert "(int8: " in r["backend"], r
assert r["session_plan_total"] == m["total"], (r, m)
# The weights are mapped in place: file pages, not a copy.
assert r["after_full_context_prefill"]["rss_file"] >= m["weights"] * 0.9, r
EOF

tokens=15496,11,616,1438,318,257,1332,13,4162,389,345,30
expect 0 "" -- logits --model "$tmp/q.lockstep" --tokens $tokens --all-positions --backend reference --out "$tmp/ref.f32"
expect 0 "" -- logits --model "$tmp/q.lockstep" --tokens $tokens --all-positions --backend cpu --out "$tmp/cpu.f32"
expect 0 "" -- logits --model "$tmp/q.lockstep" --tokens $tokens --all-positions --backend cpu --threads 3 --out "$tmp/cpu3.f32"
expect 0 "" -- logits --model "$tmp/q.lockstep" --tokens $tokens --all-positions --full --out "$tmp/full.f32"
cmp -s "$tmp/ref.f32" "$tmp/cpu.f32" && ok || bad "int8 logits differ between reference and cpu"
cmp -s "$tmp/ref.f32" "$tmp/cpu3.f32" && ok || bad "int8 logits differ between reference and cpu x3"
cmp -s "$tmp/ref.f32" "$tmp/full.f32" && ok || bad "int8 full pass differs from prefill"
[ "$(stat -c %s "$tmp/ref.f32")" = $((12 * 50257 * 4)) ] && ok || bad "int8 logits size"
# The table this CPU runs is named: every table the cpu backend can choose
# (an AMX or AVX-VNNI machine chooses amx or avx-vnni).
expect 0 "int8: (amx|avx512-vnni|avx-vnni|avx2|neon-sdot|neon|generic)\)" -- generate --model "$tmp/q.lockstep" --tokens 15496,11 --generate 4 --backend cpu
expect 0 "" -- generate --model "$tmp/q.lockstep" --tokens 15496,11 --generate 4 --backend reference

expect nonzero "--layout is for binary32" -- convert "$hf" "$tmp/bad.lockstep" --quant int8 --layout plain
expect nonzero "already int8" -- convert "$tmp/q.lockstep" "$tmp/bad.lockstep" --quant int8
expect 0 '"int8_decode_tokens_per_s_pos0_127"' -- bench --model "$tmp/q.lockstep" --threads 1 --repeat 1 --prompts 8 --no-long --json
expect 0 '"int8_decode_speedup"' -- bench --model "$hf" --quant none,int8 --threads 1 --repeat 1 --prompts 8 --no-long --json
expect nonzero "quantizes plain-layout weights" -- bench --model "$tmp/x.lockstep" --quant int8 --threads 1 --repeat 1 --no-long
expect nonzero "quant: .*not in" -- bench --quant int4
[ ! -e "$tmp/bad.lockstep" ] && ok || bad "a refused convert left a file"

echo "q8_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
