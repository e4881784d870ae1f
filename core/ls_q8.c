/* Implements docs/arithmetic.md §7.1-7.3 and the §7.6 layout. See ls_q8.h.
 * Written to be read: every fast path (VNNI, AVX2, NEON, WebAssembly, CUDA,
 * WGSL) is checked against these loops, bit for bit. */
#include "ls_q8.h"

/* Bit casts through a union (as ls_arith.c): defined in C, no memcpy. */
typedef union {
  float f;
  uint32_t u;
} ls_q8_bits;

/* 1.5 * 2^23: adding and subtracting it rounds |r| < 2^22 to an integer,
 * ties to even (§7.2 step 5). */
#define LS_Q8_ROUNDER 0x1.8p23f

uint16_t ls_bf16_from_f32(float v) {
  ls_q8_bits b;
  b.f = v;
  return (uint16_t)((b.u + 0x7FFFu + ((b.u >> 16) & 1u)) >> 16);
}

float ls_bf16_to_f32(uint16_t h) {
  ls_q8_bits b;
  b.u = (uint32_t)h << 16;
  return b.f;
}

static int ls_q8_finite(float v) { return v - v == 0.0f; }

/* §7.2 steps 4-5 for one value against a nonzero scale s. */
static int8_t ls_q8_level(float v, float s) {
  float r = v / s;
  r = r > (float)LS_Q8_MAX ? (float)LS_Q8_MAX : r;
  r = r < -(float)LS_Q8_MAX ? -(float)LS_Q8_MAX : r;
  return (int8_t)(int)((r + LS_Q8_ROUNDER) - LS_Q8_ROUNDER);
}

ls_status ls_q8_quantize(const float* x, int K, int8_t* q, float* s) {
  for (int g = 0; g < K / LS_Q8_GROUP; ++g) {
    const float* v = x + g * LS_Q8_GROUP;
    int8_t* out = q + g * LS_Q8_GROUP;
    float m = 0.0f;
    for (int i = 0; i < LS_Q8_GROUP; ++i) {
      if (!ls_q8_finite(v[i])) return LS_ERR_OUTPUT_NONFINITE;
      const float a = __builtin_fabsf(v[i]);
      m = a > m ? a : m;
    }
    const float sg = m / (float)LS_Q8_MAX;
    s[g] = sg;
    for (int i = 0; i < LS_Q8_GROUP; ++i) {
      out[i] = sg == 0.0f ? 0 : ls_q8_level(v[i], sg);
    }
  }
  return LS_OK;
}

ls_status ls_q8_quantize_weights(const float* v, long stride, int8_t* q,
                                 uint16_t* s) {
  float m = 0.0f;
  for (int i = 0; i < LS_Q8_GROUP; ++i) {
    const float x = v[(long)i * stride];
    if (!ls_q8_finite(x)) return LS_ERR_WEIGHT_NONFINITE;
    const float a = __builtin_fabsf(x);
    m = a > m ? a : m;
  }
  *s = ls_bf16_from_f32(m / (float)LS_Q8_MAX);
  const float sg = ls_bf16_to_f32(*s);
  for (int i = 0; i < LS_Q8_GROUP; ++i) {
    q[i] = sg == 0.0f ? 0 : ls_q8_level(v[(long)i * stride], sg);
  }
  return LS_OK;
}

/* Panel p of M [K, N] starts at byte 64p * (K + 2G); in it, group g's block
 * of 66 * pw bytes: 64 * pw weights, then pw scales. */
static size_t ls_q8_block(size_t K, size_t N, size_t o, size_t g, size_t* pw) {
  const size_t c0 = o / LS_Q8_PANEL * LS_Q8_PANEL;
  const size_t G = K / LS_Q8_GROUP;
  *pw = N - c0 < LS_Q8_PANEL ? N - c0 : LS_Q8_PANEL;
  return c0 * (K + 2 * G) + g * (LS_Q8_GROUP + 2) * *pw;
}

size_t ls_q8_matrix_bytes(size_t K, size_t N) {
  return N * (K + 2 * (K / LS_Q8_GROUP));
}

size_t ls_q8_weight_index(size_t K, size_t N, size_t k, size_t o) {
  size_t pw;
  const size_t kk = k % LS_Q8_GROUP;
  return ls_q8_block(K, N, o, k / LS_Q8_GROUP, &pw) +
         ((kk / 4) * pw + o % LS_Q8_PANEL) * 4 + kk % 4;
}

size_t ls_q8_scale_index(size_t K, size_t N, size_t o, size_t g) {
  size_t pw;
  const size_t at = ls_q8_block(K, N, o, g, &pw);
  return at + LS_Q8_GROUP * pw + 2 * (o % LS_Q8_PANEL);
}

