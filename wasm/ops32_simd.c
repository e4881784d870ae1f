/* The SIMD module's binary32 kernels, with wasm_simd128.h: ls_matvec32,
 * ls_rowdots32, ls_dot32 and ls_softmax32 replace core/ls_ops32.c's
 * functions of the same names (the rest of that file, LayerNorm, is
 * compiled unchanged, below). core/ls_gpt2.c calls them by name, so the
 * SIMD module runs the core's GPT-2 with these; the matrices are read from
 * the panels gpt2_prepare builds (wasm/lsw_entry.c).
 *
 * The rule of docs/arithmetic.md §1.7: a lane holds one output and runs
 * that output's scalar sequence. Here lanes run across outputs (columns of
 * an input-major matrix, rows of the tied head, §2.1 blocks of one dot,
 * softmax elements); the k order of every sum, its +0.0 start, the §2.1
 * block split and halving tree and the bias added last are the core's.
 * There is no FMA in WebAssembly SIMD (relaxed SIMD is not enabled), and
 * every multiply and add is its own instruction. */
#include <wasm_simd128.h>

/* The core's kernels under other names: the scalar fallbacks below, and
 * everything else of ls_ops32.c (LayerNorm) as it is. */
#define ls_dot32 ls_dot32_scalar
#define ls_matvec32 ls_matvec32_scalar
#define ls_rowdots32 ls_rowdots32_scalar
#define ls_softmax32 ls_softmax32_scalar
#define ls_matmul32 ls_matmul32_scalar
#include "ls_ops32.c"
#undef ls_matmul32
#undef ls_dot32
#undef ls_matvec32
#undef ls_rowdots32
#undef ls_softmax32

float ls_dot32(const float* x, const float* w, int n, int stride);
void ls_softmax32(const float* s, int n, float* p);
void ls_matvec32(const float* x, const float* w, const float* b, int n_in,
                 int n_out, float* partial, float* y);
void ls_rowdots32(const float* x, const float* m, int n, int n_rows, float* y);
void ls_matmul32(const float* x, int n, const float* w, const float* b,
                 int n_in, int n_out, float* partial, float* y);

/* One output vector of the §2.1 halving tree over 16 block sums. */
static v128_t lsw_tree16(v128_t* s) {
  for (int h = 8; h >= 1; h /= 2) {
    for (int i = 0; i < h; ++i) s[i] = wasm_f32x4_add(s[i], s[i + h]);
  }
  return s[0];
}

/* Repacked matrices (docs/wasm.md "Panels"): at session start the SIMD
 * module rewrites each block matrix W [K, N] (N a multiple of 32), in place,
 * as N / 32 panels of [K, 32], rows contiguous: panel p holds columns
 * 32p .. 32p + 31. A decode step then reads every matrix as one linear
 * stream, which is what keeps a 128-bit WebAssembly loop near the memory's
 * speed. Only ls_matvec32 reads these matrices, and it recognises them by
 * address. */
#define LSW_PANEL 32
#define LSW_MAX_PANELED 1024
static const float* lsw_paneled[LSW_MAX_PANELED];
static int lsw_n_paneled;
/* Where the touch-ahead loads go (see lsw_panel_block), so that they are
 * not optimised away. */
static v128_t lsw_sink;

void lsw_forget_panels(void);
int lsw_repack_panels(float* w, int n_in, int n_out, float* tmp);

/* The tied output head: wte [n_rows, n] row-major, copied at session start
 * into panels of 32 rows, head_panels[p][k][j] = wte[32p + j][k] (rows past
 * n_rows are +0.0), so that ls_rowdots32 is the panel kernel again. */
static const float* lsw_head_rows;
static const float* lsw_head_panels;

void lsw_set_head_panels(const float* m, float* panels, int n, int n_rows);

void lsw_forget_panels(void) {
  lsw_n_paneled = 0;
  lsw_head_rows = 0;
  lsw_head_panels = 0;
}

