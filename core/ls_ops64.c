/* Implements docs/arithmetic.md §2 in binary64. See ls_ops64.h. */
#include "ls_ops64.h"

#include "ls_arith.h"

/* Layer-norm epsilon 1e-5 rounded to binary64 (§2.3). */
#define LS_LN_EPS64 0x1.4f8b588e368f1p-17

/* ACSL (docs/proofs.md): §2.1's order as logic. ls_seq_dot64 is the
 * sequential sum from +0.0 of x[k] * w[k * stride] for k in [lo, hi), each
 * product and sum one IEEE operation (core/ls_arith.h); ls_blk64 is block
 * b's sum; ls_tree64(m, i) is s[i] once the halving tree is down to m live
 * sums (m = 16: the block sums; m = 1, i = 0: the result).
 * The axioms are in a "fuel" form, so that the provers never unroll a sum:
 * ls_seq_dot64_l is the same sum (ls_seq_dot64_lim), and the step axiom
 * relates ls_seq_dot64(lo, k + 1) to ls_seq_dot64_l(lo, k) only when both
 * terms are already in the goal (a multi-trigger), and makes no new
 * ls_seq_dot64 term. The empty sum and the link are triggered by
 * ls_seq_dot64_l, so a goal that mentions only ls_seq_dot64 (a frame, a
 * postcondition) gets no instance of them either. Loop invariants are
 * stated on ls_seq_dot64_l, the step's previous sum. */
/*@ axiomatic LsDot64 {
      logic double ls_seq_dot64{L}(double* x, double* w, integer stride,
                                   integer lo, integer hi)
        reads x[lo .. hi - 1], w[lo * stride .. (hi - 1) * stride];
      logic double ls_seq_dot64_l{L}(double* x, double* w, integer stride,
                                     integer lo, integer hi)
        reads x[lo .. hi - 1], w[lo * stride .. (hi - 1) * stride];
      axiom ls_seq_dot64_lim{L}:
        \forall double* x, double* w, integer stride, lo, hi;
          ls_same64(ls_seq_dot64(x, w, stride, lo, hi),
                    (TRIGGER: ls_seq_dot64_l(x, w, stride, lo, hi)));
      axiom ls_seq_dot64_empty{L}:
        \forall double* x, double* w, integer stride, lo, hi;
          hi <= lo ==> ls_same64(
            (TRIGGER: ls_seq_dot64_l(x, w, stride, lo, hi)), (double)0.0);
      axiom ls_seq_dot64_step{L}:
        \forall double* x, double* w, integer stride, lo, k, hi;
          lo <= k && hi == k + 1 ==> ls_same64(
            (TRIGGER: ls_seq_dot64(x, w, stride, lo, hi)),
            ls_add64((TRIGGER: ls_seq_dot64_l(x, w, stride, lo, k)),
                     ls_mul64(x[k], w[k * stride])));
    }
    logic double ls_blk64{L}(double* x, double* w, integer stride,
                             integer len, integer b) =
      ls_seq_dot64(x, w, stride, b * len, (b + 1) * len);
    logic double ls_t8_64{L}(double* x, double* w, integer stride,
                             integer len, integer i) =
      ls_add64(ls_blk64(x, w, stride, len, i),
               ls_blk64(x, w, stride, len, i + 8));
    logic double ls_t4_64{L}(double* x, double* w, integer stride,
                             integer len, integer i) =
      ls_add64(ls_t8_64(x, w, stride, len, i),
               ls_t8_64(x, w, stride, len, i + 4));
    logic double ls_t2_64{L}(double* x, double* w, integer stride,
                             integer len, integer i) =
      ls_add64(ls_t4_64(x, w, stride, len, i),
               ls_t4_64(x, w, stride, len, i + 2));
    logic double ls_tree64{L}(double* x, double* w, integer stride,
                              integer len, integer m, integer i) =
      m == 16 ? ls_blk64(x, w, stride, len, i) :
      m == 8 ? ls_t8_64(x, w, stride, len, i) :
      m == 4 ? ls_t4_64(x, w, stride, len, i) :
      m == 2 ? ls_t2_64(x, w, stride, len, i) :
      ls_add64(ls_t2_64(x, w, stride, len, 0), ls_t2_64(x, w, stride, len, 1));
    predicate ls_dot64_spec{L}(double* x, double* w, integer n,
                               integer stride, double r) =
      n > 0 && n % 16 == 0 ? ls_same64(r, ls_tree64(x, w, stride, n / 16, 1, 0))
                           : ls_same64(r, ls_seq_dot64(x, w, stride, 0, n));
*/

/* Finiteness and magnitude under input bounds (docs/proofs.md), as for
 * ls_sum64 below: ghost step lemmas whose ensures the Gappa scripts
 * proofs/gappa/dot64_step.g (a product and its addition to the running
 * sum) and proofs/gappa/dot64_add.g (a tree node) prove. */
/*@ predicate ls_b22_64(double a) = \is_finite(a) && \abs(a) <= 0x1p22; */
/*@ predicate ls_b61_64(double a) = \is_finite(a) && \abs(a) <= 0x1p61; */
/* w's term k as a predicate of k, so that the provers instantiate the
 * assumption at the access by matching it (as ls_cell_rd below). */
/*@ predicate ls_wb22_64{L}(double* w, integer stride, integer k) =
      ls_b22_64(w[k * stride]);
*/
/*@ ghost
  /@ assigns \nothing;
     ensures ls_b61_64(acc) && ls_b22_64(a) && ls_b22_64(b) ==>
       \is_finite(ls_mul64(a, b)) && \abs(ls_mul64(a, b)) <= 0x1p44 &&
       \is_finite(ls_add64(acc, ls_mul64(a, b))) &&
       \abs(ls_add64(acc, ls_mul64(a, b)) - (acc + ls_mul64(a, b))) <=
         0x1p8;
     ensures ls_b61_64(acc) && 0 <= acc && ls_b22_64(a) && a == b ==>
       0 <= ls_mul64(a, b) && 0 <= ls_add64(acc, ls_mul64(a, b));
  @/
  void ls_dot64_step(double acc, double a, double b) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures ls_b61_64(a) && ls_b61_64(b) ==>
       \is_finite(ls_add64(a, b)) &&
       \abs(ls_add64(a, b) - (a + b)) <= 0x1p8;
     ensures ls_b61_64(a) && ls_b61_64(b) && 0 <= a && 0 <= b ==>
       0 <= ls_add64(a, b);
  @/
  void ls_dot64_add(double a, double b) {}
*/

/* Behavior bounded: for 0 <= n <= 2^16 finite terms of magnitude at most
 * 2^22 on both sides, every product is at most 2^44 and every partial sum
 * is finite, with |block or tree node of c products| <= c 2^44 + (2c - 1)
 * 2^8 (each addition adds at most 2^8 of rounding error), so |result| <=
 * n (2^44 + 2^9). */
