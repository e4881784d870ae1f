# ls_div64_err (core/ls_ops64.c), the step lemma of ls_layernorm64's mean
# sum / n: for binary64 s, d with |s| <= 2^37 and 1 <= d <= 2^16, the
# binary64 quotient q = s / d rounded to nearest even is within 2^-17 of
# the exact s / d, and |q| <= 2^37 (so IEEE's quotient is finite, as in
# gappa/ln64_add.g). With 2^-18 in place of 2^-17 Gappa fails.
@rnd = float<ieee_64, ne>;
s = rnd(ss);
d = rnd(dd);
q = rnd(s / d);
{ s in [-0x1p37, 0x1p37] /\ d in [1, 0x1p16]
  -> q - s / d in [-0x1p-17, 0x1p-17] /\ q in [-0x1p37, 0x1p37] }