void lsw_set_head_panels(const float* m, float* panels, int n, int n_rows) {
  const int np = (n_rows + LSW_PANEL - 1) / LSW_PANEL;
  for (int p = 0; p < np; ++p) {
    float* panel = panels + (long)p * n * LSW_PANEL;
    for (int j = 0; j < LSW_PANEL; ++j) {
      const int r = p * LSW_PANEL + j;
      for (int k = 0; k < n; ++k) {
        panel[k * LSW_PANEL + j] = r < n_rows ? m[(long)r * n + k] : 0.0f;
      }
    }
  }
  lsw_head_rows = m;
  lsw_head_panels = panels;
}

/* Repacks W [n_in, n_out] in place through tmp (n_in * n_out floats).
 * Returns 0 when the matrix is left as it is (n_out not a multiple of 32,
 * or the table is full). */
int lsw_repack_panels(float* w, int n_in, int n_out, float* tmp) {
  if (n_out % LSW_PANEL != 0 || lsw_n_paneled == LSW_MAX_PANELED) return 0;
  const long total = (long)n_in * n_out;
  for (long i = 0; i < total; ++i) tmp[i] = w[i];
  for (int p = 0; p < n_out / LSW_PANEL; ++p) {
    float* panel = w + (long)p * n_in * LSW_PANEL;
    for (int k = 0; k < n_in; ++k) {
      const float* row = tmp + (long)k * n_out + p * LSW_PANEL;
      for (int j = 0; j < LSW_PANEL; ++j) panel[k * LSW_PANEL + j] = row[j];
    }
  }
  lsw_paneled[lsw_n_paneled++] = w;
  return 1;
}

static int lsw_is_paneled(const float* w) {
  for (int i = 0; i < lsw_n_paneled; ++i) {
    if (lsw_paneled[i] == w) return 1;
  }
  return 0;
}

/* One §2.1 block of one panel: rows k0 .. k0 + len - 1 (each 32 floats,
 * contiguous) against x; lane o of acc[v] is output 4v + o's block sum,
 * from +0.0 in k order. Every 32 rows (4 KiB) one load touches the panel
 * 64 rows ahead: WebAssembly has no prefetch, and the early page touch lets
 * the hardware prefetcher cross page boundaries without waiting. */
static void lsw_panel_block(const float* x, const float* panel, int k0, int len,
                            int rows, v128_t* out) {
  v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0,
         a5 = a0, a6 = a0, a7 = a0, touch = a0;
  const float* r = panel + (long)k0 * LSW_PANEL;
  for (int k = k0; k < k0 + len; ++k, r += LSW_PANEL) {
    if ((k & 31) == 0) {
      const int ahead = k + 64 < rows ? k + 64 : rows - 1;
      touch = wasm_v128_or(
          touch, wasm_v128_load32_splat(panel + (long)ahead * LSW_PANEL));
    }
    const v128_t xk = wasm_v128_load32_splat(x + k);
    a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(xk, wasm_v128_load(r)));
    a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(xk, wasm_v128_load(r + 4)));
    a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(xk, wasm_v128_load(r + 8)));
    a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(xk, wasm_v128_load(r + 12)));
    a4 = wasm_f32x4_add(a4, wasm_f32x4_mul(xk, wasm_v128_load(r + 16)));
    a5 = wasm_f32x4_add(a5, wasm_f32x4_mul(xk, wasm_v128_load(r + 20)));
    a6 = wasm_f32x4_add(a6, wasm_f32x4_mul(xk, wasm_v128_load(r + 24)));
    a7 = wasm_f32x4_add(a7, wasm_f32x4_mul(xk, wasm_v128_load(r + 28)));
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
  out[4] = a4, out[5] = a5, out[6] = a6, out[7] = a7;
  lsw_sink = wasm_v128_or(lsw_sink, touch);
}

/* §2.2 on a repacked matrix: per panel, the 16 block sums of its 32
 * outputs, the §2.1 tree, the bias last. */