/*@ requires \valid_read(x + (0 .. n - 1));
    requires \forall integer k; 0 <= k < n ==> \valid_read(w + k * stride);
    assigns \nothing;
    behavior order:
      ensures ls_dot64_spec((double*)x, (double*)w, n, stride, \result);
    behavior bounded:
      assumes 0 <= n <= 65536;
      assumes \forall integer k; 0 <= k < n ==> ls_b22_64(x[k]);
      assumes \forall integer k; 0 <= k < n ==>
        ls_wb22_64((double*)w, stride, k);
      ensures \is_finite(\result) &&
        \abs(\result) <= n * (0x1p44 + 0x1p9);
      ensures x == w && stride == 1 ==> 0 <= \result;
*/
double ls_dot64(const double* x, const double* w, int n, int stride) {
  if (n > 0 && n % 16 == 0) {
    /* §2.1 blocked order: 16 contiguous blocks, each sequential from +0.0,
     * combined by the halving tree s[i] += s[i+8], +4, +2, +1. */
    double s[16];
    int len = n / 16;
    /*@ assert n == 16 * len; */
    /*@ loop invariant 0 <= blk <= 16;
        for order: loop invariant \forall integer b; 0 <= b < blk ==>
          ls_same64(s[b], ls_blk64((double*)x, (double*)w, stride, len, b));
        for bounded: loop invariant \forall integer b; 0 <= b < blk ==>
          \is_finite(s[b]) &&
          \abs(s[b]) <= len * 0x1p44 + (2 * len - 1) * 0x1p8;
        for bounded: loop invariant x == w && stride == 1 ==>
          \forall integer b; 0 <= b < blk ==> 0 <= s[b];
        loop assigns blk, s[0 .. 15];
        loop variant 16 - blk;
    */
    for (int blk = 0; blk < 16; ++blk) {
      double acc = 0.0;
      /*@ assert 0 <= blk * len && (blk + 1) * len <= n; */
      /*@ loop invariant blk * len <= k <= (blk + 1) * len;
          for order: loop invariant ls_same64(acc,
            ls_seq_dot64_l((double*)x, (double*)w, stride, blk * len, k));
          for bounded: loop invariant \is_finite(acc) &&
            \abs(acc) <= (k - blk * len) * (0x1p44 + 0x1p8);
          for bounded: loop invariant x == w && stride == 1 ==> 0 <= acc;
          loop assigns k, acc;
          loop variant (blk + 1) * len - k;
      */
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        /*@ assert \valid_read(w + k * stride); */
        /*@ for bounded: assert ls_b61_64(acc); */
        /*@ for bounded: assert ls_b22_64(x[k]) &&
              ls_wb22_64((double*)w, stride, k); */
        /*@ ghost ls_dot64_step(acc, x[k], w[(long)k * stride]); */
        acc = acc + x[k] * w[(long)k * stride];
      }
      s[blk] = acc;
    }
    /*@ loop invariant h == 8 || h == 4 || h == 2 || h == 1 || h == 0;
        for order: loop invariant h > 0 ==> \forall integer i;
          0 <= i < 2 * h ==> ls_same64(s[i],
            ls_tree64((double*)x, (double*)w, stride, len, 2 * h, i));
        for order: loop invariant h == 0 ==> ls_same64(s[0],
            ls_tree64((double*)x, (double*)w, stride, len, 1, 0));
        for bounded: loop invariant h == 8 ==> \forall integer i;
          0 <= i < 16 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= len * 0x1p44 + (2 * len - 1) * 0x1p8;
        for bounded: loop invariant h == 4 ==> \forall integer i;
          0 <= i < 8 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 2 * len * 0x1p44 + (4 * len - 1) * 0x1p8;
        for bounded: loop invariant h == 2 ==> \forall integer i;
          0 <= i < 4 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 4 * len * 0x1p44 + (8 * len - 1) * 0x1p8;
        for bounded: loop invariant h == 1 ==> \forall integer i;
          0 <= i < 2 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 8 * len * 0x1p44 + (16 * len - 1) * 0x1p8;
        for bounded: loop invariant h == 0 ==> \is_finite(s[0]) &&
          \abs(s[0]) <= 16 * len * 0x1p44 + (32 * len - 1) * 0x1p8;
        for bounded: loop invariant x == w && stride == 1 ==>
          \forall integer i; 0 <= i < 16 ==> 0 <= s[i];
        loop assigns h, s[0 .. 7];
        loop variant h;
    */
    for (int h = 8; h >= 1; h /= 2) {
      /*@ loop invariant 0 <= i <= h;
          for order: loop invariant \forall integer j; 0 <= j < i ==>
            ls_same64(s[j],
              ls_tree64((double*)x, (double*)w, stride, len, h, j));
          for order: loop invariant \forall integer j; i <= j < 16 ==>
            ls_same64(s[j], \at(s[j], LoopEntry));
          for bounded: loop invariant h == 8 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 2 * len * 0x1p44 + (4 * len - 1) * 0x1p8) &&
            (\forall integer j; i <= j < 16 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= len * 0x1p44 + (2 * len - 1) * 0x1p8);
          for bounded: loop invariant h == 4 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 4 * len * 0x1p44 + (8 * len - 1) * 0x1p8) &&
            (\forall integer j; i <= j < 8 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 2 * len * 0x1p44 + (4 * len - 1) * 0x1p8);
          for bounded: loop invariant h == 2 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 8 * len * 0x1p44 + (16 * len - 1) * 0x1p8) &&
            (\forall integer j; i <= j < 4 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 4 * len * 0x1p44 + (8 * len - 1) * 0x1p8);
          for bounded: loop invariant h == 1 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 16 * len * 0x1p44 + (32 * len - 1) * 0x1p8) &&
            (\forall integer j; i <= j < 2 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 8 * len * 0x1p44 + (16 * len - 1) * 0x1p8);
          for bounded: loop invariant x == w && stride == 1 ==>
            \forall integer j; 0 <= j < 16 ==> 0 <= s[j];
          loop assigns i, s[0 .. h - 1];
          loop variant h - i;
      */
      for (int i = 0; i < h; ++i) {
        /*@ for order: assert h == 8 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_tree64((double*)x, (double*)w, stride, len, 8, i)); */
        /*@ for order: assert h == 4 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_tree64((double*)x, (double*)w, stride, len, 4, i)); */
        /*@ for order: assert h == 2 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_tree64((double*)x, (double*)w, stride, len, 2, i)); */
        /*@ for order: assert h == 1 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_tree64((double*)x, (double*)w, stride, len, 1, i)); */
        /*@ for bounded: assert ls_b61_64(s[i]) && ls_b61_64(s[i + h]); */
        /*@ ghost ls_dot64_add(s[i], s[i + h]); */
        s[i] = s[i] + s[i + h];
      }
    }
    return s[0];
  }
  double acc = 0.0;
  /*@ loop invariant 0 <= k <= (n < 0 ? 0 : n);
      for order: loop invariant
        ls_same64(acc, ls_seq_dot64_l((double*)x, (double*)w, stride, 0, k));
      for bounded: loop invariant \is_finite(acc) &&
        \abs(acc) <= k * (0x1p44 + 0x1p8);
      for bounded: loop invariant x == w && stride == 1 ==> 0 <= acc;
      loop assigns k, acc;
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ assert \valid_read(w + k * stride); */
    /*@ for bounded: assert ls_b61_64(acc); */
    /*@ for bounded: assert ls_b22_64(x[k]) &&
          ls_wb22_64((double*)w, stride, k); */
    /*@ ghost ls_dot64_step(acc, x[k], w[(long)k * stride]); */
    acc = acc + x[k] * w[(long)k * stride];
  }
  return acc;
}

/* ACSL: column e of an input-major matrix, w + e, as a function that WP's
 * simplifier does not rewrite: (w + e)[k * n_out] stays an access through
 * the column pointer, the form in which ls_seq_dot64's step axiom states
 * it (as w + e, the simplifier turns it into w[e + k * n_out], and the
 * provers then have to show the two addresses equal by arithmetic). */
/*@ logic double* ls_colp(double* w, integer e) = w + e; */
/* ACSL: y[0 .. n-1] is separated from the cell p[i]. A predicate of the
 * cell, so that a separation stated for every cell is instantiated only at
 * the cells a goal names: stated on whole ranges, the separations brought
 * the memory model's transitivity axioms into every goal of ls_matvec64
 * (z3: some 20,000 instances in the outer invariant). */
/*@ predicate ls_sep_at{L}(double* y, integer n, double* p, integer i) =
      \separated(y + (0 .. n - 1), p + i);
*/
/* ACSL: ls_mvdot64_val is the value ls_dot64_spec names (§2.1: the tree of
 * 16 block sums when n is a positive multiple of 16, else the sequential
 * sum from +0.0); ls_col64 is output e of ls_matvec64: column e's
 * ls_mvdot64_val, plus b[e]. */
/*@ logic double ls_mvdot64_val{L}(double* x, double* w, integer n,
                                   integer stride) =
      n > 0 && n % 16 == 0 ? ls_tree64(x, w, stride, n / 16, 1, 0)
                           : ls_seq_dot64(x, w, stride, 0, n);
    logic double ls_col64{L}(double* x, double* w, double* b, integer n_in,
                             integer n_out, integer e) =
      b == \null ? ls_mvdot64_val(x, w + e, n_in, n_out)
                 : ls_add64(ls_mvdot64_val(x, w + e, n_in, n_out), b[e]);
*/
/* ACSL: ls_col64_i is ls_col64 under another name, for ls_matvec64's loop
 * invariant, and ls_mvdot64_i is ls_mvdot64_val under another name, for
 * the facts about column o that reach the later goals of its loop body.
 * Each one axiom is triggered by the defined function. ls_matvec64 names
 * those at Pre only inside its run-once ghost loops, and at the call's
 * state only where ls_dot64's postcondition names the same tree: so the
 * outer invariant's preservation (y[e], e < o, kept when y[o] is stored)
 * unfolds column o's value at one state, not at Pre too, nor at any e
 * (each unfolding up to 15 binary64 sums to bit-blast). */
