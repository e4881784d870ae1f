/* Implements docs/arithmetic.md §2 in binary32. See ls_ops32.h. */
#include "ls_ops32.h"

#include <stddef.h>

#include "ls_arith.h"

#define LS_LN_EPS32 0x1.4f8b58p-17f

/* ACSL (docs/proofs.md): §2.1's order in binary32 as logic, as in
 * ls_ops64.c: ls_seq_dot32 the sequential sum of [lo, hi) from +0.0,
 * ls_blk32 block b's sum, ls_dot32_tree the halving tree over the 16
 * blocks; ls_tree16_of(s) the same tree over the values of s[0..16), with
 * ls_t8_32 .. ls_t1_32 its levels (s[i] once 8, 4, 2, 1 sums are live). In
 * ls_tree16 the loop invariants are stated per level (h == 8 ==> ...), not
 * through one function of the level: Qed then substitutes h and each goal
 * sees one level's definitions (docs/proofs.md). */
/*@ axiomatic LsDot32 {
      logic float ls_seq_dot32{L}(float* x, float* w, integer stride,
                                  integer lo, integer hi)
        reads x[lo .. hi - 1], w[lo * stride .. (hi - 1) * stride];
      axiom ls_seq_dot32_empty{L}:
        \forall float* x, float* w, integer stride, lo, hi;
          hi <= lo ==> ls_same32(ls_seq_dot32(x, w, stride, lo, hi),
                                 (float)0.0);
      axiom ls_seq_dot32_step{L}:
        \forall float* x, float* w, integer stride, lo, hi;
          lo < hi ==> ls_same32(ls_seq_dot32(x, w, stride, lo, hi),
            ls_add32(ls_seq_dot32(x, w, stride, lo, hi - 1),
                     ls_mul32(x[hi - 1], w[(hi - 1) * stride])));
    }
    logic float ls_t8_32{L}(float* s, integer i) = ls_add32(s[i], s[i + 8]);
    logic float ls_t4_32{L}(float* s, integer i) =
      ls_add32(ls_t8_32(s, i), ls_t8_32(s, i + 4));
    logic float ls_t2_32{L}(float* s, integer i) =
      ls_add32(ls_t4_32(s, i), ls_t4_32(s, i + 2));
    logic float ls_t1_32{L}(float* s, integer i) =
      ls_add32(ls_t2_32(s, i), ls_t2_32(s, i + 1));
    logic float ls_tree16_of{L}(float* s) = ls_t1_32(s, 0);

    logic float ls_blk32{L}(float* x, float* w, integer stride,
                            integer len, integer b) =
      ls_seq_dot32(x, w, stride, b * len, (b + 1) * len);
    logic float ls_xt8_32{L}(float* x, float* w, integer stride,
                             integer len, integer i) =
      ls_add32(ls_blk32(x, w, stride, len, i),
               ls_blk32(x, w, stride, len, i + 8));
    logic float ls_xt4_32{L}(float* x, float* w, integer stride,
                             integer len, integer i) =
      ls_add32(ls_xt8_32(x, w, stride, len, i),
               ls_xt8_32(x, w, stride, len, i + 4));
    logic float ls_xt2_32{L}(float* x, float* w, integer stride,
                             integer len, integer i) =
      ls_add32(ls_xt4_32(x, w, stride, len, i),
               ls_xt4_32(x, w, stride, len, i + 2));
    logic float ls_dot32_tree{L}(float* x, float* w, integer stride,
                                 integer len) =
      ls_add32(ls_xt2_32(x, w, stride, len, 0),
               ls_xt2_32(x, w, stride, len, 1));
    predicate ls_dot32_spec{L}(float* x, float* w, integer n,
                               integer stride, float r) =
      n > 0 && n % 16 == 0 ? ls_same32(r, ls_dot32_tree(x, w, stride, n / 16))
                           : ls_same32(r, ls_seq_dot32(x, w, stride, 0, n));
*/

/* The §2.1 halving tree over 16 block sums. */
/*@ requires \valid(s + (0 .. 15));
    assigns s[0 .. 7];
    behavior order:
      ensures ls_same32(\result, ls_tree16_of{Pre}(s));
*/
static float ls_tree16(float* s) {
  /*@ loop invariant h == 8 || h == 4 || h == 2 || h == 1 || h == 0;
      for order: loop invariant h == 8 ==> \forall integer k; 0 <= k < 16 ==>
        ls_same32(s[k], \at(s[k], Pre));
      for order: loop invariant h == 4 ==> \forall integer k; 0 <= k < 8 ==>
        ls_same32(s[k], ls_t8_32{Pre}(s, k));
      for order: loop invariant h == 2 ==> \forall integer k; 0 <= k < 4 ==>
        ls_same32(s[k], ls_t4_32{Pre}(s, k));
      for order: loop invariant h == 1 ==> \forall integer k; 0 <= k < 2 ==>
        ls_same32(s[k], ls_t2_32{Pre}(s, k));
      for order: loop invariant h == 0 ==>
        ls_same32(s[0], ls_t1_32{Pre}(s, 0));
      loop assigns h, s[0 .. 7];
      loop variant h;
  */
  for (int h = 8; h >= 1; h /= 2) {
    /*@ loop invariant 0 <= i <= h;
        for order: loop invariant h == 8 ==> \forall integer j; 0 <= j < 16 ==>
          ls_same32(s[j], j < i ? ls_t8_32{Pre}(s, j) : \at(s[j], Pre));
        for order: loop invariant h == 4 ==> \forall integer j; 0 <= j < 8 ==>
          ls_same32(s[j], j < i ? ls_t4_32{Pre}(s, j) : ls_t8_32{Pre}(s, j));
        for order: loop invariant h == 2 ==> \forall integer j; 0 <= j < 4 ==>
          ls_same32(s[j], j < i ? ls_t2_32{Pre}(s, j) : ls_t4_32{Pre}(s, j));
        for order: loop invariant h == 1 ==>
          ls_same32(s[0], i > 0 ? ls_t1_32{Pre}(s, 0) : ls_t2_32{Pre}(s, 0)) &&
          ls_same32(s[1], ls_t2_32{Pre}(s, 1));
        loop assigns i, s[0 .. h - 1];
        loop variant h - i;
    */
    for (int i = 0; i < h; ++i)
      /*@ for order: assert \let k = i; h == 8 ==>
            ls_same32(s[k], \at(s[k], Pre)) &&
            ls_same32(s[k + 8], \at(s[k + 8], Pre)); */
      /*@ for order: assert h == 8 ==>
            ls_same32(ls_add32(s[i], s[i + h]), ls_t8_32{Pre}(s, i)); */
      /*@ for order: assert h == 4 ==> ls_same32(s[i], ls_t8_32{Pre}(s, i)) &&
            ls_same32(s[i + 4], ls_t8_32{Pre}(s, i + 4)); */
      /*@ for order: assert h == 4 ==>
            ls_same32(ls_add32(s[i], s[i + h]), ls_t4_32{Pre}(s, i)); */
      /*@ for order: assert h == 2 ==> ls_same32(s[i], ls_t4_32{Pre}(s, i)) &&
            ls_same32(s[i + 2], ls_t4_32{Pre}(s, i + 2)); */
      /*@ for order: assert h == 2 ==>
            ls_same32(ls_add32(s[i], s[i + h]), ls_t2_32{Pre}(s, i)); */
      /*@ for order: assert h == 1 ==> i == 0 &&
            ls_same32(s[0], ls_t2_32{Pre}(s, 0)) &&
            ls_same32(s[1], ls_t2_32{Pre}(s, 1)); */
      /*@ for order: assert h == 1 ==>
            ls_same32(ls_add32(s[i], s[i + h]), ls_t1_32{Pre}(s, 0)); */
      s[i] = s[i] + s[i + h];
  }
  return s[0];
}

