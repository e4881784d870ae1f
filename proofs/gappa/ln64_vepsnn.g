# ls_veps64's second ensures (core/ls_ops64.c), ls_layernorm64's var + eps
# for var >= 0: for binary64 v with 0 <= v <= 2^44 + 2^9, the binary64 sum
# v + eps rounded to nearest even (eps = LS_LN_EPS64, about 1.0e-5) is at
# least 2^-17 (about 7.6e-6), so the square root's operand is positive.
# With 2^-16 in place of 2^-17 Gappa fails.
@rnd = float<ieee_64, ne>;
v = rnd(vv);
r = rnd(v + 0x1.4f8b588e368f1p-17);
{ v in [0, 0x1.000000002p44] -> r >= 0x1p-17 }
