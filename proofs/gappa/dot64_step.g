# ls_dot64_step (core/ls_ops64.c), the step of ls_dot64's behavior bounded:
# for binary64 acc, a, b with |acc| <= 2^61 and |a|, |b| <= 2^22, the
# binary64 product p = a * b rounded to nearest even has |p| <= 2^44, and
# the binary64 sum s = acc + p is within 2^8 of the exact acc + p, with
# |s| <= 2^62. Gappa's rounding has no overflow; IEEE's product and sum
# equal it unless the value exceeds the largest binary64 (about 2^1024), so
# both are finite. With 2^7 in place of 2^8, or 2^44 less one ulp for the
# product, Gappa fails (the bounds are tight).
@rnd = float<ieee_64, ne>;
acc = rnd(aacc);
a = rnd(aa);
b = rnd(bb);
p = rnd(a * b);
s = rnd(acc + p);
{ acc in [-0x1p61, 0x1p61] /\ a in [-0x1p22, 0x1p22] /\
  b in [-0x1p22, 0x1p22]
  -> p in [-0x1p44, 0x1p44] /\ s - (acc + p) in [-0x1p8, 0x1p8] /\
     s in [-0x1p62, 0x1p62] }
