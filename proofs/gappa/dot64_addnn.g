# ls_dot64_add's second ensures (core/ls_ops64.c), a tree node of
# ls_dot64's squares: for binary64 a, b with 0 <= a, b <= 2^61, the
# binary64 sum a + b rounded to nearest even is >= 0.
@rnd = float<ieee_64, ne>;
a = rnd(aa);
b = rnd(bb);
s = rnd(a + b);
{ a in [0, 0x1p61] /\ b in [0, 0x1p61] -> s >= 0 }