/*@ requires \valid_read(x + (0 .. n - 1));
    requires \forall integer k; 0 <= k < n ==> \valid_read(w + k * stride);
    assigns \nothing;
    behavior order:
      ensures ls_dot32_spec{Pre}((float*)x, (float*)w, n, stride, \result);
*/
float ls_dot32(const float* x, const float* w, int n, int stride) {
  if (n > 0 && n % 16 == 0) {
    float s[16];
    const int len = n / 16;
    /*@ assert n == 16 * len; */
    /*@ loop invariant 0 <= blk <= 16;
        for order: loop invariant \forall integer b; 0 <= b < blk ==>
          ls_same32(s[b], ls_blk32{Pre}((float*)x, (float*)w, stride, len, b));
        loop assigns blk, s[0 .. 15];
        loop variant 16 - blk;
    */
    for (int blk = 0; blk < 16; ++blk) {
      float acc = 0.0f;
      /*@ assert 0 <= blk * len && (blk + 1) * len <= n; */
      /*@ loop invariant blk * len <= k <= (blk + 1) * len;
          for order: loop invariant ls_same32(acc,
            ls_seq_dot32{Pre}((float*)x, (float*)w, stride, blk * len, k));
          loop assigns k, acc;
          loop variant (blk + 1) * len - k;
      */
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        /*@ assert \valid_read(w + k * stride); */
        /*@ for order: assert \let i = k; \let c = k * stride;
              ls_same32(x[i], \at(x[i], Pre)) &&
              ls_same32(w[c], \at(w[c], Pre)); */
        acc = acc + x[k] * w[(long)k * stride];
      }
      s[blk] = acc;
    }
    /*@ for order: assert \forall integer i; 0 <= i < 8 ==> ls_same32(
          ls_t8_32(&s[0], i),
          ls_xt8_32{Pre}((float*)x, (float*)w, stride, len, i));
    */
    /*@ for order: assert \forall integer i; 0 <= i < 4 ==> ls_same32(
          ls_t4_32(&s[0], i),
          ls_xt4_32{Pre}((float*)x, (float*)w, stride, len, i));
    */
    /*@ for order: assert \forall integer i; 0 <= i < 2 ==> ls_same32(
          ls_t2_32(&s[0], i),
          ls_xt2_32{Pre}((float*)x, (float*)w, stride, len, i));
    */
    /*@ for order: assert ls_same32(ls_tree16_of(&s[0]),
          ls_dot32_tree{Pre}((float*)x, (float*)w, stride, len)); */
    return ls_tree16(s);
  }
  float acc = 0.0f;
  /*@ loop invariant 0 <= k <= (n < 0 ? 0 : n);
      for order: loop invariant
        ls_same32(acc, ls_seq_dot32((float*)x, (float*)w, stride, 0, k));
      loop assigns k, acc;
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) /*@ assert \valid_read(w + k * stride); */
    acc = acc + x[k] * w[(long)k * stride];
  return acc;
}

/* ACSL (docs/proofs.md): the halving tree of ls_tree16 as a function of
 * 16 float values, not of memory, for ls_fin32_s below. ls_tree16v is a
 * symbol whose one axiom equates it to its definition ls_tree16v_d and is
 * triggered by ls_tree16v_d alone: only the assertion fin_tv of
 * ls_matvec32_finish names that, so the other goals keep ls_tree16v
 * opaque (no binary32 sum to bit-blast). */
/*@ logic float ls_tree16v_d(float a0, float a1, float a2, float a3,
                             float a4, float a5, float a6, float a7,
                             float a8, float a9, float a10, float a11,
                             float a12, float a13, float a14, float a15) =
      ls_add32(ls_add32(ls_add32(ls_add32(a0, a8), ls_add32(a4, a12)),
                        ls_add32(ls_add32(a2, a10), ls_add32(a6, a14))),
               ls_add32(ls_add32(ls_add32(a1, a9), ls_add32(a5, a13)),
                        ls_add32(ls_add32(a3, a11), ls_add32(a7, a15))));
    axiomatic LsTree16v {
      logic float ls_tree16v(float a0, float a1, float a2, float a3,
                             float a4, float a5, float a6, float a7,
                             float a8, float a9, float a10, float a11,
                             float a12, float a13, float a14, float a15);
      axiom ls_tree16v_def: \forall float a0, a1, a2, a3, a4, a5, a6, a7,
                                   a8, a9, a10, a11, a12, a13, a14, a15;
        ls_same32(ls_tree16v(a0, a1, a2, a3, a4, a5, a6, a7,
                             a8, a9, a10, a11, a12, a13, a14, a15),
                  (TRIGGER: ls_tree16v_d(a0, a1, a2, a3, a4, a5, a6, a7,
                                         a8, a9, a10, a11, a12, a13, a14,
                                         a15)));
    }
*/

