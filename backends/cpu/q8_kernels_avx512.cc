// The AVX-512 VNNI int8 table. Compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512dq -mavx512vnni (backends/CMakeLists.txt); only
// called after q8_kernels_for has seen avx512vnni.
//
// The group sums with vpdpbusd (unsigned x signed bytes, four products
// added into each int32 lane): the activation levels are made unsigned as
// qx + 128 (= qx ^ 0x80), and 128 * sum(qw) is subtracted, itself one more
// vpdpbusd of the weights with 128 in every byte. Both sums are exact
// int32 (at most 64 * 255 * 127), so their difference is sum(qx * qw)
// exactly. The correction is computed once per weight register and shared
// by every position of a tile. One position (decode) instead moves each
// level's sign onto its weight and multiplies by |qx| (below).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
// Decode's software prefetch distance: three group blocks (12,672 bytes)
// ahead of the loads (below).
constexpr size_t kBlock = (kGroup + 2) * kPanel;  // 4,224 bytes
constexpr size_t kAhead = 3 * kBlock;

bool quantize_avx512(const float* x, int K, int8_t* q, float* s) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512 hi = _mm512_set1_ps(float(LS_Q8_MAX));
  const __m512 lo = _mm512_set1_ps(-float(LS_Q8_MAX));
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  // Every value finite first (§7.2 step 1: nothing of a position with a
  // NaN or an infinity is divided or converted).
  for (int k = 0; k < K; k += 16) {
    const __m512 v = _mm512_loadu_ps(x + k);
    if (_mm512_cmp_ps_mask(_mm512_sub_ps(v, v), zero, _CMP_EQ_OQ) != 0xFFFF) {
      return false;
    }
  }
  for (int g = 0; g < K / kGroup; ++g) {
    __m512 v[4];
    __m512 m = zero;
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm512_loadu_ps(x + g * kGroup + 16 * i);
      m = _mm512_max_ps(m, _mm512_and_ps(v[i], abs_mask));
    }
    // The largest magnitude (exact in any order), then one division.
    const float sg = _mm512_reduce_max_ps(m) / float(LS_Q8_MAX);
    s[g] = sg;
    int8_t* out = q + g * kGroup;
    if (sg == 0.0f) {
      std::memset(out, 0, kGroup);
      continue;
    }
    const __m512 sv = _mm512_set1_ps(sg);
    for (int i = 0; i < 4; ++i) {
      __m512 r = _mm512_div_ps(v[i], sv);
      r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
      // cvtps2dq rounds to nearest, ties to even (the default MXCSR mode).
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * i),
                       _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r)));
    }
  }
  return true;
}