static void lsw_panel_matvec(const float* x, const float* w, const float* b,
                             int n_in, int n_out, float* y) {
  const int blocks = n_in % 16 == 0 ? 16 : 1;
  const int len = n_in / blocks;
  for (int p = 0; p < n_out / LSW_PANEL; ++p) {
    const float* panel = w + (long)p * n_in * LSW_PANEL;
    v128_t part[16][8];
    for (int blk = 0; blk < blocks; ++blk) {
      lsw_panel_block(x, panel, blk * len, len, n_in, part[blk]);
    }
    for (int v = 0; v < 8; ++v) {
      v128_t t[16];
      for (int blk = 0; blk < blocks; ++blk) t[blk] = part[blk][v];
      v128_t s = blocks == 16 ? lsw_tree16(t) : t[0];
      const int o = p * LSW_PANEL + 4 * v;
      if (b) s = wasm_f32x4_add(s, wasm_v128_load(b + o));
      wasm_v128_store(y + o, s);
    }
  }
}

/* §2.2 in the core's loop order: partial[blk][o] is block blk's running sum
 * of output o, and row k of W is streamed whole. Four rows are applied per
 * pass over a block's accumulators, one after the other in k order, so each
 * accumulator is loaded and stored once per four products. */
void ls_matvec32(const float* x, const float* w, const float* b, int n_in,
                 int n_out, float* partial, float* y) {
  if (n_in > 0 && lsw_is_paneled(w)) {
    lsw_panel_matvec(x, w, b, n_in, n_out, y);
    return;
  }
  const int blocks = (n_in > 0 && n_in % 16 == 0) ? 16 : 1;
  const int len = n_in / blocks;
  const int nv = n_out & ~3;
  for (int blk = 0; blk < blocks; ++blk) {
    float* acc = partial + (long)blk * n_out;
    for (int o = 0; o < n_out; ++o) acc[o] = 0.0f;
    int k = blk * len;
    const int end = (blk + 1) * len;
    for (; k + 4 <= end; k += 4) {
      const float* r0 = w + (long)k * n_out;
      const float* r1 = r0 + n_out;
      const float* r2 = r1 + n_out;
      const float* r3 = r2 + n_out;
      const v128_t x0 = wasm_f32x4_splat(x[k]);
      const v128_t x1 = wasm_f32x4_splat(x[k + 1]);
      const v128_t x2 = wasm_f32x4_splat(x[k + 2]);
      const v128_t x3 = wasm_f32x4_splat(x[k + 3]);
      int o = 0;
      for (; o < nv; o += 4) {
        v128_t a = wasm_v128_load(acc + o);
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x0, wasm_v128_load(r0 + o)));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x1, wasm_v128_load(r1 + o)));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x2, wasm_v128_load(r2 + o)));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x3, wasm_v128_load(r3 + o)));
        wasm_v128_store(acc + o, a);
      }
      for (; o < n_out; ++o) {
        float a = acc[o];
        a = a + x[k] * r0[o];
        a = a + x[k + 1] * r1[o];
        a = a + x[k + 2] * r2[o];
        a = a + x[k + 3] * r3[o];
        acc[o] = a;
      }
    }
    for (; k < end; ++k) {
      const float* r = w + (long)k * n_out;
      const v128_t xk = wasm_f32x4_splat(x[k]);
      int o = 0;
      for (; o < nv; o += 4) {
        wasm_v128_store(
            acc + o, wasm_f32x4_add(wasm_v128_load(acc + o),
                                    wasm_f32x4_mul(xk, wasm_v128_load(r + o))));
      }
      for (; o < n_out; ++o) acc[o] = acc[o] + x[k] * r[o];
    }
  }
  int o = 0;
  for (; o < nv; o += 4) {
    v128_t s;
    if (blocks == 16) {
      v128_t t[16];
      for (int blk = 0; blk < 16; ++blk) {
        t[blk] = wasm_v128_load(partial + (long)blk * n_out + o);
      }
      s = lsw_tree16(t);
    } else {
      s = wasm_v128_load(partial + o);
    }
    if (b) s = wasm_f32x4_add(s, wasm_v128_load(b + o));
    wasm_v128_store(y + o, s);
  }
  ls_matvec32_finish(partial, b, blocks, n_out, o, y);
}

