#!/usr/bin/env bash
# Retrains a shipped tiny model from scratch with the shipped settings and
# requires the same checkpoint: the payload (every weight) byte for byte,
# its SHA-256 in the fixed header, and every header field exactly, except
# the two that pass through the C library's log (meta.validation_bits_per_byte
# and meta.unigram_bits_per_byte: -log(p) summed, then / log 2, in
# train/dataset.cc and train/trainer.cc). log is not correctly rounded on
# every libm, so those two are compared as numbers within 2^-40 relative
# (a few ulps of error per term over about 10^5 terms stays far below
# that; a wrong model moves them by more than 10^-4). The weights themselves
# never touch libm (the gradient is softmax - onehot, exp is ls_exp64).
# Usage: reproduce_model.sh LOCKSTEP_BINARY REPO_ROOT CONTEXT
set -u
bin=$1
root=$2
n=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shipped="$root/models/tiny$n.lockstep"
"$bin" train --context "$n" --out "$tmp/tiny$n.lockstep" >"$tmp/log" 2>&1 || {
  cat "$tmp/log"
  echo "reproduce tiny$n: 0 passed, 1 failed"
  exit 1
}
if /usr/bin/python3 - "$tmp/tiny$n.lockstep" "$shipped" <<'PY'; then
import json, struct, sys

LIBM = ('validation_bits_per_byte', 'unigram_bits_per_byte')


def read(path):
    b = open(path, 'rb').read()
    assert b[:8] == b'LOCKSTEP', f'{path}: bad magic'
    h, p = struct.unpack_from('<IQ', b, 12)
    assert len(b) == 56 + h + p, f'{path}: length'
    return b[:56], json.loads(b[56:56 + h]), b[56 + h:]


(fa, ha, pa), (fb, hb, pb) = read(sys.argv[1]), read(sys.argv[2])
errors = []
if pa != pb:
    i = next(i for i in range(min(len(pa), len(pb))) if pa[i] != pb[i]) \
        if len(pa) == len(pb) else -1
    errors.append(f'payload differs (first byte {i}; lengths {len(pa)}, '
                  f'{len(pb)})')
if fa[:12] != fb[:12] or fa[16:] != fb[16:]:
    errors.append('fixed header differs (magic, version, payload size or '
                  'its SHA-256)')
ma, mb = ha.get('meta', {}), hb.get('meta', {})
for k in LIBM:
    a, b = ma.pop(k, None), mb.pop(k, None)
    if (a is None) != (b is None) or \
            a is not None and abs(a - b) > 2.0 ** -40 * abs(b):
        errors.append(f'meta.{k}: {a!r} vs shipped {b!r}')
if ha != hb:
    errors.append('JSON header differs outside the libm-derived fields')
for e in errors:
    print('  ' + e)
sys.exit(1 if errors else 0)
PY
  echo "reproduce tiny$n: the same weights and header as $shipped ($(sha256sum <"$shipped" | cut -c1-16)...)"
  echo "reproduce tiny$n: 1 passed, 0 failed"
else
  echo "reproduce tiny$n: the retrained checkpoint differs from $shipped"
  echo "reproduce tiny$n: 0 passed, 1 failed"
  exit 1
fi
