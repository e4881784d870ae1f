# ls_dot64_add (core/ls_ops64.c), a tree node of ls_dot64's behavior
# bounded: for binary64 a, b with |a|, |b| <= 2^61, the binary64 sum s =
# a + b rounded to nearest even is within 2^8 of the exact a + b, and |s|
# <= 2^62 (so IEEE's sum, which equals it short of overflow, is finite).
# With 2^7 in place of 2^8 Gappa fails.
@rnd = float<ieee_64, ne>;
a = rnd(aa);
b = rnd(bb);
s = rnd(a + b);
{ a in [-0x1p61, 0x1p61] /\ b in [-0x1p61, 0x1p61]
  -> s - (a + b) in [-0x1p8, 0x1p8] /\ s in [-0x1p62, 0x1p62] }
