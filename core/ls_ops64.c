/* Implements docs/arithmetic.md §2 in binary64. See ls_ops64.h. */
#include "ls_ops64.h"

#include "ls_arith.h"

/* Layer-norm epsilon 1e-5 rounded to binary64 (§2.3). */
#define LS_LN_EPS64 0x1.4f8b588e368f1p-17

double ls_dot64(const double* x, const double* w, int n, int stride) {
  if (n > 0 && n % 16 == 0) {
    /* §2.1 blocked order: 16 contiguous blocks, each sequential from +0.0,
     * combined by the halving tree s[i] += s[i+8], +4, +2, +1. */
    double s[16];
    int len = n / 16;
    for (int blk = 0; blk < 16; ++blk) {
      double acc = 0.0;
      for (int k = blk * len; k < (blk + 1) * len; ++k) {
        acc = acc + x[k] * w[(long)k * stride];
      }
      s[blk] = acc;
    }
    for (int h = 8; h >= 1; h /= 2) {
      for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
    }
    return s[0];
  }
  double acc = 0.0;
  for (int k = 0; k < n; ++k) acc = acc + x[k] * w[(long)k * stride];
  return acc;
}

void ls_matvec64(const double* x, const double* w, const double* b, int n_in,
                 int n_out, double* y) {
  for (int o = 0; o < n_out; ++o) {
    double s = ls_dot64(x, w + o, n_in, n_out);
    y[o] = b ? s + b[o] : s;
  }
}

/* The LayerNorm sums follow §2.1's order with a unit second factor
 * replaced by the plain term (no multiplication by 1.0 is performed). */
static double ls_sum64(const double* x, int n) {
  if (n > 0 && n % 16 == 0) {
    double s[16];
    int len = n / 16;
    for (int blk = 0; blk < 16; ++blk) {
      double acc = 0.0;
      for (int k = blk * len; k < (blk + 1) * len; ++k) acc = acc + x[k];
      s[blk] = acc;
    }
    for (int h = 8; h >= 1; h /= 2) {
      for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
    }
    return s[0];
  }
  double acc = 0.0;
  for (int k = 0; k < n; ++k) acc = acc + x[k];
  return acc;
}

void ls_layernorm64(const double* x, const double* g, const double* b, int n,
                    double* y) {
  double mean = ls_sum64(x, n) / (double)n;
  /* y holds the deviations d[k] = x[k] - mean until the last loop. */
  for (int k = 0; k < n; ++k) y[k] = x[k] - mean;
  double var = ls_dot64(y, y, n, 1) / (double)n;
  double r = 1.0 / __builtin_sqrt(var + LS_LN_EPS64);
  for (int k = 0; k < n; ++k) y[k] = (y[k] * r) * g[k] + b[k];
}

void ls_softmax64(const double* s, int n, double* p) {
  double m = s[0];
  for (int j = 1; j < n; ++j) m = s[j] > m ? s[j] : m;
  double sum = 0.0;
  for (int j = 0; j < n; ++j) {
    p[j] = ls_exp64(s[j] - m);
    sum = sum + p[j];
  }
  for (int j = 0; j < n; ++j) p[j] = p[j] / sum;
}

void ls_weighted_sum64(const double* p, const double* v, int n, int stride,
                       int w, double* out) {
  for (int d = 0; d < w; ++d) {
    double acc = 0.0;
    for (int j = 0; j < n; ++j) acc = acc + p[j] * v[(long)j * stride + d];
    out[d] = acc;
  }
}