/* ACSL (docs/proofs.md): ls_sep_at32 is ls_sep_at (ls_ops64.c) for
 * binary32 cells, used by the products and LayerNorm: y[0 .. n-1] is
 * separated from the cell p[i], a predicate of the cell, so that a
 * separation assumed for every cell is unfolded only at the cells a goal
 * names. ls_fin32(p, b, blocks, n_out, o) is output o of
 * ls_matvec32_finish over the partial sums p: the halving tree over
 * p[blk * n_out + o], blk = 0 .. 15 (blocks == 16) or p[o] (blocks == 1),
 * plus b[o] when b is not NULL. */
/*@ predicate ls_sep_at32{L}(float* y, integer n, float* p, integer i) =
      \separated(y + (0 .. n - 1), p + i);
    predicate ls_tcell32{L1, L2}(float* t, float* p, integer n_out,
                                 integer o, integer j) =
      ls_same32(\at(t[j], L1), \at(p[j * n_out + o], L2));
    logic float ls_fin32_s{L}(float* p, integer blocks, integer n_out,
                              integer o) =
      blocks == 16
        ? ls_tree16v(p[o], p[n_out + o], p[2 * n_out + o],
                     p[3 * n_out + o], p[4 * n_out + o], p[5 * n_out + o],
                     p[6 * n_out + o], p[7 * n_out + o], p[8 * n_out + o],
                     p[9 * n_out + o], p[10 * n_out + o], p[11 * n_out + o],
                     p[12 * n_out + o], p[13 * n_out + o],
                     p[14 * n_out + o], p[15 * n_out + o])
        : p[o];
    logic float ls_fin32{L}(float* p, float* b, integer blocks,
                            integer n_out, integer o) =
      b == \null ? ls_fin32_s(p, blocks, n_out, o)
                 : ls_add32(ls_fin32_s(p, blocks, n_out, o), b[o]);
*/
/* ACSL: ls_fin32_i is ls_fin32 under another name, for the loop invariant
 * of ls_matvec32_finish, as ls_col64_i in ls_ops64.c: its one axiom is
 * triggered by ls_fin32, so the invariant's preservation unfolds ls_fin32
 * (a binary32 sum) only at the o that the body's assertion names.
 * ls_fins32_i is ls_fin32_s (the sum before b) under another name, its
 * axiom triggered by ls_fin32_s, for the facts about s that reach the
 * later goals of the loop body from its run-once ghost loops. */
/*@ axiomatic LsFin32Inv {
      logic float ls_fin32_i{L}(float* p, float* b, integer blocks,
                                integer n_out, integer o)
        reads p[0 .. blocks * n_out - 1], b[o];
      axiom ls_fin32_i_def{L}: \forall float* p, float* b,
                                      integer blocks, n_out, o;
        ls_same32(ls_fin32_i(p, b, blocks, n_out, o),
                  (TRIGGER: ls_fin32(p, b, blocks, n_out, o)));
      logic float ls_fins32_i{L}(float* p, integer blocks, integer n_out,
                                 integer o)
        reads p[0 .. blocks * n_out - 1];
      axiom ls_fins32_i_def{L}: \forall float* p, integer blocks, n_out, o;
        ls_same32(ls_fins32_i(p, blocks, n_out, o),
                  (TRIGGER: ls_fin32_s(p, blocks, n_out, o)));
    }
*/

/*@ requires n_in >= 0 && n_out >= 0;
    requires \valid_read(x + (0 .. n_in - 1));
    requires \valid_read(w + (0 .. n_in * n_out - 1));
    requires b == \null || \valid_read(b + (0 .. n_out - 1));
    requires \valid(partial +
                    (0 .. (n_in > 0 && n_in % 16 == 0 ? 16 : 1) * n_out - 1));
    requires \valid(y + (0 .. n_out - 1));
    assigns partial[0 .. (n_in > 0 && n_in % 16 == 0 ? 16 : 1) * n_out - 1],
            y[0 .. n_out - 1];
*/
void ls_matvec32(const float* x, const float* w, const float* b, int n_in,
                 int n_out, float* partial, float* y) {
  const int blocks = (n_in > 0 && n_in % 16 == 0) ? 16 : 1;
  const int len = n_in / blocks;
  /*@ assert n_in == blocks * len; */
  /* partial[blk * n_out + o] is block blk's running sum for output o: the
   * loop over o is innermost, so each output's additions stay in k order. */
  /*@ loop invariant 0 <= blk <= blocks;
      loop assigns blk, partial[0 .. blocks * n_out - 1];
      loop variant blocks - blk;
  */
  for (int blk = 0; blk < blocks; ++blk) {
    /*@ ghost ls_row(blk, blocks, n_out); */
    /*@ assert 0 <= blk * len && (blk + 1) * len <= n_in; */
    float* acc = partial + (long)blk * n_out;
    /*@ loop invariant 0 <= o <= n_out;
        loop assigns o, acc[0 .. n_out - 1];
        loop variant n_out - o;
    */
    for (int o = 0; o < n_out; ++o) acc[o] = 0.0f;
    /*@ loop invariant blk * len <= k <= (blk + 1) * len;
        loop assigns k, acc[0 .. n_out - 1];
        loop variant (blk + 1) * len - k;
    */
    for (int k = blk * len; k < (blk + 1) * len; ++k) {
      const float xk = x[k];
      /*@ ghost ls_row(k, n_in, n_out); */
      const float* row = w + (long)k * n_out;
      /*@ loop invariant 0 <= o <= n_out;
          loop assigns o, acc[0 .. n_out - 1];
          loop variant n_out - o;
      */
      for (int o = 0; o < n_out; ++o) acc[o] = acc[o] + xk * row[o];
    }
  }
  ls_matvec32_finish(partial, b, blocks, n_out, 0, y);
}

