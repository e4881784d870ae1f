# ls_sub64_err (core/ls_ops64.c), the step lemma of ls_layernorm64's
# deviations x[k] - mean: as gappa/ln64_add.g, for s = a - b.
@rnd = float<ieee_64, ne>;
a = rnd(aa);
b = rnd(bb);
s = rnd(a - b);
{ a in [-0x1p37, 0x1p37] /\ b in [-0x1p37, 0x1p37]
  -> s - (a - b) in [-0x1p-16, 0x1p-16] /\ s in [-0x1p38, 0x1p38] }
