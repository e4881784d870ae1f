# ls_vdiv64_err (core/ls_ops64.c), ls_layernorm64's variance dot / n: for
# binary64 s, d with |s| <= 2^61, 1 <= d <= 2^16 and |s / d| <= 2^44 + 2^9
# (exact quotient), the binary64 quotient q = s / d rounded to nearest even
# has |q| <= 2^44 + 2^9 (a binary64 value, so rounding cannot pass it), and
# IEEE's quotient, which equals Gappa's rounding short of overflow, is
# finite. With 2^44 in place of 2^44 + 2^9 Gappa fails.
@rnd = float<ieee_64, ne>;
s = rnd(ss);
d = rnd(dd);
q = rnd(s / d);
{ s in [-0x1p61, 0x1p61] /\ d in [1, 0x1p16] /\
  s / d in [-0x1.000000002p44, 0x1.000000002p44]
  -> q in [-0x1.000000002p44, 0x1.000000002p44] }
