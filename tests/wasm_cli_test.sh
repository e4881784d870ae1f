#!/usr/bin/env bash
# Issue 4 through the command line: the module's imports and exports, and
# `lockstep generate|logits --backend wasm` and the Node.js host's own CLI
# printing the same bytes as the native engine; bad input is a message and
# a non-zero exit. Usage: wasm_cli_test.sh LOCKSTEP_BINARY SOURCE_DIR
# WASM_DIR
set -uo pipefail
bin=$1
src=$2
wasm=$3
host="$src/hosts/node/lockstep.mjs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() {
  echo "FAIL $1"
  fails=$((fails + 1))
}
same() { # name, then two commands whose stdout must be identical
  local name=$1
  if cmp -s <(eval "$2" 2>/dev/null) <(eval "$3" 2>/dev/null); then
    ok "$name"
  else
    bad "$name"
    diff <(eval "$2" 2>&1) <(eval "$3" 2>&1) | head -5
  fi
}
fails_with() { # name, expected message fragment, command
  local out rc
  out=$(eval "$3" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$2" <<<"$out"; then
    ok "$1"
  else
    bad "$1 (exit $rc): $out"
  fi
}

# The module: one import (the memory), the entries exported, nothing that
# could grow the memory.
for m in lockstep.wasm lockstep-scalar.wasm; do
  x=$(wasm-objdump -x "$wasm/$m")
  imports=$(sed -n 's/^Import\[\([0-9]*\)\]:$/\1/p' <<<"$x")
  [ "$imports" = 1 ] && grep -q ' - memory\[0\] .* <- env.memory' <<<"$x" &&
    ok "$m imports only env.memory" || bad "$m imports: $imports"
  for e in tiny_logits infer cachedStep prefill logits_rows gpt2_plan tiny_plan \
    sample gpt2_q8_plan; do
    grep -q "<$e>" <<<"$x" || bad "$m does not export $e"
  done
  d=$(wasm-objdump -d "$wasm/$m")
  grep -qE 'memory\.grow|fma|relaxed' <<<"$d" &&
    bad "$m contains memory.grow or a fused multiply-add" ||
    ok "$m: no memory.grow, no fma"
  size=$(stat -c %s "$wasm/$m")
  [ "$size" -lt 65536 ] && ok "$m is $size bytes (< 64 KiB)" ||
    bad "$m is $size bytes"
  [ "$(sha256sum "$wasm/$m" | cut -d' ' -f1)" = \
    "$(cut -d' ' -f1 "$wasm/$m.sha256")" ] && ok "$m.sha256 recorded" ||
    bad "$m.sha256 does not match"
done
"$bin" info --model tiny4 | grep -q "wasm.sha256 *$(cut -d' ' -f1 "$wasm/lockstep.wasm.sha256")" &&
  ok "lockstep info shows the module's SHA-256" || bad "lockstep info"

# The session's memory is created with maximum == initial == the plan's
# total, so it cannot grow.
node --input-type=module -e "
import { Session } from '$src/hosts/node/session.mjs';
const s = Session.open('$src/models/tiny128.lockstep', {});
let grew = true;
try { s.memory.grow(1); } catch (e) { grew = !(e instanceof RangeError); }
process.exit(!grew && s.memory.buffer.byteLength === s.plan.total ? 0 : 1);
" && ok "the memory is the plan's size and cannot grow" ||
  bad "the memory can grow or differs from the plan"

# The SIMD module's vector exp (softmax) against ls_exp32, bit for bit: a
# stride-61 sweep of all 2^32 patterns, every pattern within 20,000 ulps
# of each range and scaling boundary, and every float in [-2, 0].
node --input-type=module -e "
import { loadModule, planAndInstantiate } from '$src/hosts/node/module.mjs';
const { exports: x } = planAndInstantiate(loadModule('$wasm/lockstep.wasm'),
                                          (e) => e.tiny_plan(4), 'exp');
let bad = x.exp32_mismatches(0, 61, 70_000_000);
const f = new Float32Array(1), u = new Uint32Array(f.buffer);
const edges = [88.72283172607422, -103.97207641601562, 88.0, -87.0, -87.33654,
               87.33654, 0, 1e-30, 0.34657359, 0.5, 1, 2];
for (const b of edges) {
  for (const s of [1, -1]) {
    f[0] = b * s;
    bad += x.exp32_mismatches((u[0] - 20000) >>> 0, 1, 40000);
  }
}
f[0] = -0; const z = u[0]; f[0] = -2; bad += x.exp32_mismatches(z, 1, u[0] - z);
process.exit(bad === 0 ? 0 : 1);
" && ok "SIMD exp equals ls_exp32 on the sweep" || bad "SIMD exp differs from ls_exp32"

# Tiny models: every output form, native vs --backend wasm vs the host CLI.
for m in tiny4 tiny64 tiny128; do
  for a in "--logits" "" "--json" "--generate 80" \
    "--generate 60 --top-k 12 --seed 5" \
    "--generate 40 --temperature 0.8 --seed 11 --json" "--logits -B 1.5"; do
    same "$m generate --backend wasm $a" \
      "'$bin' generate --model $m --text 'KING RICHARD: Now' $a" \
      "'$bin' generate --backend wasm --model $m --text 'KING RICHARD: Now' $a"
  done
  for a in "--logits" "" "--generate 80" "--generate 60 --top-k 12 --seed 5"; do
    same "$m node host generate $a" \
      "'$bin' generate --model $m --tokens 75,73,78,71,58,32 $a" \
      "node '$host' generate --model $m --tokens 75,73,78,71,58,32 $a"
  done
done

# GPT-2: the Hugging Face fixture, packed.
"$bin" convert "$src/tests/data/hf-gpt2-A" "$tmp/a.lockstep" >/dev/null 2>&1
g="$tmp/a.lockstep"
for a in "" "--logits" "--json" "--generate 24" "--generate 24 --json" \
  "--generate 16 --top-k 50 --seed 3" "--generate 8 --full --top-k 5 --seed 1"; do
  same "gpt2 generate --backend wasm $a" \
    "'$bin' generate --model $g --text 'Once upon a time, in a small village' $a" \
    "'$bin' generate --backend wasm --model $g --text 'Once upon a time, in a small village' $a"
done
ids=7454,2402,257,640,11,287,257,1402,7404
for a in "--generate 12" "--generate 12 --json" "--generate 8 --top-k 9 --seed 4"; do
  same "gpt2 node host generate $a" \
    "'$bin' generate --model $g --tokens $ids $a" \
    "node '$host' generate --model $g --tokens $ids $a"
done
for a in "" "--all-positions" "--full" "--all-positions --full"; do
  "$bin" logits --model "$g" --tokens $ids -o "$tmp/n.f32" $a 2>/dev/null
  "$bin" logits --backend wasm --model "$g" --tokens $ids -o "$tmp/w.f32" $a 2>/dev/null
  node "$host" logits --model "$g" --tokens $ids -o "$tmp/h.f32" $a 2>/dev/null
  cmp -s "$tmp/n.f32" "$tmp/w.f32" && cmp -s "$tmp/n.f32" "$tmp/h.f32" &&
    ok "gpt2 logits $a: same bytes" || bad "gpt2 logits $a"
done

# 45 positions: more than the 32 rows of every-position logits one module
# call returns, so the host's prefill runs in chunks (issue 8).
ids45=$(seq 1000 1117 50257 | head -45 | paste -sd,)
rm -f "$tmp/n.f32" "$tmp/h.f32"
"$bin" logits --model "$g" --tokens "$ids45" -o "$tmp/n.f32" --all-positions 2>/dev/null
node "$host" logits --model "$g" --tokens "$ids45" -o "$tmp/h.f32" --all-positions 2>/dev/null
cmp -s "$tmp/n.f32" "$tmp/h.f32" && ok "gpt2 logits, 45 positions: same bytes" ||
  bad "gpt2 logits, 45 positions"

# The scalar module (the core without SIMD) in Node.js gives the same bytes.
"$bin" logits --model "$g" --tokens $ids -o "$tmp/n.f32" --all-positions 2>/dev/null
node "$host" logits --module "$wasm/lockstep-scalar.wasm" --model "$g" \
  --tokens $ids -o "$tmp/s.f32" --all-positions 2>/dev/null
cmp -s "$tmp/n.f32" "$tmp/s.f32" && ok "gpt2 logits, scalar module: same bytes" ||
  bad "gpt2 logits, scalar module"
same "tiny128 generate, scalar module" \
  "'$bin' generate --model tiny128 --tokens 75,73,78,71 --generate 40 --top-k 9 --seed 2" \
  "node '$host' generate --module '$wasm/lockstep-scalar.wasm' --model tiny128 --tokens 75,73,78,71 --generate 40 --top-k 9 --seed 2"

# int8 (issue 9): the fixture quantized; --backend wasm, the host's CLI and
# the scalar module against the native int8 reference, byte for byte.
"$bin" convert "$src/tests/data/hf-gpt2-A" "$tmp/q.lockstep" --quant int8 \
  >/dev/null 2>&1
q="$tmp/q.lockstep"
for a in "" "--all-positions" "--full" "--all-positions --full"; do
  rm -f "$tmp/n.f32" "$tmp/w.f32" "$tmp/h.f32" "$tmp/s.f32"
  "$bin" logits --backend reference --model "$q" --tokens $ids -o "$tmp/n.f32" $a 2>/dev/null
  "$bin" logits --backend wasm --model "$q" --tokens $ids -o "$tmp/w.f32" $a 2>/dev/null
  node "$host" logits --model "$q" --tokens $ids -o "$tmp/h.f32" $a 2>/dev/null
  node "$host" logits --module "$wasm/lockstep-scalar.wasm" --model "$q" \
    --tokens $ids -o "$tmp/s.f32" $a 2>/dev/null
  [ -s "$tmp/n.f32" ] && cmp -s "$tmp/n.f32" "$tmp/w.f32" &&
    cmp -s "$tmp/n.f32" "$tmp/h.f32" && cmp -s "$tmp/n.f32" "$tmp/s.f32" &&
    ok "int8 logits $a: same bytes (native, --backend wasm, host, scalar)" ||
    bad "int8 logits $a"
done
rm -f "$tmp/n.f32" "$tmp/h.f32"
"$bin" logits --backend reference --model "$q" --tokens "$ids45" -o "$tmp/n.f32" --all-positions 2>/dev/null
node "$host" logits --model "$q" --tokens "$ids45" -o "$tmp/h.f32" --all-positions 2>/dev/null
[ -s "$tmp/n.f32" ] && cmp -s "$tmp/n.f32" "$tmp/h.f32" &&
  ok "int8 logits, 45 positions: same bytes" || bad "int8 logits, 45 positions"
for a in "" "--logits" "--json" "--generate 24" "--generate 24 --json" \
  "--generate 16 --top-k 50 --seed 3" "--generate 8 --full --top-k 5 --seed 1"; do
  same "int8 generate --backend wasm $a" \
    "'$bin' generate --backend reference --model $q --text 'Once upon a time, in a small village' $a" \
    "'$bin' generate --backend wasm --model $q --text 'Once upon a time, in a small village' $a"
done
for a in "--generate 12" "--generate 8 --top-k 9 --seed 4"; do
  same "int8 node host generate $a" \
    "'$bin' generate --backend reference --model $q --tokens $ids $a" \
    "node '$host' generate --model $q --tokens $ids $a"
done
node "$host" info --model "$q" | grep -q '"quant": "int8"' &&
  ok "host info: quant int8" || bad "host info on an int8 file"
head -c 20000 "$q" >"$tmp/qtrunc.lockstep"
fails_with "truncated int8 checkpoint" "file size" \
  "node '$host' logits --model '$tmp/qtrunc.lockstep' --tokens 1 -o '$tmp/x'"
fails_with "int8 token out of range" "outside the vocabulary" \
  "'$bin' logits --backend wasm --model $q --tokens 1,50257 -o '$tmp/x'"

# Bad input: a message and a non-zero exit.
cp "$wasm/lockstep.wasm" "$tmp/lockstep.wasm"
cp "$wasm/lockstep.wasm.sha256" "$tmp/lockstep.wasm.sha256"
printf '\0' >>"$tmp/lockstep.wasm"
fails_with "host refuses a changed module" "refusing WebAssembly module" \
  "node '$host' generate --model tiny4 --tokens 1,2 --module '$tmp/lockstep.wasm'"
fails_with "--backend wasm refuses a changed module" "refusing WebAssembly module" \
  "LOCKSTEP_WASM_MODULE='$tmp/lockstep.wasm' '$bin' generate --backend wasm --model tiny4 --text ab"
fails_with "host refuses a wrong --module-sha256" "refusing" \
  "node '$host' generate --model tiny4 --tokens 1,2 --module-sha256 $(printf '%064d' 0)"
head -c 100000 "$g" >"$tmp/trunc.lockstep"
fails_with "truncated checkpoint" "file size" \
  "node '$host' logits --model '$tmp/trunc.lockstep' --tokens 1 -o '$tmp/x'"
fails_with "token out of range" "outside the vocabulary" \
  "'$bin' logits --backend wasm --model $g --tokens 1,50257 -o '$tmp/x'"
fails_with "tiny token out of range" "outside the vocabulary" \
  "node '$host' generate --model tiny4 --tokens 1,300"
fails_with "unknown flag" "unknown option" \
  "node '$host' generate --model tiny4 --tokens 1 --bogus"
fails_with "bad top-k" "top-k" \
  "node '$host' generate --model tiny4 --tokens 1 --generate 2 --top-k 999"
fails_with "bad --tokens" "not an integer" \
  "node '$host' generate --model tiny4 --tokens 1,x"
fails_with "missing model" "neither a shipped model" \
  "node '$host' generate --model nope.lockstep --tokens 1"
fails_with "node missing" "not on PATH" \
  "PATH=/nonexistent '$bin' generate --backend wasm --model tiny4 --text ab"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
