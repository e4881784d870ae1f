// The AVX-512 VNNI int8 table. Compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512dq -mavx512vnni (backends/CMakeLists.txt); only
// called after q8_kernels_for has seen avx512vnni.
//
// The group sums with vpdpbusd (unsigned x signed bytes, four products
// added into each int32 lane): the activation levels are made unsigned as
// qx + 128 (= qx ^ 0x80), and 128 * sum(qw) is subtracted, itself one more
// vpdpbusd of the weights with 128 in every byte. Both sums are exact
// int32 (at most 64 * 255 * 127), so their difference is sum(qx * qw)
// exactly. The correction is computed once per group block and shared by
// every position of the batch. One position (decode) instead moves each
// level's sign onto its weight and multiplies by |qx| (panel_one).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
// Decode's software prefetch distance: three group blocks (12,672 bytes)
// ahead of the loads (below).
constexpr size_t kBlock = (kGroup + 2) * kPanel;  // 4,224 bytes
constexpr int kAheadBlocks = 3;
constexpr size_t kAhead = kAheadBlocks * kBlock;
// Positions per register tile in a batch: 4 x NP sums + 4 weights + 2.
constexpr int kTile = 4;

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

// One position (decode) against one whole 64-column panel. Group by
// group: the 4 x 16 outputs' integer sums in registers (16 quads of k),
// then §7.3 steps 2-3 per lane into acc (+0.0 first), step 4 at the end.
// The sign of each level moves onto its weight (a masked byte negation,
// exact: |qw| <= 127) and vpdpbusd multiplies by |qx|: one cheap operation
// per weight register instead of the batch path's correction (one thread:
// 190 -> 230 tok/s for 124M on this VM).
void panel_one(const int8_t* q, const float* s, const uint8_t* p, int K,
               const float* bias, float* y) {
  const int G = K / kGroup;
  __m512 acc[4];
  for (int j = 0; j < 4; ++j) acc[j] = _mm512_setzero_ps();
  // The panel's first kAheadBlocks blocks, before the loop's own
  // prefetches take over (they stop kAheadBlocks before the panel's end:
  // the next panel is usually another member's).
  for (size_t b = 0; b < size_t(std::min(G, kAheadBlocks)) * kBlock; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
  }
  for (int g = 0; g < G; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    __m512i isum[4];
    for (int j = 0; j < 4; ++j) isum[j] = _mm512_setzero_si512();
    for (int i = 0; i < kGroup / 4; ++i) {
      // Decode streams the weights from memory once: every line is
      // prefetched kAhead bytes before it is loaded. One thread's decode went
      // from 94 to 166 tok/s (124M, this VM) with a line touched per 4 KB page,
      // to 207 with every line, the same from 8 to 32 KB ahead: the hardware
      // prefetchers stop at page boundaries, and the loop's dpbusd chains
      // keep the out-of-order window from running far ahead.
      if (g + kAheadBlocks < G) {
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + kAhead +
                                                     (i * kPanel + 16 * j) * 4),
                       _MM_HINT_T0);
        }
      }
      int32_t quad;
      std::memcpy(&quad, q + g * kGroup + 4 * i, 4);
      const __m512i xq = _mm512_set1_epi32(quad);
      const __mmask64 neg = _mm512_movepi8_mask(xq);
      const __m512i xa = _mm512_abs_epi8(xq);
      for (int j = 0; j < 4; ++j) {
        const __m512i w = _mm512_loadu_si512(blk + (i * kPanel + 16 * j) * 4);
        const __m512i ws =
            _mm512_mask_sub_epi8(w, neg, _mm512_setzero_si512(), w);
        isum[j] = _mm512_dpbusd_epi32(isum[j], xa, ws);
      }
    }
    const __m512 sx = _mm512_set1_ps(s[g]);
    for (int j = 0; j < 4; ++j) {
      // The 16 bfloat16 scales, widened: bits << 16.
      const __m256i h = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(blk + kGroup * kPanel + 32 * j));
      const __m512 sw =
          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      const __m512 scale = _mm512_mul_ps(sx, sw);
      const __m512 f = _mm512_cvtepi32_ps(isum[j]);
      acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(f, scale));
    }
  }
  for (int j = 0; j < 4; ++j) {
    __m512 r = acc[j];
    if (bias) r = _mm512_add_ps(r, _mm512_loadu_ps(bias + 16 * j));
    _mm512_storeu_ps(y + 16 * j, r);
  }
}

