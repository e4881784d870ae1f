/* Implements docs/arithmetic.md §3 (exp, tanh, GELU). See ls_arith.h. */
#include "ls_arith.h"

/* Bit casts through a union: defined behaviour in C, and free of memcpy so
 * that a freestanding build needs no libc. */
typedef union {
  double d;
  uint64_t u;
} ls_bits64;
typedef union {
  float f;
  uint32_t u;
} ls_bits32;

/* The ghost lemmas of ls_arith.h: induction on the rows. */
/*@ ghost
  void ls_row(int k, int n, int d) {
    /@ loop invariant 0 <= i <= k;
       loop invariant 0 <= i * d && i * d + (n - i) * d == n * d;
       loop invariant i * d <= 2147483647 * i;
       loop assigns i;
       loop variant k - i;
    @/
    for (int i = 0; i < k; ++i) {
    }
    /@ loop invariant k + 1 <= j <= n;
       loop invariant k * d + d <= j * d;
       loop assigns j;
       loop variant n - j;
    @/
    for (int j = k + 1; j < n; ++j) {
    }
  }
*/
/*@ ghost
  void ls_rows_at(int n, int d, int o) {
    /@ loop invariant 0 <= i <= n;
       loop invariant 0 <= i * d;
       loop invariant \forall integer j; 0 <= j < i ==>
         0 <= o + j * d < i * d;
       loop assigns i;
       loop variant n - i;
    @/
    for (int i = 0; i < n; ++i) {
    }
  }
*/

/*@ assigns \nothing;
    admit ensures \is_plus_infinity(\result);
*/
static double ls_inf64(void) {
  ls_bits64 b;
  b.u = (uint64_t)0x7ff0000000000000ULL;
  return b.d;
}

/*@ assigns \nothing;
    admit ensures \is_plus_infinity(\result);
*/
static float ls_inf32(void) {
  ls_bits32 b;
  b.u = 0x7f800000u;
  return b.f;
}

/*@ requires -1022 <= n <= 1023;
    assigns \nothing;
    admit ensures ls_same64(\result, ls_pow2_64_l(n));
*/
double ls_pow2_64(int n) {
  ls_bits64 b;
  b.u = (uint64_t)(n + 1023) << 52;
  return b.d;
}

/*@ requires -126 <= n <= 127;
    assigns \nothing;
    admit ensures ls_same32(\result, ls_pow2_32_l(n));
*/
float ls_pow2_32(int n) {
  ls_bits32 b;
  b.u = (uint32_t)(n + 127) << 23;
  return b.f;
}

/* §3.1 constants (binary64). LN2_HI has 32 trailing zero bits, so n*LN2_HI
 * is exact for |n| <= 1100; LN2_LO carries the rest of ln 2 (fdlibm's
 * Cody-Waite pair). The polynomial is Taylor's, 1/k! rounded to nearest. */
#define LS_E64_OVERFLOW 0x1.62e42fefa39efp+9   /* above: +inf */
#define LS_E64_UNDERFLOW -0x1.74910d52d3052p+9 /* below: +0 */
#define LS_E64_INV_LN2 0x1.71547652b82fep+0
#define LS_E64_LN2_HI 0x1.62e42fee00000p-1
#define LS_E64_LN2_LO 0x1.a39ef35793c76p-33
#define LS_E64_ROUNDER 0x1.8p52 /* adding and subtracting rounds to integer */

static const double ls_exp64_poly[14] = {
    0x1.0000000000000p+0,  0x1.0000000000000p+0,  0x1.0000000000000p-1,
    0x1.5555555555555p-3,  0x1.5555555555555p-5,  0x1.1111111111111p-7,
    0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-16,
    0x1.71de3a556c734p-19, 0x1.27e4fb7789f5cp-22, 0x1.ae64567f544e4p-26,
    0x1.1eed8eff8d898p-29, 0x1.6124613a86d09p-33};