/*@ axiomatic LsCol64Inv {
      logic double ls_col64_i{L}(double* x, double* w, double* b,
                                 integer n_in, integer n_out, integer e)
        reads x[0 .. n_in - 1], w[0 .. n_in * n_out - 1], b[e];
      axiom ls_col64_i_def{L}:
        \forall double* x, double* w, double* b, integer n_in, n_out, e;
          ls_same64(ls_col64_i(x, w, b, n_in, n_out, e),
                    (TRIGGER: ls_col64(x, w, b, n_in, n_out, e)));
      logic double ls_mvdot64_i{L}(double* x, double* w, integer n,
                                   integer stride)
        reads x[0 .. n - 1], w[0 .. (n - 1) * stride];
      axiom ls_mvdot64_i_def{L}:
        \forall double* x, double* w, integer n, stride;
          ls_same64(ls_mvdot64_i(x, w, n, stride),
                    (TRIGGER: ls_mvdot64_val(x, w, n, stride)));
    }
*/
/*@ requires n_in >= 0 && n_out >= 0;
    requires \valid_read(x + (0 .. n_in - 1));
    requires \valid_read(w + (0 .. n_in * n_out - 1));
    requires b == \null || \valid_read(b + (0 .. n_out - 1));
    requires \valid(y + (0 .. n_out - 1));
    assigns y[0 .. n_out - 1];
    behavior order:
      assumes \forall integer k; 0 <= k < n_in ==>
        ls_sep_at(y, n_out, (double*)x, k);
      assumes \forall integer k; 0 <= k < n_in * n_out ==>
        ls_sep_at(y, n_out, (double*)w, k);
      assumes b == \null || \forall integer e; 0 <= e < n_out ==>
        ls_sep_at(y, n_out, (double*)b, e);
      ensures \forall integer e; 0 <= e < n_out ==>
        ls_same64(y[e], ls_col64{Pre}((double*)x, (double*)w, (double*)b,
                                      n_in, n_out, e));
*/
void ls_matvec64(const double* x, const double* w, const double* b, int n_in,
                 int n_out, double* y) {
  /*@ loop invariant 0 <= o <= n_out;
      for order: loop invariant \forall integer e; 0 <= e < o ==>
        ls_same64(y[e], ls_col64_i{Pre}((double*)x, (double*)w, (double*)b,
                                        n_in, n_out, e));
      loop assigns o, y[0 .. n_out - 1];
      loop variant n_out - o;
  */
  for (int o = 0; o < n_out; ++o) {
    /*@ ghost ls_rows_at(n_in, n_out, o); */
    /*@ for order: assert \let e = o;
          b != \null ==> ls_sep_at(y, n_out, (double*)b, e); */
    /*@ for order: assert \let e = o;
          b != \null ==> ls_same64(b[e], \at(b[e], Pre)); */
    /* The frame of column o's value over the stores y[0 .. o-1], by
     * induction: column o's sums read the same x and w as at Pre (per
     * block and then the tree's levels when n_in is a multiple of 16).
     * The ghost loop runs once: after a loop only its invariants are
     * hypotheses, so the sums and tree levels of its body stay out of the
     * later goals (the outer invariant's among them), which see column
     * o's value only through ls_mvdot64_i. ls_row(blk, 16, len) and the
     * block's end hi = blk * len + len (not (blk + 1) * len) make the
     * block bounds and their overflow guards linear: cvc5 took 3.4 s on
     * the guard of (int)(blk + 1) * len and timed out on the bound. */
    /*@ ghost
      /@ loop invariant 0 <= once <= 1;
         for order: loop invariant once == 1 ==> ls_same64(
           ls_mvdot64_i((double*)x, (double*)w + o, n_in, n_out),
           ls_mvdot64_i{Pre}((double*)x, (double*)w + o, n_in, n_out));
         loop assigns once;
         loop variant 1 - once;
      @/
      for (int once = 0; once < 1; ++once) {
        if (n_in > 0 && n_in % 16 == 0) {
          int len = n_in / 16;
          /@ assert n_in == 16 * len; @/
          /@ loop invariant 0 <= blk <= 16;
             for order: loop invariant \forall integer j; 0 <= j < blk ==>
               ls_same64(ls_blk64((double*)x, ls_colp((double*)w, o), n_out,
                                  len, j),
                         ls_blk64{Pre}((double*)x, ls_colp((double*)w, o),
                                       n_out, len, j));
             loop assigns blk;
             loop variant 16 - blk;
          @/
          for (int blk = 0; blk < 16; ++blk) {
            ls_row(blk, 16, len);
            int hi = blk * len + len;
            /@ assert 0 <= blk * len && hi == (blk + 1) * len && hi <= n_in;
             @/
            /@ loop invariant blk * len <= k <= hi;
               for order: loop invariant ls_same64(
                 ls_seq_dot64_l((double*)x, ls_colp((double*)w, o), n_out,
                                blk * len, k),
                 ls_seq_dot64_l{Pre}((double*)x, ls_colp((double*)w, o),
                                     n_out, blk * len, k));
               loop assigns k;
               loop variant hi - k;
            @/
            for (int k = blk * len; k < hi; ++k) {
              ls_row(k, n_in, n_out);
              /@ for order: assert \let i = k;
                   ls_sep_at(y, n_out, (double*)x, i); @/
              /@ for order: assert \let i = k; \let c = o;
                   ls_sep_at(y, n_out, (double*)w, c + i * n_out); @/
              /@ for order: assert \let i = k;
                   ls_same64(x[i], \at(x[i], Pre)); @/
              /@ for order: assert \let i = k; \let c = o;
                   ls_same64(w[c + i * n_out], \at(w[c + i * n_out], Pre)); @/
              /@ for order: assert \let i = k; \let c = o;
                   ls_same64(ls_colp((double*)w, c)[i * n_out],
                             \at(ls_colp((double*)w, c)[i * n_out], Pre)); @/
              /@ for order: assert \let i = k; \let c = o; \let l = blk * len;
                   ls_same64(
                     ls_seq_dot64{Pre}((double*)x, ls_colp((double*)w, c),
                                       n_out, l, i + 1),
                     ls_add64(ls_seq_dot64_l{Pre}((double*)x,
                                                  ls_colp((double*)w, c),
                                                  n_out, l, i),
                              ls_mul64(\at(x[i], Pre),
                                       \at(ls_colp((double*)w, c)[i * n_out],
                                           Pre)))); @/
              /@ for order: assert \let i = k; \let c = o; \let l = blk * len;
                   ls_same64(
                     ls_seq_dot64((double*)x, ls_colp((double*)w, c), n_out,
                                  l, i + 1),
                     ls_add64(ls_seq_dot64_l((double*)x,
                                             ls_colp((double*)w, c), n_out, l,
                                             i),
                              ls_mul64(x[i],
                                       ls_colp((double*)w, c)[i * n_out]))); @/
            }
          }
          /@ for order: assert \forall integer i; 0 <= i < 8 ==>
               ls_same64(ls_t8_64((double*)x, ls_colp((double*)w, o), n_out,
                                  len, i),
                         ls_t8_64{Pre}((double*)x, ls_colp((double*)w, o),
                                       n_out, len, i)); @/
          /@ for order: assert \forall integer i; 0 <= i < 4 ==>
               ls_same64(ls_t4_64((double*)x, ls_colp((double*)w, o), n_out,
                                  len, i),
                         ls_t4_64{Pre}((double*)x, ls_colp((double*)w, o),
                                       n_out, len, i)); @/
          /@ for order: assert \forall integer i; 0 <= i < 2 ==>
               ls_same64(ls_t2_64((double*)x, ls_colp((double*)w, o), n_out,
                                  len, i),
                         ls_t2_64{Pre}((double*)x, ls_colp((double*)w, o),
                                       n_out, len, i)); @/
          /@ for order: assert ls_same64(
               ls_tree64((double*)x, ls_colp((double*)w, o), n_out, len, 1,
                         0),
               ls_tree64{Pre}((double*)x, ls_colp((double*)w, o), n_out, len,
                              1, 0)); @/
        } else {
          /@ loop invariant 0 <= k <= n_in;
             for order: loop invariant ls_same64(
               ls_seq_dot64_l((double*)x, ls_colp((double*)w, o), n_out, 0,
                              k),
               ls_seq_dot64_l{Pre}((double*)x, ls_colp((double*)w, o), n_out,
                                   0, k));
             loop assigns k;
             loop variant n_in - k;
          @/
          for (int k = 0; k < n_in; ++k) {
            ls_row(k, n_in, n_out);
            /@ for order: assert \let i = k;
                 ls_sep_at(y, n_out, (double*)x, i); @/
            /@ for order: assert \let i = k; \let c = o;
                 ls_sep_at(y, n_out, (double*)w, c + i * n_out); @/
            /@ for order: assert \let i = k;
                 ls_same64(x[i], \at(x[i], Pre)); @/
            /@ for order: assert \let i = k; \let c = o;
                 ls_same64(w[c + i * n_out], \at(w[c + i * n_out], Pre)); @/
            /@ for order: assert \let i = k; \let c = o;
                 ls_same64(ls_colp((double*)w, c)[i * n_out],
                           \at(ls_colp((double*)w, c)[i * n_out], Pre)); @/
            /@ for order: assert \let i = k; \let c = o;
                 ls_same64(
                   ls_seq_dot64{Pre}((double*)x, ls_colp((double*)w, c),
                                     n_out, 0, i + 1),
                   ls_add64(ls_seq_dot64_l{Pre}((double*)x,
                                                ls_colp((double*)w, c), n_out,
                                                0, i),
                            ls_mul64(\at(x[i], Pre),
                                     \at(ls_colp((double*)w, c)[i * n_out],
                                         Pre)))); @/
            /@ for order: assert \let i = k; \let c = o;
                 ls_same64(
                   ls_seq_dot64((double*)x, ls_colp((double*)w, c), n_out, 0,
                                i + 1),
                   ls_add64(ls_seq_dot64_l((double*)x, ls_colp((double*)w, c),
                                           n_out, 0, i),
                            ls_mul64(x[i],
                                     ls_colp((double*)w, c)[i * n_out]))); @/
          }
        }
        /@ for order: assert ls_same64(
             ls_mvdot64_val((double*)x, (double*)w + o, n_in, n_out),
             ls_mvdot64_val{Pre}((double*)x, (double*)w + o, n_in, n_out)); @/
      }
    */
    double s = ls_dot64(x, w + o, n_in, n_out);
    /*@ for order: assert ls_same64(s,
          ls_mvdot64_val((double*)x, (double*)w + o, n_in, n_out)); */
    /*@ for order: assert ls_same64(s,
          ls_mvdot64_i{Pre}((double*)x, (double*)w + o, n_in, n_out)); */
    y[o] = b ? s + b[o] : s;
    /* Output o's value through ls_col64_i, in a ghost loop run once as
     * above: ls_col64's definition is unfolded in its body alone. The
     * assertion on s names ls_mvdot64_val{Pre}, the trigger of
     * ls_mvdot64_i's axiom: ls_col64's definition has an `if` at its top,
     * and Why3 gives the axiom it makes of it no trigger, so that instance
     * was not found (cvc5 and z3 timed out on the assertion on y[o]). */
    /*@ ghost
      /@ loop invariant 0 <= once <= 1;
         for order: loop invariant once == 1 ==> ls_same64(y[o],
           ls_col64_i{Pre}((double*)x, (double*)w, (double*)b, n_in, n_out,
                           o));
         loop assigns once;
         loop variant 1 - once;
      @/
      for (int once = 0; once < 1; ++once) {
        /@ for order: assert ls_same64(s, ls_mvdot64_val{Pre}((double*)x,
             (double*)w + o, n_in, n_out)); @/
        /@ for order: assert ls_same64(y[o], ls_col64{Pre}((double*)x,
             (double*)w, (double*)b, n_in, n_out, o)); @/
      }
    */
  }
}