// Batches (prefill): group by group over the whole panel, each group's
// 4 KB block staying in L1 while every tile of NP positions reads it; the
// correction 128 * sum(qw) is computed once per group for all of them.
// The §7.3 accumulators live in y between groups: acc = +0.0 + t[0] at the
// first group, acc + t[g] after, bias last: the reference's operations in
// its order.
template <int NP>
void group_tile(const uint8_t* blk, const __m512i* corr, const __m512* sw,
                const int8_t* q, size_t qs, const float* s, size_t ss,
                bool first, float* y, size_t ys) {
  const __m512i c80 = _mm512_set1_epi8(char(0x80));
  __m512i isum[NP][4];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < 4; ++j) isum[t][j] = _mm512_setzero_si512();
  }
  for (int i = 0; i < kGroup / 4; ++i) {
    __m512i w[4];
    for (int j = 0; j < 4; ++j) {
      w[j] = _mm512_loadu_si512(blk + (i * kPanel + 16 * j) * 4);
    }
    for (int t = 0; t < NP; ++t) {
      int32_t quad;
      std::memcpy(&quad, q + size_t(t) * qs + 4 * i, 4);
      const __m512i xb = _mm512_xor_si512(_mm512_set1_epi32(quad), c80);
      for (int j = 0; j < 4; ++j) {
        isum[t][j] = _mm512_dpbusd_epi32(isum[t][j], xb, w[j]);
      }
    }
  }
  for (int t = 0; t < NP; ++t) {
    const __m512 sx = _mm512_set1_ps(s[size_t(t) * ss]);
    float* yt = y + size_t(t) * ys;
    for (int j = 0; j < 4; ++j) {
      const __m512 scale = _mm512_mul_ps(sx, sw[j]);
      const __m512 f =
          _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t][j], corr[j]));
      const __m512 acc =
          first ? _mm512_setzero_ps() : _mm512_loadu_ps(yt + 16 * j);
      _mm512_storeu_ps(yt + 16 * j,
                       _mm512_add_ps(acc, _mm512_mul_ps(f, scale)));
    }
  }
}

void panel_batch(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                 const uint8_t* p, int K, const float* bias, float* y,
                 size_t ys) {
  const __m512i c80 = _mm512_set1_epi8(char(0x80));
  for (int g = 0; g < K / kGroup; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    __m512i corr[4];
    for (int j = 0; j < 4; ++j) corr[j] = _mm512_setzero_si512();
    for (int i = 0; i < kGroup / 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        corr[j] = _mm512_dpbusd_epi32(
            corr[j], c80, _mm512_loadu_si512(blk + (i * kPanel + 16 * j) * 4));
      }
    }
    __m512 sw[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i h = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(blk + kGroup * kPanel + 32 * j));
      sw[j] =
          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    const int8_t* qg = q + size_t(g) * kGroup;
    const float* sg = s + size_t(g);
    int t = 0;
    for (; t + kTile <= n; t += kTile) {
      group_tile<kTile>(blk, corr, sw, qg + size_t(t) * qs, qs,
                        sg + size_t(t) * ss, ss, g == 0, y + size_t(t) * ys,
                        ys);
    }
    for (; t < n; ++t) {
      group_tile<1>(blk, corr, sw, qg + size_t(t) * qs, qs, sg + size_t(t) * ss,
                    ss, g == 0, y + size_t(t) * ys, ys);
    }
  }
  if (!bias) return;
  for (int t = 0; t < n; ++t) {
    float* yt = y + size_t(t) * ys;
    for (int j = 0; j < 4; ++j) {
      _mm512_storeu_ps(yt + 16 * j,
                       _mm512_add_ps(_mm512_loadu_ps(yt + 16 * j),
                                     _mm512_loadu_ps(bias + 16 * j)));
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
  if (n == 1) {
    panel_one(q, s, p, K, bias, y);
  } else {
    panel_batch(q, qs, s, ss, n, p, K, bias, y, ys);
  }
}

constexpr CpuQ8Kernels kTable = {"avx512-vnni", quantize_avx512, panel_avx512};

}  // namespace

const CpuQ8Kernels& q8_kernels_avx512_vnni() { return kTable; }

}  // namespace lockstep::cpu