/* The batched passes' products (docs/wasm.md "Matrix products"). On a
 * repacked matrix, each panel is read once from memory for all n positions:
 * for each tile of up to LSW_MM_POS positions, for each §2.1 block, for each
 * group of 8 columns, the block's rows (in L1 after the first group) are
 * applied to the tile's positions, lane o of acc[p][v] being output
 * 8g + 4v + o of position p: its block sum from +0.0 in k order, as in
 * lsw_panel_block. The 16 block sums of every output of the tile are kept
 * on the stack, then combined by the §2.1 tree and the bias added last.
 * 4 positions x 2 vectors is 8 accumulators, 2 weight vectors, a broadcast
 * and a product: 12 of the 16 XMM registers V8 has on x86-64, so nothing
 * spills. */
#define LSW_MM_POS 4

static inline __attribute__((always_inline)) void lsw_mm_tile(
    const float* x, int n_in, const float* panel, const float* b, int o0,
    int n_out, float* y, const int P) {
  const int blocks = n_in % 16 == 0 ? 16 : 1;
  const int len = n_in / blocks;
  v128_t part[16][LSW_PANEL / 4][LSW_MM_POS];
  for (int blk = 0; blk < blocks; ++blk) {
    const int k0 = blk * len;
    for (int g = 0; g < LSW_PANEL / 8; ++g) {
      v128_t acc[LSW_MM_POS][2];
      for (int p = 0; p < P; ++p) {
        acc[p][0] = wasm_f32x4_splat(0.0f);
        acc[p][1] = acc[p][0];
      }
      const float* r = panel + (long)k0 * LSW_PANEL + 8 * g;
      for (int k = k0; k < k0 + len; ++k, r += LSW_PANEL) {
        const v128_t w0 = wasm_v128_load(r);
        const v128_t w1 = wasm_v128_load(r + 4);
        for (int p = 0; p < P; ++p) {
          const v128_t xk = wasm_v128_load32_splat(x + (long)p * n_in + k);
          acc[p][0] = wasm_f32x4_add(acc[p][0], wasm_f32x4_mul(xk, w0));
          acc[p][1] = wasm_f32x4_add(acc[p][1], wasm_f32x4_mul(xk, w1));
        }
      }
      for (int p = 0; p < P; ++p) {
        part[blk][2 * g][p] = acc[p][0];
        part[blk][2 * g + 1][p] = acc[p][1];
      }
    }
  }
  for (int v = 0; v < LSW_PANEL / 4; ++v) {
    const int o = o0 + 4 * v;
    const v128_t bias = b ? wasm_v128_load(b + o) : wasm_f32x4_splat(0.0f);
    for (int p = 0; p < P; ++p) {
      v128_t t[16];
      for (int blk = 0; blk < blocks; ++blk) t[blk] = part[blk][v][p];
      v128_t s = blocks == 16 ? lsw_tree16(t) : t[0];
      if (b) s = wasm_f32x4_add(s, bias);
      wasm_v128_store(y + (long)p * n_out + o, s);
    }
  }
}

void ls_matmul32(const float* x, int n, const float* w, const float* b,
                 int n_in, int n_out, float* partial, float* y) {
  if (n == 1 || n_in <= 0 || !lsw_is_paneled(w)) {
    /* One position (the streaming panel kernel), or a matrix that is not
     * repacked: a matrix-vector product per position. */
    for (int t = 0; t < n; ++t) {
      ls_matvec32(x + (size_t)t * (size_t)n_in, w, b, n_in, n_out, partial,
                  y + (size_t)t * (size_t)n_out);
    }
    return;
  }
  for (int p = 0; p < n_out / LSW_PANEL; ++p) {
    const float* panel = w + (long)p * n_in * LSW_PANEL;
    const int o0 = p * LSW_PANEL;
    int t = 0;
    for (; t + LSW_MM_POS <= n; t += LSW_MM_POS) {
      lsw_mm_tile(x + (long)t * n_in, n_in, panel, b, o0, n_out,
                  y + (long)t * n_out, LSW_MM_POS);
    }
    const float* xt = x + (long)t * n_in;
    float* yt = y + (long)t * n_out;
    switch (n - t) {
      case 3:
        lsw_mm_tile(xt, n_in, panel, b, o0, n_out, yt, 3);
        break;
      case 2:
        lsw_mm_tile(xt, n_in, panel, b, o0, n_out, yt, 2);
        break;
      case 1:
        lsw_mm_tile(xt, n_in, panel, b, o0, n_out, yt, 1);
        break;
      default:
        break;
    }
  }
}