/* The LayerNorm sums follow §2.1's order with a unit second factor
 * replaced by the plain term (no multiplication by 1.0 is performed).
 * ACSL (docs/proofs.md): that order as logic, as for ls_dot64 above:
 * ls_seq_sum64 the sequential sum from +0.0 of x[k] for k in [lo, hi),
 * ls_sblk64 block b's sum, ls_stree64(m, i) the halving tree's s[i] with m
 * live sums (m = 1, i = 0: the result). */
/*@ axiomatic LsSum64 {
      logic double ls_seq_sum64{L}(double* x, integer lo, integer hi)
        reads x[lo .. hi - 1];
      axiom ls_seq_sum64_empty{L}:
        \forall double* x, integer lo, hi;
          hi <= lo ==> ls_same64(ls_seq_sum64(x, lo, hi), (double)0.0);
      axiom ls_seq_sum64_step{L}:
        \forall double* x, integer lo, hi;
          lo < hi ==> ls_same64(ls_seq_sum64(x, lo, hi),
            ls_add64(ls_seq_sum64(x, lo, hi - 1), x[hi - 1]));
    }
    logic double ls_sblk64{L}(double* x, integer len, integer b) =
      ls_seq_sum64(x, b * len, (b + 1) * len);
    logic double ls_s8_64{L}(double* x, integer len, integer i) =
      ls_add64(ls_sblk64(x, len, i), ls_sblk64(x, len, i + 8));
    logic double ls_s4_64{L}(double* x, integer len, integer i) =
      ls_add64(ls_s8_64(x, len, i), ls_s8_64(x, len, i + 4));
    logic double ls_s2_64{L}(double* x, integer len, integer i) =
      ls_add64(ls_s4_64(x, len, i), ls_s4_64(x, len, i + 2));
    logic double ls_stree64{L}(double* x, integer len, integer m,
                               integer i) =
      m == 16 ? ls_sblk64(x, len, i) :
      m == 8 ? ls_s8_64(x, len, i) :
      m == 4 ? ls_s4_64(x, len, i) :
      m == 2 ? ls_s2_64(x, len, i) :
      ls_add64(ls_s2_64(x, len, 0), ls_s2_64(x, len, 1));
    predicate ls_sum64_spec{L}(double* x, integer n, double r) =
      n > 0 && n % 16 == 0 ? ls_same64(r, ls_stree64(x, n / 16, 1, 0))
                           : ls_same64(r, ls_seq_sum64(x, 0, n));
*/
/* Finiteness and magnitude under input bounds (docs/proofs.md): one
 * rounding step at a time. Each ghost function below is a lemma: its
 * ensures is the step's fact (finite, and within a stated distance of the
 * exact result or within a stated bound), under bounds built from powers
 * of two. WP's provers do not close the first four (the real value of a
 * rounded binary64 operation, nonlinear real division); the Gappa scripts
 * proofs/gappa/ln64_*.g and the SMT-LIB file proofs/nia/ls_quot_le64.smt2
 * prove the same statements. A ghost call puts the fact, for the caller's
 * own operands, into the caller's context: no quantifier to instantiate. */
/*@ predicate ls_b37_64(double a) = \is_finite(a) && \abs(a) <= 0x1p37; */
/*@ ghost
  /@ assigns \nothing;
     ensures ls_b37_64(a) && ls_b37_64(b) ==>
       \is_finite(ls_add64(a, b)) &&
       \abs(ls_add64(a, b) - (a + b)) <= 0x1p-16;
  @/
  void ls_add64_err(double a, double b) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures ls_b37_64(s) && \is_finite(d) && 1 <= d <= 0x1p16 &&
       \abs(s / d) <= 0x1p20 + 0x1p-15 ==>
       \is_finite(ls_div64(s, d)) &&
       \abs(ls_div64(s, d)) <= 0x1p20 + 0x1p-14;
  @/
  void ls_div64_err(double s, double d) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures 1 <= n <= 65536 ==> \is_finite((double)n) && (double)n == n;
  @/
  void ls_i2d64(int n) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures 1 <= d && \abs(s) <= d * (0x1p20 + 0x1p-15) ==>
       \abs(s / d) <= 0x1p20 + 0x1p-15;
  @/
  void ls_quot_le64(double s, double d) {}
*/
/* LayerNorm's mean sum / n, for a sum bounded as ls_sum64's behavior
 * bounded ensures, and a deviation x - mean, each as one fact (proved from
 * the lemmas above): each goal then matches a conclusion against a
 * premise, and the provers need not reason about the binary64 division
 * (whose word-blasting costs cvc5 seconds). */