double ls_exp64(double x) {
  /* §3.4: NaN out as it came in. Checked first: nothing below may see a
   * NaN (converting one to int is undefined behaviour in C). */
  /*@ assert ls_exp64_special:
        (\is_NaN(x) ==> ls_same64(ls_exp64_f(x), x)) &&
        (ls_lt64((double)0x1.62e42fefa39efp+9, x) ==>
           \is_plus_infinity(ls_exp64_f(x))) &&
        (ls_lt64(x, (double)-0x1.74910d52d3052p+9) ==>
           ls_same64(ls_exp64_f(x), (double)0.0));
  */
  if (x != x) return x;
  if (x > LS_E64_OVERFLOW) return ls_inf64();
  if (x < LS_E64_UNDERFLOW) return 0.0;
  /*@ assert ls_exp64_f: ls_same64(ls_exp64_f(x), ls_e64_core(x)); */
  /* n = round-half-even(x / ln 2), by the add-and-subtract trick. */
  double t = x * LS_E64_INV_LN2;
  /*@ assert ls_exp64_t: -1075 <= t <= 1024; */
  double nf = (t + LS_E64_ROUNDER) - LS_E64_ROUNDER;
  /*@ assert ls_exp64_nf: -1075 <= nf <= 1024; */
  double r = (x - nf * LS_E64_LN2_HI) - nf * LS_E64_LN2_LO;
  /*@ assert ls_exp64_n_range: -1075 <= (int)nf <= 1024; */
  /* Horner from the highest coefficient. */
  double p = ls_exp64_poly[13];
  /*@ loop invariant -1 <= k <= 12;
      loop invariant k == 12 ==> ls_same64(p, ls_e64_h(r, 13));
      loop invariant k == 11 ==> ls_same64(p, ls_e64_h(r, 12));
      loop invariant k == 10 ==> ls_same64(p, ls_e64_h(r, 11));
      loop invariant k == 9 ==> ls_same64(p, ls_e64_h(r, 10));
      loop invariant k == 8 ==> ls_same64(p, ls_e64_h(r, 9));
      loop invariant k == 7 ==> ls_same64(p, ls_e64_h(r, 8));
      loop invariant k == 6 ==> ls_same64(p, ls_e64_h(r, 7));
      loop invariant k == 5 ==> ls_same64(p, ls_e64_h(r, 6));
      loop invariant k == 4 ==> ls_same64(p, ls_e64_h(r, 5));
      loop invariant k == 3 ==> ls_same64(p, ls_e64_h(r, 4));
      loop invariant k == 2 ==> ls_same64(p, ls_e64_h(r, 3));
      loop invariant k == 1 ==> ls_same64(p, ls_e64_h(r, 2));
      loop invariant k == 0 ==> ls_same64(p, ls_e64_h(r, 1));
      loop invariant k == -1 ==> ls_same64(p, ls_e64_h(r, 0));
      loop assigns k, p;
      loop variant k + 1;
  */
  for (int k = 12; k >= 0; --k) p = p * r + ls_exp64_poly[k];
  int n = (int)nf;
  /*@ assert ls_exp64_horner:
        ls_same64(r, ls_e64_r(x)) && ls_same64(p, ls_e64_h(r, 0)); */
  /*@ assert ls_exp64_n: ls_same64(nf, ls_e64_nf(x)) && n == ls_e64_n(x); */
  /* For WP's simplifier, which prunes a branch only on a literal bound:
   * under behavior small this reads n <= 1023, so the n > 1023 branch goes
   * and the small ensures is a congruence (z3 0.12 s; with the branch kept
   * z3 bit-blasted the whole context, 2 to 3.5 s CPU). */
  /*@ assert ls_exp64_small_n: ls_e64_n(x) < -1022 ==> n <= 1023; */
  /*@ assert ls_exp64_core: ls_same64(ls_e64_core(x), ls_e64_scale(p, n)); */
  /*@ assert ls_exp64_scale_big: n > 1023 ==> ls_same64(ls_e64_scale(p, n),
        ls_mul64(ls_mul64(p, ls_pow2_64_l(n - 1)), (double)2.0)); */
  /*@ assert ls_exp64_scale_small: n < -1022 ==> ls_same64(ls_e64_scale(p, n),
        ls_mul64(ls_mul64(p, ls_pow2_64_l(n + 54)), (double)0x1p-54)); */
  /*@ assert ls_exp64_scale_normal: -1022 <= n <= 1023 ==>
        ls_same64(ls_e64_scale(p, n), ls_mul64(p, ls_pow2_64_l(n))); */
  /* Scale by 2^n with exactly one rounding: the first product is exact. */
  if (n > 1023) return (p * ls_pow2_64(n - 1)) * 2.0;
  if (n < -1022) return (p * ls_pow2_64(n + 54)) * 0x1p-54;
  return p * ls_pow2_64(n);
}

/* ACSL (docs/proofs.md): §3.2's tanh in binary64 as logic, with §3.4's
 * NaN: a = |x| (a negation when x < 0.0), e = exp(a + a) (ls_exp64_f),
 * t = 1.0 - 2.0 / (e + 1.0) (ls_th64_u(e)), then -t when x < 0.0. The
 * definition of ls_th64_u fires only where e + 1.0 is a term (the code's
 * own), so a goal holds one binary64 division, not one per tanh term. */