/* Columns k..k+3 of four rows, transposed so that vector i holds element
 * k + i of rows 0..3 (lane = row). */
static void lsw_transpose4(const float* m0, const float* m1, const float* m2,
                           const float* m3, v128_t* t) {
  const v128_t a0 = wasm_v128_load(m0), a1 = wasm_v128_load(m1);
  const v128_t a2 = wasm_v128_load(m2), a3 = wasm_v128_load(m3);
  const v128_t lo01 = wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5);
  const v128_t lo23 = wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5);
  const v128_t hi01 = wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7);
  const v128_t hi23 = wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7);
  t[0] = wasm_i32x4_shuffle(lo01, lo23, 0, 1, 4, 5);
  t[1] = wasm_i32x4_shuffle(lo01, lo23, 2, 3, 6, 7);
  t[2] = wasm_i32x4_shuffle(hi01, hi23, 0, 1, 4, 5);
  t[3] = wasm_i32x4_shuffle(hi01, hi23, 2, 3, 6, 7);
}

/* The same on four vectors already loaded. */
static void lsw_transpose4v(const v128_t* a, v128_t* t) {
  const v128_t lo01 = wasm_i32x4_shuffle(a[0], a[1], 0, 4, 1, 5);
  const v128_t lo23 = wasm_i32x4_shuffle(a[2], a[3], 0, 4, 1, 5);
  const v128_t hi01 = wasm_i32x4_shuffle(a[0], a[1], 2, 6, 3, 7);
  const v128_t hi23 = wasm_i32x4_shuffle(a[2], a[3], 2, 6, 3, 7);
  t[0] = wasm_i32x4_shuffle(lo01, lo23, 0, 1, 4, 5);
  t[1] = wasm_i32x4_shuffle(lo01, lo23, 2, 3, 6, 7);
  t[2] = wasm_i32x4_shuffle(hi01, hi23, 0, 1, 4, 5);
  t[3] = wasm_i32x4_shuffle(hi01, hi23, 2, 3, 6, 7);
}

/* §3.1 ls_exp32 on four lanes: the same constants and operations in the
 * same order (core/ls_arith.c), every case computed and the right one
 * selected per lane (overflow, underflow, the two scaling cases). Tested
 * against ls_exp32 bit for bit by the exp32_mismatches export. */
static v128_t lsw_pow2(v128_t n) {
  return wasm_i32x4_shl(wasm_i32x4_add(n, wasm_i32x4_splat(127)), 23);
}

