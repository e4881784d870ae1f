/* Implements docs/arithmetic.md §2 in binary32. See ls_ops32.h. */
#include "ls_ops32.h"

#include <stddef.h>

#include "ls_arith.h"

#define LS_LN_EPS32 0x1.4f8b58p-17f

/* The §2.1 halving tree over 16 block sums. */
static float ls_tree16(float* s) {
  for (int h = 8; h >= 1; h /= 2) {
    for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
  }
  return s[0];
}

float ls_dot32(const float* x, const float* w, int n, int stride) {
  if (n > 0 && n % 16 == 0) {
    float s[16];
    const int len = n / 16;
    for (int blk = 0; blk < 16; ++blk) {
      float acc = 0.0f;
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        acc = acc + x[k] * w[(long)k * stride];
      }
      s[blk] = acc;
    }
    return ls_tree16(s);
  }
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) acc = acc + x[k] * w[(long)k * stride];
  return acc;
}

void ls_matvec32(const float* x, const float* w, const float* b, int n_in,
                 int n_out, float* partial, float* y) {
  const int blocks = (n_in > 0 && n_in % 16 == 0) ? 16 : 1;
  const int len = n_in / blocks;
  /* partial[blk * n_out + o] is block blk's running sum for output o: the
   * loop over o is innermost, so each output's additions stay in k order. */
  for (int blk = 0; blk < blocks; ++blk) {
    float* acc = partial + (long)blk * n_out;
    for (int o = 0; o < n_out; ++o) acc[o] = 0.0f;
    for (int k = blk * len; k < (blk + 1) * len; ++k) {
      const float xk = x[k];
      const float* row = w + (long)k * n_out;
      for (int o = 0; o < n_out; ++o) acc[o] = acc[o] + xk * row[o];
    }
  }
  ls_matvec32_finish(partial, b, blocks, n_out, 0, y);
}

void ls_matmul32(const float* x, int n, const float* w, const float* b,
                 int n_in, int n_out, float* partial, float* y) {
  for (int t = 0; t < n; ++t) {
    ls_matvec32(x + (size_t)t * (size_t)n_in, w, b, n_in, n_out, partial,
                y + (size_t)t * (size_t)n_out);
  }
}

void ls_matvec32_finish(const float* partial, const float* b, int blocks,
                        int n_out, int o0, float* y) {
  for (int o = o0; o < n_out; ++o) {
    float s;
    if (blocks == 16) {
      float t[16];
      for (int blk = 0; blk < 16; ++blk)
        t[blk] = partial[(long)blk * n_out + o];
      s = ls_tree16(t);
    } else {
      s = partial[o];
    }
    y[o] = b ? s + b[o] : s;
  }
}

void ls_rowdots32(const float* x, const float* m, int n, int n_rows, float* y) {
  for (int r = 0; r < n_rows; ++r) y[r] = ls_dot32(x, m + (long)r * n, n, 1);
}

void ls_layernorm32(const float* x, const float* g, const float* b, int n,
                    float* y) {
  /* The sum of x in the §2.1 order: x[k] * 1.0f is exact, so a dot with a
   * vector of ones has the same bits, but we avoid needing one. */
  float sum;
  if (n > 0 && n % 16 == 0) {
    float s[16];
    const int len = n / 16;
    for (int blk = 0; blk < 16; ++blk) {
      float acc = 0.0f;
      for (int k = blk * len; k < (blk + 1) * len; ++k) acc = acc + x[k];
      s[blk] = acc;
    }
    sum = ls_tree16(s);
  } else {
    sum = 0.0f;
    for (int k = 0; k < n; ++k) sum = sum + x[k];
  }
  const float mean = sum / (float)n;
  for (int k = 0; k < n; ++k) y[k] = x[k] - mean;
  const float var = ls_dot32(y, y, n, 1) / (float)n;
  const float r = 1.0f / __builtin_sqrtf(var + LS_LN_EPS32);
  for (int k = 0; k < n; ++k) y[k] = (y[k] * r) * g[k] + b[k];
}

void ls_softmax32(const float* s, int n, float* p) {
  float m = s[0];
  for (int j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    p[j] = ls_exp32(s[j] - m);
    sum = sum + p[j];
  }
  for (int j = 0; j < n; ++j) p[j] = p[j] / sum;
}