/*@ requires n >= 0 && n_in >= 0 && n_out >= 0;
    requires \valid_read(x + (0 .. n * n_in - 1));
    requires \valid_read(w + (0 .. n_in * n_out - 1));
    requires b == \null || \valid_read(b + (0 .. n_out - 1));
    requires \valid(partial +
                    (0 .. (n_in > 0 && n_in % 16 == 0 ? 16 : 1) * n_out - 1));
    requires \valid(y + (0 .. n * n_out - 1));
    assigns partial[0 .. (n_in > 0 && n_in % 16 == 0 ? 16 : 1) * n_out - 1],
            y[0 .. n * n_out - 1];
*/
void ls_matmul32(const float* x, int n, const float* w, const float* b,
                 int n_in, int n_out, float* partial, float* y) {
  /*@ loop invariant 0 <= t <= n;
      loop assigns t, y[0 .. n * n_out - 1],
        partial[0 .. (n_in > 0 && n_in % 16 == 0 ? 16 : 1) * n_out - 1];
      loop variant n - t;
  */
  for (int t = 0; t < n; ++t) {
    /*@ ghost ls_row(t, n, n_in); */
    /*@ ghost ls_row(t, n, n_out); */
    /*@ assert (size_t)((size_t)t * (size_t)n_in) == t * n_in; */
    /*@ assert (size_t)((size_t)t * (size_t)n_out) == t * n_out; */
    ls_matvec32(x + (size_t)t * (size_t)n_in, w, b, n_in, n_out, partial,
                y + (size_t)t * (size_t)n_out);
  }
}