static v128_t lsw_exp32(v128_t x) {
  static const float c[8] = {0x1.000000p+0f,  0x1.000000p+0f, 0x1.000000p-1f,
                             0x1.555556p-3f,  0x1.555556p-5f, 0x1.111112p-7f,
                             0x1.6c16c2p-10f, 0x1.a01a02p-13f};
  const v128_t rounder = wasm_f32x4_splat(0x1.8p23f);
  const v128_t t = wasm_f32x4_mul(x, wasm_f32x4_splat(0x1.715476p+0f));
  const v128_t nf = wasm_f32x4_sub(wasm_f32x4_add(t, rounder), rounder);
  const v128_t r = wasm_f32x4_sub(
      wasm_f32x4_sub(x, wasm_f32x4_mul(nf, wasm_f32x4_splat(0x1.62e400p-1f))),
      wasm_f32x4_mul(nf, wasm_f32x4_splat(0x1.7f7d1cp-20f)));
  v128_t p = wasm_f32x4_splat(c[7]);
  for (int k = 6; k >= 0; --k) {
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(c[k]));
  }
  /* nf is an integer in binary32 here; out-of-range lanes are replaced. */
  const v128_t n = wasm_i32x4_trunc_sat_f32x4(nf);
  const v128_t normal = wasm_f32x4_mul(p, lsw_pow2(n));
  const v128_t high = wasm_f32x4_mul(
      wasm_f32x4_mul(p, lsw_pow2(wasm_i32x4_sub(n, wasm_i32x4_splat(1)))),
      wasm_f32x4_splat(2.0f));
  const v128_t low = wasm_f32x4_mul(
      wasm_f32x4_mul(p, lsw_pow2(wasm_i32x4_add(n, wasm_i32x4_splat(25)))),
      wasm_f32x4_splat(0x1p-25f));
  v128_t y = wasm_v128_bitselect(high, normal,
                                 wasm_i32x4_gt(n, wasm_i32x4_splat(127)));
  y = wasm_v128_bitselect(low, y, wasm_i32x4_lt(n, wasm_i32x4_splat(-126)));
  y = wasm_v128_bitselect(wasm_f32x4_splat(0.0f), y,
                          wasm_f32x4_lt(x, wasm_f32x4_splat(-0x1.9fe368p+6f)));
  y = wasm_v128_bitselect(wasm_f32x4_splat(__builtin_inff()), y,
                          wasm_f32x4_gt(x, wasm_f32x4_splat(0x1.62e42ep+6f)));
  return y;
}

/* §2.4: the maximum and the sum exactly as the core (sequential), the
 * exponentials and the divisions four lanes at a time. */
void ls_softmax32(const float* s, int n, float* p) {
  float m = s[0];
  for (int j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
  const v128_t mv = wasm_f32x4_splat(m);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    wasm_v128_store(p + j,
                    lsw_exp32(wasm_f32x4_sub(wasm_v128_load(s + j), mv)));
  }
  for (; j < n; ++j) p[j] = ls_exp32(s[j] - m);
  float sum = 0.0f;
  for (j = 0; j < n; ++j) sum = sum + p[j];
  const v128_t sv = wasm_f32x4_splat(sum);
  for (j = 0; j + 4 <= n; j += 4) {
    wasm_v128_store(p + j, wasm_f32x4_div(wasm_v128_load(p + j), sv));
  }
  for (; j < n; ++j) p[j] = p[j] / sum;
}

/* For the tests: lsw_exp32 against ls_exp32 on `count` binary32 bit
 * patterns from `first` in steps of `step` (non-finite ones skipped).
 * Returns the number of differing results. */
int lsw_exp32_mismatches(uint32_t first, uint32_t step, uint32_t count);
int lsw_exp32_mismatches(uint32_t first, uint32_t step, uint32_t count) {
  typedef union {
    float f;
    uint32_t u;
  } bits;
  int bad = 0;
  uint32_t u = first;
  for (uint32_t i = 0; i < count; i += 4) {
    float in[4], out[4];
    for (int l = 0; l < 4; ++l, u += step) {
      bits b;
      b.u = u;
      in[l] = (b.u & 0x7f800000u) == 0x7f800000u ? 0.0f : b.f;
    }
    wasm_v128_store(out, lsw_exp32(wasm_v128_load(in)));
    for (int l = 0; l < 4; ++l) {
      bits a, b;
      a.f = out[l];
      b.f = ls_exp32(in[l]);
      bad += a.u != b.u;
    }
  }
  return bad;
}

/* §2.1 blocked (n a multiple of 64, stride 1: attention scores, the
 * LayerNorm variance) with a lane per block: four blocks at a time, the
 * products of four consecutive terms of each block are transposed so that
 * lane b adds block b's terms in k order from +0.0; the four vectors of
 * block sums then run the halving tree (s[i] + s[i+8] is vector 0 + 2 and
 * 1 + 3, s[i] + s[i+4] vector 0 + 1, then lanes 0,1 + 2,3 and 0 + 1). */
