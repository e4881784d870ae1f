#!/usr/bin/env bash
# `lockstep convert` and `lockstep info` with the two weight layouts
# (docs/gpt2-format.md "Weight layouts"): panel64 by default, plain on
# request, converted both ways byte for byte, the same logits on every
# backend (and in the Node.js host, when the WebAssembly module is built),
# the memory plan, and bad input refused with a message and nothing written.
# Usage: layout_cli_test.sh LOCKSTEP_BINARY REPO_ROOT [WASM_BUILD_DIR]
set -u
bin=$1
root=$2
wasm=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# field FILE KEY: the value of KEY in `lockstep info` text output.
field() { "$bin" info --model "$1" 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'; }

hf="$root/tests/data/hf-gpt2-A"
expect 0 "layout +panel64" -- convert "$hf" "$tmp/a.lockstep"
expect 0 "layout +plain" -- convert "$hf" "$tmp/b.lockstep" --layout plain
expect 0 "layout +plain" -- convert "$tmp/a.lockstep" "$tmp/c.lockstep" --layout plain
expect 0 "layout +panel64" -- convert "$tmp/b.lockstep" "$tmp/d.lockstep"
expect 0 "layout +panel64" -- convert "$hf/model.safetensors" "$tmp/e.lockstep" --layout panel64
cmp -s "$tmp/b.lockstep" "$tmp/c.lockstep" && ok || bad "panel64 -> plain differs from HF -> plain"
cmp -s "$tmp/a.lockstep" "$tmp/d.lockstep" && ok || bad "plain -> panel64 differs from HF -> panel64"
cmp -s "$tmp/a.lockstep" "$tmp/e.lockstep" && ok || bad "safetensors path -> panel64 differs"
[ "$(head -c 12 "$tmp/a.lockstep" | tail -c 4 | od -An -tu4 | tr -d ' ')" = 2 ] && ok ||
  bad "a panel64 file is not format version 2"
[ "$(head -c 12 "$tmp/b.lockstep" | tail -c 4 | od -An -tu4 | tr -d ' ')" = 1 ] && ok ||
  bad "a plain file is not format version 1"

# info: layout, digests, memory plan.
expect 0 "layout +panel64" -- info --model "$tmp/a.lockstep"
expect 0 "memory_bytes.weights_in_place +true" -- info --model "$tmp/a.lockstep"
expect 0 "memory_bytes.repacked_weights +0$" -- info --model "$tmp/a.lockstep"
expect 0 "memory_bytes.weights_in_place +false" -- info --model "$tmp/b.lockstep"
expect 0 "memory_bytes.weights_mapped +false" -- info --model "$hf"
expect 0 '"layout": "plain"' -- info --model "$hf" --json
expect 0 "resident_bytes.after_full_context_prefill.rss +[1-9]" -- info --model "$tmp/a.lockstep" --resident
pa=$(field "$tmp/a.lockstep" plain_sha256)
pb=$(field "$tmp/b.lockstep" payload_sha256)
qa=$(field "$tmp/a.lockstep" payload_sha256)
[ -n "$pa" ] && [ "$pa" = "$pb" ] && ok || bad "plain_sha256 of the panel64 file ($pa) != payload_sha256 of the plain file ($pb)"
[ "$qa" = "$(tail -c $((3324736 * 4)) "$tmp/a.lockstep" | sha256sum | cut -d' ' -f1)" ] && ok ||
  bad "payload_sha256 is not the digest of the stored bytes"
wa=$(field "$tmp/a.lockstep" memory_bytes.total)
wb=$(field "$tmp/b.lockstep" memory_bytes.total)
[ -n "$wa" ] && [ -n "$wb" ] && [ "$wa" -lt "$wb" ] && ok || bad "panel64 plan $wa not below plain $wb"

# The same logits from both files and the folder, on every backend.
ids=7454,2402,257,640,11,287,257,1402,7404
"$bin" logits --model "$hf" --tokens $ids --all-positions --backend reference \
  --out "$tmp/ref.f32" 2>/dev/null
for backend in reference cpu cpu-generic; do
  for f in a b; do
    for mode in "" "--full"; do
      "$bin" logits --model "$tmp/$f.lockstep" --tokens $ids --all-positions \
        --backend $backend $mode --out "$tmp/x.f32" 2>/dev/null
      cmp -s "$tmp/ref.f32" "$tmp/x.f32" && ok ||
        bad "logits of $f.lockstep on $backend $mode differ from the reference"
    done
  done
done
x=$("$bin" generate --model "$tmp/a.lockstep" --tokens $ids --generate 12 --threads 1)
y=$("$bin" generate --model "$tmp/b.lockstep" --tokens $ids --generate 12 --backend reference)
[ -n "$x" ] && [ "$x" = "$y" ] && ok || bad "generation differs between layouts"

# The WebAssembly module reads the plain layout: the hosts un-permute.
if [ -n "$wasm" ] && [ -f "$wasm/lockstep.wasm" ] && command -v node >/dev/null; then
  "$bin" logits --model "$tmp/a.lockstep" --tokens $ids --all-positions \
    --backend wasm --out "$tmp/w.f32" 2>/dev/null
  cmp -s "$tmp/ref.f32" "$tmp/w.f32" && ok || bad "--backend wasm on panel64 differs"
  node "$root/hosts/node/lockstep.mjs" logits --model "$tmp/a.lockstep" \
    --tokens $ids --all-positions -o "$tmp/h.f32" 2>/dev/null
  cmp -s "$tmp/ref.f32" "$tmp/h.f32" && ok || bad "node host on panel64 differs"
  node "$root/hosts/node/lockstep.mjs" logits --model "$tmp/b.lockstep" \
    --tokens $ids --all-positions -o "$tmp/h2.f32" 2>/dev/null
  cmp -s "$tmp/ref.f32" "$tmp/h2.f32" && ok || bad "node host on plain differs"
  cp "$tmp/a.lockstep" "$tmp/bad.lockstep"
  printf 'X' | dd of="$tmp/bad.lockstep" bs=1 seek=$(($(stat -c %s "$tmp/a.lockstep") - 100)) conv=notrunc 2>/dev/null
  out=$(node "$root/hosts/node/lockstep.mjs" logits --model "$tmp/bad.lockstep" \
    --tokens 1 -o "$tmp/h3.f32" 2>&1) && bad "node host read a corrupt panel64 file" ||
    { grep -q "SHA-256" <<<"$out" && ok || bad "node host message: $out"; }
  sed 's/"layout":"panel64"/"layout":"panel65"/' "$tmp/a.lockstep" >"$tmp/bad2.lockstep"
  out=$(node "$root/hosts/node/lockstep.mjs" logits --model "$tmp/bad2.lockstep" \
    --tokens 1 -o "$tmp/h3.f32" 2>&1) && bad "node host read an unknown layout" ||
    { grep -q "unknown weight layout" <<<"$out" && ok || bad "node host message: $out"; }
fi

# Bad input: a message, a non-zero exit, nothing written.
expect nonzero "panel32|not in" -- convert "$hf" "$tmp/z.lockstep" --layout panel32
expect nonzero "same file" -- convert "$tmp/a.lockstep" "$tmp/a.lockstep"
expect nonzero "does not exist|not exist" -- convert "$tmp/nothing" "$tmp/z.lockstep"
sed 's/"layout":"panel64"/"layout":"panel65"/' "$tmp/a.lockstep" >"$tmp/u.lockstep"
expect 1 "unknown weight layout 'panel65'" -- info --model "$tmp/u.lockstep"
expect 1 "unknown weight layout 'panel65'" -- convert "$tmp/u.lockstep" "$tmp/z.lockstep"
head -c -8 "$tmp/a.lockstep" >"$tmp/t.lockstep"
expect 1 "truncated" -- info --model "$tmp/t.lockstep"
expect 1 "truncated" -- convert "$tmp/t.lockstep" "$tmp/z.lockstep" --layout plain
expect 1 "truncated" -- logits --model "$tmp/t.lockstep" --tokens 1 --out "$tmp/z.f32"
[ ! -e "$tmp/z.lockstep" ] && [ ! -e "$tmp/z.f32" ] && ok || bad "a failed run left a file"
ls "$tmp" | grep -q '\.tmp\.' && bad "a temporary file was left behind" || ok

echo "layout_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
