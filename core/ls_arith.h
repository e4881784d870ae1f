/* lockstep core arithmetic: exp, tanh and GELU built from + - * / and exact
 * power-of-two scaling, in binary64 and binary32.
 *
 * Every function here implements a numbered section of docs/arithmetic.md and
 * must not be "improved": replacing ls_exp64 with libm's exp, letting the
 * compiler contract a*b+c into an FMA, or reassociating a sum changes the
 * bits that every backend is required to reproduce.
 *
 * Plain C99, no libc beyond <stdint.h>/<stddef.h>, no allocation: the same
 * source compiles natively, to freestanding wasm32, and under Frama-C. */
#ifndef LOCKSTEP_CORE_LS_ARITH_H_
#define LOCKSTEP_CORE_LS_ARITH_H_

#include <float.h>
#include <stdint.h>

/* The contract of docs/arithmetic.md §1, enforced where the preprocessor
 * can see it: every core file that computes in floating point includes
 * this header, so a build that breaks it does not compile. Fast-math (or
 * its finite-math part, which deletes the NaN checks below) and excess
 * precision (x87 arithmetic, FLT_EVAL_METHOD != 0: every intermediate
 * rounded to a wider format) change the bits. FMA contraction and
 * re-association leave no macro behind; the no-FMA objdump tests and
 * tests/fma_contraction_check.sh catch those (docs/arithmetic.md §1.2). */
