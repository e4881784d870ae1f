# ls_exp32 (core/ls_arith.c), assertions ls_exp32_t and ls_exp32_nf: for a
# binary32 x in [UNDERFLOW, OVERFLOW], t = x * INV_LN2 and
# nf = (t + ROUNDER) - ROUNDER in binary32 lie in [-150, 128].
@rnd = float<ieee_32, ne>;
x = rnd(xx);
t = rnd(x * 0x1.715476p+0);
nf = rnd(rnd(t + 0x1.8p23) - 0x1.8p23);
{ x in [-0x1.9fe368p+6, 0x1.62e42ep+6]
  -> t in [-150, 128] /\ nf in [-150, 128] }