/*@ axiomatic LsTanh64 {
      logic double ls_th64_u(double e);
      axiom ls_th64_u_def: \forall double e;
        ls_same64((TRIGGER: ls_th64_u(e)),
                  ls_sub64((double)1.0,
                           ls_div64((double)2.0,
                                    (TRIGGER: ls_add64(e, (double)1.0)))));
      logic double ls_tanh64_f(double x);
      axiom ls_tanh64_nan: \forall double x;
        \is_NaN(x) ==> ls_same64(ls_tanh64_f(x), x);
      axiom ls_tanh64_neg: \forall double x;
        !\is_NaN(x) && ls_lt64(x, (double)0.0) ==>
          ls_same64(ls_tanh64_f(x),
                    ls_neg64(ls_th64_u(ls_exp64_f(
                      ls_add64(ls_neg64(x), ls_neg64(x))))));
      axiom ls_tanh64_pos: \forall double x;
        !\is_NaN(x) && !ls_lt64(x, (double)0.0) ==>
          ls_same64(ls_tanh64_f(x), ls_th64_u(ls_exp64_f(ls_add64(x, x))));
    }
*/
/*@ assigns \nothing;
    ensures ls_same64(\result, ls_tanh64_f(x));
*/
double ls_tanh64(double x) {
  if (x != x) return x; /* §3.4 */
  double a = x < 0.0 ? -x : x;
  /*@ assert ls_tanh64_a:
        (ls_lt64(x, (double)0.0) ==> ls_same64(a, ls_neg64(x))) &&
        (!ls_lt64(x, (double)0.0) ==> ls_same64(a, x)); */
  double e = ls_exp64(a + a);
  /*@ assert ls_tanh64_e: ls_same64(e, ls_exp64_f(ls_add64(a, a))); */
  double t = 1.0 - 2.0 / (e + 1.0);
  /*@ assert ls_tanh64_t: ls_same64(t, ls_th64_u(e)); */
  return x < 0.0 ? -t : t;
}

#define LS_GELU64_C 0x1.9884533d43651p-1 /* sqrt(2/pi) */
#define LS_GELU64_A 0x1.6e4e26d4801f7p-5 /* 0.044715 */

/* ACSL (docs/proofs.md): §3.3's GELU in binary64 as logic, with §3.4's
 * NaN: u = C * (x + A * ((x * x) * x)) (ls_g64_u), then (0.5 * x) * (1.0 +
 * tanh(u)) with tanh ls_tanh64_f, one IEEE binary64 operation per step on
 * the code's constants. The second case is triggered on ls_gelu64_f(x)
 * together with ls_g64_u(x), which ls_gelu64's own assertion names, so a
 * caller that sees ls_gelu64_f in the call's ensures does not unfold it
 * (the tiny model's GELU loop). */
/*@ logic double ls_g64_u(double x) =
      ls_mul64((double)0x1.9884533d43651p-1,
               ls_add64(x, ls_mul64((double)0x1.6e4e26d4801f7p-5,
                                    ls_mul64(ls_mul64(x, x), x))));
    axiomatic LsGelu64 {
      logic double ls_gelu64_f(double x);
      axiom ls_gelu64_nan: \forall double x;
        \is_NaN(x) ==> ls_same64(ls_gelu64_f(x), x);
      axiom ls_gelu64_num: \forall double x;
        !\is_NaN(x) ==>
          ls_same64((TRIGGER: ls_gelu64_f(x)),
                    ls_mul64(ls_mul64((double)0.5, x),
                             ls_add64((double)1.0,
                                      ls_tanh64_f((TRIGGER: ls_g64_u(x))))));
    }
*/
/*@ assigns \nothing;
    ensures ls_same64(\result, ls_gelu64_f(x));
*/
double ls_gelu64(double x) {
  if (x != x) return x; /* §3.4 */
  double x3 = (x * x) * x;
  double u = LS_GELU64_C * (x + LS_GELU64_A * x3);
  /*@ assert ls_gelu64_u: ls_same64(u, ls_g64_u(x)); */
  return (0.5 * x) * (1.0 + ls_tanh64(u));
}

/* §3.1 constants (binary32): fdlibm expf's Cody-Waite pair, Taylor to r^7. */
#define LS_E32_OVERFLOW 0x1.62e42ep+6f
#define LS_E32_UNDERFLOW -0x1.9fe368p+6f
#define LS_E32_INV_LN2 0x1.715476p+0f
#define LS_E32_LN2_HI 0x1.62e400p-1f
#define LS_E32_LN2_LO 0x1.7f7d1cp-20f
#define LS_E32_ROUNDER 0x1.8p23f

