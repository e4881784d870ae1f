# Gappa: the second pass of ls_layernorm64 (core/ls_ops64.c, docs/arithmetic.md
# §2.3 steps 5-6) for one output k, line by line, in the domain of
# layernorm64.g (n = 4, |x| <= 140000, |g|, |b| <= 10). The vector facts it
# needs are hypotheses (docs/numerics.md §2.4, hand steps i-iv); check.py
# checks the two numbers they carry against their derivation from the
# proved first pass. Run by numerics/run.sh.

@rnd = float<ieee_64, ne>;

EPS64 = 0x1.4f8b588e368f1p-17;     # LS_LN_EPS64, 1e-5 rounded

var = rnd(var0);                   # var = dot(d, d) / n (computed)
d = rnd(d0);                       # d[k] = x[k] - mean (computed)
g = rnd(g0);                       # gain and bias: binary64 weights
b = rnd(b0);
w = rnd(var + EPS64);              # r = 1.0 / sqrt(var + LS_LN_EPS64);
sr = rnd(sqrt(w));
r = rnd(1 / sr);
z = rnd(d * r);                    # y[k] = (y[k] * r) * g[k] + b[k];
y = rnd(rnd(z * g) + b);

# W = F(d)^2 = sum d^2 / 4 + 1e-5 for the computed deviations; Z = D[k]/F(D)
# the exact normalised value; Y the exact output.
MR = 1 / sqrt(W);
Qd = d * MR;
Y = Z * g + b;

# Hypotheses (hand, docs/numerics.md §2.4):
#  (i, ii) var + EPS64 = W (1 + theta_w), |theta_w| <= 4.5e-16
#          (gamma(4) for the sum of squares, EPS64 against 1e-5; check.py);
#  (iii)   |d[k]| / F(d) <= 2;
#  (iv)    |d[k]/F(d) - D[k]/F(D)| <= (1 + sqrt 3) e / sqrt(1e-5) <= 6.2861e-8
#          with e = layernorm64.g's bound on |d[k] - D[k]| (check.py);
#          |D[k]| / F(D) <= sqrt 3 (D has mean 0, n = 4);
#  ranges: |d| <= 300000 (layernorm64.g proves 280000), so
#          W <= 300000^2 + 1e-5 < 2^40 and var = W (1 + theta_w) - EPS64 too.
{ W in [1e-5, 1b40] /\ var in [0, 1b40] /\ d in [-300000, 300000]
  /\ g in [-10, 10] /\ b in [-10, 10]
  /\ Z in [-1.7320508075688774, 1.7320508075688774]
  /\ (var + EPS64 - W) / W in [-4.5e-16, 4.5e-16]
  /\ Qd in [-2, 2] /\ Qd - Z in [-6.2861e-8, 6.2861e-8]
  ->
  (w - W) / W in ? /\ (r - MR) / MR in ? /\ z - Z in ? /\ y - Y in ? }

(w - W) / W ->
  ((w - (var + EPS64)) / (var + EPS64) + 1) * ((var + EPS64 - W) / W + 1) - 1
  { W <> 0, var + EPS64 <> 0 };
z - Z -> (z - d * r) + Qd * ((r - MR) / MR) + (Qd - Z) { W <> 0 };
