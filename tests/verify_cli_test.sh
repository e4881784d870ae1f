#!/usr/bin/env bash
# lockstep verify / bisect / dump as a user meets them (docs/verify.md), on
# Hugging Face's fixture (tests/data/hf-gpt2-A): every backend this build
# has passes; the checked-in bundle (docs/evidence/hf-gpt2-A) is
# reproduced with --against; an edited bundle is caught and bisected to the
# edited layer and operation; dump's tensors have their shapes and its
# logits are `lockstep logits`' bytes; bad input gets a message. int8
# (docs/int8.md): the fixture quantized by `convert --quant int8` passes on
# every int8 backend, reproduces docs/evidence/hf-gpt2-A-int8 (from the
# int8 file and, quantized on the fly, from the binary32 folder), is told
# apart from the binary32 record, and a damaged int8 file is refused.
# Usage: verify_cli_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
fixture=$root/tests/data/hf-gpt2-A
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# Every backend of this build (wasm too when the module was built and node
# is there), a few short contexts, a bundle.
expect 0 "^lockstep verify: PASSED$" -- verify --model "$fixture" \
  --contexts 4 --max-length 16 --threads 1,2 --completion-tokens 4 \
  --bundle "$tmp/a" --quiet
expect 0 "^  mismatches +0$" -- verify --model "$fixture" --contexts 2 \
  --max-length 8 --backends reference,cpu --no-op-hashes --quiet
for f in record.json report.md steps.svg; do
  [ -s "$tmp/a/$f" ] && ok || bad "bundle lacks $f"
done
/usr/bin/python3 - "$tmp/a/record.json" <<'EOF' && ok || bad "record.json content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "lockstep-verify/1"
assert r["result"]["passed"] is True and r["result"]["mismatches"] == 0
assert r["result"]["contexts"] == 4
names = [b["name"] for b in r["backends"]]
assert names[0] == "reference" and any(n.startswith("cpu-") for n in names), names
# cpu backends at 1 and 2 threads
assert any(n.endswith(" x1") for n in names) and any(n.endswith(" x2") for n in names), names
logits = {b["logits_sha256"] for b in r["backends"]}
assert len(logits) == 1, logits
assert r["ops"][0]["name"] == "embed" and r["ops"][-1]["name"] == "logits"
assert r["ops"][-1]["sha256"] in logits
assert [h["name"] for h in r["backends"][0]["cache"]] == ["h0.k", "h0.v", "h1.k", "h1.v"]
labels = {f["label"] for f in r["files"]}
assert {"lockstep binary", "config.json", "model.safetensors", "encoder.json",
        "vocab.bpe", "tinyshakespeare.txt"} <= labels, labels
assert r["build"]["cxx_flags"].find("-ffp-contract=off") >= 0
EOF
grep -q "^# lockstep verify: PASSED$" "$tmp/a/report.md" && ok || bad "report.md title"

# The checked-in record of the fixture, recomputed here.
expect 0 "every digest agrees" -- verify --model "$fixture" \
  --against "$root/docs/evidence/hf-gpt2-A" --quiet

# A bundle with one operation's digest and one backend's layer digest
# edited: --against and bisect name them.
mkdir -p "$tmp/b"
/usr/bin/python3 - "$tmp/a/record.json" "$tmp/b/record.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for h in r["ops"]:
    if h["name"] == "h1.fc":
        h["sha256"] = "0" * 64
r["backends"][0]["cache"][1]["sha256"] = "1" * 64  # h0.v
json.dump(r, open(sys.argv[2], "w"))
EOF
expect 1 "first difference at h1\.fc$" -- verify --model "$fixture" \
  --against "$tmp/b" --quiet
expect 1 "^reference operations: first difference at h1\.fc$" -- bisect \
  "$tmp/a" "$tmp/b"
expect 1 "^reference: first difference at h0\.v$" -- bisect "$tmp/a" "$tmp/b"
expect 1 "and .*: first difference at h0\.v$" -- bisect "$tmp/b"
expect 0 "^no difference" -- bisect "$tmp/a" "$tmp/a/record.json"
expect 0 "^no difference" -- bisect "$tmp/a"

# dump: the reference's tensors, loadable as safetensors; its logits are
# `lockstep logits --all-positions` byte for byte.
expect 0 "^wrote 27 tensors \(5 positions" -- dump --model "$fixture" \
  --tokens 15496,995,11,13,50256 --out "$tmp/d.safetensors"
expect 0 "wrote 5 x 50257" -- logits --model "$fixture" \
  --tokens 15496,995,11,13,50256 --all-positions --backend reference \
  --out "$tmp/l.f32"
/usr/bin/python3 - "$tmp/d.safetensors" "$tmp/l.f32" <<'EOF' && ok || bad "dump content"
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
meta = head.pop("__metadata__")
assert meta["format"] == "lockstep-dump/1" and meta["tokens"] == "15496,995,11,13,50256"
def t(name):
    e = head[name]
    a, b = e["data_offsets"]
    return np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(e["shape"])
assert t("embed").shape == (5, 64)
assert t("h0.qkv").shape == (5, 192) and t("h1.fc").shape == (5, 256)
p = t("h1.att_prob")
assert p.shape == (4, 5, 5)
# Masked (later) keys: probability 0, score -inf.
assert (np.triu(p, 1) == 0).all() and np.isneginf(np.triu(t("h0.att_score")[0], 1)[0, 1:]).all()
# Each row a distribution; 1e-6 covers binary32 rounding of 5 terms
# (the sum is taken here in float64, independently of lockstep).
assert np.abs(p.astype(np.float64).sum(-1) - 1).max() < 1e-6
# gelu_new from the fc tap, in float64: within 1e-6 relative (a few
# binary32 ulps; docs/arithmetic.md bounds GELU far tighter).
fc = t("h0.fc").astype(np.float64)
g = 0.5 * fc * (1 + np.tanh(np.sqrt(2 / np.pi) * (fc + 0.044715 * fc**3)))
assert (np.abs(g - t("h0.gelu")) <= 1e-6 * np.maximum(1, np.abs(g))).all()
logits = np.fromfile(sys.argv[2], dtype="<f4").reshape(5, 50257)
assert t("logits").tobytes() == logits.tobytes()
EOF