/*@ ghost
  /@ assigns \nothing;
     ensures 1 <= n <= 65536 && \is_finite(sum) &&
       \abs(sum) <= n * (0x1p20 + 0x1p-15) ==>
       \is_finite(ls_div64(sum, (double)n)) &&
       \abs(ls_div64(sum, (double)n)) <= 0x1p20 + 0x1p-14;
  @/
  void ls_ln64_mean(double sum, int n) {
    ls_i2d64(n);
    ls_quot_le64(sum, (double)n);
    /@ assert 1 <= n <= 65536 && \is_finite(sum) &&
         \abs(sum) <= n * (0x1p20 + 0x1p-15) ==>
         ls_b37_64(sum) && \is_finite((double)n) &&
         1 <= (double)n <= 0x1p16 &&
         \abs(sum / (double)n) <= 0x1p20 + 0x1p-15; @/
    ls_div64_err(sum, (double)n);
  }
*/
/*@ predicate ls_dev64_ok(double v) =
      \is_finite(v) && \abs(v) <= 0x1p21 + 0x1p-13;
*/
/*@ ghost
  /@ assigns \nothing;
     ensures \is_finite(a) && \abs(a) <= 0x1p20 && \is_finite(b) &&
       \abs(b) <= 0x1p20 + 0x1p-14 ==> ls_dev64_ok(ls_sub64(a, b));
  @/
  void ls_sub64_err(double a, double b) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures \is_finite(xk) && \abs(xk) <= 0x1p20 && 1 <= n <= 65536 &&
       \is_finite(sum) && \abs(sum) <= n * (0x1p20 + 0x1p-15) ==>
       ls_dev64_ok(ls_sub64(xk, ls_div64(sum, (double)n)));
  @/
  void ls_ln64_dev(double xk, double sum, int n) {
    ls_ln64_mean(sum, n);
    ls_sub64_err(xk, sum / (double)n);
  }
*/
/* LayerNorm's variance dot / n, for a dot product bounded as ls_dot64's
 * behavior bounded ensures (the deviations are below 2^22), and var + eps,
 * the square root's operand: the same pattern as the mean (a quotient
 * lemma in real arithmetic, nia/ls_vquot_le64.smt2, and a rounding lemma,
 * gappa/ln64_vdiv.g; gappa/ln64_veps.g for the sum with eps). */
/*@ ghost
  /@ assigns \nothing;
     ensures 1 <= d && \abs(s) <= d * (0x1p44 + 0x1p9) ==>
       \abs(s / d) <= 0x1p44 + 0x1p9;
  @/
  void ls_vquot_le64(double s, double d) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures ls_b61_64(s) && \is_finite(d) && 1 <= d <= 0x1p16 &&
       \abs(s / d) <= 0x1p44 + 0x1p9 ==>
       \is_finite(ls_div64(s, d)) &&
       \abs(ls_div64(s, d)) <= 0x1p44 + 0x1p9;
     ensures ls_b61_64(s) && \is_finite(d) && 1 <= d <= 0x1p16 && 0 <= s ==>
       0 <= ls_div64(s, d);
  @/
  void ls_vdiv64_err(double s, double d) {}
*/
/*@ ghost
  /@ assigns \nothing;
     ensures 1 <= n <= 65536 && \is_finite(dot) &&
       \abs(dot) <= n * (0x1p44 + 0x1p9) ==>
       \is_finite(ls_div64(dot, (double)n)) &&
       \abs(ls_div64(dot, (double)n)) <= 0x1p44 + 0x1p9;
     ensures 1 <= n <= 65536 && \is_finite(dot) &&
       \abs(dot) <= n * (0x1p44 + 0x1p9) && 0 <= dot ==>
       0 <= ls_div64(dot, (double)n);
  @/
  void ls_ln64_var(double dot, int n) {
    ls_i2d64(n);
    ls_vquot_le64(dot, (double)n);
    /@ assert 1 <= n <= 65536 && \is_finite(dot) &&
         \abs(dot) <= n * (0x1p44 + 0x1p9) ==>
         ls_b61_64(dot) && \is_finite((double)n) &&
         1 <= (double)n <= 0x1p16 &&
         \abs(dot / (double)n) <= 0x1p44 + 0x1p9; @/
    ls_vdiv64_err(dot, (double)n);
  }
*/
/*@ ghost
  /@ assigns \nothing;
     ensures \is_finite(v) && \abs(v) <= 0x1p44 + 0x1p9 ==>
       \is_finite(ls_add64(v, (double)0x1.4f8b588e368f1p-17)) &&
       \abs(ls_add64(v, (double)0x1.4f8b588e368f1p-17)) <= 0x1p44 + 0x1p9;
     ensures \is_finite(v) && 0 <= v <= 0x1p44 + 0x1p9 ==>
       0x1p-17 <= ls_add64(v, (double)0x1.4f8b588e368f1p-17);
  @/
  void ls_veps64(double v) {}
*/

/* Behavior bounded: for 0 <= n <= 2^16 finite terms of magnitude at most
 * 2^20, every partial sum is finite, with |block or tree node of c terms|
 * <= c 2^20 + (2c - 1) 2^-16 (each addition adds at most 2^-16 of rounding
 * error, ls_add64_err), so |result| <= n (2^20 + 2^-15). */
/*@ requires \valid_read(x + (0 .. n - 1));
    assigns \nothing;
    behavior order:
      ensures ls_sum64_spec((double*)x, n, \result);
    behavior bounded:
      assumes 0 <= n <= 65536;
      assumes \forall integer k; 0 <= k < n ==>
        \is_finite(x[k]) && \abs(x[k]) <= 0x1p20;
      ensures \is_finite(\result) &&
        \abs(\result) <= n * (0x1p20 + 0x1p-15);
*/
static double ls_sum64(const double* x, int n) {
  if (n > 0 && n % 16 == 0) {
    double s[16];
    int len = n / 16;
    /*@ assert n == 16 * len; */
    /*@ loop invariant 0 <= blk <= 16;
        for order: loop invariant \forall integer b; 0 <= b < blk ==>
          ls_same64(s[b], ls_sblk64((double*)x, len, b));
        for bounded: loop invariant \forall integer b; 0 <= b < blk ==>
          \is_finite(s[b]) &&
          \abs(s[b]) <= len * 0x1p20 + (2 * len - 1) * 0x1p-16;
        loop assigns blk, s[0 .. 15];
        loop variant 16 - blk;
    */
    for (int blk = 0; blk < 16; ++blk) {
      double acc = 0.0;
      /*@ assert 0 <= blk * len && (blk + 1) * len <= n; */
      /*@ loop invariant blk * len <= k <= (blk + 1) * len;
          for order: loop invariant
            ls_same64(acc, ls_seq_sum64((double*)x, blk * len, k));
          for bounded: loop invariant \is_finite(acc) &&
            \abs(acc) <= (k - blk * len) * (0x1p20 + 0x1p-16);
          loop assigns k, acc;
          loop variant (blk + 1) * len - k;
      */
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        /*@ ghost ls_add64_err(acc, x[k]); */
        acc = acc + x[k];
      }
      s[blk] = acc;
    }
    /*@ loop invariant h == 8 || h == 4 || h == 2 || h == 1 || h == 0;
        for order: loop invariant h > 0 ==> \forall integer i;
          0 <= i < 2 * h ==>
            ls_same64(s[i], ls_stree64((double*)x, len, 2 * h, i));
        for order: loop invariant h == 0 ==>
          ls_same64(s[0], ls_stree64((double*)x, len, 1, 0));
        for bounded: loop invariant h == 8 ==> \forall integer i;
          0 <= i < 16 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= len * 0x1p20 + (2 * len - 1) * 0x1p-16;
        for bounded: loop invariant h == 4 ==> \forall integer i;
          0 <= i < 8 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 2 * len * 0x1p20 + (4 * len - 1) * 0x1p-16;
        for bounded: loop invariant h == 2 ==> \forall integer i;
          0 <= i < 4 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 4 * len * 0x1p20 + (8 * len - 1) * 0x1p-16;
        for bounded: loop invariant h == 1 ==> \forall integer i;
          0 <= i < 2 ==> \is_finite(s[i]) &&
            \abs(s[i]) <= 8 * len * 0x1p20 + (16 * len - 1) * 0x1p-16;
        for bounded: loop invariant h == 0 ==> \is_finite(s[0]) &&
          \abs(s[0]) <= 16 * len * 0x1p20 + (32 * len - 1) * 0x1p-16;
        loop assigns h, s[0 .. 7];
        loop variant h;
    */
    for (int h = 8; h >= 1; h /= 2) {
      /*@ loop invariant 0 <= i <= h;
          for order: loop invariant \forall integer j; 0 <= j < i ==>
            ls_same64(s[j], ls_stree64((double*)x, len, h, j));
          for order: loop invariant \forall integer j; i <= j < 16 ==>
            ls_same64(s[j], \at(s[j], LoopEntry));
          for bounded: loop invariant h == 8 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 2 * len * 0x1p20 + (4 * len - 1) * 0x1p-16) &&
            (\forall integer j; i <= j < 16 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= len * 0x1p20 + (2 * len - 1) * 0x1p-16);
          for bounded: loop invariant h == 4 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 4 * len * 0x1p20 + (8 * len - 1) * 0x1p-16) &&
            (\forall integer j; i <= j < 8 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 2 * len * 0x1p20 + (4 * len - 1) * 0x1p-16);
          for bounded: loop invariant h == 2 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 8 * len * 0x1p20 + (16 * len - 1) * 0x1p-16) &&
            (\forall integer j; i <= j < 4 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 4 * len * 0x1p20 + (8 * len - 1) * 0x1p-16);
          for bounded: loop invariant h == 1 ==> (\forall integer j;
            0 <= j < i ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 16 * len * 0x1p20 + (32 * len - 1) * 0x1p-16) &&
            (\forall integer j; i <= j < 2 ==> \is_finite(s[j]) &&
              \abs(s[j]) <= 8 * len * 0x1p20 + (16 * len - 1) * 0x1p-16);
          loop assigns i, s[0 .. h - 1];
          loop variant h - i;
      */
      for (int i = 0; i < h; ++i) {
        /*@ for order: assert h == 8 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_stree64((double*)x, len, 8, i)); */
        /*@ for order: assert h == 4 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_stree64((double*)x, len, 4, i)); */
        /*@ for order: assert h == 2 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_stree64((double*)x, len, 2, i)); */
        /*@ for order: assert h == 1 ==> ls_same64(ls_add64(s[i], s[i + h]),
              ls_stree64((double*)x, len, 1, i)); */
        /*@ ghost ls_add64_err(s[i], s[i + h]); */
        s[i] = s[i] + s[i + h];
      }
    }
    return s[0];
  }
  double acc = 0.0;
  /*@ loop invariant 0 <= k <= (n < 0 ? 0 : n);
      for order: loop invariant
        ls_same64(acc, ls_seq_sum64((double*)x, 0, k));
      for bounded: loop invariant \is_finite(acc) &&
        \abs(acc) <= k * (0x1p20 + 0x1p-16);
      loop assigns k, acc;
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ ghost ls_add64_err(acc, x[k]); */
    acc = acc + x[k];
  }
  return acc;
}

