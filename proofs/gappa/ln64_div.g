# ls_div64_err (core/ls_ops64.c), ls_layernorm64's mean sum / n: for
# binary64 s, d with |s| <= 2^37, 1 <= d <= 2^16 and |s / d| <= 2^20 +
# 2^-15 (exact quotient), the binary64 quotient q = s / d rounded to
# nearest even has |q| <= 2^20 + 2^-14 (so IEEE's quotient, which equals
# Gappa's rounding short of overflow, is finite). With 2^20 in place of
# 2^20 + 2^-14 Gappa fails.
@rnd = float<ieee_64, ne>;
s = rnd(ss);
d = rnd(dd);
q = rnd(s / d);
{ s in [-0x1p37, 0x1p37] /\ d in [1, 0x1p16] /\
  s / d in [-0x1.000000002p20, 0x1.000000002p20]
  -> q in [-0x1.000000004p20, 0x1.000000004p20] }
