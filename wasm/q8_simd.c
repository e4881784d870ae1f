/* The SIMD module's int8 product (docs/arithmetic.md §7.3, docs/wasm.md
 * "int8"), with wasm_simd128.h: ls_q8_matvec replaces core/ls_q8.c's
 * function of that name (the rest of that file, the quantization, the
 * layout's indices and the checks, is compiled unchanged, below).
 * core/ls_gpt2_q8.c calls it by name for the four projections of every
 * block and the output head, one position at a time, on the §7.6 panels
 * the int8 file holds (read in place: no repacking).
 *
 * Step 1 of §7.3, the integer sum of a group, is exact (|isum| <=
 * 64 * 127 * 127 < 2^31), so any order of its 64 products gives the same
 * int32: here, 8 bytes of weights (4 consecutive k of two outputs, the
 * layout's words) are sign-extended to i16 and multiplied by the group's
 * activations with i32x4.dot_i16x8_s (pairs of products added: exact), and
 * the pairs of one output are added at the end of the group. Steps 2-4 are
 * the core's operations in the core's order, four outputs per v128 (one
 * output per lane, as docs/arithmetic.md §1.7 asks): the two scales
 * multiplied, then by float(isum) (exact conversion), added to the
 * output's accumulator that started at +0.0, groups in increasing order,
 * the bias added last. WebAssembly SIMD has no FMA (relaxed SIMD is not
 * enabled): every multiply and add is its own instruction. */
#include <wasm_simd128.h>

#define ls_q8_matvec ls_q8_matvec_scalar
#define ls_q8_matmul ls_q8_matmul_scalar
#include "ls_q8.c"
#undef ls_q8_matmul
#undef ls_q8_matvec

void ls_q8_matvec(const int8_t* qx, const float* sx, const uint8_t* m, int K,
                  int N, const float* b, float* y);
void ls_q8_matmul(const int8_t* qx, const float* sx, int n, const uint8_t* m,
                  int K, int N, const float* b, float* y);

/* The group's exact integer sums of four outputs (the layout's words
 * w[q * pw + j .. j + 3] for q = 0 .. 15, 16 bytes at blk + (q * pw + j) * 4)
 * against the activations xv[q] = (x[4q .. 4q+3], x[4q .. 4q+3]) as i16. */
static inline v128_t lsw_q8_isum4(const int8_t* w, int pw, const v128_t* xv) {
  v128_t a0 = wasm_i32x4_const_splat(0), a1 = wasm_i32x4_const_splat(0);
  for (int q = 0; q < 16; ++q) {
    const int8_t* p = w + q * pw * 4;
    /* Outputs j, j+1 (lanes 0-1: j's pairs, 2-3: j+1's), then j+2, j+3. */
    a0 = wasm_i32x4_add(a0, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p), xv[q]));
    a1 = wasm_i32x4_add(a1,
                        wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p + 8), xv[q]));
  }
  /* Each output's two pair sums added: (j, j+1, j+2, j+3). */
  return wasm_i32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 2, 4, 6),
                        wasm_i32x4_shuffle(a0, a1, 1, 3, 5, 7));
}

/* Eight outputs at once (four accumulators, each xv[q] used four times). */
static inline void lsw_q8_isum8(const int8_t* w, int pw, const v128_t* xv,
                                v128_t* lo, v128_t* hi) {
  v128_t a0 = wasm_i32x4_const_splat(0), a1 = wasm_i32x4_const_splat(0);
  v128_t a2 = wasm_i32x4_const_splat(0), a3 = wasm_i32x4_const_splat(0);
  for (int q = 0; q < 16; ++q) {
    const int8_t* p = w + q * pw * 4;
    const v128_t x = xv[q];
    a0 = wasm_i32x4_add(a0, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p), x));
    a1 = wasm_i32x4_add(a1, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p + 8), x));
    a2 =
        wasm_i32x4_add(a2, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p + 16), x));
    a3 =
        wasm_i32x4_add(a3, wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(p + 24), x));
  }
  *lo = wasm_i32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 2, 4, 6),
                       wasm_i32x4_shuffle(a0, a1, 1, 3, 5, 7));
  *hi = wasm_i32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 2, 4, 6),
                       wasm_i32x4_shuffle(a2, a3, 1, 3, 5, 7));
}