/* ACSL (docs/proofs.md): the values ls_sum64_spec and ls_dot64_spec name
 * (§2.1's order: the halving tree of 16 block sums for n a multiple of 16,
 * the sequential sum from +0.0 otherwise). */
/*@ logic double ls_sum64_val{L}(double* x, integer n) =
      n > 0 && n % 16 == 0 ? ls_stree64(x, n / 16, 1, 0)
                           : ls_seq_sum64(x, 0, n);
    logic double ls_dot64_val{L}(double* x, double* w, integer n,
                                 integer stride) =
      n > 0 && n % 16 == 0 ? ls_tree64(x, w, stride, n / 16, 1, 0)
                           : ls_seq_dot64(x, w, stride, 0, n);
*/
/* ls_ln64_d(x, s, d, i) is the deviation x[i] - s / d (§2.3 step 2 with
 * the mean s / d), ls_ln64_o(d, r, g, b) the output (d * r) * g + b (step
 * 4), each operation one rounded binary64 operation. Their definitions are
 * triggered by the function together with the operations' term (a
 * multi-trigger), so a goal whose only such terms are the functions (a
 * frame) unfolds none, and the deviations' invariant, which later goals
 * carry, holds no binary64 division. */
/*@ axiomatic LsLn64 {
      logic double ls_ln64_d{L}(double* x, double s, double d, integer i)
        reads x[i];
      axiom ls_ln64_d_def{L}: \forall double* x, double s, d, integer i;
        ls_same64((TRIGGER: ls_ln64_d(x, s, d, i)),
                  (TRIGGER: ls_sub64(x[i], ls_div64(s, d))));
      logic double ls_ln64_o(double d, double r, double g, double b);
      axiom ls_ln64_o_def: \forall double d, r, g, b;
        ls_same64((TRIGGER: ls_ln64_o(d, r, g, b)),
                  (TRIGGER: ls_add64(ls_mul64(ls_mul64(d, r), g), b)));
    }
*/

/* ls_ln64_rv(v) is 1 / sqrt(v) (§2.3 step 5, v = var + eps), each
 * operation one rounded binary64 operation; ls_ln64_r(r, v) says r ==
 * ls_ln64_rv(v), opaque, so that the last loop's goals hold no binary64
 * division or square root in an equation (cvc5 word-blasts them: 1.3 to
 * 1.9 s more CPU on that loop's invariant and address goals with r's
 * definition there). r is in that loop's loop assigns (the loop does not
 * write it) with the invariant ls_ln64_r(r, var + eps), which pins r's
 * value: ls_ln64_r_intro (triggered by the square root call's value,
 * proofs/sqrt_contracts.h) gives it for the computed r, and ls_ln64_r_open
 * turns it into the equality only in a goal that names ls_ln64_rv (the
 * assertion ln64_r, after the last loop; behavior bounded has the same
 * invariant as ln64_rkb). The axioms are a definition: ls_ln64_r(r, v) is
 * r == ls_ln64_rv(v). */
/*@ axiomatic LsLn64R {
      logic double ls_ln64_rv(double v);
      axiom ls_ln64_rv_def: \forall double v;
        ls_same64((TRIGGER: ls_ln64_rv(v)),
                  (TRIGGER: ls_div64((double)1.0, ls_sqrt64(v))));
      predicate ls_ln64_r(double r, double v);
      axiom ls_ln64_r_intro: \forall double v;
        ls_ln64_r(ls_div64((double)1.0, (TRIGGER: ls_sqrt64_ret(v))), v);
      axiom ls_ln64_r_open: \forall double r, v;
        (TRIGGER: ls_ln64_r(r, v)) ==>
          ls_same64(r, (TRIGGER: ls_ln64_rv(v)));
    }
*/
/* Behavior bounded: r = 1 / sqrt(v) is finite, with 2^-23 <= r <= 2^9,
 * for the range of v = var + eps that ls_veps64 proves, a Gappa fact
 * (proofs/gappa/ln64_rsqrt.g; ls_ln64_r(r, v) is r == ls_ln64_rv(v), the
 * binary64 1 / sqrt(v)). Its premises are in the form of LayerNorm's
 * assertions ls_ln64_veps and ls_ln64_vpos and of the invariant ln64_rkb,
 * so that the goal that uses it is a match (stated on ls_ln64_rv(v)
 * instead, z3 ran out of memory on it and cvc5 took 3.2 s). */
/*@ ghost
  /@ assigns \nothing;
     ensures \is_finite(v) && \abs(v) <= 0x1p44 + 0x1p9 && 0x1p-17 <= v &&
       ls_ln64_r(r, v) ==> \is_finite(r) && 0x1p-23 <= r <= 0x1p9;
  @/
  void ls_rsqrt64(double v, double r) {}
*/