static uint16_t ls_q8_get16(const uint8_t* p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

ls_status ls_q8_pack(const float* w, size_t K, size_t N, size_t ld, size_t cs,
                     size_t o0, size_t o1, uint8_t* dst) {
  int8_t q[LS_Q8_GROUP];
  for (size_t o = o0; o < o1; ++o) {
    for (size_t g = 0; g < K / LS_Q8_GROUP; ++g) {
      uint16_t s;
      const float* v = w + g * LS_Q8_GROUP * ld + (o - o0) * cs;
      const ls_status st = ls_q8_quantize_weights(v, (long)ld, q, &s);
      if (st != LS_OK) return st;
      for (size_t kk = 0; kk < LS_Q8_GROUP; ++kk) {
        dst[ls_q8_weight_index(K, N, g * LS_Q8_GROUP + kk, o)] = (uint8_t)q[kk];
      }
      uint8_t* sp = dst + ls_q8_scale_index(K, N, o, g);
      sp[0] = (uint8_t)(s & 0xFF);
      sp[1] = (uint8_t)(s >> 8);
    }
  }
  return LS_OK;
}

void ls_q8_column(const uint8_t* m, size_t K, size_t N, size_t o, float* out) {
  const int8_t* q = (const int8_t*)m;
  for (size_t g = 0; g < K / LS_Q8_GROUP; ++g) {
    const float s =
        ls_bf16_to_f32(ls_q8_get16(m + ls_q8_scale_index(K, N, o, g)));
    for (size_t kk = 0; kk < LS_Q8_GROUP; ++kk) {
      const size_t k = g * LS_Q8_GROUP + kk;
      out[k] = (float)q[ls_q8_weight_index(K, N, k, o)] * s;
    }
  }
}

void ls_q8_matvec(const int8_t* qx, const float* sx, const uint8_t* m, int K,
                  int N, const float* b, float* y) {
  const int G = K / LS_Q8_GROUP;
  for (int c0 = 0; c0 < N; c0 += LS_Q8_PANEL) {
    const int pw = N - c0 < LS_Q8_PANEL ? N - c0 : LS_Q8_PANEL;
    const uint8_t* panel = m + (size_t)c0 * (size_t)(K + 2 * G);
    float acc[LS_Q8_PANEL];
    for (int j = 0; j < pw; ++j) acc[j] = 0.0f; /* §7.3 step 3: from +0.0 */
    for (int g = 0; g < G; ++g) {
      const uint8_t* blk = panel + (size_t)g * (size_t)(LS_Q8_GROUP + 2) * pw;
      const int8_t* qw = (const int8_t*)blk;
      const uint8_t* sw = blk + LS_Q8_GROUP * pw;
      const int8_t* xg = qx + g * LS_Q8_GROUP;
      for (int j = 0; j < pw; ++j) {
        /* Step 1: the exact integer sum of the group. */
        int32_t isum = 0;
        for (int kk = 0; kk < LS_Q8_GROUP; ++kk) {
          isum +=
              (int32_t)xg[kk] * (int32_t)qw[((kk / 4) * pw + j) * 4 + kk % 4];
        }
        /* Step 2: the scales' product, then times the exact float(isum). */
        const float scale = sx[g] * ls_bf16_to_f32(ls_q8_get16(sw + 2 * j));
        acc[j] = acc[j] + (float)isum * scale;
      }
    }
    for (int j = 0; j < pw; ++j) {
      y[c0 + j] = b ? acc[j] + b[c0 + j] : acc[j]; /* step 4: bias last */
    }
  }
}

void ls_q8_matmul(const int8_t* qx, const float* sx, int n, const uint8_t* m,
                  int K, int N, const float* b, float* y) {
  const int G = K / LS_Q8_GROUP;
  for (int t = 0; t < n; ++t) {
    ls_q8_matvec(qx + (size_t)t * (size_t)K, sx + (size_t)t * (size_t)G, m, K,
                 N, b, y + (size_t)t * (size_t)N);
  }
}

int ls_q8_matrix_valid(const uint8_t* m, size_t K, size_t N) {
  const size_t G = K / LS_Q8_GROUP;
  for (size_t c0 = 0; c0 < N; c0 += LS_Q8_PANEL) {
    const size_t pw = N - c0 < LS_Q8_PANEL ? N - c0 : LS_Q8_PANEL;
    const uint8_t* panel = m + c0 * (K + 2 * G);
    for (size_t g = 0; g < G; ++g) {
      const uint8_t* blk = panel + g * (LS_Q8_GROUP + 2) * pw;
      for (size_t i = 0; i < LS_Q8_GROUP * pw; ++i) {
        if (blk[i] == 0x80) return 0; /* -128 */
      }
      for (size_t j = 0; j < pw; ++j) {
        const uint16_t s = ls_q8_get16(blk + LS_Q8_GROUP * pw + 2 * j);
        if ((s & 0x8000u) || (s & 0x7F80u) == 0x7F80u) return 0;
      }
    }
  }
  return 1;
}