static const float ls_exp32_poly[8] = {
    0x1.000000p+0f, 0x1.000000p+0f, 0x1.000000p-1f,  0x1.555556p-3f,
    0x1.555556p-5f, 0x1.111112p-7f, 0x1.6c16c2p-10f, 0x1.a01a02p-13f};

float ls_exp32(float x) {
  /*@ assert ls_exp32_special:
        (\is_NaN(x) ==> ls_same32(ls_exp32_f(x), x)) &&
        (ls_lt32((float)0x1.62e42ep+6, x) ==>
           \is_plus_infinity(ls_exp32_f(x))) &&
        (ls_lt32(x, (float)-0x1.9fe368p+6) ==>
           ls_same32(ls_exp32_f(x), (float)0.0));
  */
  if (x != x) return x; /* §3.4 */
  if (x > LS_E32_OVERFLOW) return ls_inf32();
  if (x < LS_E32_UNDERFLOW) return 0.0f;
  /*@ assert ls_exp32_f: ls_same32(ls_exp32_f(x), ls_e32_core(x)); */
  float t = x * LS_E32_INV_LN2;
  /*@ assert ls_exp32_t: -150 <= t <= 128; */
  float nf = (t + LS_E32_ROUNDER) - LS_E32_ROUNDER;
  /*@ assert ls_exp32_nf: -150 <= nf <= 128; */
  float r = (x - nf * LS_E32_LN2_HI) - nf * LS_E32_LN2_LO;
  /*@ assert ls_exp32_n_range: -150 <= (int)nf <= 128; */
  float p = ls_exp32_poly[7];
  /*@ loop invariant -1 <= k <= 6;
      loop invariant k == 6 ==> ls_same32(p, ls_e32_h(r, 7));
      loop invariant k == 5 ==> ls_same32(p, ls_e32_h(r, 6));
      loop invariant k == 4 ==> ls_same32(p, ls_e32_h(r, 5));
      loop invariant k == 3 ==> ls_same32(p, ls_e32_h(r, 4));
      loop invariant k == 2 ==> ls_same32(p, ls_e32_h(r, 3));
      loop invariant k == 1 ==> ls_same32(p, ls_e32_h(r, 2));
      loop invariant k == 0 ==> ls_same32(p, ls_e32_h(r, 1));
      loop invariant k == -1 ==> ls_same32(p, ls_e32_h(r, 0));
      loop assigns k, p;
      loop variant k + 1;
  */
  for (int k = 6; k >= 0; --k) p = p * r + ls_exp32_poly[k];
  int n = (int)nf;
  /*@ assert ls_exp32_horner:
        ls_same32(r, ls_e32_r(x)) && ls_same32(p, ls_e32_h(r, 0)); */
  /*@ assert ls_exp32_n: ls_same32(nf, ls_e32_nf(x)) && n == ls_e32_n(x); */
  /* As in ls_exp64: the literal bound lets WP's simplifier prune the
   * n > 127 branch under behavior small. */
  /*@ assert ls_exp32_small_n: ls_e32_n(x) < -126 ==> n <= 127; */
  /*@ assert ls_exp32_core: ls_same32(ls_e32_core(x), ls_e32_scale(p, n)); */
  /*@ assert ls_exp32_scale_big: n > 127 ==> ls_same32(ls_e32_scale(p, n),
        ls_mul32(ls_mul32(p, ls_pow2_32_l(n - 1)), (float)2.0)); */
  /*@ assert ls_exp32_scale_small: n < -126 ==> ls_same32(ls_e32_scale(p, n),
        ls_mul32(ls_mul32(p, ls_pow2_32_l(n + 25)), (float)0x1p-25)); */
  /*@ assert ls_exp32_scale_normal: -126 <= n <= 127 ==>
        ls_same32(ls_e32_scale(p, n), ls_mul32(p, ls_pow2_32_l(n))); */
  if (n > 127) return (p * ls_pow2_32(n - 1)) * 2.0f;
  if (n < -126) return (p * ls_pow2_32(n + 25)) * 0x1p-25f;
  return p * ls_pow2_32(n);
}

/* ACSL (docs/proofs.md): §3.2's tanh in binary32 as logic, as binary64's
 * LsTanh64 above, each step one IEEE binary32 operation and exp
 * ls_exp32_f: a = ls_th32_a(x) (-x when x < 0.0f, else x), e = exp(a + a),
 * t = ls_th32_u(e) = 1.0f - 2.0f / (e + 1.0f), then -t when x < 0.0f. The
 * two non-NaN cases are triggered on ls_tanh32_f(x) together with
 * ls_th32_a(x), which only ls_tanh32's own assertion names, so a caller
 * (ls_gelu32) that sees ls_tanh32_f in the call's ensures does not unfold
 * tanh into exp and a binary32 division. */