/* §7.3 steps 2-3 for four outputs: acc + float(isum) * (sx * widen(sw)),
 * sw the four little-endian bfloat16 scales at s. */
static inline v128_t lsw_q8_acc4(v128_t acc, v128_t isum, v128_t sxg,
                                 const uint8_t* s) {
  const v128_t sw = wasm_i32x4_shl(wasm_u32x4_load16x4(s), 16);
  const v128_t scale = wasm_f32x4_mul(sxg, sw);
  return wasm_f32x4_add(acc,
                        wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), scale));
}

/* Where the touch-ahead loads go (see ls_q8_matvec), so that they are not
 * optimised away. */
static v128_t lsw_q8_sink;

void ls_q8_matvec(const int8_t* qx, const float* sx, const uint8_t* m, int K,
                  int N, const float* b, float* y) {
  const int G = K / LS_Q8_GROUP;
  const uint8_t* last = m + (size_t)N * (size_t)(K + 2 * G) - 4;
  v128_t touch = wasm_i32x4_const_splat(0);
  for (int c0 = 0; c0 < N; c0 += LS_Q8_PANEL) {
    const int pw = N - c0 < LS_Q8_PANEL ? N - c0 : LS_Q8_PANEL;
    const int pv = pw / 4 * 4; /* outputs in whole vectors; the rest scalar */
    const uint8_t* panel = m + (size_t)c0 * (size_t)(K + 2 * G);
    v128_t acc[LS_Q8_PANEL / 4];
    float tail[3];
    for (int v = 0; v < pv / 4; ++v) acc[v] = wasm_f32x4_const_splat(0.0f);
    for (int j = pv; j < pw; ++j) tail[j - pv] = 0.0f;
    for (int g = 0; g < G; ++g) {
      const uint8_t* blk = panel + (size_t)g * (size_t)(LS_Q8_GROUP + 2) * pw;
      const int8_t* qw = (const int8_t*)blk;
      const uint8_t* sw = blk + LS_Q8_GROUP * pw;
      const int8_t* xg = qx + g * LS_Q8_GROUP;
      /* (x[4q .. 4q+3], x[4q .. 4q+3]) as i16, for the dot products. */
      v128_t xv[16];
      for (int q = 0; q < 16; ++q) {
        xv[q] = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_splat(xg + 4 * q));
      }
      const v128_t sxg = wasm_f32x4_splat(sx[g]);
      /* The next group's block (66 * pw bytes) follows this one: while
       * eight outputs of this group are summed, one load per 64-byte line
       * touches 512 bytes of it, so that the whole block is on its way
       * from memory before it is needed (WebAssembly has no prefetch; the
       * head, 39 MB read once per token, went from about 13 to 21 GMAC/s
       * with it). The loaded values are discarded. */
      const uint8_t* ahead = blk + (LS_Q8_GROUP + 2) * pw;
      int j = 0;
      for (; j + 8 <= pv; j += 8) {
        const uint8_t* t = ahead + j * 64;
        if (t + 7 * 64 <= last) {
          for (int i = 0; i < 8; ++i) {
            touch = wasm_v128_or(touch, wasm_v128_load32_splat(t + 64 * i));
          }
        }
        v128_t lo, hi;
        lsw_q8_isum8(qw + j * 4, pw, xv, &lo, &hi);
        acc[j / 4] = lsw_q8_acc4(acc[j / 4], lo, sxg, sw + 2 * j);
        acc[j / 4 + 1] = lsw_q8_acc4(acc[j / 4 + 1], hi, sxg, sw + 2 * j + 8);
      }
      for (; j < pv; j += 4) {
        const v128_t isum = lsw_q8_isum4(qw + j * 4, pw, xv);
        acc[j / 4] = lsw_q8_acc4(acc[j / 4], isum, sxg, sw + 2 * j);
      }
      /* The last panel's outputs past a whole vector (wte's 50,257 = 785
       * panels of 64 and one of 17): the core's scalar loop. */
      for (; j < pw; ++j) {
        int32_t isum = 0;
        for (int kk = 0; kk < LS_Q8_GROUP; ++kk) {
          isum +=
              (int32_t)xg[kk] * (int32_t)qw[((kk / 4) * pw + j) * 4 + kk % 4];
        }
        const float scale = sx[g] * ls_bf16_to_f32(ls_q8_get16(sw + 2 * j));
        tail[j - pv] = tail[j - pv] + (float)isum * scale;
      }
    }
    /* Step 4: the bias last, once. */
    for (int v = 0; v < pv / 4; ++v) {
      const int o = c0 + 4 * v;
      wasm_v128_store(
          y + o, b ? wasm_f32x4_add(acc[v], wasm_v128_load(b + o)) : acc[v]);
    }
    for (int j = pv; j < pw; ++j) {
      y[c0 + j] = b ? tail[j - pv] + b[c0 + j] : tail[j - pv];
    }
  }
  lsw_q8_sink = wasm_v128_or(lsw_q8_sink, touch);
}