/*@ requires blocks == 16 || blocks == 1;
    requires 0 <= o0 && n_out >= 0;
    requires \valid_read(partial + (0 .. blocks * n_out - 1));
    requires b == \null || \valid_read(b + (0 .. n_out - 1));
    requires \valid(y + (o0 .. n_out - 1));
    assigns y[o0 .. n_out - 1];
    behavior order:
      assumes \forall integer i; 0 <= i < blocks * n_out ==>
        ls_sep_at32(y, n_out, (float*)partial, i);
      assumes b == \null || \forall integer e; 0 <= e < n_out ==>
        ls_sep_at32(y, n_out, (float*)b, e);
      ensures \forall integer e; o0 <= e < n_out ==>
        ls_same32(y[e], ls_fin32{Pre}((float*)partial, (float*)b, blocks,
                                      n_out, e));
*/
void ls_matvec32_finish(const float* partial, const float* b, int blocks,
                        int n_out, int o0, float* y) {
  /*@ loop invariant o0 <= o && (o0 <= n_out ==> o <= n_out);
      loop invariant \valid(y + (o0 .. n_out - 1));
      loop invariant \valid_read(partial + (0 .. blocks * n_out - 1));
      loop invariant b == \null || \valid_read(b + (0 .. n_out - 1));
      for order: loop invariant fin_inv: \forall integer e; o0 <= e < o ==>
        ls_same32(y[e], ls_fin32_i{Pre}((float*)partial, (float*)b, blocks,
                                        n_out, e));
      loop assigns o, y[o0 .. n_out - 1];
      loop variant n_out - o;
  */
  for (int o = o0; o < n_out; ++o) {
    /*@ assert \valid(y + o) && (b == \null || \valid_read(b + o)); */
    /*@ for order: assert \let e = o;
          b != \null ==> ls_sep_at32(y, n_out, (float*)b, e); */
    /* The separation from the range that the loop havocs, y[o0 ..
     * n_out-1], first: then cvc5 proves the frame of b[o] in 0.1 s (it
     * took 4.9 s from ls_sep_at32 alone); the same for partial's cells.
     * partial[o]'s is stated here, where it has fewer hypotheses than in
     * the blocks == 1 branch (cvc5 1.7 s here, 5.5 s there). */
    /*@ for order: assert fin_bsep: b != \null ==>
          \separated(b + o, y + (o0 .. n_out - 1)); */
    /*@ for order: assert fin_b0: \let e = o;
          b != \null ==> ls_same32(b[e], \at(b[e], Pre)); */
    /*@ for order: assert \let c = o;
          ls_sep_at32(y, n_out, (float*)partial, c); */
    /*@ for order: assert fin_psep1:
          \separated(partial + o, y + (o0 .. n_out - 1)); */
    float s;
    if (blocks == 16) {
      float t[16];
      /*@ for order: assert fin_sepy: \forall integer e; o0 <= e < n_out ==>
            \separated(y + e, &t[0] + (0 .. 7)); */
      /*@ for order: assert fin_sep0:
            b != \null ==> \separated(b + o, &t[0] + (0 .. 15)) &&
                            \separated(b + o, &t[0] + (0 .. 7)); */
      /* fin_tl first: WP gives each invariant's preservation the ones
       * before it, and without fin_bl and fin_yl among its hypotheses z3
       * proves it in 1.8 s (it timed out at 10 s; cvc5 3.4 to 3.6 s). */
      /*@ loop invariant 0 <= blk <= 16;
          for order: loop invariant fin_tl: \forall integer j;
            0 <= j < blk ==> ls_tcell32{Here, Pre}(&t[0], (float*)partial,
                                                  n_out, o, j);
          for order: loop invariant fin_bl: \let e = o;
            b != \null ==> ls_same32(b[e], \at(b[e], Pre));
          for order: loop invariant fin_yl: \forall integer e;
            o0 <= e < o ==> ls_same32(y[e], ls_fin32_i{Pre}((float*)partial,
                                         (float*)b, blocks, n_out, e));
          loop assigns blk, t[0 .. 15];
          loop variant 16 - blk;
      */
      for (int blk = 0; blk < 16; ++blk) {
        /*@ ghost ls_row(blk, 16, n_out); */
        /*@ assert \valid_read(partial + (blk * n_out + o)); */
        /*@ for order: assert \let c = blk * n_out + o;
              ls_sep_at32(y, n_out, (float*)partial, c); */
        /*@ for order: assert fin_psep: \let c = blk * n_out + o;
              \separated(partial + c, y + (o0 .. n_out - 1)); */
        /*@ for order: assert fin_p16: \let c = blk * n_out + o;
              ls_same32(partial[c], \at(partial[c], Pre)); */
        t[blk] = partial[(long)blk * n_out + o];
        /*@ for order: assert fin_tc:
              ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, blk); */
      }
      /* The tree over t as the partial sums' tree at Pre, in a ghost loop
       * run once (as in ls_matvec64): after a loop only its invariants are
       * hypotheses, so the 16 cells and the tree at Pre stay out of the
       * later goals, which see it only through the opaque ls_fins32_i
       * (they still hold ls_tree16's postcondition, the tree over t). The
       * 2026-12-04 attempt asserted this after the call, and the outer
       * invariant's preservation was not proved (docs/proofs.md). */
      /*@ ghost
        /@ loop invariant 0 <= once <= 1;
           for order: loop invariant fin_g1: once == 1 ==>
             ls_same32(ls_tree16_of(&t[0]),
                       ls_fins32_i{Pre}((float*)partial, blocks, n_out, o));
           loop assigns once;
           loop variant 1 - once;
        @/
        for (int once = 0; once < 1; ++once) {
          /@ for order: assert fin_t:
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 0) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 1) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 2) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 3) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 4) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 5) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 6) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 7) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 8) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 9) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 10) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 11) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 12) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 13) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 14) &&
               ls_tcell32{Here, Pre}(&t[0], (float*)partial, n_out, o, 15);
           @/
          /@ for order: assert fin_tv: \let n = n_out; \let c = o;
               ls_same32(ls_tree16_of(&t[0]), ls_tree16v_d(
                 \at(partial[c], Pre), \at(partial[n + c], Pre),
                 \at(partial[2 * n + c], Pre), \at(partial[3 * n + c], Pre),
                 \at(partial[4 * n + c], Pre), \at(partial[5 * n + c], Pre),
                 \at(partial[6 * n + c], Pre), \at(partial[7 * n + c], Pre),
                 \at(partial[8 * n + c], Pre), \at(partial[9 * n + c], Pre),
                 \at(partial[10 * n + c], Pre),
                 \at(partial[11 * n + c], Pre),
                 \at(partial[12 * n + c], Pre),
                 \at(partial[13 * n + c], Pre),
                 \at(partial[14 * n + c], Pre),
                 \at(partial[15 * n + c], Pre))); @/
          /@ for order: assert fin_ts: ls_same32(ls_tree16_of(&t[0]),
               ls_fin32_s{Pre}((float*)partial, blocks, n_out, o)); @/
        }
      */
      s = ls_tree16(t);
      /*@ for order: assert fin_y2: \forall integer e; o0 <= e < o ==>
            ls_same32(y[e], ls_fin32_i{Pre}((float*)partial, (float*)b,
                                            blocks, n_out, e)); */
      /*@ for order: assert fin_b2: \let e = o;
            b != \null ==> ls_same32(b[e], \at(b[e], Pre)); */
      /*@ for order: assert fin_tree: ls_same32(s,
            ls_fins32_i{Pre}((float*)partial, blocks, n_out, o)); */
    } else {
      /* partial[o] as ls_fins32_i{Pre}, run once for the same reason. */
      /*@ ghost
        /@ loop invariant 0 <= once <= 1;
           for order: loop invariant fin_g0: once == 1 ==>
             ls_same32(partial[o],
                       ls_fins32_i{Pre}((float*)partial, blocks, n_out, o));
           loop assigns once;
           loop variant 1 - once;
        @/
        for (int once = 0; once < 1; ++once) {
          /@ for order: assert fin_p1: \let c = o;
               ls_same32(partial[c], \at(partial[c], Pre)); @/
          /@ for order: assert ls_same32(partial[o],
               ls_fin32_s{Pre}((float*)partial, blocks, n_out, o)); @/
        }
      */
      s = partial[o];
    }
    /*@ for order: assert fin_s: ls_same32(s,
          ls_fins32_i{Pre}((float*)partial, blocks, n_out, o)); */
    /*@ for order: assert fin_y3: \forall integer e; o0 <= e < o ==>
          ls_same32(y[e], ls_fin32_i{Pre}((float*)partial, (float*)b, blocks,
                                          n_out, e)); */
    /*@ for order: assert fin_b: \let e = o;
          b != \null ==> ls_same32(b[e], \at(b[e], Pre)); */
    y[o] = b ? s + b[o] : s;
    /* Output o's value through ls_fin32_i, in a ghost loop run once: the
     * definitions of ls_fin32 and ls_fin32_s are unfolded in its body
     * alone. The assertion on s names ls_fin32_s{Pre}, the trigger of
     * ls_fins32_i's axiom. */
    /*@ ghost
      /@ loop invariant 0 <= once <= 1;
         for order: loop invariant fin_g2: once == 1 ==> ls_same32(y[o],
           ls_fin32_i{Pre}((float*)partial, (float*)b, blocks, n_out, o));
         loop assigns once;
         loop variant 1 - once;
      @/
      for (int once = 0; once < 1; ++once) {
        /@ for order: assert ls_same32(s,
             ls_fin32_s{Pre}((float*)partial, blocks, n_out, o)); @/
        /@ for order: assert ls_same32(y[o],
             ls_fin32{Pre}((float*)partial, (float*)b, blocks, n_out, o)); @/
      }
    */
  }
}

/*@ requires n >= 0 && n_rows >= 0;
    requires \valid_read(x + (0 .. n - 1));
    requires \valid_read(m + (0 .. n_rows * n - 1));
    requires \valid(y + (0 .. n_rows - 1));
    assigns y[0 .. n_rows - 1];
*/
void ls_rowdots32(const float* x, const float* m, int n, int n_rows, float* y) {
  /*@ loop invariant 0 <= r <= n_rows;
      loop assigns r, y[0 .. n_rows - 1];
      loop variant n_rows - r;
  */
  for (int r = 0; r < n_rows; ++r) {
    /*@ ghost ls_row(r, n_rows, n); */
    y[r] = ls_dot32(x, m + (long)r * n, n, 1);
  }
}

/* ACSL (docs/proofs.md): LayerNorm's sum (§2.3 step 1) in binary32 as
 * logic: §2.1's order over x[k] in place of x[k] * w[k], as ls_sum64 in
 * ls_ops64.c. ls_seq_sum32 is the sequential sum from +0.0 of x[lo ..
 * hi-1], in the "fuel" form of ls_ops64.c's LsDot64 (ls_seq_sum32_l the
 * same sum; the step relates seq(lo, k + 1) to seq_l(lo, k) only when both
 * terms are in the goal, so no instance unrolls a sum); ls_sblk32 block b's
 * sum, ls_ss8_32 .. ls_ss2_32 the halving tree's levels over the blocks,
 * ls_sum32_tree its root. */
