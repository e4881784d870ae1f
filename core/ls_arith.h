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
 * -0.0 differ); likewise for binary32. Without the driver they are
 * uninterpreted and nothing that uses them can be proved. */
/*@ axiomatic LsIeee {
      logic double ls_add64(double a, double b);
      logic double ls_mul64(double a, double b);
      predicate ls_same64(double a, double b);
      logic float ls_add32(float a, float b);
      logic float ls_mul32(float a, float b);
      predicate ls_same32(float a, float b);
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

/* Spec §3.1: e^x in binary64; +inf above the overflow threshold (and for
 * +inf), +0 below the underflow threshold (and for -inf). Spec §3.4: a NaN
 * argument is returned unchanged (every function here). */
double ls_exp64(double x);
/* Spec §3.2: tanh in binary64 from ls_exp64. */
double ls_tanh64(double x);
/* Spec §3.3: the tanh GELU of GPT-2 in binary64. */
double ls_gelu64(double x);

/* Spec §3.1 for binary32: e^x evaluated entirely in binary32. */
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
