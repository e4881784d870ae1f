# ls_sub64_err (core/ls_ops64.c), ls_layernorm64's deviation x[k] - mean:
# for binary64 a, b with |a| <= 2^20 and |b| <= 2^20 + 2^-14, the binary64
# difference s = a - b rounded to nearest even has |s| <= 2^21 + 2^-13
# (ls_dev64_ok). Gappa's rounding has no overflow; IEEE's difference equals
# it unless |s| exceeds the largest binary64, so it is finite too. With
# 2^21 in place of 2^21 + 2^-13 Gappa fails.
@rnd = float<ieee_64, ne>;
a = rnd(aa);
b = rnd(bb);
s = rnd(a - b);
{ a in [-0x1p20, 0x1p20] /\ b in [-0x1.000000004p20, 0x1.000000004p20]
  -> s in [-0x1.000000004p21, 0x1.000000004p21] }