/*@ axiomatic LsSum32 {
      logic float ls_seq_sum32{L}(float* x, integer lo, integer hi)
        reads x[lo .. hi - 1];
      logic float ls_seq_sum32_l{L}(float* x, integer lo, integer hi)
        reads x[lo .. hi - 1];
      axiom ls_seq_sum32_lim{L}: \forall float* x, integer lo, hi;
        ls_same32(ls_seq_sum32(x, lo, hi),
                  (TRIGGER: ls_seq_sum32_l(x, lo, hi)));
      axiom ls_seq_sum32_empty{L}: \forall float* x, integer lo, hi;
        hi <= lo ==>
          ls_same32((TRIGGER: ls_seq_sum32_l(x, lo, hi)), (float)0.0);
      axiom ls_seq_sum32_step{L}: \forall float* x, integer lo, k, hi;
        lo <= k && hi == k + 1 ==>
          ls_same32((TRIGGER: ls_seq_sum32(x, lo, hi)),
                    ls_add32((TRIGGER: ls_seq_sum32_l(x, lo, k)), x[k]));
    }
    logic float ls_sblk32{L}(float* x, integer len, integer b) =
      ls_seq_sum32(x, b * len, (b + 1) * len);
    logic float ls_ss8_32{L}(float* x, integer len, integer i) =
      ls_add32(ls_sblk32(x, len, i), ls_sblk32(x, len, i + 8));
    logic float ls_ss4_32{L}(float* x, integer len, integer i) =
      ls_add32(ls_ss8_32(x, len, i), ls_ss8_32(x, len, i + 4));
    logic float ls_ss2_32{L}(float* x, integer len, integer i) =
      ls_add32(ls_ss4_32(x, len, i), ls_ss4_32(x, len, i + 2));
    logic float ls_sum32_tree{L}(float* x, integer len) =
      ls_add32(ls_ss2_32(x, len, 0), ls_ss2_32(x, len, 1));
    predicate ls_sum32_spec{L}(float* x, integer n, float r) =
      n > 0 && n % 16 == 0 ? ls_same32(r, ls_sum32_tree(x, n / 16))
                           : ls_same32(r, ls_seq_sum32(x, 0, n));
*/

/* ACSL (docs/proofs.md): LayerNorm after its sum (§2.3 steps 2 to 4) in
 * binary32, as LsLn64 in ls_ops64.c. ls_sum32_val and ls_dot32_val are the
 * values that ls_sum32_spec and ls_dot32_spec name; ls_ln32_d(x, s, d, i)
 * is the deviation x[i] - s / d, ls_ln32_o(d, r, g, b) the output (d * r)
 * * g + b, each operation one rounded binary32 operation, their
 * definitions triggered by the function together with the operations'
 * term (ls_sep_at32 is declared before the products). */
/*@ logic float ls_sum32_val{L}(float* x, integer n) =
      n > 0 && n % 16 == 0 ? ls_sum32_tree(x, n / 16)
                           : ls_seq_sum32(x, 0, n);
    logic float ls_dot32_val{L}(float* x, float* w, integer n,
                                integer stride) =
      n > 0 && n % 16 == 0 ? ls_dot32_tree(x, w, stride, n / 16)
                           : ls_seq_dot32(x, w, stride, 0, n);
*/
/*@ axiomatic LsLn32 {
      logic float ls_ln32_d{L}(float* x, float s, float d, integer i)
        reads x[i];
      axiom ls_ln32_d_def{L}: \forall float* x, float s, d, integer i;
        ls_same32((TRIGGER: ls_ln32_d(x, s, d, i)),
                  (TRIGGER: ls_sub32(x[i], ls_div32(s, d))));
      logic float ls_ln32_o(float d, float r, float g, float b);
      axiom ls_ln32_o_def: \forall float d, r, g, b;
        ls_same32((TRIGGER: ls_ln32_o(d, r, g, b)),
                  (TRIGGER: ls_add32(ls_mul32(ls_mul32(d, r), g), b)));
    }
*/

/* ls_ln32_rv(v) is 1 / sqrt(v) (§2.3 step 5, v = var + eps) and
 * ls_ln32_r(r, v) says r == ls_ln32_rv(v), as LsLn64R in ls_ops64.c: the
 * axioms are a definition, triggered so that only the assertion ln32_r,
 * which names ls_ln32_rv, equates r with a binary32 division and square
 * root (here r is const, so it cannot be in the last loop's loop assigns,
 * and that loop's goals hold r's own division 1.0f / sqrtf(...), as they
 * did before the square root had a contract). */
/*@ axiomatic LsLn32R {
      logic float ls_ln32_rv(float v);
      axiom ls_ln32_rv_def: \forall float v;
        ls_same32((TRIGGER: ls_ln32_rv(v)),
                  (TRIGGER: ls_div32((float)1.0, ls_sqrt32(v))));
      predicate ls_ln32_r(float r, float v);
      axiom ls_ln32_r_intro: \forall float v;
        ls_ln32_r(ls_div32((float)1.0, (TRIGGER: ls_sqrt32_ret(v))), v);
      axiom ls_ln32_r_open: \forall float r, v;
        (TRIGGER: ls_ln32_r(r, v)) ==>
          ls_same32(r, (TRIGGER: ls_ln32_rv(v)));
    }
*/

