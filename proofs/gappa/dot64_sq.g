# ls_dot64_step's second ensures (core/ls_ops64.c), ls_dot64's squares
# (x == w, stride 1): for binary64 acc, a, b with 0 <= acc <= 2^61, |a| <=
# 2^22 and b == a (as reals; b is a here), the binary64 square p = a * a
# rounded to nearest even is >= 0, and so is the binary64 sum acc + p
# (rounding is monotonic and 0 is a binary64 value). Gappa knows a * a >= 0.
@rnd = float<ieee_64, ne>;
acc = rnd(aacc);
a = rnd(aa);
p = rnd(a * a);
s = rnd(acc + p);
{ acc in [0, 0x1p61] /\ a in [-0x1p22, 0x1p22]
  -> p >= 0 /\ s >= 0 }
