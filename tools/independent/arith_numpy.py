#!/usr/bin/env python3
"""docs/arithmetic.md §3 (exp, tanh, GELU) written a second time, in numpy,
from the spec's text alone, and the digests of tests/arith_test.cc
(PinnedBits) recomputed from it.

numpy's float64 and float32 array operations are single IEEE-754 operations
of that format, rounded to nearest (no contraction: each line below is one
operation), so this is an independent implementation of the spec's steps,
not a copy of core/ls_arith.c: branches are masks, the scaling by 2^n
builds the power of two with numpy's bit views, and the grid is the test's.

Usage: arith_numpy.py [--check tests/arith_test.cc]
With --check, the two pinned digests are read from the test file and must
equal the ones computed here (exit 1 otherwise).
"""
import argparse
import hashlib
import re
import sys

import numpy as np

F64 = dict(
    dtype=np.float64, itype=np.int64, utype=np.uint64, bias=1023, mant=52,
    emin=-1022, emax=1023, sub_shift=54,
    OVERFLOW=float.fromhex('0x1.62e42fefa39efp+9'),
    UNDERFLOW=float.fromhex('-0x1.74910d52d3052p+9'),
    INV_LN2=float.fromhex('0x1.71547652b82fep+0'),
    LN2_HI=float.fromhex('0x1.62e42fee00000p-1'),
    LN2_LO=float.fromhex('0x1.a39ef35793c76p-33'),
    ROUNDER=float.fromhex('0x1.8p52'),
    C=[float.fromhex(h) for h in (
        '0x1.0000000000000p+0', '0x1.0000000000000p+0', '0x1.0000000000000p-1',
        '0x1.5555555555555p-3', '0x1.5555555555555p-5', '0x1.1111111111111p-7',
        '0x1.6c16c16c16c17p-10', '0x1.a01a01a01a01ap-13',
        '0x1.a01a01a01a01ap-16', '0x1.71de3a556c734p-19',
        '0x1.27e4fb7789f5cp-22', '0x1.ae64567f544e4p-26',
        '0x1.1eed8eff8d898p-29', '0x1.6124613a86d09p-33')],
    GELU_C=float.fromhex('0x1.9884533d43651p-1'),
    GELU_A=float.fromhex('0x1.6e4e26d4801f7p-5'))

F32 = dict(
    dtype=np.float32, itype=np.int32, utype=np.uint32, bias=127, mant=23,
    emin=-126, emax=127, sub_shift=25,
    OVERFLOW=float.fromhex('0x1.62e42ep+6'),
    UNDERFLOW=float.fromhex('-0x1.9fe368p+6'),
    INV_LN2=float.fromhex('0x1.715476p+0'),
    LN2_HI=float.fromhex('0x1.62e400p-1'),
    LN2_LO=float.fromhex('0x1.7f7d1cp-20'),
    ROUNDER=float.fromhex('0x1.8p23'),
    C=[float.fromhex(h) for h in (
        '0x1.000000p+0', '0x1.000000p+0', '0x1.000000p-1', '0x1.555556p-3',
        '0x1.555556p-5', '0x1.111112p-7', '0x1.6c16c2p-10', '0x1.a01a02p-13')],
    GELU_C=float.fromhex('0x1.988454p-1'),
    GELU_A=float.fromhex('0x1.6e4e26p-5'))


def pow2(f, n):
    """2^n from its exponent bits (n in the format's normal range)."""
    bits = ((n + f['bias']).astype(f['utype'])) << f['utype'](f['mant'])
    return bits.view(f['dtype'])


def exp(f, x):
    t = f['dtype']
    k = lambda v: t(v)  # a constant of the format (exact: hex in the spec)
    x = x.astype(t)
    over = x > k(f['OVERFLOW'])
    under = x < k(f['UNDERFLOW'])
    xs = np.where(over | under, t(0), x)  # steps 2-6 on the rest
    tt = xs * k(f['INV_LN2'])
    nf = (tt + k(f['ROUNDER'])) - k(f['ROUNDER'])
    r = (xs - nf * k(f['LN2_HI'])) - nf * k(f['LN2_LO'])
    p = np.full_like(xs, k(f['C'][-1]))
    for c in reversed(f['C'][:-1]):
        p = p * r
        p = p + k(c)
    n = nf.astype(f['itype'])
    big = n > f['emax']
    small = n < f['emin']
    mid = ~(big | small)
    y = np.empty_like(xs)
    y[mid] = p[mid] * pow2(f, n[mid])
    y[big] = (p[big] * pow2(f, n[big] - 1)) * t(2)
    y[small] = (p[small] * pow2(f, n[small] + f['sub_shift'])) * \
        t(2.0 ** -f['sub_shift'])
    y[over] = t(np.inf)
    y[under] = t(0)
    return y


def tanh(f, x):
    t = f['dtype']
    a = np.abs(x)
    e = exp(f, a + a)
    tt = t(1) - t(2) / (e + t(1))
    return np.where(x < 0, -tt, tt)


def gelu(f, x):
    t = f['dtype']
    x3 = (x * x) * x
    u = t(f['GELU_C']) * (x + t(f['GELU_A']) * x3)
    return (t(0.5) * x) * (t(1) + tanh(f, u))


def digests():
    i = np.arange(-4096, 4096)
    x64 = i.astype(np.float64) * float.fromhex('0x1.3p-6')
    x32 = i.astype(np.float32) * np.float32(float.fromhex('0x1.3p-8'))
    out = {}
    for name, f, x in (('64', F64, x64), ('32', F32, x32)):
        cols = np.stack([exp(f, x), tanh(f, x), gelu(f, x)], axis=1)
        data = cols.astype(f['dtype']).astype(
            '<f8' if name == '64' else '<f4').tobytes()
        out[name] = hashlib.sha256(data).hexdigest()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--check', help='tests/arith_test.cc (PinnedBits)')
    args = ap.parse_args()
    with np.errstate(over='ignore', invalid='ignore'):
        d = digests()
    print(f"binary64 {d['64']}\nbinary32 {d['32']}")
    if not args.check:
        return 0
    text = open(args.check).read()
    block = text[text.index('TEST(PinnedBits'):]
    pinned = re.findall(r'"([0-9a-f]{64})"', block)[:2]
    if pinned != [d['64'], d['32']]:
        print(f'arith_numpy: MISMATCH: the test pins {pinned}', file=sys.stderr)
        return 1
    print('arith_numpy: the pinned digests equal this implementation\'s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
