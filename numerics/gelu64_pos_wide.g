# Gappa: the rounding error of ls_gelu64 (core/ls_arith.c, docs/arithmetic.md
# §3.3, with §3.2's tanh inlined) for binary64 x in [3, 20], line by line, as
# an absolute error against the exact tanh-form GELU
#   G(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
# with the real constants. x in [-20, -3]: gelu64_neg_wide.g; [-3, 3]: gelu64_pos.g and
# gelu64_neg.g; |x| >= 20: docs/numerics.md §2.2. Run by numerics/run.sh.

@rnd = float<ieee_64, ne>;

C = 0x1.9884533d43651p-1;          # LS_GELU64_C, sqrt(2/pi) rounded
A = 0x1.6e4e26d4801f7p-5;          # LS_GELU64_A, 0.044715 rounded

x = rnd(xx);
x3 = rnd(rnd(x * x) * x);          # double x3 = (x * x) * x;
u = rnd(C * rnd(x + rnd(A * x3))); # double u = C * (x + A * x3);
a = u;                             # tanh: a = x < 0 ? -x : x (u >= 0 here)
aa = rnd(a + a);                   #       e = ls_exp64(a + a);
# e: ls_exp64's result, a free variable bound by the exp lemma below.
eone = rnd(e + 1);                 #       t = 1.0 - 2.0 / (e + 1.0);
q = rnd(2 / eone);
t = rnd(1 - q);                    #       return t (u >= 0)
y = rnd(rnd(0.5 * x) * rnd(1 + t)); # return (0.5 * x) * (1.0 + tanh(u));

# Exact values: Cr = sqrt(2/pi); MU the exact argument; E = exp(2a) for the
# computed a, so Tu = 1 - 2/(E + 1) = tanh(u) exactly; T = tanh(MU).
MU = Cr * (x + 0.044715 * (x * x * x));
Tu = 1 - 2 / (E + 1);
G = 0.5 * x * (1 + T);

# Hypotheses (docs/numerics.md §2.2):
#  - Cr's 120-bit enclosure: exp64.sollya, lemma sqrt2pi_enclosure;
#  - the exp lemma: exp64.g proves |ls_exp64(z)/exp(z) - 1| <= 2.85e-16 on
#    [UNDERFLOW, 709] for results >= 2^-1022 (check.py checks that the
#    proved bound is below the 2.9e-16 assumed here); exp(603) <= 2^871
#    (lemma exp_603);
#  - |tanh(u) - tanh(MU)| <= sech(3.3)^2 |u - MU| <= 0.0055 |u - MU| when
#    |u|, |MU| >= 3.3 (tanh' = sech^2 decreases in |u|; lemma sech_33);
#    0.0055 * 1.17e-13 <= 6.436e-16.
{ x in [3, 20]
  /\ Cr in [0x1.9884533d436508d0fcb3c500bab8e2p-1, 0x1.9884533d436508d0fcb3c500bab8e4p-1]
  /\ (aa in [0, 603] -> (e - E) / E in [-2.9e-16, 2.9e-16] /\ E in [1, 1b871])
  /\ (u - MU in [-1.17e-13, 1.17e-13] /\ MU in [3.3, 302] /\ u in [3.3, 302]
      -> Tu - T in [-6.436e-16, 6.436e-16])
  ->
  aa - (a + a) in [0, 0] /\ aa in [0, 603] /\ u - MU in [-1.17e-13, 1.17e-13]
  /\ MU in [3.3, 302] /\ u in [3.3, 302]
  /\ u - MU in ? /\ t - Tu in ? /\ y - G in ? }

# Relative error of e + 1 from that of e (E >= 1).
(eone - (E + 1)) / (E + 1) ->
  ((rnd(e + 1) - (e + 1)) / (e + 1) * ((e - E) / E + 1) + (e - E) / E) * (E / (E + 1))
  + (rnd(e + 1) - (e + 1)) / (e + 1) * (1 / (E + 1))
  { E <> 0, E + 1 <> 0, e + 1 <> 0 };
# a + a is the exact double of a.
a + a -> 2 * a;
$ x in 34;