/*@ requires n >= 1;
    requires \valid_read(x + (0 .. n - 1));
    requires \valid_read(g + (0 .. n - 1));
    requires \valid_read(b + (0 .. n - 1));
    requires \valid(y + (0 .. n - 1));
    assigns y[0 .. n - 1];
    behavior bounded:
      assumes n <= 65536;
      assumes \forall integer k; 0 <= k < n ==>
        \is_finite(x[k]) && \abs(x[k]) <= 0x1p20;
      assumes \separated(y + (0 .. n - 1), x + (0 .. n - 1));
    behavior order:
      assumes \separated(y + (0 .. n - 1), x + (0 .. n - 1));
      assumes \forall integer i; 0 <= i < n ==>
        ls_sep_at(y, n, (double*)g, i) && ls_sep_at(y, n, (double*)b, i);
*/
void ls_layernorm64(const double* x, const double* g, const double* b, int n,
                    double* y) {
  /* Behavior bounded (docs/proofs.md): the sum is finite with |sum| <=
   * n (2^20 + 2^-15) (ls_sum64), so every deviation is finite with |d| <=
   * 2^21 + 2^-13 (ls_dev64_ok, the first loop's invariant) and the mean
   * is finite with |mean| <= 2^20 + 2^-14 (the assertion ls_ln64_mean, at
   * the end, so that no other goal carries it). The ghost call follows the
   * store, with x[k] read before it (xk), so that the store's own goals do
   * not carry the fact either. */
  double sum = ls_sum64(x, n);
  /*@ for order: assert ln64_sum:
        ls_same64(sum, ls_sum64_val{Pre}((double*)x, n)); */
  double mean = sum / (double)n;
  /* y holds the deviations d[k] = x[k] - mean until the last loop. */
  /*@ loop invariant 0 <= k <= n;
      for bounded: loop invariant \forall integer j; 0 <= j < k ==>
        ls_dev64_ok(y[j]);
      for order: loop invariant ln64_dev: \forall integer j; 0 <= j < k ==>
        ls_same64(y[j], ls_ln64_d{Pre}((double*)x, sum, (double)n, j));
      loop assigns k, y[0 .. n - 1];
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ for bounded: assert \is_finite(x[k]) && \abs(x[k]) <= 0x1p20; */
    /*@ for order: assert ln64_xk: \forall integer i; i == k ==>
          ls_same64(x[i], \at(x[i], Pre)); */
    /*@ ghost double xk = x[k]; */
    y[k] = x[k] - mean;
    /*@ for order: assert ln64_yk: \forall integer i; i == k ==>
          ls_same64(y[i], ls_ln64_d{Pre}((double*)x, sum, (double)n, i));
    */
    /*@ ghost ls_ln64_dev(xk, sum, n); */
    /*@ for bounded: assert ls_dev64_ok(y[k]); */
  }
  /*@ for bounded: assert \forall integer k; 0 <= k < n ==>
        ls_b22_64(y[k]); */
  /*@ for bounded: assert \forall integer k; 0 <= k < n ==>
        ls_wb22_64(y, 1, k); */
  /*@ for order: assert ln64_dev_ord: \forall integer i; 0 <= i < n ==>
        ls_same64(y[i], ls_ln64_d{Pre}((double*)x, sum, (double)n, i)); */
  /*@ for order: assert ln64_dev_sub: \forall integer i; 0 <= i < n ==>
        ls_same64(y[i], ls_sub64(\at(x[i], Pre), mean)); */
  /*@ ghost Dev: ; */
  double dot = ls_dot64(y, y, n, 1);
  /*@ for order: assert ln64_dot:
        ls_same64(dot, ls_dot64_val{Dev}(y, y, n, 1)); */
  double var = dot / (double)n;
  double r = 1.0 / __builtin_sqrt(var + LS_LN_EPS64);
  /*@ ghost Out: ; */
  /*@ for order: assert ln64_keep: \forall integer i; 0 <= i < n ==>
        ls_same64(y[i], \at(y[i], Dev)); */
  /*@ loop invariant 0 <= k <= n;
      for order: loop invariant ln64_out: \forall integer j; 0 <= j < n ==>
        ls_same64(y[j], j < k ? ls_ln64_o(\at(y[j], LoopEntry), r,
                                          \at(g[j], Pre), \at(b[j], Pre))
                              : \at(y[j], LoopEntry));
      for order: loop invariant ln64_rk:
        ls_ln64_r(r, ls_add64(var, (double)0x1.4f8b588e368f1p-17));
      for bounded: loop invariant ln64_rkb:
        ls_ln64_r(r, ls_add64(var, (double)0x1.4f8b588e368f1p-17));
      loop assigns k, r, y[0 .. n - 1];
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ for order: assert ln64_yk2: \forall integer i; i == k ==>
          ls_same64(y[i], \at(y[i], LoopEntry)); */
    /*@ for order: assert ln64_gsep: ls_sep_at(y, n, (double*)g, k) &&
          ls_sep_at(y, n, (double*)b, k); */
    /*@ for order: assert ln64_gk: \forall integer i; i == k ==>
          ls_same64(g[i], \at(g[i], Pre)); */
    /*@ for order: assert ln64_bk: \forall integer i; i == k ==>
          ls_same64(b[i], \at(b[i], Pre)); */
    y[k] = (y[k] * r) * g[k] + b[k];
    /*@ for order: assert ln64_ok: \forall integer i; i == k ==>
          ls_same64(y[i], ls_ln64_o(\at(y[i], LoopEntry), r,
                                    \at(g[i], Pre), \at(b[i], Pre))); */
  }
  /*@ for order: assert ln64_out_ord: \forall integer i; 0 <= i < n ==>
        ls_same64(y[i], ls_ln64_o(\at(y[i], Out), r, \at(g[i], Pre),
                                  \at(b[i], Pre))); */
  /*@ for order: assert ln64_r:
        ls_same64(r, ls_ln64_rv(ls_add64(var, (double)0x1.4f8b588e368f1p-17)));
  */
  /*@ ghost ls_ln64_mean(sum, n); */
  /*@ for bounded: assert ls_ln64_mean:
        \is_finite(mean) && \abs(mean) <= 0x1p20 + 0x1p-14; */
  /*@ ghost ls_ln64_var(dot, n); */
  /*@ for bounded: assert ls_ln64_var:
        \is_finite(var) && \abs(var) <= 0x1p44 + 0x1p9; */
  /*@ ghost ls_veps64(var); */
  /*@ for bounded: assert ls_ln64_veps:
        \is_finite(ls_add64(var, (double)0x1.4f8b588e368f1p-17)) &&
        \abs(ls_add64(var, (double)0x1.4f8b588e368f1p-17)) <=
          0x1p44 + 0x1p9; */
  /*@ for bounded: assert ls_ln64_vpos:
        0x1p-17 <= ls_add64(var, (double)0x1.4f8b588e368f1p-17); */
  /*@ ghost ls_rsqrt64(var + 0x1.4f8b588e368f1p-17, r); */
  /*@ for bounded: assert ls_ln64_rb:
        \is_finite(r) && 0x1p-23 <= r <= 0x1p9; */
  /*@ for order: assert ln64_mean_ord: ls_same64(mean,
        ls_div64(ls_sum64_val{Pre}((double*)x, n), (double)n)); */
  /*@ for order: assert ln64_var_ord: ls_same64(var,
        ls_div64(ls_dot64_val{Dev}(y, y, n, 1), (double)n)); */
}

/* ACSL (docs/proofs.md): §2.4's order as logic. ls_smax64(s, j) is step
 * 1's m once it has seen s[0 .. j-1] (j >= 1: m = s[0], then m = s[i] > m ?
 * s[i] : m, the comparison IEEE's, false for a NaN); ls_sm_e64(s, m, k) is
 * e[k] = exp(s[k] - m), exp being §3.1's ls_exp64_f; ls_ssum64(s, m, j) the
 * sequential sum from +0.0 of e[0 .. j-1]; ls_softmax64_p(s, n, j) step 3's
 * p[j] = e[j] / S. Every axiom has its triggers named (WP's TRIGGER:):
 * the steps are in "fuel" form (ls_smax64_l, ls_ssum64_l: the same
 * functions, whose instances make no new term for the step to fire on), and
 * ls_sm_e64's definition fires only next to an exp term, so a goal unfolds
 * no binary64 operation it does not need. The contract reads s at Pre (the
 * logic functions have no frame property after p is written). */
