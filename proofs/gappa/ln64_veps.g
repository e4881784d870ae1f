# ls_veps64 (core/ls_ops64.c), ls_layernorm64's var + eps (eps = 1e-5
# rounded to binary64, LS_LN_EPS64): for binary64 v with |v| <= 2^44 + 2^9,
# the binary64 sum r = v + eps rounded to nearest even has |r| <= 2^44 +
# 2^9 (eps is below half an ulp there; IEEE's sum, which equals Gappa's
# rounding short of overflow, is finite). With 2^44 in place of 2^44 + 2^9
# Gappa fails.
@rnd = float<ieee_64, ne>;
v = rnd(vv);
r = rnd(v + 0x1.4f8b588e368f1p-17);
{ v in [-0x1.000000002p44, 0x1.000000002p44]
  -> r in [-0x1.000000002p44, 0x1.000000002p44] }