/*@ requires n >= 1;
    requires \valid_read(x + (0 .. n - 1));
    requires \valid_read(g + (0 .. n - 1));
    requires \valid_read(b + (0 .. n - 1));
    requires \valid(y + (0 .. n - 1));
    assigns y[0 .. n - 1];
    behavior order:
      assumes \separated(y + (0 .. n - 1), x + (0 .. n - 1));
      assumes \forall integer i; 0 <= i < n ==>
        ls_sep_at32(y, n, (float*)g, i) && ls_sep_at32(y, n, (float*)b, i);
*/
void ls_layernorm32(const float* x, const float* g, const float* b, int n,
                    float* y) {
  /* The sum of x in the §2.1 order: x[k] * 1.0f is exact, so a dot with a
   * vector of ones has the same bits, but we avoid needing one. */
  float sum;
  if (n > 0 && n % 16 == 0) {
    float s[16];
    const int len = n / 16;
    /*@ assert n == 16 * len; */
    /*@ loop invariant 0 <= blk <= 16;
        loop invariant \forall integer b; 0 <= b < blk ==>
          ls_same32(s[b], ls_sblk32{Pre}((float*)x, len, b));
        loop assigns blk, s[0 .. 15];
        loop variant 16 - blk;
    */
    for (int blk = 0; blk < 16; ++blk) {
      float acc = 0.0f;
      /*@ assert 0 <= blk * len && (blk + 1) * len <= n; */
      /*@ loop invariant blk * len <= k <= (blk + 1) * len;
          loop invariant ls_same32(acc,
            ls_seq_sum32_l{Pre}((float*)x, blk * len, k));
          loop assigns k, acc;
          loop variant (blk + 1) * len - k;
      */
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        /*@ assert \let i = k; ls_same32(x[i], \at(x[i], Pre)); */
        acc = acc + x[k];
      }
      s[blk] = acc;
    }
    /*@ assert \forall integer i; 0 <= i < 8 ==> ls_same32(
          ls_t8_32(&s[0], i), ls_ss8_32{Pre}((float*)x, len, i)); */
    /*@ assert \forall integer i; 0 <= i < 4 ==> ls_same32(
          ls_t4_32(&s[0], i), ls_ss4_32{Pre}((float*)x, len, i)); */
    /*@ assert \forall integer i; 0 <= i < 2 ==> ls_same32(
          ls_t2_32(&s[0], i), ls_ss2_32{Pre}((float*)x, len, i)); */
    /*@ assert ls_same32(ls_tree16_of(&s[0]),
          ls_sum32_tree{Pre}((float*)x, len)); */
    sum = ls_tree16(s);
  } else {
    sum = 0.0f;
    /*@ loop invariant 0 <= k <= n;
        loop invariant ls_same32(sum, ls_seq_sum32_l{Pre}((float*)x, 0, k));
        loop assigns k, sum;
        loop variant n - k;
    */
    for (int k = 0; k < n; ++k) sum = sum + x[k];
  }
  /*@ assert ln_sum: ls_sum32_spec{Pre}((float*)x, n, sum); */
  /*@ for order: assert ln32_xpre: \forall integer i; 0 <= i < n ==>
        ls_same32(x[i], \at(x[i], Pre)); */
  /*@ for order: assert ln32_gpre: \forall integer i; 0 <= i < n ==>
        ls_same32(g[i], \at(g[i], Pre)); */
  /*@ for order: assert ln32_bpre: \forall integer i; 0 <= i < n ==>
        ls_same32(b[i], \at(b[i], Pre)); */
  /*@ ghost Sum: ; */
  const float mean = sum / (float)n;
  /*@ loop invariant 0 <= k <= n;
      for order: loop invariant ln32_dev: \forall integer j; 0 <= j < k ==>
        ls_same32(y[j], ls_ln32_d{Sum}((float*)x, sum, (float)n, j));
      loop assigns k, y[0 .. n - 1];
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ for order: assert ln32_xk: \forall integer i; i == k ==>
          ls_same32(x[i], \at(x[i], Sum)); */
    y[k] = x[k] - mean;
    /*@ for order: assert ln32_yk: \forall integer i; i == k ==>
          ls_same32(y[i], ls_ln32_d{Sum}((float*)x, sum, (float)n, i));
    */
  }
  /*@ for order: assert ln32_dev_ord: \forall integer i; 0 <= i < n ==>
        ls_same32(y[i], ls_ln32_d{Sum}((float*)x, sum, (float)n, i)); */
  /*@ for order: assert ln32_dev_sub: \forall integer i; 0 <= i < n ==>
        ls_same32(y[i], ls_sub32(\at(x[i], Sum), mean)); */
  /*@ ghost Dev: ; */
  const float var = ls_dot32(y, y, n, 1) / (float)n;
  const float r = 1.0f / __builtin_sqrtf(var + LS_LN_EPS32);
  /*@ ghost Out: ; */
  /*@ for order: assert ln32_keep: \forall integer i; 0 <= i < n ==>
        ls_same32(y[i], \at(y[i], Dev)); */
  /*@ loop invariant 0 <= k <= n;
      for order: loop invariant ln32_out: \forall integer j; 0 <= j < n ==>
        ls_same32(y[j], j < k ? ls_ln32_o(\at(y[j], LoopEntry), r,
                                          \at(g[j], Sum), \at(b[j], Sum))
                              : \at(y[j], LoopEntry));
      loop assigns k, y[0 .. n - 1];
      loop variant n - k;
  */
  for (int k = 0; k < n; ++k) {
    /*@ for order: assert ln32_yk2: \forall integer i; i == k ==>
          ls_same32(y[i], \at(y[i], LoopEntry)); */
    /*@ for order: assert ln32_gsep: ls_sep_at32(y, n, (float*)g, k) &&
          ls_sep_at32(y, n, (float*)b, k); */
    /*@ for order: assert ln32_gk: \forall integer i; i == k ==>
          ls_same32(g[i], \at(g[i], Sum)); */
    /*@ for order: assert ln32_bk: \forall integer i; i == k ==>
          ls_same32(b[i], \at(b[i], Sum)); */
    y[k] = (y[k] * r) * g[k] + b[k];
    /*@ for order: assert ln32_ok: \forall integer i; i == k ==>
          ls_same32(y[i], ls_ln32_o(\at(y[i], LoopEntry), r,
                                    \at(g[i], Sum), \at(b[i], Sum))); */
  }
  /*@ for order: assert ln32_out_ord: \forall integer i; 0 <= i < n ==>
        ls_same32(y[i], ls_ln32_o(\at(y[i], Out), r, \at(g[i], Sum),
                                  \at(b[i], Sum))); */
  /*@ for order: assert ln32_r:
        ls_same32(r, ls_ln32_rv(ls_add32(var, (float)0x1.4f8b58p-17))); */
  /*@ for order: assert ln32_mean_ord: ls_same32(mean,
        ls_div32(ls_sum32_val{Pre}((float*)x, n), (float)n)); */
  /*@ for order: assert ln32_var_ord: ls_same32(var,
        ls_div32(ls_dot32_val{Dev}(y, y, n, 1), (float)n)); */
}