/*@ axiomatic LsSoftmax64 {
      logic double ls_sm_e64{L}(double* s, double m, integer k) reads s[k];
      axiom ls_sm_e64_def{L}: \forall double* s, double m, integer k, double x;
        ls_same64(x, ls_sub64(s[k], m)) ==>
          ls_same64((TRIGGER: ls_sm_e64(s, m, k)), (TRIGGER: ls_exp64_f(x)));
      logic double ls_smax64{L}(double* s, integer j) reads s[0 .. j - 1];
      logic double ls_smax64_l{L}(double* s, integer j) reads s[0 .. j - 1];
      axiom ls_smax64_lim{L}: \forall double* s, integer j;
        ls_same64((TRIGGER: ls_smax64(s, j)), ls_smax64_l(s, j));
      axiom ls_smax64_first{L}: \forall double* s;
        ls_same64((TRIGGER: ls_smax64(s, 1)), s[0]);
      axiom ls_smax64_step{L}: \forall double* s, integer k, j;
        k >= 1 && j == k + 1 ==>
          (ls_lt64((TRIGGER: ls_smax64_l(s, k)), s[k]) ==>
             ls_same64((TRIGGER: ls_smax64(s, j)), s[k])) &&
          (!ls_lt64(ls_smax64_l(s, k), s[k]) ==>
             ls_same64(ls_smax64(s, j), ls_smax64_l(s, k)));
      logic double ls_ssum64{L}(double* s, double m, integer j)
        reads s[0 .. j - 1];
      logic double ls_ssum64_l{L}(double* s, double m, integer j)
        reads s[0 .. j - 1];
      axiom ls_ssum64_lim{L}: \forall double* s, double m, integer j;
        ls_same64((TRIGGER: ls_ssum64(s, m, j)), ls_ssum64_l(s, m, j));
      axiom ls_ssum64_empty{L}: \forall double* s, double m, integer j;
        j <= 0 ==> ls_same64((TRIGGER: ls_ssum64(s, m, j)), (double)0.0);
      axiom ls_ssum64_step{L}: \forall double* s, double m, integer k, j;
        k >= 0 && j == k + 1 ==>
          ls_same64((TRIGGER: ls_ssum64(s, m, j)),
                    ls_add64((TRIGGER: ls_ssum64_l(s, m, k)),
                             ls_sm_e64(s, m, k)));
    }
    logic double ls_softmax64_p{L}(double* s, integer n, integer j) =
      ls_div64(ls_sm_e64(s, ls_smax64(s, n), j),
               ls_ssum64(s, ls_smax64(s, n), n));
*/

/* p may be s itself (the tiny model normalises its scores in place).
 * Behavior order assumes only that no store p[i] hits a score s[k] not yet
 * read (k > i): loop 2 reads s[j] before it stores p[j], and loop 3 reads
 * only p. That holds when p is separated from s and when p == s (p + i and
 * p + k are different cells for i < k); it is one formula, not the
 * disjunction of those two cases, because a disjunction in the assumes is a
 * case split in every goal (cvc5 1.2 s more on sm_e). Invariant sm_s: the
 * scores s[j .. n-1] still to be read are those of Pre. */
/*@ requires n >= 1;
    requires \valid_read(s + (0 .. n - 1));
    requires \valid(p + (0 .. n - 1));
    assigns p[0 .. n - 1];
    behavior order:
      assumes \forall integer i, k; 0 <= i < k < n ==>
        \separated(p + i, s + k);
      ensures \forall integer j; 0 <= j < n ==>
        ls_same64(p[j], \old(ls_softmax64_p((double*)s, n, j)));
*/
void ls_softmax64(const double* s, int n, double* p) {
  double m = s[0];
  /*@ loop invariant 1 <= j <= n;
      for order: loop invariant sm_max:
        ls_same64(m, ls_smax64{Pre}((double*)s, j));
      loop assigns j, m;
      loop variant n - j;
  */
  for (int j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
  double sum = 0.0;
  /*@ loop invariant 0 <= j <= n;
      for order: loop invariant sm_e: \forall integer k; 0 <= k < j ==>
        ls_same64(p[k], ls_sm_e64{Pre}((double*)s, m, k));
      for order: loop invariant sm_sum:
        ls_same64(sum, ls_ssum64{Pre}((double*)s, m, j));
      for order: loop invariant sm_s: \forall integer k; j <= k < n ==>
        ls_same64(s[k], \at(s[k], Pre));
      loop assigns j, sum, p[0 .. n - 1];
      loop variant n - j;
  */
  for (int j = 0; j < n; ++j) {
    /*@ for order: assert sm_sj: \forall integer k; k == j ==>
          ls_same64(s[k], \at(s[k], Pre)); */
    p[j] = ls_exp64(s[j] - m);
    /*@ for order: assert sm_ej:
          ls_same64(p[j], ls_sm_e64{Pre}((double*)s, m, j)); */
    sum = sum + p[j];
  }
  /*@ loop invariant 0 <= j <= n;
      for order: loop invariant sm_p: \forall integer k; 0 <= k < n ==>
        ls_same64(p[k], k < j ? ls_div64(\at(p[k], LoopEntry), sum)
                              : \at(p[k], LoopEntry));
      loop assigns j, p[0 .. n - 1];
      loop variant n - j;
  */
  for (int j = 0; j < n; ++j) p[j] = p[j] / sum;
}

/* Cell (j, d) of ls_weighted_sum64's strided v. A predicate of j and d, so
 * that the provers instantiate the precondition at the access by matching
 * ls_cell_rd(v, stride, j, d) itself: stated on the product j * stride, the
 * quantifier was not instantiated (the factors are ordered differently in
 * the hypothesis and in the goal). */
/*@ predicate ls_cell_rd{L}(double* v, integer stride, integer j,
                            integer d) = \valid_read(v + (j * stride + d));
    predicate ls_cell_sep{L}(double* out, integer w, double* v,
                             integer stride, integer j, integer d) =
      \separated(out + (0 .. w - 1), v + (j * stride + d));
*/
/*@ requires \valid_read(p + (0 .. n - 1));
    requires \forall integer j, d; 0 <= j < n && 0 <= d < w ==>
      ls_cell_rd((double*)v, stride, j, d);
    requires \valid(out + (0 .. w - 1));
    assigns out[0 .. w - 1];
    behavior order:
      assumes \separated(out + (0 .. w - 1), p + (0 .. n - 1));
      assumes \forall integer j, d; 0 <= j < n && 0 <= d < w ==>
        ls_cell_sep(out, w, (double*)v, stride, j, d);
      ensures \forall integer d; 0 <= d < w ==>
        ls_same64(out[d], ls_seq_dot64{Pre}((double*)p, (double*)v + d,
                                            stride, 0, n));
*/
void ls_weighted_sum64(const double* p, const double* v, int n, int stride,
                       int w, double* out) {
  /*@ loop invariant 0 <= d <= (w < 0 ? 0 : w);
      for order: loop invariant \forall integer e; 0 <= e < d ==>
        ls_same64(out[e], ls_seq_dot64{Pre}((double*)p, (double*)v + e,
                                            stride, 0, n));
      loop assigns d, out[0 .. w - 1];
      loop variant w - d;
  */
  for (int d = 0; d < w; ++d) {
    double acc = 0.0;
    /*@ loop invariant 0 <= j <= (n < 0 ? 0 : n);
        for order: loop invariant ls_same64(acc,
          ls_seq_dot64_l{Pre}((double*)p, (double*)v + d, stride, 0, j));
        loop assigns j, acc;
        loop variant n - j;
    */
    for (int j = 0; j < n; ++j) {
      /*@ assert ls_cell_rd((double*)v, stride, j, d); */
      /*@ for order: assert ls_cell_sep(out, w, (double*)v, stride, j, d); */
      /*@ for order: assert \let k = j; \let c = j * stride + d;
            ls_same64(p[k], \at(p[k], Pre)) &&
            ls_same64(v[c], \at(v[c], Pre)); */
      /*@ for order: assert \let k = j; \let e = d;
            ls_same64(
              ls_seq_dot64{Pre}((double*)p, ls_colp((double*)v, e), stride, 0,
                                k + 1),
              ls_add64(ls_seq_dot64_l{Pre}((double*)p, ls_colp((double*)v, e),
                                           stride, 0, k),
                       ls_mul64(\at(p[k], Pre),
                                \at(ls_colp((double*)v, e)[k * stride],
                                    Pre)))); */
      /*@ for order: assert \let k = j; \let e = d; \let c = j * stride + d;
            ls_same64(\at(ls_colp((double*)v, e)[k * stride], Pre),
                      \at(v[c], Pre)); */
      /*@ for order: assert \let k = j; \let c = j * stride + d;
            ls_same64(
              ls_seq_dot64{Pre}((double*)p, (double*)v + d, stride, 0, k + 1),
              ls_add64(ls_seq_dot64_l{Pre}((double*)p, (double*)v + d, stride,
                                           0, k),
                       ls_mul64(\at(p[k], Pre), \at(v[c], Pre)))); */
      acc = acc + p[j] * v[(long)j * stride + d];
    }
    /*@ for order: assert ls_same64(acc,
          ls_seq_dot64{Pre}((double*)p, (double*)v + d, stride, 0, n)); */
    out[d] = acc;
  }
}