// NP positions against one whole 64-column panel. Group by group: the
// 4 x 16 outputs' integer sums in registers (16 quads of k), then §7.3
// steps 2-3 per lane into acc (+0.0 first), step 4 at the end.
template <int NP>
void panel_tile(const int8_t* q, size_t qs, const float* s, size_t ss,
                const uint8_t* p, int K, const float* bias, float* y,
                size_t ys) {
  const int G = K / kGroup;
  const __m512i c80 = _mm512_set1_epi8(char(0x80));
  __m512 acc[NP][4];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < 4; ++j) acc[t][j] = _mm512_setzero_ps();
  }
  for (int g = 0; g < G; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    __m512i isum[NP][4], corr[4];
    for (int j = 0; j < 4; ++j) {
      corr[j] = _mm512_setzero_si512();
      for (int t = 0; t < NP; ++t) isum[t][j] = _mm512_setzero_si512();
    }
    for (int i = 0; i < kGroup / 4; ++i) {
      __m512i w[4];
      // Decode streams the weights from memory once: every line is
      // prefetched kAhead bytes before it is loaded (past the panel's end
      // that is the next panel, which the caller usually reads next;
      // prefetches never fault). One thread's decode went from 94 to 166
      // tok/s (124M, this VM) with a line touched per 4 KB page, to 207
      // with every line, the same from 8 to 32 KB ahead: the hardware
      // prefetchers stop at page boundaries, and the loop's dpbusd chains
      // keep the out-of-order window from running far ahead.
      if (NP == 1) {
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + kAhead +
                                                     (i * kPanel + 16 * j) * 4),
                       _MM_HINT_T0);
        }
      }
      if constexpr (NP == 1) {
        // One position: the sign of each level moves onto its weight
        // (a masked byte negation, exact: |qw| <= 127) and vpdpbusd takes
        // |qx|: one cheap operation per weight register instead of the
        // correction's second vpdpbusd (one thread: 190 -> 230 tok/s).
        int32_t quad;
        std::memcpy(&quad, q + g * kGroup + 4 * i, 4);
        const __m512i xq = _mm512_set1_epi32(quad);
        const __mmask64 neg = _mm512_movepi8_mask(xq);
        const __m512i xa = _mm512_abs_epi8(xq);
        for (int j = 0; j < 4; ++j) {
          w[j] = _mm512_loadu_si512(blk + (i * kPanel + 16 * j) * 4);
          const __m512i ws =
              _mm512_mask_sub_epi8(w[j], neg, _mm512_setzero_si512(), w[j]);
          isum[0][j] = _mm512_dpbusd_epi32(isum[0][j], xa, ws);
        }
        continue;
      }
      for (int j = 0; j < 4; ++j) {
        w[j] = _mm512_loadu_si512(blk + (i * kPanel + 16 * j) * 4);
        corr[j] = _mm512_dpbusd_epi32(corr[j], c80, w[j]);
      }
      for (int t = 0; t < NP; ++t) {
        int32_t quad;
        std::memcpy(&quad, q + size_t(t) * qs + g * kGroup + 4 * i, 4);
        const __m512i xb = _mm512_xor_si512(_mm512_set1_epi32(quad), c80);
        for (int j = 0; j < 4; ++j) {
          isum[t][j] = _mm512_dpbusd_epi32(isum[t][j], xb, w[j]);
        }
      }
    }
    // The 64 bfloat16 scales, widened: bits << 16.
    __m512 sw[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i h = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(blk + kGroup * kPanel + 32 * j));
      sw[j] =
          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    for (int t = 0; t < NP; ++t) {
      const __m512 sx = _mm512_set1_ps(s[size_t(t) * ss + size_t(g)]);
      for (int j = 0; j < 4; ++j) {
        const __m512 scale = _mm512_mul_ps(sx, sw[j]);
        const __m512 f =
            _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t][j], corr[j]));
        acc[t][j] = _mm512_add_ps(acc[t][j], _mm512_mul_ps(f, scale));
      }
    }
  }
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < 4; ++j) {
      __m512 r = acc[t][j];
      if (bias) r = _mm512_add_ps(r, _mm512_loadu_ps(bias + 16 * j));
      _mm512_storeu_ps(y + size_t(t) * ys + 16 * j, r);
    }
  }
}

void panel_avx512(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                  const uint8_t* p, int K, int pw, const float* bias, float* y,
                  size_t ys) {
  if (pw != kPanel) {
    q8_kernels_generic().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  int t = 0;
  for (; t + 4 <= n; t += 4) {
    panel_tile<4>(q + size_t(t) * qs, qs, s + size_t(t) * ss, ss, p, K, bias,
                  y + size_t(t) * ys, ys);
  }
  const int r = n - t;
  const int8_t* qt = q + size_t(t) * qs;
  const float* st = s + size_t(t) * ss;
  float* yt = y + size_t(t) * ys;
  if (r == 3) panel_tile<3>(qt, qs, st, ss, p, K, bias, yt, ys);
  if (r == 2) panel_tile<2>(qt, qs, st, ss, p, K, bias, yt, ys);
  if (r == 1) panel_tile<1>(qt, qs, st, ss, p, K, bias, yt, ys);
}

constexpr CpuQ8Kernels kTable = {"avx512-vnni", quantize_avx512, panel_avx512};

}  // namespace

const CpuQ8Kernels& q8_kernels_avx512_vnni() { return kTable; }

}  // namespace lockstep::cpu