/* ACSL (docs/proofs.md): §2.4's order in binary32 as logic, as
 * LsSoftmax64 in ls_ops64.c: ls_smax32(s, j) is step 1's m once it has seen
 * s[0 .. j-1] (m = s[0], then m = s[i] > m ? s[i] : m, IEEE's comparison,
 * false for a NaN); ls_sm_e32(s, m, k) is e[k] = exp(s[k] - m), exp being
 * ls_exp32_f; ls_ssum32(s, m, j) the sequential sum from +0.0 of e[0 ..
 * j-1]; ls_softmax32_p(s, n, j) step 3's p[j] = e[j] / S. The steps are in
 * "fuel" form (ls_smax32_l, ls_ssum32_l), every axiom has its triggers
 * named, and the contract reads s at Pre. */
/*@ axiomatic LsSoftmax32 {
      logic float ls_sm_e32{L}(float* s, float m, integer k) reads s[k];
      axiom ls_sm_e32_def{L}: \forall float* s, float m, integer k, float x;
        ls_same32(x, ls_sub32(s[k], m)) ==>
          ls_same32((TRIGGER: ls_sm_e32(s, m, k)), (TRIGGER: ls_exp32_f(x)));
      logic float ls_smax32{L}(float* s, integer j) reads s[0 .. j - 1];
      logic float ls_smax32_l{L}(float* s, integer j) reads s[0 .. j - 1];
      axiom ls_smax32_lim{L}: \forall float* s, integer j;
        ls_same32((TRIGGER: ls_smax32(s, j)), ls_smax32_l(s, j));
      axiom ls_smax32_first{L}: \forall float* s;
        ls_same32((TRIGGER: ls_smax32(s, 1)), s[0]);
      axiom ls_smax32_step{L}: \forall float* s, integer k, j;
        k >= 1 && j == k + 1 ==>
          (ls_lt32((TRIGGER: ls_smax32_l(s, k)), s[k]) ==>
             ls_same32((TRIGGER: ls_smax32(s, j)), s[k])) &&
          (!ls_lt32(ls_smax32_l(s, k), s[k]) ==>
             ls_same32(ls_smax32(s, j), ls_smax32_l(s, k)));
      logic float ls_ssum32{L}(float* s, float m, integer j)
        reads s[0 .. j - 1];
      logic float ls_ssum32_l{L}(float* s, float m, integer j)
        reads s[0 .. j - 1];
      axiom ls_ssum32_lim{L}: \forall float* s, float m, integer j;
        ls_same32((TRIGGER: ls_ssum32(s, m, j)), ls_ssum32_l(s, m, j));
      axiom ls_ssum32_empty{L}: \forall float* s, float m, integer j;
        j <= 0 ==> ls_same32((TRIGGER: ls_ssum32(s, m, j)), (float)0.0);
      axiom ls_ssum32_step{L}: \forall float* s, float m, integer k, j;
        k >= 0 && j == k + 1 ==>
          ls_same32((TRIGGER: ls_ssum32(s, m, j)),
                    ls_add32((TRIGGER: ls_ssum32_l(s, m, k)),
                             ls_sm_e32(s, m, k)));
    }
    logic float ls_softmax32_p{L}(float* s, integer n, integer j) =
      ls_div32(ls_sm_e32(s, ls_smax32(s, n), j),
               ls_ssum32(s, ls_smax32(s, n), n));
*/

/* p may be s itself (the GPT-2 path normalises its scores in place). As
 * ls_softmax64's: behavior order assumes only that no store p[i] hits a
 * score s[k] not yet read (k > i), which holds when p is separated from s
 * and when p == s; invariant sm_s: the scores s[j .. n-1] still to be read
 * are those of Pre. (The disjunction of the two cases as the assumes made
 * sm_s cost cvc5 2.3 s, this formula 0.3 s, on exp32's six behaviors.) */
/*@ requires n >= 1;
    requires \valid_read(s + (0 .. n - 1));
    requires \valid(p + (0 .. n - 1));
    assigns p[0 .. n - 1];
    behavior order:
      assumes \forall integer i, k; 0 <= i < k < n ==>
        \separated(p + i, s + k);
      ensures \forall integer j; 0 <= j < n ==>
        ls_same32(p[j], \old(ls_softmax32_p((float*)s, n, j)));
*/
void ls_softmax32(const float* s, int n, float* p) {
  float m = s[0];
  /*@ loop invariant 1 <= j <= n;
      for order: loop invariant sm_max:
        ls_same32(m, ls_smax32{Pre}((float*)s, j));
      loop assigns j, m;
      loop variant n - j;
  */
  for (int j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
  float sum = 0.0f;
  /*@ loop invariant 0 <= j <= n;
      for order: loop invariant sm_e: \forall integer k; 0 <= k < j ==>
        ls_same32(p[k], ls_sm_e32{Pre}((float*)s, m, k));
      for order: loop invariant sm_sum:
        ls_same32(sum, ls_ssum32{Pre}((float*)s, m, j));
      for order: loop invariant sm_s: \forall integer k; j <= k < n ==>
        ls_same32(s[k], \at(s[k], Pre));
      loop assigns j, sum, p[0 .. n - 1];
      loop variant n - j;
  */
  for (int j = 0; j < n; ++j) {
    /*@ for order: assert sm_sj: \forall integer k; k == j ==>
          ls_same32(s[k], \at(s[k], Pre)); */
    p[j] = ls_exp32(s[j] - m);
    /*@ for order: assert sm_ej:
          ls_same32(p[j], ls_sm_e32{Pre}((float*)s, m, j)); */
    sum = sum + p[j];
  }
  /*@ loop invariant 0 <= j <= n;
      for order: loop invariant sm_p: \forall integer k; 0 <= k < n ==>
        ls_same32(p[k], k < j ? ls_div32(\at(p[k], LoopEntry), sum)
                              : \at(p[k], LoopEntry));
      loop assigns j, p[0 .. n - 1];
      loop variant n - j;
  */
  for (int j = 0; j < n; ++j) p[j] = p[j] / sum;
}