/* The batched passes' product (docs/wasm.md "int8"): ls_q8_matmul for n
 * positions, group-major. For each panel and each group, the group's block
 * (66 * pw bytes: 4,224 for a whole panel) is read from memory once and
 * stays in L1 while every tile of LSW_Q8_POS positions (then a tail of 3,
 * 2 or 1) runs through it: for each 4 outputs and each of the block's 16
 * rows of words, two weight vectors (i16x8.load8x8_s: 4 k of outputs j,
 * j+1, then j+2, j+3) serve the tile's positions, 2 accumulators each, so
 * 8 accumulators, 2 weight vectors and an activation vector are live (11
 * of the 16 XMM registers V8 has on x86-64). The integer sums are exact;
 * the float part is the core's per output and position (§7.3 steps 2-4):
 * sx[t][g] * widen(sw[o][g]), times float(isum), added to the output's
 * accumulator, which lives in y[t][o] between groups and starts at +0.0 at
 * group 0; after the last group the bias is added. So every output is the
 * ls_q8_matvec of its position alone, bit for bit. */
#define LSW_Q8_POS 4

/* One group's 4 outputs (words at w, panel width pw) for P positions:
 * isum[p] = (isum of j, j+1, j+2, j+3) against xv[p]. */
static inline __attribute__((always_inline)) void lsw_q8_isum4p(
    const int8_t* w, int pw, const v128_t (*xv)[16], v128_t* isum,
    const int P) {
  v128_t a[LSW_Q8_POS][2];
  for (int p = 0; p < P; ++p) {
    a[p][0] = wasm_i32x4_const_splat(0);
    a[p][1] = a[p][0];
  }
#pragma clang loop unroll(disable)
  for (int q = 0; q < 16; ++q) {
    const int8_t* r = w + q * pw * 4;
    const v128_t w0 = wasm_i16x8_load8x8(r);
    const v128_t w1 = wasm_i16x8_load8x8(r + 8);
    for (int p = 0; p < P; ++p) {
      const v128_t x = xv[p][q];
      a[p][0] = wasm_i32x4_add(a[p][0], wasm_i32x4_dot_i16x8(w0, x));
      a[p][1] = wasm_i32x4_add(a[p][1], wasm_i32x4_dot_i16x8(w1, x));
    }
  }
  for (int p = 0; p < P; ++p) {
    isum[p] = wasm_i32x4_add(wasm_i32x4_shuffle(a[p][0], a[p][1], 0, 2, 4, 6),
                             wasm_i32x4_shuffle(a[p][0], a[p][1], 1, 3, 5, 7));
  }
}