# int8: the fixture quantized as a user would, then verified on every
# backend that runs int8 (the int8 reference, each cpu ISA's int8 kernels
# at 1 and 2 threads, wasm when built), with a bundle.
expect 0 "^wrote " -- convert "$fixture" "$tmp/q.lockstep" --quant int8
expect 0 "^lockstep verify: PASSED$" -- verify --model "$tmp/q.lockstep" \
  --contexts 4 --max-length 16 --threads 1,2 --completion-tokens 4 \
  --bundle "$tmp/q" --quiet
/usr/bin/python3 - "$tmp/q/record.json" "$tmp/a/record.json" <<'EOF' && ok || bad "int8 record.json content"
import json, sys
r = json.load(open(sys.argv[1]))
r32 = json.load(open(sys.argv[2]))
assert r["result"]["passed"] is True and r["result"]["mismatches"] == 0
m = r["model"]
assert m["quant"] == "int8" and m["layout"] == "q8panel64", m
names = [b["name"] for b in r["backends"]]
assert names[0] == "reference (int8)", names
cpu = [b for b in r["backends"] if b["name"].startswith("cpu-")]
assert cpu and all("(int8: " in b["name"] for b in cpu), names
assert {b["threads"] for b in cpu} == {1, 2}, names
assert len({b["logits_sha256"] for b in r["backends"]}) == 1
ops = [h["name"] for h in r["ops"]]
assert ops[:3] == ["embed", "h0.ln1", "h0.qkv"] and ops[-2:] == ["ln_f", "logits"], ops
# The binary32 record's operations, name for name (att_score, att_prob,
# res1, res2 included), with other digests.
assert ops == [h["name"] for h in r32["ops"]] and len(ops) == 3 + 12 * 2, ops
assert "h1.att_prob" in ops and "h1.res2" in ops, ops
assert r["ops"][2]["sha256"] != r32["ops"][2]["sha256"]
assert r["ops"][-1]["sha256"] == r["backends"][0]["logits_sha256"]
EOF
grep -q "int8 (q8g64) weights, payload SHA-256" "$tmp/q/report.md" && ok || bad "int8 report.md"
# The checked-in int8 record, from the converted file and from the folder
# (quantized here because the record is int8).
expect 0 "every digest agrees" -- verify --model "$tmp/q.lockstep" \
  --against "$root/docs/evidence/hf-gpt2-A-int8" --quiet
expect 0 "every digest agrees" -- verify --model "$fixture" \
  --against "$root/docs/evidence/hf-gpt2-A-int8" --backends reference,cpu \
  --quiet
expect 0 "quantized here to int8" -- verify --model "$fixture" --quant int8 \
  --contexts 1 --max-length 4 --backends cpu --completion-tokens 1 --quiet
# int8 and binary32 are different weights: told apart, not compared.
expect 1 "DIFFERS: weights: the record's model is binary32 .*, this one int8 with payload SHA-256" \
  -- verify --model "$tmp/q.lockstep" --against "$tmp/a" --quiet
expect 1 "^the weights differ .* is binary32 .* int8" -- bisect "$tmp/a" "$tmp/q"
# A damaged int8 file: one payload byte flipped (the digest), a short file.
cp "$tmp/q.lockstep" "$tmp/q-bad.lockstep"
/usr/bin/python3 - "$tmp/q-bad.lockstep" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-100] ^= 0x01
open(p, "wb").write(b)
EOF
expect nonzero "SHA-256|digest" -- verify --model "$tmp/q-bad.lockstep" --contexts 1 --quiet
head -c 4096 "$tmp/q.lockstep" >"$tmp/q-short.lockstep"
expect nonzero "q-short" -- verify --model "$tmp/q-short.lockstep" --contexts 1 --quiet
expect nonzero "already an int8 file" -- verify --model "$tmp/q.lockstep" --quant int8 --quiet
expect nonzero "--quant" -- verify --model "$fixture" --quant int4 --quiet

# Bad input: a message and a non-zero exit.
expect nonzero "bogus" -- verify --model "$fixture" --backends reference,bogus --contexts 1 --quiet
expect nonzero "--threads: 'x'" -- verify --model "$fixture" --threads 1,x --quiet
expect nonzero "empty item in --backends" -- verify --model "$fixture" --backends reference, --quiet
# The tiny models are verified too (tests/verify_tiny_test.cc); what they
# cannot run is refused.
expect nonzero "^lockstep: error: --backends: 'cpu-avx2' does not run the tiny models" -- verify --model tiny4 --backends cpu-avx2 --quiet
echo '{"format": "something else"}' >"$tmp/bad.json"
expect nonzero "not a lockstep-verify/1 record" -- bisect "$tmp/bad.json"
echo '{"format": "lockstep-verify/1"}' >"$tmp/bad2.json"
expect nonzero "malformed" -- verify --model "$fixture" --against "$tmp/bad2.json" --quiet
expect nonzero "outside the vocabulary" -- dump --model "$fixture" --tokens 1,60000 --out "$tmp/x.safetensors"
[ ! -e "$tmp/x.safetensors" ] && ok || bad "dump left a file after an error"

echo "verify_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
