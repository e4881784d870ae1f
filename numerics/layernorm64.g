# Gappa: the first pass of ls_layernorm64 (core/ls_ops64.c, docs/arithmetic.md
# §2.3) for the tiny models' width n = 4 (sequential sums), line by line:
# the errors of the mean and of the deviations d[k] = x[k] - mean, for
# binary64 inputs |x[k]| <= 140000 (the largest LayerNorm input of a tiny
# model with weights clipped to B <= 10; docs/numerics.md §2.4). The second
# pass (variance, 1/sqrt, gain and bias) is bounded in numerics/check.py
# from these two numbers. Run by numerics/run.sh.

@rnd = float<ieee_64, ne>;

x0 = rnd(xx0);
x1 = rnd(xx1);
x2 = rnd(xx2);
x3 = rnd(xx3);
s1 = rnd(0 + x0);                  # acc = 0.0; acc = acc + x[k], k = 0..3
s2 = rnd(s1 + x1);
s3 = rnd(s2 + x2);
s4 = rnd(s3 + x3);
mean = rnd(s4 / 4);                # mean = sum / (double)n
d0 = rnd(x0 - mean);               # y[k] = x[k] - mean
d1 = rnd(x1 - mean);
d2 = rnd(x2 - mean);
d3 = rnd(x3 - mean);

M = (x0 + x1 + x2 + x3) / 4;       # the exact mean and deviations

{ x0 in [-140000, 140000] /\ x1 in [-140000, 140000]
  /\ x2 in [-140000, 140000] /\ x3 in [-140000, 140000]
  ->
  s1 - x0 in [0, 0]
  /\ mean - M in ?
  /\ d0 - (x0 - M) in ? /\ d1 - (x1 - M) in ?
  /\ d2 - (x2 - M) in ? /\ d3 - (x3 - M) in ?
  /\ d0 in ? /\ d1 in ? /\ d2 in ? /\ d3 in ? }

# 0 + x0 is x0, a binary64: the first addition is exact.
0 + x0 -> x0;