#if defined(__FAST_MATH__)
#error "lockstep core: fast-math changes the bits (docs/arithmetic.md 1.3)"
#endif
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__ != 0
#error "lockstep core: finite-math-only removes NaN checks (arithmetic.md 1.3)"
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "lockstep core: needs FLT_EVAL_METHOD == 0 (no excess precision, 1.1)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ACSL for Frama-C/WP (docs/proofs.md; comments, no code): the IEEE-754
 * operations of docs/arithmetic.md as logic symbols. proofs/lockstep.driver
 * binds them to WP's float model: ls_add64 is binary64 addition rounded to
 * nearest-even (WP's add_f64), ls_mul64 the product, ls_same64 identity
 * of two binary64 values (Why3's equality: the same float, so +0.0 and
 * -0.0 differ), ls_sqrt64 the square root (WP's sqrt_f64: IEEE's, rounded
 * to nearest-even; proofs/sqrt_contracts.h makes it __builtin_sqrt's
 * contract, for Frama-C only); likewise for binary32. Without the driver
 * they are uninterpreted and nothing that uses them can be proved. */
/*@ axiomatic LsIeee {
      logic double ls_add64(double a, double b);
      logic double ls_mul64(double a, double b);
      logic double ls_sub64(double a, double b);
      logic double ls_div64(double a, double b);
      logic double ls_neg64(double a);
      logic double ls_sqrt64(double a);
      predicate ls_same64(double a, double b);
      predicate ls_lt64(double a, double b);
      logic float ls_add32(float a, float b);
      logic float ls_mul32(float a, float b);
      logic float ls_sub32(float a, float b);
      logic float ls_div32(float a, float b);
      logic float ls_neg32(float a);
      logic float ls_sqrt32(float a);
      predicate ls_same32(float a, float b);
      predicate ls_lt32(float a, float b);
    }
*/
/* Integer facts for the index bounds of strided and blocked loops. WP
 * proves the first two; ls_mul_row (a row a of d words ends within b rows)
 * is beyond z3 and cvc5 in WP's context, and proofs/run.sh proves it with
 * z3 alone (proofs/nia/ls_mul_row.smt2). */
/*@ lemma ls_mul_nonneg: \forall integer a, d;
      0 <= a && 0 <= d ==> 0 <= a * d;
    lemma ls_mul_mono: \forall integer a, b, d;
      0 <= a <= b && 0 <= d ==> a * d <= b * d;
    lemma ls_mul_row: \forall integer a, b, d;
      0 <= a < b && 0 <= d ==> a * d + d <= b * d;
*/

/* Ghost lemmas (ACSL, no code) for the index bounds of row-major
 * matrices: row k < n of d words, at offset k * d, lies within [0, n * d).
 * Their bodies' loops are the induction on the rows that the provers do not
 * do on their own (they do not instantiate ls_mul_row for a product of two
 * variables), and a ghost call puts the fact in the caller's context.
 * ls_row: one row k; ls_rows_at: column o of every row. */
/*@ ghost
  /@ requires 0 <= k < n && d >= 0;
     assigns \nothing;
     ensures 0 <= k * d && k * d + d <= n * d;
     ensures k * d <= 2147483647 * k;
  @/
  void ls_row(int k, int n, int d);
*/
/*@ ghost
  /@ requires n >= 0 && 0 <= o < d;
     assigns \nothing;
     ensures \forall integer k; 0 <= k < n ==> 0 <= o + k * d < n * d;
  @/
  void ls_rows_at(int n, int d, int o);
*/

/* ACSL (docs/proofs.md): §3.1's exp in binary64 as logic, operation by
 * operation, each one IEEE binary64 operation (ls_add64 ... above):
 * ls_e64_nf the rounded n (steps 2-3), ls_e64_r the reduced argument
 * (step 4), ls_e64_h(r, k) Horner's p once it has taken c[k] (step 5;
 * k = 13: p = c[13]; k = 0: the polynomial), ls_e64_scale step 6, and
 * ls_exp64_f(x) the whole of §3.1 with §3.4's NaN, by cases. Horner's
 * levels and ls_exp64_f are axioms, one per case, rather than definitions:
 * a definition's cases (or a recursive level) make the provers unfold
 * every level in every goal, each a binary64 product to bit-blast; the
 * axioms are a definition by disjoint cases, so they are consistent.
 * Two axioms have triggers (WP's TRIGGER: names, each a pattern): the
 * range case of ls_exp64_f and ls_e64_n's definition fire only where both
 * named terms are present (ls_exp64's own assertions name them), not in a
 * caller, which sees ls_exp64_f and ls_e64_n in the call's ensures: there
 * they had unfolded the reduction and Horner's 13 levels per exp term, each
 * a binary64 operation to bit-blast (softmax's goals: 1.4 GB in z3).
 * ls_pow2_64_l(m) is the double that ls_pow2_64(m) builds from its
 * exponent bits (step 6's 2^m): an operation of its own, which WP's model
 * cannot see through the union, so it is a symbol here, and ls_pow2_64's
 * contract admits (does not prove) that it returns it; that the value is
 * 2^m is tested (tests/arith_test.cc). */
/*@ axiomatic LsPow2 {
      logic double ls_pow2_64_l(integer m);
    }
    logic double ls_e64_t(double x) =
      ls_mul64(x, (double)0x1.71547652b82fep+0);
    logic double ls_e64_nf(double x) =
      ls_sub64(ls_add64(ls_e64_t(x), (double)0x1.8p52), (double)0x1.8p52);
    logic double ls_e64_r(double x) =
      ls_sub64(
        ls_sub64(x, ls_mul64(ls_e64_nf(x), (double)0x1.62e42fee00000p-1)),
        ls_mul64(ls_e64_nf(x), (double)0x1.a39ef35793c76p-33));
    axiomatic LsExp64N {
      logic integer ls_e64_n(double x);
      axiom ls_e64_n_def: \forall double x;
        (TRIGGER: ls_e64_n(x)) == (int)(TRIGGER: ls_e64_nf(x));
    }
    axiomatic LsExp64Horner {
      logic double ls_e64_h(double r, integer k);
      axiom ls_e64_h13: \forall double r;
        ls_same64(ls_e64_h(r, 13), (double)0x1.6124613a86d09p-33);
      axiom ls_e64_h12: \forall double r; ls_same64(ls_e64_h(r, 12),
        ls_add64(ls_mul64(ls_e64_h(r, 13), r), (double)0x1.1eed8eff8d898p-29));
      axiom ls_e64_h11: \forall double r; ls_same64(ls_e64_h(r, 11),
        ls_add64(ls_mul64(ls_e64_h(r, 12), r), (double)0x1.ae64567f544e4p-26));
      axiom ls_e64_h10: \forall double r; ls_same64(ls_e64_h(r, 10),
        ls_add64(ls_mul64(ls_e64_h(r, 11), r), (double)0x1.27e4fb7789f5cp-22));
      axiom ls_e64_h9: \forall double r; ls_same64(ls_e64_h(r, 9),
        ls_add64(ls_mul64(ls_e64_h(r, 10), r), (double)0x1.71de3a556c734p-19));
      axiom ls_e64_h8: \forall double r; ls_same64(ls_e64_h(r, 8),
        ls_add64(ls_mul64(ls_e64_h(r, 9), r), (double)0x1.a01a01a01a01ap-16));
      axiom ls_e64_h7: \forall double r; ls_same64(ls_e64_h(r, 7),
        ls_add64(ls_mul64(ls_e64_h(r, 8), r), (double)0x1.a01a01a01a01ap-13));
      axiom ls_e64_h6: \forall double r; ls_same64(ls_e64_h(r, 6),
        ls_add64(ls_mul64(ls_e64_h(r, 7), r), (double)0x1.6c16c16c16c17p-10));
      axiom ls_e64_h5: \forall double r; ls_same64(ls_e64_h(r, 5),
        ls_add64(ls_mul64(ls_e64_h(r, 6), r), (double)0x1.1111111111111p-7));
      axiom ls_e64_h4: \forall double r; ls_same64(ls_e64_h(r, 4),
        ls_add64(ls_mul64(ls_e64_h(r, 5), r), (double)0x1.5555555555555p-5));
      axiom ls_e64_h3: \forall double r; ls_same64(ls_e64_h(r, 3),
        ls_add64(ls_mul64(ls_e64_h(r, 4), r), (double)0x1.5555555555555p-3));
      axiom ls_e64_h2: \forall double r; ls_same64(ls_e64_h(r, 2),
        ls_add64(ls_mul64(ls_e64_h(r, 3), r), (double)0x1.0000000000000p-1));
      axiom ls_e64_h1: \forall double r; ls_same64(ls_e64_h(r, 1),
        ls_add64(ls_mul64(ls_e64_h(r, 2), r), (double)0x1.0000000000000p+0));
      axiom ls_e64_h0: \forall double r; ls_same64(ls_e64_h(r, 0),
        ls_add64(ls_mul64(ls_e64_h(r, 1), r), (double)0x1.0000000000000p+0));
    }
    logic double ls_e64_scale(double p, integer n) =
      n > 1023 ? ls_mul64(ls_mul64(p, ls_pow2_64_l(n - 1)), (double)2.0) :
      n < -1022 ?
        ls_mul64(ls_mul64(p, ls_pow2_64_l(n + 54)), (double)0x1p-54) :
      ls_mul64(p, ls_pow2_64_l(n));
    lemma ls_e64_scale_big: \forall double p, integer n; n > 1023 ==>
      ls_same64(ls_e64_scale(p, n),
                ls_mul64(ls_mul64(p, ls_pow2_64_l(n - 1)), (double)2.0));
    lemma ls_e64_scale_small: \forall double p, integer n; n < -1022 ==>
      ls_same64(ls_e64_scale(p, n),
                ls_mul64(ls_mul64(p, ls_pow2_64_l(n + 54)), (double)0x1p-54));
    lemma ls_e64_scale_normal: \forall double p, integer n;
      -1022 <= n <= 1023 ==>
        ls_same64(ls_e64_scale(p, n), ls_mul64(p, ls_pow2_64_l(n)));
    logic double ls_e64_core(double x) =
      ls_e64_scale(ls_e64_h(ls_e64_r(x), 0), ls_e64_n(x));
    predicate ls_e64_in(double x) =
      !\is_NaN(x) && !ls_lt64((double)0x1.62e42fefa39efp+9, x) &&
      !ls_lt64(x, (double)-0x1.74910d52d3052p+9);
    axiomatic LsExp64 {
      logic double ls_exp64_f(double x);
      axiom ls_exp64_nan: \forall double x;
        \is_NaN(x) ==> ls_same64(ls_exp64_f(x), x);
      axiom ls_exp64_over: \forall double x;
        ls_lt64((double)0x1.62e42fefa39efp+9, x) ==>
          ls_same64(ls_exp64_f(x), ls_div64((double)1.0, (double)0.0));
      axiom ls_exp64_under: \forall double x;
        ls_lt64(x, (double)-0x1.74910d52d3052p+9) ==>
          ls_same64(ls_exp64_f(x), (double)0.0);
      axiom ls_exp64_range: \forall double x;
        !\is_NaN(x) && !ls_lt64((double)0x1.62e42fefa39efp+9, x) &&
        !ls_lt64(x, (double)-0x1.74910d52d3052p+9) ==>
          ls_same64((TRIGGER: ls_exp64_f(x)), (TRIGGER: ls_e64_core(x)));
    }
*/

/* ACSL (docs/proofs.md): §3.1's exp in binary32 as logic, as for binary64
 * above, each step one IEEE binary32 operation on the binary32 constants
 * of core/ls_arith.c: ls_e32_nf the rounded n, ls_e32_r the reduced
 * argument, ls_e32_h(r, k) Horner's p once it has taken c[k] (k = 7: p =
 * c[7]; k = 0: the polynomial), ls_e32_scale step 6 (2^(n-1) then 2 above
 * 127, 2^(n+25) then 2^-25 below -126), ls_exp32_f(x) the whole, by cases
 * (axioms, with the same triggers and for the same reasons as binary64's).
 * ls_e32_scale is three axioms by disjoint cases, not a definition with
 * lemmas as ls_e64_scale is: a global lemma brings its whole annotation
 * block (here Horner and the reduction) into every goal of every unit.
 * ls_pow2_32_l(m) is the float that ls_pow2_32(m) builds from its bits,
 * admitted as ls_pow2_64_l is. */
/*@ axiomatic LsPow2_32 {
      logic float ls_pow2_32_l(integer m);
    }
    logic float ls_e32_t(float x) = ls_mul32(x, (float)0x1.715476p+0);
    logic float ls_e32_nf(float x) =
      ls_sub32(ls_add32(ls_e32_t(x), (float)0x1.8p23), (float)0x1.8p23);
    logic float ls_e32_r(float x) =
      ls_sub32(ls_sub32(x, ls_mul32(ls_e32_nf(x), (float)0x1.62e400p-1)),
               ls_mul32(ls_e32_nf(x), (float)0x1.7f7d1cp-20));
    axiomatic LsExp32N {
      logic integer ls_e32_n(float x);
      axiom ls_e32_n_def: \forall float x;
        (TRIGGER: ls_e32_n(x)) == (int)(TRIGGER: ls_e32_nf(x));
    }
    axiomatic LsExp32Horner {
      logic float ls_e32_h(float r, integer k);
      axiom ls_e32_h7: \forall float r;
        ls_same32(ls_e32_h(r, 7), (float)0x1.a01a02p-13);
      axiom ls_e32_h6: \forall float r; ls_same32(ls_e32_h(r, 6),
        ls_add32(ls_mul32(ls_e32_h(r, 7), r), (float)0x1.6c16c2p-10));
      axiom ls_e32_h5: \forall float r; ls_same32(ls_e32_h(r, 5),
        ls_add32(ls_mul32(ls_e32_h(r, 6), r), (float)0x1.111112p-7));
      axiom ls_e32_h4: \forall float r; ls_same32(ls_e32_h(r, 4),
        ls_add32(ls_mul32(ls_e32_h(r, 5), r), (float)0x1.555556p-5));
      axiom ls_e32_h3: \forall float r; ls_same32(ls_e32_h(r, 3),
        ls_add32(ls_mul32(ls_e32_h(r, 4), r), (float)0x1.555556p-3));
      axiom ls_e32_h2: \forall float r; ls_same32(ls_e32_h(r, 2),
        ls_add32(ls_mul32(ls_e32_h(r, 3), r), (float)0x1.000000p-1));
      axiom ls_e32_h1: \forall float r; ls_same32(ls_e32_h(r, 1),
        ls_add32(ls_mul32(ls_e32_h(r, 2), r), (float)0x1.000000p+0));
      axiom ls_e32_h0: \forall float r; ls_same32(ls_e32_h(r, 0),
        ls_add32(ls_mul32(ls_e32_h(r, 1), r), (float)0x1.000000p+0));
    }
    axiomatic LsExp32Scale {
      logic float ls_e32_scale(float p, integer n);
      axiom ls_e32_scale_big: \forall float p, integer n; n > 127 ==>
        ls_same32(ls_e32_scale(p, n),
                  ls_mul32(ls_mul32(p, ls_pow2_32_l(n - 1)), (float)2.0));
      axiom ls_e32_scale_small: \forall float p, integer n; n < -126 ==>
        ls_same32(ls_e32_scale(p, n),
                  ls_mul32(ls_mul32(p, ls_pow2_32_l(n + 25)), (float)0x1p-25));
      axiom ls_e32_scale_normal: \forall float p, integer n;
        -126 <= n <= 127 ==>
          ls_same32(ls_e32_scale(p, n), ls_mul32(p, ls_pow2_32_l(n)));
    }
    logic float ls_e32_core(float x) =
      ls_e32_scale(ls_e32_h(ls_e32_r(x), 0), ls_e32_n(x));
    predicate ls_e32_in(float x) =
      !\is_NaN(x) && !ls_lt32((float)0x1.62e42ep+6, x) &&
      !ls_lt32(x, (float)-0x1.9fe368p+6);
    axiomatic LsExp32 {
      logic float ls_exp32_f(float x);
      axiom ls_exp32_nan: \forall float x;
        \is_NaN(x) ==> ls_same32(ls_exp32_f(x), x);
      axiom ls_exp32_over: \forall float x;
        ls_lt32((float)0x1.62e42ep+6, x) ==>
          ls_same32(ls_exp32_f(x), ls_div32((float)1.0, (float)0.0));
      axiom ls_exp32_under: \forall float x;
        ls_lt32(x, (float)-0x1.9fe368p+6) ==>
          ls_same32(ls_exp32_f(x), (float)0.0);
      axiom ls_exp32_range: \forall float x;
        !\is_NaN(x) && !ls_lt32((float)0x1.62e42ep+6, x) &&
        !ls_lt32(x, (float)-0x1.9fe368p+6) ==>
          ls_same32((TRIGGER: ls_exp32_f(x)), (TRIGGER: ls_e32_core(x)));
    }
*/

/* Spec §3.1: e^x in binary64; +inf above the overflow threshold (and for
 * +inf), +0 below the underflow threshold (and for -inf). Spec §3.4: a NaN
 * argument is returned unchanged (every function here). */
/*@ assigns \nothing;
    behavior nan:
      assumes \is_NaN(x);
      ensures ls_same64(\result, ls_exp64_f(x));
    behavior over:
      assumes ls_lt64((double)0x1.62e42fefa39efp+9, x);
      ensures ls_same64(\result, ls_exp64_f(x));
    behavior under:
      assumes ls_lt64(x, (double)-0x1.74910d52d3052p+9);
      ensures ls_same64(\result, ls_exp64_f(x));
    behavior big:
      assumes ls_e64_in(x) && ls_e64_n(x) > 1023;
      ensures ls_same64(\result, ls_exp64_f(x));
    behavior small:
      assumes ls_e64_in(x) && ls_e64_n(x) < -1022;
      ensures ls_same64(\result, ls_exp64_f(x));
    behavior normal:
      assumes ls_e64_in(x) && -1022 <= ls_e64_n(x) <= 1023;
      ensures ls_same64(\result, ls_exp64_f(x));
*/
double ls_exp64(double x);
/* Spec §3.2: tanh in binary64 from ls_exp64. */
double ls_tanh64(double x);
/* Spec §3.3: the tanh GELU of GPT-2 in binary64. */
double ls_gelu64(double x);

/* Spec §3.1 for binary32: e^x evaluated entirely in binary32. */
/*@ assigns \nothing;
    behavior nan:
      assumes \is_NaN(x);
      ensures ls_same32(\result, ls_exp32_f(x));
    behavior over:
      assumes ls_lt32((float)0x1.62e42ep+6, x);
      ensures ls_same32(\result, ls_exp32_f(x));
    behavior under:
      assumes ls_lt32(x, (float)-0x1.9fe368p+6);
      ensures ls_same32(\result, ls_exp32_f(x));
    behavior big:
      assumes ls_e32_in(x) && ls_e32_n(x) > 127;
      ensures ls_same32(\result, ls_exp32_f(x));
    behavior small:
      assumes ls_e32_in(x) && ls_e32_n(x) < -126;
      ensures ls_same32(\result, ls_exp32_f(x));
    behavior normal:
      assumes ls_e32_in(x) && -126 <= ls_e32_n(x) <= 127;
      ensures ls_same32(\result, ls_exp32_f(x));
*/
float ls_exp32(float x);
/* Spec §3.2 for binary32. */
float ls_tanh32(float x);
/* Spec §3.3 for binary32. */
float ls_gelu32(float x);

/* 2^n as a binary64 built from its exponent bits; n in [-1022, 1023]. */
double ls_pow2_64(int n);
/* 2^n as a binary32 built from its exponent bits; n in [-126, 127]. */
float ls_pow2_32(int n);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_ARITH_H_ */
