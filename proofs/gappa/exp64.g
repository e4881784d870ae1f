# ls_exp64 (core/ls_arith.c), assertions ls_exp64_t and ls_exp64_nf: for a
# binary64 x in [UNDERFLOW, OVERFLOW] (the path after §3.1 step 1),
# t = x * INV_LN2 and nf = (t + ROUNDER) - ROUNDER, each rounded to nearest
# even, lie in [-1075, 1024]. Gappa proves it (run by proofs/run.sh).
@rnd = float<ieee_64, ne>;
x = rnd(xx);
t = rnd(x * 0x1.71547652b82fep+0);
nf = rnd(rnd(t + 0x1.8p52) - 0x1.8p52);
{ x in [-0x1.74910d52d3052p+9, 0x1.62e42fefa39efp+9]
  -> t in [-1075, 1024] /\ nf in [-1075, 1024] }
