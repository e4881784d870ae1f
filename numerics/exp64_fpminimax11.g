# Gappa: NOT the spec's exp. numerics/exp64.g with the spec's degree-13
# Taylor polynomial replaced by Sollya's degree-11 fpminimax (binary64
# coefficients, c0 = 1, relative error on [-0x1.63p-2, 0x1.63p-2]; printed by
# exp64.sollya), everything else as ls_exp64 computes it. Run by
# numerics/run.sh for information only: the certified total this polynomial
# would give, for docs/numerics.md §2.1's comparison (the spec is unchanged).

@rnd = float<ieee_64, ne>;

# §3.1 constants, as in core/ls_arith.c.
IL  = 0x1.71547652b82fep+0;   # INV_LN2
LHI = 0x1.62e42fee00000p-1;   # LN2_HI
LLO = 0x1.a39ef35793c76p-33;  # LN2_LO
RND = 0x1.8p52;               # ROUNDER
c0 = 0x1p0;
c1 = 0x1p0;
c2 = 0x1.000000000000cp-1;
c3 = 0x1.5555555555518p-3;
c4 = 0x1.555555554fe5dp-5;
c5 = 0x1.111111112058dp-7;
c6 = 0x1.6c16c185ed047p-10;
c7 = 0x1.a01a0151c5454p-13;
c8 = 0x1.a0199608775d5p-16;
c9 = 0x1.71dece4ded2ap-19;
c10 = 0x1.28b0ad2414f0cp-22;
c11 = 0x1.ae07dd0100e57p-26;

x = rnd(xx);                       # the argument, a binary64
t = rnd(x * IL);                   # double t = x * LS_E64_INV_LN2;
a1 = rnd(t + RND);                 # double nf = (t + LS_E64_ROUNDER)
nf = rnd(a1 - RND);                #             - LS_E64_ROUNDER;
h = rnd(nf * LHI);                 # double r = (x - nf * LS_E64_LN2_HI)
r1 = rnd(x - h);
l = rnd(nf * LLO);                 #            - nf * LS_E64_LN2_LO;
r = rnd(r1 - l);
p10 = rnd(rnd(c11 * r) + c10);     # p = c[11]; p = p * r + c[k], k = 10..0
p9 = rnd(rnd(p10 * r) + c9);
p8 = rnd(rnd(p9 * r) + c8);
p7 = rnd(rnd(p8 * r) + c7);
p6 = rnd(rnd(p7 * r) + c6);
p5 = rnd(rnd(p6 * r) + c5);
p4 = rnd(rnd(p5 * r) + c4);
p3 = rnd(rnd(p4 * r) + c3);
p2 = rnd(rnd(p3 * r) + c2);
p1 = rnd(rnd(p2 * r) + c1);
p0 = rnd(rnd(p1 * r) + c0);
# (scaling by 2^n: exact for results >= 2^-1022, one rounding below;
#  docs/numerics.md §2.1, hand step.)

# The same polynomial evaluated exactly at the computed r.
Mp10 = c11 * r + c10;
Mp9 = Mp10 * r + c9;
Mp8 = Mp9 * r + c8;
Mp7 = Mp8 * r + c7;
Mp6 = Mp7 * r + c6;
Mp5 = Mp6 * r + c5;
Mp4 = Mp5 * r + c4;
Mp3 = Mp4 * r + c3;
Mp2 = Mp3 * r + c2;
Mp1 = Mp2 * r + c1;
Mp0 = Mp1 * r + c0;

# The exact reduced argument for the code's n (ln2 is the real ln 2).
Mr = x - nf * ln2;

# Hypotheses (each a certified or elementary fact; docs/numerics.md §2.1):
#  - ln2's 120-bit enclosure: exp64.sollya, lemma ln2_enclosure;
#  - Ert = exp(r): Sollya's certified supnorm of the polynomial on
#    [-0x1.63p-2, 0x1.63p-2] (exp64.sollya, lemma fpminimax11_rel_le_hypothesis);
#  - Er = exp(Mr): exp(r)/exp(Mr) = exp(r - Mr) (lemma exp_shift), and
#    exp on [-0x1.63p-2, 0x1.63p-2] lies in [0.7, 1.5] (lemma exp_on_I);
#  - when n = 0 the code computes nf * LN2_HI = 0 * LN2_HI = 0 and x - 0 = x
#    exactly (IEEE 754: a zero product is exact, x - 0 = x); Gappa 1.4
#    bounds a rounded zero by the subnormal half-ulp instead, so this is
#    stated. Gappa proves n = 0 on [-0.25, 0.25] itself.
# Each premise (r, Mr, r - Mr in range; n = 0) is proved below.
{ x in [-0x1.74910d52d3052p+9, 709]
  /\ ln2 in [0x1.62e42fefa39ef35793c7673007e5ecp-1, 0x1.62e42fefa39ef35793c7673007e5eep-1]
  /\ (r in [-0x1.63p-2, 0x1.63p-2] -> (Mp0 - Ert) / Ert in [-4.5266e-18, 4.5266e-18])
  /\ (r - Mr in [-1b-54, 1b-54] -> (Ert - Er) / Er in [-1b-54, 0x1.00000000000004p-54])
  /\ (Mr in [-0x1.63p-2, 0x1.63p-2] -> Er in [0.7, 1.5])
  /\ (nf in [0, 0] -> h - nf * LHI in [0, 0] /\ r1 - (x - h) in [0, 0]
                      /\ l - nf * LLO in [0, 0] /\ r - (r1 - l) in [0, 0])
  ->
  r in [-0x1.63p-2, 0x1.63p-2] /\ Mr in [-0x1.63p-2, 0x1.63p-2]
  /\ r - Mr in [-1b-54, 1b-54]
  /\ h - nf * LHI in [0, 0] /\ r1 - (x - h) in [0, 0]
  /\ nf in [-1075, 1023] /\ @FIX(nf, 0) /\ nf - t in ?
  /\ (p0 - Mp0) / Mp0 in ? /\ (p0 - Er) / Er in ? }

# nf is an integer within 1/2 of t (the ROUNDER trick: a1 is in [2^52, 2^53)).
nf - t -> (nf - (a1 - RND)) + (a1 - (t + RND));
# Range of the exact reduced argument, from |t - nf| <= 1/2.
x - nf * ln2 -> ((x * IL - t) + (t - nf)) / IL + nf * (1 / IL - ln2);
# x - nf * LN2_HI is exact (Sterbenz): bound it through the exact argument.
r1 -> (r1 - (x - h)) + (x - nf * ln2) + nf * (ln2 - LHI) - (h - nf * LHI);
# Cody-Waite: what the two-constant reduction loses.
r - Mr -> (r - (r1 - l)) - (l - nf * LLO) + nf * (ln2 - LHI - LLO)
          + (r1 - (x - h)) - (h - nf * LHI);
# One binade of x per case, so that Gappa knows the quantum of x.
$ x in (-512, -256, -128, -64, -32, -16, -8, -4, -2, -1, -0.5, -0.25,
        0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512);
