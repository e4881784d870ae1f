# ls_i2d64 (core/ls_ops64.c): an int n with 1 <= n <= 2^16 converts to
# binary64 exactly ((double)n == n, so finite): ls_layernorm64's (double)n.
@rnd = float<ieee_64, ne>;
@irnd = int<dn>;
n = irnd(nn);
{ n in [1, 0x1p16] -> rnd(n) - n in [0, 0] }