/* Group g of one panel (block blk, pw outputs from column c0, pw a
 * multiple of 4) for the P positions whose levels start at qx (stride K)
 * and scales at sx (stride G), outputs at y (stride N). */
static inline __attribute__((always_inline)) void lsw_q8_group_tile(
    const int8_t* qx, const float* sx, int K, int G, int g, const uint8_t* blk,
    int pw, int c0, int N, const float* b, float* y, const int P) {
  v128_t xv[LSW_Q8_POS][16];
  for (int p = 0; p < P; ++p) {
    const int8_t* xg = qx + (long)p * K + g * LS_Q8_GROUP;
    for (int q = 0; q < 16; ++q) {
      xv[p][q] =
          wasm_i16x8_extend_low_i8x16(wasm_v128_load32_splat(xg + 4 * q));
    }
  }
  const int8_t* qw = (const int8_t*)blk;
  const uint8_t* sw = blk + LS_Q8_GROUP * pw;
  const int first = g == 0, last = g == G - 1;
  for (int j = 0; j < pw; j += 4) {
    v128_t isum[LSW_Q8_POS];
    lsw_q8_isum4p(qw + j * 4, pw, (const v128_t(*)[16])xv, isum, P);
    const v128_t swv = wasm_i32x4_shl(wasm_u32x4_load16x4(sw + 2 * j), 16);
    for (int p = 0; p < P; ++p) {
      float* yp = y + (long)p * N + c0 + j;
      const v128_t scale = wasm_f32x4_mul(wasm_f32x4_splat(sx[p * G + g]), swv);
      v128_t acc = first ? wasm_f32x4_const_splat(0.0f) : wasm_v128_load(yp);
      acc = wasm_f32x4_add(
          acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum[p]), scale));
      if (last && b) acc = wasm_f32x4_add(acc, wasm_v128_load(b + c0 + j));
      wasm_v128_store(yp, acc);
    }
  }
}

void ls_q8_matmul(const int8_t* qx, const float* sx, int n, const uint8_t* m,
                  int K, int N, const float* b, float* y) {
  const int G = K / LS_Q8_GROUP;
  if (n == 1 || N % 4 != 0) {
    /* One position (a step, the head: the streaming kernel above), or
     * outputs that do not fill vectors (never a block matrix of GPT-2). */
    for (int t = 0; t < n; ++t) {
      ls_q8_matvec(qx + (long)t * K, sx + (long)t * G, m, K, N, b,
                   y + (long)t * N);
    }
    return;
  }
  for (int c0 = 0; c0 < N; c0 += LS_Q8_PANEL) {
    const int pw = N - c0 < LS_Q8_PANEL ? N - c0 : LS_Q8_PANEL;
    const uint8_t* panel = m + (size_t)c0 * (size_t)(K + 2 * G);
    for (int g = 0; g < G; ++g) {
      const uint8_t* blk = panel + (size_t)g * (size_t)(LS_Q8_GROUP + 2) * pw;
      int t = 0;
      for (; t + LSW_Q8_POS <= n; t += LSW_Q8_POS) {
        lsw_q8_group_tile(qx + (long)t * K, sx + (long)t * G, K, G, g, blk, pw,
                          c0, N, b, y + (long)t * N, LSW_Q8_POS);
      }
      const int8_t* xt = qx + (long)t * K;
      const float* st = sx + (long)t * G;
      float* yt = y + (long)t * N;
      switch (n - t) {
        case 3:
          lsw_q8_group_tile(xt, st, K, G, g, blk, pw, c0, N, b, yt, 3);
          break;
        case 2:
          lsw_q8_group_tile(xt, st, K, G, g, blk, pw, c0, N, b, yt, 2);
          break;
        case 1:
          lsw_q8_group_tile(xt, st, K, G, g, blk, pw, c0, N, b, yt, 1);
          break;
        default:
          break;
      }
    }
  }
}
