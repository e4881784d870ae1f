#!/usr/bin/env bash
# lockstep certify as a user meets it (docs/certify.md), on Hugging Face's
# fixture (tests/data/hf-gpt2-A) and the trained model: a short greedy run
# is certified position by position, the JSON record agrees with the
# table and with `lockstep generate`'s greedy tokens, --all-positions
# counts the prompt's positions, and bad input gets a message and a
# non-zero status.
# Usage: certify_cli_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
fixture=$root/tests/data/hf-gpt2-A
trained=$root/models/shakespeare-gpt2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# A short run on the fixture: 3 greedy choices, a table and a summary.
expect 0 '^certified 3 of 3 positions \(100\.0%\)' -- certify \
  --model "$fixture" --text 'Hello, my dog is cute' --generate 3 --quiet
# The JSON record: 8 positions, their tokens those of `lockstep generate`.
"$bin" certify --model "$fixture" --text 'Hello, my dog is cute' \
  --generate 8 --json --quiet >"$tmp/c.json" || bad "certify --json failed"
"$bin" generate --model "$fixture" --text 'Hello, my dog is cute' \
  --generate 8 --json --quiet >"$tmp/g.json" || bad "generate --json failed"
if python3 - "$tmp/c.json" "$tmp/g.json" <<'PY'; then ok; else bad "certify's JSON"; fi
import json, sys
c = json.load(open(sys.argv[1]))
g = json.load(open(sys.argv[2]))
s = c["summary"]
assert s["positions"] == 8 == len(c["positions"]), s
assert c["tokens"] == g["tokens"], (c["tokens"], g["tokens"])
# The i-th certified choice is the i-th generated token.
assert [p["token"] for p in c["positions"]] == c["tokens"]
n = 0
for p in c["positions"]:
    assert p["certified"] == (p["margin"] > 0 or p["overlapping"] > 0 and p["difference_margin"] > 0), p
    assert p["chosen_lo"] <= p["chosen_hi"]
    assert p["float_error_bound"] < 1e-3, p
    n += p["certified"]
assert n == s["certified"] and abs(s["fraction"] - n / 8) < 1e-12
# The fixture certifies these steps (docs/certify.md): the widths are
# tiny next to its margins.
assert n == 8, n
assert s["max_width"] < 1e-9, s
PY
# A packed panel64 file of the same weights (unpacked for the interval
# model): the same record, position for position.
"$bin" convert "$fixture" "$tmp/fx.lockstep" >/dev/null 2>&1 || bad "convert failed"
"$bin" certify --model "$tmp/fx.lockstep" --text 'Hello, my dog is cute' \
  --generate 8 --json --quiet >"$tmp/p.json" || bad "certify on a packed file failed"
if python3 - "$tmp/c.json" "$tmp/p.json" <<'PY'; then ok; else bad "packed file's record"; fi
import json, sys
a = json.load(open(sys.argv[1]))["positions"]
b = json.load(open(sys.argv[2]))["positions"]
assert a == b, (a, b)
PY
# --all-positions: every prompt position is one more choice.
"$bin" certify --model "$fixture" --tokens 15496,11,616,3290,318 \
  --all-positions --generate 3 --json --quiet >"$tmp/a.json" ||
  bad "certify --all-positions failed"
if python3 - "$tmp/a.json" <<'PY'; then ok; else bad "--all-positions JSON"; fi
import json, sys
c = json.load(open(sys.argv[1]))
pos = [p["position"] for p in c["positions"]]
assert pos == [0, 1, 2, 3, 4, 5, 6], pos
assert [p["prompt"] for p in c["positions"]] == [True] * 4 + [False] * 3
PY
# The trained model: 2 choices, certified, on the reference backend.
expect 0 '^certified 2 of 2 positions' -- certify --model "$trained" \
  --text 'ROMEO:' --generate 2 --quiet --backend reference

# Bad input.
expect 2 'generate' -- certify --model "$fixture" --text hi --generate -1
expect 1 'nothing to certify' -- certify --model "$fixture" --text hi
expect 1 'tiny models' -- certify --model tiny4 --text hi --generate 2
expect 1 'outside the vocabulary' -- certify --model "$fixture" \
  --tokens 1,60000 --generate 2
expect 1 'exceed the context' -- certify --model "$fixture" \
  --tokens "$(seq -s, 1 129)" --generate 1
expect 1 'neither a shipped model' -- certify --model "$tmp/none" \
  --text hi --generate 1
expect 1 'one prompt source' -- certify --model "$fixture" --text hi \
  --tokens 1 --generate 1
expect 2 'bogus' -- certify --model "$fixture" --text hi --bogus

echo "certify_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
