#!/usr/bin/env python3
"""Reads the outputs of numerics/run.sh, checks every certificate and prints
one line per claim: proved/failed, the certified bound, the goal.

Gappa's enclosures are read as exact rationals (Gappa prints m b e for
m * 2^e), Sollya's bounds as binary64 values rounded up, and the bounds that
docs/numerics.md §2 writes out by hand (softmax; the two vector facts that
layernorm64_tail.g assumes) are evaluated here in exact rational arithmetic,
with every irrational (sqrt 3, 1/sqrt(1e-5), 1/e) replaced by a rational
bound on the safe side.
Exit status 1 if anything is missing, unproved, or above its goal.
"""
import math
import re
import sys
from fractions import Fraction as F
from pathlib import Path

out = Path(sys.argv[1])
failures = []
lines = []

U = F(1, 2**53)  # unit roundoff of binary64
TINY = F(1, 2**1075)  # half the smallest subnormal


def gamma(k):
    return k * U / (1 - k * U)


def sqrt_lo(q):
    """A rational <= sqrt(q), within 2^-200 relative."""
    s = F(math.isqrt(q.numerator * 2**400 // q.denominator), 2**200)
    assert s * s <= q
    return s


def sqrt_hi(q):
    s = sqrt_lo(q) + F(1, 2**199)
    assert s * s >= q
    return s


def fmt(v):
    return f"{float(v):.3e}"


def claim(name, bound, goal=None, source=""):
    ok = goal is None or bound <= goal
    if not ok:
        failures.append(name)
    g = f"goal {fmt(goal)}" if goal is not None else "goal -"
    lines.append(f"{'proved' if ok else 'FAILED':7s} {name:58s} "
                 f"bound {fmt(bound)}  {g:15s} {source}")


def fail(msg):
    failures.append(msg)
    lines.append(f"FAILED  {msg}")


def rc(name):
    p = out / f"{name}.rc"
    return int(p.read_text()) if p.exists() else -1


NUM = r"(-?\d+(?:b-?\d+)?)"
ENCL = re.compile(r"^\s*(.*?) in \[" + NUM + r"(?: \{[^}]*\})?, " + NUM +
                  r"(?: \{[^}]*\})?\]\s*$")


def num(s):
    m, _, e = s.partition("b")
    return F(int(m)) * (F(2)**int(e) if e else 1)


def gappa(name):
    """The enclosures a Gappa script proved, or None if it failed."""
    text = (out / f"{name}.out").read_text() if (out / f"{name}.out").exists() else ""
    if rc(name) != 0 or "Error" in text:
        fail(f"{name}: gappa did not prove every goal (status {rc(name)}):\n"
             + text.strip())
        return None
    res = {}
    for line in text.splitlines():
        m = ENCL.match(line)
        if m:
            res[m.group(1)] = (num(m.group(2)), num(m.group(3)))
    return res


def mag(enc):
    return max(abs(enc[0]), abs(enc[1]))


# --- Sollya: the polynomial's approximation error and the side lemmas.
sol = (out / "exp64.sollya.out").read_text() if (out / "exp64.sollya.out").exists() else ""
lemmas = dict(re.findall(r"^lemma (\S+) (true|false)$", sol, re.M))
values = dict(re.findall(r"^value (\S+) (\S+)$", sol, re.M))
for name in ["exp64_poly_rel_le_hypothesis", "ln2_enclosure", "sqrt2pi_enclosure",
             "exp_on_I", "exp_shift", "exp_672", "exp_603", "sech_33",
             "gelu_tail", "underflow_threshold", "fpminimax11_rel_le_hypothesis"]:
    if lemmas.get(name) != "true":
        fail(f"exp64.sollya: lemma {name} is {lemmas.get(name, 'missing')}")
if re.search(r"^(Warning|Error)", sol, re.M) or rc("exp64.sollya") != 0:
    fail("exp64.sollya: warnings or errors:\n" + sol)
if "exp64_poly_rel" in values:
    poly = F(float.fromhex(values["exp64_poly_rel"]))
    claim("exp poly: |P(r)/exp(r) - 1|, |r| <= 0x1.63p-2", poly,
          F("5.2451e-18"), "sollya supnorm")
else:
    fail("exp64.sollya: no certified supnorm")
    poly = None

# --- Gappa: exp.
exp_g = gappa("exp64.g")
rho_e = None
if exp_g:
    horner = mag(exp_g["(p0 - Mp0) / Mp0"])
    claim("exp Horner rounding: |p/P(r) - 1|", horner, None, "gappa exp64.g")
    rho_e = mag(exp_g["(p0 - Er) / Er"])
    claim("exp relative, x in [UNDERFLOW, 709], result >= 2^-1022", rho_e,
          F("2.9e-16"), "gappa exp64.g (lemma for GELU, softmax)")
    # exp(x) <= 1 and the result is normal on [-8, 0]: the absolute error is
    # at most the relative bound.
    claim("exp absolute, x in [-1, 0]", rho_e, F(1, 4000), "gappa exp64.g")
    claim("exp absolute, x in [-8, 0]", rho_e, F(1, 300000), "gappa exp64.g")

# Information: what ls_exp64 would certify with degree-11 fpminimax instead.
fm = gappa("exp64_fpminimax11.g")
if fm:
    lines.append(f"info    exp with degree-11 fpminimax (not the spec): relative "
                 f"{fmt(mag(fm['(p0 - Er) / Er']))} (spec: "
                 f"{fmt(rho_e) if rho_e is not None else '?'})")

# --- Gappa: GELU on [-3, 0] and [0, 3].
gp, gn = gappa("gelu64_pos.g"), gappa("gelu64_neg.g")
if gp and gn:
    gelu = max(mag(gp["y - G"]), mag(gn["y - G"]))
    claim("GELU absolute, x in [-3, 3]", gelu, F(1, 80000),
          "gappa gelu64_pos.g gelu64_neg.g")
gpw, gnw = gappa("gelu64_pos_wide.g"), gappa("gelu64_neg_wide.g")
if gp and gn and gpw and gnw:
    wide = max(gelu, mag(gpw["y - G"]), mag(gnw["y - G"]))
    claim("GELU absolute, x in [-20, 20]", wide, None,
          "gappa gelu64_*.g")
    # |x| >= 20: the code returns x or -0 and the exact value is within
    # 1e-260 of it (hand, lemma gelu_tail).
    claim("GELU absolute, every finite x", max(wide, F(1, 10**260)), None,
          "gappa gelu64_*.g + hand tail")

# --- Softmax (§2.3): steps 5-6 by Gappa given the hand facts 1-4; the
# closed formula of §2.3 as a cross-check (information).
sm = gappa("softmax64.g")
if sm:
    claim("softmax absolute per probability, n <= 4, any scores",
          mag(sm["p4 - P4"]), F(1, 50000), "gappa softmax64.g + hand 1-4")
    claim("softmax absolute per probability, n <= 128, any scores",
          mag(sm["pn - Pn"]), F(1, 50000), "gappa softmax64.g + hand 1-4")
if rho_e is not None:
    inv_e = F(3679, 10000)  # 1/e < 0.3679 since e > 10000/3679 = 2.71813...
    assert F(271828, 100000) > F(10000, 3679)
    beta1 = U * inv_e / (1 - U)  # |exp(RN(d)) - exp(d)| for d <= 0
    eta0 = TINY * (1 + F(1, 2**40))  # exp's underflow (lemma underflow_threshold)
    beta = beta1 * (1 + rho_e) + eta0
    for n in (4, 64, 128):
        b = ((2 * rho_e + (n + 1) * beta) / (1 - rho_e - n * beta) +
             (U + gamma(n - 1)) / (1 - gamma(n - 1)) + TINY)
        lines.append(f"info    softmax by the closed formula of §2.3, n <= {n}: "
                     f"{fmt(b)}")

# --- LayerNorm, n = 4, |x| <= 140000, |g|, |b| <= 10 (§2.4).
ln, tail = gappa("layernorm64.g"), gappa("layernorm64_tail.g")
if ln and tail:
    e = max(mag(ln[f"d{k} - (x{k} - M)"]) for k in range(4))
    claim("LayerNorm first pass: |d[k] - (x[k] - mean)|", e, None,
          "gappa layernorm64.g")
    # The two numbers layernorm64_tail.g assumes, from their derivation.
    eps = F(1, 100000)
    eps64 = F(float.fromhex("0x1.4f8b588e368f1p-17"))
    theta_w = max(gamma(4), abs(eps64 / eps - 1)) + 2 * TINY / eps
    claim("LayerNorm hypothesis theta_w: (var+eps64)/W - 1", theta_w,
          F("4.5e-16"), "hand (i, ii), assumed by layernorm64_tail.g")
    drange = max(mag(ln[f"d{k}"]) for k in range(4))
    claim("LayerNorm hypothesis |d[k]| (computed deviations)", drange,
          F(300000), "gappa layernorm64.g, assumed by layernorm64_tail.g")
    lip = (1 + sqrt_hi(F(3))) * e / sqrt_lo(eps)
    claim("LayerNorm hypothesis |d/F(d) - D/F(D)|", lip, F("6.2861e-8"),
          "hand (iv) + gappa layernorm64.g")
    claim("LayerNorm normalised (x-mean)/sqrt(var+eps), n = 4",
          mag(tail["z - Z"]), None, "gappa layernorm64_tail.g")
    claim("LayerNorm output, n = 4, |x| <= 140000, |g|,|b| <= 10",
          mag(tail["y - Y"]), F(1, 10**6), "gappa layernorm64_tail.g")

# --- Time per script, then the fpminimax comparison (information only).
if (out / "times").exists():
    for line in (out / "times").read_text().split("\n"):
        if line:
            name, ms = line.split()
            lines.append(f"time    {name}: {int(ms) / 1000:.1f} s")
for line in sol.splitlines():
    if line.startswith("info "):
        m = re.match(r"info (.*relative error) (\S+)$", line)
        text = f"{m.group(1)} {float(m.group(2)):.3e}" if m else line[5:]
        lines.append("info    " + text)

print("\n".join(lines))
if failures:
    print(f"numerics: {len(failures)} claim(s) not proved", file=sys.stderr)
    sys.exit(1)
print("numerics: every claim proved")
