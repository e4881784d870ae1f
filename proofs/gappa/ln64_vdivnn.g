# ls_vdiv64_err's second ensures (core/ls_ops64.c), ls_layernorm64's
# variance of a nonnegative dot product: for binary64 s, d with 0 <= s <=
# 2^61 and 1 <= d <= 2^16, the binary64 quotient s / d rounded to nearest
# even is >= 0.
@rnd = float<ieee_64, ne>;
s = rnd(ss);
d = rnd(dd);
q = rnd(s / d);
{ s in [0, 0x1p61] /\ d in [1, 0x1p16] -> q >= 0 }