/*@ axiomatic LsTanh32 {
      logic float ls_th32_a(float x);
      axiom ls_th32_a_neg: \forall float x;
        ls_lt32(x, (float)0.0) ==> ls_same32(ls_th32_a(x), ls_neg32(x));
      axiom ls_th32_a_pos: \forall float x;
        !ls_lt32(x, (float)0.0) ==> ls_same32(ls_th32_a(x), x);
      logic float ls_th32_u(float e);
      axiom ls_th32_u_def: \forall float e;
        ls_same32(ls_th32_u(e),
                  ls_sub32((float)1.0,
                           ls_div32((float)2.0, ls_add32(e, (float)1.0))));
      logic float ls_tanh32_f(float x);
      axiom ls_tanh32_nan: \forall float x;
        \is_NaN(x) ==> ls_same32(ls_tanh32_f(x), x);
      axiom ls_tanh32_neg: \forall float x;
        !\is_NaN(x) && ls_lt32(x, (float)0.0) ==>
          ls_same32((TRIGGER: ls_tanh32_f(x)),
                    ls_neg32(ls_th32_u(ls_exp32_f(ls_add32(
                      (TRIGGER: ls_th32_a(x)), ls_th32_a(x))))));
      axiom ls_tanh32_pos: \forall float x;
        !\is_NaN(x) && !ls_lt32(x, (float)0.0) ==>
          ls_same32((TRIGGER: ls_tanh32_f(x)),
                    ls_th32_u(ls_exp32_f(ls_add32(
                      (TRIGGER: ls_th32_a(x)), ls_th32_a(x)))));
    }
*/
/*@ assigns \nothing;
    ensures ls_same32(\result, ls_tanh32_f(x));
*/
float ls_tanh32(float x) {
  if (x != x) return x; /* §3.4 */
  float a = x < 0.0f ? -x : x;
  /*@ assert ls_tanh32_a: ls_same32(a, ls_th32_a(x)); */
  float e = ls_exp32(a + a);
  /*@ assert ls_tanh32_e: ls_same32(e, ls_exp32_f(ls_add32(a, a))); */
  float t = 1.0f - 2.0f / (e + 1.0f);
  /*@ assert ls_tanh32_t: ls_same32(t, ls_th32_u(e)); */
  return x < 0.0f ? -t : t;
}

#define LS_GELU32_C 0x1.988454p-1f /* sqrt(2/pi) */
#define LS_GELU32_A 0x1.6e4e26p-5f /* 0.044715 */

/* ACSL (docs/proofs.md): §3.3's GELU in binary32 as logic, as LsGelu64
 * above: u = C * (x + A * ((x * x) * x)) (ls_g32_u), then (0.5f * x) *
 * (1.0f + tanh(u)) with tanh ls_tanh32_f, one IEEE binary32 operation per
 * step on the code's constants; the non-NaN case triggered on
 * ls_gelu32_f(x) together with ls_g32_u(x), which only ls_gelu32's own
 * assertion names. */
/*@ logic float ls_g32_u(float x) =
      ls_mul32((float)0x1.988454p-1,
               ls_add32(x, ls_mul32((float)0x1.6e4e26p-5,
                                    ls_mul32(ls_mul32(x, x), x))));
    axiomatic LsGelu32 {
      logic float ls_gelu32_f(float x);
      axiom ls_gelu32_nan: \forall float x;
        \is_NaN(x) ==> ls_same32(ls_gelu32_f(x), x);
      axiom ls_gelu32_num: \forall float x;
        !\is_NaN(x) ==>
          ls_same32((TRIGGER: ls_gelu32_f(x)),
                    ls_mul32(ls_mul32((float)0.5, x),
                             ls_add32((float)1.0,
                                      ls_tanh32_f((TRIGGER: ls_g32_u(x))))));
    }
*/
/*@ assigns \nothing;
    ensures ls_same32(\result, ls_gelu32_f(x));
*/
float ls_gelu32(float x) {
  if (x != x) return x; /* §3.4 */
  float x3 = (x * x) * x;
  float u = LS_GELU32_C * (x + LS_GELU32_A * x3);
  /*@ assert ls_gelu32_u: ls_same32(u, ls_g32_u(x)); */
  return (0.5f * x) * (1.0f + ls_tanh32(u));
}
