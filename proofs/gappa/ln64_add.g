# ls_add64_err (core/ls_ops64.c), the step lemma of ls_sum64's behavior
# bounded: for binary64 a, b with |a|, |b| <= 2^37, the binary64 sum
# s = a + b rounded to nearest even is within 2^-16 of the exact a + b, and
# |s| <= 2^38. Gappa's rounding has no overflow; IEEE's sum equals it
# unless |s| exceeds the largest binary64 (about 2^1024), so it is finite.
# With 2^-17 in place of 2^-16 Gappa fails (the bound is tight).
@rnd = float<ieee_64, ne>;
a = rnd(aa);
b = rnd(bb);
s = rnd(a + b);
{ a in [-0x1p37, 0x1p37] /\ b in [-0x1p37, 0x1p37]
  -> s - (a + b) in [-0x1p-16, 0x1p-16] /\ s in [-0x1p38, 0x1p38] }