float ls_dot32(const float* x, const float* w, int n, int stride) {
  if (stride != 1 || n <= 0 || n % 64 != 0) {
    return ls_dot32_scalar(x, w, n, stride);
  }
  const int len = n / 16;
  v128_t s[4];
  for (int g = 0; g < 4; ++g) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    const float* x0 = x + (long)(4 * g) * len;
    const float* w0 = w + (long)(4 * g) * len;
    for (int i = 0; i < len; i += 4) {
      v128_t p[4], t[4];
      for (int b = 0; b < 4; ++b) {
        p[b] = wasm_f32x4_mul(wasm_v128_load(x0 + (long)b * len + i),
                              wasm_v128_load(w0 + (long)b * len + i));
      }
      lsw_transpose4v(p, t);
      acc = wasm_f32x4_add(acc, t[0]);
      acc = wasm_f32x4_add(acc, t[1]);
      acc = wasm_f32x4_add(acc, t[2]);
      acc = wasm_f32x4_add(acc, t[3]);
    }
    s[g] = acc;
  }
  const v128_t h8a = wasm_f32x4_add(s[0], s[2]);
  const v128_t h8b = wasm_f32x4_add(s[1], s[3]);
  const v128_t h4 = wasm_f32x4_add(h8a, h8b);
  const v128_t h2 = wasm_f32x4_add(h4, wasm_i32x4_shuffle(h4, h4, 2, 3, 2, 3));
  return wasm_f32x4_extract_lane(h2, 0) + wasm_f32x4_extract_lane(h2, 1);
}

/* §2.1 for eight rows at once (lane = row, two vectors): each lane adds
 * x[k] * m[row][k] over its block in k order from +0.0; the 16 block sums
 * are combined by the tree. Needs n % 64 == 0 (blocks of a multiple of 4). */
static void lsw_rowdots8(const float* x, const float* m, int n, float* y) {
  const int len = n / 16;
  v128_t part[2][16];
  for (int blk = 0; blk < 16; ++blk) {
    v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
    for (int k = blk * len; k < (blk + 1) * len; k += 4) {
      const v128_t x0 = wasm_f32x4_splat(x[k]);
      const v128_t x1 = wasm_f32x4_splat(x[k + 1]);
      const v128_t x2 = wasm_f32x4_splat(x[k + 2]);
      const v128_t x3 = wasm_f32x4_splat(x[k + 3]);
      for (int h = 0; h < 2; ++h) {
        const float* r = m + (long)(4 * h) * n + k;
        v128_t t[4];
        lsw_transpose4(r, r + n, r + 2 * n, r + 3 * n, t);
        v128_t a = acc[h];
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x0, t[0]));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x1, t[1]));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x2, t[2]));
        a = wasm_f32x4_add(a, wasm_f32x4_mul(x3, t[3]));
        acc[h] = a;
      }
    }
    part[0][blk] = acc[0];
    part[1][blk] = acc[1];
  }
  wasm_v128_store(y, lsw_tree16(part[0]));
  wasm_v128_store(y + 4, lsw_tree16(part[1]));
}

void ls_rowdots32(const float* x, const float* m, int n, int n_rows, float* y) {
  if (n > 0 && m == lsw_head_rows) {
    /* Whole panels straight into y, the last one through a buffer. */
    const int full = n_rows / LSW_PANEL;
    lsw_panel_matvec(x, lsw_head_panels, 0, n, full * LSW_PANEL, y);
    if (full * LSW_PANEL < n_rows) {
      float last[LSW_PANEL];
      lsw_panel_matvec(x, lsw_head_panels + (long)full * n * LSW_PANEL, 0, n,
                       LSW_PANEL, last);
      for (int r = full * LSW_PANEL; r < n_rows; ++r) {
        y[r] = last[r - full * LSW_PANEL];
      }
    }
    return;
  }
  int r = 0;
  if (n > 0 && n % 64 == 0) {
    for (; r + 8 <= n_rows; r += 8) {
      lsw_rowdots8(x, m + (long)r * n, n, y + r);
    }
  }
  ls_rowdots32_scalar(x, m + (long)r * n, n, n_rows - r, y + r);
}
