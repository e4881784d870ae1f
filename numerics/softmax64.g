# Gappa: the last step of ls_softmax64 (core/ls_ops64.c, docs/arithmetic.md
# §2.4), p[j] = e[j] / sum, for one output j, given the facts of
# docs/numerics.md §2.3 steps 1-4 about the terms and their sum (hand
# reasoning, as hypotheses), for n <= 4 (tiny4) and n <= 128. Run by
# numerics/run.sh.

@rnd = float<ieee_64, ne>;

U = 1b-53;
RHO = 2.9e-16;                       # the exp lemma (check.py: >= exp64.g's)
BETA1 = U * 0.3679 / (1 - U);        # |exp(RN(d)) - exp(d)| <= u / (e (1 - u))
BETA = BETA1 * (1 + RHO) + 1b-1075 * (1 + 1b-40);
G3 = 3 * U / (1 - 3 * U);            # gamma(n - 1), n = 4
G127 = 127 * U / (1 - 127 * U);      # gamma(n - 1), n = 128

# n = 4. E = exp(s[j] - m) and S = sum over k of exp(s[k] - m) (exact; S >= 1,
# the maximum's term is 1); the computed term e = E (1 + r1) + b1 with
# |r1| <= RHO, |b1| <= BETA (steps 2-3); the exact sum of the computed terms
# Se = S (1 + r2) + b2 with |r2| <= RHO, |b2| <= n BETA; the computed sum
# S~ = Se (1 + th), |th| <= gamma(n - 1) (step 4). The q's lie in [-1, 1].
r14 = RHO * q14;
b14 = BETA * q24;
r24 = RHO * q34;
b24 = 4 * BETA * q44;
th4 = G3 * q54;
e4 = E4 * (1 + r14) + b14;
St4 = (S4 * (1 + r24) + b24) * (1 + th4);
p4 = rnd(e4 / St4);                  # p[j] = p[j] / sum;
P4 = E4 / S4;

r1n = RHO * q1n;
b1n = BETA * q2n;
r2n = RHO * q3n;
b2n = 128 * BETA * q4n;
thn = G127 * q5n;
en = En * (1 + r1n) + b1n;
Stn = (Sn * (1 + r2n) + b2n) * (1 + thn);
pn = rnd(en / Stn);
Pn = En / Sn;

{ E4 in [0, 1] /\ S4 in [1, 4] /\ q14 in [-1, 1] /\ q24 in [-1, 1]
  /\ q34 in [-1, 1] /\ q44 in [-1, 1] /\ q54 in [-1, 1]
  /\ En in [0, 1] /\ Sn in [1, 128] /\ q1n in [-1, 1] /\ q2n in [-1, 1]
  /\ q3n in [-1, 1] /\ q4n in [-1, 1] /\ q5n in [-1, 1]
  ->
  p4 - P4 in ? /\ pn - Pn in ? }

# e / S~ - E / S, written through P = E / S <= 1 and the small factors.
e4 / St4 - P4 -> P4 * ((1 + r14) / ((1 + r24 + b24 / S4) * (1 + th4)) - 1)
  + b14 / (S4 * (1 + r24 + b24 / S4) * (1 + th4))
  { S4 <> 0, St4 <> 0, 1 + th4 <> 0, 1 + r24 + b24 / S4 <> 0 };
en / Stn - Pn -> Pn * ((1 + r1n) / ((1 + r2n + b2n / Sn) * (1 + thn)) - 1)
  + b1n / (Sn * (1 + r2n + b2n / Sn) * (1 + thn))
  { Sn <> 0, Stn <> 0, 1 + thn <> 0, 1 + r2n + b2n / Sn <> 0 };
