# ls_rsqrt64 (core/ls_ops64.c), ls_layernorm64's r = 1 / sqrt(v) for v =
# var + eps (ls_ln64_r(r, v): r == ls_ln64_rv(v), the binary64 division of
# 1.0 by the binary64 square root of v): for binary64 v with 2^-17 <= v <=
# 2^44 + 2^9 (ls_veps64), s = sqrt(v) rounded to nearest even and r = 1 / s
# rounded to nearest even have 2^-9 <= s <= 2^23 and 2^-23 <= r <= 2^9
# (IEEE's operations, which equal Gappa's rounding short of overflow, so r
# is finite and positive; r <= 2^8.5 in fact). With 2^-22 in place of
# 2^-23, or 2^8 in place of 2^9, Gappa fails.
@rnd = float<ieee_64, ne>;
v = rnd(vv);
s = rnd(sqrt(v));
r = rnd(1 / s);
{ v in [0x1p-17, 0x1.000000002p44]
  -> s in [0x1p-9, 0x1p23] /\ r in [0x1p-23, 0x1p9] }
